"""The pipeline placement (analysis/placement.py) against Megatron-Core 0.19.2's own examples."""

from __future__ import annotations

from moe_lint.analysis.placement import Placement, place, read_layout


def _chunks(placed: Placement, rank: int) -> list[list[int]]:
    return [list(stage.layers) for stage in placed.rank_stages(rank)]


def test_interleaved_even_split_matches_transformer_block_docstring() -> None:
    """transformer_block.py::get_num_layers_to_build: 8 layers, 2 stages, 4 and 2 chunks."""
    four = place(num_layers=8, mtp=0, pp=2, vpp=4)
    assert _chunks(four, 0) == [[0], [2], [4], [6]]
    assert _chunks(four, 1) == [[1], [3], [5], [7]]
    two = place(num_layers=8, mtp=0, pp=2, vpp=2)
    assert _chunks(two, 0) == [[0, 1], [4, 5]]
    assert _chunks(two, 1) == [[2, 3], [6, 7]]
    assert four.error is None and two.error is None


def test_account_for_flags_take_a_layer_from_the_first_and_last_virtual_stage() -> None:
    """Qwen3-235B: (94 + 2) / 4 = 24 per rank, 2 per virtual stage at VPP 12."""
    placed = place(num_layers=94, mtp=0, pp=4, vpp=12, emb=True, loss=True)
    assert placed.error is None
    assert placed.rank_layers() == [23, 24, 24, 23]
    first, last = placed.stages[0], placed.stages[-1]
    assert (len(first.layers), first.embedding, first.rank, first.chunk) == (1, True, 0, 0)
    assert (len(last.layers), last.head, last.rank, last.chunk) == (1, True, 3, 11)
    without = place(num_layers=94, mtp=0, pp=4, vpp=12)
    assert without.error is not None and without.error.kind == "even-pp"
    assert "94 is not divisible by PP = 4" in without.error.problem


def test_dsv3_layout_places_mtp_and_loss_on_the_last_chunk_of_the_last_rank() -> None:
    placed = place(num_layers=61, mtp=1, pp=8, vpp=None, layout="Et|(tt|)*30mL")
    assert (placed.method, placed.vpp, placed.error) == ("layout", 4, None)
    assert placed.rank_layers() == [7, 8, 8, 8, 8, 8, 8, 6]
    assert placed.stages[0].embedding and list(placed.stages[0].layers) == [0]
    tail = placed.stages[31]
    assert (tail.rank, tail.chunk, tail.mtp, tail.head, len(tail.layers)) == (7, 3, 1, True, 0)
    assert sum(len(s.layers) for s in placed.stages) == 61


def test_list_layout_is_the_same_placement() -> None:
    listed = place(
        num_layers=4, mtp=0, pp=2, vpp=None,
        layout=[["embedding", "decoder", "decoder"], ["Decoder ", "decoder", "loss"]],
    )  # fmt: skip
    assert listed.error is None and listed.rank_layers() == [2, 2]
    assert read_layout([["decoder", "attention"]]).stages is None  # type: ignore[union-attr]


def test_layout_verdicts() -> None:
    spaced = place(num_layers=4, mtp=0, pp=2, vpp=None, layout="Ett | ttL")
    assert spaced.error is not None and "spaces" in spaced.error.problem
    assert spaced.rank_layers() == [2, 2]  # still placed for the estimate
    odd = place(num_layers=4, mtp=0, pp=2, vpp=None, layout="Et|t|ttL")
    assert odd.error is not None and odd.error.kind == "layout-stages" and odd.stages == ()


def test_uneven_split_and_its_verdicts_in_transformer_config_order() -> None:
    """DeepSeek-V3 61 layers at PP 8: first 7, last 6 leave 48 = 6 x 8 middle layers."""
    good = place(num_layers=61, mtp=1, pp=8, vpp=None, first=7, last=6)
    assert good.error is None and good.rank_layers() == [7, 8, 8, 8, 8, 8, 8, 6]
    assert good.stages[-1].mtp == 1 and good.stages[-1].head
    bad = place(num_layers=61, mtp=1, pp=8, vpp=None, first=5, last=5)
    assert bad.error is not None and bad.error.kind == "uneven-middle"
    assert bad.error.params["rest"] == 51 and bad.error.params["middle"] == 6
    zero = place(num_layers=61, mtp=0, pp=8, vpp=2, first=0, last=3)
    assert zero.error is not None and zero.error.kind == "uneven-count"  # checked before VPP
    vpp = place(num_layers=64, mtp=0, pp=4, vpp=3, first=6, last=6)
    assert vpp.error is not None and vpp.error.kind == "uneven-vpp"
    assert vpp.error.path == "model.virtual_pipeline_model_parallel_size"
    flags = place(num_layers=64, mtp=0, pp=4, vpp=None, first=16, last=16, emb=True)
    assert flags.error is not None and flags.error.kind == "counts-with-flags"


def test_uneven_interleaved_offsets_follow_get_transformer_layer_offset() -> None:
    """PP 4, VPP 2, first 4, last 2, 64 layers: (64 - 6) / 2 = 29 per middle rank is odd, so
    use 66 layers: 30 per middle rank, 15 per chunk; the layer order is chunk-major."""
    placed = place(num_layers=66, mtp=0, pp=4, vpp=2, first=4, last=2)
    assert placed.error is None
    assert [len(s.layers) for s in placed.stages] == [2, 15, 15, 1, 2, 15, 15, 1]
    # get_transformer_layer_offset: rank 1, chunk 1 starts at 1·(2 + 30 + 1) + 2 = 35.
    assert placed.stages[5].layers.start == 35
