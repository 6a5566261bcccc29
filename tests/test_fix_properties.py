"""--fix never loses a byte it did not mean to change (hypothesis + the real corpus).

Properties, for generated configs and every corpus file:
- only the edited values change: the fixed file parses to the original data with exactly the
  fixed values replaced, and every comment, quote style, blank line, line ending and BOM survives;
- fixing is idempotent: a second pass changes nothing;
- nothing is written when there is nothing to fix.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import CORPUS, REPO, run_lint
from moe_lint.catalogue import Catalogue, load_catalogue
from moe_lint.cli import main
from moe_lint.fix import fix_loop

CATALOGUE = load_catalogue(plugins=False)


def fix_text(catalogue: Catalogue, text: str, args: str | None = None) -> str:
    def relint(new: str) -> list[Any]:
        result = run_lint(catalogue, new, None, args)
        assert result.error is None, result.error
        return result.findings

    fixed, _, _ = fix_loop(text, relint, unsafe=True)
    return fixed


def comments(text: str) -> list[str]:
    return [line.split("#", 1)[1] for line in text.splitlines() if "#" in line]


# ---- generated configs ------------------------------------------------------------------------

labels = st.sampled_from(["up_proj", "norm", "moe_act", "layernorm", "moe", "mlp"])
quotes = st.sampled_from(["", "'", '"'])
comment = st.one_of(
    st.just(""), st.text("abc xyz-_:", min_size=1, max_size=12).map(lambda t: f"  # {t}")
)


@st.composite
def configs(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """A Bridge override with fixable problems, in varied YAML styles."""
    q = draw(quotes)
    items = draw(st.lists(labels, min_size=1, max_size=4))
    flow = draw(st.booleans())
    lines = [f"# header{draw(comment)}", "model:"]
    lines.append(f"  tensor_model_parallel_size: 2{draw(comment)}")
    lines.append(f"  num_moe_experts: 64{draw(comment)}")
    lines.append(
        f"  sequence_parallel: {draw(st.sampled_from(['false', 'False', 'true']))}{draw(comment)}"
    )
    lines.append("  moe_grouped_gemm: true")
    # An MLA model: up_proj is rewritten to mla_up_proj (elsewhere it gets an unsafe removal).
    lines.append("  multi_latent_attention: true")
    lines.append("  recompute_granularity: selective")
    if flow:
        lines.append(
            "  recompute_modules: [" + ", ".join(f"{q}{i}{q}" for i in items) + f"]{draw(comment)}"
        )
    else:
        lines.append(f"  recompute_modules:{draw(comment)}")
        lines.extend(f"    - {q}{i}{q}{draw(comment)}" for i in items)
    if draw(st.booleans()):
        lines.append("")
    if draw(st.booleans()):
        lines += [
            "  cuda_graph_impl: transformer_engine",
            "  cuda_graph_modules: [attn]" + draw(comment),
        ]
    lines.append(f"train:{draw(comment)}")
    lines.append("  micro_batch_size: 1")
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    text = eol.join(lines) + eol
    return text, yaml.safe_load(text)


def expected_after_fix(data: dict[str, Any]) -> dict[str, Any]:
    want = copy.deepcopy(data)
    model = want["model"]
    alias = {"up_proj": "mla_up_proj", "norm": "layernorm"}
    model["recompute_modules"] = [alias.get(m, m) for m in model["recompute_modules"]]
    model["sequence_parallel"] = True
    if model.get("cuda_graph_impl") == "transformer_engine":
        model["use_te_rng_tracker"] = True
    return want


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(configs())
def test_generated_fixes_touch_only_their_values(case: tuple[str, dict[str, Any]]) -> None:
    text, data = case
    fixed = fix_text(CATALOGUE, text)
    assert yaml.safe_load(fixed) == expected_after_fix(data)
    assert comments(fixed) == comments(text)
    assert fix_text(CATALOGUE, fixed) == fixed
    if "\r\n" in text:
        assert fixed.count("\r\n") == fixed.count("\n")
    original_lines = text.splitlines()
    changed = [line for line in fixed.splitlines() if line not in original_lines]
    for line in changed:
        assert any(
            key in line
            for key in ("recompute_modules", "sequence_parallel", "use_te_rng_tracker", "- ")
        )


# ---- the real corpus ---------------------------------------------------------------------------

CORPUS_FILES = sorted((CORPUS / "megatron-bridge").rglob("*.yaml")) + sorted(
    (REPO / "examples").glob("*.yaml")
)


def _diff_paths(a: Any, b: Any, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[str] = []
        for key in sorted(set(a) | set(b), key=str):
            out += _diff_paths(
                a.get(key, "<absent>"), b.get(key, "<absent>"), f"{path}.{key}".lstrip(".")
            )
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = []
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            out += _diff_paths(x, y, f"{path}[{i}]")
        return out
    return [] if a == b else [path]


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: p.name)
def test_corpus_fixes_change_only_fixed_paths(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    try:
        original = yaml.safe_load(text)
    except yaml.YAMLError:
        pytest.skip("not plain YAML")
    first = run_lint(CATALOGUE, text)
    if first.error or first.notice:
        return
    fixable = {f.path.split("[")[0] for f in first.findings if f.edits}
    for f in first.findings:  # a fix may set paths besides the one the finding points at
        fix = CATALOGUE.by_code[f.code].fix
        if f.edits and fix is not None:
            fixable |= {dotted for dotted, _ in fix.sets}
    fixed = fix_text(CATALOGUE, text)
    assert fix_text(CATALOGUE, fixed) == fixed
    assert comments(fixed) == comments(text)
    changed = _diff_paths(original, yaml.safe_load(fixed))
    root = "ConfigContainer." if "ConfigContainer" in (original or {}) else ""
    for dotted in changed:
        assert any(
            dotted.split("[")[0].removeprefix(root).startswith(p) or p.startswith(dotted)
            for p in fixable | _inserted_parents(fixable)
        ), (dotted, fixable)


def _inserted_parents(paths: set[str]) -> set[str]:
    return {p.split(".")[0] for p in paths}


def test_bom_and_mode_survive_cli_fix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = (REPO / "examples" / "dsv3_128k_h100_broken.yaml").read_text()
    path = tmp_path / "bom.yaml"
    path.write_bytes(b"\xef\xbb\xbf" + src.replace("\n", "\r\n").encode())
    main([str(path), "--fix", "--format", "concise"])
    capsys.readouterr()
    raw = path.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf")
    assert raw.count(b"\r\n") == raw.count(b"\n")
    assert b"mla_up_proj" in raw


def test_clean_file_is_not_rewritten(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "good.yaml"
    path.write_text((REPO / "examples" / "dsv3_128k_h100.yaml").read_text())
    before = path.stat().st_mtime_ns
    main([str(path), "--fix"])
    capsys.readouterr()
    assert path.stat().st_mtime_ns == before
