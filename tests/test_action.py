"""The GitHub Action (action.yml) and the GitLab template (ci/gitlab/moe-lint.gitlab-ci.yml) run
here, for real, on a scratch repository with a pull request (issue 27).

The action runs through tests/action_runner.py, which executes action.yml's steps as GitHub's
runner does: the same `run:` lines, the same scripts (src/moe_lint/ci/), inputs passed as the
runner passes them. Nothing reaches the network: `python -m pip` is a fake that records what it
would install, `gh` a fake GitHub API that keeps the pull request's comments in a file, and the
`uses:` steps (setup-python, upload-sarif) fakes that record their inputs. moe-lint itself is
the real one, from this checkout.

The pull request changes two real configs from tests/data/corpus (one with errors, one clean),
an unrelated file, and deletes a broken config; an unchanged broken config stays in the tree.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from action_runner import (
    ActionRun,
    CompositeAction,
    _Parser,
    expressions,
    gitlab_variables,
    runner_env,
    write_fakes,
)
from conftest import DATA, DUMPS, REPO, run_main
from moe_lint.ci import SCRIPTS
from moe_lint.ci.comment import MARKER, MAX_BODY, Estimated, find_comment, post, render

ACTION = CompositeAction(REPO)
GITLAB = REPO / "ci" / "gitlab" / "moe-lint.gitlab-ci.yml"
SARIF_SCHEMA = json.loads((DATA / "schemas" / "sarif-schema-2.1.0.json").read_text("utf-8"))
#: Rejected by Megatron-Core at 64 GPUs (VERDICTS.tsv): PAR002 at expert_model_parallel_size.
BROKEN = DUMPS / "deepseek_v3_pretrain_64gpu_h100_fp8cs_config.yaml"
#: Accepted at 64 H100s: no error, no warning.
CLEAN = DUMPS / "gpt_oss_120b_pretrain_64gpu_h100_bf16_config.yaml"
CHANGED = ["configs/broken.yaml", "configs/clean.yaml"]
GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
}
RUN_LINE = re.compile(r'bash "\$GITHUB_ACTION_PATH/src/moe_lint/ci/([\w-]+\.sh)"')


def _git(repo: Path, *args: str) -> str:
    proc = subprocess.run(
        ["git", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **GIT_ENV},
    )
    return proc.stdout.strip()


# ------------------------------------------------------------------------ the scratch world


@dataclass
class World:
    """The pull request's repository, the fakes' folder and logs, and the runner's env."""

    repo: Path
    base: str
    head: str
    bin: Path
    tmp: Path

    @property
    def pip_log(self) -> Path:
        return self.tmp / "pip.log"

    @property
    def gh_log(self) -> Path:
        return self.tmp / "gh.log"

    @property
    def gh_state(self) -> Path:
        return self.tmp / "comments.json"

    def env(self, **extra: str) -> dict[str, str]:
        (self.tmp / "runner-temp").mkdir(exist_ok=True)
        return runner_env(
            PATH=f"{self.bin}{os.pathsep}{os.environ['PATH']}",
            RUNNER_TEMP=str(self.tmp / "runner-temp"),
            GITHUB_WORKSPACE=str(self.repo),
            GITHUB_REPOSITORY="octo/configs",
            GITHUB_STEP_SUMMARY=str(self.tmp / "step-summary.md"),
            FAKE_PIP_LOG=str(self.pip_log),
            FAKE_GH_LOG=str(self.gh_log),
            FAKE_GH_STATE=str(self.gh_state),
            XDG_CACHE_HOME=str(self.tmp / "cache"),
            NO_COLOR="1",
            **extra,
        )

    def gh_calls(self) -> list[dict[str, Any]]:
        if not self.gh_log.exists():
            return []
        return [json.loads(line) for line in self.gh_log.read_text("utf-8").splitlines()]

    def comments(self) -> list[dict[str, Any]]:
        data: list[dict[str, Any]] = json.loads(self.gh_state.read_text("utf-8"))
        return data


