"""The recompute-label check (RCP), left for the recompute family's module.

The schema checks (types, duplicate keys, interpolations) moved to schema.py and the
suppression checks to suppressions.py (issue 11: the check behind a rule of pack X lives in
checks/<X>.py); unknown-recompute-labels belongs to rules/recompute.yaml.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from moe_lint.config.suggest import closest
from moe_lint.engine.catalogue import PythonCheck
from moe_lint.engine.spans import remove_item_edit, replace_item_edit

if TYPE_CHECKING:
    from moe_lint.engine.evaluate import Context, Violation


#: Recompute labels the pinned Megatron-Core accepts (docs/domain/01 §b.4, 02 RC-05).
RECOMPUTE_LABELS = (
    "core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe", "shared_experts",
    "gdn_norm_out",
)  # fmt: skip
#: Shorthands used by the long-context guidance itself (docs/domain/01 §a.5.1) -> real labels.
RECOMPUTE_ALIASES = {"up_proj": "mla_up_proj", "norm": "layernorm"}


def unknown_recompute_labels(ctx: Context) -> Iterator[Violation]:
    """Labels Megatron-Core asserts on; the guidance's own shorthands get a fix."""
    from moe_lint.engine.evaluate import Violation

    cfg = ctx.config
    modules = cfg.values.get("model.recompute_modules")
    if not isinstance(modules, list) or cfg.origin.get("model.recompute_modules") not in (
        "file",
        "override",
    ):
        return
    # Megatron-Core validates the labels only inside `recompute_granularity == "selective"`
    # (TransformerConfig.__post_init__); with full or no recompute the list is inert. Only an
    # override file that leaves the granularity to its recipe may still be selective.
    granularity = cfg.values.get("model.recompute_granularity")
    stated = cfg.form == "full-dump" or cfg.explicit("model.recompute_granularity")
    if "model.recompute_granularity" in cfg.unknown:
        stated = False
    if granularity == "full" or (granularity is None and stated):
        return
    mla = cfg.values.get("model.multi_latent_attention")
    mla_known = "model.multi_latent_attention" not in cfg.unknown and mla is not None
    for i, label in enumerate(modules):
        if label in RECOMPUTE_LABELS:
            continue
        path = f"model.recompute_modules[{i}]"
        replacement = RECOMPUTE_ALIASES.get(str(label))
        applicability = None
        edits = []
        if replacement == "mla_up_proj" and not (mla_known and mla is True):
            # mla_up_proj raises "only supported with multi_latent_attention" on other models
            # (RCP005): removing the label is the fix, and it changes what is recomputed.
            edit = remove_item_edit(cfg.doc, cfg.physical(path))
            if edit is not None:
                edits.append(edit)
            applicability = "unsafe"
            if mla_known:
                hint = (
                    "remove it: 'mla_up_proj', the Megatron-Core name for 'up_proj', exists only "
                    "for multi_latent_attention models, and this model is not one"
                )
            else:
                hint = (
                    "remove it, or use 'mla_up_proj' (the Megatron-Core name for 'up_proj') if "
                    "the model sets multi_latent_attention"
                )
        elif replacement is not None:
            edit = replace_item_edit(cfg.doc, cfg.physical(path), replacement)
            if edit is not None:
                edits.append(edit)
            hint = f"use '{replacement}' (the Megatron-Core name for '{label}')"
        else:
            guess = closest(str(label), list(RECOMPUTE_LABELS))
            hint = f"did you mean '{guess}'?" if guess else "remove it"
        yield Violation(
            path=path,
            params={"label": label, "hint": hint, "allowed": ", ".join(RECOMPUTE_LABELS)},
            edits=edits,
            applicability=applicability,
        )


CHECKS: dict[str, PythonCheck] = {
    "unknown-recompute-labels": PythonCheck(
        unknown_recompute_labels, frozenset({"label", "hint", "allowed"})
    ),
}
