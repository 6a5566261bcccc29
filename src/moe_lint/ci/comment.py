"""The GitHub Action's pull-request comment: the findings table of the lint step and, for each
linted config, its memory table from ``moe-lint estimate --format json``, under a hidden marker
(:data:`MARKER`) so that each push updates the action's one comment instead of adding another.

The tables come from the estimate command's own JSON (the same numbers ``moe-lint estimate``
prints), run in this process once per file, so a config that cannot be estimated (a partial
override file with no model, a YAML file that is no config) gets its reason instead of a table
and does not hide the others. Posting goes through ``gh api`` (preinstalled on GitHub's
runners, authenticated by ``GH_TOKEN``), so no HTTP client or token handling lives here.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
from collections.abc import Sequence
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from moe_lint import __version__
from moe_lint.cli import main as moe_lint_main
from moe_lint.errors import UsageError
from moe_lint.output import escape

#: The hidden first line of the action's comment: how a later run finds the comment to update.
MARKER = "<!-- moe-lint -->"
#: GitHub rejects comment bodies over 65,536 characters; what is left is room for the notes
#: that say what was cut.
MAX_BODY = 60_000
#: How many levers each memory table lists (``moe-lint estimate`` prints five).
LEVERS = 3


@dataclass
class Estimated:
    """One config's estimate: the JSON entry ``moe-lint estimate`` wrote, or why there is none."""

    file: str
    entry: dict[str, Any] | None
    problem: str | None = None


def read_list(path: str | Path) -> list[str]:
    """The NUL-separated file list changed-files.sh writes (any file name survives it)."""
    data = Path(path).read_bytes().decode("utf-8", "surrogateescape")
    return [name for name in data.split("\0") if name]


