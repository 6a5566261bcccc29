"""Issue 10: a rule pack from the linted repository (``--rules``, pyproject ``rules``) is
untrusted data. Expressions that would hang the linter or take its memory stop the run with one
line naming the rule (exit code 2), in bounded CPU time and memory: at load time when the
problem shows without a config, else when the rule is evaluated (never a rule silently
skipped). Each case runs the real CLI (``test_hostile.run_cli`` measures CPU and peak RSS)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import REPO
from test_hostile import MAX_RSS_MB, MAX_SECONDS, run_cli

#: Each case runs the CLI in a process of its own to bound its CPU time and memory: slow.
pytestmark = pytest.mark.slow

EXAMPLE = REPO / "examples" / "dsv3_128k_h100.yaml"


def _rule(**fields: Any) -> dict[str, Any]:
    rule: dict[str, Any] = {
        "code": "XTR001",
        "name": "hostile-rule",
        "severity": "warning",
        "summary": "test rule",
        "path": "model.context_parallel_size",
        "when": "cp > 1",
        "message": "CP {cp}",
        "source": "test",
        "docs": {"what": "w", "why": "y", "example": "model: {}", "use_instead": "model: {}"},
    }
    rule.update(fields)
    return rule


def _big_dict() -> str:
    # Past the expression's character limit, inside bounds.MAX_PACK_BYTES.
    return "len({" + ", ".join(f"{i}: {i}" for i in range(2_000)) + "}) > 0"


def _doubling_lets() -> dict[str, str]:
    lets = {"a0": "str(cp) * 10000"}
    for i in range(1, 40):
        lets[f"a{i}"] = f"a{i - 1} + a{i - 1}"
    return lets


#: (id, rule fields, needle in the one error line, found at load time?)
CASES: list[tuple[str, dict[str, Any], str, bool]] = [
    ("power-of-power", {"when": "(10**10000)**10000 > 1"}, "bits", True),
    ("power-of-config", {"when": "cp ** 100000000 > 1"}, "bits", False),
    (
        "product-chain",
        {"let": {"b": "10**4000 * 10**4000 * 10**4000 * 10**4000 * 10**4000"}, "when": "b > cp"},
        "bits",
        True,
    ),
    ("printf-width", {"when": "len('%0999999999d' % 0) > 1"}, "formatting with %", True),
    ("printf-width-message", {"message": "CP {cp:0999999999d}"}, "width or precision", True),
    ("repeat", {"when": "len('ab' * 100000000) > 1"}, "elements and characters", True),
    ("repeat-config", {"when": "len(str(cp) * 100000000) > 1"}, "elements and characters", False),
    (
        "nested-comprehension",
        {
            "when": "len([1 for a in divisors(720720) for b in "
            "divisors(720720) for c in divisors(720720)]) > 0"
        },
        "cost budget",
        True,
    ),
    (
        "nested-comprehension-config",
        {"when": "len([1 for a in str(cp) * 50000 for b in str(cp) * 50000]) > 0"},
        "cost budget",
        False,
    ),
    (
        "generator-in-any",
        {"when": "any(a + b == 'x' for a in str(cp) * 45000 for b in str(cp) * 45000)"},
        "cost budget",
        False,
    ),
    (
        "shared-items-joined",
        {"when": "len(join([str(cp) * 50000 for x in str(cp) * 50000])) > 0"},
        "cost budget",
        False,
    ),
    (
        "doubling-lets",
        {"let": _doubling_lets(), "when": "len(a39) > 0"},
        "characters (limit 100,000)",
        False,
    ),
    ("round-digits", {"when": "round(cp, -1000000) == 0"}, "round()", False),
    ("huge-dict-literal", {"when": _big_dict()}, "characters (limit", True),
    ("many-nodes", {"when": "+".join(["cp"] * 2500) + " > 0"}, "syntax nodes", True),
    ("deep-nesting", {"when": "-" * 5000 + "cp > 0"}, "nesting", True),
    ("deep-parens", {"when": "(" * 300 + "cp" + ")" * 300 + " > 0"}, "expression", True),
    ("bound-name-shadows-function", {"when": "[len for len in [cp]] == [1]"}, "shadows", True),
    ("bound-name-shadows-fact", {"when": "any(tp for tp in [0])"}, "shadows", True),
    ("bound-name-underscore", {"when": "[2 * 3 for _mul in [max]] == [6]"}, "not allowed", True),
    ("bound-name-outer-scope", {"when": "[x for x in [cp]] == [x]"}, "unknown name 'x'", True),
    ("bound-name-twice", {"when": "[a for a, a in [(1, 2)]] == [1]"}, "bound twice", True),
    (
        "bound-attribute-target",
        {"when": "[1 for model.seq_length in [cp]] == [1]"},
        "plain names",
        True,
    ),
    ("template-private-field", {"message": "CP {env_vars._config}"}, "not a config field", True),
    ("template-private-name", {"message": "CP {_pow}"}, "placeholder", True),
    ("bytes-constant", {"when": "len(b'x') > 0"}, "bytes", True),
]


def _write_pack(tmp_path: Path, fields: dict[str, Any]) -> Path:
    pack = tmp_path / "pack.yaml"
    pack.write_text(yaml.safe_dump({"rules": [_rule(**fields)]}, width=10**9, sort_keys=False))
    return pack


@pytest.mark.parametrize(
    ("fields", "needle", "at_load"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_hostile_expression_is_one_line_exit_2(
    tmp_path: Path, fields: dict[str, Any], needle: str, at_load: bool
) -> None:
    pack = _write_pack(tmp_path, fields)
    target = tmp_path / "c.yaml"
    shutil.copy(EXAMPLE, target)
    before = target.read_bytes()
    for mode in ([], ["--fix"]):
        code, out, err, cpu, rss = run_cli(
            [str(target), "--gpus", "256", "--rules", str(pack), "--select", "XTR001", *mode],
            tmp_path,
        )
        lines = err.splitlines()
        assert code == 2, (code, out, err)
        assert len(lines) == 1, err
        assert "XTR001" in lines[0] and needle in lines[0], lines[0]
        assert "Traceback" not in err and len(lines[0]) < 400
        if at_load:
            assert lines[0].startswith("moe-lint: error: pack.yaml[0] XTR001"), lines[0]
        else:
            assert f"{target}: rule XTR001 (hostile-rule, pack pack)" in lines[0], lines[0]
        assert cpu < MAX_SECONDS, f"{cpu:.2f} s CPU"
        assert rss < MAX_RSS_MB, f"{rss:.0f} MB"
        assert target.read_bytes() == before


def test_alias_bomb_in_a_pack_is_not_expanded(tmp_path: Path) -> None:
    """``when:`` given as a nested alias structure is refused, not turned into a string: a
    pack is read under a config's YAML bounds, so the aliases stop at bounds.MAX_NODES."""
    lines = ['x0: &x0 ["a", "a", "a", "a", "a", "a", "a", "a", "a", "a"]']
    lines += [f"x{i}: &x{i} [" + ", ".join([f"*x{i - 1}"] * 10) + "]" for i in range(1, 9)]
    body = yaml.safe_dump({"rules": [_rule()]}, width=10**9, sort_keys=False).replace(
        "when: cp > 1", "when: *x8"
    )
    pack = tmp_path / "pack.yaml"
    pack.write_text("\n".join(lines) + "\n" + body)
    code, _, err, cpu, rss = run_cli([str(EXAMPLE), "--rules", str(pack)], tmp_path)
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "alias expansion exceeds" in err and "pack.yaml" in err
    assert cpu < MAX_SECONDS and rss < MAX_RSS_MB


