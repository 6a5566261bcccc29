"""The HTML reports (issue 27, *Pictures*): ``estimate --format html`` and ``plan --format
html`` each write one self-contained offline page.

Without a browser: every file, stage and plan is on the page, its numbers are the JSON
payload's (the page embeds the payload, and its table cells carry the exact values), the stage
bars add up to the device totals, nothing is loaded from anywhere (no ``src``/``href``, a
Content-Security-Policy of ``default-src 'none'`` whose hashes match the inline style and
script), and config text (file and model names, messages) cannot inject markup.

In a real browser (headless Chromium over the DevTools protocol, tests/chromium.py): both pages
render with no console error, uncaught exception, CSP refusal or request besides the page
itself; the rendered DOM holds every stage and plan; hovering a plan's point or a stage's bar
shows its breakdown; and a full-page screenshot of each is kept under ``$MOE_LINT_ARTIFACTS``
(default ``tests/artifacts/``, which CI keeps; .ci/run installs Chromium). Without Chromium
the browser test is skipped, except in CI (``CI`` set), where it fails.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import tempfile
import time
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

import chromium
from conftest import REPO, run_main
from moe_lint.output import estimate_html
from moe_lint.output import html as page_html

DSV3 = REPO / "examples" / "dsv3_128k_h100.yaml"
QWEN = REPO / "examples" / "qwen3_235b_128k_gb200.yaml"
#: A small search (about a second): five plans, one of which may not fit, all departing from
#: the CP rule of thumb, and the guidance's CP for the sequence placed with --compare.
PLAN = ["plan", "--model", "olmoe-1b-7b", "--gpu", "h100", "--gpus", "8", "--seq", "32768",
        "--top", "5", "--compare", "tp=1,cp=8,ep=1,pp=1"]  # fmt: skip
ARTIFACTS = Path(os.environ.get("MOE_LINT_ARTIFACTS") or REPO / "tests" / "artifacts")


class Dom(HTMLParser):
    """The page as the standard library's HTML parser reads it: every start tag with its
    attributes, the text, and the embedded JSON data block."""

    def __init__(self, source: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.text: list[str] = []
        self.scripts: list[str] = []
        self.styles: list[str] = []
        self._in: str | None = None
        self._data_block: list[str] | None = None
        self.data: Any = None
        self.feed(source)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {k: v or "" for k, v in attrs}
        self.tags.append((tag, found))
        if tag in ("script", "style"):
            self._in = tag
            self._data_block = [] if found.get("id") == "moe-lint-data" else None

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self._in = None

    def handle_data(self, data: str) -> None:
        if self._in == "script":
            if self._data_block is not None:
                self.data = json.loads(data)
            else:
                self.scripts.append(data)
        elif self._in == "style":
            self.styles.append(data)
        else:
            self.text.append(data)

    def all(self, tag: str | None = None, **attrs: str) -> list[dict[str, str]]:
        """The attributes of each element ``tag`` whose attributes include ``attrs``
        (``class_`` for class, one class name of several)."""
        out = []
        for name, found in self.tags:
            if tag is not None and name != tag:
                continue
            ok = True
            for key, value in attrs.items():
                key = key.rstrip("_").replace("_", "-")
                have = found.get(key)
                if key == "class":
                    ok = ok and have is not None and value in have.split()
                else:
                    ok = ok and have == value
            if ok:
                out.append(found)
        return out


def _csp_sha(source: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(source.encode()).digest()).decode() + "'"


def assert_offline_and_inert(page: str) -> Dom:
    """What every report page must be: parseable, nothing loaded, only our two scripts (the
    data block and the hover script), the CSP hashes matching, no line a CI runner acts on."""
    dom = Dom(page)
    assert page.startswith("<!DOCTYPE html>")
    for tag, attrs in dom.tags:
        assert not {"src", "href", "srcset", "action", "formaction", "poster"} & set(attrs), tag
        assert not [k for k in attrs if k.startswith("on")], (tag, attrs)
        assert tag not in ("img", "iframe", "object", "embed", "link", "base", "form"), tag
        assert "style" not in attrs, (tag, "an inline style attribute breaks the CSP")
    assert len(dom.all("script")) == 2 and dom.all("script", id="moe-lint-data")
    assert dom.all("script", id="moe-lint-data")[0]["type"] == "application/json"
    assert dom.scripts == [page_html.SCRIPT] and dom.styles == [page_html.STYLE]
    csp = dom.all("meta", http_equiv="Content-Security-Policy")[0]["content"]
    assert "default-src 'none'" in csp
    assert f"script-src {_csp_sha(page_html.SCRIPT)}" in csp
    assert f"style-src {_csp_sha(page_html.STYLE)}" in csp
    assert not re.search(r"https?://", page), "no URL at all: nothing to load or follow"
    assert "##[" not in page
    assert not [line for line in page.splitlines() if line.lstrip().startswith("::")]
    return dom


def _row_values(page: str, attr: str, value: str) -> list[float | None]:
    """The data-value cells of the table row ``<tr attr="value">``, in order."""
    match = re.search(rf'<tr [^>]*{attr}="{re.escape(value)}"[^>]*>(.*?)</tr>', page)
    assert match, (attr, value)
    values = re.findall(r'data-value="([^"]*)"', match.group(1))
    return [None if v == "" else float(v) for v in values]


# ------------------------------------------------------------------------------ estimate


@pytest.fixture(scope="module")
def estimate_pages(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Any, int]:
    """(the HTML page, the files, the exit code) of `estimate` on two example files."""
    # capsys is function-scoped: the module's page is written by the CLI's main to a file
    from moe_lint.cli import main

    target = tmp_path_factory.mktemp("html") / "report.html"
    files = [str(DSV3), str(QWEN)]
    code = main(["estimate", *files, "--format", "html", "-o", str(target)])
    page = target.read_text(encoding="utf-8")
    return page, files, code


def test_estimate_html_is_the_json(
    capsys: pytest.CaptureFixture[str], estimate_pages: tuple[str, Any, int]
) -> None:
    """The page embeds exactly what --format json prints, draws a section per file and a bar
    and a table row per stage, and every number in the stage table is the payload's."""
    page, files, code = estimate_pages
    json_code, out, _ = run_main(capsys, "estimate", *files, "--format", "json")
    assert code == json_code
    payload = json.loads(out)
    dom = assert_offline_and_inert(page)
    assert dom.data == payload
    assert [s["data-file"] for s in dom.all("section", class_="file")] == files
    for n, est in enumerate(payload, 1):
        stages = est["stages"]
        keys = [g["data-key"] for g in dom.all("g", class_="stage", data_group=f"f{n}")]
        assert keys == [f"f{n}s{s['stage']}" for s in stages]
        for stage in stages:
            b = stage["bounds"]
            spare = round(est["usable_gib"] - b["device"]["central"], 3)
            want = [b["device"]["lower"], b["device"]["central"], b["device"]["band"],
                    b["allocated"]["central"], b["reserved"]["central"], spare]  # fmt: skip
            assert _row_values(page, "data-key", f"f{n}s{stage['stage']}") == want
            assert dom.all("div", class_="detail", id=f"detail-f{n}s{stage['stage']}")
        assert f"usable {est['usable_gib']:.1f} GiB" in page
        assert page_html.text(est["verdict_text"]) in page


