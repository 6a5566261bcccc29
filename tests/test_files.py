"""Files the way linters take them (issue 13): folders recurse, quoted globs expand, ``-`` reads
stdin, and one bad file never hides the others (all are linted, the exit code is the worst)."""

from __future__ import annotations

import fnmatch
import io
import json
import os
import random
import re
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from conftest import REPO
from conftest import run_main as run
from moe_lint.files import excluder_for, expand
from moe_lint.globs import fnmatch_regex, path_regex

EXAMPLES = REPO / "examples"
#: Warnings only (MEM002 for the central estimate's 3.7 GiB spare, PAR004, PAR005 at 256 GPUs):
#: exit 0 at the default --fail-on error.
GOOD = (EXAMPLES / "dsv3_128k_h100.yaml").read_text(encoding="utf-8")
#: Errors (PAR001, MOE001, ...): exit 1.
BROKEN = (EXAMPLES / "dsv3_128k_h100_broken.yaml").read_text(encoding="utf-8")
#: A Bridge config Bridge cannot load: exit 2.
MALFORMED = "model:\n  tensor_model_parallel_size: [1,\n"


def _write(root: Path, rel: str, text: str = GOOD) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _tree(root: Path) -> None:
    _write(root, "configs/b.yaml")
    _write(root, "configs/a.yml")
    _write(root, "configs/sub/c.yaml")
    _write(root, "configs/launch.sh", "#!/bin/bash\necho hi\n")
    _write(root, "configs/notes.md", "# not linted\n")
    _write(root, "configs/.hidden.yaml")
    _write(root, "configs/.cache/d.yaml")
    _write(root, "configs/.git/e.yaml")
    _write(root, "configs/node_modules/f.yaml")
    _write(root, "configs/__pycache__/g.yaml")
    _write(root, "configs/.venv/h.yaml")
    _write(root, "configs/old/i.yaml")


def _files(
    args: list[str], exclude: list[str] | None = None, extend: list[str] = (), force: bool = False
) -> list[str]:
    ex = None if exclude is None else [(p, None) for p in exclude]
    targets = expand(args, excluder_for(ex, [(p, None) for p in extend]), force)
    return [t.path for t in targets if t.error is None and t.notice is None]