def estimate_file(path: str, options: Sequence[str]) -> Estimated:
    """``moe-lint estimate OPTIONS --format json -- PATH``, in this process: its JSON entry, or
    the reason moe-lint gave on stderr (exit code 2) when it could not estimate the file."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = moe_lint_main(["estimate", *options, "--format", "json", "--", path])
    entries = json.loads(out.getvalue()) if out.getvalue().strip() else []
    if code in (0, 1) and entries:
        return Estimated(path, entries[0])
    reasons = []
    for line in err.getvalue().splitlines():
        for prefix in (f"{path}: error: ", f"{path}: skipped: ", "moe-lint: error: "):
            if line.startswith(prefix):
                line = line.removeprefix(prefix)
        if line.strip():
            reasons.append(line.strip())
    reason = "; ".join(reasons) or f"moe-lint estimate exited with code {code}"
    return Estimated(path, None, reason[:400])


def _gib(value: Any) -> str:
    return "–" if value is None else f"{value:.2f}"


def memory_table(entry: dict[str, Any]) -> str:
    """One config's section: where it runs and the verdict, a row per pipeline stage (device
    total with its lower bound and band, the allocated and reserved peaks), the terms of the
    worst stage and the first levers."""
    md = escape.markdown
    if entry.get("usable_gib") is not None:
        where = f"{md(str(entry['gpu']))}, {entry['usable_gib']:.1f} GiB usable"
    elif entry.get("gpu"):
        where = f"{md(str(entry['gpu']))}: its memory is not in moe-lint's GPU table, no verdict"
    else:
        where = "no GPU given (the gpu input, or gpu in the file's settings): no verdict"
    verdict = entry.get("verdict_text") or "no verdict"
    lines = [
        f"#### {md(str(entry['file']))}",
        "",
        f"{where}. {md(verdict)}",
        "",
        "| PP stage | peak in | device total GiB | lower bound | band up to | allocated "
        "| reserved |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    worst = entry.get("worst_stage")
    for stage in entry.get("stages", []):
        name = f"**{stage['stage']}** (worst)" if stage["stage"] == worst else str(stage["stage"])
        cells = [
            name,
            md(str(stage["peak_phase"])),
            _gib(stage["total_gib"]),
            _gib(stage.get("lower_bound_gib")),
            _gib(stage.get("upper_band_gib")),
            _gib(stage["allocated_gib"]),
            _gib(stage["reserved_gib"]),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    stages = {s["stage"]: s for s in entry.get("stages", [])}
    if worst in stages:
        terms = sorted(stages[worst]["terms"], key=lambda t: t["gib"], reverse=True)
        lines += [
            "",
            f"<details><summary>Stage {worst}: the terms</summary>",
            "",
            "| term | GiB |",
            "|---|---:|",
            *(f"| {md(str(t['name']))} | {_gib(t['gib'])} |" for t in terms),
            "",
            "</details>",
        ]
    levers = entry.get("levers", [])[:LEVERS]
    if levers:
        lines += [
            "",
            "Levers (each re-runs the model):",
            "",
            "| lever | GiB | requires |",
            "|---|---:|---|",
        ]
        lines += [
            f"| {md(str(lv['name']))} | {lv['delta_gib']:+.1f} | {md(str(lv['requires']))} |"
            for lv in levers
        ]
    return "\n".join(lines) + "\n"


def _cut_summary(summary: str, limit: int) -> str:
    """The findings table, cut at a row boundary when it alone would fill the comment."""
    if len(summary) <= limit:
        return summary
    kept: list[str] = []
    size = 0
    for line in summary.splitlines():
        if size + len(line) + 1 > limit:
            break
        kept.append(line)
        size += len(line) + 1
    kept += ["", "*The table is cut here: the job summary has every finding.*"]
    return "\n".join(kept) + "\n"


def render(estimates: Sequence[Estimated], summary: str = "") -> str:
    """The comment body: the marker, the findings table (the lint step's ``--summary``), then
    each config's memory table, within GitHub's size limit (what does not fit is named)."""
    findings = _cut_summary(summary.strip() + "\n", MAX_BODY // 2) if summary.strip() else ""
    parts = [MARKER, findings or "### moe-lint\n", "### Memory per GPU", ""]
    size = sum(len(p) + 1 for p in parts)
    left_out = 0
    without = []
    for item in estimates:
        if item.entry is None:
            without.append(f"- {escape.markdown(item.file)}: {escape.markdown(item.problem or '')}")
            continue
        section = memory_table(item.entry)
        if size + len(section) > MAX_BODY:
            left_out += 1
            continue
        parts.append(section)
        size += len(section) + 1
    if not any(item.entry is not None for item in estimates):
        parts.append("No memory estimate.\n")
    if without:
        notes = "\n".join(without)
        if size + len(notes) > MAX_BODY:
            notes = f"{len(without)} more file(s) had no memory estimate (see the job log)."
        parts += ["No memory table:", "", notes, ""]
    if left_out:
        parts.append(
            f"*{left_out} more memory table(s) left out: a comment holds 65,536 characters.*\n"
        )
    parts.append(f"<sub>moe-lint {__version__}; this comment is updated on every push.</sub>")
    return "\n".join(parts) + "\n"


# ------------------------------------------------------------------------------------ posting


def _json_values(text: str) -> list[Any]:
    """The values of ``gh api --paginate``, which prints each page's JSON array in turn."""
    decoder = json.JSONDecoder()
    values: list[Any] = []
    at = 0
    text = text.strip()
    while at < len(text):
        value, at = decoder.raw_decode(text, at)
        values.extend(value if isinstance(value, list) else [value])
        while at < len(text) and text[at].isspace():
            at += 1
    return values


def find_comment(listing: str) -> int | None:
    """The id of the first comment whose body starts with :data:`MARKER`, else None."""
    for comment in _json_values(listing):
        body = comment.get("body") if isinstance(comment, dict) else None
        if isinstance(body, str) and body.startswith(MARKER) and isinstance(comment["id"], int):
            return int(comment["id"])
    return None


def _warn(message: str) -> None:
    """A workflow warning: the gate is the lint step's, so a comment that cannot be posted
    (a fork's read-only token, a missing permission) shows but does not fail the job."""
    print(f"::warning title=moe-lint::{escape.github_data(message)}")


def post(body_file: Path, repo: str, pr: str, gh: str = "gh", create: bool = True) -> int:
    """Create the pull request's moe-lint comment, or update it when one exists (by
    :data:`MARKER`); with ``create`` false only update one (a push that changes no config
    says so in an existing comment, and adds none). The API paths are built from ``repo`` and
    ``pr``, so both are checked."""
    if not re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", repo):
        raise UsageError(f"--repo must be owner/name, not {repo!r}")
    if not re.fullmatch(r"[0-9]+", pr):
        raise UsageError(f"--pr must be a pull request number, not {pr!r}")
    listed = subprocess.run(
        [gh, "api", "--paginate", f"repos/{repo}/issues/{pr}/comments?per_page=100"],
        capture_output=True,
        text=True,
        check=False,
    )
    if listed.returncode != 0:
        _warn(f"could not list the pull request's comments: {listed.stderr.strip()[:300]}")
        return 0
    found = find_comment(listed.stdout)
    if found is None and not create:
        print("moe-lint: no config to lint and no comment to update: no comment posted")
        return 0
    request = body_file.with_suffix(".json")
    request.write_text(
        json.dumps({"body": body_file.read_text(encoding="utf-8")}), encoding="utf-8"
    )
    if found is None:
        method, endpoint = "POST", f"repos/{repo}/issues/{pr}/comments"
    else:
        method, endpoint = "PATCH", f"repos/{repo}/issues/comments/{found}"
    sent = subprocess.run(
        [gh, "api", "--method", method, endpoint, "--input", str(request)],
        capture_output=True,
        text=True,
        check=False,
    )
    if sent.returncode != 0:
        _warn(f"could not post the pull-request comment: {sent.stderr.strip()[:300]}")
        return 0
    verb = "created" if found is None else "updated"
    try:
        url = json.loads(sent.stdout).get("html_url", "")
    except (ValueError, AttributeError):
        url = ""
    print(escape.line(f"moe-lint: {verb} the pull-request comment {url}".rstrip()))
    return 0
