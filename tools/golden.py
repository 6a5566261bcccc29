"""The golden snapshot of moe-lint's behaviour, for redesigns that must keep it (issue 11).

Every finding (``--format json``) for every rule fixture case, example, corpus file and full
Bridge dump, with the exit code and stderr, plus ``estimate --format json`` for every full
dump, through the real command line (``moe_lint.cli.main``, in process, ``--isolated``). One
JSON line per input, sorted, paths relative to the repository, in
``tests/data/golden/snapshot.jsonl``.

    python tools/golden.py            # write the snapshot
    python tools/golden.py --check    # compare; print what changed, per input and per finding

The snapshot is not a test: rule work changes findings on purpose, and the comparison is for
the redesign's closing note (each difference is either listed with its reason or a bug).
Fixture cases are linted with every rule, as a user would, not only the rule they test.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shlex
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus_report import corpus_files  # the corpus and the cluster each file is linted for

REPO = Path(__file__).resolve().parent.parent
SNAPSHOT = REPO / "tests" / "data" / "golden" / "snapshot.jsonl"


def _run(args: list[str]) -> tuple[int, str, str]:
    from moe_lint.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


def _relative(text: str, folder: Path, label: str) -> str:
    return text.replace(str(folder) + os.sep, label).replace(str(REPO) + os.sep, "")


def _record(name: str, args: list[str], folder: Path, label: str = "") -> dict[str, Any]:
    code, out, err = _run([*args, "--isolated", "--format", "json", "--show-infos"])
    findings = json.loads(_relative(out, folder, label)) if out.strip() else []
    return {
        "input": name,
        "exit": code,
        "stderr": _relative(err, folder, label),
        "findings": findings,
    }


def _inputs(tmp: Path) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    for path in sorted((REPO / "tests" / "fixtures" / "rules").glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        for case_name, case in data["cases"].items():
            text = case.get("pass", case.get("fail"))
            target = tmp / f"{data['rule']}-{case_name}.yaml"
            target.write_text(text, encoding="utf-8")
            args = [str(target), *shlex.split(case.get("args") or ""), *case.get("overrides", [])]
            name = f"fixture {data['rule']} {case_name}"
            records.append(_record(name, args, tmp, "<fixture>/"))
    for path in sorted((REPO / "examples").glob("*.yaml")):
        records.append(_record(f"example {path.name}", [str(path)], REPO))
    for path, cluster in corpus_files():
        args = [str(path)]
        for key, value in cluster.items():
            args += [f"--{key}", str(value)]
        rel = path.relative_to(REPO).as_posix()
        records.append(_record(f"corpus {rel}", args, REPO))
        if cluster:
            code, out, err = _run(["estimate", *args, "--isolated", "--format", "json"])
            records.append(
                {
                    "input": f"estimate {rel}",
                    "exit": code,
                    "stderr": _relative(err, REPO, ""),
                    "estimate": json.loads(_relative(out, REPO, "")) if out.strip() else None,
                }
            )
    return sorted(records, key=lambda r: str(r["input"]))


def build() -> list[dict[str, Any]]:
    os.environ.pop("MOE_LINT_STRICT", None)
    with tempfile.TemporaryDirectory(prefix="moe-lint-golden-") as tmp:
        return _inputs(Path(tmp).resolve())


def _finding_key(f: dict[str, Any]) -> str:
    return f"{f.get('code')} {f.get('path')}"


def compare(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[str]:
    """Human-readable differences, one line each."""
    lines: list[str] = []
    before = {r["input"]: r for r in old}
    after = {r["input"]: r for r in new}
    for name in sorted(set(before) | set(after)):
        a, b = before.get(name), after.get(name)
        if a is None or b is None:
            lines.append(f"{name}: {'added' if a is None else 'removed'}")
            continue
        if a == b:
            continue
        if a["exit"] != b["exit"]:
            lines.append(f"{name}: exit {a['exit']} -> {b['exit']}")
        if a.get("stderr") != b.get("stderr"):
            lines.append(f"{name}: stderr {a.get('stderr')!r} -> {b.get('stderr')!r}")
        if "estimate" in a or "estimate" in b:
            if a.get("estimate") != b.get("estimate"):
                lines.append(f"{name}: estimate changed")
            continue
        fa = {_finding_key(f): f for f in a["findings"]}
        fb = {_finding_key(f): f for f in b["findings"]}
        for key in sorted(set(fa) | set(fb)):
            if key not in fb:
                lines.append(f"{name}: - {key}: {fa[key].get('message')}")
            elif key not in fa:
                lines.append(f"{name}: + {key}: {fb[key].get('message')}")
            elif fa[key] != fb[key]:
                changed = sorted(
                    k for k in set(fa[key]) | set(fb[key]) if fa[key].get(k) != fb[key].get(k)
                )
                lines.append(f"{name}: ~ {key}: {', '.join(changed)}")
    return lines


def _read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare with the snapshot")
    parser.add_argument("--output", type=Path, default=SNAPSHOT)
    ns = parser.parse_args(argv)
    records = build()
    if ns.check:
        lines = compare(_read(ns.output), records)
        for line in lines:
            print(line)
        print(f"{len(records)} inputs, {len(lines)} differences", file=sys.stderr)
        return 1 if lines else 0
    ns.output.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in records)
    ns.output.write_text(text, encoding="utf-8")
    findings = sum(len(r.get("findings", [])) for r in records)
    print(f"wrote {ns.output.relative_to(REPO)}: {len(records)} inputs, {findings} findings")
    return 0


if __name__ == "__main__":
    sys.exit(main())
