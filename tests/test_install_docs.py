"""The install, pre-commit and CI snippets of the README and docs/ work as written on a fresh
machine (issue 26): a new virtual environment, a git repository holding this tree as a clone has
it, PyPI for the dependencies, and nothing from the environment running the tests.

moe-lint has no package on a public index, so the snippets name two placeholders, which these
tests fill in: ``/path/to/moe-lint`` (the copy of moe-lint: a folder or a git URL) and
``COMMIT`` (a commit of it). Every ``pip install`` of the README and the docs is one of the
commands run here or one that .ci/run runs verbatim.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from action_runner import CompositeAction, gitlab_variables, runner_env, write_fakes
from conftest import REPO

pytestmark = pytest.mark.slow

PATH_PLACEHOLDER = "/path/to/moe-lint"
COMMIT_PLACEHOLDER = "COMMIT"
EXAMPLES = REPO / "examples"
CI_EXAMPLES = EXAMPLES / "ci"
NOT_CONFIG = REPO / "tests" / "data" / "not-config"
DOC_PAGES = [
    REPO / "README.md",
    *sorted(p for p in (REPO / "docs").rglob("*.md") if p.parent.name not in ("rules", "domain")),
]


def _git_env(home: Path | None = None) -> dict[str, str]:
    """The environment a fresh shell would have: no virtual environment or PYTHONPATH of the
    test run, no moe-lint settings; a git identity for the commits."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "CI")
        and not k.startswith(("MOE_LINT", "PRE_COMMIT", "GITHUB_"))
    }
    env.update(
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.com",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.com",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
    )
    return env


def _run(command: str, cwd: Path, env: dict[str, str], timeout: int = 900) -> Any:
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", command],
        cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=timeout,
    )  # fmt: skip


class Machine:
    """A fresh machine: ``source`` is a git repository of this tree (its only commit is
    ``commit``), ``venv`` a new virtual environment whose ``bin`` comes first on PATH."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.source = root / "src" / "moe-lint"
        self.venv = root / "venv"
        self.env = _git_env()
        self.env["PATH"] = f"{self.venv / 'bin'}{os.pathsep}{self.env['PATH']}"
        self.commit = ""

    def fill(self, text: str) -> str:
        """A snippet with its placeholders filled in."""
        text = text.replace(f"file://{PATH_PLACEHOLDER}", self.source.as_uri())
        text = text.replace(PATH_PLACEHOLDER, str(self.source))
        return re.sub(rf"\b{COMMIT_PLACEHOLDER}\b", self.commit, text)

    def run(self, command: str, cwd: Path, **env: str) -> Any:
        return _run(command, cwd, {**self.env, **env})


@pytest.fixture(scope="module")
def machine(tmp_path_factory: pytest.TempPathFactory) -> Machine:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    m = Machine(tmp_path_factory.mktemp("fresh-machine"))
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO, capture_output=True, check=True,
    ).stdout.decode().split("\0")  # fmt: skip
    for name in filter(None, files):
        if (REPO / name).is_file():
            (m.source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, m.source / name)
    for step in ("git init -q", "git add -A", "git commit -q -m tree"):
        subprocess.run(step.split(), cwd=m.source, env=m.env, check=True, capture_output=True)
    m.commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=m.source, capture_output=True, text=True, check=True
    ).stdout.strip()
    subprocess.run([sys.executable, "-m", "venv", str(m.venv)], check=True, env=m.env)
    return m


@pytest.fixture(scope="module")
def installed(machine: Machine) -> Machine:
    """The README's first set-up command, run in a fresh clone: the venv then holds moe-lint."""
    clone = machine.root / "clone"
    subprocess.run(
        ["git", "clone", "-q", str(machine.source), str(clone)], check=True, env=machine.env
    )
    command = _readme_setup()[0]
    proc = machine.run(command, clone)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "examples/dsv3_128k_h100.yaml" in proc.stdout, proc.stdout
    assert (machine.venv / "bin" / "moe-lint").is_file()
    return machine


def _readme_setup() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Set up") : text.index("\n## ", text.index("## Set up") + 1)]
    return [b.strip() for b in re.findall(r"^```sh\n(.*?)^```$", section, re.M | re.S)]