def test_folder_walk_is_sorted_and_skips_hidden_and_vcs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tree(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert _files(["configs"]) == [
        "configs/a.yml",
        "configs/b.yaml",
        "configs/launch.sh",
        "configs/old/i.yaml",
        "configs/sub/c.yaml",
    ]
    # A trailing slash and "." give the same files, as paths without "./".
    assert _files(["configs/"]) == _files(["configs"])
    # A hidden folder named on the command line is walked (only those below it are skipped).
    assert _files(["configs/.cache"]) == ["configs/.cache/d.yaml"]
    assert _files(["configs/.cache/*.yaml"]) == ["configs/.cache/d.yaml"]
    monkeypatch.chdir(tmp_path / "configs")
    assert _files(["."]) == ["a.yml", "b.yaml", "launch.sh", "old/i.yaml", "sub/c.yaml"]


def test_exclude_replaces_defaults_extend_adds_explicit_file_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tree(tmp_path)
    monkeypatch.chdir(tmp_path)
    # extend-exclude adds to the defaults: node_modules stays out, old/ goes out too.
    assert "configs/old/i.yaml" not in _files(["configs"], extend=["old"])
    assert "configs/node_modules/f.yaml" not in _files(["configs"], extend=["old"])
    # exclude replaces them: node_modules comes back (hidden folders never do).
    replaced = _files(["configs"], exclude=["old/"])
    assert "configs/node_modules/f.yaml" in replaced and "configs/__pycache__/g.yaml" in replaced
    assert "configs/old/i.yaml" not in replaced and "configs/.venv/h.yaml" not in replaced
    # Anchored patterns (with a slash) are relative to their base; ** spans folders.
    assert _files(["configs"], extend=["configs/sub/*.yaml"]) == [
        "configs/a.yml",
        "configs/b.yaml",
        "configs/launch.sh",
        "configs/old/i.yaml",
    ]
    assert _files(["configs"], extend=["**/*.yml", "*.sh"]) == [
        "configs/b.yaml",
        "configs/old/i.yaml",
        "configs/sub/c.yaml",
    ]
    # A file named on the command line is linted even when excluded, unless --force-exclude.
    assert _files(["configs/old/i.yaml"], extend=["old"]) == ["configs/old/i.yaml"]
    assert _files(["configs/old/i.yaml"], extend=["old"], force=True) == []
    assert _files(["configs/node_modules/f.yaml"], force=True) == []
    assert _files(["configs/b.yaml"], extend=["old"], force=True) == ["configs/b.yaml"]


def test_pyproject_exclude_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _tree(tmp_path)
    _write(tmp_path, "configs/sub/bad.yaml", MALFORMED)
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "configs", "--format", "concise")
    assert code == 2 and "configs/sub/bad.yaml: error: line 3" in err
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool.moe-lint]\nextend-exclude = ["configs/sub/**"]\n')
    code, out, err = run(capsys, "configs", "--format", "json")
    files = {f["file"] for f in json.loads(out)}
    assert code == 0 and err == "", err
    assert files == {"configs/a.yml", "configs/b.yaml", "configs/old/i.yaml"}
    # exclude replaces the defaults: node_modules is linted again.
    pyproject.write_text('[tool.moe-lint]\nexclude = ["sub", "old"]\n')
    code, out, err = run(capsys, "configs", "--format", "json")
    files = {f["file"] for f in json.loads(out)}
    assert code == 0 and "configs/node_modules/f.yaml" in files
    assert "configs/old/i.yaml" not in files
    # --exclude on the command line replaces pyproject's exclude; --extend-exclude adds.
    code, out, err = run(
        capsys,
        "configs",
        "--format",
        "json",
        "--exclude",
        "sub,old",
        "--extend-exclude",
        "node_modules",
        "--extend-exclude=__pycache__",
    )
    files = {f["file"] for f in json.loads(out)}
    assert files == {"configs/a.yml", "configs/b.yaml"}
    # The pre-commit hook's form: files named one by one, --force-exclude (.pre-commit-hooks.yaml).
    pyproject.write_text('[tool.moe-lint]\nextend-exclude = ["configs/sub/"]\n')
    named = ["configs/sub/bad.yaml", "configs/b.yaml", "--format", "json"]
    code, out, err = run(capsys, *named)
    assert code == 2 and "configs/sub/bad.yaml: error" in err
    code, out, err = run(capsys, *named, "--force-exclude")
    assert code == 0 and {f["file"] for f in json.loads(out)} == {"configs/b.yaml"}
    pyproject.write_text('[tool.moe-lint]\nexclude = "sub"\n')
    code, _, err = run(capsys, "configs")
    assert code == 2 and "exclude must be a list of strings" in err


def test_globs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _tree(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert _files(["configs/**/*.yaml"]) == [
        "configs/b.yaml",
        "configs/old/i.yaml",
        "configs/sub/c.yaml",
    ]
    assert _files(["configs/?.y*"]) == ["configs/a.yml", "configs/b.yaml"]
    assert _files(["configs/[ab].*"]) == ["configs/a.yml", "configs/b.yaml"]
    assert _files(["configs/[!a]*.yaml"]) == ["configs/b.yaml"]
    # A matched folder is walked; a matched file is taken whatever its suffix.
    assert _files(["configs/s*"]) == ["configs/sub/c.yaml"]
    assert _files(["configs/*.md"]) == ["configs/notes.md"]
    # A trailing ** is "everything below": what a folder walk takes.
    assert _files(["configs/**"]) == _files(["configs"])
    # ** from the current folder; excludes apply to globs (node_modules, hidden folders).
    assert _files(["**/c.yaml"]) == ["configs/sub/c.yaml"]
    assert _files(["**/f.yaml"]) == []
    assert _files([str(tmp_path / "configs" / "*.yml")]) == [str(tmp_path / "configs/a.yml")]
    # A file that exists is never a glob, and each file is linted once.
    weird = _write(tmp_path, "configs/[x].yaml")
    assert _files(["configs/[x].yaml", "configs/b.yaml", "configs/*.yaml"]) == [
        "configs/[x].yaml",
        "configs/b.yaml",
    ]
    weird.unlink()


def test_glob_matching_nothing_is_that_arguments_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _tree(tmp_path)
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "configs/**/*.toml", "configs/b.yaml", "--format", "json")
    assert code == 2
    assert err.strip() == "configs/**/*.toml: error: no file matches this pattern"
    records = json.loads(out)
    assert {r["code"] for r in records} == {"E000", "MEM002", "PAR004", "PAR005"}
    assert "Traceback" not in out + err


