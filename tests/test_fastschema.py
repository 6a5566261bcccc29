"""The pydantic-free fast path agrees with the pydantic models: both read the one field table."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import REPO, assert_tool_current
from moe_lint.config import fields
from moe_lint.config.fast_validate import fast_validate
from moe_lint.config.schema import SECTIONS


def test_field_table_is_current() -> None:
    assert_tool_current("gen_bridge_fields.py")


values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 2**33),
    st.floats(-2, 3, allow_nan=False),
    st.sampled_from(
        [
            "selective",
            "full",
            "alltoall",
            "flex",
            "p2p",
            "a2a",
            "8",
            "x",
            "none",
            "transformer_engine",
            "hybridep",
            "core_attn",
        ]
    ),
    st.lists(st.sampled_from(["moe_act", "layernorm", "attn"]), max_size=3),
    st.lists(st.integers(1, 8), max_size=3),
    st.dictionaries(st.sampled_from(["pad_to_max_length", "a"]), st.booleans(), max_size=2),
)


@st.composite
def sections_data(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    name = draw(st.sampled_from(fields.validated_sections()))
    keys = draw(st.lists(st.sampled_from(sorted(fields.validated(name))), max_size=6, unique=True))
    return name, {key: draw(values) for key in keys}


@settings(max_examples=400, deadline=None)
@given(sections_data())
def test_fast_path_matches_pydantic(case: tuple[str, dict[str, Any]]) -> None:
    from pydantic import ValidationError

    name, data = case
    fast = fast_validate(name, data)
    if fast is None:
        return  # pydantic handles it (and reports it when it is wrong)
    model = SECTIONS[name]
    try:
        validated = model.model_validate(data)
    except ValidationError as exc:  # the fast path accepted something pydantic rejects
        raise AssertionError(f"fast path accepted {data}: {exc}") from None
    slow = {k: getattr(validated, k) for k in model.model_fields}
    assert fast == slow
    assert {k: type(v) for k, v in fast.items()} == {k: type(v) for k, v in slow.items()}


def test_clean_run_does_not_import_pydantic() -> None:
    code = (
        "import sys; from moe_lint.cli import main; "
        f"rc = main([{str(REPO / 'examples' / 'dsv3_256k_h100.yaml')!r}, '--format', 'concise']); "
        "print('pydantic' in sys.modules, 'rich' in sys.modules, rc)"
    )
    # The first run may compile the catalogue into a cold rule cache (a fresh clone or cache
    # directory), which validates packs with pydantic; the run measured is the warm one.
    subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.split()[-3:-1] == ["False", "False"], proc.stdout
