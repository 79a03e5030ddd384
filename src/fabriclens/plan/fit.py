"""Does it fit, and on how few GPUs? Memory-only searches (no step-time evaluation)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import replace

from fabriclens.catalog.schema import Gpu, ModelSpec
from fabriclens.errors import InputError
from fabriclens.model.arch import ParamCounts
from fabriclens.model.layout import TrainConfig
from fabriclens.model.memory import inference_memory, training_memory
from fabriclens.plan.layouts import divisors, ep_ranks, layout_config, validate_layout
from fabriclens.plan.request import PlanRequest

MAX_GPUS = 16384


def _fit_candidates(
    spec: ModelSpec, req: PlanRequest, base: TrainConfig
) -> Iterator[dict[str, object]]:
    """Every layout family `plan` accepts on ``base.gpus`` GPUs (any TP that divides the heads,
    across nodes too; any PP, CP and EP that divide), with the user's pins kept and the other
    knobs at their least-memory settings: micro-batch 1, no interleaving (both only add
    memory), every ZeRO stage and recompute (neither is always the smallest: ZeRO-3's gathered
    layer and full recompute's one recomputed layer can outweigh what they save)."""
    n = base.gpus
    heads = [req.tp] if req.tp else [t for t in divisors(spec.heads) if n % t == 0]
    for tp in sorted(heads, reverse=True):
        cps = [req.cp] if req.cp else [c for c in divisors(n // tp) if base.seq_len % c == 0]
        for cp in cps:
            if n % (tp * cp):
                continue
            pps = [req.pp] if req.pp else [p for p in divisors(n // (tp * cp)) if p <= spec.layers]
            for pp in sorted(pps, reverse=True):
                if n % (tp * pp * cp):
                    continue
                dp = n // (tp * pp * cp)
                if req.dp and req.dp != dp:
                    continue
                if req.ep:
                    eps = [req.ep]
                elif spec.is_moe:
                    eps = [
                        e for e in divisors(spec.experts) if ep_ranks(tp, cp, dp, req.etp) % e == 0
                    ]
                else:
                    eps = [1]
                zeros = [req.zero] if req.zero is not None else [3, 2, 1, 0] if dp * cp > 1 else [0]
                recs = [req.recompute] if req.recompute else ["full", "selective", "none"]
                for ep, zero, rec in itertools.product(sorted(eps, reverse=True), zeros, recs):
                    yield {"tp": tp, "pp": pp, "cp": cp, "dp": dp, "ep": ep, "zero": zero,
                           "recompute": rec, "micro_batch": req.micro_batch or 1,
                           "interleave": req.interleave or 1}  # fmt: skip


def first_fit(
    spec: ModelSpec, counts: ParamCounts, gpu: Gpu, base: TrainConfig, req: PlanRequest
) -> TrainConfig | None:
    """A layout of ``base.gpus`` GPUs that `plan` accepts (keeping the request's pins) and that
    fits in memory, or None when no such layout fits. Memory only: no step time."""
    if _floor_bytes(counts, base) / base.gpus > gpu.memory_bytes:
        return None
    for cand in _fit_candidates(spec, req, base):
        cfg = layout_config(req, base, cand)
        try:
            validate_layout(spec, cfg)
        except InputError:
            continue
        if training_memory(spec, counts, cfg, gpu.memory_bytes).fits:
            return cfg
    return None


def _floor_bytes(counts: ParamCounts, base: TrainConfig) -> float:
    """Model states alone, spread perfectly over the GPUs: no layout holds less."""
    if base.trains_base:
        return 16.0 * counts.total
    return counts.total * (0.5 if base.lora_base_bits == 4 else 2.0)


def gpu_counts(gpus_per_node: int) -> Iterator[int]:
    """GPU counts a job can use: part of one node, or whole nodes."""
    yield from range(1, gpus_per_node + 1)
    yield from range(2 * gpus_per_node, MAX_GPUS + 1, gpus_per_node)


def min_gpus_training(
    spec: ModelSpec,
    counts: ParamCounts,
    gpu: Gpu,
    base: TrainConfig,
    gpus_per_node: int,
    req: PlanRequest | None = None,
) -> int | None:
    """Fewest GPUs (up to MAX_GPUS, whole nodes of ``gpus_per_node`` beyond one) on which some
    layout `plan` accepts fits, keeping the pins of ``req``; None if none fits. The same search
    as :func:`first_fit`, so a plan on this many GPUs fits."""
    req = req or PlanRequest(model=spec, gpu=gpu.name, gpus=base.gpus)
    floor = _floor_bytes(counts, base)
    for n in gpu_counts(gpus_per_node):
        if floor / n > gpu.memory_bytes:
            continue
        sized = replace(base, gpus=n, gpus_per_node=min(n, gpus_per_node))
        if first_fit(spec, counts, gpu, sized, req) is not None:
            return n
    return None


def min_gpus_inference(
    spec: ModelSpec,
    counts: ParamCounts,
    gpu: Gpu,
    *,
    batch: int,
    context_tokens: int,
    precision: str,
    kv_bytes_per_value: float,
    state_bytes_per_value: float = 4.0,
) -> int | None:
    """Fewest GPUs (tensor parallel, then pipeline) that hold the weights and this batch's KV
    (and a hybrid's recurrent state, at the engine's precision for it)."""
    tps = [t for t in (1, 2, 4, 8) if spec.heads % t == 0]
    for n in (1, 2, 4, 8, 16, 32, 64, 128):
        for tp in reversed(tps):
            if n % tp:
                continue
            pp = n // tp
            if pp > spec.layers:
                continue
            mem = inference_memory(
                spec,
                counts,
                tp=tp,
                pp=pp,
                batch=batch,
                context_tokens=context_tokens,
                prefill_chunk_tokens=min(batch * context_tokens, 8192),
                weight_precision=precision,
                kv_bytes_per_value=kv_bytes_per_value,
                capacity_bytes=gpu.memory_bytes,
                state_bytes_per_value=state_bytes_per_value,
            )
            if mem.fits:
                return n
    return None
