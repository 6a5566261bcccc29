"""The shell reader (config/shell.py) and the MODEL_ARGS harness (config/model_args.py) on
Megatron-LM's own files (tests/data/megatron-lm/, see SOURCE.md there): branches, loops,
``-m`` entry points, where the world size came from, and the functional-test harness's
reading of MODEL_ARGS (merge keys, ``true``, ``[ ]``, ``${VAR}``, MODEL_ENV_VARS)."""

from __future__ import annotations

from pathlib import Path

import pytest

from moe_lint.cli import main
from moe_lint.config import mlm_args
from moe_lint.config.load import load_file, parse_text
from moe_lint.config.mlm_releases import MlmArgs, flags_of
from moe_lint.config.normalize import normalize
from moe_lint.config.shell import ShellReader, reset_budget
from moe_lint.errors import InputError

DATA = Path(__file__).parent / "data" / "megatron-lm"
EXAMPLES = DATA / "examples"
CI = DATA / "ci"


def _cfg(path: Path):  # type: ignore[no-untyped-def]
    doc = load_file(str(path))
    return doc, normalize(doc)


def _value(cfg, dotted: str):  # type: ignore[no-untyped-def]
    return "UNKNOWN" if dotted in cfg.unknown else cfg.value(dotted)


def _reader(text: str) -> ShellReader:
    reset_budget()
    reader = ShellReader(text)
    reader.run()
    return reader


def _var(reader: ShellReader, name: str) -> str | None:
    """A variable's text, None when unset, "?" when unknown."""
    value = reader.vars.get(name)
    if value is None:
        return None
    items = value if isinstance(value, list) else [value]
    if any(v.unresolved for v in items):
        return "?"
    return " ".join(v.text for v in items)


# --- 1. branches ----------------------------------------------------------------------------


def test_case_on_the_scripts_own_value_runs_one_arm() -> None:
    # MODEL_SCALE="800M"; case "${MODEL_SCALE}" in "800M") TP=1 GBS=32 ;; "8B") TP=4 GBS=8
    doc, cfg = _cfg(EXAMPLES / "mamba" / "train.sh")
    assert cfg.value("model.tensor_model_parallel_size") == 1
    assert cfg.value("train.global_batch_size") == 32
    assert cfg.value("model.hidden_size") == 1024
    # The value points at the 800M arm's assignment, not the 8B arm's.
    span = doc.spans[("model", "hidden_size")]
    assert doc.text.splitlines()[span.value_start.line - 1].strip() == "HIDDEN_SIZE=1024"


def test_case_on_a_script_argument_leaves_what_the_arms_set_unknown() -> None:
    # case $1 in ... each arm sets SEQ_LEN / its own paths: not known which runs.
    script = "run_text_generation_qwen20_72b_internvit_6b.sh"
    _, cfg = _cfg(EXAMPLES / "multimodal" / "nvlm" / script)
    assert _value(cfg, "model.seq_length") == "UNKNOWN"
    assert cfg.value("model.tensor_model_parallel_size") == 8  # set outside the arms


def test_if_on_the_environment_makes_its_flags_unknown_not_default() -> None:
    # if [ -n "${WANDB_API_KEY}" ]; then LOGGING_ARGS+=(--wandb-project ...); fi
    doc, cfg = _cfg(EXAMPLES / "mixtral" / "train_mixtral_8x7b_distributed.sh")
    assert "logger.wandb_project" in cfg.unknown
    assert any(f.name == "--wandb-project" for f in doc.mlm_flags)
    # ... and the flags both paths pass are as before.
    assert cfg.value("model.expert_model_parallel_size") == 8
    assert doc.mlm_notes == []  # both branches are written out: nothing hidden


def test_branches_decided_by_shell_defaults_and_literals() -> None:
    # USE_MEGATRON_FSDP=${USE_MEGATRON_FSDP:-1}: the FSDP arguments are passed;
    # DTYPE="fp8" ... if [[ "$DTYPE" == "fp8" ]]: so are the FP8 ones;
    # NSYS_PROFILE=${NSYS_PROFILE:-0}: the profiler's are not.
    doc, cfg = _cfg(EXAMPLES / "megatron_fsdp" / "train_llama3_8b_fsdp_h100_fp8.sh")
    assert cfg.value("ddp.use_megatron_fsdp") is True
    assert cfg.value("model.fp8") == "hybrid"
    assert not any(f.name == "--profile" for f in doc.mlm_flags)


