"""Rule packs are validated when loaded and can never execute code."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from conftest import REPO, run_lint
from moe_lint.cli import main
from moe_lint.engine.catalogue import builtin_rules_dir, load_catalogue, load_pack
from moe_lint.errors import RulePackError

RULE = """
pack: extra
rules:
  - code: {code}
    name: {name}
    severity: warning
    summary: test rule
    path: model.context_parallel_size
    when: "{when}"
    message: "{message}"
    source: test
    docs:
      what: w
      why: y
      example: "model: {{context_parallel_size: 16}}"
      use_instead: "model: {{context_parallel_size: 2}}"
"""


def pack(tmp_path: Path, **kw: str) -> Path:
    values = {"code": "XTR001", "name": "big-cp", "when": "cp > 8", "message": "CP {cp} is big"}
    values.update(kw)
    path = tmp_path / "extra.yaml"
    path.write_text(RULE.format(**values))
    return path


def test_extra_pack_runs(tmp_path: Path) -> None:
    catalogue = load_catalogue([pack(tmp_path)], plugins=False)
    result = run_lint(catalogue, "model:\n  context_parallel_size: 16\n", ["XTR001"])
    assert [f.message for f in result.findings] == ["CP 16 is big"]


@pytest.mark.parametrize(
    ("field", "value", "needle"),
    [
        ("when", "__import__('os').system('echo pwned')", "whitelisted"),
        ("when", "cp.__class__", "attribute"),
        ("when", "model.__dict__", "attribute"),
        ("when", "model.context_paralel_size > 1", "unknown field"),
        ("when", "open('/etc/passwd')", "whitelisted"),
        ("when", "(lambda: 1)()", "lambda"),
        ("when", "dpp > 1", "unknown name"),
        ("when", "cp >", "syntax error"),
        ("message", "{cp.__class__}", "unknown placeholder"),
        ("message", "{dpp}", "unknown placeholder"),
        ("code", "X1", "must look like"),
        ("name", "Big_CP", "kebab-case"),
    ],
)
def test_bad_packs_are_rejected_at_load(
    tmp_path: Path, field: str, value: str, needle: str
) -> None:
    with pytest.raises(RulePackError, match=needle):
        load_pack(pack(tmp_path, **{field: value}), {})


def test_duplicate_codes_rejected(tmp_path: Path) -> None:
    with pytest.raises(RulePackError, match="defined twice"):
        load_catalogue([pack(tmp_path, code="PAR001")], plugins=False)


def _implied_pack(tmp_path: Path, implied_by: str) -> Path:
    path = pack(tmp_path, when="cp > 1")
    path.write_text(path.read_text() + f"    implied_by: {implied_by}\n")
    return path


def test_extra_rule_folds_into_the_root_it_names(tmp_path: Path) -> None:
    """A pack's rule ``implied_by: [PAR001]`` is reported inside PAR001's finding when both fire
    (one cause, one finding), and on its own when PAR001 is not selected or does not fire."""
    catalogue = load_catalogue([_implied_pack(tmp_path, "[PAR001]")], plugins=False)
    text = "model:\n  context_parallel_size: 16\n"
    both = run_lint(catalogue, text, ["XTR001", "PAR001"], "--gpus 24")
    assert [f.code for f in both.findings] == ["PAR001"]
    assert "also XTR001: CP 16 is big" in (both.findings[0].derivation or "")
    alone = run_lint(catalogue, text, ["XTR001"], "--gpus 24")
    assert [f.code for f in alone.findings] == ["XTR001"]
    tiles = run_lint(catalogue, text, ["XTR001", "PAR001"], "--gpus 32")
    assert [f.code for f in tiles.findings] == ["XTR001"]


@pytest.mark.parametrize(
    ("implied_by", "needle"),
    [("[XTR999]", "unknown codes"), ("[XTR001]", "other rule codes"), ("PAR001", "a list")],
)
def test_implied_by_must_name_other_known_rules(
    tmp_path: Path, implied_by: str, needle: str
) -> None:
    with pytest.raises(RulePackError, match=needle):
        load_catalogue([_implied_pack(tmp_path, implied_by)], plugins=False)


def test_bad_pack_from_cli_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = pack(tmp_path, when="__import__('os')")
    assert main([str(REPO / "examples" / "dsv3_128k_h100.yaml"), "--rules", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "whitelisted" in err


def test_rules_dir_found() -> None:
    assert (builtin_rules_dir() / "parallel.yaml").is_file()


def _prefix(code: str) -> str:
    return code.rstrip("0123456789")


def test_one_code_prefix_per_shipped_pack() -> None:
    """Packs are families: one prefix each, in its own file, entries sorted by code, and the
    prefix -> pack table of docs/adding-rules.md is the one on disk."""
    on_disk: dict[str, str] = {}
    for path in sorted(builtin_rules_dir().glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        assert data["pack"] == path.stem, path.name
        codes = [entry["code"] for entry in data["rules"]]
        prefixes = {_prefix(code) for code in codes}
        assert len(prefixes) == 1, (path.name, sorted(prefixes))
        assert codes == sorted(codes), (path.name, codes)
        (prefix,) = prefixes
        assert prefix not in on_disk, (prefix, on_disk.get(prefix), path.stem)
        on_disk[prefix] = path.stem
    shipped = {rule.pack for rule in load_catalogue(plugins=False).rules}
    assert shipped == set(on_disk.values())
    doc = (REPO / "docs" / "adding-rules.md").read_text(encoding="utf-8")
    table = dict(re.findall(r"^\| `([A-Z]+)` \| `([a-z-]+)` \|", doc, re.MULTILINE))
    assert table == on_disk


def test_every_rule_names_its_source_and_docs() -> None:
    for rule in load_catalogue(plugins=False).rules:
        assert rule.source and rule.docs["example"] and rule.docs["use_instead"]
        assert rule.code[:2].isalpha() and rule.name == rule.name.lower()


def test_entry_point_plugin_adds_pack_and_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A third-party package registers a pack and a Python check via `moe_lint.rules`."""
    import importlib
    import sys

    site = tmp_path / "site"
    dist = site / "moe_lint_fakeplugin-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: moe-lint-fakeplugin\nVersion: 0.1\n"
    )
    (dist / "entry_points.txt").write_text("[moe_lint.rules]\nfake = moe_lint_fakeplugin:provide\n")
    plugin_pack = site / "fake_pack.yaml"
    plugin_pack.write_text(
        RULE.format(
            code="FAK001", name="fake-big-tp", when="tp >= {limit}", message="TP {tp}"
        ).replace('when: "tp >= {limit}"', "check: fake-tp")
    )
    (site / "moe_lint_fakeplugin.py").write_text(
        "from pathlib import Path\n"
        "from moe_lint.engine.catalogue import PythonCheck\n"
        "from moe_lint.engine.evaluate import Violation\n"
        "def _check(ctx):\n"
        "    if ctx.facts.values['tp'].value >= 8:\n"
        "        yield Violation('model.tensor_model_parallel_size', {'tp': 8})\n"
        "def provide():\n"
        f"    return {{'packs': [Path({str(plugin_pack)!r})],\n"
        "            'checks': {'fake-tp': PythonCheck(_check, frozenset({'tp'}))}}\n"
    )
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    catalogue = load_catalogue()
    assert "FAK001" in catalogue.by_code
    result = run_lint(catalogue, "model:\n  tensor_model_parallel_size: 8\n", ["FAK001"])
    assert [(f.code, f.line, f.message) for f in result.findings] == [("FAK001", 2, "TP 8")]
    sys.modules.pop("moe_lint_fakeplugin", None)