def _blocks(path: Path, info: str) -> list[str]:
    text = path.read_text(encoding="utf-8")
    return re.findall(rf"^```{info}\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)


def _section(path: Path, heading: str) -> str:
    text = path.read_text(encoding="utf-8")
    start = text.index(f"\n{heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def _install_section() -> list[str]:
    """The shell blocks of docs/index.md's "Install"."""
    section = _section(REPO / "docs" / "index.md", "## Install")
    return re.findall(r"^```sh\n(.*?)^```$", section, re.MULTILINE | re.DOTALL)


# ------------------------------------------------------------------------ the inventory


def _pip_installs() -> set[str]:
    """Every `pip install ...` command the README and the docs show, in a shell block or
    inline, with a trailing comment dropped."""
    found: set[str] = set()
    for page in DOC_PAGES:
        text = page.read_text(encoding="utf-8")
        for body in re.findall(r"^```(?:sh|console|bash)\n(.*?)^```$", text, re.M | re.S):
            for line in body.splitlines():
                line = re.sub(r"\s+#.*$", "", line.removeprefix("$ ")).strip()
                if line.startswith("pip install"):
                    found.add(line)
        prose = re.sub(r"^```.*?^```$", "", text, flags=re.MULTILINE | re.DOTALL)
        found |= {c for c in re.findall(r"`([^`\n]+)`", prose) if c.startswith("pip install")}
    return found


def test_every_pip_install_of_the_docs_is_run() -> None:
    """A `pip install` the docs show is run by a test of this file, or .ci/run runs each of its
    `&&` parts verbatim."""
    ran = {line.strip() for block in _install_section() for line in block.splitlines()}
    ran = {re.sub(r"\s+#.*$", "", line) for line in ran} | set(_readme_setup()[:1])
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    unchecked = [
        command
        for command in _pip_installs() - ran
        if not all(part.strip() in ci for part in command.split("&&"))
    ]
    assert not unchecked, unchecked
    assert "pip install '.[test]' && pytest" in _readme_setup()


# ------------------------------------------------------------------------ set-up and install


def test_readme_set_up_works_in_a_fresh_clone(installed: Machine) -> None:
    """`pip install . && moe-lint examples/dsv3_128k_h100.yaml` in a fresh clone on a fresh
    virtual environment (the `installed` fixture runs it): moe-lint runs from that venv."""
    proc = installed.run("moe-lint --version && command -v moe-lint", installed.root)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == str(installed.venv / "bin" / "moe-lint")


def test_install_section_runs_as_written(installed: Machine) -> None:
    """docs/index.md "Install": the fresh clone, then each way without one (a path, the git
    repository at HEAD and at a commit), each followed by a working `moe-lint`."""
    blocks = _install_section()
    assert len(blocks) == 2
    clone_block, *others = blocks
    work = installed.root / "install-section"
    work.mkdir()
    proc = installed.run(installed.fill(clone_block), work)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (work / "moe-lint" / "pyproject.toml").is_file()
    lines = [line for line in others[0].splitlines() if line.strip()]
    assert len(lines) == 3
    for line in lines:
        command = re.sub(r"\s+#.*$", "", installed.fill(line))
        proc = installed.run(command + " && moe-lint --version", work)
        assert proc.returncode == 0, (line, proc.stdout + proc.stderr)
    site = installed.run("python -c 'import moe_lint, sys; print(moe_lint.__file__)'", work)
    assert str(installed.venv) in site.stdout  # an installed copy, not this checkout


# ------------------------------------------------------------------------------ pre-commit


def _pre_commit_configs() -> list[tuple[str, str]]:
    """(where, text) of every .pre-commit-config.yaml the README and docs show, deduplicated."""
    seen: dict[str, str] = {}
    for page in DOC_PAGES:
        for body in _blocks(page, "yaml"):
            if body.startswith("repos:"):
                seen.setdefault(body, page.relative_to(REPO).as_posix())
    return [(where, body) for body, where in seen.items()]


def test_the_pre_commit_example_file_is_the_readme_hook() -> None:
    example = yaml.safe_load((CI_EXAMPLES / "pre-commit-config.yaml").read_text("utf-8"))
    shown = [yaml.safe_load(body) for _, body in _pre_commit_configs()]
    assert example in shown
    readme = [body for where, body in _pre_commit_configs() if where == "README.md"]
    assert [yaml.safe_load(body) for body in readme] == [example]
    assert {repo["repo"] for c in shown for repo in c["repos"]} == {"local", PATH_PLACEHOLDER}


@pytest.fixture(scope="module")
def configs_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository of training configs: a good one, a broken one, and YAML that is no config."""
    root = tmp_path_factory.mktemp("configs-repo")
    (root / "configs").mkdir()
    shutil.copy(EXAMPLES / "dsv3_128k_h100.yaml", root / "configs" / "good.yaml")
    shutil.copy(EXAMPLES / "dsv3_128k_h100_broken.yaml", root / "configs" / "bad.yaml")
    shutil.copytree(NOT_CONFIG, root / "configs" / "other", ignore=shutil.ignore_patterns("*.md"))
    for step in ("git init -q", "git add -A"):
        subprocess.run(step.split(), cwd=root, env=_git_env(), check=True)
    return root


def _pre_commit_ids() -> list[str]:
    return [f"{where}:{n}" for n, (where, _) in enumerate(_pre_commit_configs())]


@pytest.mark.parametrize("index", range(len(_pre_commit_configs())), ids=_pre_commit_ids())
def test_pre_commit_config_runs_as_written(
    index: int, installed: Machine, configs_repo: Path, tmp_path: Path
) -> None:
    """Each shown .pre-commit-config.yaml, placeholders filled in, run by the real pre-commit
    on the configs repository: a good config with non-config YAML passes, a broken one fails
    with its findings. The `repo: local` hook uses the moe-lint the README installed; the path
    repository is installed by pre-commit itself, at the commit."""
    pytest.importorskip("pre_commit")
    _, body = _pre_commit_configs()[index]
    (configs_repo / ".pre-commit-config.yaml").write_text(installed.fill(body))
    # pre-commit refuses to run with an unstaged config
    subprocess.run(["git", "add", ".pre-commit-config.yaml"], cwd=configs_repo, check=True)
    home = str(tmp_path / "pre-commit-home")
    pre_commit = f"{sys.executable} -m pre_commit run --files"
    others = " ".join(sorted(f"configs/other/{p.name}" for p in NOT_CONFIG.glob("*.y*ml")))
    good = installed.run(f"{pre_commit} configs/good.yaml {others}", configs_repo,
                         PRE_COMMIT_HOME=home)  # fmt: skip
    assert good.returncode == 0, good.stdout + good.stderr
    assert "Passed" in good.stdout
    bad = installed.run(f"{pre_commit} configs/bad.yaml", configs_repo, PRE_COMMIT_HOME=home)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "Failed" in bad.stdout and "PAR001" in bad.stdout


# ------------------------------------------------------------------------------ CI recipes


def _shown(name: str) -> Any:
    """The YAML docs/ci.md shows right after naming ``examples/ci/<name>``."""
    text = (REPO / "docs" / "ci.md").read_text(encoding="utf-8")
    after = text[text.index(f"`examples/ci/{name}`") :]
    return yaml.safe_load(re.search(r"^```yaml\n(.*?)^```$", after, re.M | re.S).group(1))


@pytest.mark.parametrize("name", ["github-workflow.yml", "gitlab-ci.yml", "pre-commit-config.yaml"])
def test_ci_page_shows_the_example_files(name: str) -> None:
    assert _shown(name) == yaml.safe_load((CI_EXAMPLES / name).read_text(encoding="utf-8"))


def _pull_request(root: Path, env: dict[str, str]) -> tuple[Path, str]:
    """A repository of configs whose base commit holds a good config and whose head adds a
    broken one: (the work tree, the base commit)."""
    work = root / "workspace"
    (work / "configs").mkdir(parents=True)
    shutil.copy(EXAMPLES / "dsv3_128k_h100.yaml", work / "configs" / "good.yaml")
    for step in ("git init -q -b main", "git add -A", "git commit -q -m base"):
        subprocess.run(step.split(), cwd=work, env=env, check=True, capture_output=True)
    base = subprocess.run(["git", "rev-parse", "HEAD"], cwd=work, capture_output=True,
                          text=True, check=True).stdout.strip()  # fmt: skip
    shutil.copy(EXAMPLES / "dsv3_128k_h100_broken.yaml", work / "configs" / "bad.yaml")
    for step in ("git add -A", "git commit -q -m head"):
        subprocess.run(step.split(), cwd=work, env=env, check=True, capture_output=True)
    return work, base


def _github_steps(workflow: dict[str, Any]) -> Iterator[dict[str, Any]]:
    (job,) = workflow["jobs"].values()
    yield from job["steps"]


def test_github_workflow_runs_as_written(installed: Machine, tmp_path: Path) -> None:
    """examples/ci/github-workflow.yml on a pull request that adds a broken config, as a runner
    runs it: the checkout is the configs repository, and `uses: your-org/moe-lint@COMMIT` is
    this repository's action.yml at that commit (a clone of the source), run step by step by
    tests/action_runner.py, its install step for real (pip installs the clone into the fresh
    venv). setup-python, upload-sarif and gh are fakes. Only the changed config is linted, and
    it fails the job after the SARIF upload and the comment."""
    workflow = yaml.safe_load((CI_EXAMPLES / "github-workflow.yml").read_text("utf-8"))
    checkout, step = _github_steps(workflow)
    assert checkout == {"uses": "actions/checkout@v4"}
    assert step["uses"] == f"your-org/moe-lint@{COMMIT_PLACEHOLDER}"
    action = tmp_path / "action"
    subprocess.run(["git", "clone", "-q", str(installed.source), str(action)],
                   check=True, env=installed.env)  # fmt: skip
    subprocess.run(["git", "checkout", "-q", installed.commit], cwd=action, check=True)
    work, base = _pull_request(tmp_path, installed.env)
    fakes = write_fakes(tmp_path / "fakes", pip=False, moe_lint=False)
    (tmp_path / "runner-temp").mkdir()
    env = runner_env(
        installed.env,
        PATH=f"{fakes}{os.pathsep}{installed.env['PATH']}",
        RUNNER_TEMP=str(tmp_path / "runner-temp"),
        GITHUB_STEP_SUMMARY=str(tmp_path / "summary.md"),
        GITHUB_EVENT_NAME="pull_request",
        GITHUB_REPOSITORY="your-org/configs",
        FAKE_GH_LOG=str(tmp_path / "gh.log"),
        FAKE_GH_STATE=str(tmp_path / "comments.json"),
    )
    github = {"event_name": "pull_request", "token": "ghs_fake", "repository": "your-org/configs",
              "event": {"pull_request": {"number": 3, "base": {"sha": base}}}}  # fmt: skip
    uploaded: list[set[str]] = []

    def upload(uses: str, with_: dict[str, str], env: dict[str, str]) -> int:
        sarif = json.loads(Path(with_["sarif_file"]).read_text(encoding="utf-8"))
        uploaded.append({r["ruleId"] for r in sarif["runs"][0]["results"]})
        return 0

    inputs = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in step["with"].items()}
    run = CompositeAction(action).run(
        inputs, work, env, github,
        {"actions/setup-python": lambda *_: 0, "github/codeql-action/upload-sarif": upload},
    )  # fmt: skip
    assert run.step("Install moe-lint").outcome == "success", run.step("Install moe-lint").stderr
    assert run.failed and run.outputs["exit-code"] == "1", run.stdout
    assert run.outputs["files"] == "1"
    lint = run.step("lint").stdout
    assert "::error file=configs/bad.yaml," in lint and "good.yaml" not in lint
    assert len(uploaded) == 1 and "PAR001" in uploaded[0]
    assert "PAR001" in (tmp_path / "summary.md").read_text(encoding="utf-8")
    (comment,) = json.loads((tmp_path / "comments.json").read_text(encoding="utf-8"))
    body = comment["body"]
    assert body.startswith("<!-- moe-lint -->") and "#### configs/bad.yaml" in body


def test_gitlab_job_runs_as_written(installed: Machine, tmp_path: Path) -> None:
    """examples/ci/gitlab-ci.yml includes this repository's template; its job, with the
    example's variables over the template's and MOE_LINT_GIT the git URL of the source at the
    commit, runs its script on a merge request that adds a broken config: it installs moe-lint,
    writes the Code Quality report of the changed config only and fails on its errors."""
    example = yaml.safe_load((CI_EXAMPLES / "gitlab-ci.yml").read_text("utf-8"))
    (include,) = example["include"]
    assert include["ref"] == COMMIT_PLACEHOLDER
    template = yaml.safe_load((REPO / include["file"].lstrip("/")).read_text(encoding="utf-8"))
    job = template["moe-lint"]
    work, base = _pull_request(tmp_path, installed.env)
    env = {
        "CI_PIPELINE_SOURCE": "merge_request_event",
        "CI_MERGE_REQUEST_DIFF_BASE_SHA": base,
        "MOE_LINT_GIT": f"{installed.source.as_uri()}@{installed.commit}",
    }
    env.update(gitlab_variables({**job["variables"], **example["moe-lint"]["variables"]}, env))
    proc = installed.run("\n".join(job["script"]), work, **env)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "configs/bad.yaml:" in proc.stdout and "good.yaml" not in proc.stdout
    report = work / job["artifacts"]["reports"]["codequality"]
    quality = json.loads(report.read_text(encoding="utf-8"))
    assert {entry["location"]["path"] for entry in quality} == {"configs/bad.yaml"}
    assert "PAR001" in {entry["check_name"] for entry in quality}
