"""The per-user catalogue cache: a warm load equals a cold compile; damage falls back."""

from __future__ import annotations

from pathlib import Path

import pytest

from moe_lint import rulecache
from moe_lint.catalogue import load_catalogue


def test_warm_load_equals_cold_compile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MOE_LINT_CACHE_DIR", str(tmp_path))
    cold = load_catalogue(plugins=False)
    assert list(tmp_path.glob("catalogue-*.pickle"))
    warm = load_catalogue(plugins=False)
    assert [r.code for r in warm.rules] == [r.code for r in cold.rules]
    assert warm.rules == cold.rules
    monkeypatch.setenv("MOE_LINT_NO_CACHE", "1")
    assert load_catalogue(plugins=False).rules == cold.rules


def test_corrupt_cache_falls_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MOE_LINT_CACHE_DIR", str(tmp_path))
    cold = load_catalogue(plugins=False)
    for path in tmp_path.glob("catalogue-*.pickle"):
        path.write_bytes(b"not a pickle")
    assert load_catalogue(plugins=False).rules == cold.rules


def test_unwritable_cache_folder_is_harmless(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("MOE_LINT_CACHE_DIR", str(blocker / "sub"))
    assert load_catalogue(plugins=False).rules
    assert rulecache.load_entry_points() is None
