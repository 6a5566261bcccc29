"""Megatron-LM flag lists (data/mlm_releases.json) and the MLM rules' checks (engine/checks/mlm.py).

The checks read ``doc.mlm_flags`` of a config whose ``form`` is ``"megatron-lm"``. Until the
Megatron-LM parser (config/mlm_args.py) is on this branch, a stand-in builds that document the
way the parser describes it: MlmFlag(name with dashes, raw value text or None, span of the
``--flag`` token). With the parser present, the same checks run on its MlmFlag.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any, NamedTuple

import pytest

from conftest import load_tool
from moe_lint.config import mlm_releases
from moe_lint.config.load import Pos, Span
from moe_lint.config.settings import Settings
from moe_lint.config.versions import parse_version
from moe_lint.engine.checks import mlm
from moe_lint.engine.evaluate import Context

MIRROR = Path("/work/.mirror/NVIDIA+Megatron-LM/repo")


class _StandInFlag(NamedTuple):
    name: str
    value: str | None
    span: Span


if importlib.util.find_spec("moe_lint.config.mlm_args") is not None:  # pragma: no cover
    from moe_lint.config.mlm_args import MlmFlag as _Flag
else:
    _Flag = _StandInFlag  # type: ignore[assignment,misc]


def _span(line: int, col: int, length: int) -> Span:
    start, end = Pos(line, col, 0), Pos(line, col + length, length)
    return Span(start, end, end, end, True)


def _ctx(
    argv: str, *, form: str = "megatron-lm", text: str = "torchrun pretrain_gpt.py", **versions: str
) -> Context:
    """A Megatron-LM command line, one flag (and its value) per line starting at line 1."""
    flags: list[Any] = []
    for line, word in enumerate(argv.strip().splitlines(), start=1):
        name, _, value = word.strip().partition(" ")
        flags.append(_Flag(name, value or None, _span(line, 3, len(name))))
    settings = Settings(
        versions={k.replace("_", "-"): parse_version(v) for k, v in versions.items()}
    )
    config = SimpleNamespace(
        form=form, doc=SimpleNamespace(mlm_flags=flags, path="train.sh", text=text)
    )
    return Context(config=config, facts=None, settings=settings)  # type: ignore[arg-type]


def _problems(check: Any, ctx: Context) -> list[str]:
    return [v.params.get("problem") or v.params["why"] for v in check(ctx)]


# -- the flag lists ---------------------------------------------------------------------------


def test_release_for_picks_the_newest_release_at_or_below() -> None:
    assert mlm_releases.release_for(parse_version("0.19.2")) == "0.19.0"  # wheel == core_v0.19.0
    assert mlm_releases.release_for(parse_version("0.15.9")) == "0.15.3"
    assert mlm_releases.release_for(parse_version("0.14.0")) == "0.14.0"
    assert mlm_releases.release_for(parse_version("0.13.1")) is None
    assert mlm_releases.releases()[0] == "0.14.0"


def test_releases_differ_where_the_source_does() -> None:
    # --qk-clip came with core_v0.16.0 (ArgumentGroupFactory over TransformerConfig); the
    # retro flags left with it; the parallel sizes are in every release.
    assert "--qk-clip" not in mlm_releases.flags_of("0.15.3")
    assert "--qk-clip" in mlm_releases.flags_of("0.16.0")
    assert "--retro-add-retriever" in mlm_releases.flags_of("0.15.3")
    assert "--retro-add-retriever" not in mlm_releases.flags_of("0.19.0")
    for release in mlm_releases.releases():
        assert "--tensor-model-parallel-size" in mlm_releases.flags_of(release)
    counts = [len(mlm_releases.flags_of(r)) for r in mlm_releases.releases()]
    assert counts[0] > 400 and counts[-1] > counts[0]


def test_factory_flags_follow_argument_group_factory() -> None:
    # A bool field defaulting to True gets --no-/--disable- (store_false on the field's dest).
    flags = mlm_releases.flags_of("0.19.0")
    info = flags["--qk-clip-alpha"]
    assert (info.dest, info.type, info.default) == ("qk_clip_alpha", "float", 0.5)
    assert flags["--use-torch-fsdp2"].action == "store_true"
    grad = flags["--no-gradient-accumulation-fusion"]
    assert (grad.dest, grad.action) == ("gradient_accumulation_fusion", "store_false")


def test_mlm_args_replays_argparse() -> None:
    ctx = _ctx(
        """
        --tensor-model-parallel-size 2
        --tensor-model-parallel-size 4
        --no-gradient-accumulation-fusion
        --ckpt-format=torch
        --pipeline-model-parallel-size $PP
        """
    )
    args = mlm_releases.MlmArgs("0.19.0", ctx.config.doc.mlm_flags)
    assert args["tensor_model_parallel_size"] == 4  # the last one wins
    assert args["gradient_accumulation_fusion"] is False
    assert args["ckpt_format"] == "torch"
    assert args["pipeline_model_parallel_size"] is mlm_releases.UNSET
    assert args["expert_model_parallel_size"] == 1  # the release's default
    assert args["use_torch_fsdp2"] is False


@pytest.mark.skipif(not MIRROR.is_dir(), reason="needs the NVIDIA/Megatron-LM git mirror")
def test_generated_flag_lists_are_current() -> None:
    # Not in tools/regenerate.py: the generator reads the git mirror, which a clone lacks.
    generator = load_tool("gen_mlm_releases")
    assert generator.main(["--mirror", str(MIRROR), "--check"]) == 0


# -- MLM001 -----------------------------------------------------------------------------------


def test_unknown_flag_suggests_and_is_located_at_the_flag() -> None:
    ctx = _ctx(
        "--tensor-model-parallel-size 2\n--moe-router-topk-typo 8\n--tensor-model-paralel-size 2"
    )
    found = list(mlm.unknown_flags(ctx))
    assert [v.params["flag"] for v in found] == [
        "--moe-router-topk-typo",
        "--tensor-model-paralel-size",
    ]
    assert found[1].params["why"] == "did you mean --tensor-model-parallel-size?"
    assert found[1].at == (3, 3)
    assert found[1].params["release"] == "0.19.0"  # newest release when none is stated


def test_one_flag_token_is_reported_once() -> None:
    ctx = _ctx("--foo-bar-baz 1")
    ctx.config.doc.mlm_flags = ctx.config.doc.mlm_flags * 2  # the same token reached twice
    assert len(list(mlm.unknown_flags(ctx))) == 1


def test_only_plain_entry_scripts_get_every_unknown_flag() -> None:
    # An entry script with an extra_args_provider (inference, multimodal) adds flags of its
    # own; a MODEL_ARGS file names no script. Only the version findings stay certain.
    argv = "--temperature 1.0\n--qk-clip"
    for text in ("torchrun tools/run_text_generation_server.py", "MODEL_ARGS:", ""):
        found = list(mlm.unknown_flags(_ctx(argv, text=text, megatron_core="0.15.0")))
        assert [v.params["flag"] for v in found] == ["--qk-clip"], text
    found = list(mlm.unknown_flags(_ctx(argv, megatron_core="0.15.0")))
    assert [v.params["flag"] for v in found] == ["--temperature", "--qk-clip"]


def test_flag_of_a_newer_or_older_release_says_so() -> None:
    old = list(mlm.unknown_flags(_ctx("--qk-clip", megatron_core="0.15.1")))
    assert [v.params["why"] for v in old] == ["was added in Megatron-LM 0.16.0"]
    assert list(mlm.unknown_flags(_ctx("--qk-clip", megatron_core="0.16.0"))) == []
    gone = list(mlm.unknown_flags(_ctx("--retro-add-retriever")))
    assert [v.params["why"] for v in gone] == ["was removed after Megatron-LM 0.15.3"]


def test_mlm_rules_ignore_other_input() -> None:
    ctx = _ctx(
        "--tensor-model-paralel-size 2\n--use-torch-fsdp2\n--pipeline-model-parallel-size 2",
        form="override",
    )
    assert list(mlm.unknown_flags(ctx)) == []
    assert list(mlm.torch_fsdp2(ctx)) == []
    assert list(mlm.unknown_flags(_ctx("--foo-bar", megatron_core="0.13.0"))) == []


# -- MLM002 torch FSDP2 ------------------------------------------------------------------------

_FSDP2_OK = """
--use-torch-fsdp2
--no-gradient-accumulation-fusion
--untie-embeddings-and-output-weights
--bf16
"""


def test_torch_fsdp2_passes_when_every_assert_holds() -> None:
    assert _problems(mlm.torch_fsdp2, _ctx(_FSDP2_OK)) == []


def test_torch_fsdp2_reports_each_assert_with_its_message() -> None:
    ctx = _ctx(
        "--use-torch-fsdp2\n--pipeline-model-parallel-size 2\n--expert-model-parallel-size 8\n"
        "--use-distributed-optimizer\n--ckpt-format torch\n--fp16"
    )
    assert _problems(mlm.torch_fsdp2, ctx) == [
        "--use-torch-fsdp2 is not supported with pipeline parallelism",
        "--use-torch-fsdp2 is not supported with expert parallelism",
        "--use-torch-fsdp2 is not supported with MCore's distributed optimizer",
        "--use-torch-fsdp2 is not supported with gradient accumulation fusion",
        "--use-torch-fsdp2 requires --ckpt-format torch_dist or torch_dcp",
        "--use-torch-fsdp2 requires --untie-embeddings-and-output-weights",
        "--use-torch-fsdp2 not supported with fp16 yet",
    ]
    assert {v.at for v in mlm.torch_fsdp2(ctx)} == {(1, 3)}


_SOURCE = Path(__file__).parent / "data" / "mlm" / "validate_args_excerpt.txt"
_ALL = (
    mlm.torch_fsdp2, mlm.overlap_param_gather_with_optimizer_step, mlm.qk_clip,
    mlm.virtual_pipeline_args, mlm.max_position_embeddings, mlm.overlap_param_gather,
    mlm.fp8_param_gather, mlm.mla_args, mlm.moe_latent_size, mlm.fake_process_group,
    mlm.local_attention_backend,
)  # fmt: skip
_BAD = (
    "--use-torch-fsdp2\n--pipeline-model-parallel-size 2\n--fp16\n--ckpt-format torch",
    "--overlap-param-gather-with-optimizer-step",
    "--qk-clip\n--qk-clip-alpha 2\n--qk-clip-threshold 0\n--log-max-attention-logit",
    "--num-layers-per-virtual-pipeline-stage 2\n--num-virtual-stages-per-pipeline-rank 2",
    "--num-layers-per-virtual-pipeline-stage 2\n--decoder-first-pipeline-num-layers 3",
    "--num-layers 30\n--pipeline-model-parallel-size 4\n--num-layers-per-virtual-pipeline-stage 2",
    "--num-layers 36\n--pipeline-model-parallel-size 4\n--num-layers-per-virtual-pipeline-stage 2",
    "--seq-length 8192\n--max-position-embeddings 4096",
    "--seq-length 512\n--decoder-seq-length 8192\n--max-position-embeddings 4096",
    "--overlap-param-gather\n--fp8-param-gather",
    "--multi-latent-attention\n--group-query-attention\n--mla-down-proj-fusion",
    "--mla-down-proj-fusion\n--moe-latent-size 0",
    "--fake-process-group\n--moe-token-dispatcher-type flex",
    "--attention-backend local\n--spec gpt",
)


@pytest.mark.parametrize("argv", _BAD)
@pytest.mark.parametrize("release", ["0.16.1", "0.19.2"])
def test_messages_are_quoted_from_the_source(argv: str, release: str) -> None:
    source = _SOURCE.read_text(encoding="utf-8")
    ctx = _ctx(argv, transformer_engine="2.8", megatron_core=release)
    problems = [p for check in _ALL for p in _problems(check, ctx)]
    assert problems, argv
    for problem in problems:
        if re.fullmatch(r"max_position_embeddings \(\d+\) must be greater than or equal to "
                        r"seq_length \(\d+\)\.", problem):  # fmt: skip
            # the f-string of the assert, with the values filled in
            assert 'must be greater than " \\\n' in source and "or equal to seq_length" in source
            continue
        if problem.startswith("assert "):
            # a bare assert (no message): its statement, then what it raises
            statement = problem.split(" (an AssertionError")[0]
            assert statement in source and problem.endswith("(an AssertionError with no message)")
            continue
        head, sep, values = problem.partition("--pipeline-model-parallel-layout. ")
        if sep:
            # the adjacent literals of the assert's message, then its f"{args.x=}" values
            literals = ("'No more than one of the following arguments can be set at the same "
                        "time: '\n        '--num-layers-per-virtual-pipeline-stage, "
                        "--num-virtual-stages-per-pipeline-rank,'\n        "
                        "'--pipeline-model-parallel-layout. '")  # fmt: skip
            assert literals in source and head + sep == "".join(re.findall(r"'([^']*)'", literals))
            names = re.findall(r"args\.(\w+)=", values)
            assert names == ["num_layers_per_virtual_pipeline_stage",
                             "num_virtual_stages_per_pipeline_rank",
                             "pipeline_model_parallel_layout"]  # fmt: skip
            assert all(f"f'{{args.{n}=}}" in source for n in names) and values.endswith(".")
            continue
        assert f"'{problem}" in source or f'"{problem}' in source, problem


# -- MLM003 overlap_param_gather_with_optimizer_step -------------------------------------------

_OPG_OK = """
--use-distributed-optimizer
--overlap-grad-reduce
--overlap-param-gather
--overlap-param-gather-with-optimizer-step
--pipeline-model-parallel-size 4
--num-virtual-stages-per-pipeline-rank 2
--ckpt-format torch
"""


def test_overlap_param_gather_with_optimizer_step_prerequisites() -> None:
    assert _problems(mlm.overlap_param_gather_with_optimizer_step, _ctx(_OPG_OK)) == []
    bare = _ctx("--overlap-param-gather-with-optimizer-step\n--pipeline-model-parallel-size 4")
    assert _problems(mlm.overlap_param_gather_with_optimizer_step, bare) == [
        "--overlap-param-gather-with-optimizer-step only supported with distributed optimizer",
        "Must use --overlap-param-gather-with-optimizer-step with --overlap-param-gather",
        "--overlap-param-gather-with-optimizer-step only supported with interleaved pipeline "
        "parallelism",
        "--overlap-param-gather-with-optimizer-step not supported with distributed "
        "checkpointing yet",
    ]
    one_stage = _ctx(_OPG_OK.replace("rank 2", "rank 1"))
    assert len(_problems(mlm.overlap_param_gather_with_optimizer_step, one_stage)) == 1
    # A release without --hybrid-layer-pattern (0.16) has no hybrid pattern: still derived.
    old = _ctx(_OPG_OK.replace("rank 2", "rank 1"), megatron_core="0.16.1")
    assert len(_problems(mlm.overlap_param_gather_with_optimizer_step, old)) == 1

    # validate_args derives the virtual size from a layout (stages / PP, 1 -> None) and from
    # --num-layers-per-virtual-pipeline-stage ((layers / PP) / that).
    def vpp_from(flags: str) -> list[str]:
        return _problems(
            mlm.overlap_param_gather_with_optimizer_step,
            _ctx(_OPG_OK.replace("--num-virtual-stages-per-pipeline-rank 2", flags)),
        )

    interleaved = "interleaved pipeline parallelism"
    assert vpp_from("--pipeline-model-parallel-layout Et*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2L") == []
    assert interleaved in vpp_from("--pipeline-model-parallel-layout Et*4|t*4|t*4|t*4L")[0]
    assert vpp_from("--num-layers 16\n--num-layers-per-virtual-pipeline-stage 2") == []
    one = vpp_from("--num-layers 16\n--num-layers-per-virtual-pipeline-stage 4")
    assert len(one) == 1 and interleaved in one[0]
    # Layers that do not split evenly stop validate_args earlier (MLM005): not reported here.
    assert vpp_from("--num-layers 15\n--num-layers-per-virtual-pipeline-stage 4") == []


def test_checkpoint_args_leave_the_other_flags_checked() -> None:
    """--use-checkpoint-args: validate_args still checks what load_args_from_checkpoint does
    not set (the optimizer flags); the parallel sizes it sets with
    --use-mp-args-from-checkpoint-args are not the command line's to tell."""
    ctx = _ctx(_OPG_OK.replace("--overlap-param-gather\n", "") + "--use-checkpoint-args\n")
    assert _problems(mlm.overlap_param_gather_with_optimizer_step, ctx) == [
        "Must use --overlap-param-gather-with-optimizer-step with --overlap-param-gather"
    ]
    mp = _ctx(_OPG_OK.replace("rank 2", "rank 1") + "--use-checkpoint-args\n")
    assert len(_problems(mlm.overlap_param_gather_with_optimizer_step, mp)) == 1
    mp = _ctx(
        _OPG_OK.replace("rank 2", "rank 1")
        + "--use-checkpoint-args\n--use-mp-args-from-checkpoint-args\n"
    )
    assert _problems(mlm.overlap_param_gather_with_optimizer_step, mp) == []


