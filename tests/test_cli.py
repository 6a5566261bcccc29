"""The command line contract: exit codes, formats, overrides, settings precedence."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO
from conftest import run_main as run

EXAMPLES = REPO / "examples"
GOOD = [
    EXAMPLES / "dsv3_128k_h100.yaml",
    EXAMPLES / "dsv3_256k_h100.yaml",
    EXAMPLES / "qwen3_235b_128k_gb200.yaml",
]
BROKEN = EXAMPLES / "dsv3_128k_h100_broken.yaml"
JSON_FIELDS = {
    "code",
    "name",
    "severity",
    "message",
    "path",
    "file",
    "line",
    "column",
    "end_line",
    "end_column",
    "argument",
    "derivation",
    "fix",
    "applicability",
    "edits",
    "url",
}


@pytest.mark.parametrize("path", GOOD, ids=lambda p: p.name)
def test_seed_families_have_no_error(capsys: pytest.CaptureFixture[str], path: Path) -> None:
    code, out, _ = run(capsys, str(path), "--format", "json")
    findings = json.loads(out)
    assert code == 0
    assert [f for f in findings if f["severity"] == "error"] == []


def test_broken_example_shows_every_severity(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(BROKEN), "--format", "json", "--show-infos")
    findings = json.loads(out)
    assert code == 1
    assert {f["severity"] for f in findings} == {"error", "warning", "info"}
    for f in findings:
        assert set(f) == JSON_FIELDS
        assert f["url"].endswith(f"/docs/rules/{f['code']}.md")
        assert (REPO / "docs" / "rules" / f"{f['code']}.md").is_file()
    # the arithmetic is shown for derived findings
    par001 = next(f for f in findings if f["code"] == "PAR001")
    assert "min GPUs = PP·lcm(TP·CP, ETP·EP) = 8·lcm(48, 48) = 384" in par001["derivation"]
    assert (par001["line"], par001["column"]) == (9, 3)


def test_concise_format(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(BROKEN), "--format", "concise")
    assert code == 1
    first = out.splitlines()[0]
    assert first.startswith(f"{BROKEN}:") and "[error]" in first


def test_text_format_has_caret_derivation_help(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(BROKEN), "--select", "PAR001")
    assert code == 1
    assert "  9 |   context_parallel_size: 24" in out
    assert "^^^^" in out and "= derived:" in out and "= help:" in out
    assert "\x1b[" not in out  # not a terminal: no colour codes
    assert "Found 1 error in 1 file" in out


def test_force_color(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, str(BROKEN), "--select", "PAR001", "--color", "always")
    assert "\x1b[" in out


def test_fail_on_and_exit_zero(capsys: pytest.CaptureFixture[str]) -> None:
    good = str(GOOD[0])
    assert run(capsys, good)[0] == 0
    assert run(capsys, good, "--fail-on", "warning")[0] == 1
    assert run(capsys, str(BROKEN), "--exit-zero")[0] == 0


def test_overrides_apply_and_locate(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        str(GOOD[0]),
        "model.context_parallel_size=24",
        "model.recompute_modules=[moe_act,norm]",
        "--format",
        "json",
    )
    findings = json.loads(out)
    got = {f["code"] for f in findings}
    assert code == 1
    assert {"CP001", "PAR001", "RCP003"} <= got
    par001 = next(f for f in findings if f["code"] == "PAR001")
    assert "override model.context_parallel_size=24" in par001["derivation"]


def test_cli_gpus_wins_over_directive(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(GOOD[0]), "--gpus", "96", "--format", "json")
    assert code == 1
    assert any(f["code"] == "PAR001" for f in json.loads(out))


def test_nodes_times_gpus_per_node(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, str(GOOD[0]), "--nodes", "12", "--gpus-per-node", "8", "--format", "json"
    )
    findings = json.loads(out)
    assert code == 1
    par001 = next(f for f in findings if f["code"] == "PAR001")
    assert "world = 96 GPUs" in par001["derivation"]
    code, out, _ = run(capsys, str(GOOD[0]), "--nodes", "64", "--format", "json")
    assert code == 0  # 64 nodes x 8 H100 = 512 GPUs: DP = 2, no squeeze warnings
    assert {f["code"] for f in json.loads(out)} & {"PAR004", "PAR005"} == set()


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    for args in (
        ["--gpu", "tpu"],
        ["--gpus", "zero"],
        ["--select", "NOPE999"],
        [],
        ["--model", "gpt-7"],
        ["--format", "xml"],
    ):
        code, _, err = run(capsys, str(GOOD[0]), *args) if args else run(capsys)
        assert code == 2, args
        assert err.count("\n") == 1 and "Traceback" not in err


def test_unknown_mixed_precision_recipe_is_a_finding(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The file loads (Bridge raises only when runtime_config_update resolves the name): an
    SCH002 error finding with exit code 1, and no precision rule judges the unresolved fields;
    a value Bridge cannot load at all stays a one-line input error (exit 2)."""
    path = tmp_path / "recipe.yaml"
    path.write_text("mixed_precision: bf16_with_fp8_mixed\nmodel:\n  fp8: e4m3\n", encoding="utf-8")
    code, out, err = run(capsys, str(path), "--format", "json", "--isolated")
    assert code == 1, err
    findings = json.loads(out)
    sch = [f for f in findings if f["code"] == "SCH002"]
    assert len(sch) == 1 and sch[0]["path"] == "mixed_precision", findings
    assert "Unknown mixed-precision recipe 'bf16_with_fp8_mixed'" in sch[0]["message"]
    assert not [f for f in findings if f["code"].startswith("FP")], findings
    path.write_text("model:\n  context_parallel_size: eight\n", encoding="utf-8")
    code, _, err = run(capsys, str(path), "--isolated")
    assert code == 2 and "[SCH002]" in err


