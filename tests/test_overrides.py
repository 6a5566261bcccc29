"""Command-line overrides as Bridge applies them: Hydra's value grammar, struct-mode verdicts
(OVR001-OVR005), `~key` leaving the recipe's value, any argument order, and where a finding
about an argument appears in every output format.

The expected values of the grammar table were produced by hydra-core 1.3.8's own
``OverridesParser`` (``parse_override("a=" + text).value()``); moe-lint does not depend on Hydra.
"""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from conftest import DATA, REPO, run_lint
from conftest import run_main as run
from moe_lint.config.load import parse_text
from moe_lint.config.normalize import normalize
from moe_lint.config.overrides import parse_override, parse_value
from moe_lint.engine.catalogue import Catalogue
from moe_lint.errors import InputError

GOOD = REPO / "examples" / "dsv3_128k_h100.yaml"
SARIF_SCHEMA = json.loads((DATA / "schemas" / "sarif-schema-2.1.0.json").read_text())
FINDINGS_SCHEMA = json.loads((REPO / "docs" / "findings.schema.json").read_text())

#: text after '=' -> the value hydra-core 1.3.8 gives it.
HYDRA_VALUES: list[tuple[str, Any]] = [
    ("16", 16),
    ("1_000", 1000),
    ("+5", 5),
    ("08", "08"),  # INT cannot start with 0: two tokens, so a string
    ("1e-3", 0.001),  # YAML 1.1 would give the string '1e-3'
    ("1.", 1.0),
    (".5", 0.5),
    ("-inf", -math.inf),
    ("TRUE", True),
    ("false", False),
    ("true_x", "true_x"),
    ("Null", None),
    ("", ""),
    ("  5", 5),  # whitespace after '=' is dropped
    ("a b ", "a b"),
    ("0x10", "0x10"),
    ("1e", "1e"),
    ("foo-bar", "foo-bar"),
    ("a:b", "a:b"),
    ("$HOME", "$HOME"),
    ("x@y", "x@y"),
    ("a\\,b", "a,b"),
    ("'a b'", "a b"),
    ('"x\\"y"', 'x"y'),
    ("'abc\\\\'", "abc\\"),
    ("'16'", "16"),
    ("[]", []),
    ("[ ]", []),
    ("[moe_act,layernorm]", ["moe_act", "layernorm"]),
    ("[a, 'b c', [1, 2.5e3]]", ["a", "b c", [1, 2500.0]]),
]


@pytest.mark.parametrize(("text", "want"), HYDRA_VALUES, ids=[t for t, _ in HYDRA_VALUES])
def test_values_follow_hydra_grammar(text: str, want: Any) -> None:
    got = parse_value(text, "test")
    if isinstance(want, float) and math.isinf(want):
        assert got == want
    else:
        assert got == want and type(got) is type(want)


@pytest.mark.parametrize(
    ("arg", "says"),
    [
        ("model.context_parallel_size=8,16", "sweep"),
        ("model.recompute_modules=glob(*)", "function"),
        ("model.num_layers=range(1,4)", "function"),
        ("model.num_layers=int(4)", "function"),
        ("model.seq_length=${oc.env:SEQ}", "interpolation"),
        ("model.x='${a}'", "interpolation"),
        ("model.cfg={a:1}", "dict"),
        ("model.x='a'b", "not a valid Hydra override value"),  # Hydra: token recognition error
        ("model.x=[1,]", "not a valid Hydra override value"),
        ("model.x=a=b", "not a valid Hydra override value"),
        ("db/mysql=x", "config-group"),
        ("model.recompute_modules.0=x", "list-index"),
        ("+model.x", "missing '=value'"),
    ],
)
def test_unsupported_values_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], arg: str, says: str
) -> None:
    code, out, err = run(capsys, str(GOOD), "--gpus", "256", arg)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("moe-lint: error: argument 4: ") and says in err


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[dict[str, Any]]]:
    code, out, _ = run(capsys, *args, "--format", "json")
    findings = json.loads(out)
    jsonschema.Draft202012Validator(FINDINGS_SCHEMA).validate(findings)
    return code, findings


def test_typo_is_an_error_with_did_you_mean(capsys: pytest.CaptureFixture[str]) -> None:
    # The file alone is clean; today's silent no-op becomes the startup failure it is.
    assert run(capsys, str(GOOD))[0] == 0
    code, findings = _json(capsys, str(GOOD), "model.contxt_parallel_size=16")
    assert code == 1
    (f,) = [f for f in findings if f["code"] == "OVR001"]
    assert f["severity"] == "error"
    assert f["argument"] == {"index": 2, "text": "model.contxt_parallel_size=16"}
    assert (f["line"], f["column"], f["file"]) == (None, None, str(GOOD))
    assert f["message"].startswith("command line argument 2 (model.contxt_parallel_size=16): ")
    assert (
        "\"Could not override 'model.contxt_parallel_size'. To append to your config use "
        '+model.contxt_parallel_size=16"' in f["message"]
    )
    assert f["fix"] == "did you mean model.context_parallel_size=16?"
    # The file's own findings still follow, for the config as it would run.
    assert findings[0] is f or findings.index(f) == 0


