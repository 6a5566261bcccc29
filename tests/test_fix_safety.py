"""Fixes never make things worse: a fix that would add an error or warning is not applied.

The mechanism is tested with a test-only rule pack (tests/data/packs/fix-safety.yaml) whose
fixes add findings on purpose, through the fix loop and through the CLI; then, as a property,
over every fixture fail case and every corpus file with all the real rules: after ``--fix``
(and ``--unsafe-fixes``) the number of errors, and of errors and warnings, never grows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import DATA, REPO, load_tool, run_lint, run_main
from moe_lint.engine.catalogue import Catalogue, load_catalogue
from moe_lint.engine.findings import Finding
from moe_lint.errors import InputError
from moe_lint.output.fix import FixOutcome, added_problems, run_fixes

PACK = DATA / "packs" / "fix-safety.yaml"


@pytest.fixture(scope="module")
def pack_catalogue() -> Catalogue:
    return load_catalogue(extra_packs=[PACK], plugins=False)


def _fix(catalogue: Catalogue, text: str, unsafe: bool = False) -> tuple[FixOutcome, int]:
    """Run the fix loop with only the test pack's rules; (outcome, number of re-lints)."""
    relints = 0

    def lint(new: str) -> list[Finding]:
        nonlocal relints
        relints += 1
        return run_lint(catalogue, new, ["TS"]).findings

    first = run_lint(catalogue, text, ["TS"])
    assert first.error is None, first.error
    return run_fixes(text, lint, unsafe, first.findings), relints


def _codes(findings: list[Finding]) -> list[str]:
    return sorted(f.code for f in findings)


def test_fix_that_adds_an_error_is_refused_and_the_rest_applied(
    pack_catalogue: Catalogue,
) -> None:
    text = "model:\n  moe_router_topk: 3   # keep me\n  num_layers: 7\n"
    outcome, relints = _fix(pack_catalogue, text)
    assert outcome.text == "model:\n  moe_router_topk: 3   # keep me\n  num_layers: 8\n"
    assert _codes(outcome.applied) == ["TSA002"]
    [refusal] = outcome.refused
    assert refusal.finding.code == "TSA001"
    assert refusal.reason == "it would add error TSB001 at model.moe_router_topk: TSB001 fired"
    assert _codes(outcome.remaining) == ["TSA001"]
    # Pass 1: the batch (both fixes), then each fix on its own; pass 2 tries the refused fix
    # once more on the new text (other fixes change what it does), refuses it and stops.
    assert relints == 4


def test_unsafe_fix_that_adds_an_error_is_refused(pack_catalogue: Catalogue) -> None:
    text = "model:\n  num_attention_heads: 3\n"
    safe, relints = _fix(pack_catalogue, text)
    assert safe.text == text and safe.refused == [] and relints == 0  # not offered: no re-lint
    unsafe, _ = _fix(pack_catalogue, text, unsafe=True)
    assert unsafe.text == text
    assert [r.finding.code for r in unsafe.refused] == ["TSA003"]
    assert "TSB002" in unsafe.refused[0].reason


def test_error_becoming_a_warning_of_its_family_is_no_worse(pack_catalogue: Catalogue) -> None:
    outcome, relints = _fix(pack_catalogue, "model:\n  hidden_size: 100\n")
    assert outcome.text == "model:\n  hidden_size: 200\n"
    assert _codes(outcome.remaining) == ["TSC002"] and outcome.refused == []
    assert relints == 1  # the batch passed: one re-lint, no fix-by-fix trial


def test_fixes_fine_alone_but_not_together_keep_the_first(pack_catalogue: Catalogue) -> None:
    text = "model:\n  ffn_hidden_size: 1\n  kv_channels: 1\n"
    outcome, _ = _fix(pack_catalogue, text)
    assert outcome.text == "model:\n  ffn_hidden_size: 2\n  kv_channels: 1\n"
    assert _codes(outcome.applied) == ["TSD001"]
    assert [r.finding.code for r in outcome.refused] == ["TSD002"]
    assert "TSE001" in outcome.refused[0].reason
    again, _ = _fix(pack_catalogue, outcome.text)
    assert again.text == outcome.text  # fixing the result again changes nothing


