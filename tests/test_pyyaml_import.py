"""PyYAML imported through ``moe_lint.config.pyyaml``: the reader's regex waits for first use.

The saving (4-5 ms of every run) holds only while PyYAML writes the pattern as
``READER_CHARSET`` does: the first test fails when an upgrade changes it. The others hold
that the pure-Python reader, which does use the pattern, still accepts and refuses exactly
what a normally imported PyYAML does.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import REPO

PROBE = r"""
import sys
if sys.argv[1] == "moe-lint":
    from moe_lint.config.pyyaml import yaml
else:
    import yaml
import yaml.reader
pattern = yaml.reader.Reader.NON_PRINTABLE
print(type(pattern).__name__)
for text in ["a: \x07", "a: b\x85c", "a: \ud800", "a: \ufffe", "a: é😀", "a: \x1b[0m", "a: \t1"]:
    try:
        print(repr(yaml.load(text, Loader=yaml.SafeLoader)))
    except yaml.YAMLError as exc:
        print(type(exc).__name__, str(exc).splitlines()[0])
print(type(pattern).__name__, pattern.pattern == yaml.reader.Reader.NON_PRINTABLE.pattern)
"""


def _run(mode: str) -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, mode],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return proc.stdout.splitlines()


def test_the_reader_pattern_is_deferred_as_pyyaml_writes_it() -> None:
    assert _run("moe-lint")[0] == "OnFirstUse"
    assert _run("plain")[0] == "Pattern"


def test_the_pure_python_reader_accepts_and_refuses_the_same_text() -> None:
    deferred, plain = _run("moe-lint"), _run("plain")
    assert deferred[1:-1] == plain[1:-1]
    assert any(line.startswith("ReaderError") for line in plain)
    assert deferred[-1] == "OnFirstUse True"


@pytest.mark.parametrize("first", ["yaml", "re"])
def test_only_the_first_import_is_touched(first: str) -> None:
    code = (
        f"import {first}\n"
        "from moe_lint.config.pyyaml import yaml, READER_CHARSET\n"
        "import re\n"
        "assert re.compile.__module__ == 're'\n"
        "print(type(yaml.reader.Reader.NON_PRINTABLE).__name__)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == ("Pattern" if first == "yaml" else "OnFirstUse")