def test_folder_argument_is_linted_not_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _tree(tmp_path)
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "configs")
    assert "is a directory" not in out + err
    assert "configs/sub/c.yaml:13:3: warning PAR004" in out
    assert out.rstrip().splitlines()[-1].startswith("Found ") and "in 4 files" in out
    (tmp_path / "empty").mkdir()
    code, out, err = run(capsys, "empty")
    assert code == 0 and "empty: skipped: no files to lint in this folder" in out


def test_worst_exit_code_and_summary_with_good_bad_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    _write(tmp_path, "good.yaml")
    _write(tmp_path, "broken.yaml", BROKEN)
    _write(tmp_path, "malformed.yaml", MALFORMED)
    assert run(capsys, "good.yaml")[0] == 0
    assert run(capsys, "good.yaml", "broken.yaml")[0] == 1
    code, out, err = run(capsys, "missing.yaml", "good.yaml", "broken.yaml", "malformed.yaml")
    assert code == 2
    assert err.splitlines() == [
        "missing.yaml: error: no such file",
        err.splitlines()[1],
    ] and err.splitlines()[1].startswith("malformed.yaml: error: line 3")
    # Every other file is still reported, and the summary still comes.
    assert "broken.yaml:9:3: error PAR001" in out and "good.yaml:13:3: warning PAR004" in out
    last = out.rstrip().splitlines()[-1]
    assert last.startswith("Found ") and " errors, " in last
    assert last.endswith(
        "--unsafe-fixes); 2 files could not be linted; 3 infos hidden, --show-infos shows them."
    )
    assert " in 2 files (" in last
    code, out, err = run(capsys, "missing.yaml", "good.yaml")
    assert code == 2 and out.rstrip().endswith("in 1 file; 1 file could not be linted.")
    # When every file failed, each one's line on stderr is the whole report.
    code, out, err = run(capsys, "missing.yaml", "malformed.yaml")
    assert code == 2 and out == "" and len(err.splitlines()) == 2
    code, out, _ = run(capsys, "missing.yaml", "good.yaml", "--exit-zero", "-q")
    assert code == 2 and "could not be linted" not in out
    # --diff shows the other files' diffs and still exits 2.
    code, out, err = run(capsys, "missing.yaml", "broken.yaml", "--diff")
    assert code == 2 and out.startswith("--- a/broken.yaml")
    assert "1 file would be changed by --fix (1 file could not be linted)." in err


@pytest.mark.slow
def test_parallel_workers_give_the_same_result(tmp_path: Path) -> None:
    """Past workers.MIN_FILES files the forked workers lint the walk: same output, same
    worst exit code, the missing and the malformed file each reported once."""
    for i in range(50):
        _write(tmp_path, f"many/d{i // 10}/f{i:02d}.yaml", GOOD if i % 7 else BROKEN)
    _write(tmp_path, "many/d3/zz.yaml", MALFORMED)
    args = ["many", "missing.yaml", "many/**/f1*.yaml", "--format", "json"]

    def lint(jobs: str) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k != "MOE_LINT_STRICT"}
        env["MOE_LINT_JOBS"] = jobs
        return subprocess.run(
            [sys.executable, "-m", "moe_lint", *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )

    one, two = lint("1"), lint("2")
    assert one.returncode == two.returncode == 2
    assert one.stdout == two.stdout and one.stderr == two.stderr
    records = json.loads(one.stdout)
    assert len({r["file"] for r in records if r["code"] != "E000"}) == 50
    assert sorted(r["file"] for r in records if r["code"] == "E000") == [
        "many/d3/zz.yaml",
        "missing.yaml",
    ]


def _stdin(monkeypatch: pytest.MonkeyPatch, text: str | bytes) -> None:
    raw = text.encode("utf-8") if isinstance(text, str) else text
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(raw)))