def _pull_request_repo(repo: Path) -> tuple[str, str]:
    """base: a clean config (changed later), a broken one that stays, one that is deleted, a
    README. head: the clean config edited, a broken config added, the README edited, a
    non-config text file added, the doomed config deleted."""
    (repo / "configs").mkdir(parents=True)
    clean = CLEAN.read_text(encoding="utf-8")
    (repo / "configs" / "clean.yaml").write_text(clean, encoding="utf-8")
    shutil.copy(REPO / "examples" / "dsv3_128k_h100_broken.yaml", repo / "configs" / "old.yaml")
    # Deleted by the pull request (not a rename: git pairs no added file with it).
    shutil.copy(REPO / "examples" / "qwen3_235b_128k_gb200.yaml", repo / "configs" / "removed.yaml")
    (repo / "README.md").write_text("# configs\n", encoding="utf-8")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    base = _git(repo, "rev-parse", "HEAD")
    _git(repo, "checkout", "-q", "-b", "feature")
    (repo / "configs" / "clean.yaml").write_text("# tuned\n" + clean, encoding="utf-8")
    shutil.copy(BROKEN, repo / "configs" / "broken.yaml")
    (repo / "README.md").write_text("# configs\n\nThe training configs.\n", encoding="utf-8")
    (repo / "notes.txt").write_text("not a config\n", encoding="utf-8")
    (repo / "configs" / "removed.yaml").unlink()
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "head")
    return base, _git(repo, "rev-parse", "HEAD")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    if shutil.which("git") is None or shutil.which("bash") is None:
        pytest.skip("git and bash are needed")
    tmp = tmp_path_factory.mktemp("action")
    base, head = _pull_request_repo(tmp / "repo")
    world = World(tmp / "repo", base, head, write_fakes(tmp / "bin"), tmp)
    someone = {"id": 41, "body": "Looks good; moe-lint will tell. <!-- moe-lint -->"}
    world.gh_state.write_text(json.dumps([someone]), encoding="utf-8")
    return world


def _github(world: World, event: str = "pull_request") -> dict[str, Any]:
    """The github context of the run (what action.yml's expressions read)."""
    pr = {"number": 7, "base": {"sha": world.base}, "head": {"sha": world.head}}
    payload = {"pull_request": pr} if event == "pull_request" else {}
    return {
        "event_name": event,
        "event": payload,
        "token": "ghs_fake_token",
        "repository": "octo/configs",
        "action_path": str(REPO),
    }


