"""Which form of Bridge config a document is: wrapped, a full dump, an override file -- or none.

``load`` asks this to tell a malformed config from other YAML, ``normalize`` to find the
ConfigContainer root, the CLI's ``estimate`` to skip files that are not configs.
"""

from __future__ import annotations

from typing import Any

#: Top-level keys of Bridge's ConfigContainer, used to recognise a Bridge config at all.
CONTAINER_SECTIONS = frozenset(
    {
        "model", "train", "dataset", "optimizer", "ddp", "scheduler", "checkpoint", "logger",
        "tokenizer", "mixed_precision", "comm_overlap", "dist", "rng", "rerun_state_machine",
        "profiling", "validation", "peft", "ft", "straggler", "nvrx_straggler",
        "inprocess_restart", "tensor_inspect", "env_vars", "optimizer_config_override_provider",
    }
)  # fmt: skip


class NotBridgeConfig(Exception):
    """The YAML is valid but is not a Megatron Bridge config (e.g. a model card)."""


def detect_root(data: dict[str, Any]) -> tuple[tuple[str, ...], str]:
    """Find the ConfigContainer root and the file's form; raise NotBridgeConfig if none."""
    wrapped = data.get("ConfigContainer")
    if isinstance(wrapped, dict):
        return ("ConfigContainer",), "wrapped"
    target = data.get("_target_")
    if isinstance(target, str) and target.endswith("ConfigContainer"):
        return (), "full-dump"
    keys = [k for k in data if k != "_target_"]
    if not keys:
        raise NotBridgeConfig("no config keys (the file holds only comments)")
    known = sum(1 for k in keys if k in CONTAINER_SECTIONS)
    if keys and known * 2 >= len(keys) and known > 0:
        return (), "override"
    raise NotBridgeConfig(
        "not a Megatron Bridge config (no ConfigContainer sections such as model/train/dataset)"
    )
