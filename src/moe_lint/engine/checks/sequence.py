"""Python checks for the sequence rule family (rules/sequence.yaml, SEQ codes).

They must tell the dataset class of the file (SFT datasets, whose Bridge validation differs).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import TYPE_CHECKING

from moe_lint.engine.catalogue import PythonCheck
from moe_lint.engine.checks.reads import derived as _fact
from moe_lint.engine.checks.reads import to_int as _int
from moe_lint.engine.checks.reads import violation as _violation
from moe_lint.engine.evaluate import Violation
from moe_lint.engine.spans import set_value_edit

if TYPE_CHECKING:
    from moe_lint.engine.evaluate import Context
    from moe_lint.engine.findings import Edit

#: Bridge dataset classes that ConfigContainer.validate treats as fine-tuning (SFT) datasets.
_SFT_CLASSES = (
    "GPTSFTDatasetConfig",
    "FinetuningDatasetConfig",
    "DirectHFSFTDatasetConfig",
    "EnergonDatasetConfig",
    "MockVLMSFTDatasetConfig",
)
#: Classes whose seq_length Bridge checks against the CP/SP collate padding multiple always
#: (GPTSFTDatasetConfig only with in-batch packing).
_PADDED_CLASSES = ("DirectHFSFTDatasetConfig", "EnergonDatasetConfig", "MockVLMSFTDatasetConfig")
#: Keys only the SFT dataset configs have (an override file rarely names its class).
_SFT_KEYS = (
    "dataset_root", "enable_offline_packing", "offline_packing_specs", "packed_sequence_specs",
    "dataset_kwargs", "max_train_samples", "enable_in_batch_packing", "packing_buffer_size",
)  # fmt: skip
#: Keys only the pretraining GPTDatasetConfig has.
_PRETRAIN_KEYS = ("blend", "blend_per_split", "data_path", "split", "mock", "mmap_bin_files")


def _dataset_class(ctx: Context) -> str | None:
    """The Bridge dataset class of the file: from ``_target_``, else from SFT-only keys."""
    raw = ctx.config.raw.get("dataset")
    if not isinstance(raw, dict):
        return None
    target = raw.get("_target_")
    if isinstance(target, str):
        return target.rsplit(".", 1)[-1]
    if any(k in raw for k in _PRETRAIN_KEYS):
        return None
    if "packing_buffer_size" in raw:
        return "EnergonDatasetConfig"
    if any(k in raw for k in _SFT_KEYS):
        return "GPTSFTDatasetConfig"
    return None


def sft_cp_loss(ctx: Context) -> Iterator[Violation]:
    """Fine-tuning with CP > 1 needs per-token loss and no averaging in the collective."""
    cls = _dataset_class(ctx)
    cp = _int(_fact(ctx, "cp"))
    if cls not in _SFT_CLASSES or cp is None or cp <= 1:
        return
    cfg = ctx.config
    per_token = bool(cfg.get("model.calculate_per_token_loss"))
    averaged = bool(cfg.get("ddp.average_in_collective"))
    edits: list[Edit] = []
    wrong = []
    if not per_token:
        wrong.append("model.calculate_per_token_loss is false")
    if averaged:
        wrong.append("ddp.average_in_collective is true")
    if not wrong:
        return
    for dotted, value, bad in (
        ("model.calculate_per_token_loss", True, not per_token),
        ("ddp.average_in_collective", False, averaged),
    ):
        if bad:
            edit = set_value_edit(cfg.doc, cfg.physical(dotted), value)
            if edit is None:
                edits = []
                break
            edits.append(edit)
    yield Violation(
        path="model.calculate_per_token_loss" if not per_token else "ddp.average_in_collective",
        params={"dataset": cls, "cp": cp, "wrong": " and ".join(wrong)},
        edits=edits if len(edits) == len(wrong) else [],
    )


def sft_seq_padding_multiple(ctx: Context) -> Iterator[Violation]:
    """Bridge SFT collate pads to lcm(2·CP, CP·TP with SP) for train and eval CP."""
    cls = _dataset_class(ctx)
    cfg = ctx.config
    in_batch = bool(cfg.get("dataset.enable_in_batch_packing"))
    if not (
        cls in _PADDED_CLASSES
        or (cls in ("GPTSFTDatasetConfig", "FinetuningDatasetConfig") and in_batch)
    ):
        return
    seq = _int(_fact(ctx, "dataset_seq")) or _int(_fact(ctx, "seq"))
    cp, tp = _int(_fact(ctx, "cp")), _int(_fact(ctx, "tp"))
    if seq is None or cp is None or tp is None:
        return
    sp = bool(cfg.get("model.sequence_parallel")) and tp > 1
    eval_cp = _int(cfg.get("dist.eval_context_parallel_size"))
    sizes = sorted({cp} | ({eval_cp} if eval_cp else set()))
    parts = [2 * s if s > 1 else 1 for s in sizes] + [s * tp if sp else 1 for s in sizes]
    multiple = math.lcm(*parts)
    if seq % multiple == 0:
        return
    shown = " and eval CP " + str(eval_cp) if eval_cp else ""
    terms = ", ".join(str(p) for p in parts if p > 1) or "1"
    yield _violation(
        "dataset.seq_length" if cfg.explicit("dataset.seq_length") else "model.seq_length",
        dataset=cls,
        seq=seq,
        multiple=multiple,
        terms=terms,
        cps=f"CP {cp}{shown}",
        lower=max(multiple, seq // multiple * multiple),
        upper=(seq // multiple + 1) * multiple,
    )


CHECKS: dict[str, PythonCheck] = {
    "sft-cp-loss": PythonCheck(sft_cp_loss, frozenset({"dataset", "cp", "wrong"})),
    "sft-seq-padding-multiple": PythonCheck(
        sft_seq_padding_multiple,
        frozenset({"dataset", "seq", "multiple", "terms", "cps", "lower", "upper"}),
    ),
}
