"""Hostile output (issue 10): what a config or a file name contains cannot act on the reader of
the report, input errors reach every CI format, and a closed pipe ends the run quietly.

Each case runs the real CLI in a subprocess (test_hostile.run_cli) and checks every output
format: no raw control character (terminal escapes, line breaks inside a record), no GitHub
workflow command the report did not mean to write (a line starting with ``::``, or the runner's
legacy ``##[`` anywhere in a line), JUnit that parses as XML, SARIF that validates, JSON that
is valid UTF-8 and still carries the exact key, the exit code, CPU < 2 s and RSS < 300 MB.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

from conftest import DATA, REPO
from test_hostile import MAX_RSS_MB, MAX_SECONDS, run_cli

#: Each case runs the CLI in a process of its own to bound its CPU time and memory: slow.
pytestmark = pytest.mark.slow

FORMATS = ("text", "concise", "json", "json-lines", "sarif", "github", "gitlab", "junit")
SARIF_SCHEMA = json.loads((DATA / "schemas" / "sarif-schema-2.1.0.json").read_text())
FINDINGS_SCHEMA = json.loads((REPO / "docs" / "findings.schema.json").read_text())
BROKEN = REPO / "examples" / "dsv3_128k_h100_broken.yaml"

#: Unknown keys are echoed in SCH001 messages and config paths: each is an attack on a reader.
HOSTILE_KEYS = {
    "workflow-command": "x\n::error file=evil.py,line=1::pwned",
    "workflow-command-cr": "x\r::warning::pwned",
    "legacy-command": "##[error]pwned",
    "stop-commands": "y\n::stop-commands::token",
    "osc-title": "\x1b]0;owned\x07title",
    "ansi-colour": "\x1b[31mred\x1b[0m",
    "c1-csi": "\x9b31mcsi",
    "controls": "ctl\x01\x08\x0b\x0c\x7f\x85z",
    "line-separators": "a\u2028b\u2029c",
    "bidi": "\u202eevil\u202c",
    "rich-markup": "[red]markup[/red] [link=https://evil]x[/link] :smile:",
}

#: Every character a reader could act on; a tab and a line break between records are ours.
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
#: rich's own colour codes (--color always), the only escapes the report itself may write.
SGR = re.compile("\x1b\\[[0-9;]*m")


def _yaml_key(key: str) -> str:
    """The key as a YAML double-quoted scalar (JSON is a subset of YAML 1.2 flow scalars; the
    escapes used here are valid in PyYAML's YAML 1.1 too)."""
    return json.dumps(key)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    return tmp_path


def _hostile_config() -> str:
    lines = ["model:", "  tensor_model_parallel_size: 1"]
    lines += [f"  {_yaml_key(key)}: 1" for key in HOSTILE_KEYS.values()]
    # YAML refuses raw C0 and C1 characters, but not bidi controls: the code frame shows this.
    lines.append("  bidi_in_line: 1  # \u202ereversed\u2066 comment")
    return "\n".join(lines) + "\n"


def _names(repo: Path) -> list[str]:
    """The config under three names: plain, one a workflow command, one not valid UTF-8."""
    text = _hostile_config()
    names = ["hostile.yaml", "::error file=evil.py::x.yaml"]
    try:
        (repo / os.fsdecode(b"bad\xff\x1b.yaml")).write_text(text, encoding="utf-8")
        names.append(os.fsdecode(b"bad\xff\x1b.yaml"))
    except (OSError, UnicodeError):  # a file system that insists on UTF-8 names (macOS)
        pass
    for name in names[:2]:
        (repo / name).write_text(text, encoding="utf-8")
    return names


def _assert_clean(fmt: str, out: str, err: str) -> None:
    """Nothing in stdout or stderr can act on a terminal or a GitHub Actions runner."""
    for stream, text in (("stdout", out), ("stderr", err)):
        shown = SGR.sub("", text) if fmt == "text" else text
        bad = UNSAFE.search(shown)
        assert bad is None, (fmt, stream, repr(shown[max(0, bad.start() - 40) : bad.end() + 40]))
        assert "##[" not in text, (fmt, stream)
        assert "\ufffd" not in text, (fmt, stream, "not valid UTF-8")
        for line in shown.splitlines():
            if line.lstrip().startswith("::"):
                assert fmt == "github" and stream == "stdout", (fmt, stream, line)
                assert re.match(r"::(error|warning|notice) file=[^:]*::", line), line


def _check_format(fmt: str, out: str, names: list[str]) -> None:
    if fmt in ("json", "json-lines"):
        records = json.loads(out) if fmt == "json" else [json.loads(x) for x in out.splitlines()]
        jsonschema.validate(records, FINDINGS_SCHEMA)
        paths = {r["path"] for r in records if r["code"] == "SCH001"}
        # JSON is lossless: the consumer gets the exact key back.
        assert {f"model.{key}" for key in HOSTILE_KEYS.values()} <= paths
        assert {r["file"] for r in records} == {
            n if "\udcff" not in n else n.replace("\udcff", "\\xff") for n in names
        }
    elif fmt == "sarif":
        log = json.loads(out)
        jsonschema.Draft4Validator(
            SARIF_SCHEMA, format_checker=jsonschema.FormatChecker()
        ).validate(log)
        uris = {
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for r in log["runs"][0]["results"]
        }
        assert "hostile.yaml" in uris
        assert all(re.fullmatch(r"[A-Za-z0-9\-._~/!$&'()*+,;=:@%]+", uri) for uri in uris)
        if len(names) == 3:
            assert "bad%FF%1B.yaml" in uris
        assert log["runs"][0]["invocations"][0]["executionSuccessful"] is True
    elif fmt == "gitlab":
        report = json.loads(out)
        assert {item["location"]["path"] for item in report} >= {"hostile.yaml"}
        assert len({item["fingerprint"] for item in report}) == len(report)
    elif fmt == "junit":
        root = ET.fromstring(out)
        assert len(root.findall("testsuite")) == len(names)
        names_seen = " ".join(c.get("name", "") for c in root.iter("testcase"))
        # XML 1.0 cannot hold \x01 even as a reference: it is shown as an escape; characters
        # XML allows arrive intact (as references in the raw stream).
        assert "model.ctl\\x01\\x08\\x0b\\x0c\x7f\x85z" in names_seen
        assert "model.\u202eevil\u202c" in names_seen
    elif fmt == "github":
        assert all(line.startswith(("::warning ", "::notice ")) for line in out.splitlines())


@pytest.mark.parametrize("fmt", ["json", "text", "html"])
def test_estimate_with_hostile_names(repo: Path, fmt: str) -> None:
    """``estimate`` echoes file names too: a non-UTF-8 or workflow-command name is shown inert
    (its JSON went through a plain json.dumps and ended in exit 3); the HTML page on stdout as
    well (a name that is markup: tests/test_html_report.py)."""
    names = _names(repo)
    example = (REPO / "examples" / "dsv3_128k_h100.yaml").read_text(encoding="utf-8")
    for name in names:
        (repo / name).write_text(example, encoding="utf-8")
    code, out, err, seconds, rss = run_cli(
        ["estimate", *names, "--format", fmt, "--color", "never", "--gpus", "256", "--gpu", "h100"],
        repo,
    )
    assert code in (0, 1), (code, err)
    assert seconds < MAX_SECONDS and rss < MAX_RSS_MB, (seconds, rss)
    _assert_clean(fmt, out, err)
    if fmt == "json":
        assert len(json.loads(out)) == len(names)
    if fmt == "html":
        assert out.count('<section class="file"') == len(names)


@pytest.mark.parametrize("fmt", [*FORMATS, "text-color"])
def test_hostile_keys_and_names(repo: Path, fmt: str) -> None:
    names = _names(repo)
    real = "text" if fmt == "text-color" else fmt
    color = ["--color", "always"] if fmt == "text-color" else ["--color", "never"]
    code, out, err, seconds, rss = run_cli([*names, "--format", real, *color], repo)
    assert code == 0, (fmt, code, err)  # warnings and infos only: the gate passes
    assert "Traceback" not in out + err
    assert seconds < MAX_SECONDS and rss < MAX_RSS_MB, (seconds, rss)
    _assert_clean(real, out, err)
    _check_format(real, out, names)
    if real == "github":  # one annotation per finding, nothing else
        records = json.loads(run_cli([*names, "--format", "json"], repo)[1])
        assert len(out.splitlines()) == len(records)
    if fmt == "text-color":
        assert "[red]markup[/red] [link=https://evil]x[/link] :smile:" in SGR.sub("", out)
        assert "\x1b]8;" not in out  # no hyperlink from [link=...]


def test_hostile_rule_pack_text(repo: Path) -> None:
    """An untrusted rule pack (--rules) cannot reach the terminal through rules/explain."""
    pack = repo / "pack.yaml"
    pack.write_text((DATA / "packs" / "hostile-docs.yaml").read_text(encoding="utf-8"))
    for args in (["rules"], ["explain", "XHO001"], ["rules", "--format", "json"]):
        code, out, err, _, _ = run_cli([*args, "--rules", str(pack)], repo)
        assert code == 0, (args, err)
        _assert_clean("rules", out, err)
        assert "XHO001" in out


# --- input errors in every format ---------------------------------------------------------

BAD_INPUTS = {
    "syntax.yaml": ("model:\n  tensor_model_parallel_size: [1, 2\n", 3, 1, "YAML syntax error"),
    "duplicate.yaml": (
        "model:\n  tensor_model_parallel_size: 1\n  tensor_model_parallel_size: 2\n",
        3,
        3,
        "more than once",
    ),
    "bad-value.yaml": ("model:\n  tensor_model_parallel_size: eight\n", 2, 3, "valid integer"),
    "not-utf8.yaml": (b"model:\n  seq_length: \xff\n", None, None, "invalid UTF-8"),
}


def _bad_repo(repo: Path) -> list[str]:
    for name, (payload, *_) in BAD_INPUTS.items():
        path = repo / name
        if isinstance(payload, bytes):
            path.write_bytes(payload)
        else:
            path.write_text(payload, encoding="utf-8")
    (repo / "broken.yaml").write_text(BROKEN.read_text())
    return [*BAD_INPUTS, "broken.yaml", "missing.yaml"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_input_errors_in_every_format(repo: Path, fmt: str) -> None:
    files = _bad_repo(repo)
    before = {name: (repo / name).read_bytes() for name in BAD_INPUTS}
    code, out, err, seconds, rss = run_cli([*files, "--format", fmt, "--color", "never"], repo)
    assert code == 2, (code, err)
    assert seconds < MAX_SECONDS and rss < MAX_RSS_MB
    # The one stderr line per file stays, whatever the format.
    lines = err.strip().splitlines()
    assert len(lines) == len(BAD_INPUTS) + 1, err
    for name, (_, _, _, needle) in BAD_INPUTS.items():
        assert any(line.startswith(f"{name}: error: ") and needle in line for line in lines)
    assert any(line.startswith("missing.yaml: error: no such file") for line in lines)
    _assert_clean(fmt, out, err)
    expected = {name: spec[1:] for name, spec in BAD_INPUTS.items()}
    expected["missing.yaml"] = (None, None, "no such file")
    if fmt in ("text", "concise"):
        assert "broken.yaml:" in out  # the other files' findings are still reported
    elif fmt in ("json", "json-lines"):
        records = json.loads(out) if fmt == "json" else [json.loads(x) for x in out.splitlines()]
        jsonschema.validate(records, FINDINGS_SCHEMA)
        got = {
            r["file"]: (r["line"], r["column"], r["message"])
            for r in records
            if r["code"] == "E000"
        }
        assert set(got) == set(expected)
        for name, (line, column, needle) in expected.items():
            assert got[name][:2] == (line, column) and needle in got[name][2], (name, got[name])
        assert all(r["name"] == "input-error" and r["severity"] == "error" for r in records
                   if r["code"] == "E000")  # fmt: skip
        assert any(r["file"] == "broken.yaml" for r in records)
    elif fmt == "sarif":
        log = json.loads(out)
        jsonschema.Draft4Validator(
            SARIF_SCHEMA, format_checker=jsonschema.FormatChecker()
        ).validate(log)
        run0 = log["runs"][0]
        invocation = run0["invocations"][0]
        assert invocation["executionSuccessful"] is False
        notes = invocation["toolExecutionNotifications"]
        by_file = {
            n["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]: n for n in notes
        }
        assert set(by_file) == set(expected)
        for name, (line, column, needle) in expected.items():
            note = by_file[name]
            assert note["level"] == "error" and needle in note["message"]["text"]
            region = note["locations"][0]["physicalLocation"].get("region", {})
            assert (region.get("startLine"), region.get("startColumn")) == (line, column)
            descriptor = run0["tool"]["driver"]["notifications"][note["descriptor"]["index"]]
            assert descriptor["id"] == note["descriptor"]["id"] == "E000"
        assert run0["results"]  # broken.yaml's findings
    elif fmt == "github":
        errors = [line for line in out.splitlines() if "title=E000 input-error::" in line]
        assert len(errors) == len(expected)
        for name, (line, column, needle) in expected.items():
            props = f"::error file={name}"
            if line is not None:
                props += f",line={line},col={column}"
            assert any(e.startswith(props + ",title=") and needle in e for e in errors), name
    elif fmt == "gitlab":
        report = json.loads(out)
        entries = {i["location"]["path"]: i for i in report if i["check_name"] == "E000"}
        assert set(entries) == set(expected)
        for name, (line, _, needle) in expected.items():
            assert entries[name]["severity"] == "blocker" and needle in entries[name]["description"]
            assert entries[name]["location"]["lines"]["begin"] == (line or 1)
        assert len({i["fingerprint"] for i in report}) == len(report)
    elif fmt == "junit":
        root = ET.fromstring(out)
        suites = {s.get("name"): s for s in root.findall("testsuite")}
        assert set(suites) == {*expected, "broken.yaml"}
        for name, (_, _, needle) in expected.items():
            (case,) = suites[name].findall("testcase")
            error = case.find("error")
            assert error is not None and needle in error.get("message", ""), name
            assert suites[name].get("errors") == "1"
        assert root.get("errors") == str(len(expected))
        assert int(root.get("failures", "0")) > 0  # broken.yaml's errors still fail
    for name, data in before.items():
        assert (repo / name).read_bytes() == data


def _junit(repo: Path, *args: str) -> tuple[int, ET.Element]:
    code, out, _, _, _ = run_cli([*args, "--format", "junit"], repo)
    return code, ET.fromstring(out)


def test_junit_infos_pass(repo: Path) -> None:
    """An info (and a warning below --fail-on) is a passing testcase, not a failure; the
    JUnit verdict matches the exit code."""
    cfg = repo / "cfg.yaml"
    cfg.write_text("model:\n  tensor_model_parallel_size: 1\n  bogus_key: 1\n")
    code, root = _junit(repo, str(cfg), "--show-infos")
    cases = list(root.iter("testcase"))
    assert code == 0 and len(cases) == 2  # PAR003 (info), SCH001 (warning)
    assert root.get("failures") == "0" and root.find(".//failure") is None
    outs = [c.findtext("system-out") or "" for c in cases]
    assert sorted(o.split(":")[0] for o in outs) == ["info", "warning"]
    code, root = _junit(repo, str(cfg), "--fail-on", "warning")
    assert code == 1 and root.get("failures") == "1"
    assert [f.get("type") for f in root.iter("failure")] == ["warning"]
    code, root = _junit(repo, str(cfg), "--fail-on", "info")
    assert code == 1 and root.get("failures") == "2"


def test_junit_skipped_file(repo: Path) -> None:
    other = repo / "other.yaml"
    other.write_text("- just\n- a list\n")
    code, root = _junit(repo, str(other))
    assert code == 0 and root.get("skipped") == "1"
    assert root.find(".//testcase/skipped") is not None


# --- a closed pipe ------------------------------------------------------------------------


def _closed_pipe(args: list[str], cwd: Path) -> tuple[int, str]:
    """Run moe-lint with its stdout a pipe whose reader has already gone."""
    env = {k: v for k, v in os.environ.items() if k != "MOE_LINT_STRICT"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "moe_lint", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the first write
    err = proc.stderr.read().decode("utf-8", "replace")
    return proc.wait(timeout=60), err


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["rules"], 0),
        (["rules", "--format", "json"], 0),
        (["explain", "PAR001"], 0),
        ([str(BROKEN)], 1),  # check keeps its own exit code: the findings still fail the gate
        ([str(BROKEN), "--format", "sarif"], 1),
        ([str(BROKEN), "--format", "junit", "--exit-zero"], 0),
    ],
    ids=["rules", "rules-json", "explain", "check-text", "check-sarif", "check-exit-zero"],
)
def test_broken_pipe_is_quiet(tmp_path: Path, args: list[str], expected: int) -> None:
    code, err = _closed_pipe(args, tmp_path)
    assert code == expected, (code, err)
    assert err == "", err


def test_broken_pipe_keeps_input_error_code(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("model: [1\n")
    code, err = _closed_pipe(["bad.yaml", str(BROKEN), "--format", "json"], tmp_path)
    assert code == 2 and err.startswith("bad.yaml: error: ") and len(err.splitlines()) == 1
