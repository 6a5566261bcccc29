#!/usr/bin/env python3
"""Copy Megatron-LM's own inputs into tests/data/megatron-lm/: the functional tests its CI runs
green, each with the world size and entry script the CI gives it, and every launch script
under ``examples/``.

Why: the promise on Megatron-LM input is "no error on a config Megatron-LM's own CI runs", and
a user's fresh clone has no Megatron-LM checkout, so the tests need copies with the CI's facts
beside them. The facts come from the CI's recipes (``tests/test_utils/recipes/<gpu>/*.yaml``),
read the way ``tests/test_utils/python_scripts/recipe_parser.py::flatten_products`` reads
them: one row per test case and recipe with ``spec.nodes`` nodes of GPUS_PER_NODE GPUs (the
harness's ``tests/functional_tests/shell_test_utils/_run_training.sh`` launches
``torch.distributed.run --nproc_per_node $GPUS_PER_NODE --nnodes $NUM_NODES`` with
``GPUS_PER_NODE=${GPUS_PER_NODE:-8}``: the recipe's ``export GPUS_PER_NODE={gpus}`` where its
script has one, else 8 whatever ``spec.gpus`` says), the entry
script (``TRAINING_SCRIPT_PATH``) and the product's environments. A product counts as green
when one of its scopes is a running one (not ``*-broken``, ``*-temp-disabled``, ``deprecated``,
``flaky``) and it is not ``allow_failure``.

Usage: python tools/mlm_corpus.py MEGATRON_LM_TREE   (a checkout or `git archive` of main)
"""

from __future__ import annotations

import argparse
import csv
import re
import shutil
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "tests" / "data" / "megatron-lm"
INDEX = OUT / "ci" / "INDEX.tsv"
#: Scopes a product is not run under (the recipes' own names for switched-off tests).
OFF_SCOPES = re.compile(r"(-broken|-temp-disabled)$|^(deprecated|flaky|cleanup|unit-tests)$")
COLUMNS = ("model", "test_case", "nodes", "gpus_per_node", "megatron_core", "script",
           "environments", "platforms", "recipe")  # fmt: skip


def core_version(tree: Path) -> str:
    """The megatron-core version of the checkout (megatron/core/package_info.py): every CI row
    runs that code (the dev and lts environments differ in their containers, not in it)."""
    text = (tree / "megatron" / "core" / "package_info.py").read_text(encoding="utf-8")
    parts = [re.search(rf"^{k} = (\d+)", text, re.M) for k in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(m.group(1) for m in parts if m is not None)


def ci_rows(tree: Path) -> list[dict[str, str]]:
    """One row per (test case, recipe) that a green product runs."""
    rows: dict[tuple[str, str, str], dict[str, str]] = {}
    core = core_version(tree)
    for recipe in sorted((tree / "tests" / "test_utils" / "recipes").glob("*/*.yaml")):
        data = yaml.safe_load(recipe.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("type") != "basic":
            continue
        spec = data["spec"]
        script = re.search(r'"TRAINING_SCRIPT_PATH=\\?"?([^"\\]+)', spec.get("script", ""))
        per_node = re.search(r"GPUS_PER_NODE=(\{gpus\}|\d+)", spec.get("script", ""))
        gpus = "8" if per_node is None else str(spec["gpus"]) if "{" in per_node.group(1) \
            else per_node.group(1)  # fmt: skip
        for product in data.get("products") or []:
            for inner in product.get("products") or []:
                scopes = inner.get("scope") or spec.get("scope") or []
                if inner.get("allow_failure") or not any(not OFF_SCOPES.search(s) for s in scopes):
                    continue
                for case in product["test_case"]:
                    key = (str(spec["model"]), case, recipe.parent.name + "/" + recipe.name)
                    row = rows.setdefault(key, {
                        "model": str(spec["model"]), "test_case": case,
                        "nodes": str(spec["nodes"]), "gpus_per_node": gpus,
                        "megatron_core": core,
                        "script": script.group(1) if script else "",
                        "environments": "", "platforms": "", "recipe": key[2],
                    })  # fmt: skip
                    for column, values in (("environments", inner.get("environment")),
                                           ("platforms", inner.get("platforms")
                                            or spec.get("platforms"))):  # fmt: skip
                        values = values if isinstance(values, list) else [values]
                        have = set(filter(None, row[column].split(",")))
                        row[column] = ",".join(sorted(have | {str(v) for v in values if v}))
    return [rows[k] for k in sorted(rows)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tree", type=Path)
    ns = ap.parse_args(argv)
    tree: Path = ns.tree
    rows = ci_rows(tree)
    cases = OUT / "ci"
    if cases.exists():
        shutil.rmtree(cases)
    # Every test case's file (the switched-off ones too: NeMo 2 and inference files are inputs
    # a reader must recognise); INDEX.tsv names the ones CI runs green.
    source = tree / "tests" / "functional_tests" / "test_cases"
    configs = sorted(source.glob("*/*/model_config.yaml"))
    for src in configs:
        dst = cases / src.relative_to(source)
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
    kept = [
        r for r in rows if (cases / r["model"] / r["test_case"] / "model_config.yaml").is_file()
    ]
    with INDEX.open("w", encoding="utf-8", newline="") as handle:
        handle.write("# Megatron-LM functional tests its CI runs green (tools/mlm_corpus.py)\n")
        writer = csv.DictWriter(handle, COLUMNS, delimiter="\t", lineterminator="\n")
        writer.writeheader()
        writer.writerows(kept)
    examples = OUT / "examples"
    if examples.exists():
        shutil.rmtree(examples)
    scripts = sorted((tree / "examples").rglob("*.sh"))
    for src in scripts:
        dst = examples / src.relative_to(tree / "examples")
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
    names = {r["test_case"] for r in kept}
    print(f"{len(configs)} test case files, {len(kept)} CI test rows ({len(names)} test cases), "
          f"{len(scripts)} example scripts")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
