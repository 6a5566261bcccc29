"""Which pyproject.toml files moe-lint parses: only those that can hold a ``[tool.moe-lint]``
table (config/settings.py::_may_have_table). A project that names moe-lint as a dependency
or a script beside its ``[tool.ruff]`` table is not parsed (tomllib and the parse cost ~4 ms
of a pre-commit run); every way TOML can write the table still is, which tomllib itself is
the judge of here."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import REPO
from moe_lint.config.settings import _may_have_table, load_pyproject

WITH_TABLE = [
    "[tool.moe-lint]\ngpus = 8\n",
    '[tool."moe-lint"]\ngpus = 8\n',
    "[ tool . 'moe-lint' ]\ngpus = 8\n",
    "[tool.moe-lint.memory]\nheadroom-gib = 2\n",
    "tool.moe-lint.gpus = 8\n[project]\nname = 'x'\n",
    '"tool"."moe-lint".gpus = 8\n',
    "tool = { moe-lint = { gpus = 8 } }\n",
    "[tool]\nmoe-lint = { gpus = 8 }\n",
    "[tool]\n'moe-lint'.gpus = 8\n",
    '[tool."moe\\u002dlint"]\ngpus = 8\n',  # the name spelt with an escape
]

WITHOUT_TABLE = [
    '[project]\nname = "moe-lint"\n[project.scripts]\nmoe-lint = "moe_lint.cli:run"\n'
    "[tool.ruff]\nline-length = 100\n",
    '[project.optional-dependencies]\ndev = ["moe-lint>=0.1", "ruff"]\n[tool.pytest]\nx = 1\n',
    "[tool.ruff]\n# moe-lint settings live elsewhere\nline-length = 100\n",
]


@pytest.mark.parametrize("text", WITH_TABLE)
def test_every_form_of_the_table_is_parsed(text: str) -> None:
    assert "moe-lint" in tomllib.loads(text)["tool"]  # the case is a table, by TOML's reading
    assert _may_have_table(text.encode())


@pytest.mark.parametrize("text", WITHOUT_TABLE)
def test_a_project_that_only_names_moe_lint_is_not_parsed(text: str) -> None:
    assert "moe-lint" not in tomllib.loads(text).get("tool", {})
    assert not _may_have_table(text.encode())


def test_this_repositorys_pyproject_is_not_parsed(tmp_path: Path) -> None:
    """moe-lint's own pyproject names it as the project and script, with no settings table."""
    raw = (REPO / "pyproject.toml").read_bytes()
    assert "moe-lint" not in tomllib.loads(raw.decode()).get("tool", {})
    assert not _may_have_table(raw)
    (tmp_path / "pyproject.toml").write_bytes(raw)
    assert load_pyproject(tmp_path / "pyproject.toml")[1] is None


_KEY = st.sampled_from(["tool", "'tool'", '"tool"', "moe-lint", "'moe-lint'", '"moe-lint"',
                        "ruff", "project", "gpus"])  # fmt: skip
_LINE = st.one_of(
    st.builds(lambda a, b: f"[{a}.{b}]", _KEY, _KEY),
    st.builds(lambda a: f"[{a}]", _KEY),
    st.builds(lambda a, b: f"{a}.{b} = 1", _KEY, _KEY),
    st.builds(lambda a, b: f"{a} = {{ {b} = 1 }}", _KEY, _KEY),
    st.builds(lambda a: f'{a} = "moe-lint"', _KEY),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_LINE, min_size=1, max_size=6))
def test_never_skips_a_file_that_has_the_table(lines: list[str]) -> None:
    text = "\n".join(lines) + "\n"
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return  # not TOML: what the parser says about it is test_hostile_settings's
    tool = data.get("tool")
    if isinstance(tool, dict) and "moe-lint" in tool:
        assert _may_have_table(text.encode()), text


def test_a_pyproject_without_the_table_is_not_moe_lints_to_refuse(tmp_path: Path) -> None:
    """Bytes that are not UTF-8 (or not TOML) in a pyproject with no [tool.moe-lint] table
    are the project's business: nothing is read from it, so nothing is refused. Under the
    table they are one usage error (test_hostile_settings.py::test_hostile_pyproject)."""
    path = tmp_path / "pyproject.toml"
    path.write_bytes(b'[project]\nname = "uses-moe-lint"\n# \xff\n[tool.ruff\n')
    assert load_pyproject(path)[1] is None
