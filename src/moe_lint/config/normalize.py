"""Stage 2: the loaded YAML -> the config Megatron Bridge would actually run.

Reproduces what Bridge and Megatron-Core do to a config before they check it (docs/domain/01 §b,
02 §1): the ``ConfigContainer:`` wrapper and full-dump forms (with the ``{_target_: ...}`` object
nodes of ``to_yaml`` read as the values they stand for), CLI overrides, model presets,
Bridge's ETP default, sequence parallelism forced off at TP=1, the ``core_attn`` default for
selective recompute, migration of deprecated CUDA-graph flags, and a ``mixed_precision`` recipe
overwriting the model's precision fields. Each adjustment is recorded as a note so findings can
show where a value came from.
"""

from __future__ import annotations

import copy
import re
from typing import TYPE_CHECKING, Any

from moe_lint.bounds import bounded_repr, field_problems
from moe_lint.config import fields
from moe_lint.config.fields import UNKNOWN
from moe_lint.config.forms import NotBridgeConfig, detect_root
from moe_lint.config.load import ConfigPath, Document, format_path, parse_path
from moe_lint.config.mixed_precision import PRECISION_FIELDS, recipe_values
from moe_lint.config.overrides import FieldOracle, Override, OverrideProblem, apply_overrides
from moe_lint.config.validate import TypeProblem, validate_section
from moe_lint.config.versions import stated_below
from moe_lint.records import field, record


def _shown(value: object) -> str:
    """A value from a file or command line, echoed bounded (bounds.MAX_REPR_CHARS)."""
    return bounded_repr(value)


if TYPE_CHECKING:
    from packaging.version import Version


_INTERPOLATION = re.compile(r"^\s*\$\{[^}]*\}\s*$")