class Uses:
    """The fakes of the `uses:` steps: each records what the action passed it."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, str]]] = []
        self.sarif: dict[str, Any] | None = None

    def setup_python(self, uses: str, with_: dict[str, str], env: dict[str, str]) -> int:
        self.calls.append((uses, with_))
        return 0

    def upload_sarif(self, uses: str, with_: dict[str, str], env: dict[str, str]) -> int:
        self.calls.append((uses, with_))
        self.sarif = json.loads(Path(with_["sarif_file"]).read_text(encoding="utf-8"))
        return 0

    def handlers(self) -> dict[str, Any]:
        return {
            "actions/setup-python@v5": self.setup_python,
            "github/codeql-action/upload-sarif@v3": self.upload_sarif,
        }


def _run_action(world: World, inputs: dict[str, str], event: str = "pull_request") -> Any:
    uses = Uses()
    run = ACTION.run(
        inputs,
        world.repo,
        world.env(GITHUB_EVENT_NAME=event),
        _github(world, event),
        uses.handlers(),
    )
    return run, uses


@pytest.fixture(scope="module")
def pr_run(world: World) -> tuple[ActionRun, Uses, list[dict[str, Any]]]:
    """The action on the pull request, with a comment: (run, uses fakes, gh calls)."""
    run, uses = _run_action(world, {"gpus": "64", "gpu": "h100", "comment": "true"})
    return run, uses, world.gh_calls()


# ------------------------------------------------------------------------ action.yml itself


def _run_steps() -> Iterator[dict[str, Any]]:
    yield from (step for step in ACTION.steps if "run" in step)


def test_every_run_step_calls_a_script_and_interpolates_nothing() -> None:
    """Each `run:` is one line calling a script of src/moe_lint/ci/ in bash; no `${{` in any
    run text (an expression there is pasted into the script: injection); inputs reach the
    scripts through `env:` only."""
    steps = list(_run_steps())
    assert len(steps) == 5
    for step in steps:
        assert step["shell"] == "bash"
        assert "${{" not in step["run"], step["run"]
        match = RUN_LINE.fullmatch(step["run"].strip())
        assert match, step["run"]
        assert (SCRIPTS / match.group(1)).is_file()
    used = {step["uses"] for step in ACTION.steps if "uses" in step}
    assert used == {"actions/setup-python@v5", "github/codeql-action/upload-sarif@v3"}


def test_every_expression_names_a_declared_input_or_an_earlier_step() -> None:
    """The expressions parse, and each names an input action.yml declares or the output of an
    earlier step; every input is used."""
    step_ids: list[str] = []
    names: list[str] = []

    def lookup(name: str) -> None:
        names.append(name)

    for index, step in enumerate(ACTION.steps):
        for text in expressions(step):
            _Parser(
                text,
                lookup,
                {"success": True, "failure": False, "always": True, "cancelled": False},
            ).parse()
            for name in names:
                root, *rest = name.split(".")
                assert root in ("inputs", "github", "steps"), name
                if root == "inputs":
                    assert rest[0] in ACTION.inputs, name
                if root == "steps":
                    assert rest[0] in step_ids, (index, name)
            names.clear()
        if "id" in step:
            step_ids.append(step["id"])
    used = {m for text in expressions(ACTION.spec) for m in re.findall(r"inputs\.([\w-]+)", text)}
    assert used == set(ACTION.inputs), set(ACTION.inputs) ^ used


def test_each_step_env_var_is_read_by_its_script() -> None:
    """A variable action.yml sets and no script reads is a typo between the two."""
    common = (SCRIPTS / "common.sh").read_text(encoding="utf-8")
    for step in _run_steps():
        script = (SCRIPTS / RUN_LINE.fullmatch(step["run"].strip()).group(1)).read_text("utf-8")
        for name in step.get("env", {}):
            assert re.search(rf"\b{name}\b", script + common), (step["name"], name)


def test_scripts_are_strict_bash() -> None:
    scripts = sorted(SCRIPTS.glob("*.sh"))
    assert len(scripts) >= 7
    for path in scripts:
        text = path.read_text(encoding="utf-8")
        if path.name == "common.sh":  # sourced, so it inherits the caller's options
            assert text.startswith("# shellcheck shell=bash")
            continue
        assert text.startswith("#!/usr/bin/env bash\n"), path.name
        assert "\nset -euo pipefail\n" in text, path.name


# ------------------------------------------------------------------------ the action runs


def test_only_the_changed_configs_are_linted(world: World, pr_run: Any) -> None:
    run, _, _ = pr_run
    files = run.step("files")
    assert files.outputs["count"] == "2" and run.outputs["files"] == "2"
    listed = Path(files.outputs["list"]).read_bytes().split(b"\0")
    assert sorted(name.decode() for name in listed if name) == CHANGED
    lint = run.step("lint").stdout
    annotated = set(re.findall(r"^::(?:error|warning|notice) file=([^,]+),", lint, re.M))
    assert annotated and annotated <= set(CHANGED), annotated
    for other in ("old.yaml", "removed.yaml", "README", "notes.txt"):
        assert other not in lint


def test_errors_are_annotated_on_their_line(world: World, pr_run: Any) -> None:
    run, _, _ = pr_run
    lint = run.step("lint").stdout
    found = re.search(r"^::error file=configs/broken\.yaml,line=(\d+),.*title=PAR002 ", lint, re.M)
    assert found, lint
    line = (world.repo / "configs" / "broken.yaml").read_text("utf-8").splitlines()
    assert "expert_model_parallel_size: 64" in line[int(found.group(1)) - 1]
    assert not re.search(r"^::error file=configs/clean\.yaml", lint, re.M)
    summary = (world.tmp / "step-summary.md").read_text(encoding="utf-8")
    assert "### moe-lint" in summary and "`PAR002`" in summary


def test_sarif_is_valid_and_uploaded(world: World, pr_run: Any) -> None:
    run, uses, _ = pr_run
    upload = [with_ for name, with_ in uses.calls if name.startswith("github/codeql-action")]
    assert upload == [{"sarif_file": run.step("lint").outputs["sarif"], "category": "moe-lint"}]
    assert uses.sarif is not None
    jsonschema.Draft4Validator(SARIF_SCHEMA, format_checker=jsonschema.FormatChecker()).validate(
        uses.sarif
    )
    results = uses.sarif["runs"][0]["results"]
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results}
    assert uris == {"configs/broken.yaml"}
    assert "PAR002" in {r["ruleId"] for r in results}


def test_install_and_python_steps(world: World, pr_run: Any) -> None:
    """With no version, the action installs its own checkout; setup-python gets the input."""
    run, uses, _ = pr_run
    assert ("actions/setup-python@v5", {"python-version": "3.12"}) in uses.calls
    installs = [json.loads(line) for line in world.pip_log.read_text("utf-8").splitlines()]
    assert installs[0][0] == "install" and installs[0][-1] == str(REPO)
    assert "moe-lint 0." in run.step("Install moe-lint").stdout


def test_the_comment_holds_each_configs_memory_table(
    world: World, pr_run: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """One POST (no comment had the marker at its start), with the token; the body has the
    marker, the findings table and, per changed config, the rows `moe-lint estimate --format
    json` gives for it."""
    _, _, calls = pr_run
    methods = [c["args"][2] if c["args"][1] == "--method" else "list" for c in calls]
    assert methods == ["list", "POST"]
    assert {c["token"] for c in calls} == {"ghs_fake_token"}
    ours = [c for c in world.comments() if c["id"] != 41]
    assert len(ours) == 1
    body = Path(calls[1]["args"][5]).read_text("utf-8")
    body = json.loads(body)["body"]
    assert body.startswith(MARKER + "\n")
    assert "`PAR002`" in body and "### Memory per GPU" in body
    cwd = Path.cwd()
    os.chdir(world.repo)
    try:
        for name in CHANGED:
            code, out, _ = run_main(
                capsys, "estimate", "--gpus", "64", "--gpu", "h100", "--format", "json", name
            )
            assert code == 0
            (entry,) = json.loads(out)
            section = body[body.index(f"#### {name.replace('_', chr(92) + '_')}") :]
            for stage in entry["stages"]:
                label = (
                    f"**{stage['stage']}** (worst)"
                    if stage["stage"] == entry["worst_stage"]
                    else str(stage["stage"])
                )
                row = f"| {label} | {stage['peak_phase']} | {stage['total_gib']:.2f} |"
                assert row in section, (name, row)
            assert entry["verdict"] in section
    finally:
        os.chdir(cwd)


def test_the_job_fails_after_upload_and_comment(pr_run: Any) -> None:
    """The errors fail the job at the last step, after the SARIF upload and the comment ran."""
    run, _, _ = pr_run
    outcomes = [(step.name, step.outcome) for step in run.steps]
    assert outcomes[:-1] == [(s.name, "success") for s in run.steps[:-1]], outcomes
    assert run.steps[-1].outcome == "failure" and run.steps[-1].returncode == 1
    assert run.failed and run.outputs["exit-code"] == "1"


def test_a_second_run_updates_the_one_comment(world: World, pr_run: Any) -> None:
    """The action again, on the clean config only: it passes, and the comment is updated
    (PATCH on the id the marker found), not doubled."""
    before = len(world.gh_calls())
    (ours,) = [c for c in world.comments() if c["id"] != 41]
    run, uses = _run_action(
        world, {"files": "configs/clean.yaml", "gpus": "64", "gpu": "h100", "comment": "true"}
    )
    assert not run.failed and run.outputs["exit-code"] == "0", run.stdout
    calls = world.gh_calls()[before:]
    assert [c["args"][:4] for c in calls[1:]] == [
        ["api", "--method", "PATCH", f"repos/octo/configs/issues/comments/{ours['id']}"]
    ]
    (updated,) = [c for c in world.comments() if c["id"] == ours["id"]]
    assert len(world.comments()) == 2
    assert "configs/clean.yaml" in updated["body"] and "broken.yaml" not in updated["body"]
    assert uses.sarif is not None and uses.sarif["runs"][0]["results"] == []


# ------------------------------------------------------------------------ the steps' scripts


def _script(world: World, name: str, cwd: Path | None = None, **env: str) -> Any:
    return subprocess.run(
        ["bash", str(SCRIPTS / name)],
        cwd=cwd or world.repo,
        env=world.env(**env),
        capture_output=True,
        text=True,
        check=False,
    )


def _listed(path: Path) -> list[str]:
    return sorted(name.decode() for name in path.read_bytes().split(b"\0") if name)


def test_a_push_lints_every_matching_file(world: World, tmp_path: Path) -> None:
    """No base (a push), or changed-only false: every tracked file the patterns match."""
    out = tmp_path / "files"
    for env in (
        {"MOE_LINT_BASE": ""},
        {"MOE_LINT_BASE": world.base, "MOE_LINT_CHANGED_ONLY": "false"},
    ):
        proc = _script(world, "changed-files.sh", **env, MOE_LINT_FILES="configs/*.yaml")
        assert proc.returncode == 0, proc.stderr
        listed = _listed(Path(world.tmp / "runner-temp" / "moe-lint" / "files"))
        assert listed == ["configs/broken.yaml", "configs/clean.yaml", "configs/old.yaml"]
    proc = subprocess.run(
        ["bash", str(SCRIPTS / "changed-files.sh"), str(out)],
        cwd=world.repo,
        env=world.env(MOE_LINT_BASE=world.base),
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0 and _listed(out) == CHANGED


def test_a_shallow_clone_fetches_the_base(world: World, tmp_path: Path) -> None:
    """actions/checkout's default clone has one commit: the script fetches the base and diffs
    the two trees (no merge base in a shallow clone)."""
    _git(world.repo, "config", "uploadpack.allowAnySHA1InWant", "true")
    clone = tmp_path / "clone"
    _git(
        tmp_path, "clone", "-q", "--depth=1", "--branch", "feature", world.repo.as_uri(), str(clone)
    )
    assert (
        subprocess.run(
            ["git", "cat-file", "-e", world.base], cwd=clone, capture_output=True, check=False
        ).returncode
        != 0
    )
    out = tmp_path / "files"
    proc = subprocess.run(
        ["bash", str(SCRIPTS / "changed-files.sh"), str(out)],
        cwd=clone,
        env=world.env(MOE_LINT_BASE=world.base),
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert _listed(out) == CHANGED


def test_args_are_split_like_a_shell_and_never_run(world: World, tmp_path: Path) -> None:
    """MOE_LINT_ARGS is split by shlex: quotes group, `$(...)` and globs stay text."""
    probe = 'source "$1"; moe_lint_options; printf "%s\\0" "${MOE_LINT_OPTS[@]}"'
    args = "--select 'PAR002,MEM' model.seq_length=4096 '$(touch pwned)' *"
    proc = subprocess.run(
        ["bash", "-c", probe, "probe", str(SCRIPTS / "common.sh")],
        cwd=tmp_path,
        env=world.env(MOE_LINT_ARGS=args, MOE_LINT_GPUS="8"),
        capture_output=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    words = [w.decode() for w in proc.stdout.split(b"\0") if w]
    assert words == [
        "--force-exclude",
        "--gpus",
        "8",
        "--select",
        "PAR002,MEM",
        "model.seq_length=4096",
        "$(touch pwned)",
        "*",
    ]
    assert not (tmp_path / "pwned").exists()


def test_install_takes_the_version_input(world: World) -> None:
    start = len(world.pip_log.read_text("utf-8").splitlines()) if world.pip_log.exists() else 0
    spec = "git+https://example.invalid/moe-lint.git@abc123"
    proc = _script(world, "install.sh", MOE_LINT_VERSION=spec)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(world.pip_log.read_text("utf-8").splitlines()[start])[-1] == spec
    proc = _script(world, "install.sh", MOE_LINT_VERSION="--index-url=https://evil.invalid")
    assert proc.returncode == 2 and "not an option" in proc.stderr


def test_the_last_step_fails_when_lint_did_not_finish(world: World) -> None:
    assert _script(world, "github-finish.sh", MOE_LINT_EXIT_CODE="0").returncode == 0
    assert _script(world, "github-finish.sh", MOE_LINT_EXIT_CODE="2").returncode == 2
    proc = _script(world, "github-finish.sh", MOE_LINT_EXIT_CODE="")
    assert proc.returncode == 1 and proc.stdout.startswith("::error ")


# ------------------------------------------------------------------------ the comment module


def _entry(name: str) -> dict[str, Any]:
    stage = {
        "stage": 0,
        "peak_phase": "forward/backward",
        "total_gib": 70.0,
        "lower_bound_gib": 60.0,
        "upper_band_gib": 80.0,
        "allocated_gib": 60.0,
        "reserved_gib": 65.0,
        "terms": [{"name": "weights", "gib": 10.0}],
    }
    return {
        "file": name,
        "gpu": "h100",
        "usable_gib": 79.2,
        "verdict": "fits",
        "verdict_text": "fits: below",
        "worst_stage": 0,
        "stages": [stage] * 40,
        "levers": [],
    }


def test_the_comment_stays_under_githubs_limit() -> None:
    """Hundreds of configs: the body stays under 65,536 characters and says what it left out;
    a file with no estimate gets its reason; markup in a file name is escaped."""
    estimates = [Estimated(f"configs/c{i}.yaml", _entry(f"configs/c{i}.yaml")) for i in range(300)]
    estimates.append(Estimated("configs/<b>x</b>.yaml", None, "not a Megatron Bridge config"))
    body = render(estimates, "### moe-lint\n\n" + "| row |\n" * 20_000)
    assert len(body) < MAX_BODY + 2_000 < 65_536
    assert body.startswith(MARKER) and "more memory table(s) left out" in body
    assert "The table is cut here" in body
    assert "\\<b\\>x\\</b\\>.yaml: not a Megatron Bridge config" in body


def test_find_comment_reads_every_page() -> None:
    pages = (
        json.dumps([{"id": 1, "body": "hi"}])
        + "\n"
        + json.dumps(
            [{"id": 2, "body": f"> {MARKER} quoted"}, {"id": 3, "body": f"{MARKER}\nours"}]
        )
    )
    assert find_comment(pages) == 3
    assert find_comment("[][]") is None


def test_a_comment_that_cannot_be_posted_is_a_warning(
    world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = tmp_path / "body.md"
    body.write_text(MARKER + "\n", encoding="utf-8")
    failing = tmp_path / "gh"
    failing.write_text("#!/bin/sh\necho 'HTTP 403: Resource not accessible' >&2\nexit 1\n")
    failing.chmod(0o755)
    assert post(body, "octo/configs", "7", str(failing)) == 0
    assert capsys.readouterr().out.startswith("::warning title=moe-lint::could not list")
    with pytest.raises(Exception, match="owner/name"):
        post(body, "octo/configs/../../x", "7", str(failing))


# ------------------------------------------------------------------------------------ GitLab


def _gitlab_job() -> dict[str, Any]:
    job: dict[str, Any] = yaml.safe_load(GITLAB.read_text(encoding="utf-8"))["moe-lint"]
    return job


def test_gitlab_template_structure() -> None:
    job = _gitlab_job()
    assert job["artifacts"] == {
        "when": "always",
        "reports": {"codequality": "gl-code-quality-report.json"},
    }
    assert {"if": '$CI_PIPELINE_SOURCE == "merge_request_event"'} in job["rules"]
    assert job["script"][-1] == "python -m moe_lint.ci gitlab"
    read = (
        (SCRIPTS / "gitlab.sh").read_text("utf-8")
        + (SCRIPTS / "common.sh").read_text("utf-8")
        + (SCRIPTS / "changed-files.sh").read_text("utf-8")
    )
    for name in job["variables"]:
        assert name == "MOE_LINT_PIP" or re.search(rf"\b{name}\b", read), name


def test_gitlab_job_runs_on_a_merge_request(world: World) -> None:
    """The template's script, line by line in one bash as GitLab's runner does, with the job's
    variables (MOE_LINT_GIT from the project's CI/CD settings, the cluster as the user's
    override of the job): a Code Quality report of the changed configs only, and a failure."""
    job = _gitlab_job()
    ci = {
        "CI_PIPELINE_SOURCE": "merge_request_event",
        "CI_MERGE_REQUEST_DIFF_BASE_SHA": world.base,
        "CI_PROJECT_DIR": str(world.repo),
        "MOE_LINT_GIT": "https://gitlab.example.invalid/ml/moe-lint.git@abc123",
    }
    variables = {**job["variables"], "MOE_LINT_GPUS": "64", "MOE_LINT_GPU": "h100"}
    env = world.env(**ci)
    env.update(gitlab_variables(variables, env))
    env.pop("RUNNER_TEMP")
    env["TMPDIR"] = str(world.tmp / "gitlab-tmp")
    Path(env["TMPDIR"]).mkdir(exist_ok=True)
    start = len(world.pip_log.read_text("utf-8").splitlines()) if world.pip_log.exists() else 0
    report = world.repo / job["artifacts"]["reports"]["codequality"]
    proc = subprocess.run(
        ["bash", "--noprofile", "--norc", "-c", "set -eo pipefail\n" + "\n".join(job["script"])],
        cwd=world.repo,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    install = json.loads(world.pip_log.read_text("utf-8").splitlines()[start])
    assert install[0] == "install" and install[-1] == f"git+{ci['MOE_LINT_GIT']}"
    assert "configs/broken.yaml:" in proc.stdout and "PAR002" in proc.stdout
    entries = json.loads(report.read_text(encoding="utf-8"))
    report.unlink()
    assert entries
    for entry in entries:
        assert set(entry) == {"description", "check_name", "fingerprint", "severity", "location"}
        assert entry["severity"] in ("info", "minor", "major", "critical", "blocker")
        assert re.fullmatch(r"[0-9a-f]{64}", entry["fingerprint"])
        assert entry["location"]["path"] in CHANGED
        assert isinstance(entry["location"]["lines"]["begin"], int)
    assert len({e["fingerprint"] for e in entries}) == len(entries)
    par002 = [e for e in entries if e["check_name"] == "PAR002"]
    assert par002 and par002[0]["severity"] == "major"
    line = par002[0]["location"]["lines"]["begin"]
    text = (world.repo / "configs" / "broken.yaml").read_text("utf-8").splitlines()
    assert "expert_model_parallel_size" in text[line - 1]


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck is not installed")
def test_scripts_pass_shellcheck() -> None:
    scripts = [str(path) for path in sorted(SCRIPTS.glob("*.sh"))]
    proc = subprocess.run(
        ["shellcheck", "-x", *scripts], cwd=SCRIPTS, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stdout


def test_nothing_to_lint_passes_and_adds_no_comment(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pull request that changes no config: the lint step passes with no SARIF log, and the
    comment step only refreshes a comment that exists (--update-only), creating none."""
    empty = tmp_path / "files"
    empty.write_bytes(b"")
    outputs = tmp_path / "outputs"
    proc = _script(world, "github-lint.sh", MOE_LINT_LIST=str(empty), GITHUB_OUTPUT=str(outputs))
    assert proc.returncode == 0, proc.stderr
    assert outputs.read_text("utf-8").splitlines()[:2] == ["exit-code=0", "sarif="]
    body = tmp_path / "body.md"
    body.write_text(MARKER + "\nno configs\n", encoding="utf-8")
    state, log = tmp_path / "state.json", tmp_path / "gh.log"
    monkeypatch.setenv("FAKE_GH_STATE", str(state))
    monkeypatch.setenv("FAKE_GH_LOG", str(log))
    monkeypatch.setenv("GH_TOKEN", "t")
    gh = str(world.bin / "gh")
    state.write_text(json.dumps([{"id": 5, "body": "unrelated"}]), encoding="utf-8")
    assert post(body, "octo/configs", "7", gh, create=False) == 0
    assert json.loads(state.read_text("utf-8")) == [{"id": 5, "body": "unrelated"}]
    state.write_text(json.dumps([{"id": 6, "body": MARKER + "\nold"}]), encoding="utf-8")
    assert post(body, "octo/configs", "7", gh, create=False) == 0
    assert json.loads(state.read_text("utf-8")) == [{"id": 6, "body": MARKER + "\nno configs\n"}]


def test_an_unreachable_base_is_one_clear_line(world: World, tmp_path: Path) -> None:
    proc = _script(world, "changed-files.sh", MOE_LINT_BASE="0" * 40)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith("moe-lint: cannot fetch the base")