def test_fix_that_breaks_loading_is_refused() -> None:
    """A fix whose text no longer loads is refused with the loader's message."""
    finding = Finding("X001", "x", "error", "m", "model.a", "f", 2, 6, 2, 7)
    from moe_lint.engine.findings import Edit

    finding.applicability, finding.edits = "safe", [Edit(10, 11, "[", 2, 6, 2, 7)]

    def lint(text: str) -> list[Finding]:
        raise InputError("line 2, column 6: YAML syntax error: boom")

    outcome = run_fixes("model:\n  a: 1\n", lint, False, [finding])
    assert outcome.text == "model:\n  a: 1\n"
    assert outcome.refused[0].reason.startswith("the fixed file would not load: line 2")


def test_added_problems_matches_by_family_path_and_severity() -> None:
    def f(code: str, severity: str, path: str = "model") -> Finding:
        return Finding(code, code.lower(), severity, "m", path, "f", 1, 1, 1, 1)

    assert added_problems([f("MEM001", "error")], [f("MEM002", "warning")]) == []
    assert _codes(added_problems([f("MEM002", "warning")], [f("MEM001", "error")])) == ["MEM001"]
    assert _codes(added_problems([f("RCP003", "error", "model.x[0]")], [f("RCP005", "error")]))
    assert added_problems([], [f("PAR003", "info")]) == []  # infos may appear
    two = [f("SEQ001", "error"), f("SEQ002", "error")]
    assert _codes(added_problems([f("SEQ001", "error")], two)) == ["SEQ002"]


def test_cli_reports_applied_and_refused_fixes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "cfg.yaml"
    path.write_text("model:\n  moe_router_topk: 3\n  num_layers: 7\n  hidden_size: 100\n")
    code, out, err = run_main(
        capsys, str(path), "--rules", str(PACK), "--select", "TS", "--fix", "--show-fixes"
    )
    assert path.read_text() == "model:\n  moe_router_topk: 3\n  num_layers: 8\n  hidden_size: 200\n"
    assert err.splitlines() == [
        f"{path}:2: TSA001 fix not applied: it would add error TSB001 at model.moe_router_topk: "
        "TSB001 fired",
        f"{path}:3: TSA002 set num_layers to 8",
        f"{path}:4: TSC001 set hidden_size to 200",
        "Fixed 2 findings in 1 file (2 left).",
    ]
    # The refused fix is no longer offered: advice, not `[fix: --fix]`.
    assert "TSA001 fired" in out and "[fix: --fix]" not in out and "fixable" not in out
    assert code == 0  # what is left (TSA001, TSC002) are warnings


