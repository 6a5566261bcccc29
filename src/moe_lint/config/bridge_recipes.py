"""The released Megatron Bridge recipes, as ``data/bridge_recipes.json`` records them.

``tools/gen_bridge_recipes.py`` reads every recipe Megatron Bridge 0.6.2 exports statically
(the wheel's ``megatron/bridge/recipes`` and ``megatron/bridge/perf_recipes``; the library
recipes are the same at the v0.6.0 tag): the fields each recipe function sets to a literal, the
fields it sets in a way the reading cannot know (unknown, with why), its model provider (the
Hugging Face checkpoint whose architecture moe-lint's preset gives) and its mixed-precision
recipe. A launch script (``run_recipe.py --recipe NAME``, config/bridge_launch.py) is linted
as that recipe's config.

Read lazily, once: only a Bridge launch script needs it.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

from moe_lint.records import field, record

#: scripts/training/recipe_metadata.py::BENCHMARK_RECIPE_PATTERN (v0.6.0): a benchmark
#: recipe's name gives its task, GPU count, hardware and precision.
BENCHMARK_RECIPE_PATTERN = re.compile(
    r"_(?P<task>pretrain|sft|peft)_(?P<num_gpus>[1-9][0-9]*)gpu_"
    r"(?P<hardware>[a-z0-9]+)_"
    r"(?P<precision>bf16|fp8cs|fp8mx|fp8sc|nvfp4)"
    r"(?:_[a-z0-9_]+)?_config$"
)


@record
class Recipe:
    """One recipe name: the function it runs and what that function sets."""

    name: str
    #: ``src/megatron/bridge/...py::function`` in the release.
    function: str
    #: "library" (megatron.bridge.recipes) or "benchmark" (megatron.bridge.perf_recipes).
    kind: str
    #: Dotted field -> the literal value the recipe sets (sections it leaves None: None).
    values: dict[str, Any] = field(default_factory=dict)
    #: Dotted field or section -> why its value cannot be known statically.
    unknown: dict[str, str] = field(default_factory=dict)
    #: {"hf": "<checkpoint id>"} / {"class": "<Provider>"} / None (not read).
    model: dict[str, Any] | None = None
    #: The mixed-precision recipe function the config starts from (bf16_mixed, ...).
    mixed_precision: str | None = None

    @property
    def benchmark(self) -> dict[str, Any] | None:
        """A benchmark recipe's canonical task, GPU count, hardware and precision."""
        if self.kind != "benchmark":
            return None
        match = BENCHMARK_RECIPE_PATTERN.search(self.name)
        if match is None:
            return None
        out: dict[str, Any] = match.groupdict()
        out["num_gpus"] = int(out["num_gpus"])
        return out

    def data(self) -> dict[str, Any]:
        """The values as a nested config tree (sections below the ConfigContainer root)."""
        tree: dict[str, Any] = {}
        for dotted, value in self.values.items():
            parts = dotted.split(".")
            node = tree
            for part in parts[:-1]:
                child = node.get(part)
                if not isinstance(child, dict):
                    child = {}
                    node[part] = child
                node = child
            if parts[-1] not in node or not isinstance(node[parts[-1]], dict):
                node[parts[-1]] = value
        return tree


@cache
def _table() -> dict[str, Any]:
    path = Path(__file__).resolve().parent.parent / "data" / "bridge_recipes.json"
    with path.open(encoding="utf-8") as handle:
        data: dict[str, Any] = json.load(handle)
    return data


def source() -> dict[str, Any]:
    """Where the table was read from (package, wheel hash, repository, tag and commit)."""
    found: dict[str, Any] = _table()["source"]
    return found


def release() -> str:
    """``megatron-bridge 0.6.2``: the release whose recipes the table holds."""
    return str(source().get("package", "megatron-bridge"))


def unreadable(name: str) -> str | None:
    """Why a recipe the release exports could not be read (it raises, ...), or None."""
    found = _table()["unreadable"].get(name)
    return str(found) if found is not None else None


@cache
def lookup(name: str) -> Recipe | None:
    """The recipe ``name`` selects, as run_recipe.py's load_recipe finds it; None when the
    release exports no recipe of that name (or it could not be read)."""
    table = _table()
    entry = table["recipes"].get(name)
    if entry is None:
        return None
    function, kind = entry
    read = table["functions"][function]
    pairs = table["pairs"]
    reasons = table["reasons"]
    bits = int(read["values"], 16) if read["values"] else 0
    values: dict[str, Any] = {}
    index = 0
    while bits:
        if bits & 1:
            path, value = pairs[index]
            values[path] = value
        bits >>= 1
        index += 1
    unknown = {path: reasons[i] for path, i in read["unknown"].items()}
    return Recipe(
        name=name,
        function=function,
        kind=kind,
        values=values,
        unknown=unknown,
        model=read.get("model"),
        mixed_precision=read.get("mixed_precision"),
    )


def names() -> list[str]:
    """Every recipe name the table knows."""
    return sorted(_table()["recipes"])