def test_key_without_section(capsys: pytest.CaptureFixture[str]) -> None:
    code, findings = _json(capsys, str(GOOD), "context_parallel_size=16", "--select", "OVR")
    assert code == 1
    (f,) = findings
    assert f["code"] == "OVR001" and f["path"] == "context_parallel_size"
    assert f["fix"] == "did you mean model.context_parallel_size=16?"


def test_plus_on_existing_and_tilde_on_missing(capsys: pytest.CaptureFixture[str]) -> None:
    code, findings = _json(
        capsys,
        str(GOOD),
        "+model.context_parallel_size=16",
        "~model.cp_comm_typ",
        "--select",
        "OVR,PAR001",
    )
    assert code == 1
    by_code = {f["code"]: f for f in findings}
    plus, tilde = by_code["OVR002"], by_code["OVR003"]
    assert plus["argument"]["index"] == 2 and tilde["argument"]["index"] == 3
    assert "already holds 32 (from the file)" in plus["message"]
    assert (
        "\"Could not append to config. An item is already at 'model.context_parallel_size'.\""
        in (plus["message"])
    )
    assert "++model.context_parallel_size=16" in plus["fix"]
    assert (
        "\"Could not delete from config. 'model.cp_comm_typ' does not exist.\""
        in (tilde["message"])
    )
    assert "did you mean ~model.cp_comm_type?" in tilde["message"]
    # `+` is checked as meant (`++`): CP 16 on 256 GPUs is divisible, CP 16 is applied.
    assert "PAR001" not in by_code


def test_tilde_leaves_the_recipe_value() -> None:
    text = "model:\n  tensor_model_parallel_size: 4\n  context_parallel_size: 8\n"
    cfg = normalize(parse_text(text), [parse_override("~model.tensor_model_parallel_size")])
    # Not the file's 4 and not Megatron-Core's default 1: the recipe decides.
    assert "model.tensor_model_parallel_size" in cfg.unknown
    assert "model.tensor_model_parallel_size" not in cfg.values
    assert cfg.origin["model.tensor_model_parallel_size"] == "recipe"
    assert "recipe's value applies" in cfg.notes["model.tensor_model_parallel_size"]
    # Setting it again (with '+', as Hydra requires after a delete) makes it known.
    again = normalize(
        parse_text(text),
        [
            parse_override("~model.tensor_model_parallel_size"),
            parse_override("+model.tensor_model_parallel_size=2"),
        ],
    )
    assert again.values["model.tensor_model_parallel_size"] == 2
    assert again.override_problems == []


def test_a_rule_reading_a_deleted_field_skips(catalogue: Catalogue) -> None:
    text = (
        "model:\n  context_parallel_size: 16\n  cp_comm_type: a2a+p2p\n"
        "  hierarchical_context_parallel_sizes: null\n"
    )
    fires = run_lint(catalogue, text, ["ATT009"])
    assert [f.code for f in fires.findings] == ["ATT009"]
    deleted = run_lint(
        catalogue,
        text.replace("null", "[8, 2]"),
        ["ATT009", "OVR"],
        overrides=[parse_override("~model.hierarchical_context_parallel_sizes")],
    )
    assert deleted.findings == []


def test_mixed_order_applies_every_override(capsys: pytest.CaptureFixture[str]) -> None:
    code, findings = _json(
        capsys,
        "check",
        str(GOOD),
        "model.tensor_model_parallel_size=2",
        "--gpus",
        "64",
        "model.contxt_parallel_size=4",
        "--select",
        "OVR,PAR001,MOE003",
    )
    assert code == 1
    by_code = {f["code"]: f for f in findings}
    # Both overrides reached the config: TP 2 (MOE003: MoE with TP 2 and no SP) on 64 GPUs.
    assert "override model.tensor_model_parallel_size=2" in by_code["MOE003"]["derivation"]
    assert "world = 64 GPUs" in by_code["PAR001"]["derivation"]
    # Positions count from the word after `moe-lint`, `check` included.
    assert by_code["OVR001"]["argument"]["index"] == 6


