"""Cold vs warm moe-lint processes: the cost of a fresh per-user cache (issue 10).

    python bench/cold_warm.py [--src SRC] [--runs N] [FILE]

Runs ``python -m moe_lint FILE`` and a console-script wrapper with the bytecode cache warm
(a temporary ``PYTHONPYCACHEPREFIX``, as a pip install has ``.pyc`` files) and moe-lint's own
cache folder either filled (warm), empty (cold: a fresh CI container or pre-commit
environment) or off (``MOE_LINT_NO_CACHE=1``), interleaved so machine load hits all three
alike. Prints the median and minimum wall time and the median CPU time (user + system) of each.
``--src`` measures another tree (e.g. an older revision unpacked with ``git archive``).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _run(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        raise SystemExit(proc.stderr.decode(errors="replace"))
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", default=str(REPO / "examples" / "dsv3_128k_h100.yaml"))
    parser.add_argument("--src", default=str(REPO / "src"))
    parser.add_argument("--runs", type=int, default=20)
    ns = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="moe-lint-cold-warm-"))
    script = scratch / "moe-lint"
    script.write_text(
        f"#!{sys.executable}\nimport sys\nfrom moe_lint.cli import main\nsys.exit(main())\n"
    )
    script.chmod(0o755)
    base = {k: v for k, v in os.environ.items() if not k.startswith(("MOE_LINT", "XDG_"))}
    base.pop("PYTHONDONTWRITEBYTECODE", None)
    base.update(PYTHONPATH=ns.src, PYTHONPYCACHEPREFIX=str(scratch / "pyc"))
    commands = {
        "python -m moe_lint": [sys.executable, "-m", "moe_lint", ns.file],
        "console script": [str(script), ns.file],
    }
    try:
        _measure(commands, base, scratch, ns.runs)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


def _measure(
    commands: dict[str, list[str]], base: dict[str, str], scratch: Path, runs: int
) -> None:
    for label, cmd in commands.items():
        warm_env = {**base, "MOE_LINT_CACHE_DIR": tempfile.mkdtemp(dir=scratch)}
        for _ in range(3):
            _run(cmd, warm_env)
        results: dict[str, list[tuple[float, float]]] = {"warm": [], "cold": [], "no-cache": []}
        for _ in range(runs):
            results["warm"].append(_run(cmd, warm_env))
            cold_env = {**base, "MOE_LINT_CACHE_DIR": tempfile.mkdtemp(dir=scratch)}
            results["cold"].append(_run(cmd, cold_env))
            results["no-cache"].append(_run(cmd, {**base, "MOE_LINT_NO_CACHE": "1"}))
        for kind, rows in results.items():
            wall = [r[0] * 1000 for r in rows]
            cpu = [r[1] * 1000 for r in rows]
            print(
                f"{label:20s} {kind:9s} wall median {statistics.median(wall):6.1f} ms "
                f"(min {min(wall):6.1f})  cpu median {statistics.median(cpu):6.1f} ms"
            )


if __name__ == "__main__":
    sys.exit(main())