def test_bad_input_one_line_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cases = {
        "syntax.yaml": "model:\n  tensor_model_parallel_size: [1,\n",
        "python.yaml": "model: !!python/object/apply:os.system ['echo hi']\n",
        "two-documents.yaml": "model: {}\n---\ntrain: {}\n",
        "binary.yaml": "\x00\x01\x02",
    }
    for name, text in cases.items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        before = path.read_bytes()
        code, _, err = run(capsys, str(path), "--fix")
        assert code == 2, name
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(str(path)), (name, err)
        assert path.read_bytes() == before
    code, _, err = run(capsys, str(tmp_path / "missing.yaml"))
    assert code == 2 and "no such file" in err


def test_non_bridge_yaml_is_skipped(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "workflow.yaml"
    path.write_text("name: ci\non: [push]\njobs: {}\n")
    code, out, _ = run(capsys, str(path))
    assert code == 0 and "skipped: not a Megatron Bridge config" in out


def test_rules_and_explain(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "rules", "--format", "json")
    rules = json.loads(out)
    assert code == 0 and {"PAR001", "RCP003", "SCH001"} <= {r["code"] for r in rules}
    code, out, _ = run(capsys, "explain", "RCP003")
    assert code == 0 and "# unknown-recompute-label (RCP003)" in out and "## Use instead" in out
    code, out, _ = run(capsys, "explain", "world-not-divisible-by-dense-mesh")
    assert code == 0 and "(PAR001)" in out
    assert run(capsys, "explain", "XYZ123")[0] == 2


def test_pyproject_settings(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.moe-lint]\ngpus = 96\nignore = ["PAR002"]\nfail-on = "warning"\n'
        '[tool.moe-lint.per-file."big/*.yaml"]\ngpus = 256\n'
        '[tool.moe-lint.per-file-ignores]\n"big/*.yaml" = ["PAR004", "PAR005"]\n'
    )
    cfg = GOOD[0].read_text().replace("# moe-lint: gpus=256 gpu=h100 model=deepseek-v3\n", "")
    (tmp_path / "big").mkdir()
    (tmp_path / "small.yaml").write_text(cfg)
    (tmp_path / "big" / "dsv3.yaml").write_text(cfg)
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "small.yaml", "--format", "json")
    got = {f["code"] for f in json.loads(out)}
    assert "PAR001" in got and "PAR002" not in got and code == 1
    code, out, _ = run(capsys, "big/dsv3.yaml", "--format", "json")
    assert code == 0 and {f["code"] for f in json.loads(out)} <= {"SEQ004"}
    code, out, _ = run(capsys, "big/dsv3.yaml", "--isolated", "--format", "json", "--show-infos")
    assert "PAR003" in {f["code"] for f in json.loads(out)}