#: The precision fields a mixed_precision recipe or block sets on the model that the rules read
#: as ``model.<field>`` (the recipes themselves: moe_lint.config.mixed_precision).
@record
class Config:
    """The normalized config: what the rules and derivations see."""

    doc: Document
    #: Physical path prefix of the config root (``("ConfigContainer",)`` for wrapped files).
    root: ConfigPath
    #: "override" (partial file), "full-dump" (``_target_`` keys everywhere) or "wrapped".
    form: str
    #: Merged raw data below the root (file + overrides), before typing.
    raw: dict[str, Any]
    #: Dotted path -> effective value, for every typed field.
    values: dict[str, Any] = field(default_factory=dict)
    #: Dotted path -> where the value came from: file, override, preset, default, normalized.
    origin: dict[str, str] = field(default_factory=dict)
    #: Recipe-provided or unresolved fields whose value a static tool cannot know.
    unknown: set[str] = field(default_factory=set)
    #: Human-readable notes on adjustments (``ETP unset with EP=8 -> 1 (Bridge default)``).
    notes: dict[str, str] = field(default_factory=dict)
    type_problems: list[TypeProblem] = field(default_factory=list)
    #: Dotted paths whose value is an unresolved ``${...}`` interpolation.
    interpolations: list[str] = field(default_factory=list)
    #: Model precision fields written in the file that a mixed_precision recipe overwrote.
    precision_overwritten: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    #: Override text per dotted path, for derivations.
    override_text: dict[str, str] = field(default_factory=dict)
    #: Overrides Hydra's struct mode would reject or Bridge would skip (overrides.py).
    override_problems: list[OverrideProblem] = field(default_factory=list)
    preset: str | None = None
    #: Framework versions the user stated (package key -> version; absent = newest release).
    versions: dict[str, Version] = field(default_factory=dict)
    #: "training" or "inference" (Document.run_mode): a rule with ``modes`` runs only in those.
    mode: str = "training"

    def value(self, dotted: str) -> Any:
        """The one accessor: the value Bridge would run with, or ``UNKNOWN``.

        In order: UNKNOWN for a field a static tool cannot know (a recipe decides it, an
        unresolved ``${...}``, a rejected value, a ``~key`` deletion); the normalized value of a
        validated field; the value written in the file or an override; else what the field
        table says an unset field reads as (config/fields.py ``default``: UNKNOWN for a field a
        recipe decides, the framework default, or None where the table records no default).
        ``None`` is a value here (``virtual_pipeline_model_parallel_size: null`` means no
        virtual stages), never a marker for "unknown".
        """
        if dotted in self.unknown:
            return UNKNOWN
        if dotted in self.values:
            return self.values[dotted]
        raw = self.raw_get(dotted, UNKNOWN)
        if raw is not UNKNOWN:
            return raw
        return fields.default(dotted)

    def get(self, dotted: str, default: Any = None) -> Any:
        """Effective value of a typed field, or the raw value of any other path (``default``
        when absent). Prefer :meth:`value`, which knows defaults and UNKNOWN."""
        if dotted in self.values:
            return self.values[dotted]
        return self.raw_get(dotted, default)

    def raw_get(self, dotted: str, default: Any = None) -> Any:
        """The value as written in the file or an override (before normalization)."""
        node: Any = self.raw
        for part in dotted.split("."):
            if not isinstance(node, dict) or part not in node:
                return default
            node = node[part]
        return node

    def explicit(self, dotted: str) -> bool:
        """True when the file or an override sets ``dotted``."""
        return self.origin.get(dotted) in ("file", "override") or (
            dotted not in self.origin and self.raw_get(dotted, UNKNOWN) is not UNKNOWN
        )

    def stated(self, dotted: str) -> bool:
        """The file states ``dotted``: a full dump writes every field down, an override file
        only what it sets."""
        return self.form == "full-dump" or self.explicit(dotted)

    def value_or(self, dotted: str, otherwise: Any = None) -> Any:
        """:meth:`value`, or ``otherwise`` where there is no value to compute with (UNKNOWN or
        null): a rule's or check's stated reading of "no value", never a second default."""
        result = self.value(dotted)
        return otherwise if result is UNKNOWN or result is None else result

    def known(self, dotted: str) -> bool:
        """The field has a value: neither UNKNOWN (a recipe decides) nor null."""
        return self.value(dotted) not in (UNKNOWN, None)

    def physical(self, dotted_or_path: str | ConfigPath) -> ConfigPath:
        """Config path below the root -> path in the YAML document."""
        if isinstance(dotted_or_path, str):
            dotted_or_path = parse_path(dotted_or_path)
        return self.root + tuple(dotted_or_path)


#: Enums whose member values moe-lint knows, so the enum form's ``_args_`` (what
#: ``from_yaml`` calls the class with) wins over its ``_name_``: MCore
#: ``megatron/core/transformer/enums.py::AttnBackend``.
_ENUM_VALUES: dict[str, dict[Any, str]] = {
    "megatron.core.transformer.enums.AttnBackend": {
        1: "flash", 2: "fused", 3: "unfused", 4: "local", 5: "auto",
    },
}  # fmt: skip
_ENUM_KEYS = frozenset({"_target_", "_call_", "_args_", "_name_"})


def _untarget_one(node: dict[str, Any]) -> Any:
    """One mapping written by Bridge's ``to_yaml`` -> the value the run gets, or ``node``.

    MCore ``megatron/training/config/yaml_utils.py`` writes torch dtypes, functions and
    classes as ``{_target_: name, _call_: false}``, which ``from_yaml``
    (``instantiate_utils.py::instantiate_node``) resolves to the named object itself: moe-lint
    reads the name (``torch.float32``, ``torch.nn.functional.silu``). Enum members are written
    as ``{_target_: EnumCls, _call_: true, _args_: [value], _name_: name}`` and rebuilt as
    ``EnumCls(value)``: moe-lint reads the member name. Partials, dataclasses and HF configs
    stay mappings.
    """
    target = node.get("_target_")
    if not isinstance(target, str):
        return node
    call = node.get("_call_", True)
    if call is False and len(node) == 2:
        return target
    if call is True and node.keys() == _ENUM_KEYS and isinstance(node["_name_"], str):
        args = node["_args_"]
        known = _ENUM_VALUES.get(target)
        if known is not None and isinstance(args, list) and len(args) == 1:
            value = args[0]
            if isinstance(value, int) and not isinstance(value, bool) and value in known:
                return known[value]
        return node["_name_"]
    return node


