"""``tools/regenerate.py`` runs every generator a test checks for drift.

docs/adding-rules.md and the README tell a rule author to run that one command; a generator a
test checks but the command forgot would make the documented steps end in a red test.
"""

from __future__ import annotations

import re

from conftest import REPO, load_tool


def test_every_checked_generator_is_regenerated() -> None:
    checked: set[str] = set()
    for test in (REPO / "tests").glob("test_*.py"):
        text = test.read_text(encoding="utf-8")
        checked |= set(re.findall(r'assert_tool_current\("([\w.]+)"\)', text))
        if '"--check"' in text:
            checked |= set(re.findall(r'"tools" / "([\w]+\.py)"', text))
    checked.discard("regenerate.py")
    assert checked, "no test checks a generator: the scan above is broken"
    assert checked <= set(load_tool("regenerate").GENERATORS), checked


def test_docs_name_the_one_command() -> None:
    for doc in ("README.md", "docs/adding-rules.md"):
        assert "python tools/regenerate.py" in (REPO / doc).read_text(encoding="utf-8"), doc
