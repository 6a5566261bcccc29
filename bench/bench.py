"""Benchmarks for ``moe-lint``: cold single-file runs, 1,000-config throughput, import profile.

Why: the pre-commit hook starts a fresh ``moe-lint`` process on every commit, so what a user
feels is the *cold* wall time -- interpreter start, imports, rule-catalogue load and the lint
-- and, when a commit touches many configs, the throughput of one process over many files.
Sections (all run by default and with ``--all``; pick some with ``--single/--batch/--profile``):

a. Single config, cold process: ``moe-lint FILE`` (the hook's command line) beside
   ``yamllint FILE`` and the import floor ``python -c "import yaml; from pydantic import
   BaseModel"``; 2 warm-up runs, then ``--runs`` timed runs each; medians and ratios.
b. Many configs, one process: ``--configs`` seeded variants of the test corpus (mostly override
   files, some full dumps) in a temp dir, linted by ONE ``moe-lint --format concise`` process,
   beside ONE ``yamllint`` process and a pure-parse floor (``yaml.compose`` with CSafeLoader on
   every file, timed inside the process and as the whole process). Then the dumps-only case
   (issue 25): ``--configs`` variants of the full Bridge dumps alone, moe-lint, yamllint and
   the compose floor interleaved (one run of each per round), compared in CPU seconds (the
   process and its workers: the machine may have other work), and moe-lint's peak RSS at
   those files and at ``--rss-configs`` (5,000) of them, which should be the same.
c. Import profile of a clean run: ``python -X importtime -m moe_lint FILE``.
d. Peak RSS (``ru_maxrss`` of a wrapper's child) for the single-file and many-config runs.

moe-lint exit codes 0 (clean) and 1 (findings) are normal; anything else stops the benchmark,
since timing a failure would be meaningless. The report is Markdown, ready to paste.

Usage (from the repo root):  python bench/bench.py --all [--runs 20] [--output FILE]
Standard library only; ``yamllint`` is run as a subprocess when it is installed.
"""

from __future__ import annotations

import argparse
import atexit
import io
import json
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import time
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests/data/corpus"
PY = sys.executable
# Every command runs with bytecode caching on, in a fresh cache that the warm-up runs fill:
# pip-installed hooks have .pyc files, so a run that recompiles moe_lint's sources (as under
# PYTHONDONTWRITEBYTECODE=1 with an editable install) would measure the wrong thing. moe-lint's
# own per-user cache also goes to a fresh folder (set in main), filled the same way.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
WARMUP = 2
FLOOR = [PY, "-c", "import yaml; from pydantic import BaseModel"]
WATCHED = ("rich", "ruamel", "jsonschema", "pydantic", "simpleeval", "importlib.metadata",
           "tomllib", "argparse")  # fmt: skip
TARGETS = {  # name: (target, True when the measured value must be at most the target)
    "single_floor": (1.25, True),
    "single_yamllint": (1.3, True),
    "short_yamllint": (1.0, True),  # issue 25: the pre-commit case, one short override file
    "short_import_yaml": (2.5, True),
    "batch_yamllint": (5.0, False),
    "batch_parse": (3.0, True),
    "dumps_compose_cpu": (4.0, True),  # issue 25: 1,000 dumps, CPU s ÷ the compose floor's
    "dumps_rss_mib": (100.0, True),  # issue 25: peak RSS at 5,000 dumps
    "dumps_rss_growth_mib": (10.0, True),  # issue 25: 5,000 dumps' peak RSS - 1,000's
    "memory_estimate_ms": (20.0, True),
    "plan_search_s": (1.0, True),
    "plan_search_4k_s": (2.0, True),  # issue 24: a 256-GPU search at 4K
}

#: A real 40-line override file: the pre-commit hook's typical input (tests/test_startup_budget.py
#: holds its module budget; section a times it against yamllint and `import yaml`).
SHORT_FILE = (
    "tests/data/corpus/megatron-bridge/examples/quantization/conf/"
    "quantized_llama3_8b_pretrain_override_example.yaml"
)
# Counts the modules a run imports after interpreter start-up, inside the console script's
# entry point (moe_lint.cli.run) just before it exits.
MODULE_COUNT = (
    "import os, sys\n"
    "before = set(sys.modules)\n"
    "real_exit = os._exit\n"
    "def counted(code):\n"
    "    sys.stderr.write(f'MODULES {len(set(sys.modules) - before)}\\n')\n"
    "    real_exit(code)\n"
    "os._exit = counted\n"
    "from moe_lint import cli\n"
    "sys.argv = ['moe-lint', *sys.argv[1:]]\n"
    "cli.run()\n"
)

# (file, extra moe-lint arguments) for section a.
SINGLE_FILES: list[tuple[str, list[str]]] = [
    (SHORT_FILE, []),
    (
        "tests/data/corpus/megatron-bridge/examples/recipes/kimi/conf/"
        "kimi_k2_pretrain_override_example.yaml",
        [],
    ),
    (
        "tests/data/corpus/bridge-full-dumps/deepseek_v3_pretrain_1024gpu_h100_fp8sc_config.yaml",
        ["--gpus", "1024", "--gpu", "h100"],
    ),
    ("examples/dsv3_128k_h100.yaml", []),
]

# Section c profiles the first of these with no findings (else the one with fewest). The full
# dumps are NVIDIA's own recipes at their real size, so they should be clean.
CLEAN_CANDIDATES = [
    "examples/dsv3_256k_h100.yaml",
    "examples/dsv3_128k_h100.yaml",
    "examples/qwen3_235b_128k_gb200.yaml",
]

