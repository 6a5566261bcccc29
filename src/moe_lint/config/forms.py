"""Which form of Bridge config a document is: wrapped, a full dump, an override file -- or none.

``load`` asks this to tell a malformed config from other YAML, ``normalize`` to find the
ConfigContainer root, the CLI's ``estimate`` to skip files that are not configs.
"""

from __future__ import annotations

import re
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


# --- Megatron-LM launch scripts (config/mlm_args.py reads them) ---------------------------------

_SHEBANG = re.compile(r"\A#!\s*\S*(?:/|env\s+)(?:ba|z|k|da)?sh\b")
_FLAG_TOKEN = re.compile(r"(?:^|[\s(\"'=])--[a-z][a-z0-9]*(?:-[a-z0-9]+)+\b", re.M)
_YAML_KEY = re.compile(r"^[A-Za-z_][\w.-]*\s*:(?:\s|$)", re.M)


def looks_like_script(text: str, path: str) -> bool:
    """A shell script: a shebang, a ``.sh`` name with shell text, or ``--flag`` tokens in
    text that is not YAML-shaped (assignments, continuation lines, a python/torchrun call)."""
    if _SHEBANG.match(text) or path.endswith((".sh", ".bash", ".slurm", ".sbatch")):
        return True
    if path.endswith((".yaml", ".yml", ".json")):
        return False  # YAML by name: a shell script among them needs its shebang
    head = text[:200_000]
    if "--" not in head or re.search(r"^MODEL_ARGS\s*:", head, re.M):
        return False
    flags = len(_FLAG_TOKEN.findall(head))
    if flags < 2:
        return False
    shellish = re.search(r"^\s*(?:export\s+)?[A-Za-z_]\w*=|\\\s*$|\b(torchrun|python3?|srun)\b",
                         head, re.M)  # fmt: skip
    return bool(shellish) and len(_YAML_KEY.findall(head)) * 4 < flags
