"""The Python API as a user calls it: ``import moe_lint; moe_lint.lint(...)`` (docs/python-api.md).

The CLI is only the reference the results are compared with, never the code under test: each
call under test is ``moe_lint.lint`` / ``moe_lint.estimate``, on corpus dumps, examples, rule
fixtures, YAML text and mappings.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

import moe_lint
from conftest import DUMPS, REPO, VERDICTS

SRC = str(REPO / "src")
BROKEN = REPO / "examples" / "dsv3_128k_h100_broken.yaml"
QWEN_SFT = DUMPS / "qwen3_235b_a22b_sft_64gpu_h100_bf16_config.yaml"


def cli_json(*args: str) -> tuple[int, Any, str]:
    """The reference: ``moe-lint ARGS --format json --isolated --show-infos`` in-process (the
    API returns infos too: hiding advice is the command line's report choice)."""
    from moe_lint.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([*args, "--format", "json", "--isolated", "--show-infos"])
    return code, json.loads(out.getvalue()) if out.getvalue().strip() else None, err.getvalue()


def records(findings: list[moe_lint.Finding]) -> list[dict[str, Any]]:
    """The API's findings in the CLI's JSON shape (the fields both have)."""
    return [
        {
            "code": f.code,
            "name": f.name,
            "severity": f.severity,
            "message": f.full_message,
            "path": f.path,
            "file": f.file,
            "line": f.line,
            "column": f.column,
            "end_line": f.end_line,
            "end_column": f.end_column,
            "derivation": f.derivation,
            "fix": f.fix,
            "applicability": f.applicability,
        }
        for f in findings
    ]


def cli_records(raw: list[dict[str, Any]]) -> list[dict[str, Any]]:
    keys = ("code", "name", "severity", "message", "path", "file", "line", "column",
            "end_line", "end_column", "derivation", "fix", "applicability")  # fmt: skip
    return [{k: r[k] for k in keys} for r in raw]


def _cluster_kwargs(args: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for flag, value in zip(args[::2], args[1::2], strict=True):
        out[flag[2:]] = int(value) if flag == "--gpus" else value
    return out


def _dump_cases() -> list[tuple[str, list[str]]]:
    picked = [
        "deepseek_v3_pretrain_1024gpu_h100_bf16_config.yaml",
        "deepseek_v3_pretrain_64gpu_h100_fp8cs_config.yaml",  # rejected by the real code
        "glm51_sft_416gpu_h100_bf16_config.yaml",
        "kimi_k2_pretrain_256gpu_gb300_bf16_config.yaml",
        "qwen3_235b_a22b_sft_64gpu_h100_bf16_config.yaml",
    ]
    return [
        (str(DUMPS / name), ["--gpus", VERDICTS[name]["world"], "--gpu", VERDICTS[name]["gpu"]])
        for name in picked
    ]


FILE_CASES = [
    *_dump_cases(),
    (str(BROKEN), []),
    (str(BROKEN), ["--gpus", "256", "--gpu", "h100", "--model", "deepseek-v3"]),
    (str(REPO / "examples" / "qwen3_235b_128k_gb200.yaml"), []),
    (
        str(
            REPO
            / "tests/data/corpus/megatron-bridge/scripts/performance/llm/configs"
            / "deepseek_v3_pretrain_overrides.yaml"
        ),
        ["--gpus", "1024", "--gpu", "h100"],
    ),
]


@pytest.mark.parametrize(("path", "args"), FILE_CASES, ids=lambda v: Path(str(v)).name)
def test_same_findings_as_the_cli(path: str, args: list[str]) -> None:
    found = moe_lint.lint(path, **_cluster_kwargs(args))
    code, raw, err = cli_json(path, *args)
    assert err == "" and code in (0, 1)
    assert records(found) == cli_records(raw)
    assert (code == 1) == any(f.severity == "error" for f in found)


def _fixture_cases() -> list[tuple[str, str, str]]:
    out = []
    for rule in ("PAR001", "MOE001", "CP001", "SEQ001", "RCP003", "SCH001"):
        data = yaml.safe_load((REPO / "tests/fixtures/rules" / f"{rule}.yaml").read_text())
        for name, case in data["cases"].items():
            args = case.get("args") or ""
            words = shlex.split(args)
            flags = words[::2]
            if any(w.startswith("--") and w not in ("--gpus", "--gpu", "--model") for w in flags):
                continue  # the API's cluster arguments are gpus / gpu / model
            for kind in ("pass", "fail"):
                if kind in case:
                    out.append((f"{rule}-{name}-{kind}", case[kind], args))
    return out


@pytest.mark.parametrize(("name", "text", "args"), _fixture_cases(), ids=lambda v: str(v)[:40])
def test_rule_fixtures_as_the_cli_sees_them(
    tmp_path: Path, name: str, text: str, args: str
) -> None:
    """Rule fixture cases (pass and fail), as a file and as text=: the CLI's findings."""
    from moe_lint.config.overrides import looks_like_override

    words = shlex.split(args)
    overrides = [w for w in words if looks_like_override(w)]
    flags = [w for w in words if not looks_like_override(w)]
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    code, raw, err = cli_json(str(path), *flags, *overrides)
    if code == 2:  # an input error (SCH002 / SCH003 cases): the API raises the same line
        with pytest.raises(moe_lint.InputError) as info:
            moe_lint.lint(path, overrides=overrides, **_cluster_kwargs(flags))
        assert err == f"{path}: error: {info.value.message}\n"
        return
    kwargs = _cluster_kwargs(flags)
    assert records(moe_lint.lint(path, overrides=overrides, **kwargs)) == cli_records(raw)
    from_text = moe_lint.lint(text=text, filename=str(path), overrides=overrides, **kwargs)
    assert records(from_text) == cli_records(raw)


def test_overrides_and_cluster_arguments() -> None:
    """overrides= and gpus/gpu/model change the findings as the CLI's do; a finding about an
    override is located at the override, with no line."""
    base = moe_lint.lint(BROKEN)
    ov = ["model.context_parallel_size=16", "model.tensor_model_paralel_size=2"]
    found = moe_lint.lint(BROKEN, overrides=ov, gpus=256, gpu="h100", model="deepseek-v3")
    code, raw, _ = cli_json(str(BROKEN), *ov, "--gpus", "256", "--gpu", "h100",
                            "--model", "deepseek-v3")  # fmt: skip
    assert code == 1 and [(f.code, f.path) for f in found] == [(r["code"], r["path"]) for r in raw]
    assert [(f.code, f.path) for f in found] != [(f.code, f.path) for f in base]
    about = [f for f in found if f.override is not None]
    assert about and all(f.line is None and f.column is None for f in about)
    assert {f.override for f in about} <= set(ov)
    # the CLI names the argument's position; the API has none: "override (...)"
    assert all(f.full_message.startswith(f"override ({f.override}): ") for f in about)
    # the directive says gpus=200; the argument wins, as on the command line
    assert any("200" in (f.derivation or "") for f in base if f.code == "PAR001")
    assert not any(f.code == "PAR001" for f in found)


def test_a_mapping_has_paths_not_lines() -> None:
    """A dict is linted like the file it was loaded from (minus its comments: directives),
    located by config path only, with nothing to edit."""
    data = yaml.safe_load(QWEN_SFT.read_text())
    kwargs: dict[str, Any] = {"gpus": 64, "gpu": "h100"}
    from_file = moe_lint.lint(QWEN_SFT, **kwargs)
    from_dict = moe_lint.lint(data, **kwargs)
    assert from_file and sorted((f.code, f.path, f.full_message) for f in from_dict) == sorted(
        (f.code, f.path, f.full_message) for f in from_file
    )
    assert all(f.line is None and f.end_column is None for f in from_dict)
    assert all(f.file == "<mapping>" for f in from_dict)
    assert all(f.applicability in (None, "display-only") for f in from_dict)
    named = moe_lint.lint(data, filename="job-42", **kwargs)
    assert {f.file for f in named} == {"job-42"}


def test_a_mapping_of_other_objects_is_an_input_error() -> None:
    with pytest.raises(moe_lint.InputError) as info:
        moe_lint.lint({"model": {"params_dtype": object()}})
    assert info.value.file == "<mapping>"
    assert info.value.message.startswith("model.params_dtype: a object is not a YAML value")
    with pytest.raises(moe_lint.InputError, match="key 3 is not a string"):
        moe_lint.lint({"model": {3: 1}})
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(100):
        node["model"] = {}
        node = node["model"]
    with pytest.raises(moe_lint.InputError, match="nesting deeper than"):
        moe_lint.lint(deep)


def test_wrong_types_in_a_mapping_are_the_clis_input_error() -> None:
    """SCH002 (a value Bridge's loader rejects) is the file's input error, in the API too; a
    mapping's message has no line/column."""
    text = "model:\n  tensor_model_parallel_size: abc\n  num_layers: 4\n"
    with pytest.raises(moe_lint.InputError) as from_text:
        moe_lint.lint(text=text)
    assert from_text.value.message.startswith("line 2, column 3: model.tensor_model_parallel_size")
    with pytest.raises(moe_lint.InputError) as from_dict:
        moe_lint.lint(yaml.safe_load(text))
    assert from_dict.value.message == from_text.value.message.removeprefix("line 2, column 3: ")
    assert str(from_dict.value) == f"<mapping>: {from_dict.value.message}"


def test_settings_none_ignores_the_current_directorys_pyproject(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """settings=None: defaults and the file's directives only; a path reads that pyproject; a
    mapping is the same table in Python."""
    (tmp_path / "pyproject.toml").write_text(
        '[tool.moe-lint]\nignore = ["SCH001", "CG"]\n[tool.moe-lint.memory]\nwarn-headroom = 0.5\n'
    )
    monkeypatch.chdir(tmp_path)
    plain = {f.code for f in moe_lint.lint(BROKEN)}
    assert {"SCH001", "CG005", "CG006"} <= plain
    from_file = {f.code for f in moe_lint.lint(BROKEN, settings=tmp_path / "pyproject.toml")}
    from_map = {f.code for f in moe_lint.lint(BROKEN, settings={"ignore": ["SCH001", "CG"]})}
    assert from_file == from_map == {c for c in plain if c != "SCH001" and not c.startswith("CG")}
    _, raw, _ = cli_json(str(BROKEN), "--ignore", "SCH001,CG")
    assert {r["code"] for r in raw} == from_map
    selected = moe_lint.lint(BROKEN, settings={"select": ["PAR001"], "fail_on": "warning"})
    assert {f.code for f in selected} == {"PAR001"}


def test_memory_settings_move_the_verdict() -> None:
    est = moe_lint.estimate(QWEN_SFT, gpus=64, gpu="h100")
    assert est.verdict == "may not fit"
    over = ["train.micro_batch_size=4"]
    assert moe_lint.estimate(QWEN_SFT, gpus=64, gpu="h100", overrides=over).verdict == (
        "does NOT fit"
    )
    margin = {"memory": {"error-margin": 0.2}}
    relaxed = moe_lint.estimate(QWEN_SFT, gpus=64, gpu="h100", overrides=over, settings=margin)
    assert relaxed.verdict == "may not fit"
    # On 128 GPUs, without the recipe's auto-resume load, the run fits; a warn-headroom of half
    # the usable memory turns the same estimate into "may not fit".
    roomy = {"gpus": 128, "gpu": "h100", "overrides": ["checkpoint.load=null"]}
    fits = moe_lint.estimate(QWEN_SFT, **roomy)
    assert fits.verdict == "fits"
    wary = moe_lint.estimate(QWEN_SFT, **roomy, settings={"memory": {"warn_headroom": 0.5}})
    assert wary.verdict == "may not fit" and wary.total_gib == fits.total_gib


def test_bad_options_raise_usage_errors_with_the_clis_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from moe_lint.cli import main

    cases: list[tuple[dict[str, Any], list[str]]] = [
        ({"gpu": "h900"}, ["--gpu", "h900"]),
        ({"model": "no-such-model"}, ["--model", "no-such-model"]),
        ({"settings": {"ignore": ["NOPE999"]}}, ["--ignore", "NOPE999"]),
    ]
    for kwargs, args in cases:
        with pytest.raises(moe_lint.UsageError) as info:
            moe_lint.lint(BROKEN, **kwargs)
        assert main([str(BROKEN), *args, "--isolated"]) == 2
        cli_line = capsys.readouterr().err.strip()
        # the CLI names where a value came from ("command line"), the API "arguments"
        assert cli_line.replace("command line", "arguments") == f"moe-lint: error: {info.value}"
    with pytest.raises(moe_lint.UsageError, match="unknown setting"):
        moe_lint.lint(BROKEN, settings={"colour": "red"})
    with pytest.raises(moe_lint.UsageError, match="no such file"):
        moe_lint.lint(BROKEN, settings="no/such/pyproject.toml")
    with pytest.raises(moe_lint.UsageError):
        moe_lint.lint(BROKEN, overrides=["model/x=1"])


def test_bad_input_raises_input_errors_with_the_clis_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from moe_lint.cli import main

    bad = tmp_path / "bad.yaml"
    bad.write_text("model:\n  num_layers: [1\n")
    missing = tmp_path / "missing.yaml"
    for path in (bad, missing):
        with pytest.raises(moe_lint.InputError) as info:
            moe_lint.lint(path)
        assert info.value.file == str(path)
        assert main([str(path), "--isolated"]) == 2
        assert capsys.readouterr().err == f"{path}: error: {info.value.message}\n"
        assert str(info.value) == f"{path}: {info.value.message}"
    assert isinstance(info.value, moe_lint.Error)
    # The API lints one config; the CLI walks a folder (tests/test_files.py).
    with pytest.raises(moe_lint.InputError, match="is a directory"):
        moe_lint.lint(tmp_path)


def test_not_a_config_is_raised_where_the_cli_skips() -> None:
    for text in ("", "- a\n- b\n", "name: my-app\nversion: 3\n"):
        with pytest.raises(moe_lint.NotAConfigError) as info:
            moe_lint.lint(text=text, filename="x.yaml")
        assert isinstance(info.value, moe_lint.InputError) and info.value.file == "x.yaml"


def test_wrong_call_shapes_are_type_errors() -> None:
    with pytest.raises(TypeError):
        moe_lint.lint()
    with pytest.raises(TypeError):
        moe_lint.lint(BROKEN, text="model: {}")
    with pytest.raises(TypeError):
        moe_lint.lint(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        moe_lint.lint(BROKEN, overrides="model.x=1")
    with pytest.raises(TypeError):
        moe_lint.lint(BROKEN, gpus="8")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        moe_lint.lint(BROKEN, filename="other.yaml")


def test_estimate_matches_the_cli_on_a_corpus_dump() -> None:
    """``moe_lint.estimate`` is ``moe-lint estimate --format json``: stages, bounds, verdict and
    levers; an override that overfills the GPU turns the verdict to "does NOT fit"."""
    est = moe_lint.estimate(QWEN_SFT, gpus=64, gpu="h100")
    code, raw, err = cli_json("estimate", str(QWEN_SFT), "--gpus", "64", "--gpu", "h100")
    assert err == "" and code == 0
    (ref,) = raw
    assert est.verdict == ref["verdict"] == "may not fit"
    assert (est.usable_gib, est.capacity_gib, est.gpu) == (
        ref["usable_gib"], ref["capacity_gib"], ref["gpu"])  # fmt: skip
    assert est.worst_stage == ref["worst_stage"]
    assert round(est.lower_bound_gib, 3) == ref["lower_bound_gib"]
    assert round(est.upper_band_gib, 3) == ref["upper_band_gib"]
    assert est.lower_bound_gib < est.total_gib < est.upper_band_gib
    assert [
        (s.stage, round(s.total_gib, 3), round(s.lower_bound_gib, 3), round(s.allocated_gib, 3),
         round(s.reserved_gib, 3), s.peak_phase, [t.name for t in s.terms])
        for s in est.stages
    ] == [
        (s["stage"], s["total_gib"], s["lower_bound_gib"], s["allocated_gib"], s["reserved_gib"],
         s["peak_phase"], [t["name"] for t in s["terms"]])
        for s in ref["stages"]
    ]  # fmt: skip
    assert [(lv.name, lv.delta_gib) for lv in est.levers] == [
        (lv["name"], lv["delta_gib"]) for lv in ref["levers"]
    ]
    assert list(est.assumptions) == ref["assumptions"]
    assert est.verdict_text == ref["verdict_text"]
    assert [
        {name: dict(zip(("lower", "central", "band"), (round(x, 3) for x in b), strict=True))
         for name, b in s.bounds}
        for s in est.stages
    ] == [s["bounds"] for s in ref["stages"]]  # fmt: skip
    over = moe_lint.estimate(QWEN_SFT, gpus=64, gpu="h100", overrides=["train.micro_batch_size=4"])
    assert over.verdict == "does NOT fit" and over.usable_gib is not None
    assert over.lower_bound_gib > over.usable_gib
    assert "MEM001" in {
        f.code
        for f in moe_lint.lint(
            QWEN_SFT, gpus=64, gpu="h100", overrides=["train.micro_batch_size=4"]
        )
    }


def test_estimate_without_a_gpu_has_no_verdict_and_a_mapping_works() -> None:
    data = yaml.safe_load(QWEN_SFT.read_text())
    est = moe_lint.estimate(data, gpus=64)
    assert est.verdict is None and est.usable_gib is None and est.gpu is None
    assert est.total_gib == moe_lint.estimate(QWEN_SFT, gpus=64).total_gib


def test_estimate_errors_are_the_clis(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from moe_lint.cli import main

    thin = tmp_path / "thin.yaml"
    thin.write_text("model:\n  tensor_model_parallel_size: 2\n")
    with pytest.raises(moe_lint.InputError) as info:
        moe_lint.estimate(thin, gpus=8, gpu="h100")
    assert main(["estimate", str(thin), "--gpus", "8", "--gpu", "h100", "--isolated"]) == 2
    assert capsys.readouterr().err == f"{thin}: error: {info.value.message}\n"
    assert info.value.message.startswith("cannot estimate memory: ")


def test_results_are_frozen_typed_records() -> None:
    (first, *_) = moe_lint.lint(BROKEN)
    assert isinstance(first, moe_lint.Finding)
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.code = "X"  # type: ignore[misc]
    assert first.severity in ("error", "warning", "info") and isinstance(first.line, int)
    est = moe_lint.estimate(BROKEN)
    assert isinstance(est, moe_lint.MemoryEstimate)
    assert isinstance(est.stages[0], moe_lint.StageMemory)
    assert isinstance(est.stages[0].terms[0], moe_lint.MemoryTerm)
    assert all(isinstance(lv, moe_lint.Lever) for lv in est.levers)
    assert dataclasses.asdict(first)["code"] == first.code


def _run(code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": SRC}
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
    )


def test_import_moe_lint_loads_nothing_until_lint_is_called() -> None:
    """``import moe_lint`` (the CLI's first import) stays the package's three lines: no YAML,
    pydantic, rich or engine until a program touches the API."""
    proc = _run(
        textwrap.dedent(
            """
            import json, sys
            import moe_lint
            before = sorted(m for m in sys.modules if m.split(".")[0] in
                            ("moe_lint", "yaml", "pydantic", "rich"))
            assert callable(moe_lint.lint)
            from moe_lint.linting import lint_text  # the data path: a submodule of its own name
            after = "moe_lint.engine.catalogue" in sys.modules and "moe_lint.api" in sys.modules
            print(json.dumps([before, after, callable(moe_lint.lint), moe_lint.lint.__module__]))
            """
        )
    )
    assert proc.returncode == 0, proc.stderr
    before, after, callable_after, module = json.loads(proc.stdout)
    assert before == ["moe_lint"]
    assert after and callable_after and module == "moe_lint.api"


@pytest.mark.slow
def test_a_typed_launcher_passes_mypy(tmp_path: Path) -> None:
    """The launcher of docs/python-api.md, type-checked strictly against the package (mypy
    --strict)."""
    pytest.importorskip("mypy")
    snippet = tmp_path / "launcher.py"
    snippet.write_text(DOCS_LAUNCHER)
    bad = tmp_path / "bad.py"
    bad.write_text("import moe_lint\nn: int = moe_lint.lint('x.yaml')[0].line\n")
    env = {**os.environ, "MYPYPATH": SRC}
    cmd = [sys.executable, "-m", "mypy", "--strict", "--no-incremental",
           "--follow-imports=silent", "--ignore-missing-imports"]  # fmt: skip
    good = subprocess.run([*cmd, str(snippet)], capture_output=True, text=True, env=env)
    assert good.returncode == 0, good.stdout + good.stderr
    wrong = subprocess.run([*cmd, str(bad)], capture_output=True, text=True, env=env)
    assert wrong.returncode == 1 and "int | None" in wrong.stdout, wrong.stdout


def _docs_launcher() -> str:
    text = (REPO / "docs" / "python-api.md").read_text(encoding="utf-8")
    start = text.index("```python\n", text.index("# Python API")) + len("```python\n")
    return text[start : text.index("```", start)]


DOCS_LAUNCHER = _docs_launcher()


@pytest.mark.slow
def test_the_docs_launcher_gates_sbatch(tmp_path: Path) -> None:
    """The docs' example, run: exit 1 on the broken example (error findings), exit 1 when
    the memory verdict is "does NOT fit", 0 and sbatch called on a config that passes."""
    script = tmp_path / "launcher.py"
    script.write_text(DOCS_LAUNCHER)
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "sbatch").write_text('#!/bin/sh\necho submitted "$@"\n')
    (fake / "sbatch").chmod(0o755)
    env = {**os.environ, "PYTHONPATH": SRC, "PATH": f"{fake}{os.pathsep}{os.environ['PATH']}"}

    def launch(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, str(script), *args], capture_output=True,
                              text=True, env=env, check=False)  # fmt: skip

    broken = launch(str(BROKEN), "--gpus", "256", "--gpu", "h100")
    assert broken.returncode == 1 and "submitted" not in broken.stdout
    assert "CG006" in broken.stderr
    over = launch(str(QWEN_SFT), "--gpus", "64", "--gpu", "h100", "train.micro_batch_size=4")
    assert over.returncode == 1 and "does NOT fit" in over.stderr
    ok = launch(str(QWEN_SFT), "--gpus", "64", "--gpu", "h100")
    assert ok.returncode == 0, ok.stderr
    assert "submitted" in ok.stdout


# ----------------------------------------------------------------- hostile calls (issue 22)

GOOD_TEXT = (REPO / "examples" / "dsv3_128k_h100.yaml").read_text(encoding="utf-8")


class _Raising(dict):  # type: ignore[type-arg]
    def items(self) -> Any:
        raise ValueError("the caller's own mapping failed")


def _cycle() -> dict[str, Any]:
    data: dict[str, Any] = {"model": {}}
    data["model"]["again"] = data
    return data


#: (label, call, the moe_lint.Error subclass, text the message holds). Each escaped as a
#: ValueError, RuntimeError, TypeError or RecursionError (or held a 50 MB message) before.
HOSTILE_CALLS: list[tuple[str, Any, type[Exception], str]] = [
    ("model-tilde", lambda: moe_lint.lint(text=GOOD_TEXT, model="~nosuchuser/x"),
     moe_lint.UsageError, "not a usable path"),
    ("model-nul", lambda: moe_lint.lint(text=GOOD_TEXT, model="a\0b/config.json"),
     moe_lint.UsageError, "no model preset"),
    ("gpus-huge", lambda: moe_lint.lint(text=GOOD_TEXT, gpus=10**5000),
     moe_lint.UsageError, "bounds.MAX_GPUS"),
    ("gpu-int", lambda: moe_lint.lint(text=GOOD_TEXT, gpu=5), moe_lint.ArgumentError, "gpu"),
    ("bytes-key", lambda: moe_lint.lint({"model": {b"k" * 50_000_000: 1}}),
     moe_lint.InputError, "is not a string"),
    ("object-value", lambda: moe_lint.lint({"model": {"x": object()}}),
     moe_lint.InputError, "not a YAML value"),
    ("raising-mapping", lambda: moe_lint.lint({"model": _Raising(a=1)}),
     moe_lint.InputError, "reading the mapping raised ValueError"),
    ("cycle", lambda: moe_lint.lint(_cycle()), moe_lint.InputError, "nesting deeper than"),
    ("huge-string", lambda: moe_lint.lint({"model": {"x": "y" * 9_000_000}}),
     moe_lint.InputError, "characters in the mapping"),
    ("text-too-large", lambda: moe_lint.lint(text="x" * 9_000_000),
     moe_lint.InputError, "too large"),
    ("path-nul", lambda: moe_lint.lint("a\0b.yaml"), moe_lint.InputError, "NUL"),
    ("path-too-long", lambda: moe_lint.lint("a" * 10_000), moe_lint.UsageError,
     "bounds.MAX_NAME_CHARS"),
    ("path-device", lambda: moe_lint.lint(os.devnull), moe_lint.InputError, "not a regular file"),
    ("deep-override", lambda: moe_lint.lint(text=GOOD_TEXT, overrides=[
        "model.x=" + "[" * 500 + "]" * 500]), moe_lint.UsageError, "bounds.MAX_DEPTH"),
    ("deep-override-key", lambda: moe_lint.lint(text=GOOD_TEXT, overrides=[
        "+model." + "a." * 3_000 + "b=1"]), moe_lint.UsageError, "bounds.MAX_DEPTH"),
    ("5000-overrides", lambda: moe_lint.lint(text=GOOD_TEXT, overrides=[
        f"model.k{i}=1" for i in range(5_000)]), moe_lint.UsageError, "bounds.MAX_OVERRIDES"),
    ("long-override", lambda: moe_lint.lint(text=GOOD_TEXT, overrides=[
        "model.x=" + "1" * 100_000]), moe_lint.UsageError, "bounds.MAX_OVERRIDE_CHARS"),
    ("settings-int-key", lambda: moe_lint.lint(text=GOOD_TEXT, settings={1: 2}),
     moe_lint.UsageError, "is not a string"),
    ("settings-bytes-key", lambda: moe_lint.lint(text=GOOD_TEXT, settings={b"k" * 50_000_000: 1}),
     moe_lint.UsageError, "is not a string"),
    ("settings-nested-int-key", lambda: moe_lint.lint(text=GOOD_TEXT, settings={
        "per-file": {"*": {1: 2}}}), moe_lint.UsageError, "not a string"),
    ("settings-nan", lambda: moe_lint.lint(text=GOOD_TEXT, settings={
        "memory": {"nccl_gib": float("nan")}}), moe_lint.UsageError, "finite number"),
    ("settings-pfi-string", lambda: moe_lint.lint(text=GOOD_TEXT, settings={
        "per_file_ignores": {"*": "PAR001"}}), moe_lint.UsageError, "must be a list"),
    ("settings-object", lambda: moe_lint.lint(text=GOOD_TEXT, settings={"select": [object()]}),
     moe_lint.UsageError, "holds a object"),
    ("settings-many", lambda: moe_lint.lint(text=GOOD_TEXT, settings={
        "select": ["PAR"] * 100_000}), moe_lint.UsageError, "bounds.MAX_SETTING_VALUES"),
    ("settings-device", lambda: moe_lint.lint(text=GOOD_TEXT, settings=os.devnull),
     moe_lint.UsageError, "not a regular file"),
    ("no-config", lambda: moe_lint.lint(), moe_lint.ArgumentError, "pass a config"),
    ("overrides-string", lambda: moe_lint.lint(text=GOOD_TEXT, overrides="model.x=1"),
     moe_lint.ArgumentError, "sequence of strings"),
    ("text-bytes", lambda: moe_lint.lint(text=b"model: {}"), moe_lint.ArgumentError, "str"),
    ("estimate-model-tilde", lambda: moe_lint.estimate(text=GOOD_TEXT, model="~nosuchuser/x"),
     moe_lint.UsageError, "not a usable path"),
    ("estimate-deep-override", lambda: moe_lint.estimate(text=GOOD_TEXT, overrides=[
        "model.x=" + "[" * 500 + "]" * 500]), moe_lint.UsageError, "bounds.MAX_DEPTH"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("label", "call", "kind", "needle"), HOSTILE_CALLS, ids=[c[0] for c in HOSTILE_CALLS]
)
def test_every_api_failure_is_a_bounded_moe_lint_error(
    label: str, call: Any, kind: type[Exception], needle: str
) -> None:
    with pytest.raises(moe_lint.Error) as info:
        call()
    assert isinstance(info.value, kind), (type(info.value), info.value)
    assert needle in str(info.value), str(info.value)[:500]
    assert len(str(info.value)) < 1_000 and "\n" not in str(info.value)


def test_a_filename_the_os_cannot_resolve_is_only_a_name() -> None:
    """``filename`` is matched against ``per-file`` globs: resolving a NUL raised ValueError."""
    found = moe_lint.lint(text=GOOD_TEXT, filename="a\0b.yaml",
                          settings={"per-file-ignores": {"*.yaml": ["PAR004"]}})  # fmt: skip
    assert found and all(f.code != "PAR004" and f.file == "a\0b.yaml" for f in found)


def test_wrong_call_shapes_are_also_type_errors() -> None:
    with pytest.raises(TypeError) as info:
        moe_lint.lint()
    assert isinstance(info.value, moe_lint.ArgumentError)


def test_an_unexpected_failure_is_an_internal_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import moe_lint.api

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RecursionError("x" * 100_000)

    monkeypatch.setattr(moe_lint.api, "lint_document", broken)
    with pytest.raises(moe_lint.InternalError) as info:
        moe_lint.lint(text=GOOD_TEXT)
    assert isinstance(info.value.__cause__, RecursionError)
    assert str(info.value).startswith("internal error: RecursionError: xxx")
    assert len(str(info.value)) < 5_000


def test_the_per_file_time_limit_covers_an_api_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """As the CLI's one-process path: a SIGALRM timer on the main thread (none of the caller's
    running), the handler restored after; off the main thread there is no timer."""
    import signal
    import threading

    import moe_lint.api

    def slow(*args: Any, **kwargs: Any) -> Any:
        while True:
            pass

    before = signal.getsignal(signal.SIGALRM)
    monkeypatch.setenv("MOE_LINT_FILE_TIMEOUT", "0.2")
    monkeypatch.setattr(moe_lint.api, "lint_document", slow)
    with pytest.raises(moe_lint.InputError) as info:
        moe_lint.lint(text=GOOD_TEXT, filename="slow.yaml")
    assert info.value.file == "slow.yaml" and "per-file limit" in info.value.message
    assert signal.getsignal(signal.SIGALRM) is before
    assert signal.getitimer(signal.ITIMER_REAL)[0] == 0
    monkeypatch.undo()
    found: list[Any] = []
    worker = threading.Thread(target=lambda: found.append(moe_lint.lint(text=GOOD_TEXT)))
    worker.start()
    worker.join(60)
    assert found and found[0] == moe_lint.lint(text=GOOD_TEXT)