def untarget(node: Any) -> Any:
    """``node`` with every ``to_yaml`` object form replaced (see _untarget_one).

    Returns ``node`` itself when nothing in it changes, so the document's tree is shared, not
    copied; changed mappings and lists are new objects (the document keeps its own values).
    """
    if isinstance(node, dict):
        if "_target_" in node:
            replaced = _untarget_one(node)
            if replaced is not node:
                return replaced
        out: dict[str, Any] | None = None
        for key, value in node.items():
            if not isinstance(value, dict | list):  # a scalar, as most values: nothing to do
                continue
            new = untarget(value)
            if new is not value:
                if out is None:
                    out = dict(node)
                out[key] = new
        return node if out is None else out
    if isinstance(node, list):
        items = [untarget(v) for v in node]
        if any(a is not b for a, b in zip(items, node, strict=True)):
            return items
    return node


def _strip_interpolations(section: dict[str, Any], name: str, cfg: Config) -> dict[str, Any]:
    clean = {}
    for key, value in section.items():
        if isinstance(value, str) and _INTERPOLATION.match(value):
            cfg.interpolations.append(f"{name}.{key}")
            cfg.unknown.add(f"{name}.{key}")
            continue
        clean[key] = value
    return clean


def _check_bounds(cfg: Config) -> None:
    """Typed values past moe-lint's own bounds (bounds.py): refused like a wrong type, and
    dropped, so that no derivation or rule loops over them."""
    for dotted, problem in field_problems(cfg.values):
        cfg.type_problems.append(TypeProblem(dotted, problem, cfg.values.pop(dotted)))
        cfg.unknown.add(dotted)