# -- MLM004 qk_clip ------------------------------------------------------------------------------


def test_qk_clip_ranges_and_te_version() -> None:
    assert _problems(mlm.qk_clip, _ctx("--qk-clip")) == []  # alpha 0.5, threshold 100
    bad = _ctx("--qk-clip\n--qk-clip-alpha 1.5\n--qk-clip-threshold 0")
    assert _problems(mlm.qk_clip, bad) == [
        "--qk-clip-alpha must be between 0.0 and 1.0 when using --qk-clip.",
        "--qk-clip-threshold must be greater than 0 when using --qk-clip.",
    ]
    assert [v.at for v in mlm.qk_clip(bad)] == [(2, 3), (3, 3)]
    old_te = _ctx("--qk-clip\n--log-max-attention-logit", transformer_engine="2.8")
    assert _problems(mlm.qk_clip, old_te) == [
        "--log-max-attention-logit is only supported with TE >= 2.9.0.",
        "--qk-clip is only supported with TE >= 2.9.0.",
    ]


# -- MLM005-MLM012 -------------------------------------------------------------------------------


def test_virtual_pipeline_arguments() -> None:
    check = mlm.virtual_pipeline_args
    two = _ctx("--num-layers-per-virtual-pipeline-stage 2\n--pipeline-model-parallel-layout Et|tL")
    assert _problems(check, two) == [
        "No more than one of the following arguments can be set at the same time: "
        "--num-layers-per-virtual-pipeline-stage, --num-virtual-stages-per-pipeline-rank,"
        "--pipeline-model-parallel-layout. args.num_layers_per_virtual_pipeline_stage=2, "
        "args.num_virtual_stages_per_pipeline_rank=None, "
        "args.pipeline_model_parallel_layout='Et|tL'."
    ]
    assert [v.at for v in check(two)] == [(2, 3)]
    ok = (
        "--num-layers 32\n--pipeline-model-parallel-size 4\n"
        "--num-layers-per-virtual-pipeline-stage 2"
    )
    assert _problems(check, _ctx(ok)) == []
    # the account_for_* splits count one layer each: 30 + 2 = 32 layers
    padded = ok.replace("32", "30") + (
        "\n--account-for-embedding-in-pipeline-split\n--account-for-loss-in-pipeline-split"
    )
    assert _problems(check, _ctx(padded)) == []
    assert _problems(check, _ctx(ok.replace("32", "30"))) == [
        "number of layers of the model must be divisible pipeline model parallel size"
    ]
    assert _problems(check, _ctx(ok.replace("32", "36"))) == [
        "number of layers per pipeline stage must be divisible number of layers per virtual "
        "pipeline stage"
    ]


