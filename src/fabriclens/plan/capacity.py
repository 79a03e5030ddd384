"""Team inference capacity: how many GPUs for N users at a per-token latency target.

Per replica (tp x pp GPUs) the KV cache left after the weights caps the batch; the decode step
time (planner: weights + KV read per step, compute for big batches, engine overhead, tensor-
parallel all-reduces over the given links) sets each user's token rate. The largest batch whose
step time meets the TPOT target is the replica's concurrency; replicas = ceil(users / batch).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fabriclens.catalog import find_engine, find_gpu
from fabriclens.catalog.schema import ModelSpec
from fabriclens.errors import InputError
from fabriclens.model.arch import count_params
from fabriclens.model.inference import InferenceEstimate, estimate_inference
from fabriclens.model.layout import WEIGHT_BYTES
from fabriclens.model.memory import inference_memory
from fabriclens.plan.fit import min_gpus_inference
from fabriclens.plan.planner import resolve_fabric
from fabriclens.plan.transfer import plan_transfer
from fabriclens.units import format_decimal_bytes, format_rate, format_time

SSE_BYTES_PER_TOKEN = 150  # an OpenAI-style `data: {...}` chunk per token (estimate)
MAX_BATCH = 4096


@dataclass(frozen=True, slots=True)
class CapacityPlan:
    """The answer to "how many GPUs for this many users"."""

    users: int
    prompt_tokens: int
    output_tokens: int
    tpot_slo_s: float
    ttft_slo_s: float | None
    tp: int
    pp: int
    gpus_per_replica: int
    max_batch_kv: int
    batch: int
    estimate: InferenceEstimate
    ttft_s: float
    replicas: int
    required_tokens_per_s: float
    slo_met: bool
    egress_bits_per_s: float
    weights_bytes: float
    weights_load_s: float | None
    network: str
    advice: tuple[str, ...]
    assumptions: tuple[str, ...]

    @property
    def gpus(self) -> int:
        """GPUs for all replicas."""
        return self.replicas * self.gpus_per_replica

    @property
    def provided_tokens_per_s(self) -> float:
        """Output tokens per second all replicas deliver at the chosen batch."""
        return self.replicas * self.estimate.batch_tokens_per_s


def plan_capacity(
    spec: ModelSpec,
    gpu_name: str,
    *,
    users: int,
    output_tokens: int,
    prompt_tokens: int = 1024,
    tpot_slo_s: float = 0.05,
    ttft_slo_s: float | None = None,
    tp: int | None = None,
    pp: int = 1,
    gpus_per_node: int | None = None,
    network: str | None = None,
    nics_per_node: int | None = None,
    engine: str = "vllm",
    precision: str = "bf16",
    kv_precision: str | None = None,
) -> CapacityPlan:
    """Size an inference deployment for ``users`` concurrent streams."""
    for name, value in (
        ("users", users),
        ("output-tokens", output_tokens),
        ("prompt-tokens", prompt_tokens),
        ("pp", pp),
    ):
        if value < 1:
            raise InputError(
                f"--{name} must be at least 1 (got {value})", f"give a positive --{name}"
            )
    if tpot_slo_s <= 0:
        raise InputError("the TPOT target must be positive", "give --latency-slo tpot=50ms")
    if precision not in WEIGHT_BYTES:
        raise InputError(f"precision {precision!r} is not supported", "use bf16, fp8, int8 or int4")
    gpu = find_gpu(gpu_name)
    eng = find_engine(engine)
    counts = count_params(spec)
    kv_prec = kv_precision or ("fp8" if precision == "fp8" else "bf16")
    context = prompt_tokens + output_tokens
    notes: list[str] = []
    if tp is None:
        need = min_gpus_inference(spec, counts, gpu, batch=1, context_tokens=context, precision=precision,
                                  kv_bytes_per_value=WEIGHT_BYTES[kv_prec])  # fmt: skip
        if need is None:
            raise InputError(
                f"{spec.name} does not fit on up to 128 {gpu.name} GPUs", "use a lower --precision"
            )
        tp = min(need, 8)
        pp = max(pp, need // tp)
        notes.append(
            f"replica: tp {tp} x pp {pp}, the fewest GPUs that hold the weights and one request"
        )
    if tp < 1:
        raise InputError(f"--tp {tp} must be at least 1", "give a positive --tp")
    if spec.heads % tp:
        raise InputError(
            f"--tp {tp} does not divide the {spec.heads} attention heads", "choose another --tp"
        )
    n_replica = tp * pp
    fabric, fabric_notes = resolve_fabric(gpu, n_replica, gpus_per_node=gpus_per_node,
                                          network_name=network, nics_per_node=nics_per_node)  # fmt: skip
    notes += fabric_notes

    def fits(batch: int) -> bool:
        return inference_memory(
            spec, counts, tp=tp, pp=pp, batch=batch, context_tokens=context,
            prefill_chunk_tokens=min(batch * prompt_tokens, 8192), weight_precision=precision,
            kv_bytes_per_value=WEIGHT_BYTES[kv_prec], capacity_bytes=gpu.memory_bytes,
        ).fits  # fmt: skip

    if not fits(1):
        raise InputError(
            f"one request does not fit on tp {tp} x pp {pp} {gpu.name}",
            "raise --tp, lower --precision, or shorten the prompt/output",
        )
    lo, hi = 1, MAX_BATCH
    while lo < hi:  # largest batch whose KV cache fits
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
    max_batch = lo

    def run(batch: int) -> InferenceEstimate:
        return estimate_inference(
            spec, counts, gpu, fabric, eng, tp=tp, pp=pp, batch=batch, prompt_tokens=prompt_tokens,
            output_tokens=output_tokens, precision=precision, kv_precision=kv_prec,
        )  # fmt: skip

    single = run(1)

    def ttft(e: InferenceEstimate) -> float:
        # one prompt's prefill, after waiting for the running decode step to finish
        return single.prefill_s + e.decode_step_s

    def meets(e: InferenceEstimate) -> bool:
        return e.decode_step_s <= tpot_slo_s and (ttft_slo_s is None or ttft(e) <= ttft_slo_s)

    candidates = sorted(
        {min(2**k, max_batch) for k in range(13)} | {max_batch, min(users, max_batch)}
    )
    best_batch, best = 1, single
    slo_met = meets(best)
    for batch in candidates:
        est = run(batch)
        if meets(est) and batch >= best_batch:
            best_batch, best, slo_met = batch, est, True
    concurrency = min(best_batch, users)
    replicas = math.ceil(users / concurrency)
    if best_batch > users:
        best_batch = users
        best = run(users)
    egress = users * best.decode_tokens_per_s * SSE_BYTES_PER_TOKEN * 8
    weights_bytes = counts.total * WEIGHT_BYTES[precision]
    load_s = None
    if network:
        load_s = plan_transfer(weights_bytes, network, hosts=1).time_one_s
    advice = [
        f"{replicas} replica(s) behind an HTTP load balancer that routes by least outstanding requests; "
        "keep a user's conversation on one replica when prefix caching matters",
        f"egress for streamed tokens is about {format_rate(egress, 2)}: the serving network is not the limit"
        if egress < 1e9
        else f"egress for streamed tokens is {format_rate(egress, 2)}: size the front-end links for it",
    ]
    if not slo_met and best.decode_step_s > tpot_slo_s:
        advice.insert(
            0,
            f"even one request decodes at {best.decode_step_s * 1e3:.0f} ms per token, above the "
            f"{tpot_slo_s * 1e3:.0f} ms target: use more tensor parallelism, a faster GPU or lower precision",
        )
    elif not slo_met and ttft_slo_s is not None:
        advice.insert(0, f"time to first token is {format_time(ttft(best), 2)} even for one request, above the {format_time(ttft_slo_s)} "
                      "target: prefill is too slow here (faster GPUs, or keep tensor parallelism inside a node)")  # fmt: skip
    if load_s is not None:
        advice.append(
            f"loading {format_decimal_bytes(weights_bytes)} of weights onto a new replica over {network} takes {format_time(load_s)}"
        )
    if tp > fabric.gpus_per_node:
        comm = sum(c.time_per_token_s for c in best.comm)
        advice.append(
            f"tensor parallelism crosses nodes: {comm * 1e3:.2f} ms of every token is all-reduce over {fabric.network.name if fabric.network else 'the network'}"
        )
    assumptions = (
        f"{users} users each streaming one response of {output_tokens} tokens after a {prompt_tokens}-token prompt",
        f"target: {format_time(tpot_slo_s)} per output token"
        + (f", TTFT {format_time(ttft_slo_s)}" if ttft_slo_s else ""),
        f"egress: {SSE_BYTES_PER_TOKEN} bytes per streamed token (OpenAI-style SSE chunk, estimate)",
        "TTFT under load: one prefill plus one decode step (continuous batching admits new requests between steps)",
        *notes,
        *best.assumptions,
    )
    return CapacityPlan(
        users=users, prompt_tokens=prompt_tokens, output_tokens=output_tokens, tpot_slo_s=tpot_slo_s,
        ttft_slo_s=ttft_slo_s, tp=tp, pp=pp, gpus_per_replica=n_replica, max_batch_kv=max_batch,
        batch=best_batch, estimate=best, ttft_s=ttft(best), replicas=replicas,
        required_tokens_per_s=users / tpot_slo_s, slo_met=slo_met, egress_bits_per_s=egress,
        weights_bytes=weights_bytes, weights_load_s=load_s, network=fabric.network.name if fabric.network else "none",
        advice=tuple(advice), assumptions=assumptions,
    )  # fmt: skip