def normalize(
    doc: Document,
    overrides: list[Override] | None = None,
    preset: dict[str, Any] | None = None,
    preset_name: str | None = None,
    versions: dict[str, Version] | None = None,
    oracle: FieldOracle | None = None,
) -> Config:
    """Build the :class:`Config` Bridge would run from a loaded document."""
    if doc.skip is not None:
        raise NotBridgeConfig(doc.skip)
    root, form = ((), doc.form) if doc.form == "megatron-lm" else detect_root(doc.data)
    raw_root: Any = doc.data
    for part in root:
        raw_root = raw_root[part]
    raw_root = untarget(raw_root)
    # Overrides edit the tree; copy it only then (the document keeps the file's own values).
    raw = copy.deepcopy(raw_root) if overrides else raw_root
    cfg = Config(
        doc=doc,
        root=root,
        form=form,
        raw=raw,
        preset=preset_name,
        versions=dict(versions or {}),
        mode=doc.run_mode,
    )
    overrides = overrides or []
    deleted: set[str] = set()
    if overrides:
        outcome = apply_overrides(raw, overrides, oracle)
        cfg.override_problems = outcome.problems
        deleted = outcome.deleted
        for ov in outcome.applied:
            cfg.override_text[format_path(ov.path)] = ov.text
        overrides = outcome.applied
    override_paths = {format_path(ov.path) for ov in overrides if not ov.delete} - deleted
    if doc.launch is not None:
        # A Bridge launch script: what run_recipe.py does after the overrides, and the fields
        # the recipe sets in a way moe-lint cannot know (config/bridge_launch.py).
        for dotted, note, unknown in doc.launch.after_overrides(raw, override_paths):
            cfg.notes[dotted] = note
            if unknown:
                cfg.unknown.add(dotted)

    for name in fields.validated_sections():
        section = raw.get(name)
        if name == "mixed_precision" and isinstance(section, str):
            continue
        if section is None:
            section = {}
        if not isinstance(section, dict):
            if name in raw:
                cfg.type_problems.append(
                    TypeProblem(
                        name, f"section must be a mapping, got {type(section).__name__}", section
                    )
                )
            section = {}
        section = _strip_interpolations(section, name, cfg)
        typed = validate_section(name, section, cfg.type_problems, cfg.unknown)
        for key, value in typed.items():
            dotted = f"{name}.{key}"
            if dotted in cfg.unknown:
                continue
            if dotted in override_paths or any(p.startswith(dotted + ".") for p in override_paths):
                cfg.origin[dotted] = "override"
            elif key in section:
                cfg.origin[dotted] = "file"
            elif name == "model" and preset and key in preset:
                value = preset[key]
                cfg.origin[dotted] = "preset"
            elif deleted and (dotted in deleted or name in deleted):
                # `~key`: the key is gone from Hydra's dict, so Bridge's _apply_overrides leaves
                # the field at whatever the recipe set; neither the file nor the default applies.
                cfg.unknown.add(dotted)
                cfg.origin[dotted] = "recipe"
                removed_by = cfg.override_text.get(dotted) or cfg.override_text.get(name, "~")
                cfg.notes[dotted] = f"{removed_by} removes the key: the recipe's value applies"
                continue
            elif fields.is_recipe_field(name, key):
                cfg.unknown.add(dotted)
                cfg.origin[dotted] = "recipe"
                continue
            else:
                cfg.origin[dotted] = "default"
            cfg.values[dotted] = value
    if form == "megatron-lm":
        _megatron_lm_defaults(cfg, doc, override_paths)
    _check_bounds(cfg)
    if preset:
        # Untyped architecture fields (window_size, softmax_type, ...) come from the preset too.
        written = raw.get("model") if isinstance(raw.get("model"), dict) else {}
        for key, value in preset.items():
            dotted = f"model.{key}"
            if dotted not in cfg.origin and key not in written:
                cfg.values[dotted] = value
                cfg.origin[dotted] = "preset"
    _apply_framework_rules(cfg)
    return cfg


