"""Python checks for the attention rule family (listed in moe_lint.engine.checks.MODULES).

Most rules are pure data in rules/*.yaml; put a check here only when a condition truly needs
code. Each entry maps a check name (used as `check: <name>` in a pack) to a PythonCheck whose
params are the template placeholders its violations provide.

The checks here need code for one of three reasons: they read model fields that only a model
preset supplies (``window_size``, ``softmax_type``: untyped fields a preset does not fill into
the normalized config), they search for a suggestion (the a2a group of hierarchical CP), or
their condition outgrew an expression (ATT006, ATT019, ATT021). The SFT dataset checks are in
sequence.py; ``sequence-parallel-at-tp1`` (PAR) is left here for the parallel family's module.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from moe_lint.analysis.cp_groups import a2a_group, per_tp_rank
from moe_lint.engine.catalogue import PythonCheck
from moe_lint.engine.checks import reads
from moe_lint.engine.checks.reads import derived as _fact
from moe_lint.engine.checks.reads import to_int as _int
from moe_lint.engine.checks.reads import violation as _violation
from moe_lint.engine.evaluate import Violation

if TYPE_CHECKING:
    from moe_lint.engine.evaluate import Context, Violation


def _model(ctx: Context, key: str) -> Any:
    """``model.<key>``: the file's value, else the model preset's (normalize applied it), else
    None.

    Recipe-provided typed fields the file leaves unset are unknown: None as well.
    """
    cfg = ctx.config
    dotted = f"model.{key}"
    if dotted in cfg.unknown:
        return None
    return cfg.get(dotted)


def _cp_types(value: Any) -> list[str]:
    """cp_comm_type as one entry per layer (a string applies to every layer; None is p2p)."""
    if isinstance(value, list):
        return [str(v) if v else "p2p" for v in value]
    return [str(value) if value else "p2p"]


def _show_types(value: Any) -> str:
    if isinstance(value, list):
        kinds = sorted(set(_cp_types(value)))
        return f"a per-layer list ({', '.join(kinds)})"
    return repr(value or "p2p")


def _heads(ctx: Context) -> tuple[int, int] | None:
    """(attention heads, KV heads) of the model, or None when the recipe decides them."""
    heads = _int(_model(ctx, "num_attention_heads"))
    if not heads:
        return None
    if _model(ctx, "multi_latent_attention"):
        return heads, heads  # MLA attends with full heads for Q, K and V
    groups = _int(_model(ctx, "num_query_groups"))
    if "model.num_query_groups" in ctx.config.unknown:
        return None
    return heads, groups or heads


def _node_size(ctx: Context) -> int:
    per_node = _int(_fact(ctx, "gpus_per_node")) or 8
    domain = _int(_fact(ctx, "nvlink_domain")) or per_node
    return max(per_node, min(domain, 8 * per_node))


def _suggest_hierarchical(ctx: Context, cp: int, tp: int) -> str:
    heads = _heads(ctx)
    node = _node_size(ctx)
    if heads is None:
        a2a = max((d for d in range(1, min(cp, node) + 1) if cp % d == 0), default=1)
        note = " (the first factor must also divide heads/TP and KV heads/TP)"
    else:
        heads_tp, kv_tp = per_tp_rank(heads[0], heads[1], tp)
        a2a = a2a_group(heads_tp, kv_tp, cp, node)
        note = f" (heads/TP = {heads_tp}, KV heads/TP = {kv_tp})"
    if a2a <= 1:
        return f"use cp_comm_type p2p: no a2a group > 1 divides CP {cp}{note}"
    return f"set hierarchical_context_parallel_sizes to [{a2a}, {cp // a2a}]{note}"


#: What happens without the sizes: a Megatron-LM command line stops in validate_args
#: (core_v0.14.0 to core_v0.19.0); under Bridge it depends on the release.
_MLM_A2A_P2P = (
    "Megatron-LM's validate_args asserts \"--hierarchical-context-parallel-sizes must be set "
    'when a2a+p2p is used in cp comm" at startup'
)
_BRIDGE_A2A_P2P = (
    "current Bridge rejects this in validate(); older Bridge and direct Megatron-Core configs "
    "build no hierarchical groups, TE gets cp_group=None and CP is silently OFF (each rank "
    "attends only to its own 1/CP chunk: 3.5x fake throughput and a worse loss, Bridge#2667)"
)


def a2a_p2p_without_sizes(ctx: Context) -> Iterator[Violation]:
    """cp_comm_type a2a+p2p with no hierarchical_context_parallel_sizes (Bridge#2667)."""
    cfg = ctx.config
    value = cfg.get("model.cp_comm_type")
    if "model.cp_comm_type" in cfg.unknown or "a2a+p2p" not in _cp_types(value):
        return
    sizes = "model.hierarchical_context_parallel_sizes"
    if sizes in cfg.unknown or cfg.get(sizes) is not None:  # unknown: `~` left it to the recipe
        return
    cp, tp = _int(_fact(ctx, "cp")), _int(_fact(ctx, "tp"))
    if cp is None or tp is None:
        return
    yield _violation(
        "model.cp_comm_type",
        types=_show_types(value),
        consequence=_MLM_A2A_P2P if cfg.form == "megatron-lm" else _BRIDGE_A2A_P2P,
        suggest=(
            _suggest_hierarchical(ctx, cp, tp)
            if cp > 1
            else "use cp_comm_type p2p (CP is 1, no hierarchy is needed)"
        ),
    )


def hierarchical_sizes_product(ctx: Context) -> Iterator[Violation]:
    """prod(hierarchical_context_parallel_sizes) must equal CP (Bridge and parallel_state)."""
    cfg = ctx.config
    sizes = cfg.get("model.hierarchical_context_parallel_sizes")
    cp, tp = _int(_fact(ctx, "cp")), _int(_fact(ctx, "tp"))
    if not isinstance(sizes, list) or cp is None or tp is None:
        return
    ints = [_int(s) for s in sizes]
    if any(s is None or s < 1 for s in ints):
        return
    product = math.prod(s for s in ints if s is not None)
    if product == cp:
        return
    shown = "·".join(str(s) for s in ints) or "1"
    yield _violation(
        "model.hierarchical_context_parallel_sizes",
        sizes=f"[{', '.join(str(s) for s in ints)}]",
        product=f"{shown} = {product}",
        suggest=(
            _suggest_hierarchical(ctx, cp, tp)
            if cp > 1
            else "remove hierarchical_context_parallel_sizes (CP is 1)"
        ),
    )


def a2a_head_divisibility(ctx: Context) -> Iterator[Violation]:
    """Ulysses (a2a) CP scatters heads: heads/TP and KV heads/TP must divide by the a2a group."""
    cfg = ctx.config
    if "model.cp_comm_type" in cfg.unknown:
        return
    value = cfg.get("model.cp_comm_type")
    types = set(_cp_types(value))
    cp, tp = _int(_fact(ctx, "cp")), _int(_fact(ctx, "tp"))
    if cp is None or tp is None or cp <= 1:
        return
    heads = _heads(ctx)
    if heads is None:
        return
    groups: list[tuple[str, int]] = []
    if "a2a" in types:
        groups.append(("a2a", cp))
    sizes = cfg.get("model.hierarchical_context_parallel_sizes")
    if "a2a+p2p" in types and isinstance(sizes, list) and sizes and _int(sizes[0]):
        groups.append(("a2a+p2p", int(sizes[0])))
    heads_tp, kv_tp = per_tp_rank(heads[0], heads[1], tp)
    for kind, group in groups:
        if group <= 1 or (heads_tp % group == 0 and kv_tp % group == 0):
            continue
        a2a = a2a_group(heads_tp, kv_tp, cp, _node_size(ctx))
        if a2a > 1:
            suggest = (
                f"use cp_comm_type a2a+p2p with hierarchical_context_parallel_sizes "
                f"[{a2a}, {cp // a2a}] (a2a inside a node, ring across)"
            )
        else:
            suggest = (
                "use cp_comm_type p2p (or all_gather for sliding-window attention): no a2a "
                f"group > 1 divides CP {cp}, heads/TP {heads_tp} and KV heads/TP {kv_tp}"
            )
        where = "CP" if kind == "a2a" else "the a2a group hierarchical_context_parallel_sizes[0]"
        yield _violation(
            "model.cp_comm_type" if kind == "a2a" else "model.hierarchical_context_parallel_sizes",
            kind=kind,
            group=group,
            where=where,
            heads=heads[0],
            kv=heads[1],
            heads_tp=heads_tp,
            kv_tp=kv_tp,
            suggest=suggest,
        )


def _window_layers(window: Any, skip: Any, layers: int | None) -> list[bool] | bool:
    """Which layers use sliding-window attention (a list when it varies, else one flag)."""
    if window is None:
        return False
    if isinstance(window, list | tuple) and [_int(w) for w in window] in ([-1, 0], [-1, -1]):
        return False
    if skip is None:
        return True
    if isinstance(skip, list):
        return [bool(v) for v in skip]
    freq = _int(skip)
    if freq is None:
        return True
    if freq == 1:
        return False
    if layers is None:
        return True
    return [(n % freq) != 0 for n in range(1, layers + 1)]


def sliding_window_cp(ctx: Context) -> Iterator[Violation]:
    """TE CP supports sliding-window attention only with a2a or all_gather."""
    cp = _int(_fact(ctx, "cp"))
    if cp is None or cp <= 1 or "model.cp_comm_type" in ctx.config.unknown:
        return
    window = _model(ctx, "window_size")
    value = ctx.config.get("model.cp_comm_type")
    types = _cp_types(value)
    layers = _int(_model(ctx, "num_layers"))
    swa = _window_layers(window, _model(ctx, "window_attn_skip_freq"), layers)
    if swa is False:
        return
    bad = set()
    if isinstance(swa, list):
        for i, is_swa in enumerate(swa):
            kind = types[i] if len(types) == len(swa) else types[0]
            if is_swa and kind in ("p2p", "a2a+p2p"):
                bad.add(kind)
    else:
        bad = {t for t in types if t in ("p2p", "a2a+p2p")}
    if not bad:
        return
    shown = list(window) if isinstance(window, tuple) else window
    yield _violation(
        "model.cp_comm_type",
        window=shown,
        types=_show_types(value),
        bad=", ".join(sorted(bad)),
        cp=cp,
    )


_SINK_TYPES = ("off-by-one", "learnable")


def sink_softmax_cp(ctx: Context) -> Iterator[Violation]:
    """TE CP supports a non-vanilla softmax (GPT-OSS sinks) only with a2a and FusedAttention."""
    cp = _int(_fact(ctx, "cp"))
    softmax = _model(ctx, "softmax_type")
    if cp is None or cp <= 1 or softmax not in _SINK_TYPES:
        return
    if "model.cp_comm_type" in ctx.config.unknown:
        return
    value = ctx.config.get("model.cp_comm_type")
    bad = sorted({t for t in _cp_types(value) if t != "a2a"})
    backend = str(ctx.config.get("model.attention_backend") or "").rsplit(".", 1)[-1].lower()
    problems = []
    if bad:
        problems.append(f"cp_comm_type {_show_types(value)} is not a2a on every layer")
    if backend in ("flash", "unfused"):
        problems.append(f"attention_backend {backend} is not FusedAttention")
    if not problems:
        return
    yield _violation(
        "model.cp_comm_type" if bad else "model.attention_backend",
        softmax=softmax,
        cp=cp,
        problem="; ".join(problems),
    )


def nonvanilla_softmax(ctx: Context) -> Iterator[Violation]:
    """softmax_type other than vanilla (attention sinks): the softmax TE must implement."""
    softmax = _model(ctx, "softmax_type")
    if softmax in _SINK_TYPES:
        yield _violation("model.softmax_type", softmax=softmax)


# --------------------------------------------------------------------------------------------
# Conditions that outgrew an expression (each reads the config as its expression did)
# --------------------------------------------------------------------------------------------

#: attention_backend spellings -> the AttnBackend member.
_BACKENDS = {
    "flash": "flash", "AttnBackend.flash": "flash", "fused": "fused",
    "AttnBackend.fused": "fused", "unfused": "unfused", "AttnBackend.unfused": "unfused",
    "auto": "auto", "AttnBackend.auto": "auto", "local": "local", "AttnBackend.local": "local",
}  # fmt: skip
#: The NVTE_FLASH_ATTN / NVTE_FUSED_ATTN / NVTE_UNFUSED_ATTN values each backend sets.
_BACKEND_ENV = {
    "flash": [1, 0, 0], "fused": [0, 1, 0], "unfused": [0, 0, 1], "auto": [1, 1, 1],
    "local": [0, 0, 0],
}  # fmt: skip
_NVTE_ATTN = ("NVTE_FLASH_ATTN", "NVTE_FUSED_ATTN", "NVTE_UNFUSED_ATTN")


def nvte_env_backend_conflict(ctx: Context) -> Iterator[Violation]:
    """ATT006: NVTE_*_ATTN variables that disagree with attention_backend."""
    raw = str(reads.value(ctx, "model.attention_backend", ""))
    backend = _BACKENDS.get(raw)
    written = [
        (name, reads.field(ctx, f"env_vars.{name}"), _BACKEND_ENV[backend][i] if backend else 0)
        for i, name in enumerate(_NVTE_ATTN)
    ]
    bad = [
        f"{name}={v} (needs {e})" for name, v, e in written if v is not None and str(v) != str(e)
    ]
    if reads.explicit(ctx, "model.attention_backend") and backend is not None and len(bad) > 0:
        yield _violation("model.attention_backend", backend=backend, shown=", ".join(bad))


_NOT_FUSED = ("flash", "unfused", "AttnBackend.flash", "AttnBackend.unfused")


def cp_fp8_attention_backend(ctx: Context) -> Iterator[Violation]:
    """ATT019: FP8 attention under CP needs FusedAttention, unpacked data, a built-in recipe."""
    fp8_dpa = bool(reads.value(ctx, "model.fp8_dot_product_attention", False)) or bool(
        reads.value(ctx, "mixed_precision.fp8_dot_product_attention", False)
    )
    raw = str(reads.value(ctx, "model.attention_backend", ""))
    thd = (
        bool(reads.value(ctx, "dataset.enable_offline_packing", False))
        or bool(reads.value(ctx, "dataset.enable_in_batch_packing", False))
        or reads.value(ctx, "dataset.packing_buffer_size", None) is not None
    )
    if not (
        reads.fact(ctx, "cp") > 1
        and fp8_dpa
        and bool(reads.value(ctx, "model.fp8", None))
        and (raw in _NOT_FUSED or thd or reads.value(ctx, "model.fp8_recipe", None) == "custom")
    ):
        return
    if raw in _NOT_FUSED:
        problem = f"attention_backend {raw} is not FusedAttention"
    elif reads.value(ctx, "model.fp8_recipe", None) == "custom":
        problem = "the fp8 recipe is custom"
    else:
        problem = "packed (THD) sequences"
    yield _violation("model.context_parallel_size", problem=problem)


def gated_delta_net_heads(ctx: Context) -> Iterator[Violation]:
    """ATT021: gated_delta_net linear heads must be divisible as Megatron-Core shards them."""
    gdn = (
        reads.value(ctx, "model.experimental_attention_variant") == "gated_delta_net"
        or reads.value(ctx, "model.linear_attention_type", None) == "gated_delta_net"
    )
    kh = reads.value(ctx, "model.linear_num_key_heads")
    vh = reads.value(ctx, "model.linear_num_value_heads")
    tp = reads.fact(ctx, "tp")
    cp = reads.fact(ctx, "cp")
    par = tp * cp
    if not (gdn and (vh % kh != 0 or kh % par != 0 or vh % par != 0)):
        return
    label = f"TP·CP = {tp}·{cp}" if cp > 1 else f"TP = {tp}"
    if vh % kh != 0:
        problem = f"linear_num_value_heads {vh} is not a multiple of linear_num_key_heads {kh}"
    else:
        problem = f"linear heads ({kh} key, {vh} value) are not divisible by {label}"
    yield _violation("model.linear_num_key_heads", kh=kh, vh=vh, problem=problem)


CHECKS: dict[str, PythonCheck] = {
    "a2a-p2p-without-sizes": PythonCheck(
        a2a_p2p_without_sizes, frozenset({"types", "suggest", "consequence"})
    ),
    "hierarchical-sizes-product": PythonCheck(
        hierarchical_sizes_product, frozenset({"sizes", "product", "suggest"})
    ),
    "a2a-head-divisibility": PythonCheck(
        a2a_head_divisibility,
        frozenset({"kind", "group", "where", "heads", "kv", "heads_tp", "kv_tp", "suggest"}),
    ),
    "sliding-window-cp": PythonCheck(
        sliding_window_cp, frozenset({"window", "types", "bad", "cp"})
    ),
    "sink-softmax-cp": PythonCheck(sink_softmax_cp, frozenset({"softmax", "cp", "problem"})),
    "nonvanilla-softmax": PythonCheck(nonvanilla_softmax, frozenset({"softmax"})),
    "nvte-env-backend-conflict": PythonCheck(
        nvte_env_backend_conflict, frozenset({"backend", "shown"})
    ),
    "cp-fp8-attention-backend": PythonCheck(
        cp_fp8_attention_backend, frozenset({"problem"}), frozenset({"cp"})
    ),
    "gated-delta-net-heads": PythonCheck(
        gated_delta_net_heads, frozenset({"kh", "vh", "problem"}), frozenset({"tp", "cp"})
    ),
}
