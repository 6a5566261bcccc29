"""Stages 4-5: rules over the facts, then findings.

The rule catalogue, its expression language and Python checks, findings, suppression.
"""