def test_a_branch_that_exits_adds_nothing() -> None:
    # gptoss/02_train.sh: if [ ! -d "$CHECKPOINT_PATH" ]; then ...; exit 1; fi, then the run.
    reader = _reader((EXAMPLES / "gptoss" / "02_train.sh").read_text())
    launch = mlm_args.find_launch(reader)
    assert launch is not None and launch.script is not None
    assert launch.script.text == "${PRETRAIN_SCRIPT_PATH}" or launch.script.text.endswith(".py")
    text = '#!/bin/bash\nTP=2\nif [ -z "$X" ]; then TP=8; exit 1; fi\necho $TP\n'
    assert _var(_reader(text), "TP") == "2"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('A=x\nif [ "$A" = x ]; then B=1; elif [ "$A" = y ]; then B=2; else B=3; fi', "1"),
        ('A=y\nif [ "$A" = x ]; then B=1; elif [ "$A" = y ]; then B=2; else B=3; fi', "2"),
        ("A=z\nif [[ $A == x || $A == y* ]]; then B=1; else B=3; fi", "3"),
        ("A=yes\nif [[ $A == y* ]]; then B=1; else B=3; fi", "1"),
        ('A=yes\nif [[ $A == "y*" ]]; then B=1; else B=3; fi', "3"),  # quoted: no glob
        ("N=4\nif [ $N -gt 2 -a $N -le 4 ]; then B=1; fi", "1"),
        ("N=4\nif test $N -eq 5; then B=1; else B=0; fi", "0"),
        ("if [[ $UNSET_IN_SCRIPT -eq 0 ]]; then B=1; else B=0; fi", "?"),  # the environment
        ('B=0\n[ -z "" ] && B=1', "1"),
        ('B=0\n[ -n "" ] || B=2', "2"),
        ("B=0\ncommand_of_unknown_status && B=1", "?"),
        ('S=8B\ncase "$S" in 800M) B=1 ;; 8B|16B) B=2 ;; *) B=3 ;; esac', "2"),
        ('S=2B\ncase "$S" in 800M) B=1 ;; 8B|16B) B=2 ;; *) B=3 ;; esac', "3"),
        ("case $1 in a) B=1 ;; b) B=1 ;; esac", "?"),
        ('S=a\ncase "$S" in a) B=1 ;& b) B=2 ;; esac', "?"),  # ;& : the next arm may run
        ("B=1\ncase $1 in a) B=1 ;; *) B=1 ;; esac", "1"),  # every arm agrees
        ("B=x\nfor i in 1 2 3; do B=$B$i; done", "x123"),
        ("B=x\nfor i in 1 2 3; do [ $i = 2 ] && break; B=$B$i; done", "x1"),
        ("B=x\nwhile [[ $# -gt 0 ]]; do B=y; shift; done", "?"),
        ("B=x\nfor f in $(ls); do B=$f; done", "?"),
        ("f() { B=in_f; }\nB=x\nf", "in_f"),
        ("f() { local B=in_f; }\nB=x\nf", "x"),
        ("B=x\n( B=sub )", "x"),
        ("B=x\necho | while read B; do :; done", "x"),
        ("B=x\nunset B", None),
        ("B=x\nif [[ -v B ]]; then C=1; fi\nB=$C", "1"),
        ('B=x\nif cond; then B=y; fi\nif [ "$B" = y ]; then C=1; fi\nB=$C', "?"),
        ("B=x\nsource conf.sh", "?"),  # the file may set it
        (". conf.sh\nB=${B:-1}", "?"),  # ... or a variable the script defaults
        ('B=${B:-1}\nif [ -n "$C" ]; then source "$C"; fi', "?"),
    ],
)
def test_control_flow(text: str, expected: str | None) -> None:
    assert _var(_reader("#!/bin/bash\n" + text + "\n"), "B") == expected


def test_a_merged_value_keeps_what_the_branches_share_and_the_flags_they_add() -> None:
    text = (
        "#!/bin/bash\nARGS=(--num-layers 4 --hidden-size 64 --tensor-model-parallel-size 2)\n"
        'if [ "$MODE" = big ]; then ARGS+=(--sequence-parallel); fi\n'
        "torchrun --nproc_per_node 8 pretrain_gpt.py ${ARGS[@]} --num-attention-heads 8\n"
    )
    doc = parse_text(text, "x.sh")
    cfg = normalize(doc)
    assert cfg.value("model.num_layers") == 4 and cfg.value("model.hidden_size") == 64
    assert "model.sequence_parallel" in cfg.unknown  # passed or not: not its default
    assert cfg.value("model.num_attention_heads") == 8
    assert doc.mlm_notes == []


# --- 2. MODEL_ARGS as the harness reads them --------------------------------------------------


