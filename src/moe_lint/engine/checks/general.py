"""Python checks that belong to no one family: types, duplicate keys, interpolations,
recompute labels and suppressions."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from moe_lint.config.load import format_path
from moe_lint.config.suggest import closest
from moe_lint.engine.catalogue import PythonCheck
from moe_lint.engine.spans import remove_item_edit, replace_item_edit

if TYPE_CHECKING:
    from moe_lint.engine.evaluate import Context, Violation


def _violation(path: str, **params: Any) -> Violation:
    from moe_lint.engine.evaluate import Violation

    return Violation(path=path, params=params)


def type_problems(ctx: Context) -> Iterator[Violation]:
    """Values Bridge's dataclasses would reject (wrong type, out of range, bad choice)."""
    for problem in ctx.config.type_problems:
        yield _violation(
            problem.path, key=problem.path, value=problem.value, problem=problem.message
        )


def duplicate_keys(ctx: Context) -> Iterator[Violation]:
    """A key written twice in one mapping: YAML keeps the last, OmegaConf refuses the file."""
    from moe_lint.engine.evaluate import Violation

    root = ctx.config.root
    for path, _span in ctx.config.doc.duplicates:
        logical = path[len(root) :] if path[: len(root)] == root else path
        yield Violation(path=format_path(logical), params={"key": format_path(logical)})


def unresolved_interpolations(ctx: Context) -> Iterator[Violation]:
    """``${TP}``-style placeholders: the value is decided when the template is filled in."""
    for dotted in ctx.config.interpolations:
        yield _violation(dotted, key=dotted, value=ctx.config.get(dotted))


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


def unused_suppressions(ctx: Context) -> Iterator[Violation]:
    """Suppression comments (or codes in them) that suppressed nothing."""
    from moe_lint.engine.evaluate import Violation

    catalogue = ctx.catalogue
    for sup in ctx.suppressions:
        for code in sup.codes:
            rule = catalogue.by_code.get(code) or catalogue.by_name.get(code)
            if rule is None or rule.code in sup.used:
                continue
            yield Violation(
                path=_line_path(ctx, sup.line),
                params={"code": code, "line": sup.line},
                at=(sup.line, sup.column),
            )


def unknown_suppressions(ctx: Context) -> Iterator[Violation]:
    """Suppression comments naming a code or rule name that does not exist."""
    from moe_lint.engine.evaluate import Violation

    catalogue = ctx.catalogue
    for sup in ctx.suppressions:
        for code in sup.codes:
            if code in catalogue.by_code or code in catalogue.by_name:
                continue
            guess = closest(code, sorted(catalogue.by_code) + sorted(catalogue.by_name))
            hint = f"did you mean {guess}?" if guess else "see `moe-lint rules`"
            yield Violation(
                path=_line_path(ctx, sup.line),
                params={"code": code, "line": sup.line, "hint": hint},
                at=(sup.line, sup.column),
            )


def _line_path(ctx: Context, line: int) -> str:
    """The config path of the key on ``line`` (findings are located by path, not line)."""
    best = None
    root = ctx.config.root
    for path, span in ctx.config.doc.spans.items():
        start = span.key_start or span.value_start
        if (
            start.line == line
            and path[: len(root)] == root
            and (best is None or len(path) < len(best))
        ):
            best = path
    if best is None:
        return "<comment>"
    return format_path(best[len(root) :]) or "<comment>"


#: The core checks; each family module (checks_<family>.py) has its own CHECKS table.
CHECKS: dict[str, PythonCheck] = {
    "unused-suppressions": PythonCheck(unused_suppressions, frozenset({"code", "line"})),
    "unknown-suppressions": PythonCheck(unknown_suppressions, frozenset({"code", "line", "hint"})),
    "type-problems": PythonCheck(type_problems, frozenset({"key", "value", "problem"})),
    "duplicate-keys": PythonCheck(duplicate_keys, frozenset({"key"})),
    "unresolved-interpolations": PythonCheck(
        unresolved_interpolations, frozenset({"key", "value"})
    ),
    "unknown-recompute-labels": PythonCheck(
        unknown_recompute_labels, frozenset({"label", "hint", "allowed"})
    ),
}
