"""Exceptions that carry an exit code; only the CLI turns them into output."""

from __future__ import annotations


class InputError(Exception):
    """Bad input (unreadable, malformed or hostile file, bad override): exit code 2.

    The message is one line and names the problem; the CLI prefixes the file name.
    """


class UsageError(Exception):
    """Bad command line or settings: exit code 2."""


class RulePackError(Exception):
    """A rule pack failed validation when it was loaded: exit code 2 for user packs."""


class NotDerivable(Exception):
    """A fact a rule needs cannot be computed (unset field, or an upstream finding).

    Raised inside rule evaluation; the engine skips the rule for that file so that one root
    cause yields one finding.
    """

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"{name}: {reason}")
        self.name = name
        self.reason = reason