def test_estimate_bars_add_up_to_the_device_total(estimate_pages: tuple[str, Any, int]) -> None:
    """Each stage's segments are the terms of its peak (states, the peak phase's transients,
    fixed costs, allocator overhead) and sum to its central device total."""
    page, _, _ = estimate_pages
    payload = Dom(page).data
    for n, est in enumerate(payload, 1):
        for stage in est["stages"]:
            key = f"f{n}s{stage['stage']}"
            start = page.index(f'<g class="stage" data-key="{key}"')
            bar = page[start : page.index('<g class="range-mark">', start)]
            gibs = [float(v) for v in re.findall(r'data-gib="([^"]+)"', bar)]
            assert gibs == [t["gib"] for t, _ in estimate_html.bar_terms(stage)]
            assert abs(sum(gibs) - stage["total_gib"]) < 0.01, (key, sum(gibs))


def test_estimate_html_without_output_goes_to_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    """No -o: the page on stdout; a check format estimate does not write is a usage error."""
    code, out, err = run_main(capsys, "estimate", str(DSV3), "--format", "html")
    assert code == 0 and err == ""
    dom = assert_offline_and_inert(out)
    assert [s["data-file"] for s in dom.all("section", class_="file")] == [str(DSV3)]
    code, _, err = run_main(capsys, "estimate", str(DSV3), "--format", "sarif")
    assert code == 2 and "estimate writes --format text, json or html" in err