# Section b: corpus files that are not Bridge configs, or are intentionally broken (duplicate
# keys: exit 2), are not used as bases for variants.
NOT_BASES = {
    "card.yaml",
    "gpt_config.yaml",
    "llama3_70b_llm_pretrain.yaml",
    "qwen3_235b_a22b_llm_pretrain.yaml",
    "dsv3_128k_h100_broken.yaml",
}
DUMP_SHARE = 0.1  # one config in ten is a full dump, the rest override files
INT_CHOICES = {
    "tensor_model_parallel_size": (1, 2, 4, 8),
    "pipeline_model_parallel_size": (1, 2, 4, 8, 16),
    "virtual_pipeline_model_parallel_size": (2, 4, 8),
    "context_parallel_size": (1, 2, 4, 8, 16, 32),
    "expert_model_parallel_size": (1, 4, 8, 16, 32, 64),
    "expert_tensor_parallel_size": (1, 2),
    "micro_batch_size": (1, 2, 4),
    "global_batch_size": (64, 128, 256, 512, 1024),
}
SEQ_CHOICES = (4096, 8192, 16384, 32768, 65536, 131072)
RECOMPUTE_MODULES = ("core_attn", "mla_up_proj", "layernorm", "mlp", "moe", "moe_act",
                     "shared_experts")  # fmt: skip
EXTRA_KEYS = [  # (section, key, value); skipped when the key is already in the file
    ("train", "exit_interval", "5000"),
    ("train", "manual_gc", "true"),
    ("logger", "log_throughput", "true"),
    ("model", "moe_router_dtype", "fp32"),
    ("model", "calculate_per_token_loss", "true"),
    ("model", "context_paralel_size", "2"),  # a typo, as users make them
    ("checkpoint", "save_interval", "500"),
]
INT_LINE = re.compile(r"^(\s*)([a-z_]+): (\d+)(\s*(?:#.*)?)$")
RECOMPUTE_LINE = re.compile(r"^(\s*)recompute_modules:(.*)$")
# Prints the loop's wall seconds, then its CPU seconds.
PARSE_FLOOR = (
    "import sys, time, yaml\n"
    "t0, c0 = time.perf_counter(), time.process_time()\n"
    "for p in sys.argv[1:]:\n"
    "    with open(p, encoding='utf-8') as f:\n"
    "        yaml.compose(f.read(), Loader=yaml.CSafeLoader)\n"
    "print(time.perf_counter() - t0, time.process_time() - c0)\n"
)
# Runs argv[2:] and writes "<seconds> <peak RSS kB> <CPU seconds>" of that child to argv[1].
# Reading RUSAGE_CHILDREN here rather than in the benchmark keeps the benchmark's own pages and
# CPU out of it; it covers the child's own children once reaped (moe-lint's workers), and its
# peak RSS is the largest single process's.
WRAPPER = (
    "import resource, subprocess, sys, time\n"
    "t0 = time.perf_counter()\n"
    "code = subprocess.run(sys.argv[2:]).returncode\n"
    "dt = time.perf_counter() - t0\n"
    "use = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "cpu = use.ru_utime + use.ru_stime\n"
    "open(sys.argv[1], 'w').write(f'{dt} {use.ru_maxrss} {cpu}')\n"
    "sys.exit(code)\n"
)


# ---------------------------------------------------------------- running commands


