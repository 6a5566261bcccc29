"""Mutators and oracles of bench/fuzz.py's ``--target scripts | model-args | plan`` (issue 22).

- ``scripts``: a real Megatron-LM or Megatron Bridge launch script (tests/data/megatron-lm and
  tests/data/bridge-launch) with 1-4 mutations: shell-significant text inserted (unbalanced
  quotes, ``$(``, ``${A:-``, heredocs, ``case``/``if``/loops without their end, backslashes,
  ``"${A[@]}"``, huge or repeated arrays, 10,000-word lines, deep nesting), lines duplicated,
  deleted or swapped, or the byte mutations of bench/fuzz.py.
- ``model-args``: a real functional test's model_config.yaml (tests/data/megatron-lm/ci) with a
  MODEL_ARGS or ENV_VARS value replaced (odd scalars, 100,000-character values, globs, ``$VAR``,
  brackets, lists, maps), anchors and merge keys (``<<:``) added, flags added by the thousand,
  or the byte mutations.
- ``plan``: a ``moe-lint plan`` command line with 1-3 arguments replaced by hostile values
  (zero, negative, 1,000- and 5,000-digit numbers, NaN, ranges, long lists, unknown names,
  unwritable ``-o`` targets). Each is parsed and checked the way the CLI does
  (``cli.plan.plan_options``) and, once accepted, its request built (``plan.run.build``); one
  case in ``--plan-every`` runs the whole search.

A case fails when anything but a ``moe_lint.Error`` escapes (the CLI's exit 3), an error message
is not one bounded line, or on bench/fuzz.py's CPU and memory limits.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
MLM = REPO / "tests" / "data" / "megatron-lm"
BRIDGE = REPO / "tests" / "data" / "bridge-launch"

#: Shell text a mutation inserts: each a construct the reader must bound or refuse.
SHELL_PIECES = [
    "'", '"', "`", "$(", "${", "${A:-", "${A:-" * 200, "}" * 200, "\\", "\\\n", "<<EOF\n",
    "<<'EOF'\nx\n", "case $1 in\n", "a) X=1;;\n", "esac\n", "if [ -n \"$1\" ]; then\n", "fi\n",
    "for x in a b c; do\n", "done\n", "while true; do\n", "f() {\n", "}\n", "f; f; f\n",
    'A=(${A[@]} ${A[@]})\n', 'A+=("${A[@]}")\n', "A=(" + "x " * 5000 + ")\n",
    "X=" + "y" * 100_000 + "\n", "echo " + "w " * 10_000 + "\n", "$((1<<62))", "$((1/0))",
    "eval \"$X\"\n", "source /nonexistent\n", "read -r -d '' V <<'EOF'\n--num-layers 2\nEOF\n",
    "bash -c \"$CMD\"\n", "torchrun pretrain_gpt.py --num-layers 2 ${A[@]}\n", "\x00", "\r\n",
    "--tensor-model-parallel-size 0 ", "--num-layers -1 ", "--seq-length " + "9" * 5000 + " ",
    "export CUDA_DEVICE_MAX_CONNECTIONS=1\n", "set -euo pipefail\n", "exit 1\n", "((",
    "[[ $A == *x* ]] && B=1\n", "declare -A M=([a]=1)\n", "$" * 1000, "(" * 500, ")" * 500,
]  # fmt: skip
#: MODEL_ARGS values a mutation writes (YAML text).
MODEL_ARGS_VALUES = [
    "0", "-1", "9" * 5000, "1.5", ".inf", ".nan", "''", '""', "null", "true", "false",
    "x" * 100_000,
    "'[a b c]'", "'(a b)'", "'MEMEM*EMEMEM*E/*E/*E'", "'$DATA_PATH'", "'${HOME}/x'", "'a b c'",
    "[1, 2, 3]", "{a: 1}", "'`id`'", "'$(id)'", "'a\\nb'", "'--num-layers 2'", "'[local]'",
    "&a 8", "*a", "!!binary aGk=", "'" + "[" * 200 + "'",
]  # fmt: skip


def script_seeds() -> list[tuple[str, str]]:
    """Every launch script the tests hold (Megatron-LM examples, Bridge's launch scripts)."""
    out = []
    for root in (MLM, BRIDGE):
        for path in sorted(root.rglob("*.sh")):
            out.append((str(path.relative_to(REPO)), path.read_text(encoding="utf-8")))
    return out


def model_args_seeds() -> list[tuple[str, str]]:
    """Every functional test's model_config.yaml the tests hold."""
    return [(str(p.relative_to(REPO)), p.read_text(encoding="utf-8"))
            for p in sorted((MLM / "ci").rglob("model_config.yaml"))]  # fmt: skip


def _lines(text: str, rng: random.Random) -> str:
    lines = text.splitlines(keepends=True) or [""]
    i = rng.randrange(len(lines))
    op = rng.randrange(3)
    if op == 0:
        lines.insert(i, lines[rng.randrange(len(lines))] * rng.choice((1, 2, 50)))
    elif op == 1:
        del lines[i]
    else:
        j = rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    return "".join(lines)


def mutate_script(text: str, rng: random.Random, mutate_bytes: Any) -> bytes:
    """1-4 shell-aware, line or byte mutations of one script."""
    for _ in range(rng.randint(1, 4)):
        kind = rng.random()
        if kind < 0.55:
            at = rng.randrange(len(text) + 1)
            text = text[:at] + rng.choice(SHELL_PIECES) * rng.choice((1, 1, 1, 3, 40)) + text[at:]
        elif kind < 0.8:
            text = _lines(text, rng)
        else:
            return mutate_bytes(text.encode("utf-8", "surrogatepass"), rng)  # type: ignore[no-any-return]
    return text.encode("utf-8", "surrogatepass")


def mutate_model_args(text: str, rng: random.Random, mutate_bytes: Any) -> bytes:
    """1-4 MODEL_ARGS-aware, line or byte mutations of one model_config.yaml."""
    lines = text.splitlines(keepends=True)
    for _ in range(rng.randint(1, 4)):
        flags = [i for i, line in enumerate(lines) if line.lstrip().startswith("--")]
        kind = rng.random()
        if kind < 0.45 and flags:
            i = rng.choice(flags)
            key = lines[i].split(":", 1)[0]
            lines[i] = f"{key}: {rng.choice(MODEL_ARGS_VALUES)}\n"
        elif kind < 0.6 and flags:
            i = rng.choice(flags)
            lines[i] = lines[i].replace(":", ": &m", 1) if "&" not in lines[i] else lines[i]
            lines.insert(i + 1, "  <<: *m\n" if rng.random() < 0.5 else "  --alias-of: *m\n")
        elif kind < 0.7 and flags:
            i = rng.choice(flags)
            many = rng.choice((10, 1000, 20_000))
            lines[i:i] = [f"  --flag-{k}-x: {k}\n" for k in range(many)]
        elif kind < 0.8:
            at = rng.randrange(len(lines) + 1)
            extra = ("ENV_VARS:\n  A: *m\n", "MODEL_ARGS:\n", "<<: {}\n",
                     "  --x-y: " + "a" * 200_000 + "\n", "\t--x: 1\n")  # fmt: skip
            lines.insert(at, rng.choice(extra))
        elif kind < 0.9:
            lines = _lines("".join(lines), rng).splitlines(keepends=True)
        else:
            return mutate_bytes("".join(lines).encode("utf-8", "surrogatepass"), rng)  # type: ignore[no-any-return]
    return "".join(lines).encode("utf-8", "surrogatepass")


def error_problem(exc: BaseException) -> str | None:
    """A moe-lint error's message must be one non-empty line within MAX_MESSAGE_CHARS."""
    from moe_lint.bounds import MAX_MESSAGE_CHARS

    text = str(exc)
    if not text.strip() or "\n" in text.strip() or len(text) > MAX_MESSAGE_CHARS:
        return f"error message not one bounded line: {text[:200]!r} ({len(text):,} chars)"
    return None


def check_text_case(raw: bytes, suffix: str, catalogue: Any, folder: Path) -> str | None:
    """Lint ``raw`` as a file ending in ``suffix`` the way the CLI does (load, then lint)."""
    from moe_lint.config.load import decode, parse_text
    from moe_lint.config.settings import Settings
    from moe_lint.errors import Error
    from moe_lint.linting import lint_document

    name = str(folder / f"case{suffix}")
    try:
        text, _ = decode(raw, name)
        doc = parse_text(text, name)
        result = lint_document(doc, catalogue, Settings(), [], {"gpus": 8})
        if result.error is not None and "\n" in result.error.strip():
            return f"input error not one line: {result.error[:200]!r}"
    except Error as exc:
        return error_problem(exc)
    return None


#: A valid plan command line; each case replaces some of its values or adds options.
PLAN_BASE = ["--model", "qwen3-30b-a3b", "--gpu", "h100", "--gpus", "8"]
PLAN_OPTIONS: list[tuple[str, list[str]]] = [
    ("--gpus", ["0", "-8", "9" * 1000, "1-" + "9" * 50, "64-8", "5-7", "1-1000000000", "8,,16",
                ",".join(["8"] * 100), "1-16777216", "x", "", "8.5", "1e3", "٨"]),
    ("--seq", ["0", "-4096", "9" * 5000, "nan", "131072", "2147483649"]),
    ("--gbs", ["0", "-1", "9" * 40, "1"]),
    ("--tokens-per-step", ["0", "-1", "1"]),
    ("--max-ep", ["0", "-1", "9" * 30]),
    ("--top", ["0", "-1", "1000000000", "101", "1"]),
    ("--emit", ["0", "1000000000", "1"]),
    ("--nodes", ["0", "-1", "9" * 30]),
    ("--gpus-per-node", ["0", "9" * 30, "8"]),
    ("--precision", ["fp8", "bf16", "x"]),
    ("--dispatcher", ["alltoall", "x"]),
    ("--objective", ["gpus", "x"]),
    ("--compare", ["tp=0", "tp=" + "9" * 5000, "tp=1,tp=2", "x", "", "gpus=0", "tp=1,cp=2,ep=8"]),
    ("--set", ["tp=0", "etp=0", "mbs=0", "tp=-1", "vpp=0", "tp=" + "9" * 5000, "offload=abc",
               "offload=nan", "offload=2", "offload=-0.0", "recompute=bogus", "recompute=full",
               "recompute=core_attn,moe_act", "x=1", "model.x=1", "model.num_layers=0",
               "model.seq_length=" + "9" * 5000, "=", "tp", "train.global_batch_size=-1"]),
    ("-o", ["/dev/full", ".", "no/such/dir/x.yaml", "/proc/version"]),
    ("--model", ["nosuch", "", "~nobody/x", "/dev/zero", "x" * 5000,
                 "deepseek_v3_pretrain_config", "qwen3_30b_a3b_pretrain_config",
                 "llama3_8b_pretrain_config", "nosuch_pretrain_config", "x" * 300 + "_config"]),
    ("--emit-format", ["hydra", "yaml", "mlm", ""]),
]  # fmt: skip


def make_plan_case(rng: random.Random) -> list[str]:
    """A plan command line: the base with 1-3 hostile options (the later of two wins)."""
    args = list(PLAN_BASE)
    for _ in range(rng.randint(1, 3)):
        option, values = rng.choice(PLAN_OPTIONS)
        args += [option, rng.choice(values)]
    return args


def check_plan_case(args: list[str], full: bool) -> str | None:
    """Parse and check ``args`` as ``moe-lint plan`` does; build the request when accepted."""
    import io
    from contextlib import redirect_stderr, redirect_stdout

    from moe_lint import cli
    from moe_lint.cli.plan import plan_options
    from moe_lint.errors import Error
    from moe_lint.plan.run import build

    try:
        if full:
            err = io.StringIO()
            with redirect_stdout(io.StringIO()), redirect_stderr(err):
                code = cli.main(["plan", *args, "--top", "2"])
            if code not in (0, 1, 2):
                return f"exit {code}: {err.getvalue()[:200]!r}"
            lines = err.getvalue().strip().splitlines()
            return None if len(lines) <= 1 else f"{len(lines)} stderr lines: {lines[:2]!r}"
        _, opts = plan_options(args)
        build(opts)
    except Error as exc:
        return error_problem(exc)
    except SystemExit as exc:  # argparse: one usage line and exit 2
        return None if exc.code == 2 else f"exit {exc.code}"
    return None
