"""Data-driven rule tests: tests/fixtures/rules/<CODE>.yaml holds pass / fail / fix cases.

Format (validated here, so a typo in a fixture fails loudly):

    rule: PAR001            # the rule under test
    also: [CP001]           # optional: other rules enabled alongside (e.g. for suppressions)
    cases:
      some_case:
        args: --gpus 100    # optional cluster/model arguments, as on the command line
        pass: | ...         # YAML that must give no finding of the rule
      other_case:
        args: --gpus 100
        fail: | ...         # YAML that must give findings of the rule
        expect:             # optional: exactly these findings of the rule (path, line, message)
          - {at: model.context_parallel_size, line: 3, message: "not divisible"}
        fix: | ...          # optional: the file after --fix (unsafe: true for --unsafe-fixes);
                            # it must then give no finding of the rule. A fail case without
                            # fix must not be changed by --fix.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import REPO, run_lint, skip_without_mlm_input
from moe_lint.engine.catalogue import Catalogue
from moe_lint.output.fix import fix_loop

FIXTURES = REPO / "tests" / "fixtures" / "rules"
_CASE_KEYS = {"args", "pass", "fail", "expect", "fix", "unsafe", "overrides"}
_EXPECT_KEYS = {"at", "line", "column", "message", "severity", "derivation"}


def _load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict) and set(data) <= {"rule", "also", "cases"}, path
    assert data["rule"] == path.stem, f"{path.name} must test rule {path.stem}"
    for name, case in data["cases"].items():
        assert set(case) <= _CASE_KEYS, f"{path.name}:{name}: unknown keys {set(case) - _CASE_KEYS}"
        assert ("pass" in case) != ("fail" in case), f"{path.name}:{name}: give pass or fail"
        for item in case.get("expect", []):
            assert set(item) <= _EXPECT_KEYS, f"{path.name}:{name}: bad expect {item}"
    return data


def _cases() -> list[Any]:
    params = []
    for path in sorted(FIXTURES.glob("*.yaml")):
        data = _load(path)
        for name, case in data["cases"].items():
            params.append(pytest.param(data, case, id=f"{data['rule']}-{name}"))
    return params


@pytest.mark.parametrize(("data", "case"), _cases())
def test_rule_case(catalogue: Catalogue, data: dict[str, Any], case: dict[str, Any]) -> None:
    from moe_lint.config.overrides import parse_override

    code = data["rule"]
    skip_without_mlm_input(code)
    select = [code, *data.get("also", [])]
    overrides = [parse_override(o) for o in case.get("overrides", [])]
    text = case.get("pass", case.get("fail"))
    result = run_lint(catalogue, text, select, case.get("args"), overrides)
    assert result.error is None, result.error
    mine = [f for f in result.findings if f.code == code]
    if "pass" in case:
        assert mine == [], [f.message for f in mine]
        return
    assert mine, f"{code} did not fire"
    if "expect" in case:
        assert len(mine) == len(case["expect"]), [f.message for f in mine]
        for finding, want in zip(mine, case["expect"], strict=True):
            if "at" in want:
                assert finding.path == want["at"]
            if "line" in want:
                assert finding.line == want["line"]
            if "column" in want:
                assert finding.column == want["column"]
            if "message" in want:
                assert want["message"] in finding.message
            if "severity" in want:
                assert finding.severity == want["severity"]
            if "derivation" in want:
                assert want["derivation"] in (finding.derivation or "")

    def relint(new_text: str) -> list[Any]:
        again = run_lint(catalogue, new_text, select, case.get("args"), overrides)
        assert again.error is None, again.error
        return again.findings

    fixed, remaining, _ = fix_loop(text, relint, bool(case.get("unsafe")))
    if "fix" in case:
        assert fixed == case["fix"]
        assert [f for f in remaining if f.code == code] == []
    else:
        assert fixed == text, "a fail case without 'fix' must not be changed by --fix"


def test_every_rule_has_fixtures(catalogue: Catalogue) -> None:
    missing = []
    for rule in catalogue.rules:
        path = FIXTURES / f"{rule.code}.yaml"
        if not path.exists():
            missing.append(rule.code)
            continue
        cases = _load(path)["cases"].values()
        assert any("pass" in c for c in cases), f"{rule.code}: needs a pass case"
        assert any("fail" in c for c in cases), f"{rule.code}: needs a fail case"
        if rule.fix is not None and rule.fix.applicability != "display-only":
            assert any("fix" in c for c in cases), f"{rule.code}: fixable rule needs a fix case"
    assert missing == []


def test_no_orphan_fixtures(catalogue: Catalogue) -> None:
    for path in FIXTURES.glob("*.yaml"):
        assert path.stem in catalogue.by_code, f"{path.name} tests no registered rule"
