"""Stage 3: quantities Megatron computes at startup, each with the arithmetic behind it.

Dense layers run on TP·CP·DP·PP ranks; experts fold onto the same ranks as ETP·EP·EDP·PP
("MoE parallel folding", docs/domain/02 §1), so the world must divide by both TP·CP·PP and ETP·EP·PP
and the smallest feasible world is PP·lcm(TP·CP, ETP·EP). A quantity that cannot be computed
(an unset field, a world that does not divide) is recorded with its reason instead of a value;
rules that read it are skipped, so one root cause gives one finding. Every fact computed here is
declared, with its meaning, in ``analysis/facts.py`` (the vocabulary rules may use).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from moe_lint.analysis.placement import place
from moe_lint.config.normalize import Config
from moe_lint.config.versions import NEWEST_RELEASED
from moe_lint.errors import NotDerivable
from moe_lint.records import NamedTuple, field, record

if TYPE_CHECKING:
    from packaging.version import Version


class Fact(NamedTuple):
    """A derived value and the one-line derivation that produced it."""

    value: Any
    derivation: str


@record
class Cluster:
    """Cluster settings resolved from CLI, file directive and pyproject."""

    gpus: int | None = None
    gpus_per_node: int | None = None
    gpu: str | None = None
    gpu_spec: dict[str, Any] | None = None
    #: Framework versions (package key -> PEP 440 version); absent = the newest release.
    versions: dict[str, Version] = field(default_factory=dict)
    #: Where ``gpus`` came from when not a cluster setting (a launch command's flags).
    world_source: str | None = None


@record
class Facts:
    """All derived quantities for one config; missing ones carry the reason."""

    values: dict[str, Fact] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)
    #: Expensive facts (the memory model) computed on first use: name -> loader, which is
    #: given these facts (a loader holding them itself would make a reference cycle, and keep
    #: the file's config, YAML nodes and all until the cyclic collector found them).
    lazy: dict[str, Callable[[Facts], None]] = field(default_factory=dict)

    def put(self, name: str, value: Any, derivation: str) -> None:
        self.values[name] = Fact(value, derivation)

    def miss(self, name: str, reason: str) -> None:
        self.missing[name] = reason

    def resolve(self, name: str) -> None:
        """Run the loader behind ``name`` once, if it is lazy and not loaded yet."""
        loader = self.lazy.get(name)
        if loader is None:
            return
        for key in [k for k, v in self.lazy.items() if v is loader]:
            del self.lazy[key]
        loader(self)

    def require(self, name: str) -> Any:
        """The fact's value (loading it if lazy), or NotDerivable with the reason it is missing:
        a rule that needs it does not apply to this file."""
        self.resolve(name)
        fact = self.values.get(name)
        if fact is None:
            raise NotDerivable(name, self.missing.get(name, "not available"))
        return fact.value


def pow2_round(x: float) -> int:
    """Nearest power of two to ``x`` in log space (at least 1)."""
    if x <= 1:
        return 1
    return int(2 ** round(math.log2(x)))


def is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _whole(x: float) -> int | float:
    return int(x) if x == int(x) else x


def _fmt(n: Any) -> str:
    return f"{n:,}" if isinstance(n, int) and abs(n) >= 10_000 else str(n)


def derive(cfg: Config, cluster: Cluster) -> Facts:
    """Compute DP, EDP, minimum world, microbatches, tokens per shard and friends."""
    f = Facts()
    v = cfg.values

    def known(dotted: str) -> bool:
        return dotted in v and dotted not in cfg.unknown

    size_names = {
        "tp": "model.tensor_model_parallel_size",
        "pp": "model.pipeline_model_parallel_size",
        "cp": "model.context_parallel_size",
        "ep": "model.expert_model_parallel_size",
        "etp": "model.expert_tensor_parallel_size",
    }
    sizes: dict[str, int] = {}
    for short, dotted in size_names.items():
        if known(dotted):
            sizes[short] = int(v[dotted])
            note = cfg.notes.get(dotted) or (
                f"{short.upper()}={v[dotted]} ({cfg.origin.get(dotted, 'default')})"
            )
            f.put(short, sizes[short], note)
        else:
            f.miss(short, f"{dotted} is not set to a usable value")
    vpp = v.get("model.virtual_pipeline_model_parallel_size")
    f.put("vpp", vpp, f"VPP={vpp}")
    if known("model.sequence_parallel"):
        sp = bool(v["model.sequence_parallel"])
        f.put("sp", sp, cfg.notes.get("model.sequence_parallel", f"sequence_parallel={sp}"))
    else:
        # Recipes that use TP on MoE models turn sequence parallelism on; token counts assume it.
        sp = sizes.get("tp", 1) > 1
        f.miss("sp", "model.sequence_parallel is not set (the recipe decides)")

    if len(sizes) == len(size_names):
        tp, pp, cp, ep, etp = (sizes[k] for k in ("tp", "pp", "cp", "ep", "etp"))
        dense = tp * cp
        expert = etp * ep
        f.put("dense_mesh", dense, f"dense TP·CP = {tp}·{cp} = {dense}")
        f.put("expert_mesh", expert, f"expert ETP·EP = {etp}·{ep} = {expert}")
        lcm = math.lcm(dense, expert)
        min_world = pp * lcm
        f.put(
            "min_world",
            min_world,
            f"min GPUs = PP·lcm(TP·CP, ETP·EP) = {pp}·lcm({dense}, {expert}) = {_fmt(min_world)}",
        )
        if cluster.gpus is not None:
            world = cluster.gpus
            source = cluster.world_source or "cluster setting"
            f.put("world", world, f"world = {_fmt(world)} GPUs ({source})")
            f.put("world_assumed", False, "world size given")
        else:
            world = min_world
            f.put(
                "world",
                world,
                f"world unknown -> assumed minimum feasible {_fmt(world)} = PP·lcm(TP·CP, ETP·EP)",
            )
            f.put("world_assumed", True, "no --gpus: assumed the minimum feasible world size")
        if world % (tp * pp * cp) == 0:
            dp = world // (tp * pp * cp)
            f.put("dp", dp, f"DP = {_fmt(world)} / (TP{tp}·PP{pp}·CP{cp}) = {dp}")
        else:
            f.miss("dp", f"world {world} is not divisible by TP·PP·CP = {tp * pp * cp}")
        if world % (etp * ep * pp) == 0:
            edp = world // (etp * ep * pp)
            f.put("edp", edp, f"EDP = {_fmt(world)} / (ETP{etp}·EP{ep}·PP{pp}) = {edp}")
        else:
            f.miss("edp", f"world {world} is not divisible by ETP·EP·PP = {etp * ep * pp}")
    else:
        for name in ("dense_mesh", "expert_mesh", "min_world", "world", "dp", "edp"):
            f.miss(name, "a parallel size is not usable")

    # Sequence length: model.seq_length wins (Bridge requires both to match).
    for name, dotted in (("seq", "model.seq_length"), ("dataset_seq", "dataset.seq_length")):
        if known(dotted) and v[dotted] is not None:
            f.put(name, int(v[dotted]), f"{dotted} = {_fmt(v[dotted])}")
    if "seq" not in f.values and "dataset_seq" in f.values:
        f.put("seq", f.values["dataset_seq"].value, f.values["dataset_seq"].derivation)
    if "seq" not in f.values:
        f.miss("seq", "model.seq_length is not set (the recipe decides)")
    if "dataset_seq" not in f.values:
        f.miss("dataset_seq", "dataset.seq_length is not set")

    for name, dotted in (("gbs", "train.global_batch_size"), ("mbs", "train.micro_batch_size")):
        if known(dotted) and v[dotted] is not None:
            f.put(name, int(v[dotted]), f"{name.upper()} = {_fmt(v[dotted])}")
        else:
            f.miss(name, f"{dotted} is not set (the recipe decides)")

    if _mlm_gbs_unset(cfg, f):
        mbs, dp = f.values["mbs"].value, f.values["dp"].value
        f.put("gbs", mbs * dp, f"GBS unset -> MBS·DP = {mbs}·{dp} = {mbs * dp} (Megatron-LM "
              "megatron/training/arguments.py::validate_args)")  # fmt: skip
    if all(k in f.values for k in ("gbs", "mbs", "dp")):
        gbs, mbs, dp = f.values["gbs"].value, f.values["mbs"].value, f.values["dp"].value
        if gbs % (mbs * dp) == 0 and gbs >= mbs * dp:
            m = gbs // (mbs * dp)
            f.put("microbatches", m, f"microbatches = GBS / (MBS·DP) = {gbs} / ({mbs}·{dp}) = {m}")
        else:
            f.miss("microbatches", "GBS is not a positive multiple of MBS·DP")
    else:
        f.miss("microbatches", "needs GBS, MBS and DP")

    if "seq" in f.values and "cp" in f.values:
        seq, cp = f.values["seq"].value, f.values["cp"].value
        target = pow2_round(seq / 4096)
        f.put(
            "cp_target",
            target,
            f"CP target = pow2(seq / 4096) = pow2({_fmt(seq)} / 4096) = {target}",
        )
        if "tp" in f.values:
            tp = f.values["tp"].value
            mbs = f.values["mbs"].value if "mbs" in f.values else 1
            shards = tp * cp if sp else cp
            per = seq * mbs / shards
            label = "TP·CP" if sp else "CP (no SP)"
            f.put(
                "tokens_per_tp_cp_rank",
                per,
                f"tokens per {label} rank = seq·MBS / {shards} = {_fmt(seq)}·{mbs} / {shards} = "
                f"{_fmt(int(per)) if per == int(per) else per}",
            )
    else:
        for name in ("cp_target", "tokens_per_tp_cp_rank"):
            f.miss(name, "needs the sequence length and CP")

    experts = v.get("model.num_moe_experts") if known("model.num_moe_experts") else None
    if known("model.num_moe_experts"):
        f.put("is_moe", bool(experts), f"num_moe_experts = {experts}")
    elif sizes.get("ep", 1) > 1:
        f.put("is_moe", True, f"EP = {sizes['ep']} > 1 implies an MoE model")
    else:
        f.miss("is_moe", "model.num_moe_experts is not set (the recipe decides)")

    f.put("full_dump", cfg.form == "full-dump", f"file form: {cfg.form}")
    f.put("megatron_lm", cfg.form == "megatron-lm", f"file form: {cfg.form}")
    _derive_cluster(f, cluster)
    _derive_tokens(f, sizes)
    _derive_pipeline(f, cfg)
    te = cluster.versions.get("transformer-engine")
    if te is None:
        newest = NEWEST_RELEASED["transformer-engine"]
        f.put("te_version", None, f"transformer-engine not given: newest release {newest} assumed")
    else:
        f.put("te_version", str(te), f"transformer-engine {te}")
    return f


def _mlm_gbs_unset(cfg: Config, f: Facts) -> bool:
    """A Megatron-LM run without --global-batch-size: validate_args makes it MBS·DP (a batch
    schedule, --step-batch-size-schedule or --rampup-batch-size, decides the batch instead)."""
    if "gbs" in f.values or "mbs" not in f.values or "dp" not in f.values:
        return False
    # Lazy: Megatron-LM's derivations only for Megatron-LM input.
    from moe_lint.config.mlm_defaults import left_unset

    return left_unset(cfg, "train.global_batch_size") and all(
        left_unset(cfg, f"train.{name}")
        for name in ("step_batch_size_schedule", "rampup_batch_size")
    )


def _derive_cluster(f: Facts, cluster: Cluster) -> None:
    """GPU facts from the catalogue (data/gpus.yaml), flattened for rule expressions."""
    spec = cluster.gpu_spec
    per_node = cluster.gpus_per_node
    if spec is None:
        for name in (
            "gpu_name",
            "gpu_hbm_gib",
            "nvlink_domain",
            "gpu_cc",
            "gpu_fp8",
            "gpu_fp8_blockwise",
            "gpu_mxfp8",
            "gpu_nvfp4",
        ):
            f.miss(name, "no --gpu given")
    else:
        name = str(cluster.gpu)
        f.put("gpu_name", name, f"GPU = {name}")
        memory = spec.get("memory") or {}
        mib = memory.get("cuda_total_mib") or memory.get("nvidia_smi_total_mib")
        if mib:
            f.put("gpu_hbm_gib", mib / 1024, f"{name}: {mib} MiB = {mib / 1024:.1f} GiB")
        nvlink = spec.get("nvlink") or {}
        domain = nvlink.get("domain_size")
        if domain:
            f.put("nvlink_domain", int(domain), f"{name}: NVLink domain of {domain} GPUs")
        if spec.get("compute_capability"):
            cc = float(spec["compute_capability"])
            f.put("gpu_cc", cc, f"{name}: compute capability {spec['compute_capability']}")
        else:
            f.miss("gpu_cc", f"{name}: compute capability not in the GPU catalogue")
        support = spec.get("precision_support") or {}
        fp8 = any(support.get(k) for k in ("fp8_tensorwise", "fp8_delayed", "fp8_blockwise"))
        f.put("gpu_fp8", fp8, f"{name}: FP8 {'supported' if fp8 else 'not supported'}")
        for key, fact in (
            ("fp8_blockwise", "gpu_fp8_blockwise"),
            ("mxfp8", "gpu_mxfp8"),
            ("nvfp4", "gpu_nvfp4"),
        ):
            ok = bool(support.get(key))
            f.put(fact, ok, f"{name}: {key} {'supported' if ok else 'not supported'}")
        if per_node is None:
            per_node = int(nvlink.get("gpus_per_node") or 8)
    if per_node is not None:
        f.put("gpus_per_node", per_node, f"GPUs per node = {per_node}")
    else:
        f.miss("gpus_per_node", "no --gpu or --gpus-per-node given")


def _derive_tokens(f: Facts, sizes: dict[str, int]) -> None:
    """Tokens each rank holds in TP/SP regions and in the MoE dispatcher."""
    if "etp" in sizes and "ep" in sizes:
        group = sizes["etp"] * sizes["ep"]
        f.put(
            "dispatch_group",
            group,
            f"dispatch group ETP·EP = {sizes['etp']}·{sizes['ep']} = {group}",
        )
    if all(k in f.values for k in ("seq", "mbs")) and "tp" in sizes and "cp" in sizes:
        seq, mbs = f.values["seq"].value, f.values["mbs"].value
        tp, cp = sizes["tp"], sizes["cp"]
        n = seq * mbs / (tp * cp)
        f.put(
            "tokens_per_rank",
            n,
            f"tokens per rank = seq·MBS / (TP·CP) = {_fmt(seq)}·{mbs} / ({tp}·{cp}) = "
            f"{_fmt(_whole(n))}",
        )
    else:
        f.miss("tokens_per_rank", "needs seq, MBS, TP and CP")


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _derive_pipeline(f: Facts, cfg: Config) -> None:
    """The pipeline placement (analysis/placement.py) and the facts rules read from it."""
    v = cfg.values

    def count(dotted: str) -> int | None:
        return None if dotted in cfg.unknown else _int(v.get(dotted))

    num_layers = count("model.num_layers")
    pp = _int(v.get("model.pipeline_model_parallel_size", 1))
    if pp is None or pp < 1:
        for name in ("placement", "layout_stages"):
            f.miss(name, "model.pipeline_model_parallel_size is not usable")
        f.put("layout_error", None, "PP is not usable")
        return
    raw_layout = v.get("model.pipeline_model_parallel_layout")
    if "model.pipeline_model_parallel_layout" in cfg.unknown:
        raw_layout = None
    placed = place(
        num_layers=num_layers,
        mtp=count("model.mtp_num_layers") or 0,
        pp=pp,
        vpp=_int(v.get("model.virtual_pipeline_model_parallel_size")),
        first=_int(cfg.get("model.num_layers_in_first_pipeline_stage")),
        last=_int(cfg.get("model.num_layers_in_last_pipeline_stage")),
        emb=bool(v.get("model.account_for_embedding_in_pipeline_split")),
        loss=bool(v.get("model.account_for_loss_in_pipeline_split")),
        layout=raw_layout,
    )
    per_rank = placed.rank_layers()
    f.put("placement", placed, f"{placed.method} split: transformer layers per PP rank {per_rank}")
    info = placed.layout
    if info is None:
        f.put("layout_error", None, "no pipeline_model_parallel_layout")
        f.miss("layout_stages", "no pipeline_model_parallel_layout")
    elif info.stages is None:
        f.put("layout_error", info.error, f"layout {raw_layout!r}: {info.error}")
        f.miss("layout_stages", str(info.error))
    else:
        stages = info.stages
        f.put("layout_error", None, f"layout {raw_layout!r} parses")
        f.put("layout_stages", len(stages), f"layout {raw_layout!r}: {len(stages)} virtual stages")