@pytest.mark.parametrize(
    "when", ["2 ** 99999999 > 1", "len('ab' * 10000000) > 1", "len([1] * 10000000) > 0"]
)
def test_expressions_cannot_exhaust_resources(tmp_path: Path, when: str) -> None:
    # Constant parts are evaluated under the cost budget when the pack loads: the pack is
    # refused with its rule named, not silently skipped (issue 10; tests/test_expr_budget.py).
    with pytest.raises(RulePackError, match=r"XTR001 when: .*(bits|elements and characters)"):
        load_catalogue([pack(tmp_path, when=when)], plugins=False)


@pytest.mark.parametrize("when", ["(x := 1)", "f'{cp}'", "[*[1]]", "cp if True else 1 and await x"])
def test_syntax_outside_the_whitelist_is_rejected(tmp_path: Path, when: str) -> None:
    with pytest.raises(RulePackError):
        load_pack(pack(tmp_path, when=when), {})


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        ("    unstated_severity: info\n", "needs a 'versions' gate"),
        (
            '    versions: {transformer-engine: ">=2.15"}\n    unstated_severity: warning\n',
            r"must be one of \['info'\]",
        ),
        (
            '    versions: {transformer-engine: ">=2.15"}\n    unstated_severity: loud\n',
            "must be one of",
        ),
    ],
)
def test_unstated_severity_is_lower_and_gated(tmp_path: Path, extra: str, needle: str) -> None:
    path = pack(tmp_path)
    path.write_text(path.read_text().replace("    source: test\n", f"    source: test\n{extra}"))
    with pytest.raises(RulePackError, match=needle):
        load_pack(path, {})


def test_unstated_severity_applies_until_a_version_is_stated(tmp_path: Path) -> None:
    path = pack(tmp_path)
    text = path.read_text().replace("severity: warning", "severity: error")
    gate = (
        '    stage: config\n    versions: {transformer-engine: ">=2.15"}\n'
        "    unstated_severity: warning\n"
    )
    path.write_text(text.replace("    source: test\n", f"    source: test\n{gate}"))
    catalogue = load_catalogue([path], plugins=False)
    config = "model:\n  context_parallel_size: 16\n"
    unstated = run_lint(catalogue, config, ["XTR001"]).findings
    stated = run_lint(catalogue, "# moe-lint: transformer-engine=2.16\n" + config, ["XTR001"])
    older = run_lint(catalogue, "# moe-lint: transformer-engine=2.14\n" + config, ["XTR001"])
    assert [f.severity for f in unstated] == ["warning"]
    assert "transformer-engine not stated" in (unstated[0].derivation or "")
    assert [f.severity for f in stated.findings] == ["error"]
    assert older.findings == []


def test_no_user_facing_rule_text_says_seed() -> None:
    """Issue 26: messages name the guidance (NVIDIA's long-context MoE guide) or the reason,
    never this project's internal word "seed" (catalogue IDs SEED-* and the path of
    docs/coverage/seed.yaml are references, not prose)."""
    import re

    word = re.compile(r"\bseed\b(?![-.])", re.IGNORECASE)
    offenders = []
    for rule in load_catalogue(plugins=False).rules:
        docs = rule.docs
        texts = [rule.summary, rule.message.text, rule.source, docs["what"], docs["why"]]
        texts += [rule.fix.title.text] if rule.fix else []
        texts += [str(ref) for ref in docs.get("references") or []]
        for text in texts:
            prose = text.replace("docs/coverage/seed.yaml", "")
            if word.search(prose):
                offenders.append(f"{rule.code}: {text[:80]}")
    assert offenders == []