def test_estimate_html_without_a_gpu_has_no_usable_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """No --gpu, no usable memory: the bars and ranges still, no line and no verdict."""
    text = DSV3.read_text(encoding="utf-8").replace("gpu=h100", "")
    path = tmp_path / "nogpu.yaml"
    path.write_text(text, encoding="utf-8")
    code, out, err = run_main(capsys, "estimate", str(path), "--format", "html", "--isolated")
    assert code in (0, 1), err
    dom = assert_offline_and_inert(out)
    if dom.data[0]["usable_gib"] is None:
        assert not dom.all("line", class_="usable")
        assert "pass --gpu for a verdict" in out
    assert len(dom.all("g", class_="stage")) == len(dom.data[0]["stages"])


# ------------------------------------------------------------------------------ plan


@pytest.fixture(scope="module")
def plan_result() -> Any:
    """One small search, the result the JSON and the HTML are both made from."""
    from moe_lint.plan import args as plan_args
    from moe_lint.plan.run import Options, run

    return run(Options(model="olmoe-1b-7b", gpu="h100", gpus=(8,), seq=32768, top=5,
                       compare=plan_args.layout("tp=1,cp=8,ep=1,pp=1")))  # fmt: skip


def test_plan_html_is_the_json(plan_result: Any) -> None:
    """Every plan (and the compared layout) is a point and a table row; the page embeds the
    JSON; each row's numbers are the payload's; may-not-fit plans are triangles, plans that
    depart from a rule of thumb have the dashed ring, and the rules table names them."""
    from moe_lint.plan import html as plan_html
    from moe_lint.plan import report

    page = plan_html.page(plan_result)
    dom = assert_offline_and_inert(page)
    payload = json.loads(report.to_json(plan_result))
    assert dom.data == payload
    plans = payload["plans"]
    assert len(plans) == 5 and any(p["memory_verdict"] != "fits" for p in plans)
    assert all("cp" in p["departs_from_guidance"] for p in plans)  # CP 2 at seq 32768, not 8
    ranks = [g["data-rank"] for g in dom.all("g", class_="plan")]
    assert sorted(ranks) == sorted([str(p["rank"]) for p in plans] + ["cmp"])
    for plan in plans:
        mem = plan["memory_gib"]
        want = [
            mem["lower"],
            mem["central"],
            mem["usable"],
            mem["usable"] - mem["central"],
            plan["step_s"],
            plan["tokens_per_s_per_gpu"],
            plan["model_tflops_per_gpu"],
        ]
        assert _row_values(page, "data-key", f"p{plan['rank']}") == want
        group = re.search(rf'<g class="plan" data-key="p{plan["rank"]}".*?</g>', page).group(0)
        shape = '<path class="pt"' if plan["memory_verdict"] != "fits" else '<circle class="pt"'
        assert shape in group
        assert ('stroke-dasharray="3 2"' in group) == bool(plan["departs_from_guidance"])
        assert "tokens/s/GPU" in group and "step " in group  # the hover breakdown
        assert dom.all("div", class_="detail", id=f"detail-p{plan['rank']}")
    rules = {attrs["data-rule"] for _, attrs in dom.tags if "data-rule" in attrs}
    assert rules == set(payload["rules_of_thumb"])
    cp_row = re.search(r'<tr data-rule="cp">(.*?)</tr>', page).group(1)
    assert all(f"#{p['rank']}" in cp_row for p in plans)
    assert payload["compared"]["plan"] is not None and dom.all("g", data_key="cmp")
    for line in payload["departures_from_guidance"]:
        assert page_html.text(line) in page


