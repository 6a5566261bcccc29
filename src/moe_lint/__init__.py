"""moe-lint: find long-context MoE config problems in Megatron Bridge YAML before launch.

The Python API (docs/python-api.md): ``moe_lint.lint(config, ...)`` -> ``list[Finding]`` and
``moe_lint.estimate(config, ...)`` -> ``MemoryEstimate``, with the exceptions ``Error``,
``InputError``, ``NotAConfigError``, ``UsageError``, ``RulePackError``, ``ArgumentError`` and
``InternalError``. They load on first use (PEP 562), so ``import moe_lint`` and the CLI's
start-up import nothing more.
"""

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from moe_lint.api import Finding as Finding
    from moe_lint.api import Lever as Lever
    from moe_lint.api import MemoryEstimate as MemoryEstimate
    from moe_lint.api import MemoryTerm as MemoryTerm
    from moe_lint.api import StageMemory as StageMemory
    from moe_lint.api import estimate as estimate
    from moe_lint.api import lint as lint
    from moe_lint.errors import ArgumentError as ArgumentError
    from moe_lint.errors import Error as Error
    from moe_lint.errors import InputError as InputError
    from moe_lint.errors import InternalError as InternalError
    from moe_lint.errors import NotAConfigError as NotAConfigError
    from moe_lint.errors import RulePackError as RulePackError
    from moe_lint.errors import UsageError as UsageError

#: Public name -> the module that defines it.
_LAZY = {
    **dict.fromkeys(
        ("lint", "estimate", "Finding", "MemoryEstimate", "StageMemory", "MemoryTerm", "Lever"),
        "moe_lint.api",
    ),
    **dict.fromkeys(
        (
            "Error",
            "InputError",
            "NotAConfigError",
            "UsageError",
            "RulePackError",
            "ArgumentError",
            "InternalError",
        ),
        "moe_lint.errors",
    ),
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'moe_lint' has no attribute {name!r}")
    # Lazy: the API (the whole data path, ~100 ms) only when a program calls it, not for the CLI.
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