def test_max_position_embeddings() -> None:
    check = mlm.max_position_embeddings
    assert _problems(check, _ctx("--seq-length 8192\n--max-position-embeddings 4096")) == [
        "max_position_embeddings (4096) must be greater than or equal to seq_length (8192)."
    ]
    assert _problems(check, _ctx("--seq-length 4096\n--max-position-embeddings 4096")) == []
    assert _problems(check, _ctx("--seq-length 8192\n--max-position-embeddings $MPE")) == []
    # `if args.decoder_seq_length is not None: assert args.max_position_embeddings >= ...`
    decoder = _ctx("--seq-length 512\n--decoder-seq-length 8192\n--max-position-embeddings 4096")
    assert _problems(check, decoder) == [
        "assert args.max_position_embeddings >= args.decoder_seq_length (an AssertionError "
        "with no message)"
    ]
    fits = _ctx("--seq-length 512\n--decoder-seq-length 128\n--max-position-embeddings 512")
    assert _problems(check, fits) == []


def test_overlap_param_gather_message_follows_the_release() -> None:
    check = mlm.overlap_param_gather
    new = _problems(check, _ctx("--overlap-param-gather\n--overlap-grad-reduce"))
    assert new == [
        "--overlap-param-gather only supported with distributed optimizer, megatron fsdp, "
        "or dist_muon"
    ]
    old = _ctx("--overlap-param-gather\n--overlap-grad-reduce", megatron_core="0.16.1")
    assert _problems(check, old) == [
        "--overlap-param-gather only supported with distributed optimizer or megatron fsdp"
    ]
    muon = _ctx("--overlap-param-gather\n--overlap-grad-reduce\n--optimizer dist_muon")
    assert _problems(check, muon) == []
    ok = _ctx("--overlap-param-gather\n--overlap-grad-reduce\n--use-distributed-optimizer")
    assert _problems(check, ok) == []


