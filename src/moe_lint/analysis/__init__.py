"""Stage 3: facts derived from the normalized config.

Sizes, pipeline placement, parameter counts and memory.
"""