def test_fix_writes_atomically_and_keeps_mode(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text(BROKEN.read_text())
    os.chmod(path, 0o640)
    code, _, err = run(capsys, str(path), "--fix", "--format", "concise")
    text = path.read_text()
    assert "recompute_modules: [mla_up_proj, layernorm, moe, mlp]   # the guidance's" in text
    # Turning sequence parallelism on at CP = 24 would add an error (seq 131072 % TP·CP != 0),
    # so that fix is refused, with the reason, and the rest are applied.
    assert "sequence_parallel: false" in text
    assert f"{path}:11: MOE003 fix not applied: it would add error " in err
    assert "Fixed 4 findings in 1 file (" in err
    assert oct(path.stat().st_mode & 0o777) == oct(0o640)
    assert code == 1  # unfixable errors remain
    assert [p.name for p in tmp_path.iterdir()] == ["broken.yaml"]  # no temp file left


def test_console_script_runs() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "moe_lint", str(GOOD[2])],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""


def test_help_lists_every_subcommand_and_each_has_its_own_help(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``moe-lint --help`` names every subcommand with one line (as ruff's does), and each
    ``moe-lint NAME --help`` is that command's own usage (exit 0)."""
    from moe_lint.cli import COMMANDS

    with pytest.raises(SystemExit) as done:
        run(capsys, "--help")
    assert done.value.code == 0
    text = capsys.readouterr().out
    listed = text[text.index("commands (moe-lint COMMAND --help for each):") :].splitlines()[1:]
    assert [line.split()[0] for line in listed if line.startswith("  ")] == [n for n, _ in COMMANDS]
    for name, _ in COMMANDS:
        try:
            code, out, _ = run(capsys, name, "--help")
        except SystemExit as exc:  # argparse's own --help
            code, out = exc.code, capsys.readouterr().out
        assert code == 0, name
        usage = out.splitlines()[0]
        assert usage.startswith("usage: moe-lint" + ("" if name == "check" else f" {name}")), usage


def test_cli_package_keeps_the_old_names_and_loads_no_command_on_import() -> None:
    """moe_lint.cli was one module (issue 26): each name code imported from it still resolves,
    to the object in its new module, and importing the package loads none of its commands."""
    script = (
        "import importlib, sys\n"
        "import moe_lint.cli as cli\n"
        "print(sorted(m for m in sys.modules if m.startswith('moe_lint.cli.')))\n"
        "for name, home in cli._MOVED.items():\n"
        "    module = importlib.import_module('moe_lint.cli.' + home)\n"
        "    assert getattr(cli, name) is getattr(module, name), name\n"
        "assert not hasattr(cli, 'no_such_name')\n"
        "print('ok')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["[]", "ok"]
    from moe_lint import cli

    used = {"explain_text", "rule_json", "model_json", "plan_options", "_check_parser"}
    assert used <= set(cli._MOVED)


def test_rules_filters_by_code_prefix_name_or_pack(capsys: pytest.CaptureFixture[str]) -> None:
    """``moe-lint rules PAR`` / ``rules memory-over-capacity`` / ``rules attention`` list only
    those rules; ``--format markdown`` is a table; no match is one usage line, exit 2."""
    code, out, _ = run(capsys, "rules", "par")
    assert code == 0 and out and all(line.startswith("PAR") for line in out.splitlines())
    code, out, _ = run(capsys, "rules", "memory-over-capacity")
    assert code == 0 and out.split()[0] == "MEM001" and len(out.splitlines()) == 1
    code, out, _ = run(capsys, "rules", "attention", "--format", "markdown")
    lines = out.splitlines()
    assert code == 0 and lines[0] == "| code | name | severity | fix | summary |"
    assert all(line.startswith("| ATT") for line in lines[2:]) and len(lines) > 3
    code, out, _ = run(capsys, "rules", "attention", "--format", "json")
    assert code == 0 and {r["pack"] for r in json.loads(out)} == {"attention"}
    code, _, err = run(capsys, "rules", "nosuch")
    assert code == 2 and "no rule code, name or pack matches 'nosuch'" in err
    assert len(err.strip().splitlines()) == 1


def test_licence_file_and_metadata() -> None:
    """A LICENSE file with the Apache License 2.0 and the same licence in pyproject.toml."""
    assert (
        "Apache License\n                           Version 2.0" in (REPO / "LICENSE").read_text()
    )
    assert 'license = { text = "Apache-2.0" }' in (REPO / "pyproject.toml").read_text()


def test_a_world_given_two_ways_that_disagree_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """--gpus 256 with --nodes 2 --gpus-per-node 8 (16) is one usage line, exit 2, in check and
    estimate; agreeing values are accepted; plan takes the world one way only."""
    example = str(REPO / "examples" / "dsv3_128k_h100.yaml")
    for command in ([], ["estimate"]):
        code, _, err = run(capsys, *command, example, "--gpus", "256", "--nodes", "2",
                           "--gpus-per-node", "8")  # fmt: skip
        assert code == 2 and "--gpus 256 contradicts --nodes 2 × --gpus-per-node 8 = 16" in err
        code, _, err = run(capsys, *command, example, "--gpus", "16", "--nodes", "2",
                           "--gpus-per-node", "8", "-q")  # fmt: skip
        assert code in (0, 1) and not err.strip(), err
    code, _, err = run(capsys, "plan", "--model", "qwen3-30b-a3b", "--gpu", "h100", "--gpus",
                       "16", "--nodes", "2", "--gpus-per-node", "8")  # fmt: skip
    assert code == 2 and "not both" in err


def test_write_baseline_to_a_path_that_cannot_be_written_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """--write-baseline into a missing folder or onto a folder says so in one line, exit 2,
    before anything is linted; so does check's -o (after linting: any writable path, such as
    /dev/stdout, stays allowed). Each was an internal error, exit 3."""
    example = str(REPO / "examples" / "dsv3_128k_h100.yaml")
    for target, why in ((tmp_path / "no" / "b.json", "no such folder"),
                        (tmp_path, "not a regular file")):  # fmt: skip
        code, out, err = run(capsys, example, "--write-baseline", str(target))
        assert code == 2 and f"--write-baseline {str(target)!r}: {why}" in err, err
        assert len(err.strip().splitlines()) == 1 and out == ""
    for target in (tmp_path / "no" / "out.txt", tmp_path):
        code, out, err = run(capsys, example, "-o", str(target))
        assert code == 2 and f"-o {str(target)!r}: cannot write" in err, err
        assert len(err.strip().splitlines()) == 1 and out == ""
    written = tmp_path / "b.json"
    code, _, err = run(capsys, example, "--write-baseline", str(written))
    assert "baseline entries" in err and json.loads(written.read_text())["moe-lint-baseline"] == 1


def test_infos_are_hidden_unless_asked_and_the_summary_counts_them(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 26: PAR003 ('world size assumed') on every file without a GPU count drowned the
    real findings; infos show with --show-infos, --fail-on info or pyproject's show-infos."""
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("model:\n  context_parallel_size: 2\n")
    code, out, _ = run(capsys, str(cfg), "--isolated", "--color", "never")
    assert code == 0 and "PAR003" not in out
    assert out.strip().endswith("(1 file; 1 info hidden, --show-infos shows it).")
    for args in (["--show-infos"], ["--fail-on", "info"]):
        code, out, _ = run(capsys, str(cfg), "--isolated", "--format", "json", *args)
        assert [f["code"] for f in json.loads(out)] == ["PAR003"]
    code, out, _ = run(capsys, str(cfg), "--isolated", "--format", "github")
    assert out == ""  # no annotation for hidden advice
    (tmp_path / "pyproject.toml").write_text("[tool.moe-lint]\nshow-infos = true\n")
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "cfg.yaml", "--format", "concise")
    assert "PAR003 [info]" in out
    (tmp_path / "pyproject.toml").write_text('[tool.moe-lint]\nshow-infos = "yes"\n')
    code, _, err = run(capsys, "cfg.yaml")
    assert code == 2 and "show-infos must be true or false" in err


def test_statistics_counts_each_rule_once(capsys: pytest.CaptureFixture[str]) -> None:
    """--statistics, as ruff's: count, code, [*] when a safe fix exists, name; most first."""
    code, out, _ = run(capsys, str(BROKEN), "--isolated", "--statistics")
    lines = out.splitlines()
    assert code == 1 and lines and lines[-1].endswith("--show-infos counts them too)")
    counts = [int(line.split("\t")[0]) for line in lines[:-1]]
    assert counts == sorted(counts, reverse=True)
    code, out, _ = run(capsys, str(BROKEN), "--isolated", "--format", "json")
    findings = json.loads(out)
    code, stats_out, _ = run(
        capsys, str(BROKEN), "--isolated", "--statistics", "--output-format", "json"
    )
    stats = json.loads(stats_out)
    assert {s["code"]: s["count"] for s in stats} == {
        c: sum(f["code"] == c for f in findings) for c in {f["code"] for f in findings}
    }
    fixable = {f["code"] for f in findings if f["applicability"] == "safe" and f["edits"]}
    assert {s["code"] for s in stats if s["fixable"]} == fixable
    marked = {line.split("\t")[1] for line in lines[:-1] if "[*]" in line}
    assert marked == fixable


@pytest.mark.parametrize(
    ("args", "hint"),
    [
        (["--fial-on", "error"], "did you mean '--fail-on'?"),
        (["--fromat=json"], "did you mean '--format'?"),
        (["--format", "jsn"], "did you mean 'json'?"),
        (["--gpu", "h10"], "did you mean 'h100'?"),
        (["--model", "deepseek-v33"], "did you mean 'deepseek-v3'?"),
        (["--select", "PAR0001"], "did you mean 'PAR001'?"),
        (["--ignore", "world-not-divisible-by-dense-mash"], "'world-not-divisible-by-dense-mesh'"),
    ],
)
def test_unknown_flags_choices_gpus_presets_and_codes_get_a_did_you_mean(
    capsys: pytest.CaptureFixture[str], args: list[str], hint: str
) -> None:
    code, _, err = run(capsys, str(GOOD[0]), "--isolated", *args)
    assert code == 2 and hint in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "hint"),
    [
        (["explain", "PAR0001"], "did you mean 'PAR001'?"),
        (["rules", "atention"], "did you mean 'attention'?"),
        (["estimate", str(GOOD[0]), "--gpu", "b20"], "did you mean 'b200'?"),
        (["plan", "--model", "qwen3-235b-a22", "--gpus", "64"], "'qwen3-235b-a22b'?"),
    ],
)
def test_subcommands_get_a_did_you_mean_too(
    capsys: pytest.CaptureFixture[str], args: list[str], hint: str
) -> None:
    code, _, err = run(capsys, *args)
    assert code == 2 and hint in err


def test_nothing_close_gets_no_guess(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, str(GOOD[0]), "--isolated", "--gpu", "tpu-v5")
    assert code == 2 and "did you mean" not in err and "unknown GPU 'tpu-v5'" in err


LAYOUT = (
    "model:\n  pipeline_model_parallel_size: 8\n  context_parallel_size: 32\n"
    "  expert_model_parallel_size: 32\n"
)


def _nested_repo(root: Path) -> None:
    """A repo whose root table says 96 GPUs, a nested project's pyproject.toml without a
    table (it must not hide the root's), and a team folder with its own table (256 GPUs)."""
    (root / "sub" / "plain").mkdir(parents=True)
    (root / "team").mkdir()
    (root / "pyproject.toml").write_text('[tool.moe-lint]\ngpus = 96\ngpu = "h100"\n')
    (root / "sub" / "pyproject.toml").write_text('[project]\nname = "unrelated"\n')
    (root / "team" / "pyproject.toml").write_text(
        '[tool.moe-lint]\ngpus = 256\nignore = ["PAR004"]\n'
    )
    for folder in (root, root / "sub" / "plain", root / "team"):
        (folder / "cfg.yaml").write_text(LAYOUT)


def test_each_file_gets_its_closest_pyproject_with_a_table(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 26, as ruff finds settings: the closest pyproject.toml with [tool.moe-lint] to
    each linted file, walking up; a nested pyproject without the table does not hide its
    parent's, and the command line still wins."""
    _nested_repo(tmp_path)
    for cwd in (tmp_path, tmp_path / "sub"):
        monkeypatch.chdir(cwd)
        files = [str(tmp_path / p / "cfg.yaml") for p in ("", "sub/plain", "team")]
        code, out, _ = run(capsys, *files, "--format", "json")
        by_file: dict[str, set[str]] = {}
        for f in json.loads(out):
            by_file.setdefault(f["file"], set()).add(f["code"])
        root, plain, team = (by_file.get(f, set()) for f in files)
        assert "PAR001" in root and "PAR001" in plain  # 96 GPUs from the root table
        assert "PAR001" not in team and "PAR004" not in team and "PAR005" in team  # 256
        assert code == 1
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "team/cfg.yaml", "--gpus", "96", "--format", "json")
    assert "PAR001" in {f["code"] for f in json.loads(out)}


def test_show_settings_names_each_value_and_where_it_came_from(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _nested_repo(tmp_path)
    (tmp_path / "directive.yaml").write_text("# moe-lint: gpus=512\n" + LAYOUT)
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(
        capsys, "--show-settings", "cfg.yaml", "directive.yaml", "sub/plain/cfg.yaml",
        "team/cfg.yaml", "--gpu", "b200",
    )  # fmt: skip
    assert code == 0 and "error" not in out.split("fail-on")[0]
    blocks = dict((block.splitlines()[0], block) for block in re.split(r"\n(?=\S)", out.strip()))
    assert f"settings: {tmp_path / 'pyproject.toml'} [tool.moe-lint]" in blocks["cfg.yaml"]
    assert "gpus: 96 (pyproject)" in blocks["cfg.yaml"]
    assert "gpu: b200 (command line)" in blocks["cfg.yaml"]
    assert "gpus: 512 (# moe-lint: directive in the file)" in blocks["directive.yaml"]
    assert "gpus: 96 (pyproject)" in blocks["sub/plain/cfg.yaml"]
    team = blocks["team/cfg.yaml"]
    assert f"settings: {tmp_path / 'team' / 'pyproject.toml'}" in team
    assert "gpus: 256 (pyproject)" in team and "ignore PAR004" in team
    code, out, _ = run(capsys, "--show-settings", "--isolated", "cfg.yaml")
    assert "settings: none (--isolated)" in out and "gpus: not given" in out
    code, out, _ = run(capsys, "--show-files", ".")
    assert code == 0 and sorted(out.split()) == sorted(
        ["cfg.yaml", "directive.yaml", "sub/plain/cfg.yaml", "team/cfg.yaml"]
    )
