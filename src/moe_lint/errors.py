"""Exceptions that carry an exit code; only the CLI turns them into output.

:class:`Error` is the base of those moe-lint raises on purpose; the Python API
(docs/python-api.md) exports it with :class:`InputError`, :class:`NotAConfigError`,
:class:`UsageError`, :class:`RulePackError`, :class:`ArgumentError` and
:class:`InternalError` as ``moe_lint.Error`` and so on.
"""

from __future__ import annotations

from typing import Any

from moe_lint.bounds import MAX_MESSAGE_CHARS


def bounded_message(text: str) -> str:
    """``text`` cut to ``bounds.MAX_MESSAGE_CHARS`` (a message echoes input: a file name, a
    key, a value; each is bounded where it is shown, and this is the last guard)."""
    if len(text) <= MAX_MESSAGE_CHARS:
        return text
    return text[: MAX_MESSAGE_CHARS - 3] + "..."


class Error(Exception):
    """Base of every exception moe-lint raises on purpose (``moe_lint.Error``); its message is
    at most ``bounds.MAX_MESSAGE_CHARS`` characters."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*(bounded_message(a) if isinstance(a, str) else a for a in args))


class InputError(Error):
    """Bad input (unreadable, malformed or hostile file, bad override): exit code 2.

    The message is one line and names the problem; the CLI prefixes the file name. The Python
    API raises it with ``file`` set: then ``str(exc)`` is ``FILE: MESSAGE`` and ``message``
    the part the CLI prints after ``FILE: error: ``.
    """

    def __init__(self, message: str, file: str | None = None) -> None:
        super().__init__(f"{file}: {message}" if file is not None else message)
        #: The one-line message, without the file name.
        self.message = bounded_message(message)
        #: The file (``<string>``, ``<mapping>`` or the given name) when the API raised it.
        self.file = file

    def __reduce__(self) -> tuple[type[InputError], tuple[str, str | None]]:
        return (type(self), (self.message, self.file))


class NotAConfigError(InputError):
    """The input is not a Megatron Bridge config (empty, a list, other YAML): the CLI skips
    such files with a notice (``FILE: skipped: MESSAGE``); the API raises this instead."""


class UsageError(Error):
    """Bad command line or settings: exit code 2."""


class RulePackError(Error):
    """A rule pack failed validation when it was loaded: exit code 2 for user packs."""


class ArgumentError(Error, TypeError):
    """A Python API call of the wrong shape (no config, a number for a path): a TypeError as
    Python's own are, and a ``moe_lint.Error`` like every other failure of the API."""


class InternalError(Error):
    """A failure moe-lint did not anticipate (a bug): the Python API raises it, with the
    original exception as ``__cause__``, where the CLI prints one line and exits 3."""


class NotDerivable(Exception):
    """A fact a rule needs cannot be computed (unset field, or an upstream finding).

    Raised inside rule evaluation; the engine skips the rule for that file so that one root
    cause yields one finding.
    """

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"{name}: {reason}")
        self.name = name
        self.reason = reason