def test_normal_comprehensions_still_work(tmp_path: Path) -> None:
    """Bounded is not crippled: nested comprehensions, joins and shared names within budget
    (the example has CP 32 and TP 1)."""
    fields = {
        "let": {
            "pairs": "[(a, b) for a in divisors(cp) for b in divisors(tp) if a * b <= 64]",
            "shown": "join([str(a) + 'x' + str(b) for a, b in pairs[:3]])",
        },
        "when": "len(pairs) > 0 and all(a >= 1 for a, b in pairs)",
        "message": "CP {cp}: {shown}",
    }
    pack = _write_pack(tmp_path, fields)
    code, out, err, _, _ = run_cli(
        [str(EXAMPLE), "--gpus", "256", "--rules", str(pack), "--select", "XTR001"], tmp_path
    )
    assert code == 0 and "XTR001" in out and "CP 32: 1x1, 2x1, 4x1" in out, (out, err)


def test_over_budget_in_a_worker_is_the_same_one_line(tmp_path: Path) -> None:
    """With 48+ files the rules run in forked workers: the error still stops the run with one
    line naming the rule (exit 2), not an internal error or one line per file."""
    pack = _write_pack(tmp_path, {"when": "len(str(cp) * 100000000) > 1"})
    files = []
    for i in range(60):
        target = tmp_path / f"c{i:02d}.yaml"
        shutil.copy(EXAMPLE, target)
        files.append(target.name)
    code, _, err, _, rss = run_cli(
        [*files, "--rules", str(pack), "--select", "XTR001"], tmp_path, {"MOE_LINT_JOBS": "2"}
    )
    lines = err.splitlines()
    assert code == 2 and len(lines) == 1, err
    assert "rule XTR001 (hostile-rule, pack pack): a repetition" in lines[0]
    assert rss < MAX_RSS_MB


def test_shipped_rule_over_budget_refuses_the_file_not_the_run(tmp_path: Path) -> None:
    """moe-lint's own rules only pass the budget on a huge config value (found by bench/fuzz.py:
    OPT002 joins the optimizer name into its message): that file is an input error naming the
    rule, and the other files are still linted."""
    huge = tmp_path / "huge.yaml"
    huge.write_text(
        "optimizer:\n  use_precision_aware_optimizer: true\n  optimizer: " + "x" * 100_000 + "\n"
    )
    shutil.copy(EXAMPLE, tmp_path / "good.yaml")
    code, out, err, seconds, rss = run_cli(
        [str(huge), "good.yaml", "--format", "concise"], tmp_path
    )
    assert code == 2, (out, err)
    assert err.splitlines() == [
        f"{huge}: error: a config value is too large for rule OPT002 "
        "(precision-aware-optimizer-prerequisites) to check: a string would have 100,017 "
        "characters (limit 100,000)"
    ]
    assert "good.yaml:" in out  # the other file's findings are still reported
    assert seconds < MAX_SECONDS and rss < MAX_RSS_MB
