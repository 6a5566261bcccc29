"""Hostile settings, patterns, rule packs and baselines (issue 22): what a pull request controls
besides the config itself (pyproject.toml ``[tool.moe-lint]``, file names, exclude patterns,
directives, ``--rules`` packs, ``--baseline`` files) never breaks the gate.

Each case runs the real CLI (test_hostile.run_cli / check_refused): exit 0, 1 or 2, at most one
stderr line for bad input (naming the bound when it is one), < 2 s CPU and < 300 MB peak RSS,
never exit 3 and never a hang. The bounds are in src/moe_lint/bounds.py.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from test_hostile import GOOD, MAX_RSS_MB, MAX_SECONDS, check_refused, run_cli

#: Each case runs the CLI in a process of its own to bound its CPU time and memory: slow.
pytestmark = pytest.mark.slow

BAD_YAML = "model: !!python/name:os.system\n"


def _cli(tmp_path: Path, *args: str, **kw: object) -> tuple[int, str, str]:
    """Run the CLI in ``tmp_path``: no traceback, never exit 3, within the CPU/RSS budget."""
    code, out, err, seconds, rss = run_cli(list(args), tmp_path, **kw)  # type: ignore[arg-type]
    assert "Traceback" not in err + out, err[-2000:]
    assert code in (0, 1, 2), (code, err[-2000:])
    assert seconds < MAX_SECONDS, (seconds, err[-500:])
    assert rss < MAX_RSS_MB, rss
    return code, out, err


def _one_line(err: str, *needles: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err[-3000:]
    for needle in needles:
        assert needle in lines[0], (needle, lines[0][:500])
    assert len(lines[0]) < 1_000, lines[0][:300]
    return lines[0]


def _pyproject(tmp_path: Path, text: str) -> None:
    (tmp_path / "pyproject.toml").write_text(text, encoding="utf-8")


# --------------------------------------------------------------------------- globs

LONG_NAME = "a" * 200


def test_backtracking_cli_glob(tmp_path: Path) -> None:
    """``*a*a*a*a*a*b.yaml`` against a 200-character name: a backtracking regex takes minutes."""

    def make(d: Path) -> Path:
        (d / f"{LONG_NAME}.yaml").write_text(GOOD)
        return d / "*a*a*a*a*a*b.yaml"

    check_refused(tmp_path, "glob", "", "no file matches this pattern", setup=make)


def test_backtracking_extend_exclude(tmp_path: Path) -> None:
    """The same pattern as ``extend-exclude`` is tried on every name a folder walk meets."""

    def make(d: Path) -> Path:
        _pyproject(d, '[tool.moe-lint]\nextend-exclude = ["*a*a*a*a*a*b.yaml", "x*y*z*w*v*q"]\n')
        (d / "configs").mkdir()
        (d / "configs" / f"{LONG_NAME}.yaml").write_text(BAD_YAML)
        (d / "configs" / f"{LONG_NAME}b.yaml").write_text(BAD_YAML)  # excluded
        return d / "configs"

    check_refused(tmp_path, "exclude", "", f"{LONG_NAME}.yaml: error: line 1", setup=make)


def test_backtracking_globstar_on_a_deep_tree(tmp_path: Path) -> None:
    """``**/`` twelve times over a 60-folder-deep tree: exponential in a backtracking regex."""

    def make(d: Path) -> Path:
        deep = d.joinpath(*["d"] * 60)
        deep.mkdir(parents=True)
        (deep / "x.yaml").write_text(GOOD)
        return d / ("**/" * 12 + "q.yaml")

    check_refused(tmp_path, "globstar", "", "no file matches this pattern", setup=make)


def test_globstar_exclude_on_a_deep_tree(tmp_path: Path) -> None:
    def make(d: Path) -> Path:
        _pyproject(d, '[tool.moe-lint]\nextend-exclude = ["' + "**/d/" * 30 + 'q/"]\n')
        deep = d.joinpath("tree", *["d"] * 60)
        deep.mkdir(parents=True)
        (deep / "x.yaml").write_text(BAD_YAML)
        return d / "tree"

    check_refused(tmp_path, "globstar-exclude", "", "x.yaml: error: line 1", setup=make)


@pytest.mark.parametrize(
    "pattern", ["[z-a]", "[[:alpha:]]*", "a[b--c]", "[a&&b]", "[", "[!]", "x[]", "\\\\"]
)
def test_odd_exclude_patterns(tmp_path: Path, pattern: str) -> None:
    """Invalid as regexes (exit 3) or warned about (a FutureWarning on stderr): as globs they
    are patterns like any other (``[z-a]`` matches nothing, as in fnmatch)."""
    escaped = pattern.replace("\\", "\\\\")
    _pyproject(
        tmp_path,
        f'[tool.moe-lint]\nextend-exclude = ["{escaped}"]\n'
        f'[tool.moe-lint.per-file-ignores]\n"{escaped}" = ["PAR004"]\n',
    )
    (tmp_path / "c.yaml").write_text(BAD_YAML)
    for args in (["."], ["c.yaml"], ["--extend-exclude", pattern, "."], [f"{pattern}.yaml"]):
        code, _, err = _cli(tmp_path, *args)
        assert "Warning" not in err, err
        assert code == 2, (args, err)
        _one_line(err)


def test_long_patterns_are_refused(tmp_path: Path) -> None:
    long = "*a" * 400 + "b"
    _pyproject(tmp_path, f'[tool.moe-lint]\nextend-exclude = ["{long}"]\n')
    (tmp_path / "c.yaml").write_text(GOOD)
    code, _, err = _cli(tmp_path, ".")
    assert code == 2
    _one_line(err, "bounds.MAX_PATTERN_CHARS")
    code, _, err = _cli(tmp_path, "--isolated", "--extend-exclude", long, ".")
    assert code == 2
    _one_line(err, "bounds.MAX_PATTERN_CHARS")
    code, _, err = _cli(tmp_path, "--isolated", long + ".yaml")
    assert code == 2
    _one_line(err, "bounds.MAX_PATTERN_CHARS")


# --------------------------------------------------------------------------- pyproject settings

_DEEP_ARRAY = "[" * 5_000 + "]" * 5_000
_DEEP_TABLE = "{a = " * 2_000 + "1" + "}" * 2_000

SETTINGS: list[tuple[str, str, str]] = [
    # model paths the OS cannot use: ~nosuchuser (RuntimeError), a NUL (ValueError), a name
    # past NAME_MAX (OSError); each exited 3.
    ("model-tilde", 'model = "~nosuchuser/x"', "not a usable path"),
    ("model-nul", 'model = "a\\u0000b/config.json"', "no model preset or HF config.json"),
    ("model-too-long", f'model = "{"m" * 5_000}/config.json"', "not a usable path"),
    ("gpu-list", 'gpu = ["h100"]', "gpu must be a string"),
    ("bridge-bool", "bridge = true", "bridge must be a string"),
    ("gpus-date", "gpus = 1979-05-27", "not a string, number, boolean, list or table"),
    # per-file-ignores of the wrong shape: a string was split into one-letter selectors, a
    # number raised TypeError (exit 3).
    ("pfi-string", '[tool.moe-lint.per-file-ignores]\n"*.yaml" = "PAR001"', "must be a list"),
    ("pfi-int", '[tool.moe-lint.per-file-ignores]\n"*.yaml" = 3', "must be a list of strings"),
    ("pfi-table", '[tool.moe-lint.per-file-ignores]\n"*.yaml" = {a = 1}', "must be a list"),
    ("pfi-not-table", "per-file-ignores = 3", "per-file-ignores must be a table"),
    ("per-file-list", "per-file = [1]", "per-file must be a table"),
    ("per-file-value", '[tool.moe-lint.per-file]\n"*.yaml" = 3', "may only set"),
    ("pfi-unknown-code", '[tool.moe-lint.per-file-ignores]\n"x/*" = ["NOPE999"]',
     "unknown rule selector 'NOPE999'"),
    # Nesting tomllib's recursive parser cannot follow raised RecursionError (exit 3), in
    # moe-lint's table or any other.
    ("deep-array", f"x = {_DEEP_ARRAY}", "nested too deep"),
    ("deep-inline-table", f"x = {_DEEP_TABLE}", "nested too deep"),
    ("deep-elsewhere", f"[tool.other]\nx = {_DEEP_ARRAY}\n[tool.moe-lint]", "nested too deep"),
    ("deep-dotted", "[tool.moe-lint.per-file.'x']\n" + "a." * 3_000 + "b = 1",
     "nesting deeper than 64 levels"),
    # No list was bounded: 200,000 selectors took 10 s, 20,000 per-file-ignores globs 19 s.
    ("select-60k", "select = [" + ", ".join(['"PAR"'] * 60_000) + "]",
     "bounds.MAX_SETTING_VALUES"),
    ("pfi-5k", "[tool.moe-lint.per-file-ignores]\n"
     + "".join(f'"x{i}/*.yaml" = ["PAR001"]\n' for i in range(5_000)), "bounds.MAX_SETTING_VALUES"),
    ("per-file-3k", "".join(f'[tool.moe-lint.per-file."x{i}"]\ngpus = 8\n' for i in range(3_000)),
     "bounds.MAX_SETTING_VALUES"),
    ("long-strings", "ignore = [" + ", ".join([f'"{"P" * 30_000}"'] * 3) + "]",
     "bounds.MAX_SETTING_CHARS"),
    ("huge-file", "select = [" + ", ".join(['"PAR001"'] * 70_000) + "]",
     "bounds.MAX_SETTINGS_BYTES"),
    ("long-glob", f'extend-exclude = ["{"*a" * 300}"]', "bounds.MAX_PATTERN_CHARS"),
    ("long-pfi-glob", f'[tool.moe-lint.per-file-ignores]\n"{"*a" * 300}" = []',
     "bounds.MAX_PATTERN_CHARS"),
    # A key holding a line break printed a two-line error.
    ("newline-key", '"a\\nb" = 1', "unknown setting(s) 'a\\nb'"),
    ("many-unknown", "".join(f"k{i} = 1\n" for i in range(1_500)), "and 1,495 more"),
    ("format-xml", 'format = "xml"', "format must be one of"),
    ("memory-nan", "[tool.moe-lint.memory]\nrouting_imbalance = nan", "must be a finite number"),
    ("memory-inf", "[tool.moe-lint.memory]\nnccl_gib = inf", "must be a finite number"),
    ("memory-bool", "[tool.moe-lint.memory]\nnccl_gib = true", "must be a number"),
    ("memory-flag", '[tool.moe-lint.memory]\nflash_attention = "maybe"', "must be true or false"),
    ("rules-nul", 'rules = ["a\\u0000b.yaml"]', "rules"),
    # under the table: a pyproject with no [tool.moe-lint] table is not parsed at all
    # (test_pyproject_table.py), so its bytes are not moe-lint's to refuse
    ("invalid-utf8", "gpus = 8  # \udcff", "invalid UTF-8"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "text", "needle"), SETTINGS, ids=[c[0] for c in SETTINGS])
def test_hostile_pyproject(tmp_path: Path, name: str, text: str, needle: str) -> None:
    body = text if text.startswith(("[tool.", "# ")) else f"[tool.moe-lint]\n{text}"
    (tmp_path / "pyproject.toml").write_bytes(
        f"# moe-lint\n{body}\n".encode("utf-8", "surrogateescape")
    )
    (tmp_path / "c.yaml").write_text(GOOD)
    code, _, err = _cli(tmp_path, "c.yaml")
    assert code == 2, err[-500:]
    _one_line(err, needle)


@pytest.mark.parametrize("args", [["check", "--format", "json"], ["estimate"]])
def test_bad_format_setting_is_refused_whatever_the_command(
    tmp_path: Path, args: list[str]
) -> None:
    """``format = "xml"`` was only noticed when no --format overrode it (and never by
    ``estimate``): a setting is checked where it is read."""
    _pyproject(tmp_path, '[tool.moe-lint]\nformat = "xml"\n')
    (tmp_path / "c.yaml").write_text(GOOD)
    code, _, err = _cli(tmp_path, *args, "c.yaml")
    assert code == 2
    _one_line(err, "format must be one of")


def test_tool_that_is_not_a_table(tmp_path: Path) -> None:
    """``tool = 1`` (no [tool.moe-lint] table at all) read .get() off an int: exit 3."""
    _pyproject(tmp_path, "# moe-lint\ntool = 1\n")
    (tmp_path / "c.yaml").write_text(GOOD)
    code, _, err = _cli(tmp_path, "c.yaml")
    assert code == 0 and err == "", err


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--model", "~nosuchuser/x"], "not a usable path"),
        (["--select", ",".join(["PAR"] * 3_000)], "bounds.MAX_SETTING_VALUES"),
        (["--extend-exclude", "*a" * 300], "bounds.MAX_PATTERN_CHARS"),
        (["--memory", "routing_imbalance=nan"], "must be a finite number"),
        (["--memory", "x" * 100_000], "bounds.MAX_SETTING_CHARS"),
        (["--memory", "x" * 1_000], "expected NAME=VALUE"),
        (["--format", "json", "--ignore", "Z" * 50_000], "unknown rule selector"),
    ],
    ids=[
        "model-tilde",
        "select-3k",
        "long-glob",
        "memory-nan",
        "memory-long",
        "memory-no-value",
        "long-selector",
    ],
)
def test_hostile_command_line_settings(tmp_path: Path, args: list[str], needle: str) -> None:
    (tmp_path / "c.yaml").write_text(GOOD)
    code, _, err = _cli(tmp_path, "c.yaml", "--isolated", *args)
    assert code == 2, err[-500:]
    _one_line(err, needle)


def test_hostile_directive(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text(GOOD + "# moe-lint: model=~nosuchuser/x\n")
    code, _, err = _cli(tmp_path, "c.yaml", "--isolated")
    assert code == 2
    _one_line(err, "directive", "not a usable path")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
@pytest.mark.parametrize(("name", "option"), [("pyproject.toml", "--config"),
                                              ("b.json", "--baseline")])  # fmt: skip
def test_a_fifo_setting_file_is_refused_not_waited_on(
    tmp_path: Path, name: str, option: str
) -> None:
    os.mkfifo(tmp_path / name)
    (tmp_path / "c.yaml").write_text(GOOD)
    code, _, err = _cli(tmp_path, "c.yaml", option, name)
    assert code == 2
    _one_line(err, "not a regular file (a FIFO)")


# --------------------------------------------------------------------------- rule packs


def _rule_line(i: int, when: str = "cp > 1") -> str:
    code = "".join(chr(65 + (i // 1000 // 26**k) % 26) for k in range(3)) + f"{i % 1000:03d}"
    return (
        f"- {{code: {code}, name: hostile-{i}, severity: info, summary: s, "
        f"path: model.context_parallel_size, when: '{when}', message: m, source: s, "
        "docs: {what: a, why: b, example: c, use_instead: d}}\n"
    )


def _pack(d: Path, body: str | bytes, name: str = "pack.yaml") -> Path:
    path = d / name
    if isinstance(body, bytes):
        path.write_bytes(body)
    else:
        path.write_text(body, encoding="utf-8")
    return path


def _laughs() -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    return "\n".join(lines) + "\nrules: *a8\n"


PACKS: list[tuple[str, str | bytes, str]] = [
    # 20,000 rules took 6.4 s and 270 MB.
    ("20k-rules", "rules:\n" + "".join(_rule_line(i) for i in range(20_000)),
     "bounds.MAX_PACK_BYTES"),
    ("600-rules", "rules:\n" + "".join(_rule_line(i) for i in range(600)),
     "bounds.MAX_PACK_RULES"),
    ("billion-laughs", _laughs(), "alias expansion"),
    ("deep", "rules: " + "[" * 10_000 + "]" * 10_000 + "\n", "nesting"),
    ("python-tag", "rules: !!python/name:os.system\n", "unsupported YAML tag"),
    ("two-documents", "rules: []\n---\nrules: []\n", "more than one YAML document"),
    ("not-utf8", b"rules: [\xff]\n", "not UTF-8"),
    ("long-code", "rules:\n- {code: " + "X" * 300_000 + "}\n", "must look like ABC123"),
    ("long-key", "rules:\n- ? " + "k" * 100_000 + "\n  : 1\n", "unknown rule keys"),
    ("long-let", yaml.safe_dump({"rules": [{**yaml.safe_load(_rule_line(1))[0],
                                             "let": {"v" * 100_000: "1 +"}}]}),
     "syntax error ("),
    # Found by bench/fuzz.py --target packs: an empty (falsy) `when:` compiled to no condition
    # at all, and the rule then failed an assertion when it ran (exit 3).
    ("empty-when", "rules:\n" + _rule_line(1, ""), "when: empty expression"),
    ("expression-nodes", "rules:\n" + "".join(
        _rule_line(i, "cp > 1 and tp >= 1 and (pp + 1) * 2 > 0") for i in range(500)),
     "bounds.MAX_PACK_NODES"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "body", "needle"), PACKS, ids=[c[0] for c in PACKS])
def test_hostile_rule_pack(tmp_path: Path, name: str, body: str | bytes, needle: str) -> None:
    (tmp_path / "c.yaml").write_text(GOOD)
    pack = _pack(tmp_path, body)
    for args in (["c.yaml", "--rules", str(pack)], ["rules", "--rules", str(pack)]):
        code, _, err = _cli(tmp_path, *args)
        assert code == 2, err[-500:]
        _one_line(err, needle)


@pytest.mark.parametrize("kind", ["fifo", "device", "directory"])
def test_rule_pack_that_is_not_a_file(tmp_path: Path, kind: str) -> None:
    """``--rules FIFO`` blocked in open() for a writer that never came."""
    if kind == "fifo":
        if not hasattr(os, "mkfifo"):
            pytest.skip("no FIFOs on this platform")
        os.mkfifo(tmp_path / "pack.yaml")
        pack, needle = tmp_path / "pack.yaml", "not a regular file (a FIFO)"
    elif kind == "device":
        pack, needle = Path(os.devnull), "not a regular file (a character device)"
    else:
        (tmp_path / "pack.yaml").mkdir()
        pack, needle = tmp_path / "pack.yaml", "is a directory"
    (tmp_path / "c.yaml").write_text(GOOD)
    code, _, err = _cli(tmp_path, "c.yaml", "--rules", str(pack))
    assert code == 2
    _one_line(err, needle)
    _pyproject(tmp_path, f'[tool.moe-lint]\nrules = ["{pack}"]\n')
    code, _, err = _cli(tmp_path, "c.yaml")
    assert code == 2
    _one_line(err, needle)


def test_packs_at_their_bounds_load_in_budget(tmp_path: Path) -> None:
    """MAX_PACK_RULES rules, two thirds of MAX_PACK_NODES, split over two packs: loaded,
    compiled and run within the CPU and memory budget."""
    when = "cp > 1 and tp >= 1"  # 13 syntax nodes: 6,500 in all
    half = 250
    first = _pack(tmp_path, "rules:\n" + "".join(_rule_line(i, when) for i in range(half)), "a.yml")
    rest = "".join(_rule_line(i, when) for i in range(half, 2 * half))
    second = _pack(tmp_path, "rules:\n" + rest, "b.yml")
    (tmp_path / "c.yaml").write_text(GOOD)
    code, out, err = _cli(tmp_path, "c.yaml", "--rules", str(first), "--rules", str(second),
                          "--format", "concise", "--show-infos")  # fmt: skip
    assert code == 0, err
    assert out.count("hostile-") == 0 and out.count(" ZZZ") == 0  # infos do not fail the run
    assert out.count(": AAA") + out.count(": BAA") > 0, out[-500:]


def test_a_falsy_when_is_an_expression(tmp_path: Path) -> None:
    """``when: 0`` is the expression ``0`` (never true), not a rule without a condition."""
    pack = _pack(tmp_path, "rules:\n" + _rule_line(1).replace("when: 'cp > 1'", "when: 0"))
    (tmp_path / "c.yaml").write_text(GOOD)
    code, out, err = _cli(tmp_path, "c.yaml", "--rules", str(pack), "--format", "concise")
    assert code == 0 and "AAA001" not in out and err == "", err


# --------------------------------------------------------------------------- baselines

BASELINES: list[tuple[str, str, str]] = [
    ("deep", "[" * 100_000 + "]" * 100_000, "not a moe-lint baseline file"),
    ("deep-object", '{"findings": ' + "[" * 5_000 + "]" * 5_000 + "}", "not a moe-lint baseline"),
    ("count-infinity", '{"findings": [{"code": "A", "file": "b", "path": "c", "count": Infinity}]}',
     "not a moe-lint baseline file"),
    ("count-string", '{"findings": [{"code": "A", "file": "b", "path": "c", "count": "9"}]}',
     "not a moe-lint baseline file"),
    ("entries-not-a-list", '{"findings": {"a": 1}}', "not a moe-lint baseline file"),
    ("entry-not-an-object", '{"findings": ["x"]}', "not a moe-lint baseline file"),
    ("huge-number", '{"findings": [{"code": "A", "file": "b", "path": "c", "count": '
     + "9" * 5_000 + "}]}", "not a moe-lint baseline file"),
    ("too-large", '{"findings": [' + " " * 9_000_000 + "]}", "bounds.MAX_BYTES"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "body", "needle"), BASELINES, ids=[c[0] for c in BASELINES])
def test_hostile_baseline(tmp_path: Path, name: str, body: str, needle: str) -> None:
    (tmp_path / "b.json").write_text(body)
    (tmp_path / "c.yaml").write_text(GOOD)
    code, _, err = _cli(tmp_path, "c.yaml", "--baseline", "b.json")
    assert code == 2
    _one_line(err, needle)


def test_large_baseline_in_budget(tmp_path: Path) -> None:
    """A baseline near bounds.MAX_BYTES (about 150,000 entries) is read within the budget."""
    entry = '{"code": "PAR004", "file": "x%d.yaml", "path": "model.context_parallel_size"}'
    body = (
        '{"moe-lint-baseline": 1, "findings": ['
        + ", ".join(entry % i for i in range(100_000))
        + "]}"
    )
    (tmp_path / "b.json").write_text(body)
    (tmp_path / "c.yaml").write_text(GOOD)
    code, _, err = _cli(tmp_path, "c.yaml", "--baseline", "b.json")
    assert code == 0, err[-500:]


# --------------------------------------------------------------------------- file names


def test_a_file_name_with_a_line_break_is_one_line(tmp_path: Path) -> None:
    """A name holding ``\\n`` printed its error as two lines (the escaping is per line)."""
    (tmp_path / "bad\nname.yaml").write_text(BAD_YAML)
    (tmp_path / "good.yaml").write_text(GOOD)
    code, _, err = _cli(tmp_path, ".")
    assert code == 2
    _one_line(err, "bad\\nname.yaml: error: line 1")
    code, _, err = _cli(tmp_path, "good.yaml", "--isolated", "--model", "x\ny")
    assert code == 2
    _one_line(err, "x\\ny")
