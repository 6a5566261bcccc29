"""Each rule's docs example fires the rule and its "use instead" does not."""

from __future__ import annotations

import pytest

from conftest import run_lint, skip_without_mlm_input
from moe_lint.engine.catalogue import Catalogue, load_catalogue

RULES = load_catalogue(plugins=False).rules


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_example_fires(catalogue: Catalogue, rule: object) -> None:
    docs = rule.docs  # type: ignore[attr-defined]
    code = rule.code  # type: ignore[attr-defined]
    skip_without_mlm_input(code)
    result = run_lint(catalogue, docs["example"], ALSO.get(code, [code]), docs.get("example_args"))
    assert result.error is None, result.error
    assert code in [f.code for f in result.findings], f"{code}: example does not fire"


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_use_instead_is_clean(catalogue: Catalogue, rule: object) -> None:
    docs = rule.docs  # type: ignore[attr-defined]
    code = rule.code  # type: ignore[attr-defined]
    skip_without_mlm_input(code)
    args = docs.get("use_instead_args", docs.get("example_args"))
    result = run_lint(catalogue, docs["use_instead"], ALSO.get(code, [code]), args)
    assert result.error is None, result.error
    assert code not in [f.code for f in result.findings], f"{code}: use_instead still fires"


#: Suppression rules need a rule to suppress.
ALSO = {"SUP001": ["SUP001", "CP001"], "SUP002": ["SUP002", "CP001"]}
