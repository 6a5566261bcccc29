"""The .pre-commit-hooks.yaml hooks, run by the real `pre-commit try-repo` from this clone."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

#: Each test installs the hook with the real `pre-commit try-repo` (a fresh environment): slow.
pytestmark = pytest.mark.slow

EXAMPLES = REPO / "examples"
NOT_CONFIG = REPO / "tests" / "data" / "not-config"


def _pre_commit() -> list[str]:
    try:
        import pre_commit  # noqa: F401
    except ImportError:
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "pre-commit"],
            capture_output=True,
            check=False,
        )
        if proc.returncode != 0:
            pytest.skip("pre-commit cannot be installed here")
    return [sys.executable, "-m", "pre_commit"]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (REPO / ".git").exists():
        pytest.skip("try-repo needs moe-lint as a git checkout")
    root = tmp_path_factory.mktemp("user-repo")
    env = _git_env()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True, env=env)
    shutil.copy(EXAMPLES / "dsv3_128k_h100.yaml", root / "good.yaml")
    shutil.copy(EXAMPLES / "dsv3_128k_h100_broken.yaml", root / "bad.yaml")
    shutil.copy(EXAMPLES / "dsv3_128k_h100_broken.yaml", root / "fixme.yaml")
    shutil.copytree(NOT_CONFIG, root / "other", ignore=shutil.ignore_patterns("*.md"))
    subprocess.run(["git", "add", "."], cwd=root, check=True, env=env)
    return root


def _git_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.com",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.com",
    )
    env.pop("MOE_LINT_STRICT", None)
    return env


def try_repo(project: Path, hook: str, *files: str) -> subprocess.CompletedProcess[str]:
    cmd = [*_pre_commit(), "try-repo", str(REPO), hook, "--files", *files]
    return subprocess.run(
        cmd, cwd=project, capture_output=True, text=True, env=_git_env(), check=False, timeout=900
    )


def test_hook_passes_good_config(project: Path) -> None:
    """A good config, committed with YAML that is not a Bridge config (tests/data/not-config:
    k8s manifests, a workflow, an RL env list, empty and comment-only files...): passes."""
    others = sorted(f"other/{p.name}" for p in NOT_CONFIG.glob("*.y*ml"))
    assert len(others) >= 5
    proc = try_repo(project, "moe-lint", "good.yaml", *others)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Passed" in proc.stdout


def test_hook_fails_bad_config(project: Path) -> None:
    proc = try_repo(project, "moe-lint", "bad.yaml")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Failed" in proc.stdout and "PAR001" in proc.stdout


def test_fix_hook_rewrites_file(project: Path) -> None:
    before = (project / "fixme.yaml").read_text()
    proc = try_repo(project, "moe-lint-fix", "fixme.yaml")
    after = (project / "fixme.yaml").read_text()
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "files were modified by this hook" in proc.stdout
    assert "recompute_modules: [mla_up_proj, layernorm, moe, mlp]" in after
    assert after != before