def test_stdin_with_filename_gives_locations_and_per_file_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.moe-lint.per-file-ignores]\n"configs/debug/*.yaml" = ["PAR004"]\n'
        '[tool.moe-lint.per-file."configs/big/*.yaml"]\ngpus = 384\n'
    )
    _stdin(monkeypatch, GOOD)
    code, out, _ = run(capsys, "-", "--format", "concise")
    assert code == 0 and out.startswith("-:7:1: MEM002 [warning]")
    assert "\n-:13:3: PAR004 [warning]" in out
    _stdin(monkeypatch, GOOD)
    code, out, _ = run(capsys, "-", "--stdin-filename", "configs/debug/x.yaml", "--format", "json")
    found = json.loads(out)
    assert {f["code"] for f in found} == {"MEM002", "PAR005"}
    assert {(f["file"], f["line"]) for f in found if f["code"] == "PAR005"} == {
        ("configs/debug/x.yaml", 15)
    }
    # --stdin-filename alone reads stdin (ruff does the same); per-file tables apply (to a
    # config without the in-file directive, which would win over pyproject).
    _stdin(monkeypatch, GOOD.replace("# moe-lint: gpus=256", "# moe-lint:"))
    code, out, _ = run(capsys, "--stdin-filename", "configs/big/x.yaml", "--format", "concise")
    assert code == 1 and "configs/big/x.yaml:" in out and "PAR001" in out
    # With other files: in command-line order, the exit code the worst of them.
    _write(tmp_path, "broken.yaml", BROKEN)
    _stdin(monkeypatch, GOOD)
    code, out, _ = run(capsys, "broken.yaml", "-", "--format", "sarif")
    uris = {
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        for r in json.loads(out)["runs"][0]["results"]
    }
    assert code == 1 and uris == {"broken.yaml", "-"}


def test_stdin_bad_input_and_bounds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    cases: list[tuple[str | bytes, str]] = [
        (MALFORMED, "cfg.yaml: error: line 3, column 1: YAML syntax error"),
        (b"model: {}\x00", "cfg.yaml: error: binary data"),
        (b"model:\n  x: \xff\n", "cfg.yaml: error: invalid UTF-8"),
        ("model:\n" + "  k: 1\n" * 1_300_000, "cfg.yaml: error: file is too large"),
    ]
    for text, expected in cases:
        _stdin(monkeypatch, text)
        code, out, err = run(capsys, "-", "--stdin-filename", "cfg.yaml")
        assert code == 2 and err.strip().startswith(expected), err[:200]
        assert len(err.strip().splitlines()) == 1
    _stdin(monkeypatch, "name: ci\non: [push]\n")
    code, out, err = run(capsys, "-")
    assert code == 0 and "-: skipped: not a Megatron Bridge config" in out
    monkeypatch.setattr(sys, "stdin", None)
    code, _, err = run(capsys, "-")
    assert code == 2 and err.strip() == "-: error: stdin is closed or not readable as bytes"


def test_stdin_usage_errors_and_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    _write(tmp_path, "good.yaml")
    for args, message in [
        (["-", "-"], "- (stdin) can be given only once"),
        (["good.yaml", "--stdin-filename", "x.yaml"], "--stdin-filename names the config read"),
        (["-", "--fix"], "--fix writes files in place and cannot write to stdin"),
    ]:
        _stdin(monkeypatch, BROKEN)
        code, _, err = run(capsys, *args)
        assert code == 2 and err.startswith(f"moe-lint: error: {message}"), err
    # --diff works on stdin: the diff is the output, nothing is written.
    _stdin(monkeypatch, BROKEN)
    code, out, err = run(capsys, "-", "--diff", "--stdin-filename", "cfg.yaml")
    assert code == 1 and out.startswith("--- a/cfg.yaml") and "+dataset:" in out
    assert not (tmp_path / "cfg.yaml").exists()


def test_estimate_takes_folders_globs_and_stdin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    _write(tmp_path, "runs/a.yaml")
    _write(tmp_path, "runs/ci.yaml", "name: ci\non: [push]\n")
    code, out, err = run(capsys, "estimate", "runs", "--format", "json")
    assert code == 0 and [e["file"] for e in json.loads(out)] == ["runs/a.yaml"]
    assert "runs/ci.yaml: skipped: not a Megatron Bridge config" in err
    code, out, err = run(capsys, "estimate", "runs/ci.yaml")
    assert code == 2 and "runs/ci.yaml: error: not a Megatron Bridge config" in err
    code, out, err = run(capsys, "estimate", "r*/*.yaml", "nothing/*.yaml", "--format", "json")
    assert code == 2 and [e["file"] for e in json.loads(out)] == ["runs/a.yaml"]
    assert "nothing/*.yaml: error: no file matches this pattern" in err
    _stdin(monkeypatch, GOOD)
    code, out, err = run(capsys, "estimate", "-", "--stdin-filename", "x.yaml", "--format", "json")
    assert code == 0 and [e["file"] for e in json.loads(out)] == ["x.yaml"]


def test_fix_over_a_folder_writes_each_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    first = _write(tmp_path, "runs/a/broken.yaml", BROKEN)
    second = _write(tmp_path, "runs/b/broken.yaml", BROKEN)
    _write(tmp_path, "runs/b/bad.yaml", MALFORMED)
    code, _, err = run(capsys, "runs", "--fix")
    assert code == 2 and "runs/b/bad.yaml: error: line 3" in err
    assert "Fixed " in err and " in 2 files (" in err
    for path in (first, second):
        assert "[mla_up_proj, layernorm, moe, mlp]" in path.read_text(encoding="utf-8")