def test_cli_quiet_keeps_refusals_drops_summary(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "cfg.yaml"
    path.write_text("model:\n  moe_router_topk: 3\n  num_layers: 7\n")
    code, _, err = run_main(
        capsys, str(path), "--rules", str(PACK), "--select", "TS", "--fix", "-q"
    )
    assert code == 0
    assert [line.split(": ", 2)[1] for line in err.splitlines()] == ["TSA001 fix not applied"]
    _, _, err = run_main(capsys, str(path), "--rules", str(PACK), "--select", "TS", "--fix")
    assert err.splitlines()[-1] == "No fixes applied (1 left)."


def test_cli_diff_uses_the_same_check(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "cfg.yaml"
    text = "model:\n  moe_router_topk: 3\n  num_layers: 7\n"
    path.write_text(text)
    code, out, err = run_main(capsys, str(path), "--rules", str(PACK), "--select", "TS", "--diff")
    assert code == 1 and "+  num_layers: 8" in out and "moe_router_topk: 5" not in out
    assert "TSA001 fix not applied" in err and path.read_text() == text


def test_fix_on_clean_file_does_not_relint(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--fix on a file with nothing to fix lints it once, like a plain run: no re-lint."""
    import moe_lint.linting
    from moe_lint.linting import lint_text as real

    calls: list[str] = []

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append("lint_text")
        return real(*args, **kwargs)

    # The CLI's fix loop re-lints through linting.relint_for_fix, which calls linting.lint_text.
    monkeypatch.setattr(moe_lint.linting, "lint_text", counting)
    path = tmp_path / "good.yaml"
    path.write_text((REPO / "examples" / "dsv3_128k_h100.yaml").read_text())
    code, _, err = run_main(capsys, str(path), "--fix")
    assert code == 0 and err == "" and calls == []


def test_real_rule_fix_never_adds_rcp005(catalogue: Catalogue) -> None:
    """The guidance's `up_proj` shorthand on a model without MLA (Qwen3-235B is GQA): whatever
    RCP003 offers for it, --fix must not leave an RCP005 error that was not there."""
    text = "model:\n  recompute_granularity: selective\n  recompute_modules: [up_proj, norm]\n"
    args = "--model qwen3-235b-a22b"

    def lint(new: str) -> list[Finding]:
        return run_lint(catalogue, new, None, args).findings

    first = lint(text)
    outcome = run_fixes(text, lint, True, first)
    assert "RCP005" not in {f.code for f in outcome.remaining}
    assert "layernorm" in yaml.safe_load(outcome.text)["model"]["recompute_modules"]


# ---- the property, over every fixture fail case and every corpus file ----------------------


def _errors(findings: list[Finding]) -> tuple[int, int]:
    return (
        sum(1 for f in findings if f.severity == "error"),
        sum(1 for f in findings if f.severity in ("error", "warning")),
    )


def _check_never_worse(text: str, lint: Any, first: list[Finding], where: str) -> int:
    """Fix ``text`` safe-only and with unsafe fixes; errors never grow. Returns re-lints."""
    relints = 0

    def counted(new: str) -> list[Finding]:
        nonlocal relints
        relints += 1
        return lint(new)  # type: ignore[no-any-return]

    kinds = {f.applicability for f in first if f.edits}
    for unsafe in (False, True):
        if not kinds & ({"safe", "unsafe"} if unsafe else {"safe"}):
            continue
        if unsafe and "unsafe" not in kinds:
            continue  # the same fixes as the safe run
        outcome = run_fixes(text, counted, unsafe, first)
        before, after = _errors(first), _errors(outcome.remaining)
        assert after[0] <= before[0], (where, unsafe, [f.code for f in outcome.remaining])
        assert after[1] <= before[1], (where, unsafe, [f.code for f in outcome.remaining])
    return relints


def _fixture_cases() -> list[Any]:
    params = []
    for path in sorted((REPO / "tests" / "fixtures" / "rules").glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        for name, case in data["cases"].items():
            if "fail" in case:
                params.append((f"{path.stem}-{name}", case))
    return params


@pytest.mark.slow
def test_fixture_fail_cases_never_get_more_errors(catalogue: Catalogue) -> None:
    """All rules on, every fail case: --fix and --unsafe-fixes never add an error."""
    from moe_lint.config.overrides import parse_override

    cases = _fixture_cases()
    assert len(cases) > 400
    fixed = 0
    for where, case in cases:
        overrides = [parse_override(o) for o in case.get("overrides", [])]

        def lint(new: str, case: dict[str, Any] = case, ov: list[Any] = overrides) -> Any:
            result = run_lint(catalogue, new, None, case.get("args"), ov)
            if result.error is not None:
                raise InputError(result.error)
            return result.findings

        first = run_lint(catalogue, case["fail"], None, case.get("args"), overrides)
        if first.error is None and first.notice is None:
            fixed += _check_never_worse(case["fail"], lint, first.findings, where) > 0
    assert fixed > 100  # the property was exercised, not skipped


@pytest.mark.slow
def test_corpus_files_never_get_more_errors(catalogue: Catalogue) -> None:
    """Every corpus file, with its cluster (tools/corpus_report.py): fixing adds no error."""
    from moe_lint.config.settings import Settings
    from moe_lint.linting import lint_text

    files = load_tool("corpus_report").corpus_files()
    assert len(files) > 150
    fixed = 0
    for path, cluster in files:
        text = path.read_text(encoding="utf-8")

        def lint(new: str, p: Path = path, c: dict[str, object] = cluster) -> Any:
            result = lint_text(new, catalogue, Settings(), [], c, path=str(p))
            if result.error is not None or result.notice is not None:
                raise InputError(result.error or result.notice or "")
            return result.findings

        first = lint_text(text, catalogue, Settings(), [], cluster, path=str(path))
        if first.error is None and first.notice is None:
            fixed += _check_never_worse(text, lint, first.findings, path.name) > 0
    assert fixed > 20


# ---- issue 10: a fix must do what it says, where it says --------------------------------------


def test_fix_that_leaves_its_finding_is_refused() -> None:
    """An edit that lands somewhere else (the finding still fires) is not applied; before,
    the loop re-applied it on every pass (ten insertions in the wrong section)."""
    from moe_lint.engine.findings import Edit

    text = "model:\n  a: 1\ntrain:\n  b: 1\n"

    def finding() -> Finding:
        f = Finding("X001", "x", "error", "m", "model.c", "f", 1, 1, 1, 1)
        f.applicability, f.edits = "safe", [Edit(len(text), len(text), "  c: 1\n", 5, 1, 5, 1)]
        return f

    relints = 0

    def lint(new: str) -> list[Finding]:
        nonlocal relints
        relints += 1
        return (
            []
            if "model" in yaml.safe_load(new) and "c" in yaml.safe_load(new)["model"]
            else [finding()]
        )

    outcome = run_fixes(text, lint, False, [finding()])
    assert outcome.text == text and outcome.applied == [] and relints == 1
    assert (
        outcome.refused[0].reason
        == "it would not resolve the finding (X001 still fires at model.c)"
    )


def test_fix_that_repeats_a_key_is_refused_whatever_is_selected(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Even with SCH003 (duplicate keys) not selected, a fixed text that repeats a key is
    not written: Bridge's loader rejects it (the next run would exit 2)."""
    import moe_lint.engine.evaluate
    from moe_lint.engine.findings import Edit

    path = tmp_path / "cfg.yaml"
    text = "model:\n  num_layers: 7\ntrain:\n  micro_batch_size: 1\n"
    path.write_text(text)
    at = text.index("train:")

    def repeating(doc: Any, physical: Any, value: Any) -> Edit:  # the key again, below
        return Edit(at, at, f"  num_layers: {value}\n", 3, 1, 3, 1)

    monkeypatch.setattr(moe_lint.engine.evaluate, "set_value_edit", repeating)
    code, _, err = run_main(capsys, str(path), "--rules", str(PACK), "--select", "TSA002", "--fix")
    assert code == 0  # nothing written; TSA002 is a warning
    assert path.read_text() == text
    assert "TSA002 fix not applied: the fixed file would not load: line 3: key " in err
    assert "'model.num_layers' would appear more than once" in err


def test_real_rule_fix_through_an_alias_is_reported(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """CG006 would set model.use_te_rng_tracker, written as an alias of another field's
    anchor: editing it would change that field too. Refused, with the reason, untouched."""
    path = tmp_path / "cfg.yaml"
    text = (
        "model:\n  cuda_graph_impl: transformer_engine\n  cuda_graph_modules: [attn]\n"
        "  gradient_accumulation_fusion: &off false\n  use_te_rng_tracker: *off\n"
    )
    path.write_text(text)
    code, out, err = run_main(capsys, str(path), "--fix", "--select", "CG006")
    assert path.read_text() == text and code == 1
    assert err.splitlines() == [
        f"{path}:5: CG006 fix not applied: model.use_te_rng_tracker is an alias (*off): "
        "editing it would change every use of its anchor",
        "No fixes applied (1 left).",
    ]
    assert "[fix: --fix]" not in out
