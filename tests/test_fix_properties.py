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
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from conftest import CORPUS, REPO, run_lint
from moe_lint.cli import main
from moe_lint.engine.catalogue import Catalogue, load_catalogue
from moe_lint.output.fix import fix_loop

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
    if draw(st.booleans()):  # the section ends in a nested block (a dump's object form)
        lines += [
            "  activation_func:" + draw(comment),
            "    _call_: false",
            "    _target_: torch.nn.functional.silu" + draw(comment),
        ]
        if draw(st.booleans()):
            lines.append("  # a comment after the block")
    lines.append(f"train:{draw(comment)}")
    lines.append("  micro_batch_size: 1")
    if draw(st.booleans()):  # wrapped, as some Bridge dumps are
        lines = [lines[0], "ConfigContainer:", *(f"  {line}" if line else "" for line in lines[1:])]
    eol = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    text = eol.join(lines) + (eol if draw(st.booleans()) else "")
    return text, yaml.safe_load(text)


def expected_after_fix(data: dict[str, Any]) -> dict[str, Any]:
    want = copy.deepcopy(data)
    if "ConfigContainer" in want:
        want["ConfigContainer"] = expected_after_fix(want["ConfigContainer"])
        return want
    model = want["model"]
    alias = {"up_proj": "mla_up_proj", "norm": "layernorm"}
    model["recompute_modules"] = [alias.get(m, m) for m in model["recompute_modules"]]
    model["sequence_parallel"] = True
    if model.get("cuda_graph_impl") == "transformer_engine":
        model["use_te_rng_tracker"] = True
    return want


@pytest.mark.slow
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
    elif "\r" in text:
        assert "\n" not in fixed
    assert fixed.endswith(("\r", "\n")) == text.endswith(("\r", "\n"))
    # Only the intended lines changed (difflib over lines): every hunk holds a fixed key.
    assert_only_lines_with(
        text, fixed, ("recompute_modules", "sequence_parallel", "use_te_rng_tracker", "- ")
    )


def assert_only_lines_with(before: str, after: str, keys: tuple[str, ...]) -> None:
    """Every line difflib sees removed, replaced or added mentions one of ``keys``."""
    import difflib

    old, new = before.splitlines(), after.splitlines()
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(
        None, old, new, autojunk=False
    ).get_opcodes():
        if tag != "equal":
            for line in old[i1:i2] + new[j1:j2]:
                assert any(key in line for key in keys), (tag, line)


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


@pytest.mark.slow
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


# ---- corpus files in other shapes: wrapped, CR, CRLF, no final newline, nested last block ----

#: Corpus files with fixes: replacements (MOE024, SEQ003), a ``{_target_: ...}`` node rewritten
#: as a scalar (MOE028) and insertions (CG006 in the broken example).
FIXABLE = [
    CORPUS / "bridge-full-dumps" / "gpt_oss_20b_pretrain_8gpu_b300_fp8mx_config.yaml",
    CORPUS
    / "bridge-full-dumps"
    / "qwen3_30b_a3b_pretrain_16gpu_gb200_fp8mx_partial_cg_dev_config.yaml",
    CORPUS / "bridge-full-dumps" / "qwen3_30b_a3b_pretrain_8gpu_h100_bf16_config.yaml",
    REPO / "examples" / "dsv3_128k_h100_broken.yaml",
]

#: A harmless nested block (the dumps' form of the default activation function).
NESTED = ["activation_func:", "  _call_: false", "  _target_: torch.nn.functional.silu"]


def _nest_last(text: str) -> str:
    """Move the ``model`` section's end to a nested block: insert NESTED as its last key
    (found here by indentation alone, independently of moe_lint.engine.spans)."""
    lines = text.split("\n")
    start = lines.index("model:")
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or lines[end].startswith((" ", "#"))):
        end += 1
    while lines[end - 1].strip() == "" or lines[end - 1].startswith("#"):
        end -= 1
    if any(line.startswith("  activation_func:") for line in lines[start:end]):
        return text
    return "\n".join(lines[:end] + [f"  {line}" for line in NESTED] + lines[end:])


def _variant(text: str, shape: str) -> str:
    if shape == "nested-last":
        return _nest_last(text)
    if shape == "wrapped":
        return "ConfigContainer:\n" + "".join(
            f"  {line}" if line.strip() else line for line in text.splitlines(True)
        )
    if shape == "no-final-newline":
        return text.rstrip("\n")
    return text.replace("\n", {"crlf": "\r\n", "cr": "\r"}[shape])


SHAPES = ["nested-last", "wrapped", "no-final-newline", "crlf", "cr"]


@pytest.mark.slow
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # shrinking these costs minutes
)
@given(
    st.sampled_from(FIXABLE),
    st.lists(st.sampled_from(SHAPES), min_size=1, max_size=3, unique=True).filter(
        lambda shapes: not {"crlf", "cr"} <= set(shapes)  # one line-ending style per file
    ),
)
def test_corpus_variants_change_only_fixed_paths(path: Path, shapes: list[str]) -> None:
    """The fixed file re-parses to the same data except at the fixed paths, only lines that
    hold a fixed key change, and the file's line endings and final newline stay."""
    text = path.read_text(encoding="utf-8")
    for shape in sorted(shapes, key=SHAPES.index):  # nest before wrapping, endings last
        text = _variant(text, shape)
    first = run_lint(CATALOGUE, text)
    assert first.error is None and first.notice is None, first.error
    sets = set()
    for f in first.findings:
        fix = CATALOGUE.by_code[f.code].fix
        if f.edits and fix is not None:
            sets |= {dotted.split("[")[0] for dotted, _ in fix.sets} | {f.path.split("[")[0]}
    assert sets, "no fixable finding: the variant lost what it should exercise"
    fixed = fix_text(CATALOGUE, text)
    assert fixed != text
    assert fix_text(CATALOGUE, fixed) == fixed
    assert comments(fixed) == comments(text)
    changed = _diff_paths(yaml.safe_load(text), yaml.safe_load(fixed))
    root = "ConfigContainer." if "wrapped" in shapes else ""
    for dotted in changed:
        dotted = dotted.removeprefix(root).split("[")[0]
        assert any(dotted.startswith(p) or p.startswith(dotted + ".") for p in sets), dotted
    # A section added whole brings its own key line (``dataset:``).
    keys = (*{p.split(".")[-1] for p in sets}, *{p.split(".")[0] for p in sets})
    keys = (*keys, "- ", "_target_", "_call_")
    assert_only_lines_with(text, fixed, keys)
    if "cr" in shapes:
        assert "\n" not in fixed
    if "crlf" in shapes:
        assert fixed.count("\r\n") == fixed.count("\n")
    assert fixed.endswith(("\r", "\n")) == text.endswith(("\r", "\n"))
