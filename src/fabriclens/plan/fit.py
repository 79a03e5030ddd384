"""Does it fit, and on how few GPUs? Memory-only searches (no step-time evaluation)."""

from __future__ import annotations

from dataclasses import replace

from fabriclens.catalog.schema import Gpu, ModelSpec
from fabriclens.model.arch import ParamCounts
from fabriclens.model.layout import TrainConfig
from fabriclens.model.memory import inference_memory, training_memory

MAX_GPUS = 16384


def min_gpus_training(
    spec: ModelSpec, counts: ParamCounts, gpu: Gpu, base: TrainConfig, gpus_per_node: int
) -> int | None:
    """Fewest GPUs (powers of two) on which some layout fits, using the memory-saving extremes
    (ZeRO-3, full recompute, micro-batch 1) the user did not pin; None if none up to MAX_GPUS."""
    # lower bound: the model states alone, spread perfectly over n GPUs, must fit
    if base.trains_base:
        floor_bytes = 16.0 * counts.total
    else:
        floor_bytes = counts.total * (0.5 if base.lora_base_bits == 4 else 2.0)
    n = 1
    while n <= MAX_GPUS:
        if floor_bytes / n > gpu.memory_bytes:
            n *= 2
            continue
        gpn = min(n, gpus_per_node)
        for tp in (t for t in (1, 2, 4, 8) if t <= gpn and spec.heads % t == 0):
            pp = 1
            while tp * pp <= n and pp <= spec.layers:
                dp = n // (tp * pp)
                if dp * tp * pp == n:
                    cfg = replace(
                        base,
                        gpus=n,
                        gpus_per_node=gpn,
                        tp=tp,
                        pp=pp,
                        dp=dp,
                        cp=1,
                        ep=1,
                        zero=3 if dp > 1 else 0,
                        recompute="full",
                        micro_batch=1,
                        global_batch=dp,
                        interleave=1,
                        sequence_parallel=tp > 1,
                    )
                    if training_memory(spec, counts, cfg, gpu.memory_bytes).fits:
                        return n
                pp *= 2
        n *= 2
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
) -> int | None:
    """Fewest GPUs (tensor parallel, then pipeline) that hold the weights and this batch's KV."""
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
            )
            if mem.fits:
                return n
    return None