def test_merge_keys_are_resolved() -> None:
    # MODEL_ARGS: {<<: *BASE_MODEL_ARGS, --micro-batch-size: 2, ...}: 57 flags come from the
    # anchor (they were dropped).
    path = CI / "gpt" / "gpt3_mcore_reruns_resume_check_grads" / "model_config.yaml"
    doc, cfg = _cfg(path)
    assert len(doc.mlm_flags) == 71
    assert cfg.value("model.num_layers") == 32
    assert cfg.value("model.hidden_size") == 3072
    assert cfg.value("train.micro_batch_size") == 2
    # The span is the anchor's line, where the flag is written.
    span = doc.spans[("model", "num_layers")]
    assert doc.text.splitlines()[span.key_start.line - 1].strip() == "--num-layers: 32"
    # ${REPEAT}, ${DATA_PATH}...: only those flags are unknown, and nothing else is uncertain.
    assert "rng.seed" in cfg.unknown and "dataset.data_path" in cfg.unknown
    assert doc.mlm_notes == []


def test_checkpoint_consistency_runs_on_their_own_gpus(capsys: pytest.CaptureFixture[str]) -> None:
    # run_ci_test.sh exports MODEL_ENV_VARS.MODEL_ARGS.GPUS_PER_NODE (1) for run 1, over the
    # recipe's 8: DP = 1, so global batch 2 = micro batch 2 is fine (BAT002 was false).
    path = CI / "gpt" / "gpt3_mcore_reruns_resume_check_grads" / "model_config.yaml"
    doc = load_file(str(path))
    assert doc.launcher == {"gpus-per-node": "1"}
    assert "MODEL_ENV_VARS.MODEL_ARGS.GPUS_PER_NODE: 1" in doc.launcher_source
    assert "MODEL_ARGS_2" in doc.launcher_source  # the runs not linted are named
    main(["--isolated", "--no-cache", "--color", "never", str(path), "--nodes", "1",
          "--format", "concise"])  # fmt: skip
    out = capsys.readouterr().out
    assert "BAT002" not in out, out
    # The recipe's 8 GPUs per node on the command line say otherwise: 8 ranks of DP.
    main(["--isolated", "--no-cache", "--color", "never", str(path), "--nodes", "1",
          "--gpus-per-node", "8", "--format", "concise"])  # fmt: skip
    assert "BAT002" in capsys.readouterr().out


def test_values_the_harness_rewrites() -> None:
    case = "nemotron3_5_lightning_no_load_optim_tp1_pp1_cp1_ep4_dgx_gb200_1N4G"
    doc = load_file(str(CI / "nemotron" / case / "model_config.yaml"))
    spec = next(f for f in doc.mlm_flags if f.name == "--spec")
    # --spec: "[megatron.core.models.hybrid.hybrid_layer_specs hybrid_stack_spec]": brackets
    # stripped, two words (its nargs list)
    assert spec.value == "megatron.core.models.hybrid.hybrid_layer_specs hybrid_stack_spec"
    moe = CI / "moe" / "gpt3_moe_mcore_te_tp4_ep2_etp2_pp2_scoped_cudagraph" / "model_config.yaml"
    cfg = normalize(load_file(str(moe)))
    assert cfg.value("model.recompute_modules") == ["moe_act"]  # "[moe_act]" -> moe_act
    release = CI / "mixtral" / "deepseekv3_proxy_flex_tp1pp4emp16etp1cp1_release"
    doc = load_file(str(release / "model_config.yaml"))
    freq = next(f for f in doc.mlm_flags if f.name == "--moe-layer-freq")
    assert freq.value == "([0]*3+[1]*11)"  # ( ): passed quoted, one word
    # --auto-detect-ckpt-format: (an empty value): yq's tostring is "", so the flag alone
    assert normalize(doc).value("checkpoint.auto_detect_ckpt_format") is True


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ("--bf16: true", ["--bf16"]),
        ('--bf16: "true"', ["--bf16"]),
        ("--bf16: false", ["--bf16", "false"]),  # passed as a word (argparse refuses it)
        ("--lr: null", ["--lr", "null"]),
        ("--bf16:", ["--bf16"]),
        ('--lr: ""', []),  # an empty string drops the entry
        ('--spec: "[local]"', ["--spec", "local"]),
        ('--budget-list: "[1.0 0.697]"', ["--budget-list", "1.0", "0.697"]),
        ("--split: 949,50,1", ["--split", "949,50,1"]),
        ('--prompts: "a b  c"', ["--prompts", "a b c"]),  # xargs collapses blanks
        ("--stop-words: '\"the\"'", ["--stop-words", "the"]),  # and removes quotes
        ("--data-path: ${DATA_PATH}/x", ["--data-path", "?"]),
    ],
)
def test_one_entry_as_the_harness_passes_it(entry: str, words: list[str]) -> None:
    import yaml

    from moe_lint.config import model_args

    text = "MODEL_ARGS:\n  " + entry + "\n"
    node = yaml.compose(text)
    (found,) = model_args.explode(node.value[0][1])
    got = ["?" if w.unresolved else w.text for w in model_args.entry_words(text, found)]
    assert got == words