def test_plan_html_to_a_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """``plan --format html -o FILE`` writes the page and prints nothing; -o with a text
    report is still a usage error."""
    target = tmp_path / "plans.html"
    code, out, err = run_main(capsys, *PLAN, "--format", "html", "-o", str(target))
    assert (code, out) == (0, ""), err
    dom = assert_offline_and_inert(target.read_text(encoding="utf-8"))
    assert len(dom.all("g", class_="plan")) == 6
    code, _, err = run_main(capsys, *PLAN, "-o", str(tmp_path / "x.txt"))
    assert code == 2 and "-o names the file for --emit N or --format html" in err


def test_plan_html_with_no_plan(plan_result: Any) -> None:
    """Nothing fits: the page says so and lists the pruned values, with no chart."""
    from moe_lint.plan import html as plan_html
    from moe_lint.plan import report

    data = {**report.payload(plan_result), "plans": [], "compared": None,
            "departures_from_guidance": []}  # fmt: skip
    dom = assert_offline_and_inert(plan_html.page_from_payload(data))
    assert not dom.all("svg", class_="plans") and "No layout fits" in "".join(dom.text)


# ------------------------------------------------------------------------------ hostile text

HOSTILE = ('<img src=x onerror=alert(1)>', '"><svg onload=alert(1)>', "<script>alert(1)",
           "::error file=x::y", "##[error]z", "a\x1bb\u202ec")  # fmt: skip


