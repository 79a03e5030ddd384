"""One training layout: its full configuration from a candidate, and whether it is possible."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from fabriclens.catalog.schema import ModelSpec
from fabriclens.errors import InputError
from fabriclens.model.layout import TrainConfig
from fabriclens.plan.request import PlanRequest


def divisors(n: int) -> list[int]:
    """Every divisor of ``n``, ascending."""
    return [d for d in range(1, n + 1) if n % d == 0]


def check_tp(spec: ModelSpec, tp: int) -> None:
    """Raise InputError when ``tp`` does not divide the attention heads."""
    if spec.heads % tp:
        raise InputError(
            f"--tp {tp} does not divide the {spec.heads} attention heads of {spec.title or spec.name}",
            f"use a --tp from {[d for d in divisors(spec.heads) if d <= 64]}",
        )


def ep_ranks(tp: int, cp: int, dp: int, etp: int | None) -> int:
    """The ranks of a pipeline stage its expert-parallel groups are carved from, so a multiple
    of ep: cp x dp with the experts split over the TP ranks, all tp x cp x dp with each expert
    whole (``etp`` 1, MoE Parallel Folding: Megatron-Core's expert rank generator lays the
    stage's ranks out as etp x ep x expert-dp)."""
    return tp * cp * dp if etp == 1 else cp * dp


def interleave_fits(layers: Any, chunks: Any) -> Any:
    """True where ``layers`` split into ``chunks`` = pp x interleave chunks as Megatron-LM splits
    them: evenly, or (--account-for-embedding-in-pipeline-split and
    --account-for-loss-in-pipeline-split) with the embedding and the loss counted as a layer
    each, the first and last stages one layer short: the model's even split
    (memory.stage_layer_counts). Numbers or numpy arrays."""
    return (layers % chunks == 0) | ((layers + 2) % chunks == 0)


def interleave_possible(layers: Any, chunks: Any) -> Any:
    """True where ``layers`` can fill ``chunks`` = pp x interleave chunks at all, each holding a
    layer, the embedding or the loss: an uneven split is laid out by Megatron-Core's
    --pipeline-model-parallel-layout (Megatron-Bridge's DeepSeek-V3 recipes lay out 61 layers
    so, set_deepseek_v3_pipeline_model_parallel_layout; a layout's E and L may stand alone in a
    chunk); the model prices the busiest stage (memory.stage_layer_counts). Searches propose only
    the splits that :func:`interleave_fits`. Numbers or numpy arrays."""
    return chunks <= layers + 2


def validate_layout(spec: ModelSpec, cfg: TrainConfig) -> None:
    """Raise InputError naming the first flag that makes ``cfg`` an impossible layout."""
    check_tp(spec, cfg.tp)
    if cfg.pp > spec.layers:
        raise InputError(f"--pp {cfg.pp} exceeds the {spec.layers} layers", "use a smaller --pp")
    if cfg.gpus % (cfg.tp * cfg.pp * cfg.cp):
        raise InputError(
            f"{cfg.gpus} GPUs are not divisible by tp x pp x cp = {cfg.tp * cfg.pp * cfg.cp}",
            "change --gpus, --tp, --pp or --cp so that they divide",
        )
    if cfg.tp * cfg.pp * cfg.cp * cfg.dp != cfg.gpus:
        raise InputError(
            f"tp x pp x cp x dp = {cfg.tp * cfg.pp * cfg.cp * cfg.dp}, not the {cfg.gpus} GPUs",
            "leave --dp out to derive it, or make the product match --gpus",
        )
    if cfg.ep > 1:
        if not spec.is_moe:
            raise InputError(f"--ep {cfg.ep} needs a mixture-of-experts model", "drop --ep")
        # Megatron-Core lays the experts out over the same ranks as etp x ep x expert-dp x pp
        ranks = ep_ranks(cfg.tp, cfg.cp, cfg.dp, cfg.expert_tp)
        if spec.experts % cfg.ep or ranks % cfg.ep:
            within = "dp x cp" if cfg.expert_tp == cfg.tp else "tp x dp x cp (--etp 1)"
            raise InputError(
                f"--ep {cfg.ep} must divide the {spec.experts} experts and {within} = {ranks}",
                "choose an --ep that divides both"
                + ("" if cfg.expert_tp == 1 or cfg.tp == 1 else
                   ", or keep each expert whole with --etp 1 (ep may then span the TP ranks)"),
            )  # fmt: skip
    chunks = cfg.pp * cfg.interleave
    if cfg.interleave > 1 and (cfg.pp == 1 or not interleave_possible(spec.layers, chunks)):
        raise InputError(
            f"--interleave {cfg.interleave} needs pp > 1 and something in each of the "
            f"pp x interleave = {chunks} chunks ({spec.layers} layers, the embedding and the "
            "loss)",
            "drop --interleave or use a smaller --pp or --interleave",
        )  # fmt: skip
    if cfg.global_batch % (cfg.dp * cfg.micro_batch):
        raise InputError(
            f"global batch {cfg.global_batch} is not divisible by dp x micro-batch = "
            f"{cfg.dp * cfg.micro_batch}",
            "change --global-batch or --micro-batch",
        )
    if cfg.seq_len % cfg.cp:
        raise InputError(
            f"--seq-len {cfg.seq_len} is not divisible by --cp {cfg.cp}", "change --cp"
        )


def layout_config(req: PlanRequest, base: TrainConfig, cand: dict[str, object]) -> TrainConfig:
    """The full configuration of one candidate (global batch rounded up to fit it, unless given)."""
    gb = base.global_batch
    dp, mb = int(cand["dp"]), int(cand["micro_batch"])  # type: ignore[call-overload]
    if req.global_batch is None and gb % (dp * mb):
        gb = math.ceil(gb / (dp * mb)) * dp * mb
    sp = base.sequence_parallel if req.sequence_parallel is not None else int(cand["tp"]) > 1  # type: ignore[call-overload]
    return replace(base, global_batch=gb, sequence_parallel=sp, **cand)  # type: ignore[arg-type]
