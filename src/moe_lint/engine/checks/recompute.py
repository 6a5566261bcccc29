"""Python checks for the recompute rule family (RCP codes, rules/recompute.yaml)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from moe_lint.config.suggest import closest
from moe_lint.engine.catalogue import PythonCheck
from moe_lint.engine.checks.reads import Reads
from moe_lint.engine.evaluate import Violation
from moe_lint.engine.spans import remove_item_edit, replace_item_edit

if TYPE_CHECKING:
    from moe_lint.engine.evaluate import Context

#: Recompute labels the pinned Megatron-Core accepts (docs/domain/01 §b.4, 02 RC-05).
RECOMPUTE_LABELS = (
    "core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe", "shared_experts",
    "gdn_norm_out",
)  # fmt: skip
#: Shorthands used by the long-context guidance itself (docs/domain/01 §a.5.1) -> real labels.
RECOMPUTE_ALIASES = {"up_proj": "mla_up_proj", "norm": "layernorm"}


def unknown_recompute_labels(ctx: Context) -> Iterator[Violation]:
    """Labels Megatron-Core asserts on; the guidance's own shorthands get a fix."""
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
    stated = cfg.stated("model.recompute_granularity")
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


# --------------------------------------------------------------------------------------------
# Rules converted from long expressions: each reads what its expression read, in the same order
# (an unknown field or fact raises NotDerivable: no finding), and yields the template values.
# The ``r.value(field, default)`` defaults are the expressions' own, kept literally.
# --------------------------------------------------------------------------------------------


def mhc_recompute_prerequisites(ctx: Context) -> Iterator[Violation]:
    """RCP015: mhc in recompute_modules without what TransformerConfig requires for it."""
    r = Reads(ctx)
    layer_num = r.value("model.mhc_recompute_layer_num", 1)
    if r.value("model.fine_grained_activation_offloading"):
        offload = r.value("model.offload_modules") or []
        offloaded = [m for m in offload if m in ("attn_norm", "mlp_norm")]
    else:
        offloaded = []
    if not r.value("model.enable_hyper_connections", False):
        reason = "enable_hyper_connections is false"
    elif "mlp" in (r.field("model.recompute_modules") or []):
        reason = "mlp is also in recompute_modules (the two use different checkpoint mechanisms)"
    elif layer_num < 1:
        reason = r.cat(
            "mhc_recompute_layer_num must be a positive integer, got ", r.to_str(layer_num)
        )
    elif len(offloaded) > 0:
        reason = r.cat(
            "offload_modules ", r.join(offloaded), " cannot be offloaded under mhc recompute"
        )
    else:
        reason = ""
    if (
        r.field("model.recompute_granularity") == "selective"
        and "mhc" in r.field("model.recompute_modules")
        and reason != ""
    ):
        yield Violation("", {"reason": reason})


CHECKS: dict[str, PythonCheck] = {
    "unknown-recompute-labels": PythonCheck(
        unknown_recompute_labels, frozenset({"label", "hint", "allowed"})
    ),
    "mhc-recompute-prerequisites": PythonCheck(mhc_recompute_prerequisites, frozenset({"reason"})),
}
