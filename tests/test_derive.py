"""Derived quantities against hand-worked numbers (domain 01 §a.1 'Derived arithmetic' table)."""

from __future__ import annotations

import pytest

from moe_lint.analysis.derive import Cluster, derive, pow2_round
from moe_lint.config.load import parse_text
from moe_lint.config.normalize import normalize


def facts(text: str, gpus: int | None = None) -> dict[str, object]:
    cfg = normalize(parse_text(text))
    f = derive(cfg, Cluster(gpus=gpus))
    return {name: fact.value for name, fact in f.values.items()}


def layout(tp: int, cp: int, ep: int, pp: int, seq: int, sp: bool = False) -> str:
    return (
        f"model:\n  tensor_model_parallel_size: {tp}\n  context_parallel_size: {cp}\n"
        f"  expert_model_parallel_size: {ep}\n  pipeline_model_parallel_size: {pp}\n"
        f"  seq_length: {seq}\n  sequence_parallel: {str(sp).lower()}\n"
    )


# family, TP, CP, EP, PP, seq, SP, dense mesh, expert mesh, min GPUs, DP, EDP, tok/TP·CP
SEED_TABLE = [
    ("dsv3-128k", 1, 32, 32, 8, 131072, False, 32, 32, 256, 1, 1, 4096),
    ("dsv3-256k", 1, 64, 32, 8, 262144, False, 64, 32, 512, 1, 2, 4096),
    ("qwen3-235b-128k", 4, 4, 32, 4, 131072, True, 16, 32, 128, 2, 1, 8192),
]


@pytest.mark.parametrize("row", SEED_TABLE, ids=lambda r: r[0])
def test_seed_family_arithmetic(row: tuple) -> None:  # type: ignore[type-arg]
    _, tp, cp, ep, pp, seq, sp, dense, expert, min_world, dp, edp, per_tp_cp = row
    f = facts(layout(tp, cp, ep, pp, seq, sp))
    assert f["dense_mesh"] == dense
    assert f["expert_mesh"] == expert
    assert f["min_world"] == min_world
    assert f["world"] == min_world and f["world_assumed"] is True
    assert f["dp"] == dp and f["edp"] == edp
    assert f["tokens_per_tp_cp_rank"] == per_tp_cp


def test_min_world_is_lcm_not_max() -> None:
    # domain 01 §a.5.2: TP·CP = 4 and EP·ETP = 6 need 12 GPUs per stage, not 6 (nor 24).
    f = facts(layout(tp=4, cp=1, ep=6, pp=2, seq=4096, sp=True))
    assert f["min_world"] == 2 * 12


def test_bridge_etp_default_and_derivation() -> None:
    cfg = normalize(parse_text(layout(tp=4, cp=1, ep=4, pp=1, seq=4096, sp=True)))
    assert cfg.values["model.expert_tensor_parallel_size"] == 1
    assert "Bridge" in cfg.notes["model.expert_tensor_parallel_size"]
    f = derive(cfg, Cluster(gpus=8))
    assert f.values["edp"].value == 2
    assert f.values["dp"].derivation == "DP = 8 / (TP4·PP1·CP1) = 2"


def test_mcore_etp_default_without_ep() -> None:
    cfg = normalize(parse_text("model:\n  tensor_model_parallel_size: 2\n"))
    assert cfg.values["model.expert_tensor_parallel_size"] == 2


def test_not_divisible_world_is_missing_not_wrong() -> None:
    cfg = normalize(parse_text(layout(tp=1, cp=32, ep=32, pp=8, seq=131072)))
    f = derive(cfg, Cluster(gpus=200))
    assert "dp" not in f.values and "200" in f.missing["dp"]


def test_microbatches() -> None:
    text = (
        layout(tp=1, cp=4, ep=8, pp=4, seq=16384)
        + "train:\n  global_batch_size: 64\n  micro_batch_size: 2\n"
    )
    f = facts(text, gpus=64)
    assert f["dp"] == 4 and f["microbatches"] == 8


def test_cp_target_rounding() -> None:
    assert [pow2_round(x) for x in (0.5, 1, 3, 24, 32, 48, 100)] == [1, 1, 4, 32, 32, 64, 128]
    assert facts(layout(1, 1, 1, 1, 131072))["cp_target"] == 32


def test_recipe_fields_stay_unknown() -> None:
    cfg = normalize(parse_text("model:\n  context_parallel_size: 8\n"))
    assert "model.seq_length" in cfg.unknown and "model.num_moe_experts" in cfg.unknown
    f = derive(cfg, Cluster())
    assert "seq" in f.missing and "tokens_per_tp_cp_rank" in f.missing
