"""CI output formats: SARIF (schema-valid), GitHub, GitLab, JUnit, JSON lines; baselines."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
import yaml

from conftest import DATA, REPO
from conftest import run_main as run

SCHEMA = json.loads((DATA / "schemas" / "sarif-schema-2.1.0.json").read_text())
BROKEN = REPO / "examples" / "dsv3_128k_h100_broken.yaml"
GOOD = REPO / "examples" / "dsv3_128k_h100.yaml"


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A throwaway git-looking repository holding copies of the examples."""
    (tmp_path / ".git").mkdir()
    configs = tmp_path / "configs"
    configs.mkdir()
    for src in (BROKEN, GOOD):
        shutil.copy(src, configs / src.name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_sarif_is_valid_and_relative(capsys: pytest.CaptureFixture[str], workdir: Path) -> None:
    for files in (
        ["configs/dsv3_128k_h100_broken.yaml"],
        ["configs/dsv3_128k_h100.yaml"],
        [str(workdir / "configs" / "dsv3_128k_h100_broken.yaml"), "configs/dsv3_128k_h100.yaml"],
    ):
        code, out, _ = run(capsys, *files, "--format", "sarif")
        log = json.loads(out)
        validator = jsonschema.Draft4Validator(SCHEMA, format_checker=jsonschema.FormatChecker())
        validator.validate(log)
        run0 = log["runs"][0]
        rules = run0["tool"]["driver"]["rules"]
        # only the rules the results report, each once (the catalogue was 620 KB of it)
        assert {r["id"] for r in rules} == {x["ruleId"] for x in run0["results"]}
        assert len({r["id"] for r in rules}) == len(rules)
        for rule in rules:
            assert rule["helpUri"].startswith("https://") and rule["help"]["text"]
            assert rule["defaultConfiguration"]["level"] in ("error", "warning", "note")
        for result in run0["results"]:
            loc = result["locations"][0]["physicalLocation"]
            assert loc["artifactLocation"]["uri"].startswith("configs/")
            assert loc["region"]["startLine"] >= 1
            assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
            assert len(result["partialFingerprints"]["moeLint/v1"]) == 64
        assert code in (0, 1)


def test_fingerprints_survive_edits_elsewhere(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    path = workdir / "configs" / "dsv3_128k_h100_broken.yaml"
    _, before, _ = run(capsys, str(path), "--format", "sarif")
    path.write_text("# a new comment line at the top\n" + path.read_text())
    _, after, _ = run(capsys, str(path), "--format", "sarif")

    def prints(text: str) -> list[tuple[str, str, int]]:
        results = json.loads(text)["runs"][0]["results"]
        return [
            (
                r["ruleId"],
                r["partialFingerprints"]["moeLint/v1"],
                r["locations"][0]["physicalLocation"]["region"]["startLine"],
            )
            for r in results
        ]

    b, a = prints(before), prints(after)
    assert [(c, fp) for c, fp, _ in b] == [(c, fp) for c, fp, _ in a]
    assert all(la == lb + 1 for (_, _, lb), (_, _, la) in zip(b, a, strict=True))


def test_github_annotations_and_escaping(
    capsys: pytest.CaptureFixture[str], workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    summary = workdir / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    code, out, _ = run(capsys, "configs/dsv3_128k_h100_broken.yaml", "--format", "github")
    lines = out.splitlines()
    assert code == 1 and lines
    for line in lines:
        assert line.startswith(("::error file=", "::warning file=", "::notice file="))
        props, _, message = line[2:].partition("::")
        assert "\n" not in message and "title=" in props
    first = lines[0]
    assert "file=configs/dsv3_128k_h100_broken.yaml,line=" in first
    table = summary.read_text()
    assert table.count("\n| ") == len(lines) + 1  # header + one row per finding

    from moe_lint.output.formats import _escape_data, _escape_property

    # Config text is one line: a CR or LF in it is shown as an escape, so it can neither start a
    # workflow command nor split the annotation; % is the runner's own escape character.
    assert _escape_data("50%\r\nnext") == "50%25\\r\\nnext"
    assert _escape_data("x\n::error::y") == "x\\n::error::y"
    assert _escape_property("a:b,c") == "a%3Ab%2Cc"
    assert _escape_property("%\n") == "%25\\n"


def test_gitlab_code_quality(capsys: pytest.CaptureFixture[str], workdir: Path) -> None:
    code, out, _ = run(capsys, "configs/dsv3_128k_h100_broken.yaml", "--format", "gitlab")
    report = json.loads(out)
    assert code == 1 and report
    fps = [item["fingerprint"] for item in report]
    assert len(fps) == len(set(fps))
    for item in report:
        assert set(item) == {"description", "check_name", "fingerprint", "severity", "location"}
        assert item["severity"] in ("info", "minor", "major", "critical", "blocker")
        assert item["location"]["path"] == "configs/dsv3_128k_h100_broken.yaml"
        assert item["location"]["lines"]["begin"] >= 1


def test_junit(capsys: pytest.CaptureFixture[str], workdir: Path) -> None:
    code, out, _ = run(
        capsys,
        "configs/dsv3_128k_h100_broken.yaml",
        "configs/dsv3_128k_h100.yaml",
        "--format",
        "junit",
        "--select",
        "PAR001,RCP003",
    )
    root = ET.fromstring(out)
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == [
        "configs/dsv3_128k_h100_broken.yaml",
        "configs/dsv3_128k_h100.yaml",
    ]
    broken, good = suites
    assert len(broken.findall("testcase/failure")) == int(broken.get("failures")) == 3
    assert [c.get("name") for c in good.findall("testcase")] == ["No errors found"]
    assert code == 1


def test_json_lines_and_determinism(capsys: pytest.CaptureFixture[str], workdir: Path) -> None:
    outs = [
        run(capsys, "configs/dsv3_128k_h100_broken.yaml", "--format", fmt)[1]
        for fmt in ("json-lines", "json-lines", "sarif", "sarif")
    ]
    assert outs[0] == outs[1] and outs[2] == outs[3]
    records = [json.loads(line) for line in outs[0].splitlines()]
    assert records == json.loads(
        run(capsys, "configs/dsv3_128k_h100_broken.yaml", "--format", "json")[1]
    )


def test_output_file(capsys: pytest.CaptureFixture[str], workdir: Path) -> None:
    code, out, _ = run(
        capsys, "configs/dsv3_128k_h100_broken.yaml", "--format", "sarif", "--output", "out.sarif"
    )
    assert out == "" and code == 1
    assert json.loads((workdir / "out.sarif").read_text())["version"] == "2.1.0"


def test_baseline_fails_only_on_new(capsys: pytest.CaptureFixture[str], workdir: Path) -> None:
    cfg = workdir / "configs" / "dsv3_128k_h100_broken.yaml"
    code, _, err = run(capsys, str(cfg), "--write-baseline", "baseline.json")
    assert code == 0 and "baseline entries" in err
    assert run(capsys, str(cfg), "--baseline", "baseline.json")[0] == 0
    # an edit elsewhere (lines shift) keeps the baseline valid
    cfg.write_text("# moved down a line\n" + cfg.read_text())
    code, out, err = run(capsys, str(cfg), "--baseline", "baseline.json", "--format", "json")
    assert code == 0 and json.loads(out) == [] and "stale" not in err
    # a new problem fails; a fixed one leaves a stale entry
    text = cfg.read_text().replace(
        "  moe_grouped_gemm: true\n", "  moe_grouped_gemm: true\n  moe_router_topk: 300\n"
    )
    text = text.replace(
        "moe_flex_dispatcher_backend: deepep ", "# removed                          "
    )
    cfg.write_text(text)
    code, out, err = run(capsys, str(cfg), "--baseline", "baseline.json", "--format", "json")
    assert code == 1
    new = {f["code"] for f in json.loads(out)}
    assert "MOE002" in new and "PAR001" not in new
    assert "stale baseline entry: DSP001" in err


def test_ci_example_files_parse() -> None:
    """The examples use this repository's action and GitLab template, which upload SARIF and
    publish the Code Quality report (both run for real in tests/test_action.py)."""
    workflow = yaml.safe_load((REPO / "examples" / "ci" / "github-workflow.yml").read_text())
    steps = workflow["jobs"]["lint-configs"]["steps"]
    assert any(s.get("uses", "").startswith("your-org/moe-lint@") for s in steps)
    action = yaml.safe_load((REPO / "action.yml").read_text())
    action_steps = action["runs"]["steps"]
    assert any("github-lint.sh" in s.get("run", "") for s in action_steps)
    assert any(
        s.get("uses", "").startswith("github/codeql-action/upload-sarif") for s in action_steps
    )
    gitlab = yaml.safe_load((REPO / "examples" / "ci" / "gitlab-ci.yml").read_text())
    (include,) = gitlab["include"]
    template = yaml.safe_load((REPO / include["file"].lstrip("/")).read_text())
    assert (
        template["moe-lint"]["artifacts"]["reports"]["codequality"] == "gl-code-quality-report.json"
    )
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    assert {h["id"] for h in hooks} == {"moe-lint", "moe-lint-fix"}


def test_escape_layer_units() -> None:
    """moe_lint.output.escape, one format at a time (CLI cases: test_hostile_output.py)."""
    from moe_lint.output import escape

    assert escape.text("a\x1b[2Jb\n\tc\x85\u2028") == "a\\x1b[2Jb\\n\tc\\x85\\u2028"
    assert escape.text("bad\udcff.yaml") == "bad\\xff.yaml"  # os.fsdecode's byte, shown
    assert escape.line("  ::error::x ##[warning]y") == "  \\x3a:error::x ##\\x5bwarning]y"
    # A workflow command split over two pieces of a text row is still broken.
    assert escape.guard_row(["model.a##", "[0]"]) == ["model.a##", "\\x5b0]"]
    assert escape.guard_row(["  :", ":error::x"]) == ["  \\x3a", ":error::x"]
    assert escape.guard_row(["plain", " text"]) == ["plain", " text"]
    # JSON: valid UTF-8, lossless for Unicode text, inert bytes.
    dumped = escape.dumps({"k": "\x7f\x9b##[e]\u202e", "f": "bad\udcff"})
    dumped.encode("utf-8")
    assert "\x9b" not in dumped and "##[" not in dumped and "\u202e" not in dumped
    assert json.loads(dumped) == {"k": "\x7f\x9b##[e]\u202e", "f": "bad\\xff"}
    # XML: C0 is not legal XML 1.0 even as a reference, so it is shown; line breaks are
    # references, so the data adds no line to the stream.
    attr, body = escape.xml_attr('q"\x01\n'), escape.xml_text("<&\x0b\n::x##[y")
    xml = f"<a b={attr}>{body}</a>"
    assert "\n" not in xml and "##[" not in xml
    parsed = ET.fromstring(xml)
    assert parsed.get("b") == 'q"\\x01\n' and parsed.text == "<&\\x0b\n::x##[y"
    assert escape.uri_path("configs/my file#1.yaml") == "configs/my%20file%231.yaml"
    assert escape.uri_path("bad\udcff.yaml") == "bad%FF.yaml"
    assert escape.uri_path("plain/a-b_c.yaml") == "plain/a-b_c.yaml"
    assert escape.markdown("![x](http://e/p.png) <img> |") == (
        "\\!\\[x\\](http://e/p.png) \\<img\\> \\|"
    )


def test_code_frame_caret_under_escaped_text() -> None:
    """The caret is measured on the line as shown, escapes included."""
    from moe_lint.engine.findings import Finding
    from moe_lint.output import text as report

    lines = ["model:", "  \u202ex\u2066: 1  # key with bidi controls"]
    finding = Finding("SCH001", "unknown-key", "warning", "m", "model.x", "f.yaml", 2, 3, 2, 7)
    rows = report.text_segments(finding, lines)
    shown = report.render_plain(rows).splitlines()
    code_line = next(s for s in shown if s.startswith("  2 | "))
    caret_line = shown[shown.index(code_line) + 1]
    assert code_line == "  2 |   \\u202ex\\u2066: 1  # key with bidi controls"
    start = code_line.index("\\u202e")
    assert caret_line.index("^") == start
    assert caret_line.rstrip().endswith("^" * len("\\u202ex\\u2066"))


def test_a_baseline_entry_of_pp002_still_covers_the_codes_split_from_it(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    """A baseline written before issue 11 recorded PP016/PP017's findings as PP002."""
    cfg = workdir / "uneven.yaml"
    cfg.write_text(
        "model:\n  pipeline_model_parallel_size: 8\n  num_layers_in_first_pipeline_stage: 0\n"
    )
    code, out, _ = run(capsys, str(cfg), "--select", "PP", "--format", "json")
    (finding,) = json.loads(out)
    assert code == 1 and finding["code"] == "PP016"
    entry = {"code": "PP002", "file": "uneven.yaml", "path": finding["path"], "count": 1}
    (workdir / "old.json").write_text(json.dumps({"moe-lint-baseline": 1, "findings": [entry]}))
    code, out, err = run(capsys, str(cfg), "--select", "PP", "--baseline", "old.json")
    assert code == 0 and "stale" not in err
    entry["code"] = "PP003"  # an unrelated code does not cover it
    (workdir / "other.json").write_text(json.dumps({"moe-lint-baseline": 1, "findings": [entry]}))
    assert run(capsys, str(cfg), "--select", "PP", "--baseline", "other.json")[0] == 1