def _unknown_recipe(name: str) -> str:
    """SCH002's text for a mixed_precision name Bridge does not register: the file loads, and
    runtime_config_update's get_mixed_precision_config raises when the run starts."""
    # Lazy: only a file naming an unknown recipe needs the suggestion and the recipe table.
    import difflib

    # Lazy, as above: the recipe table is read only for this message.
    from moe_lint.config.mixed_precision import MP_RECIPES

    close = difflib.get_close_matches(name.replace("-", "_"), list(MP_RECIPES), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return (
        f"not a registered mixed-precision recipe: Bridge's get_mixed_precision_config raises "
        f'"Unknown mixed-precision recipe {_shown(name.replace("-", "_"))}" when the run '
        f"starts{hint}"
    )


def _megatron_lm_defaults(cfg: Config, doc: Document, override_paths: set[str]) -> None:
    """Megatron-LM input: no recipe decides anything, so a field no flag sets has Megatron-LM's
    own argparse default (data/mlm_flags.json), not Bridge's; what Megatron-LM's
    ``validate_args`` then derives for the fields the rules read is applied here too."""
    for dotted, default in doc.mlm_defaults.items():
        if cfg.origin.get(dotted) in ("file", "override", "preset") or dotted in override_paths:
            continue
        section, _, key = dotted.partition(".")
        if default is None and fields.is_recipe_field(section, key):
            continue  # a size Megatron-LM needs given (num_layers, hidden_size): not stated
        cfg.values[dotted] = default
        cfg.origin[dotted] = "default"
        cfg.unknown.discard(dotted)
    for dotted in doc.mlm_unknown:
        if cfg.origin.get(dotted) != "override":
            cfg.values.pop(dotted, None)
            cfg.unknown.add(dotted)
            cfg.notes[dotted] = "the script's value is not resolved (a variable it does not set)"
    # Lazy: Megatron-LM's derivations only for Megatron-LM input.
    from moe_lint.config import mlm_defaults

    mlm_defaults.apply(cfg, doc)
    v = cfg.values
    tp = v.get("model.tensor_model_parallel_size")
    # megatron/training/arguments.py::validate_args (core 0.19.2): ETP defaults to TP, and
    # sequence parallelism is switched off at TP=1.
    etp_unset = "model.expert_tensor_parallel_size" not in cfg.unknown
    if v.get("model.expert_tensor_parallel_size") is None and isinstance(tp, int) and etp_unset:
        _set(cfg, "model.expert_tensor_parallel_size", tp,
                 f"ETP unset -> TP={tp} (Megatron-LM validate_args)")  # fmt: skip
    if tp == 1 and v.get("model.sequence_parallel"):
        _set(cfg, "model.sequence_parallel", False,
             "sequence_parallel with TP=1 -> false (Megatron-LM validate_args)")  # fmt: skip


def _set(cfg: Config, dotted: str, value: Any, note: str) -> None:
    cfg.values[dotted] = value
    cfg.origin[dotted] = "normalized"
    cfg.notes[dotted] = note
    cfg.unknown.discard(dotted)


def scope_is_canonical(cfg: Config) -> bool:
    """True for Megatron-Core < 0.18, where cuda_graph_scope is the only graph-module field.

    Megatron-LM PR #4292 (first in core_v0.18.0) added cuda_graph_modules and deprecated the
    scope; before it a cuda_graph_modules key is no TransformerConfig field at all.
    """
    return stated_below(cfg.versions, "megatron-core", "0.18")


def bridge_clears_graph_modules(cfg: Config) -> bool:
    """True for a Bridge config on Bridge >= 0.6, whose ConfigContainer.validate clears the graph
    modules and scope of a model whose cuda_graph_impl is "none" before Megatron-Core's
    ``TransformerConfig.__post_init__`` migrates or checks them (``utils/cuda_graph.py::
    validate_cuda_graph_configuration``, Bridge PR #4607, first in v0.6.0; Bridge 0.4-0.5 clear
    them only after ``model.finalize()``). Megatron-LM's command line has no such step."""
    if cfg.form == "megatron-lm":
        return False
    return not stated_below(cfg.versions, "bridge", "0.6")


def _migrate_cuda_graph_scope(cfg: Config) -> None:
    """cuda_graph_scope -> cuda_graph_modules as Megatron-Core does it.

    MCore 0.19.2 ``TransformerConfig.__post_init__``: a scope that is not None replaces the
    modules when they are "full" (the default), None or [] (plain equality, so ["full"] is not
    among them); any other pair asserts "cuda_graph_scope and cuda_graph_modules cannot be set
    together", which CG007 reports, so the modules are left as written. Enum members count by
    name. Before 0.18 the scope (default "full") is the field and cuda_graph_modules is ignored.
    """
    v = cfg.values
    modules = v.get("model.cuda_graph_modules")
    scope = v.get("model.cuda_graph_scope")
    if scope_is_canonical(cfg):
        if "model.cuda_graph_scope" in cfg.unknown:
            cfg.unknown.add("model.cuda_graph_modules")
        elif scope is None and modules is None:
            v["model.cuda_graph_modules"] = "full"  # the scope's default before 0.18
        else:
            ignored = "; cuda_graph_modules is ignored" if modules is not None else ""
            _set(
                cfg,
                "model.cuda_graph_modules",
                "full" if scope is None else scope,
                f"Megatron-Core < 0.18 reads cuda_graph_scope only{ignored}",
            )
    elif "model.cuda_graph_scope" in cfg.unknown and (modules in ("full", None) or modules == []):
        cfg.unknown.add("model.cuda_graph_modules")  # an unresolved scope may replace them
    elif scope is not None and (modules in ("full", None) or modules == []):
        _set(
            cfg,
            "model.cuda_graph_modules",
            scope,
            "cuda_graph_scope (deprecated) -> cuda_graph_modules (TransformerConfig.__post_init__)",
        )


def _apply_framework_rules(cfg: Config) -> None:
    v = cfg.values
    tp = v.get("model.tensor_model_parallel_size", 1)
    ep = v.get("model.expert_model_parallel_size", 1)
    # A size whose value is not known (a recipe's, a script's unresolved $TP) decides nothing.
    if "model.tensor_model_parallel_size" in cfg.unknown:
        tp = None
    if "model.expert_model_parallel_size" in cfg.unknown:
        ep = None

    # Bridge TransformerConfig.finalize: ETP = 1 when EP > 1 and ETP unset; MCore: ETP = TP.
    etp_unset = (
        v.get("model.expert_tensor_parallel_size") is None
        and "model.expert_tensor_parallel_size" not in cfg.unknown
    )
    if etp_unset and not (isinstance(ep, int) and (ep > 1 or isinstance(tp, int))):
        v.pop("model.expert_tensor_parallel_size", None)  # from an unknown TP or EP
        cfg.unknown.add("model.expert_tensor_parallel_size")
    if (
        v.get("model.expert_tensor_parallel_size") is None
        and "model.expert_tensor_parallel_size" not in cfg.unknown
        and isinstance(ep, int)
        and (ep > 1 or isinstance(tp, int))
    ):
        if ep > 1:
            _set(
                cfg,
                "model.expert_tensor_parallel_size",
                1,
                f"ETP unset with EP={ep} -> 1 (Bridge TransformerConfig.finalize)",
            )
        else:
            _set(
                cfg,
                "model.expert_tensor_parallel_size",
                tp,
                f"ETP unset -> TP={tp} (Megatron-Core ModelParallelConfig.__post_init__)",
            )

    # Bridge finalize silently turns sequence parallelism off at TP <= 1 (and an unset flag
    # cannot matter there either).
    if not isinstance(tp, int):
        pass
    elif "model.sequence_parallel" in cfg.unknown and tp <= 1:
        _set(cfg, "model.sequence_parallel", False, "sequence_parallel unset with TP=1 -> false")
    elif v.get("model.sequence_parallel") and tp <= 1:
        _set(
            cfg,
            "model.sequence_parallel",
            False,
            "sequence_parallel=true with TP=1 -> false (Bridge TransformerConfig.finalize)",
        )

    # Deprecated CUDA-graph flags (Megatron-Core migrates them with a warning).
    impl = v.get("model.cuda_graph_impl", "none")
    if impl == "none" and bridge_clears_graph_modules(cfg):
        # Bridge clears them before Megatron-Core reads them, so neither a deprecated
        # full_iteration module/scope nor a conflicting pair survives; only the legacy
        # enable_cuda_graph / external_cuda_graph flags turn graphs on after that point.
        for dotted in ("model.cuda_graph_modules", "model.cuda_graph_scope"):
            if v.get(dotted) not in (None, [], "full", ""):
                _set(
                    cfg,
                    dotted,
                    [],
                    f"{dotted.split('.')[1]} cleared: cuda_graph_impl is none when Bridge checks "
                    "the graph settings (utils/cuda_graph.py::validate_cuda_graph_configuration)",
                )
    if v.get("model.enable_cuda_graph") and impl == "none":
        impl = "local"
        _set(cfg, "model.cuda_graph_impl", impl, "enable_cuda_graph=true -> cuda_graph_impl=local")
    if v.get("model.external_cuda_graph") and impl == "none":
        impl = "transformer_engine"
        _set(
            cfg,
            "model.cuda_graph_impl",
            impl,
            "external_cuda_graph=true -> cuda_graph_impl=transformer_engine",
        )
    _migrate_cuda_graph_scope(cfg)
    modules = v.get("model.cuda_graph_modules")
    if modules == "full_iteration" or (isinstance(modules, list) and "full_iteration" in modules):
        _set(
            cfg,
            "model.cuda_graph_impl",
            "full_iteration",
            "cuda_graph_modules=full_iteration -> cuda_graph_impl=full_iteration",
        )
        modules = []
        v["model.cuda_graph_modules"] = []
    if modules in ("full", None) or modules == ["full"]:
        v["model.cuda_graph_modules"] = []
    elif isinstance(modules, str):
        v["model.cuda_graph_modules"] = [m.strip() for m in modules.split(",") if m.strip()]

    # Deprecated moe_layer_recompute -> selective + moe.
    if v.get("model.moe_layer_recompute") and v.get("model.recompute_granularity") is None:
        _set(cfg, "model.recompute_granularity", "selective", "moe_layer_recompute -> selective")
        _set(
            cfg,
            "model.recompute_modules",
            ["moe"],
            "moe_layer_recompute -> recompute_modules=[moe]",
        )
    # Megatron-Core post-init: recompute_modules None -> ["core_attn"].
    if (
        v.get("model.recompute_granularity") == "selective"
        and v.get("model.recompute_modules") is None
    ):
        _set(
            cfg,
            "model.recompute_modules",
            ["core_attn"],
            "selective recompute with no modules -> [core_attn] (TransformerConfig.__post_init__)",
        )

    # A mixed_precision recipe name (or block) overwrites the model's precision fields.
    mp = cfg.raw.get("mixed_precision")
    resolved: dict[str, Any] | None = None
    if isinstance(mp, str):
        recipe = recipe_values(mp)
        if recipe is None:
            cfg.type_problems.append(TypeProblem("mixed_precision", _unknown_recipe(mp), mp))
            # The run stops before any of them is set: no rule may judge them.
            for key in PRECISION_FIELDS:
                cfg.values.pop(f"model.{key}", None)
                cfg.unknown.add(f"model.{key}")
        else:
            resolved = {k: recipe[k] for k in PRECISION_FIELDS}
    elif isinstance(mp, dict):
        resolved = {
            k: v.get(f"mixed_precision.{k}")
            for k in PRECISION_FIELDS
            if cfg.origin.get(f"mixed_precision.{k}") in ("file", "override")
        }
    if resolved:
        for key, value in resolved.items():
            dotted = f"model.{key}"
            old = v.get(dotted)
            if cfg.origin.get(dotted) in ("file", "override") and old != value:
                cfg.precision_overwritten[dotted] = (old, value)
            _set(
                cfg,
                dotted,
                value,
                f"set by mixed_precision ({mp if isinstance(mp, str) else 'block'})",
            )

    # Bridge mirrors the distributed-optimizer flag between ddp and optimizer.
    if v.get("ddp.use_distributed_optimizer") or v.get("optimizer.use_distributed_optimizer"):
        for dotted in ("ddp.use_distributed_optimizer", "optimizer.use_distributed_optimizer"):
            if not v.get(dotted):
                _set(cfg, dotted, True, "Bridge syncs ddp/optimizer use_distributed_optimizer")

    # comm_overlap, when present, copies its EP-overlap settings onto the model (default False).
    co = cfg.raw.get("comm_overlap")
    if isinstance(co, dict):
        for key in ("overlap_moe_expert_parallel_comm", "delay_wgrad_compute"):
            value = v.get(f"comm_overlap.{key}")
            effective = bool(value) if value is not None else False
            if v.get(f"model.{key}") != effective:
                _set(
                    cfg,
                    f"model.{key}",
                    effective,
                    f"comm_overlap.{key}={value} overwrites model.{key} (Bridge CommOverlapConfig)",
                )
