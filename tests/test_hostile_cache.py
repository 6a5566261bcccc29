"""Issue 10, "the cache runs code": a hostile cache folder changes nothing, in bounded time.

Each case lints a clean config through the real CLI with a planted or unusable cache folder
or home: the same exit code and output as a run with no cache, nothing on stderr, no planted
payload executed, CPU < 2 s and RSS < 300 MB, and the config unchanged (also with --fix).
tests/test_rulecache.py covers the folder checks one by one.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pytest

from test_hostile import GOOD, MAX_RSS_MB, MAX_SECONDS, run_cli

#: Each case runs the CLI in a process of its own to bound its CPU time and memory: slow.
pytestmark = pytest.mark.slow


class _Touch:
    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (open, (str(self.path), "w"))


def _plant(folder: Path, marker: Path, mode: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    payload = pickle.dumps(_Touch(marker))
    for i in range(32):
        (folder / f"catalogue-{i:032x}.pickle").write_bytes(payload)
        (folder / f"bridge-classes-{i:024x}.json").write_bytes(payload)
        (folder / f"entry-points-{i:032x}.json").write_text('[["x", "os:system"]]')
        (folder / f"checks-{i:032x}.json").write_text("{}")
    folder.chmod(mode)


CASES = ["planted-private", "planted-shared-xdg", "home-missing", "home-is-a-file", "dir-is-file"]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("fix", [False, True])
def test_hostile_cache_folder(tmp_path: Path, case: str, fix: bool) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(GOOD)
    marker = tmp_path / "pwned"
    env = {"MOE_LINT_NO_CACHE": "", "MOE_LINT_CACHE_DIR": "", "XDG_CACHE_HOME": ""}
    if case == "planted-private":
        _plant(tmp_path / "cache", marker, 0o700)
        env["MOE_LINT_CACHE_DIR"] = str(tmp_path / "cache")
    elif case == "planted-shared-xdg":
        _plant(tmp_path / "xdg" / "moe-lint", marker, 0o777)
        env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    elif case == "home-missing":
        env["HOME"] = "/nonexistent/moe-lint"
    elif case == "home-is-a-file":
        (tmp_path / "home").write_text("x")
        env["HOME"] = str(tmp_path / "home")
    else:
        (tmp_path / "blocker").write_text("x")
        env["MOE_LINT_CACHE_DIR"] = str(tmp_path / "blocker" / "cache")
    args = [str(config), "--format", "concise", *(["--fix"] if fix else [])]
    ref_code, ref_out, _, _, _ = run_cli([*args, "--no-cache"], tmp_path)
    ref_text = config.read_text()
    config.write_text(GOOD)
    code, out, err, cpu, rss = run_cli(args, tmp_path, env)
    assert (code, out, err) == (ref_code, ref_out, "")
    assert code in (0, 1)
    assert not marker.exists()
    assert cpu < MAX_SECONDS and rss < MAX_RSS_MB, (cpu, rss)
    assert config.read_text() == ref_text  # what a run without any cache leaves