def test_double_dash_ends_options(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    odd = tmp_path / "-odd.yaml"
    odd.write_text(GOOD.read_text())
    code, out, _ = run(
        capsys,
        "--select",
        "OVR",
        "--format",
        "json",
        "--",
        str(odd),
        "model.contxt_parallel_size=4",
    )
    assert code == 1
    (f,) = json.loads(out)
    assert f["file"] == str(odd) and f["argument"]["index"] == 7
    # An option after `--` is a word like any other (here, a file that does not exist).
    code, _, err = run(capsys, str(GOOD), "--", "--gpus")
    assert code == 2 and "--gpus" in err


def test_option_values_are_not_overrides(capsys: pytest.CaptureFixture[str]) -> None:
    code, findings = _json(
        capsys, str(GOOD), "--memory", "routing_imbalance=1.5", "--select", "OVR"
    )
    assert (code, findings) == (0, [])


def test_bad_override_names_its_argument(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "check", str(GOOD), "-q", "+model..x=1")
    assert code == 2 and err.startswith("moe-lint: error: argument 4: bad override")


def _workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / ".git").mkdir()
    (tmp_path / "cfg.yaml").write_text(GOOD.read_text())
    monkeypatch.chdir(tmp_path)
    return "cfg.yaml"


ARGS = ("model.contxt_parallel_size=16", "--select", "OVR001,PAR004")


def test_location_in_sarif(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = _workdir(tmp_path, monkeypatch)
    code, out, _ = run(capsys, cfg, *ARGS, "--format", "sarif")
    assert code == 1
    log = json.loads(out)
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(log)
    results = log["runs"][0]["results"]
    (ovr,) = [r for r in results if r["ruleId"] == "OVR001"]
    loc = ovr["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == "cfg.yaml"
    assert loc["region"] == {"startLine": 1, "startColumn": 1}  # GitHub needs a startLine
    assert ovr["properties"]["commandLineArgument"] == {
        "index": 2,
        "text": "model.contxt_parallel_size=16",
    }
    assert ovr["message"]["text"].startswith("command line argument 2 (")
    other = next(r for r in results if r["ruleId"] == "PAR004")
    assert "commandLineArgument" not in other["properties"]


def test_location_in_the_other_formats(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = _workdir(tmp_path, monkeypatch)
    label = "command line argument 2 (model.contxt_parallel_size=16): "

    _, out, _ = run(capsys, cfg, *ARGS)
    assert out.startswith(f"{cfg}: command line argument 2: error OVR001 [unknown-override-key]\n")
    assert "  $ model.contxt_parallel_size=16\n" in out
    assert "    " + "^" * len("model.contxt_parallel_size") + "\n" in out

    _, out, _ = run(capsys, cfg, *ARGS, "--format", "concise")
    assert out.splitlines()[0].startswith(f"{cfg}:1:1: OVR001 [error] {label}")

    _, out, _ = run(capsys, cfg, *ARGS, "--format", "json-lines")
    first = json.loads(out.splitlines()[0])
    assert first["argument"]["index"] == 2 and first["line"] is None

    _, out, _ = run(capsys, cfg, *ARGS, "--format", "github")
    line = out.splitlines()[0]
    assert line.startswith(f"::error file={cfg},title=OVR001 unknown-override-key::{label}")

    _, out, _ = run(capsys, cfg, *ARGS, "--format", "gitlab")
    entry = json.loads(out)[0]
    assert entry["check_name"] == "OVR001" and entry["location"]["lines"] == {"begin": 1}
    assert entry["description"].startswith(label)

    _, out, _ = run(capsys, cfg, *ARGS, "--format", "junit")
    case = ET.fromstring(out).find("testsuite/testcase")
    assert case is not None
    assert case.get("name") == "OVR001 model.contxt_parallel_size (command line argument 2)"
    failure = case.find("failure")
    assert failure is not None and (failure.text or "").startswith(f"{cfg}: {label}")


def test_library_overrides_have_no_position(catalogue: Catalogue) -> None:
    result = run_lint(
        catalogue, "model:\n  context_parallel_size: 8\n", ["OVR"], "model.contxt_parallel_size=2"
    )
    (f,) = result.findings
    assert f.argument is not None and f.argument.position is None
    assert f.full_message.startswith("override (model.contxt_parallel_size=2): ")


def test_parse_errors_are_input_errors() -> None:
    with pytest.raises(InputError, match="sweep"):
        parse_override("a=1,2")
    assert parse_override("~a.b=3").has_value and parse_override("~a.b").value is None


def test_positions_follow_argparse() -> None:
    from moe_lint.cli.options import _check_parser
    from moe_lint.cmdline import positional_indices

    argv = ["a.yaml", "-qo", "out.txt", "x=1", "--gpus-per", "8", "--format=json", "y=2"]
    argv += ["--memory", "k=1", "--", "-z.yaml", "--gpus"]
    assert positional_indices(_check_parser(), argv) == ([0, 3, 7, 11, 12], 10)
