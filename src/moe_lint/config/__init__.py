"""Stages 1-2: bytes -> YAML nodes -> the normalized config.

Fields and their defaults, recipes, command-line overrides, moe-lint's own settings.
"""
