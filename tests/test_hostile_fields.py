"""Hostile values in the model fields the memory model, parameter count and planner compute
with (issue 22): each is SCH002 (exit 2, one line), never an exit 3 in ``estimate``.

A sweep of every model field the table did not type, with ten hostile values each (a word,
.inf, a list, a map, -1, 0, 1e300, a 31-digit integer, true, null) through ``check`` and
``estimate``, found 33 fields whose value reached arithmetic or a set (TypeError, ValueError,
OverflowError); the field table now types them. These are those fields, with the values that
broke them.
"""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from conftest import REPO
from moe_lint.cli import main

#: A sweep: 93 hostile values, each through `check` and `estimate`: slow.
pytestmark = pytest.mark.slow

BASE = (REPO / "examples" / "dsv3_128k_h100.yaml").read_text(encoding="utf-8")
FIELDS = [
    "add_bias_linear", "add_qkv_bias", "attention_output_gate", "dsa_indexer_head_dim",
    "dsa_indexer_n_heads", "dsa_indexer_topk", "hidden_dropout", "kv_lora_rank",
    "linear_conv_kernel_dim", "linear_key_head_dim", "linear_num_key_heads",
    "linear_num_value_heads", "linear_value_head_dim", "make_vocab_size_divisible_by",
    "mamba_head_dim", "mamba_num_groups", "mamba_num_heads", "mamba_state_dim",
    "moe_expert_rank_capacity_factor", "moe_latent_size", "moe_shared_expert_gate",
    "moe_shared_expert_intermediate_size", "mtp_use_repeated_layer", "q_lora_rank",
    "qk_head_dim", "qk_layernorm", "qk_pos_emb_head_dim", "share_embeddings_and_output_weights",
    "should_pad_vocab", "softmax_type", "v_head_dim",
]  # fmt: skip
VALUES = ["[1]", "{a: 1}", ".inf"]


def _run(args: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with redirect_stdout(io.StringIO()), redirect_stderr(err):
        code = main(args)
    return code, err.getvalue()


@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("value", VALUES)
def test_a_hostile_model_value_is_sch002(tmp_path: Path, field: str, value: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(BASE.replace("model:\n", f"model:\n  {field}: {value}\n", 1))
    for args in (["estimate", str(path), "--gpus", "128", "--gpu", "h100", "--isolated"],
                 [str(path), "--gpus", "128", "--isolated"]):  # fmt: skip
        code, err = _run(args)
        lines = err.strip().splitlines()
        assert code == 2, (field, value, args[0], code, err)
        assert len(lines) == 1 and f"model.{field}" in lines[0] and "[SCH002]" in lines[0], err