def test_hostile_file_names_cannot_inject(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A file named like markup is shown as text: no element, attribute or script from it,
    no line a CI runner would act on; the embedded JSON keeps the name as --format json does."""
    example = DSV3.read_text(encoding="utf-8")
    names = []
    for i, hostile in enumerate(HOSTILE):
        name = tmp_path / f"{i}{hostile}.yaml"
        name.write_text(example, encoding="utf-8")
        names.append(str(name))
    code, out, err = run_main(capsys, "estimate", *names, "--format", "html", "--isolated")
    assert code in (0, 1), err
    dom = assert_offline_and_inert(out)
    assert (
        not dom.all("svg", onload="alert(1)") and "<img" not in out and "<script>alert" not in out
    )
    _, js, _ = run_main(capsys, "estimate", *names, "--format", "json", "--isolated")
    assert dom.data == json.loads(js)
    shown = "".join(dom.text)
    assert "<img src=x onerror=alert(1)>" in shown  # as text, after the parser's unescaping
    assert "a\\x1bb\\u202ec" in shown  # control and bidi characters as visible escapes


def test_hostile_plan_text_cannot_inject(plan_result: Any) -> None:
    """The model name (a YAML path) and linter messages on a plan page: text, never markup,
    and a ``</script>`` in the data cannot close the data block."""
    from moe_lint.plan import html as plan_html
    from moe_lint.plan import report

    data = report.payload(plan_result)
    evil = "</script><script>alert(1)</script>"
    data = {**data, "model": evil + HOSTILE[0]}
    data["plans"] = [{**p, "warnings": [{"code": "X1", "message": evil}]} for p in data["plans"]]
    page = plan_html.page_from_payload(data)
    dom = assert_offline_and_inert(page)
    assert json.loads(json.dumps(data)) == dom.data
    assert evil in "".join(dom.text)


# ------------------------------------------------------------------------------ the browser

_FACTS = """JSON.stringify({
  files: [...document.querySelectorAll("section.file")].map(s => s.dataset.file),
  stages: [...document.querySelectorAll("g.stage")].map(g => g.dataset.key),
  stageRows: [...document.querySelectorAll("table.stage-table tr[data-key]")].map(
    r => r.dataset.key),
  plans: [...document.querySelectorAll("g.plan")].map(g => g.dataset.rank),
  planRows: [...document.querySelectorAll("table.plan-table tr[data-key]")].map(
    r => r.dataset.key),
  svgs: [...document.querySelectorAll("svg.stages, svg.plans")].map(
    s => [s.getBoundingClientRect().width, s.getBoundingClientRect().height]),
  text: document.body.innerText,
})"""


def _centre(page: chromium.Page, selector: str) -> tuple[float, float]:
    box = page.evaluate(f"(() => {{ const r = document.querySelector({json.dumps(selector)})"
                        ".getBoundingClientRect(); window.scrollTo(0, 0); "
                        "return [r.x + r.width / 2, r.y + r.height / 2]; })()")  # fmt: skip
    return float(box[0]), float(box[1])


def _visible(page: chromium.Page, element_id: str) -> bool:
    return bool(page.evaluate(f"!document.getElementById({json.dumps(element_id)}).hidden"))


def test_reports_render_in_chromium(
    estimate_pages: tuple[str, Any, int], plan_result: Any, tmp_path: Path
) -> None:
    """Both pages in headless Chromium: no console error, no uncaught exception, no CSP
    refusal, no request but the page's own; every file, stage and plan in the rendered DOM;
    hover shows a plan's and a stage's breakdown; a screenshot of each kept as an artifact.
    The harness itself is checked first on a page with an error of each kind."""
    from moe_lint.plan import html as plan_html

    executable = chromium.find()
    if executable is None:
        if os.environ.get("CI"):
            pytest.fail("Chromium is not installed: .ci/run installs the Debian package chromium")
        pytest.skip("Chromium is not installed (apt-get install chromium; or MOE_LINT_CHROMIUM)")
    estimate_page, files, _ = estimate_pages
    pages = {"estimate": estimate_page, "plans": plan_html.page(plan_result)}
    bad = ('<!DOCTYPE html><meta http-equiv="Content-Security-Policy" content="default-src '
           "'none'\"><p style=\"color:red\">x</p><script>nope()</script>")  # fmt: skip
    for name, text in {**pages, "bad": bad}.items():
        (tmp_path / f"{name}.html").write_text(text, encoding="utf-8")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    browser = chromium.Page(executable, Path(tempfile.mkdtemp(dir=tmp_path)), height=1000)
    try:
        browser.load((tmp_path / "bad.html").as_uri())
        caught = browser.errors()
        assert any("style" in e for e in caught) and len(caught) >= 2, caught  # the harness sees
        facts = {}
        for name in pages:
            browser.forget()
            url = (tmp_path / f"{name}.html").as_uri()
            browser.load(url)
            facts[name] = json.loads(browser.evaluate(_FACTS))
            if name == "plans":
                browser.hover(*_centre(browser, 'g.plan[data-key="p2"] .pt'))
                assert _visible(browser, "detail-p2") and not _visible(browser, "detail-p1")
            else:
                browser.hover(*_centre(browser, 'g.stage[data-key="f1s0"] rect.seg'))
                assert _visible(browser, "detail-f1s0")
            browser.screenshot(ARTIFACTS / f"{name}.png")
            assert browser.errors() == [], (name, browser.errors())
            assert browser.requests() == [url], (name, browser.requests())
    finally:
        browser.close()
    seconds = time.perf_counter() - started
    payload = Dom(estimate_page).data
    est = facts["estimate"]
    assert est["files"] == files
    want = [f"f{n}s{s['stage']}" for n, e in enumerate(payload, 1) for s in e["stages"]]
    assert est["stages"] == want and est["stageRows"] == want
    assert all(w > 500 and h > 100 for w, h in est["svgs"]), est["svgs"]
    plans = facts["plans"]
    shown = [str(c) for c in range(1, len(plan_result.shown) + 1)]
    assert sorted(plans["plans"]) == sorted([*shown, "cmp"])
    assert plans["planRows"] == [f"p{r}" for r in shown] + ["cmp"]
    assert "Rules of thumb" in plans["text"] and plans["svgs"][0][0] > 500
    for name in pages:
        png = (ARTIFACTS / f"{name}.png").read_bytes()
        assert png.startswith(b"\x89PNG") and len(png) > 20_000
    assert seconds < 30, seconds
