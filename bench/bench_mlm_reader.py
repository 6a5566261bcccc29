"""Throughput of the Megatron-LM readers: launch scripts (config/shell.py through
mlm_args.parse_script) and functional-test ``MODEL_ARGS:`` files (config/model_args.py through
mlm_args.parse_model_args), timed inside one process (CPU time, no start-up or rules).

Why: issue 22 asks each reader to cost in proportion to its input. This reads every real
script and MODEL_ARGS file under tests/data/megatron-lm/ (per-file ms, and MB/s over all of
them), then synthetic large ones (a long value, many flags, a long bracket list, a script of
many commands, a script that splits and copies a large value): each is read at its size or
refused with one ``bounds.*`` line, and the table says which and how fast.

Usage (from the repo root):  python bench/bench_mlm_reader.py [--runs 3] [--top 10]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from moe_lint.config import load, mlm_args  # noqa: E402
from moe_lint.errors import InputError  # noqa: E402

DATA = REPO / "tests" / "data" / "megatron-lm"


def read(path: str, text: str) -> str:
    """Read ``text`` the way moe-lint does for a Megatron-LM input: 'read', or the refusal."""
    try:
        if mlm_args.looks_like_script(text, path):
            mlm_args.parse_script(text, path)
            return "read"
        node = load.compose(text)[0]
        mlm_args.parse_model_args(text, path, node)
        return "read"
    except InputError as exc:
        return "refused: " + str(exc)[:70]


def timed(fn: Callable[[], str], runs: int) -> tuple[float, str]:
    best, outcome = float("inf"), ""
    for _ in range(runs):
        start = time.process_time()
        outcome = fn()
        best = min(best, time.process_time() - start)
    return best, outcome


def real_files() -> list[Path]:
    files = [p for p in DATA.rglob("*") if p.is_file() and p.suffix in (".sh", ".yaml", ".yml")]
    out = []
    for p in sorted(files):
        text = p.read_text(errors="replace")
        if p.suffix == ".sh" or "MODEL_ARGS:" in text:
            out.append(p)
    return out


def synthetic() -> dict[str, tuple[str, str]]:
    sh, run = "#!/bin/bash\n", "torchrun pretrain_gpt.py --num-layers 2\n"
    flags = "".join(f"  --flag-{i}: {i}\n" for i in range(9_000))
    return {
        "MODEL_ARGS 7 MB value": ("a.yaml", "MODEL_ARGS:\n  --x-y: " + "a" * 7_000_000 + "\n"),
        "MODEL_ARGS 9k flags": ("b.yaml", "MODEL_ARGS:\n" + flags),
        "MODEL_ARGS 4 MB list": ("c.yaml", "MODEL_ARGS:\n  --x: '[" + "ab " * 1_300_000 + "]'\n"),
        "script 5k commands": ("d.sh", sh + "".join(f"A{i}=$B{i}\n" for i in range(5_000)) + run),
        "script 1 MB default": ("e.sh", sh + "X=${A:-" + "ab" * 500_000 + "}\n" + run),
        "script 2k-flag command": (
            "f.sh",
            sh + "torchrun pretrain_gpt.py " + "--num-layers 2 " * 2_000 + "\n",
        ),
        "script split x200": (
            "g.sh",
            sh + "A='" + "x " * 50_000 + "'\n" + "".join(f"B{i}=($A)\n" for i in range(200)) + run,
        ),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="best of N runs a file")
    parser.add_argument("--top", type=int, default=10, help="slowest real files shown")
    args = parser.parse_args()

    rows = []
    total_bytes = total_s = 0.0
    for path in real_files():
        text = path.read_text(errors="replace")
        seconds, outcome = timed(lambda p=str(path), t=text: read(p, t), args.runs)
        rows.append((seconds, len(text.encode()), path.relative_to(DATA), outcome))
        total_bytes += len(text.encode())
        total_s += seconds
    print(f"## Real files under tests/data/megatron-lm/ ({len(rows)}, best of {args.runs})\n")
    print(f"total {total_bytes / 1e6:.2f} MB in {total_s:.3f} s CPU: "
          f"{total_bytes / 1e6 / max(total_s, 1e-9):.2f} MB/s; "
          f"median {sorted(r[0] for r in rows)[len(rows) // 2] * 1e3:.2f} ms a file\n")  # fmt: skip
    print("| file | KB | ms | KB/s | outcome |\n|---|---:|---:|---:|---|")
    for seconds, size, name, outcome in sorted(rows, reverse=True)[: args.top]:
        print(f"| {name} | {size / 1e3:.1f} | {seconds * 1e3:.2f} | "
              f"{size / 1e3 / max(seconds, 1e-9):,.0f} | {outcome} |")  # fmt: skip

    print("\n## Synthetic large inputs (best of 1)\n")
    print("| input | MB | s | MB/s | outcome |\n|---|---:|---:|---:|---|")
    for label, (name, text) in synthetic().items():
        seconds, outcome = timed(lambda n=name, t=text: read(n, t), 1)
        size = len(text.encode()) / 1e6
        print(f"| {label} | {size:.2f} | {seconds:.3f} | {size / max(seconds, 1e-9):.1f} | "
              f"{outcome} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