def test_merge_precedence_and_bombs() -> None:
    import yaml

    from moe_lint.config import model_args

    text = "B: &b\n  --tp: 2\n  --pp: 4\nM:\n  --tp: 8\n  <<: *b\n  --pp: 1\n"
    entries = model_args.explode(yaml.compose(text).value[1][1])
    got = {e.key.value: (e.value.value, e.ambiguous) for e in entries}
    # --pp after the merge wins in every yq; --tp before it depends on the yq version.
    assert got == {"--tp": ("8", True), "--pp": ("1", False)}
    bomb = (
        "a: &a {--x: 1}\n"
        + "".join(
            f"b{i}: &b{i} {{<<: [{', '.join(['*a' if i == 0 else f'*b{i - 1}'] * 9)}]}}\n"
            for i in range(8)
        )
        + "MODEL_ARGS: {<<: *b7}\n"
    )
    doc = parse_text(bomb, "m.yaml")  # deduplicated by key: small, and bounded
    assert [f.name for f in doc.mlm_flags] == ["--x"]
    with pytest.raises(InputError):
        parse_text("a: &a {<<: *a}\nMODEL_ARGS: {<<: *a}\n", "m.yaml")


# --- 3. --no-X of argparse.BooleanOptionalAction --------------------------------------------


def test_boolean_optional_no_forms_are_flags() -> None:
    # rl/model_configs/nemotron6_3b_moe.sh passes --no-rl-use-sequence-packing; Megatron-LM
    # adds it with action=argparse.BooleanOptionalAction, which makes the --no- twin.
    text = (EXAMPLES / "rl" / "model_configs" / "nemotron6_3b_moe.sh").read_text()
    assert "--no-rl-use-sequence-packing" in text
    known = flags_of("0.19.0")
    assert "--no-rl-use-sequence-packing" in known and "--rl-use-sequence-packing" in known
    flag = mlm_args.MlmFlag
    doc = parse_text("#!/bin/bash\ntorchrun pretrain_gpt.py --num-layers 2\n", "x.sh")
    span = doc.mlm_flags[0].span
    args = MlmArgs("0.19.0", [flag("--rl-use-sequence-packing", None, span),
                              flag("--no-rl-use-sequence-packing", None, span)])  # fmt: skip
    assert args["rl_use_sequence_packing"] is False  # the last one wins
    args = MlmArgs("0.19.0", [flag("--no-rl-use-sequence-packing", None, span),
                              flag("--rl-use-sequence-packing", None, span)])  # fmt: skip
    assert args["rl_use_sequence_packing"] is True


# --- 4. entry points -------------------------------------------------------------------------


def test_module_entry_points() -> None:
    # uv run ... python -m torch.distributed.run "${TORCHRUN_ARGS[@]}" \
    #     -m examples.mimo.pretrain_mimo
    reader = _reader((EXAMPLES / "mimo" / "scripts" / "run_hetero_nemotron_20l_mock_train.sh")
                     .read_text())  # fmt: skip
    launch = mlm_args.find_launch(reader)
    assert launch is not None and launch.script is not None
    assert launch.script.text == "examples.mimo.pretrain_mimo"
    assert any(w.text == "--num-layers" for w in launch.args)
    assert mlm_args._launcher_world(launch.launcher) == {"gpus-per-node": "8", "nodes": "1"}
    # python -m torch.distributed.run ... pretrain_gpt.py: the launcher module is no entry
    reader = _reader((EXAMPLES / "gptoss" / "02_train.sh").read_text())
    launch = mlm_args.find_launch(reader)
    assert launch is not None and launch.script is not None
    assert launch.script.text == "pretrain_gpt.py"
    assert [w.text for w in launch.launcher[:3]] == ["python", "-m", "torch.distributed.run"]
    # python -m examples.inference.offline_inference: not a training entry point
    assert load_file(str(EXAMPLES / "inference" / "run_offline_inference.sh")).skip


# --- 5. where the world came from -----------------------------------------------------------