# --------------------------------------------------------------------------- glob matching


def _naive_component(part: str) -> str:
    """The backtracking translation files.compile_glob used before issue 22 (one folder or
    file name of a path glob), kept to pin the linear-time one to its answers."""
    out, i = [], 0
    while i < len(part):
        char = part[i]
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            end = i + 1
            if end < len(part) and part[end] in "!^":
                end += 1
            if end < len(part) and part[end] == "]":
                end += 1
            end = part.find("]", end)
            if end < 0:
                out.append(re.escape(char))
            else:
                body = part[i + 1 : end]
                negate = body[:1] in ("!", "^")
                body = body[1:] if negate else body
                body = body.replace("\\", "\\\\").replace("^", "\\^")
                out.append(f"[{'^/' if negate else ''}{body}]")
                i = end
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def _naive_glob(pattern: str) -> re.Pattern[str]:
    parts = [p for p in pattern.split("/") if p not in ("", ".")]
    out = ""
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if part == "**":
            out += ".+" if last else "(?:[^/]+/)*"
        else:
            out += _naive_component(part) + ("" if last else "/")
    return re.compile(out)


def _random_cases(seed: int, count: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    cases = []
    for _ in range(count):
        pattern = "".join(rng.choice("ab*?[]!^-/ab/*") for _ in range(rng.randint(1, 9)))
        if rng.random() < 0.3:
            pattern = pattern.replace("*", "**", 1)
        path = "/".join(
            "".join(rng.choice("ab[]-!^") for _ in range(rng.randint(1, 4)))
            for _ in range(rng.randint(1, 4))
        )
        cases.append((pattern, path))
    return cases


#: The naive translation's own bug: a negated class whose first member is ``]`` closed early
#: (``[!]a]`` became ``[^/]a]``); globs read it as fnmatch does (not ``]``, not ``a``).
_NAIVE_BUG = re.compile(r"\[[!^]\]")


@pytest.mark.slow
def test_path_globs_match_as_the_backtracking_translation() -> None:
    """Leftmost atomic matching (moe_lint.globs) answers as the naive regex on every small
    pattern the naive one compiles (it raised on ``[z-a]``; globs match nothing there)."""
    checked = 0
    for pattern, path in _random_cases(22, 60_000):
        if _NAIVE_BUG.search(pattern):
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                naive = _naive_glob(pattern)
        except re.error:
            continue
        checked += 1
        expected = naive.fullmatch(path) is not None
        assert (path_regex(pattern).fullmatch(path) is not None) == expected, (pattern, path)
    assert checked > 50_000


#: fnmatch merges an empty range at the start of a class into a leading "!" and then reads it
#: as a negation (``[--!!]`` matches any character): a CPython quirk, not a glob meaning.
_FNMATCH_QUIRK = re.compile(r"\[!?(.)-(.)")


@pytest.mark.slow
def test_fnmatch_globs_match_as_fnmatch() -> None:
    checked = 0
    for pattern, path in _random_cases(23, 60_000):
        quirk = _FNMATCH_QUIRK.search(pattern)
        if quirk and quirk.group(1) > quirk.group(2):
            continue
        checked += 1
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = fnmatch.fnmatchcase(path, pattern)
        assert (fnmatch_regex(pattern).fullmatch(path) is not None) == expected, (pattern, path)
    assert checked > 50_000


@pytest.mark.parametrize(
    ("pattern", "text"),
    [
        ("*a*a*a*a*a*a*a*b.yaml", "a" * 255),
        ("*" + "a" * 500 + "b", "a" * 255),
        ("**/" * 100 + "q.yaml", "/".join(["d"] * 2000)),
        ("**/a/" * 80 + "q.yaml", "/".join(["a"] * 2000)),
        ("**/" + "*a*a*a*b/" * 50 + "q", "/".join(["a" * 200] * 20)),
    ],
    ids=["stars", "long-fixed", "globstars", "globstar-runs", "stars-in-folders"],
)
def test_glob_matching_is_fast_on_hostile_patterns(pattern: str, text: str) -> None:
    for regex in (path_regex(pattern), fnmatch_regex(pattern)):
        start = time.process_time()
        assert regex.fullmatch(text) is None
        assert time.process_time() - start < 0.2, (pattern[:40], regex.pattern[:80])
