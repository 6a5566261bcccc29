"""Stage 6: findings out.

Text, machine formats, estimate tables, fixes written back, baselines.
"""
