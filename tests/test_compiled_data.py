"""The preset and GPU tables' JSON form (tools/compile_data.py): fresh, and what the YAML says."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import assert_tool_current
from moe_lint.config import _compiled_data, settings


def test_the_compiled_tables_are_fresh() -> None:
    assert_tool_current("compile_data.py")


@pytest.mark.parametrize("name", sorted(_compiled_data.SOURCES))
def test_the_json_form_is_the_yaml(name: str) -> None:
    raw = (settings.DATA_DIR / name).read_bytes()
    assert _compiled_data.SOURCES[name][0] == settings.data_stamp(raw)
    assert settings._load_data_yaml(name) == settings.parse_data_yaml(raw)


def test_an_edited_table_is_read_from_its_yaml(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in _compiled_data.SOURCES:
        shutil.copy(settings.DATA_DIR / name, tmp_path / name)
    edited = tmp_path / "gpus.yaml"
    edited.write_text(
        edited.read_text(encoding="utf-8") + "\nedited_here: true\n", encoding="utf-8"
    )
    monkeypatch.setattr(settings, "DATA_DIR", tmp_path)
    assert settings._load_data_yaml("gpus.yaml")["edited_here"] is True
    assert "edited_here" not in settings._load_data_yaml("models.yaml")
