"""The fact registry (analysis/facts.py) is the one list of derived facts.

What derive and memory_facts compute, what rule expressions may name, which derivations a
finding prints and what the docs list all come from it; these tests fail when code and registry
drift apart, and when a declared fact has no reader left.
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import REPO, assert_tool_current, cluster_args, override_args
from moe_lint.analysis.facts import FACTS, NAMES, computed_by
from moe_lint.config.load import parse_text
from moe_lint.config.normalize import NotBridgeConfig
from moe_lint.config.overrides import parse_override
from moe_lint.config.settings import Settings
from moe_lint.engine.catalogue import Catalogue, field_exists, load_pack
from moe_lint.errors import InputError, RulePackError
from moe_lint.linting import prepare

SRC = REPO / "src" / "moe_lint"


def _fixture_facts() -> list[tuple[str, set[str]]]:
    """(case id, every fact it produced: computed, or missing with a reason) for every rule
    fixture case, the lazy memory facts resolved too."""
    from moe_lint.analysis.derive import Facts

    out = []
    for path in sorted((REPO / "tests" / "fixtures" / "rules").glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        for name, case in data["cases"].items():
            args = case.get("args")
            overrides = [parse_override(o) for o in case.get("overrides", [])]
            try:
                _, facts, _ = prepare(
                    parse_text(case.get("pass", case.get("fail"))),
                    Settings(),
                    [*overrides, *override_args(args)],
                    cluster_args(args),
                )
            except (NotBridgeConfig, InputError):
                continue
            assert isinstance(facts, Facts)
            for lazy in list(facts.lazy):
                facts.resolve(lazy)
            out.append((f"{path.stem}-{name}", set(facts.values) | set(facts.missing)))
    return out


def test_every_computed_fact_is_registered_and_every_registered_one_computed() -> None:
    produced: set[str] = set()
    cases = _fixture_facts()
    assert len(cases) > 1000  # the rule fixtures, nearly all of them Bridge configs
    for case, names in cases:
        assert names <= NAMES, f"{case}: not in analysis/facts.py: {sorted(names - NAMES)}"
        produced |= names
    assert produced == NAMES, f"declared, never computed: {sorted(NAMES - produced)}"


RULE = """
rules:
  - code: XTR001
    name: reads-a-fact
    severity: warning
    summary: s
    path: model.context_parallel_size
    when: "{when}"
    message: "{message}"
    source: test
    docs: {{what: w, why: y, example: e, use_instead: u}}
"""


def test_expressions_accept_exactly_the_registered_facts(tmp_path: Path) -> None:
    template = RULE
    for name in sorted(NAMES):
        path = tmp_path / "facts.yaml"
        path.write_text(template.format(when=f"{name} is not None", message=f"{{{name}}}"))
        (rule,) = load_pack(path, {})
        assert name in rule.facts_used
    for gone in ("experts_per_rank", "vpp_stages", "tokens_per_cp_rank", "mcore_version"):
        path.write_text(template.format(when=f"{gone} is not None", message="m"))
        with pytest.raises(RulePackError, match=f"unknown name '{gone}'"):
            load_pack(path, {})


def test_shipped_fact_calls_name_registered_facts() -> None:
    """``fact('name', default)`` takes the name as a string, which the pack loader does not see."""
    pattern = re.compile(r"\bfact\(\s*['\"]([^'\"]+)['\"]")
    called = {
        (path.name, name)
        for path in (REPO / "rules").glob("*.yaml")
        for name in pattern.findall(path.read_text(encoding="utf-8"))
    }
    assert called, "the shipped rules call fact()"
    assert [c for c in called if c[1] not in NAMES] == []


def _resolve(dotted: str) -> Any:
    module, _, rest = dotted.partition(".")
    target: Any = importlib.import_module(f"moe_lint.analysis.{module}")
    for part in rest.split("."):
        target = getattr(target, part)
    return target


@pytest.mark.parametrize("spec", FACTS, ids=lambda s: s.name)
def test_each_fact_names_the_function_that_computes_it(spec: Any) -> None:
    function = _resolve(spec.computed_by)
    assert callable(function)
    assert f'"{spec.name}"' in inspect.getsource(function), (
        f"{spec.computed_by} does not mention {spec.name!r}"
    )
    assert spec.doc and "\n" not in spec.doc and spec.group
    for item in spec.inputs:
        if item in NAMES:
            assert item != spec.name
        elif "." in item and " " not in item and "/" not in item:
            section, _, field = item.partition(".")
            assert field_exists(section, field), f"{spec.name}: unknown field {item}"
        else:
            # a setting (--gpus), a source file or function, or a phrase ("the file's form")
            assert item.startswith("--") or "/" in item or " " in item, (spec.name, item)


def _readers(catalogue: Catalogue) -> dict[str, set[str]]:
    """Who reads each fact: shipped rules (names, templates, ``fact('x')``), Python checks,
    the memory model and the estimate output; a module does not count for the facts it puts."""
    readers: dict[str, set[str]] = {name: set() for name in NAMES}
    for rule in catalogue.rules:
        for name in rule.facts_used:
            readers[name].add(rule.code)
    for path in (REPO / "rules").glob("*.yaml"):
        for name in re.findall(r"\bfact\(\s*['\"]([^'\"]+)['\"]", path.read_text("utf-8")):
            readers[name].add(path.name)
    modules = [*sorted((SRC / "engine" / "checks").glob("*.py"))]
    modules += sorted((SRC / "analysis" / "memory").glob("*.py"))
    modules += [SRC / "analysis" / "memory_facts.py", *sorted((SRC / "output").glob("*.py"))]
    modules += sorted((SRC / "cli").glob("*.py"))
    for path in modules:
        text = path.read_text(encoding="utf-8")
        own = set(computed_by(path.stem)) if path.parent.name == "analysis" else set()
        for name in NAMES - own:
            if f'"{name}"' in text:
                readers[name].add(path.relative_to(SRC).as_posix())
    return readers


def test_every_registered_fact_has_a_reader(catalogue: Catalogue) -> None:
    unread = {name for name, who in _readers(catalogue).items() if not who}
    assert unread == set(), (
        f"no rule, check or model reads {sorted(unread)}: remove them from analysis/facts.py "
        "and their code"
    )


def test_fact_docs_are_current() -> None:
    assert_tool_current("fact_docs.py")
