"""The docs site and the README front door (issue 26).

The README stays a front door (at most 250 lines) whose links resolve and whose sample output
is real; the docs build into a site with ``mkdocs build --strict``; every rule page is what
``moe-lint explain`` prints. The install, pre-commit and CI snippets are run in
tests/test_install_docs.py.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, run_main
from moe_lint.engine.catalogue import load_catalogue

README = REPO / "README.md"
DOCS = REPO / "docs"
RULES = load_catalogue(plugins=False).rules
#: The hand-written pages and the README; docs/rules/ is generated and docs/domain/ holds the
#: research notes (both are built by mkdocs --strict, which checks their links too).
PAGES = [README, *sorted(p for p in DOCS.rglob("*.md") if p.parent.name not in ("rules",))]


def fenced_blocks(path: Path) -> list[tuple[str, str]]:
    """The fenced code blocks of a Markdown file: (info string, body)."""
    blocks: list[tuple[str, str]] = []
    fence: str | None = None
    body: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if fence is None:
            match = re.match(r"^(`{3,})(\S*)", line)
            if match:
                fence, info, body = match.group(1), match.group(2), []
        elif line.startswith(fence) and not line.strip("`"):
            blocks.append((info, "\n".join(body) + "\n"))
            fence = None
        else:
            body.append(line)
    return blocks


# ------------------------------------------------------------------------------ the site


@pytest.mark.slow
def test_mkdocs_builds_strictly(tmp_path: Path) -> None:
    """`mkdocs build --strict` (mkdocs.yml sets strict and checks links and anchors): no
    warning, and a page for every rule. Where mkdocs-material is missing the test is skipped,
    except in CI, which installs the docs extra (.ci/run) and also builds the site itself."""
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None:
        if os.environ.get("CI"):
            pytest.fail("mkdocs-material is not installed: .ci/run installs the docs extra")
        pytest.skip("mkdocs-material is not installed (pip install '.[docs]')")
    site = tmp_path / "site"
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q",
         "-f", str(REPO / "mkdocs.yml"), "-d", str(site)],
        capture_output=True, text=True, check=False, timeout=600,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "WARNING" not in proc.stderr, proc.stderr
    missing = [r.code for r in RULES if not (site / "rules" / r.code / "index.html").is_file()]
    assert not missing, missing
    for page in ("commands/check", "commands/estimate", "commands/plan", "commands/rules",
                 "commands/explain", "commands/models", "configuration", "ci", "memory-model",
                 "planner", "python-api", "writing-rules", "how-it-works"):  # fmt: skip
        assert (site / page / "index.html").is_file(), page


def test_mkdocs_nav_names_every_hand_written_page() -> None:
    """Without mkdocs installed, still: every page of docs/ is in mkdocs.yml's nav (the
    generated rule pages are reached from the rule index), and every nav entry exists."""
    config = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    nav = config[config.index("\nnav:") :]
    named = set(re.findall(r"([\w./-]+\.md)\s*$", nav, re.MULTILINE))
    assert all((DOCS / name).is_file() for name in named), sorted(named)
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    pages = {p for p in pages if not p.startswith("rules/") or p == "rules/index.md"}
    assert pages == named, sorted(pages ^ named)


def test_rule_pages_are_what_explain_prints(capsys: pytest.CaptureFixture[str]) -> None:
    """docs/rules/<CODE>.md is, byte for byte, what `moe-lint explain CODE` prints (the text
    and the markdown format), so the site cannot drift from the CLI."""
    differ = []
    for rule in RULES:
        page = (DOCS / "rules" / f"{rule.code}.md").read_text(encoding="utf-8")
        for args in (("explain", rule.code), ("explain", rule.name, "--format", "markdown")):
            code, out, err = run_main(capsys, *args)
            if code != 0 or out != page:
                differ.append((rule.code, args, err))
    assert not differ, differ[:5]
    index = (DOCS / "rules" / "index.md").read_text(encoding="utf-8")
    assert all(f"[{r.code}]({r.code}.md)" in index for r in RULES)


# ------------------------------------------------------------------------- the README


def test_readme_is_a_front_door() -> None:
    """At most 250 lines: what it is, sample output, the two set-up commands, the three ways to
    use it, and links into the docs."""
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250, len(text.splitlines())
    headings = re.findall(r"^## (.+)$", text, re.MULTILINE)
    for wanted in ("Set up", "Use it by hand", "Use it as a pre-commit hook",
                   "Use it as a CI gate", "Documentation"):  # fmt: skip
        assert wanted in headings, headings
    setup = text[text.index("## Set up") : text.index("\n## ", text.index("## Set up") + 1)]
    commands = [body.strip() for info, body in _blocks_in(setup) if info == "sh"]
    assert commands == [
        "pip install . && moe-lint examples/dsv3_128k_h100.yaml",
        "pip install '.[test]' && pytest",
    ]
    linked = set(re.findall(r"\]\((docs/[^)#]+)", text))
    assert {"docs/index.md", "docs/ci.md", "docs/rules/index.md"} <= linked


def _blocks_in(text: str) -> list[tuple[str, str]]:
    return re.findall(r"^```(\S*)\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub and mkdocs' toc both make it for the headings used here."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"^```.*?^```$", "", path.read_text("utf-8"), flags=re.MULTILINE | re.DOTALL)
    return {_slug(h) for h in re.findall(r"^#{1,6} (.+)$", text, re.MULTILINE)}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_relative_links_resolve(page: Path) -> None:
    """Every relative link of the README and the docs pages names a file that exists, and an
    anchor that one of its headings makes: they work on a git host and as files."""
    text = re.sub(r"^```.*?^```$", "", page.read_text("utf-8"), flags=re.MULTILINE | re.DOTALL)
    text = re.sub(r"`[^`\n]*`", "", text)
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"^[a-z]+:", target):
            continue
        name, _, anchor = target.partition("#")
        path = (page.parent / name).resolve() if name else page
        missing = not path.exists()
        if missing or (anchor and path.suffix == ".md" and anchor not in _anchors(path)):
            broken.append(target)
    assert not broken, broken


def _sample(path: Path) -> tuple[list[str], list[str]]:
    """The first console block of a page: its command and the output lines it shows."""
    body = next(body for info, body in fenced_blocks(path) if info == "console")
    first, *shown = body.splitlines()
    assert first.startswith("$ moe-lint "), first
    return shlex.split(first.removeprefix("$ "))[1:], [line for line in shown if line != "…"]


@pytest.mark.parametrize("page", [README, DOCS / "index.md"], ids=["README", "index"])
def test_sample_output_is_real(page: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The output the README and the getting-started page show is the command's output: every
    line, in order (the cut is marked '…')."""
    args, shown = _sample(page)
    cwd = Path.cwd()
    os.chdir(REPO)
    try:
        code, out, _ = run_main(capsys, *args)
    finally:
        os.chdir(cwd)
    assert code == 1
    lines, at = out.splitlines(), 0
    for line in shown:
        assert line in lines[at:], f"{page.name}: not in the output (or out of order): {line!r}"
        at = lines.index(line, at) + 1


def test_first_run_commands_run(capsys: pytest.CaptureFixture[str]) -> None:
    """The commands of "A first run" run on the bundled examples (exit 0 or 1, never a usage
    or input error)."""
    text = (DOCS / "index.md").read_text(encoding="utf-8")
    section = text[text.index("## A first run") : text.index("## Three ways")]
    commands = [
        shlex.split(line, comments=True)
        for info, body in _blocks_in(section)
        if info == "sh"
        for line in body.splitlines()
    ]
    assert len(commands) >= 4
    cwd = Path.cwd()
    os.chdir(REPO)
    try:
        for command in commands:
            assert command[0] == "moe-lint", command
            code, _, err = run_main(capsys, *command[1:])
            assert code in (0, 1), (command, err)
    finally:
        os.chdir(cwd)