def test_world_derivation_names_its_source(capsys: pytest.CaptureFixture[str]) -> None:
    path = EXAMPLES / "mixtral" / "train_mixtral_8x7b_distributed.sh"
    main(["--isolated", "--no-cache", "--color", "never", str(path)])
    out = capsys.readouterr().out
    derived = next(line for line in out.splitlines() if "world = 8 GPUs" in line)
    # NNODES=${SLURM_NNODES:-"1"}: a shell default, not a cluster setting
    assert "--nnodes 1 (the shell default of ${SLURM_NNODES} at line 11" in derived
    assert "--nproc_per_node 8 (set at line 7)" in derived
    assert "cluster setting" not in derived
    main(["--isolated", "--no-cache", "--color", "never", str(path), "--gpus", "8"])
    out = capsys.readouterr().out
    assert "world = 8 GPUs (cluster setting)" in out


def test_an_undecided_launch_with_another_world_has_none() -> None:
    # if [[ $BATCH -eq 0 ]]; then torchrun --nproc_per_node 8 ...; else srun ... sh -c
    # "python -u .../train.py ${OPTIONS}"; fi: BATCH comes from the environment.
    doc = load_file(str(EXAMPLES / "multimodal" / "nvlm" / "sft_qwen20_72b_internvit_6b.sh"))
    assert doc.launcher == {}


# --- budgets --------------------------------------------------------------------------------


def test_loops_and_calls_stay_within_the_budget() -> None:
    import time

    nested = "#!/bin/bash\n" + "for i in 1 2 3 4 5 6 7 8; do\n" * 12 + "X=$X$i\n" + "done\n" * 12
    calls = "#!/bin/bash\nf0() { X=1; }\n" + "".join(
        f"f{i}() {{ f{i - 1}; f{i - 1}; }}\n" for i in range(1, 30)) + "f29\n"  # fmt: skip
    for text in (nested, calls):
        start = time.monotonic()
        reader = _reader(text)
        assert time.monotonic() - start < 5
        assert _var(reader, "X") in ("?", "1") or len(_var(reader, "X") or "") < 10**7


def test_a_conf_file_says_only_what_it_sets() -> None:
    # rl/model_configs/qwen3_30b_a3b_moe.sh only sets MODEL_OPTIONS=...; the RL launch command
    # that sources it adds --sequence-parallel and more (examples/rl/README.md): what the file
    # does not give is unknown, not at its default (MOE003 "sequence_parallel off" was false).
    doc, cfg = _cfg(EXAMPLES / "rl" / "model_configs" / "qwen3_30b_a3b_moe.sh")
    assert cfg.value("model.num_layers") == 48 and cfg.value("model.num_moe_experts") == 128
    # TP=${TP:-4}, then `source .../common.sh` (not read): it may set TP.
    assert "model.tensor_model_parallel_size" in cfg.unknown
    assert "model.sequence_parallel" in cfg.unknown
    assert "dataset.create_attention_mask" in cfg.unknown  # a field no flag of it maps to
    assert doc.mlm_defaults == {}


@pytest.mark.parametrize("kind", ["array", "string"])
def test_many_conditional_flags_stay_linear(kind: str) -> None:
    import time

    def script(k: int) -> str:
        if kind == "array":
            body = "".join(f'if [ -n "$X{i}" ]; then A+=(--foo-{i} 1); fi\n' for i in range(k))
            return "#!/bin/bash\nA=(--num-layers 2)\n" + body + "torchrun pretrain_gpt.py ${A[@]}\n"
        body = "".join(f'if [ -n "$X{i}" ]; then A="$A --foo-{i} 1"; fi\n' for i in range(k))
        return '#!/bin/bash\nA="--num-layers 2"\n' + body + "torchrun pretrain_gpt.py $A\n"

    times = []
    for k in (100, 400):
        start = time.monotonic()
        parsed = mlm_args.read_script(script(k))
        times.append(time.monotonic() - start)
        assert parsed.flags[0][0].text == "--num-layers" and parsed.flags[0][1].text == "2"
    assert times[1] < 8 * times[0] + 0.5  # 4x the text: not 16x the work


def test_a_sourced_file_may_set_the_world() -> None:
    # gptoss/02_train.sh: GPUS_PER_NODE=8 ... if [ -n "$DISTRIBUTED_CONFIG_FILE" ]; then
    # source "$DISTRIBUTED_CONFIG_FILE"; fi; GPUS_PER_NODE=${GPUS_PER_NODE:-8}: the file given
    # with --distributed-config-file sets the world.
    doc = load_file(str(EXAMPLES / "gptoss" / "02_train.sh"))
    assert doc.launcher == {}