def test_defaults_are_not_trusted_when_words_were_not_expanded() -> None:
    ctx = _ctx("--overlap-param-gather\n--use-distributed-optimizer")
    assert len(_problems(mlm.overlap_param_gather, ctx)) == 1  # no --overlap-grad-reduce
    ctx.config.doc.mlm_notes = ["line 9: $EXTRA_ARGS is not set in the script"]
    assert _problems(mlm.overlap_param_gather, ctx) == []
    # a value the flags give is still certain
    ctx = _ctx("--use-torch-fsdp2\n--pipeline-model-parallel-size 2")
    ctx.config.doc.mlm_notes = ["line 9: $EXTRA_ARGS is not set in the script"]
    assert _problems(mlm.torch_fsdp2, ctx) == [
        "--use-torch-fsdp2 is not supported with pipeline parallelism"
    ]


def test_fp8_mla_latent_fake_pg_and_local_backend() -> None:
    assert len(_problems(mlm.fp8_param_gather, _ctx("--fp8-param-gather"))) == 1
    assert _problems(mlm.fp8_param_gather, _ctx("--fp8-param-gather\n--use-megatron-fsdp")) == []
    mla = _ctx("--multi-latent-attention\n--group-query-attention")
    assert _problems(mlm.mla_args, mla) == [
        "Group query attention is mutually exclusive with multi latent attention."
    ]
    fusion = "--mla-down-proj-fusion"
    assert _problems(mlm.mla_args, _ctx(fusion)) == [
        "--mla-down-proj-fusion requires --multi-latent-attention"
    ]
    assert _problems(mlm.mla_args, _ctx(fusion, megatron_core="0.16.1")) == []  # no assert yet
    assert _problems(mlm.moe_latent_size, _ctx("--moe-latent-size 0\n--num-experts 8")) == [
        "MoE latent projection dimension has to be greater than zero."
    ]
    assert _problems(mlm.moe_latent_size, _ctx("--moe-latent-size 64")) == [
        "MoE latent projections are applicable only for MoE models."
    ]
    flex = "--fake-process-group\n--moe-token-dispatcher-type flex"
    assert len(_problems(mlm.fake_process_group, _ctx(flex))) == 1
    assert _problems(mlm.fake_process_group, _ctx(flex.replace("flex", "alltoall"))) == []
    local = "--attention-backend local"
    assert len(_problems(mlm.local_attention_backend, _ctx(local))) == 1
    assert _problems(mlm.local_attention_backend, _ctx(local + "\n--spec local")) == []
