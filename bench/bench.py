"""Cold-process benchmark for ``moe-lint``.

Why: the pre-commit hook starts a fresh ``moe-lint`` process on every commit, so what a user
feels is the *cold* wall time -- interpreter start, imports, rule-catalogue load and the lint
itself -- not the throughput of a warm library call. This script measures exactly that:

1. Wall time of ``moe-lint FILE --format concise`` in a new process, launched both as
   ``python -m moe_lint`` and through the ``moe-lint`` console script, next to three baselines:
   ``python -c "import yaml"`` (parsing floor), ``python -c "import yaml; from pydantic import
   BaseModel"`` (the import floor: moe-lint cannot start faster than its two core deps) and
   ``yamllint FILE`` (what a comparable YAML hook costs). Each command gets 2 warm-up runs (so
   .pyc caches and the page cache are hot), then ``--runs`` timed runs; the table reports the
   median, the minimum, and the median's ratio to each baseline.
2. An import profile of one run (``python -X importtime``): the 15 slowest cumulative imports,
   and whether ``rich``, ``ruamel`` or ``jsonschema`` are imported on the clean path at all.

moe-lint exit codes 0 (clean) and 1 (findings) are normal; 2 or 3 (usage / internal error)
stop the benchmark, since timing a failure would be meaningless.

Usage (from the repo root):  python bench/bench.py [--runs 20] [--output FILE] [FILE ...]
Standard library only; ``yamllint`` is used as a subprocess if it is installed.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import sysconfig
import time
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
WARMUP = 2
WATCHED = ("rich", "ruamel", "jsonschema")

# (file, extra moe-lint arguments); files that do not exist are skipped with a note.
DEFAULT_FILES: list[tuple[str, list[str]]] = [
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


def find_script(name: str) -> str | None:
    """The console script installed next to this interpreter, else whatever PATH finds."""
    local = Path(sysconfig.get_path("scripts")) / name
    return str(local) if local.is_file() else shutil.which(name)


def run_once(cmd: list[str], ok: tuple[int, ...]) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - t0
    if proc.returncode not in ok:
        sys.exit(f"error: {' '.join(cmd)} exited {proc.returncode}\n{proc.stderr.decode()}")
    return elapsed


def time_cmd(cmd: list[str], runs: int, ok: tuple[int, ...] = (0, 1)) -> tuple[float, float]:
    """(median, min) wall time in milliseconds over `runs` runs after WARMUP warm-up runs."""
    for _ in range(WARMUP):
        run_once(cmd, ok)
    samples = [run_once(cmd, ok) * 1000 for _ in range(runs)]
    return statistics.median(samples), min(samples)


def machine() -> list[str]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        version = metadata.version("moe-lint")
    except metadata.PackageNotFoundError:
        version = "not installed"
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "?"
    return [
        f"- CPU: {cpu}, {os.cpu_count()} logical cores ({usable} usable by this process)",
        f"- OS: {platform.platform()}",
        f"- Python: {platform.python_version()} ({PY})",
        f"- moe-lint: {version}",
    ]


def import_profile(cmd: list[str], top: int = 15) -> list[str]:
    """Run `cmd` once under -X importtime; return Markdown lines for the slowest imports."""
    proc = subprocess.run(
        [PY, "-X", "importtime", *cmd],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    if proc.returncode not in (0, 1):
        sys.exit(f"error: import profile run exited {proc.returncode}\n{proc.stderr}")
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
        f"Command: `python -X importtime {' '.join(cmd)}`",
        f"({len(rows)} modules imported, {total / 1000:.1f} ms cumulative over top-level "
        "imports; nested imports are counted inside their parents)",
        "",
        "| # | cumulative ms | self ms | module |",
        "|---:|---:|---:|---|",
    ]
    for i, (cum, own_us, name) in enumerate(rows[:top], 1):
        out.append(f"| {i} | {cum / 1000:.1f} | {own_us / 1000:.1f} | `{name}` |")
    out.append("")
    names = [name for _, _, name in rows]
    for pkg in WATCHED:
        hits = [n for n in names if n == pkg or n.startswith(pkg + ".")]
        cum = max((c for c, _, n in rows if n == pkg), default=0)
        out.append(
            f"- `{pkg}`: "
            + (
                f"imported ({len(hits)} modules, {cum / 1000:.1f} ms cumulative)"
                if hits
                else "not imported"
            )
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", help="configs to lint (default: the built-in set)")
    ap.add_argument("--runs", type=int, default=20, help="timed runs per command (default 20)")
    ap.add_argument("--output", type=Path, help="also write the Markdown report here")
    args = ap.parse_args()

    files = [(f, []) for f in args.files] if args.files else DEFAULT_FILES
    present = [(f, extra) for f, extra in files if (ROOT / f).is_file()]
    notes = [f"- skipped `{f}`: file not found" for f, _ in files if not (ROOT / f).is_file()]
    if not present:
        sys.exit("error: no config files to lint")

    script = find_script("moe-lint")
    on_path = shutil.which("moe-lint")  # may be a wrapper (e.g. a pyenv shim): timed as well
    if on_path and script and Path(on_path).resolve() == Path(script).resolve():
        on_path = None
    yamllint = find_script("yamllint")
    if script is None:
        notes.append("- `moe-lint` console script not found: only `python -m moe_lint` timed")
    if yamllint is None:
        notes.append("- `yamllint` not installed: yamllint baseline skipped")

    print(f"timing {args.runs} runs per command (+{WARMUP} warm-up)...", file=sys.stderr)
    floor_yaml = time_cmd([PY, "-c", "import yaml"], args.runs, (0,))
    floor_pyd = time_cmd([PY, "-c", "import yaml; from pydantic import BaseModel"], args.runs, (0,))

    rows = []  # (file, command label, (median, min), yamllint median or None)
    for f, extra in present:
        name = Path(f).name + (f" `{' '.join(extra)}`" if extra else "")
        yl = time_cmd([yamllint, f], args.runs, (0, 1, 2)) if yamllint else None
        lint = [f, *extra, "--format", "concise"]
        rows.append(
            (name, "`python -m moe_lint`", time_cmd([PY, "-m", "moe_lint", *lint], args.runs), yl)
        )
        if script:
            rows.append((name, "`moe-lint` script", time_cmd([script, *lint], args.runs), yl))
        if on_path:
            rows.append((name, "`moe-lint` via PATH", time_cmd([on_path, *lint], args.runs), yl))
        if yl:
            rows.append((name, "`yamllint`", yl, yl))

    def ratio(a: float, b: float | None) -> str:
        return f"{a / b:.2f}×" if b else "–"

    out = [
        "## Machine",
        "",
        *machine(),
        "",
        f"## Cold-process wall time ({args.runs} runs, {WARMUP} warm-up)",
        "",
        "| file | command | median ms | min ms | × import yaml | × yaml+pydantic | × yamllint |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for label, t in (
        ('`python -c "import yaml"`', floor_yaml),
        ('`python -c "import yaml; from pydantic import BaseModel"`', floor_pyd),
    ):
        out.append(
            f"| – | {label} | {t[0]:.1f} | {t[1]:.1f} | {ratio(t[0], floor_yaml[0])} | "
            f"{ratio(t[0], floor_pyd[0])} | – |"
        )
    for name, label, (med, lo), yl in rows:
        out.append(
            f"| {name} | {label} | {med:.1f} | {lo:.1f} | {ratio(med, floor_yaml[0])} | "
            f"{ratio(med, floor_pyd[0])} | {ratio(med, yl[0] if yl else None)} |"
        )
    out.append("")
    if script:
        out.append(f"- `moe-lint` script: `{script}`")
    if on_path:
        out.append(f"- `moe-lint` via PATH: `{on_path}` (a wrapper around the script above)")
    if yamllint:
        out.append(f"- `yamllint`: `{yamllint}`")
    out += notes
    first, extra = present[0]
    out += [
        "",
        "## Import profile (15 slowest cumulative imports)",
        "",
        *import_profile(["-m", "moe_lint", first, *extra, "--format", "concise"]),
    ]

    report = "\n".join(out) + "\n"
    print(report, end="")
    if args.output:
        args.output.write_text(report)


if __name__ == "__main__":
    main()