def sh(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    """Run `cmd` in the repo root, as text, with ENV."""
    return subprocess.run(cmd, cwd=ROOT, env=ENV, text=True, **kw)


def find_script(name: str) -> str | None:
    """The console script installed next to this interpreter, else whatever PATH finds."""
    local = Path(sysconfig.get_path("scripts")) / name
    return str(local) if local.is_file() else shutil.which(name)


def check(cmd: list[str], proc: subprocess.CompletedProcess, ok: tuple[int, ...]) -> None:
    if proc.returncode not in ok:
        shown = " ".join(cmd) if len(cmd) < 20 else " ".join(cmd[:8]) + f" ... ({len(cmd)} args)"
        sys.exit(f"error: {shown} exited {proc.returncode}\n{proc.stderr[-3000:]}")


def run_once(cmd: list[str], ok: tuple[int, ...]) -> float:
    t0 = time.perf_counter()
    proc = sh(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - t0
    check(cmd, proc, ok)
    return elapsed


def time_cmd(cmd: list[str], runs: int, ok: tuple[int, ...] = (0, 1)) -> tuple[float, float]:
    """(median, min) wall time in ms over `runs` runs after WARMUP warm-up runs."""
    for _ in range(WARMUP):
        run_once(cmd, ok)
    samples = [run_once(cmd, ok) * 1000 for _ in range(runs)]
    return statistics.median(samples), min(samples)


def measure(cmd: list[str], ok: tuple[int, ...] = (0, 1)) -> tuple[float, float, str, int]:
    """Run `cmd` once under the wrapper: (seconds, peak RSS MiB, stdout, exit code)."""
    seconds, peak, _, stdout, code = measure_cpu(cmd, ok)
    return seconds, peak, stdout, code


def measure_cpu(
    cmd: list[str], ok: tuple[int, ...] = (0, 1)
) -> tuple[float, float, float, str, int]:
    """Run `cmd` once under the wrapper: (wall seconds, peak RSS MiB, CPU seconds of it and
    its children, stdout, exit code)."""
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as out:
        proc = sh([PY, "-c", WRAPPER, out.name, *cmd], capture_output=True)
        check(cmd, proc, ok)
        seconds, peak_kb, cpu = out.read().split()
    return float(seconds), int(peak_kb) / 1024, float(cpu), proc.stdout, proc.returncode


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}×"


def verdict(name: str, value: float) -> str:
    target, at_most = TARGETS[name]
    met = value <= target if at_most else value >= target
    return f"{'≤' if at_most else '≥'} {target:g}× | {'yes' if met else '**no**'}"


# ---------------------------------------------------------------- a + d. single config


def single(files: list[tuple[str, list[str]]], runs: int, moe: str, yamllint: str | None):
    """Markdown lines, and summary rows, for section a (with d's peak RSS)."""
    floor = time_cmd(FLOOR, runs, (0,))
    floor_rss = measure(FLOOR, (0,))[1]
    just_yaml = time_cmd([PY, "-c", "import yaml"], runs, (0,))
    out = [
        f"### a. Single config, cold process ({runs} runs after {WARMUP} warm-up; median ms)",
        "",
        f'Import floor `python -c "import yaml; from pydantic import BaseModel"`: '
        f"**{floor[0]:.1f} ms** (min {floor[1]:.1f}), peak RSS {floor_rss:.1f} MiB. "
        f'For reference `python -c "import yaml"`: {just_yaml[0]:.1f} ms.',
        "",
        *short_line(runs, moe, yamllint, just_yaml[0]),
        "",
        "| file | `moe-lint FILE` ms (min) | `yamllint FILE` ms (min) | moe-lint ÷ floor "
        "| moe-lint ÷ yamllint | moe-lint peak RSS MiB | yamllint peak RSS MiB |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    to_floor, to_yl = [], []
    for f, extra in files:
        name = f"`{Path(f).name}`" + (f" `{' '.join(extra)}`" if extra else "")
        lint = time_cmd([moe, f, *extra], runs)
        lint_rss = measure([moe, f, *extra])[1]
        to_floor.append((lint[0] / floor[0], name))
        if yamllint:
            yl = time_cmd([yamllint, f], runs, (0, 1))
            yl_rss = measure([yamllint, f], (0, 1))[1]
            to_yl.append((lint[0] / yl[0], name))
            yl_cells = (
                f"{yl[0]:.1f} ({yl[1]:.1f}) | {ratio(lint[0], floor[0])} | "
                f"{ratio(lint[0], yl[0])} | {lint_rss:.1f} | {yl_rss:.1f}"
            )
        else:
            yl_cells = f"– | {ratio(lint[0], floor[0])} | – | {lint_rss:.1f} | –"
        out.append(f"| {name} | {lint[0]:.1f} ({lint[1]:.1f}) | {yl_cells} |")
    out += [
        "",
        f"`moe-lint` is `{moe}`"
        + (
            f"; `yamllint` is `{yamllint}`."
            if yamllint
            else "; yamllint is not installed, so its columns are empty."
        ),
    ]
    summary = []
    for key, label, vals in (
        ("single_floor", "single config: moe-lint ÷ import floor", to_floor),
        ("single_yamllint", "single config: moe-lint ÷ yamllint", to_yl),
    ):
        if vals:
            worst, where = max(vals)
            best = min(v for v, _ in vals)
            summary.append(
                f"| {label} (worst file: {where}) | {best:.2f}–{worst:.2f}× | "
                f"{verdict(key, worst)} |"
            )
    return out, summary


def short_line(runs: int, moe: str, yamllint: str | None, just_yaml: float) -> list[str]:
    """The pre-commit line: the short override file, cold, interleaved with yamllint and
    `python -c "import yaml"` (one run of each per round, so load hits all alike), and the
    modules the run imports."""
    cmds = {"moe": [moe, SHORT_FILE], "yaml": [PY, "-c", "import yaml"]}
    if yamllint:
        cmds["yamllint"] = [yamllint, SHORT_FILE]
    for _ in range(WARMUP):
        for cmd in cmds.values():
            run_once(cmd, (0, 1))
    samples: dict[str, list[float]] = {k: [] for k in cmds}
    for _ in range(runs):
        for key, cmd in cmds.items():
            samples[key].append(run_once(cmd, (0, 1)) * 1000)
    med = {k: statistics.median(v) for k, v in samples.items()}
    proc = sh([PY, "-c", MODULE_COUNT, SHORT_FILE], capture_output=True)
    check([PY, "-c", "MODULE_COUNT"], proc, (0, 1))
    found = re.search(r"MODULES (\d+)", proc.stderr)
    modules = found[1] if found else "?"
    yl = (f"`yamllint` {med['yamllint']:.1f} ms: **{ratio(med['moe'], med['yamllint'])}** "
          f"({verdict('short_yamllint', med['moe'] / med['yamllint'])})"
          if yamllint else "yamllint not installed")  # fmt: skip
    return [
        f"Pre-commit case, `moe-lint {Path(SHORT_FILE).name}` (40 lines), {runs} interleaved "
        f"rounds: **{med['moe']:.1f} ms** median; {yl}; `import yaml` {med['yaml']:.1f} ms "
        f"(reference above: {just_yaml:.1f} ms): **{ratio(med['moe'], med['yaml'])}** "
        f"({verdict('short_import_yaml', med['moe'] / med['yaml'])}); {modules} modules imported "
        "after interpreter start-up (tests/test_startup_budget.py holds the budget)."
    ]


# ---------------------------------------------------------------- b + d. many configs


def mutate(text: str, rng: random.Random) -> str:
    """A plausible edit of a config: other parallel sizes, sequence length, recompute list,
    extra comments and keys. Text-level, so comments, quoting and key order survive."""
    seq = rng.choice(SEQ_CHOICES) if rng.random() < 0.5 else None
    src = text.splitlines()
    out: list[str] = []
    i = 0
    while i < len(src):
        line = src[i]
        i += 1
        m = INT_LINE.match(line)
        r = RECOMPUTE_LINE.match(line)
        if m and m[2] in INT_CHOICES and rng.random() < 0.5:
            note = m[4] or (f"  # was {m[3]}" if rng.random() < 0.5 else "")
            line = f"{m[1]}{m[2]}: {rng.choice(INT_CHOICES[m[2]])}{note}"
        elif m and m[2] == "seq_length" and seq:
            line = f"{m[1]}seq_length: {seq}{m[4]}"
        elif r and rng.random() < 0.5:
            rest = r[2].split("#")[0].strip()
            if rest in ("", "null") or (rest.startswith("[") and rest.endswith("]")):
                while (
                    rest == ""
                    and i < len(src)
                    and src[i].strip().startswith("- ")
                    and (len(src[i]) - len(src[i].lstrip()) >= len(r[1]))
                ):
                    i += 1  # drop the old block-style list items
                picked = rng.sample(RECOMPUTE_MODULES, rng.randint(1, 4))
                line = f"{r[1]}recompute_modules: [{', '.join(picked)}]"
        elif re.match(r"^[a-z_]+:\s*$", line) and rng.random() < 0.2:
            out.append(f"# {line.rstrip(': ')} settings (variant notes)")
        elif (
            re.match(r"^\s*[a-z_]+: [^#|>&*!'\"\[{]+$", line)
            and not line.rstrip().endswith(",")
            and rng.random() < 0.03
        ):
            line += "  # tuned"
        out.append(line)
    for section, key, value in rng.sample(EXTRA_KEYS, rng.randint(0, 2)):
        if re.search(rf"^\s*{key}\s*:", text, re.M):
            continue
        for j, head in enumerate(out[:-1]):
            h = re.match(rf"^(\s*){section}:\s*$", head)
            nxt = out[j + 1]
            indent = len(nxt) - len(nxt.lstrip())
            if h and indent > len(h[1]) and not nxt.lstrip().startswith(("-", "#")):
                out.insert(j + 1, f"{' ' * indent}{key}: {value}")
                break
    return "\n".join(out) + "\n"


def make_variants(
    n: int, seed: int, dest: Path, dump_share: float = DUMP_SHARE
) -> tuple[list[str], str]:
    """Write `n` seeded variants of the corpus into `dest`, `dump_share` of them full dumps;
    (paths, Markdown description)."""
    dumps = sorted((CORPUS / "bridge-full-dumps").glob("*.yaml"))
    overrides = sorted(
        p
        for p in [
            *(CORPUS / "megatron-bridge").rglob("*.yaml"),
            *(ROOT / "examples").glob("*.yaml"),
        ]
        if p.name not in NOT_BASES
    )
    rng = random.Random(seed)
    n_dumps = round(n * dump_share)
    bases = [rng.choice(dumps) for _ in range(n_dumps)]
    bases += [rng.choice(overrides) for _ in range(n - n_dumps)]
    rng.shuffle(bases)
    paths, size, lines = [], 0, 0
    for i, base in enumerate(bases):
        text = mutate(base.read_text(encoding="utf-8"), rng)
        header = f"# variant {i} of {base.name} (moe-lint benchmark, seed {seed})\n"
        g = re.search(r"_(\d+)gpu_([a-z0-9]+)_", base.name)
        if base.parent.name == "bridge-full-dumps" and g:  # lint dumps at their real size
            header += f"# moe-lint: gpus={g[1]} gpu={g[2]}\n"
        path = dest / f"v{i:04d}_{base.name}"
        path.write_text(header + text, encoding="utf-8")
        paths.append(str(path))
        size += len(header) + len(text)
        lines += (header + text).count("\n")
    desc = (
        f"{n:,} configs (seed {seed}): {n - n_dumps:,} override files varied from "
        f"{len(overrides)} corpus/example files, {n_dumps:,} full Bridge dumps varied from "
        f"{len(dumps)}; {size / 1e6:.1f} MB, {lines:,} lines in all."
    )
    return paths, desc


def batch(n: int, seed: int, runs: int, moe: str, yamllint: str | None, rss_n: int = 5000):
    """Markdown lines, and summary rows, for section b (with d's peak RSS)."""
    out, summary = mixed_batch(n, seed, runs, moe, yamllint)
    lines, rows = dumps_batch(n, rss_n, seed, runs, moe, yamllint)
    return [*out, "", *lines], [*summary, *rows]


def dumps_batch(n: int, rss_n: int, seed: int, runs: int, moe: str, yamllint: str | None):
    """Section b's dumps-only case: `n` full-dump variants, moe-lint, yamllint and the compose
    floor interleaved for `runs` rounds (best CPU seconds of each), and moe-lint's peak RSS at
    `n` and at `rss_n` dumps (the first `n` are the same files)."""
    with tempfile.TemporaryDirectory(prefix="moe-lint-bench-dumps-") as tmp:
        every, desc = make_variants(max(n, rss_n), seed, Path(tmp), dump_share=1.0)
        paths = every[:n]
        cmds = {"moe-lint": [moe, "--format", "concise", *paths],
                "parse": [PY, "-c", PARSE_FLOOR, *paths]}  # fmt: skip
        if yamllint:
            cmds["yamllint"] = [yamllint, *paths]
        got: dict[str, list[tuple[float, float, float, str, int]]] = {k: [] for k in cmds}
        for _ in range(runs):
            for key, cmd in cmds.items():
                got[key].append(measure_cpu(cmd, (0,) if key == "parse" else (0, 1)))
        big = measure_cpu([moe, "--format", "concise", *every[:rss_n]])
        # The interpreter alone keeps several copies of its arguments (about 2 kB per path):
        # the part of the growth that comes with passing the files on the command line.
        bare = [measure([PY, "-c", "pass", *every[:k]])[1] for k in (n, rss_n)]
    cpu = {k: min(s[2] for s in v) for k, v in got.items()}
    wall = {k: min(s[0] for s in v) for k, v in got.items()}
    loop = min(float(s[3].split()[1]) for s in got["parse"])
    rss_small = statistics.median(s[1] for s in got["moe-lint"])
    rss_big = big[1]
    labels = {
        "moe-lint": f"`moe-lint --format concise <{n:,} dumps>`",
        "yamllint": f"`yamllint <{n:,} dumps>`",
        "parse": "compose floor: `yaml.compose(text, Loader=yaml.CSafeLoader)` per file, "
        "one process",
    }
    out = [
        f"#### b2. {n:,} full Bridge dumps ({runs} interleaved rounds; best CPU s of each)",
        "",
        desc.replace(f"{max(n, rss_n):,} configs", f"{max(n, rss_n):,} dumps")
        + f" The first {n:,} are timed; all {rss_n:,} are linted once for the peak RSS.",
        "",
        "| command | CPU s | ms CPU per dump | ÷ compose floor (CPU) | wall s | peak RSS MiB |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for key in ("moe-lint", "yamllint", "parse"):
        if key not in cpu:
            continue
        peak = statistics.median(s[1] for s in got[key])
        out.append(
            f"| {labels[key]} | {cpu[key]:.2f} | {cpu[key] / n * 1000:.2f} | "
            f"{ratio(cpu[key], cpu['parse'])} | {wall[key]:.2f} | {peak:.1f} |"
        )
    out += [
        f"| compose floor, the loop alone (timed inside the process) | {loop:.2f} | "
        f"{loop / n * 1000:.2f} | – | – | – |",
        f"| `moe-lint --format concise <{rss_n:,} dumps>` (once) | {big[2]:.2f} | "
        f"{big[2] / rss_n * 1000:.2f} | – | {big[0]:.2f} | {rss_big:.1f} |",
        "",
        f"Peak RSS of moe-lint (the largest of its processes): {rss_small:.1f} MiB at "
        f"{n:,} dumps, {rss_big:.1f} MiB at {rss_n:,}: {rss_big - rss_small:+.1f} MiB. "
        f"Of that, `python -c pass` given the same paths grows {bare[1] - bare[0]:+.1f} MiB "
        f"({bare[0]:.1f} → {bare[1]:.1f} MiB): the interpreter's own copies of its arguments.",
    ]
    v = cpu["moe-lint"] / cpu["parse"]
    summary = [
        f"| {n:,} dumps: moe-lint ÷ compose floor, CPU s | {v:.2f}× | "
        f"{verdict('dumps_compose_cpu', v)} |",
        f"| {rss_n:,} dumps: moe-lint peak RSS (MiB) | {rss_big:.1f} | "
        + verdict("dumps_rss_mib", rss_big).replace("×", " MiB")
        + " |",
        f"| peak RSS, {rss_n:,} dumps − {n:,} (MiB) | {rss_big - rss_small:+.1f} | "
        + verdict("dumps_rss_growth_mib", rss_big - rss_small).replace("×", " MiB")
        + " |",
    ]
    if yamllint:
        y = cpu["yamllint"] / cpu["moe-lint"]
        summary.append(f"| {n:,} dumps: yamllint ÷ moe-lint, CPU s | {y:.2f}× | – | – |")
    return out, summary


def mixed_batch(n: int, seed: int, runs: int, moe: str, yamllint: str | None):
    """Section b's mixed case: mostly override files, one in ten a full dump."""
    with tempfile.TemporaryDirectory(prefix="moe-lint-bench-") as tmp:
        paths, desc = make_variants(n, seed, Path(tmp))
        floor = "parse floor: `yaml.compose(text, Loader=yaml.CSafeLoader)` per file, one process"
        cmds = [("moe-lint", f"`moe-lint --format concise <{n} files>`",
                 [moe, "--format", "concise", *paths])]  # fmt: skip
        if yamllint:
            cmds.append(("yamllint", f"`yamllint <{n} files>`", [yamllint, *paths]))
        cmds.append(("parse", floor, [PY, "-c", PARSE_FLOOR, *paths]))
        # Files were just written, so the page cache is warm; .pyc caches are warmed by a.
        res: dict[str, tuple[float, float, str, int]] = {}
        loop: list[float] = []
        for key, _, cmd in cmds:
            samples = [measure(cmd, (0,) if key == "parse" else (0, 1)) for _ in range(runs)]
            if key == "parse":
                loop = [float(s[2].split()[0]) for s in samples]
            res[key] = sorted(samples, key=lambda s: s[0])[len(samples) // 2]  # median run
    med_loop = statistics.median(loop)
    rate = {k: n / v[0] for k, v in res.items()}
    rate["loop"] = n / med_loop
    out = [
        f"### b. {n:,} configs in one process (median of {runs} runs)",
        "",
        desc,
        "",
        "| command | wall s | configs/s | peak RSS MiB | exit code |",
        "|---|---:|---:|---:|---:|",
    ]
    for key, label, _ in cmds:
        sec, rss, _, code = res[key]
        out.append(f"| {label} | {sec:.2f} | {rate[key]:,.0f} | {rss:.1f} | {code} |")
        if key == "parse":
            out.append(
                f"| parse floor, the loop alone (timed inside the process) | "
                f"{med_loop:.2f} | {rate['loop']:,.0f} | – | – |"
            )
    findings = res["moe-lint"][2].count("\n")
    out += [
        "",
        f"moe-lint reported {findings:,} findings over the {n:,} files "
        f"({findings / n:.1f} per file).",
    ]
    summary = []
    if yamllint:
        v = rate["moe-lint"] / rate["yamllint"]
        summary.append(
            f"| {n:,} configs: moe-lint ÷ yamllint throughput | {v:.2f}× | "
            f"{verdict('batch_yamllint', v)} |"
        )
    for key, label in (("loop", "loop only"), ("parse", "whole process")):
        v = rate[key] / rate["moe-lint"]
        summary.append(
            f"| {n:,} configs: parse floor ({label}) ÷ moe-lint throughput | "
            f"{v:.2f}× | {verdict('batch_parse', v)} |"
        )
    return out, summary


# ---------------------------------------------------------------- c. import profile


def pick_clean(moe: str) -> tuple[str, list[str], list[str]]:
    """The first candidate with no findings, else the one with the fewest: (file, args, notes
    on the candidates tried)."""
    candidates = [(f, []) for f in CLEAN_CANDIDATES]
    for dump in sorted((CORPUS / "bridge-full-dumps").glob("*.yaml")):
        g = re.search(r"_(\d+)gpu_([a-z0-9]+)_", dump.name)
        if g:
            candidates.append((str(dump.relative_to(ROOT)), ["--gpus", g[1], "--gpu", g[2]]))
    best, notes = None, []
    for f, extra in candidates:
        if not (ROOT / f).is_file():
            continue
        proc = sh([moe, "--format", "concise", f, *extra], capture_output=True)
        check([moe, f], proc, (0, 1))
        n = len(proc.stdout.splitlines())  # concise: one line per finding
        notes.append(f"`{' '.join([Path(f).name, *extra])}`: {n} finding{'s' * (n != 1)}")
        if best is None or n < best[2]:
            best = (f, extra, n)
        if n == 0:
            break
    if best is None:
        sys.exit("error: no candidate file for the import profile")
    return best[0], best[1], notes


def import_profile(moe: str, top: int = 15) -> list[str]:
    f, extra, notes = pick_clean(moe)
    cmd = ["-m", "moe_lint", f, *extra]
    proc = sh([PY, "-X", "importtime", *cmd], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    check(cmd, proc, (0, 1))
    rows: list[tuple[int, int, str]] = []  # (cumulative us, self us, module)
    total = 0
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "imported package" in line:
            continue
        own, cumulative, module = line[len("import time:") :].split("|", 2)
        rows.append((int(cumulative), int(own), module.strip()))
        if not module[1:].startswith(" "):  # nesting shows as indentation; sum top level only
            total += int(cumulative)
    rows.sort(reverse=True)
    out = [
        f"### c. Import profile of a clean run ({top} slowest cumulative imports)",
        "",
        f"Command: `python -X importtime {' '.join(cmd)}`: {len(rows)} modules, "
        f"{total / 1000:.1f} ms cumulative over top-level imports (nested imports count inside "
        "their parents). The file is the first of these with no findings (else the one with "
        f"the fewest): {'; '.join(notes)}.",
        "",
        "| # | cumulative ms | self ms | module |",
        "|---:|---:|---:|---|",
    ]
    for i, (cum, own_us, name) in enumerate(rows[:top], 1):
        out.append(f"| {i} | {cum / 1000:.1f} | {own_us / 1000:.1f} | `{name}` |")
    out += [
        "",
        "| module | imported on this path? | modules | cumulative ms |",
        "|---|---|---:|---:|",
    ]
    for pkg in WATCHED:
        hits = [(c, name) for c, _, name in rows if name == pkg or name.startswith(pkg + ".")]
        cum = max((c for c, _ in hits), default=0)
        out.append(
            f"| `{pkg}` | {'**yes**' if hits else 'no'} | {len(hits)} | {cum / 1000:.1f} |"
            if hits
            else f"| `{pkg}` | no | 0 | – |"
        )
    return out


# ---------------------------------------------------------------- report


def use_revision(rev: str) -> None:
    """Extract src/ and rules/ at `rev` into a temp dir and put its src/ first on PYTHONPATH
    for every command run from here on (the editable install's path entry comes later)."""
    tar = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src", "rules"],
                         capture_output=True)  # fmt: skip
    if tar.returncode:
        sys.exit(f"error: git archive {rev}: {tar.stderr.decode().strip()}")
    dest = Path(tempfile.mkdtemp(prefix="moe-lint-rev-"))
    atexit.register(shutil.rmtree, dest, True)
    with tarfile.open(fileobj=io.BytesIO(tar.stdout)) as archive:
        safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        archive.extractall(dest, **safe)
    ENV["PYTHONPATH"] = os.pathsep.join([str(dest / "src"), *filter(None, [ENV.get("PYTHONPATH")])])


def use_wheel() -> None:
    """Build this tree's wheel, install it (no dependencies) into a temp dir and put that
    first on PYTHONPATH for every command run from here on: what a pre-commit hook runs
    (pre-commit pip-installs the hook's repository), where the shipped rule catalogue is
    trusted without hashing the packs (engine/catalogue.py::shipped_module), unlike an
    editable install's."""
    dest = Path(tempfile.mkdtemp(prefix="moe-lint-wheel-"))
    atexit.register(shutil.rmtree, dest, True)
    for step in ("wheel", "install"):
        cmd = (
            [PY, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
             str(dest / "dist"), str(ROOT)]
            if step == "wheel"
            else [PY, "-m", "pip", "install", "-q", "--no-deps", "--target",
                  str(dest / "site"), *map(str, (dest / "dist").glob("moe_lint-*.whl"))]
        )  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode:
            sys.exit(f"error: pip {step}: {proc.stderr.strip()[-500:]}")
    paths = [str(dest / "site"), *filter(None, [ENV.get("PYTHONPATH")])]
    ENV["PYTHONPATH"] = os.pathsep.join(paths)


def machine(rev: str | None) -> list[str]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass

    def version(dist: str) -> str:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return "not installed"

    where = sh([PY, "-c", "import moe_lint; print(moe_lint.__file__)"], capture_output=True)
    git = sh(["git", "log", "-1", "--format=%h %s", rev or "HEAD"], capture_output=True)
    dirty = not rev and sh(["git", "status", "--porcelain", "src", "rules"], capture_output=True)
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "?"
    load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    return [
        f"- CPU: {cpu}, {os.cpu_count()} logical cores ({usable} usable by this process)",
        f"- OS: {platform.platform()}; load average at start (1/5/15 min): {load}",
        f"- Python: {platform.python_version()} (`{PY}`)",
        f"- moe-lint imported from `{where.stdout.strip()}`: "
        + (
            f"commit `{git.stdout.strip()}` (`--rev {rev}`)"
            if rev
            else f"working tree at HEAD `{git.stdout.strip()}`"
            + (", with uncommitted changes in src/ or rules/" if dirty and dirty.stdout else "")
        ),
        "- Caches: bytecode under a fresh `PYTHONPYCACHEPREFIX`, moe-lint's under a fresh "
        "`MOE_LINT_CACHE_DIR`, both filled by the warm-up runs"
        + (
            " (`PYTHONDONTWRITEBYTECODE` from this environment dropped)"
            if os.environ.get("PYTHONDONTWRITEBYTECODE")
            else ""
        ),
        f"- PyYAML {version('PyYAML')}, pydantic {version('pydantic')}, "
        f"yamllint {version('yamllint')}",
    ]


# ---------------------------------------------------------------- m. memory model in-process

#: Times the memory model inside one process: ``estimate`` (central + lower bound + band) of
#: every accepted full dump, and how often a lint of the same dumps runs the model per file.
MEMORY_SCRIPT = r"""
import csv, json, statistics, sys, time
from pathlib import Path
from moe_lint.analysis import memory, memory_facts as mf
from moe_lint.config.load import load_file
from moe_lint.config.memory_settings import MemorySettings
from moe_lint.config.settings import Settings
from moe_lint.engine.catalogue import load_catalogue
from moe_lint.linting import lint_document, prepare
dumps = Path("tests/data/corpus/bridge-full-dumps")
lines = (l for l in open(dumps / "VERDICTS.tsv") if not l.startswith("#"))
rows = [r for r in csv.DictReader(lines, delimiter="\t") if r["verdict"] == "ok"]
times, runs, files = [], 0, 0
real = memory.estimate
def counted(*a, **k):
    global runs
    runs += 1
    return real(*a, **k)
catalogue = load_catalogue(plugins=False)
for r in rows:
    cluster = {"gpus": int(r["world"]), "gpu": r["gpu"]}
    doc = load_file(str(dumps / r["file"]))
    cfg, facts, _ = prepare(doc, Settings(), [], cluster)
    try:
        mf.run_estimate(cfg, facts, MemorySettings())
    except Exception:
        continue
    values, plain = mf.config_values(cfg), mf.model_inputs(mf._plain(facts))
    cap = facts.values["gpu_hbm_gib"].value if "gpu_hbm_gib" in facts.values else None
    t = []
    for _ in range(5):
        t0 = time.perf_counter()
        memory.estimate(values, plain, MemorySettings(), cap, dict(cfg.versions))
        t.append((time.perf_counter() - t0) * 1000)
    times.append(statistics.median(t))
    memory.estimate = counted
    lint_document(doc, catalogue, Settings(), [], cluster)
    memory.estimate = real
    files += 1
print(json.dumps({"files": files, "median_ms": statistics.median(times), "max_ms": max(times),
                  "runs_per_file": runs / max(files, 1)}))
"""


def memory_section() -> tuple[list[str], list[str]]:
    """Markdown lines and summary rows for section m."""
    proc = sh([PY, "-c", MEMORY_SCRIPT], capture_output=True)
    check([PY, "-c", "MEMORY_SCRIPT"], proc, (0,))
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    lines = [
        "### m. Memory model in-process",
        "",
        f"`estimate` (central estimate, lower bound and band) of each of {got['files']} accepted "
        f"full dumps: median **{got['median_ms']:.2f} ms**, slowest {got['max_ms']:.2f} ms. "
        f"Linting the same dumps runs the model {got['runs_per_file']:.2f} times per file "
        "(the levers re-run it once per candidate change, only when MEM001/MEM002 fire).",
    ]
    rows = [
        f"| memory estimate of one full dump (slowest, ms) | {got['max_ms']:.2f} | "
        + verdict("memory_estimate_ms", got["max_ms"]).replace("×", " ms")
    ]
    return lines, rows


PLAN_SCRIPT = r"""
import json, statistics, time
from moe_lint.plan.run import Options, build
from moe_lint.plan.search import search
cases = {
    "dsv3-16384xh100-262144": Options(model="deepseek-v3", gpu="h100", gpus=(16384,), seq=262144),
    "dsv3-256xh100-131072": Options(model="deepseek-v3", gpu="h100", gpus=(256,), seq=131072,
                                    precision="fp8-blockwise"),
    "dsv3-256xh100-4096": Options(model="deepseek-v3", gpu="h100", gpus=(256,), seq=4096),
}
out = {}
for name, opts in cases.items():
    req, *_ = build(opts)
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        o = search(req)
        times.append(time.perf_counter() - t0)
    out[name] = {"seconds": statistics.median(times), "layouts": o.visited, "timed": o.timed,
                 "memory": o.memory_checks, "kept": len(o.kept), "gbs": req.gbs}
print(json.dumps(out))
"""


def plan_section() -> tuple[list[str], list[str]]:
    """Markdown lines and summary rows for section p: the planner's search in-process."""
    proc = sh([PY, "-c", PLAN_SCRIPT], capture_output=True)
    check([PY, "-c", "PLAN_SCRIPT"], proc, (0,))
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    lines = ["### p. Planner search in-process (median of 3)", ""]
    for name, g in got.items():
        lines.append(
            f"- {name} (GBS {g['gbs']}, every dimension free): **{g['seconds']:.2f} s**; "
            f"{g['layouts']} layouts past the rules, {g['timed']} plans timed, {g['memory']} "
            f"memory estimates, {g['kept']} kept"
        )
    big = got["dsv3-16384xh100-262144"]["seconds"]
    short = got["dsv3-256xh100-4096"]["seconds"]
    rows = [
        "| planner search, DeepSeek-V3 on 16,384 GPUs at 256K (s) | "
        f"{big:.2f} | " + verdict("plan_search_s", big).replace("×", " s"),
        "| planner search, DeepSeek-V3 on 256 GPUs at 4K (s) | "
        f"{short:.2f} | " + verdict("plan_search_4k_s", short).replace("×", " s"),
    ]
    return lines, rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", help="configs for section a (default: the built-in set)")
    ap.add_argument("--all", action="store_true", help="run every section (the default)")
    ap.add_argument("--single", action="store_true", help="section a: single config, cold")
    ap.add_argument("--batch", action="store_true", help="section b: many configs, one process")
    ap.add_argument("--profile", action="store_true", help="section c: import profile")
    ap.add_argument("--memory", action="store_true", help="section m: memory model in-process")
    ap.add_argument("--plan", action="store_true", help="section p: the planner's search")
    ap.add_argument("--runs", type=int, default=20, help="timed runs per command in a (20)")
    ap.add_argument("--configs", type=int, default=1000, help="configs generated for b (1000)")
    ap.add_argument("--batch-runs", type=int, default=3, help="runs per command in b (3)")
    ap.add_argument("--rss-configs", type=int, default=5000,
                    help="dumps linted once in b for the peak RSS (5000)")  # fmt: skip
    ap.add_argument("--seed", type=int, default=0, help="seed for b's variants (0)")
    ap.add_argument("--output", type=Path, help="also write the Markdown report here")
    ap.add_argument("--rev", help="benchmark src/ and rules/ as of this git revision")
    ap.add_argument("--wheel", action="store_true",
                    help="benchmark this tree built and installed as a wheel (what pre-commit "
                         "runs) instead of the editable install")  # fmt: skip
    args = ap.parse_args()
    caches = tempfile.mkdtemp(prefix="moe-lint-bench-caches-")
    atexit.register(shutil.rmtree, caches, True)
    ENV["PYTHONPYCACHEPREFIX"] = os.path.join(caches, "pyc")
    ENV["MOE_LINT_CACHE_DIR"] = os.path.join(caches, "moe-lint")  # moe-lint's rule cache, if any
    if args.rev and args.wheel:
        sys.exit("error: --rev and --wheel are exclusive")
    if args.rev:
        use_revision(args.rev)
    if args.wheel:
        use_wheel()
    everything = args.all or not (
        args.single or args.batch or args.profile or args.memory or args.plan
    )

    moe = find_script("moe-lint")
    if moe is None:
        sys.exit("error: the moe-lint console script is not installed")
    yamllint = find_script("yamllint")
    files = [(f, []) for f in args.files] if args.files else SINGLE_FILES
    missing = [f for f, _ in files if not (ROOT / f).is_file()]
    if missing:
        sys.exit(f"error: not found: {', '.join(missing)}")

    started = time.perf_counter()
    out = ["### Machine", "", *machine(args.rev), ""]
    summary: list[str] = []
    sections: list[str] = []
    if everything or args.single:
        print("a. single config, cold process...", file=sys.stderr)
        lines, rows = single(files, args.runs, moe, yamllint)
        sections += [*lines, ""]
        summary += rows
    if everything or args.batch:
        print(f"b. {args.configs} configs in one process...", file=sys.stderr)
        lines, rows = batch(
            args.configs, args.seed, args.batch_runs, moe, yamllint, args.rss_configs
        )
        sections += [*lines, ""]
        summary += rows
    if everything or args.profile:
        print("c. import profile...", file=sys.stderr)
        sections += [*import_profile(moe), ""]
    if everything or args.memory:
        print("m. memory model in-process...", file=sys.stderr)
        lines, rows = memory_section()
        sections += [*lines, ""]
        summary += rows
    if everything or args.plan:
        print("p. planner search in-process...", file=sys.stderr)
        lines, rows = plan_section()
        sections += [*lines, ""]
        summary += rows
    if summary:
        out += [
            "### Targets",
            "",
            "| measure | measured | target | met |",
            "|---|---:|---:|---|",
            *summary,
            "",
        ]
    out += sections
    out.append(
        f"_Benchmark took {time.perf_counter() - started:.0f} s (load average at the end: "
        f"{' / '.join(f'{x:.2f}' for x in os.getloadavg())}); command: "
        f"`python bench/bench.py {' '.join(sys.argv[1:])}`._"
    )
    report = "\n".join(out) + "\n"
    print(report, end="")
    if args.output:
        args.output.write_text(report, encoding="utf-8")


if __name__ == "__main__":
    main()
