"""Team inference capacity: how many GPUs for N users at a per-token latency target.

Per replica (tp x pp GPUs) the KV cache left after the weights caps the batch, within the share
of each GPU the engine allocates (vLLM: 90%) and the requests it runs at once (vLLM
--max-num-seqs, OLLAMA_NUM_PARALLEL); the decode step time (planner: weights + KV read per step,
compute for big batches, engine overhead, tensor-parallel all-reduces over the given links) sets
each user's token rate, with the prompts of the requests that join meanwhile spread over it
(model/inference.py: serving_tpot_s). The largest batch whose time per output token meets the
TPOT target is the replica's concurrency; replicas = ceil(users / batch). Without --tp, every
tensor-parallel size inside a node is sized this way (and across nodes when that is needed or
uses fewer GPUs), and the one that meets the targets on the fewest GPUs wins.
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from fabriclens.catalog import find_engine, find_gpu, find_link
from fabriclens.catalog.schema import Engine, Gpu, Host, ModelSpec
from fabriclens.errors import InputError
from fabriclens.model.arch import ParamCounts, count_params
from fabriclens.model.collectives import Fabric
from fabriclens.model.inference import (
    InferenceEstimate,
    draft_memory,
    estimate_inference,
    serving_tpot_s,
)
from fabriclens.model.layout import WEIGHT_BYTES
from fabriclens.model.memory import inference_memory
from fabriclens.model.offload import Offload, estimate_offload
from fabriclens.plan.planner import (
    Speculation,
    check_serving_dp,
    check_serving_ep,
    check_serving_precision,
    check_speculative,
    context_window_note,
    default_engine,
    default_host,
    host_or_rate,
    host_ram_size,
    resolve_fabric,
    serving_kv_precision,
)
from fabriclens.plan.transfer import plan_transfer
from fabriclens.units import (
    counted,
    format_bytes,
    format_decimal_bytes,
    format_rate,
    format_time,
)

SSE_BYTES_PER_TOKEN = 150  # an OpenAI-style `data: {...}` chunk per token (estimate)
MAX_BATCH = 4096
MAX_TP = 64  # tensor parallelism searched across nodes goes no further

FabricFor = Callable[[int, int], tuple[Fabric, tuple[str, ...]]]


@dataclass(frozen=True, slots=True)
class ReplicaOption:
    """One tensor-parallel size the search sized: its GPUs and whether it meets the targets."""

    tp: int
    pp: int
    gpus: int
    replicas: int
    slo_met: bool
    decode_step_s: float
    tpot_s: float  # time per output token under load: the step and the newcomers' prefills
    ttft_s: float


@dataclass(frozen=True, slots=True)
class EngineLimits:
    """What the engine allows each GPU and each replica, and where each value comes from."""

    engine: str
    gpu_memory_utilization: float
    gpu_memory_utilization_source: str
    reserved_bytes: float
    reserved_bytes_source: str
    usable_bytes_per_gpu: float
    max_parallel: int  # 0: bounded by the KV cache only
    max_parallel_source: str
    precision: str
    bits_per_weight: float
    bits_per_weight_source: str


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
    tpot_s: float  # time per output token under load (serving_tpot_s)
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
    limits: EngineLimits
    tp_reason: str
    options: tuple[ReplicaOption, ...]
    model: str = ""  # the catalog entry served
    gpu: str = ""  # the GPU SKU
    # Ollama / llama.cpp on GPUs that cannot hold the model (--pp pinned): the split it makes
    offload: Offload | None = None
    host: Host | None = None  # the host memory the layers left there are read from
    host_ram_bytes: int | None = None  # --host-ram: each replica's host's free RAM + swap
    ep: int = 1  # experts split over ranks of each replica (--ep)
    dp: int = 1  # data-parallel attention groups in each replica (--dp)
    spec_tokens: int = 0  # speculative decoding's draft tokens a step (--spec-tokens)

    @property
    def host_fits(self) -> bool | None:
        """Each replica's host holds the layers left there (None: not checked, or no offload)."""
        return None if self.offload is None else self.offload.host_fits(self.host_ram_bytes)

    @property
    def gpus(self) -> int:
        """GPUs for all replicas."""
        return self.replicas * self.gpus_per_replica

    @property
    def tokens_per_s_per_user(self) -> float:
        """Output tokens per second each request sees under load."""
        return 1.0 / self.tpot_s

    @property
    def replica_tokens_per_s(self) -> float:
        """Output tokens per second one replica delivers at the chosen batch, prefills included."""
        return self.batch / self.tpot_s

    @property
    def provided_tokens_per_s(self) -> float:
        """Output tokens per second all replicas deliver at the chosen batch."""
        return self.replicas * self.replica_tokens_per_s

    @property
    def request_s(self) -> float:
        """Mean time one request takes at the planned batch: TTFT plus the rest of its tokens."""
        return self.ttft_s + max(0, self.output_tokens - 1) * self.tpot_s


@dataclass(frozen=True, slots=True)
class _Demand:
    spec: ModelSpec
    counts: ParamCounts
    gpu: Gpu
    engine: Engine
    users: int
    prompt_tokens: int
    output_tokens: int
    tpot_slo_s: float
    ttft_slo_s: float | None
    precision: str
    kv_precision: str
    limits: EngineLimits
    ep: int = 1  # experts split over ranks of each replica's tensor-parallel group
    dp: int = 1  # data-parallel attention groups in each replica
    speculation: Speculation = field(default_factory=Speculation)  # none: plain decode


@dataclass(frozen=True, slots=True)
class _Sized:
    tp: int
    pp: int
    fabric: Fabric
    notes: tuple[str, ...]
    max_batch_kv: int
    batch: int
    estimate: InferenceEstimate
    tpot_s: float
    ttft_s: float
    replicas: int
    slo_met: bool
    offload: Offload | None = None  # layers in host memory (``_size_offload``)

    @property
    def gpus(self) -> int:
        return self.replicas * self.tp * self.pp

    def option(self) -> ReplicaOption:
        return ReplicaOption(self.tp, self.pp, self.gpus, self.replicas, self.slo_met,
                             self.estimate.decode_step_s, self.tpot_s, self.ttft_s)  # fmt: skip


def _fits(d: _Demand, tp: int, pp: int, batch: int) -> bool:
    context = d.prompt_tokens + d.output_tokens
    ledger = inference_memory(
        d.spec, d.counts, tp=tp, pp=pp, batch=batch, context_tokens=context,
        prefill_chunk_tokens=min(batch * d.prompt_tokens, 8192), weight_precision=d.precision,
        kv_bytes_per_value=WEIGHT_BYTES[d.kv_precision], capacity_bytes=d.limits.usable_bytes_per_gpu,
        weight_bytes_per_param=d.limits.bits_per_weight / 8, state_bytes_per_value=d.engine.state_bytes,
        dp=d.dp,
    )  # fmt: skip
    if not d.speculation.tokens:
        return ledger.fits
    # the draft's layer and its KV cache, as estimate_inference adds them
    draft = sum(draft_memory(
        d.spec, d.speculation.draft, tp=tp, dp=d.dp, batch=batch, context_tokens=context, precision=d.precision,
        kv_precision=d.kv_precision, weight_bytes_per_param=d.limits.bits_per_weight / 8,
        capacity_bytes=d.limits.usable_bytes_per_gpu,
    ))  # fmt: skip
    return ledger.total_per_gpu_bytes + draft <= ledger.capacity_bytes


def _min_pp(d: _Demand, tp: int) -> int | None:
    """Fewest pipeline stages (powers of two) on which one request fits with this tp."""
    pp = 1
    while pp <= d.spec.layers:
        if _fits(d, tp, pp, 1):
            return pp
        pp *= 2
    return None


def _size(d: _Demand, tp: int, pp: int, fabric: Fabric, notes: tuple[str, ...]) -> _Sized:
    """Size replicas of tp x pp GPUs for the demand; the caller checked one request fits."""
    lo, hi = 1, MAX_BATCH
    while lo < hi:  # largest batch whose KV cache fits
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if _fits(d, tp, pp, mid) else (lo, mid - 1)
    max_batch_kv = lo
    max_batch = min(max_batch_kv, d.limits.max_parallel) if d.limits.max_parallel else max_batch_kv

    def run(batch: int) -> InferenceEstimate:
        return estimate_inference(
            d.spec, d.counts, d.gpu, fabric, d.engine, tp=tp, pp=pp, batch=batch,
            prompt_tokens=d.prompt_tokens, output_tokens=d.output_tokens, ep=d.ep, dp=d.dp,
            precision=d.precision, kv_precision=d.kv_precision,
            weight_bytes_per_param=d.limits.bits_per_weight / 8,
            memory_capacity_bytes=d.limits.usable_bytes_per_gpu, **d.speculation.options(),
        )  # fmt: skip

    return _choose_batch(d, tp, pp, fabric, notes, max_batch_kv, max_batch, run)


def _choose_batch(
    d: _Demand,
    tp: int,
    pp: int,
    fabric: Fabric,
    notes: tuple[str, ...],
    max_batch_kv: int,
    max_batch: int,
    run: Callable[[int], InferenceEstimate],
    offload: Callable[[int], Offload] | None = None,
) -> _Sized:
    """The largest batch up to ``max_batch`` whose time per output token (and TTFT) meets the
    targets, else one request; replicas for the users at that batch."""
    single = run(1)

    def ttft(e: InferenceEstimate) -> float:
        # one prompt's prefill, after waiting for the running decode step to finish
        return single.prefill_s + e.decode_step_s

    def tpot(e: InferenceEstimate, batch: int) -> float:
        return serving_tpot_s(e, single, batch, d.output_tokens, d.engine.prefill_mixed)

    def meets(e: InferenceEstimate, batch: int) -> bool:
        return tpot(e, batch) <= d.tpot_slo_s and (d.ttft_slo_s is None or ttft(e) <= d.ttft_slo_s)

    candidates = sorted(
        {min(2**k, max_batch) for k in range(13)} | {max_batch, min(d.users, max_batch)}
    )
    best_batch, best = 1, single
    slo_met = meets(best, 1)
    for batch in candidates:
        est = run(batch)
        if meets(est, batch) and batch >= best_batch:
            best_batch, best, slo_met = batch, est, True
    replicas = math.ceil(d.users / min(best_batch, d.users))
    if best_batch > d.users:
        best_batch = d.users
        best = run(d.users)
    return _Sized(tp, pp, fabric, notes, max_batch_kv, best_batch, best, tpot(best, best_batch),
                  ttft(best), replicas, slo_met,
                  offload(best_batch) if offload is not None else None)  # fmt: skip


def _size_offload(d: _Demand, pp: int, fabric: Fabric, notes: tuple[str, ...], host: Host) -> _Sized:  # fmt: skip
    """Replicas of ``pp`` GPUs that cannot hold the model: the engine keeps whole layers on the
    GPUs while they fit and reads the rest from ``host`` memory (model/offload.py, the split
    `plan` shows); each batch's decode step and prefill are the split's."""
    link = find_link(d.gpu.host_link).bw_bytes_per_s
    capacity = d.gpu.memory_bytes * d.limits.gpu_memory_utilization

    @functools.cache  # each batch's split: for its speed, its fit and the plan's record
    def split(batch: int) -> Offload:
        return estimate_offload(
            d.spec, d.counts, d.gpu, d.engine, host, gpus=pp, batch=batch,
            prompt_tokens=d.prompt_tokens, output_tokens=d.output_tokens,
            weight_bytes_per_param=d.limits.bits_per_weight / 8,
            kv_bytes_per_value=WEIGHT_BYTES[d.kv_precision], host_link_bytes_per_s=link,
            capacity_bytes=capacity,
        )  # fmt: skip

    def run(batch: int) -> InferenceEstimate:
        off = split(batch)
        whole = estimate_inference(
            d.spec, d.counts, d.gpu, fabric, d.engine, tp=1, pp=pp, batch=batch,
            prompt_tokens=d.prompt_tokens, output_tokens=d.output_tokens, precision=d.precision,
            kv_precision=d.kv_precision, weight_bytes_per_param=d.limits.bits_per_weight / 8,
            memory_capacity_bytes=d.limits.usable_bytes_per_gpu,
        )  # fmt: skip
        step = off.decode_step_s
        # the split's times; the rest (KV per token, the memory ledger) as if it fit
        return replace(
            whole, decode_step_s=step, decode_slack_s=0.0, decode_tokens_per_s=1.0 / step,
            batch_tokens_per_s=batch / step, prefill_s=off.prefill_s,
            prefill_compute_s=off.prefill_s, prefill_comm_s=0.0, ttft_s=off.prefill_s,
            e2e_s=off.prefill_s + max(0, d.output_tokens - 1) * step,
            decode_bound="host memory bandwidth" if off.decode_host_s > step / 2 else whole.decode_bound,
        )  # fmt: skip

    if not split(1).fits:
        raise InputError(
            f"{d.spec.name}: not even one layer fits on {d.gpu.name} beside the GPU runtime's context, "
            f"{d.engine.title}'s reserve and one micro-batch's buffers",
            "use a larger GPU, more GPUs (--pp), or a shorter prompt",
        )
    max_batch = d.limits.max_parallel or 1
    return _choose_batch(d, 1, pp, fabric, notes, max_batch, max_batch, run, split)


def _shortfall(d: _Demand, s: _Sized) -> float:
    """How far a replica misses the targets (1 = just meets), for ranking when none meets."""
    worst = s.tpot_s / d.tpot_slo_s
    if d.ttft_slo_s is not None:
        worst = max(worst, s.ttft_s / d.ttft_slo_s)
    return worst


def _engine_limits(
    gpu: Gpu,
    eng: Engine,
    precision: str | None,
    gpu_memory_utilization: float | None,
    max_parallel: int | None,
    spec: ModelSpec | None = None,
    speculative: bool = False,
) -> EngineLimits:
    released = spec.release_precision if spec is not None and precision is None else ""
    precision = precision or released or eng.default_precision
    check_serving_precision(precision)
    if gpu_memory_utilization is None:
        util, util_src = eng.gpu_memory_utilization, eng.gpu_memory_utilization_source
    elif 0 < gpu_memory_utilization <= 1:
        util, util_src = gpu_memory_utilization, "set by --gpu-memory-utilization"
    else:
        raise InputError(
            f"--gpu-memory-utilization {gpu_memory_utilization:g} is not in (0, 1]",
            "give a share of the GPU's memory, e.g. --gpu-memory-utilization 0.9",
        )
    if max_parallel is None and speculative and eng.max_parallel_speculative:
        parallel, parallel_src = eng.max_parallel_speculative, eng.max_parallel_speculative_source
    elif max_parallel is None:
        parallel, parallel_src = eng.max_parallel_on(gpu), eng.max_parallel_source
    elif max_parallel >= 1:
        parallel, parallel_src = max_parallel, "set by --max-parallel"
    else:
        raise InputError(
            f"--max-parallel {max_parallel} must be at least 1",
            "give the requests one replica runs at once, e.g. --max-parallel 4",
        )
    bits = eng.bytes_per_weight(precision) * 8
    nominal = WEIGHT_BYTES[precision] * 8
    bits_src = eng.weight_bits_source if bits != nominal else f"{precision}: {nominal:g} bits"
    if released and spec is not None:
        given = "its name gives" if spec.named_precision else f"{spec.name} is released in"
        bits_src = f"{given} {released}; {bits_src}"
    usable = gpu.memory_bytes * util - eng.reserved_bytes
    return EngineLimits(
        engine=eng.name, gpu_memory_utilization=util, gpu_memory_utilization_source=util_src,
        reserved_bytes=eng.reserved_bytes, reserved_bytes_source=eng.reserved_bytes_source,
        usable_bytes_per_gpu=usable, max_parallel=parallel, max_parallel_source=parallel_src,
        precision=precision, bits_per_weight=bits, bits_per_weight_source=bits_src,
    )  # fmt: skip


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
    pp: int | None = None,
    gpus_per_node: int | None = None,
    network: str | None = None,
    nics_per_node: int | None = None,
    engine: str | None = None,
    precision: str | None = None,
    kv_precision: str | None = None,
    gpu_memory_utilization: float | None = None,
    max_parallel: int | None = None,
    host_memory: str | None = None,
    host_ram: str | None = None,
    ep: int | None = None,
    dp: int | None = None,
    spec_tokens: int | None = None,
    accept_length: float | None = None,
    draft: str | None = None,
    draft_topk: int | None = None,
    draft_tokens: int | None = None,
) -> CapacityPlan:
    """Size an inference deployment for ``users`` concurrent streams.

    ``tp``/``pp`` pin the replica; without ``tp`` the tensor-parallel size that meets the targets
    on the fewest GPUs is chosen. ``precision`` defaults to the model's released format (gpt-oss:
    4-bit experts), else the engine's (Ollama: Q4_K_M);
    ``gpu_memory_utilization`` and ``max_parallel`` override the engine's defaults. ``engine``
    defaults to vLLM, and to Ollama on Apple GPUs (unified memory), where vLLM, SGLang and
    TensorRT-LLM do not run. An engine that keeps layers in host memory (Ollama, llama.cpp) on
    ``pp`` GPUs too small for one request runs the model anyway: each replica is that split, its
    host layers read from ``host_memory`` (a catalog host or a rate; default: beside this GPU)
    and checked against ``host_ram`` (each host's free RAM + swap) where given. ``ep`` and ``dp``
    split each replica's experts and attention as `plan` does (expert parallelism and
    data-parallel attention inside the tensor-parallel group); the search then sizes only the
    tensor-parallel sizes they divide. ``spec_tokens``, ``accept_length``, ``draft``,
    ``draft_topk`` and ``draft_tokens`` serve with speculative decoding as `plan` models it, on
    replicas without pipeline stages."""
    for name, value in (
        ("users", users),
        ("output-tokens", output_tokens),
        ("prompt-tokens", prompt_tokens),
        ("pp", 1 if pp is None else pp),
        ("ep", 1 if ep is None else ep),
        ("dp", 1 if dp is None else dp),
    ):
        if value < 1:
            raise InputError(
                f"--{name} must be at least 1 (got {value})", f"give a positive --{name}"
            )
    if tpot_slo_s <= 0:
        raise InputError("the TPOT target must be positive", "give --latency-slo tpot=50ms")
    if gpus_per_node is not None and gpus_per_node < 1:
        raise InputError("--gpus-per-node must be at least 1", "give a positive --gpus-per-node")
    gpu = find_gpu(gpu_name)
    eng = find_engine(engine or default_engine(gpu, spec))
    speculation = check_speculative(
        spec, eng.name, spec_tokens, accept_length, draft, 1 if pp is None else pp,
        draft_topk, draft_tokens,
    )  # fmt: skip
    limits = _engine_limits(
        gpu, eng, precision, gpu_memory_utilization, max_parallel, spec,
        speculative=speculation.tokens > 0,
    )  # fmt: skip
    kv_prec = serving_kv_precision(limits.precision, kv_precision)
    split = (ep or 1) * (dp or 1) > 1
    if split and eng.multi_gpu == "layers":
        flag = "--ep" if (ep or 1) > 1 else "--dp"
        raise InputError(
            f"{flag}: {eng.title} splits a model's layers over its GPUs, not its experts or "
            "attention (tensor-parallel engines such as SGLang and vLLM do)",
            f"drop {flag}, or give --engine sglang or vllm",
        )
    # each divides the tensor-parallel size: checked for an expert count and the smallest tp
    unit = math.lcm(ep or 1, dp or 1)
    check_serving_ep(spec, ep, unit)
    if tp is None and unit & (unit - 1):
        raise InputError(
            f"--ep/--dp {unit}: the search sizes tensor-parallel groups of 1, 2, 4, 8 ... GPUs, "
            f"none of them a multiple of {unit}",
            f"give --tp (a multiple of {unit}), or an --ep/--dp that is a power of two",
        )
    d = _Demand(spec, count_params(spec), gpu, eng, users, prompt_tokens, output_tokens,
                tpot_slo_s, ttft_slo_s, limits.precision, kv_prec, limits, ep or 1, dp or 1,
                speculation)  # fmt: skip

    def fabric_for(t: int, p: int) -> tuple[Fabric, tuple[str, ...]]:
        fab, fab_notes = resolve_fabric(gpu, t * p, gpus_per_node=gpus_per_node,
                                        network_name=network, nics_per_node=nics_per_node)  # fmt: skip
        return fab, tuple(fab_notes)

    ram = host_ram_size(host_ram) if host_ram is not None else None
    # (a bad --host-memory is refused even where it is not used)
    host = host_or_rate(host_memory or default_host(gpu))
    if (eng.host_offload and not split and not gpu.unified_memory and tp in (None, 1)
            and pp is not None and not _fits(d, 1, pp, 1)):  # fmt: skip
        chosen = _size_offload(d, pp, *fabric_for(1, pp), host)
        whole = _min_pp(d, 1)
        whole_s = None
        if whole is not None:
            # (GPUs that do not fill whole nodes of --gpus-per-node: no speed given)
            with contextlib.suppress(InputError):
                whole_s = _size(d, 1, whole, *fabric_for(1, whole)).tpot_s
        reason = (f"pp {pp}: set by --pp; {counted(pp, gpu.name + ' GPU')} cannot hold one request, "
                  f"so {eng.title} keeps the layers that do not fit in host memory")  # fmt: skip
        return _assemble(d, chosen, [chosen], reason, network, host, (whole, whole_s), ram=ram)
    why = (f"{eng.title} keeps every layer on the GPUs" if not eng.host_offload
           else f"{gpu.name} shares one memory with the CPU" if gpu.unified_memory
           else "only with --pp GPUs too small for one request (and --tp 1)")  # fmt: skip
    unused = tuple(f"{flag} is not used: {why}" for flag, value in
                   (("--host-memory", host_memory), ("--host-ram", host_ram)) if value is not None)  # fmt: skip
    more: tuple[str, ...] = ()
    if tp is not None:
        if tp < 1:
            raise InputError(f"--tp {tp} must be at least 1", "give a positive --tp")
        if spec.heads % tp:
            raise InputError(
                f"--tp {tp} does not divide the {spec.heads} attention heads", "choose another --tp"
            )
        check_serving_ep(spec, ep, tp)
        check_serving_dp(dp, tp)
        stages = pp if pp is not None else _min_pp(d, tp)
        if stages is None or not _fits(d, tp, stages, 1):
            raise InputError(
                f"one request does not fit on tp {tp} x pp {stages or pp or 1} {gpu.name} "
                f"within {limits.usable_bytes_per_gpu / 1e9:.3g} GB per GPU",
                "raise --tp or --pp, lower --precision, or shorten the prompt/output",
            )
        if d.speculation.tokens and stages > 1:
            raise InputError(
                f"one request needs {stages} pipeline stages at --tp {tp}, and speculative "
                "decoding with pipeline stages is not modelled (SGLang refuses the two together)",
                "raise --tp, or drop --spec-tokens",
            )
        chosen = _size(d, tp, stages, *fabric_for(tp, stages))
        sized = [chosen]
        reason = f"tp {tp}: set by --tp"
    else:
        # one box each (a Mac): tensor parallelism across boxes only over a network the user names
        across = network is not None or not gpu.unified_memory
        layers = eng.multi_gpu == "layers"  # llama.cpp / Ollama: stages, no tensor parallelism
        chosen, sized, reason = _search_tp(
            d, pp, 1 if layers else gpus_per_node or gpu.max_gpus_per_node, fabric_for,
            across and not layers,
        )  # fmt: skip
        if layers and chosen.pp > 1:
            reason += f"; {eng.title} splits the layers over its GPUs (tensor parallel: --tp)"
        elif not across:
            per_box = gpus_per_node or gpu.max_gpus_per_node
            machines = math.ceil(chosen.tp * chosen.pp / per_box)
            reason += (
                "; tensor parallelism not across machines (name a --network to search it there)"
                + (
                    f"; its {chosen.pp} pipeline stages span {machines} machines over the default "
                    "network (--network sets it)"
                    if machines > 1
                    else ""
                )
            )
        if eng.host_offload and not gpu.unified_memory and pp is None and chosen.tp * chosen.pp > 1:
            one_gpu = _one_gpu_with_host_memory(d, fabric_for(1, 1), host)
            if one_gpu:
                more = (*more, one_gpu)
                unused = tuple(n for n in unused if not n.startswith("--host-memory"))
    if d.ep > 1 or d.dp > 1:
        inside = [f"expert parallel {d.ep}" if d.ep > 1 else "",
                  f"data-parallel attention {d.dp}" if d.dp > 1 else ""]  # fmt: skip
        reason += f"; {' and '.join(x for x in inside if x)} inside each replica (--ep, --dp)"
    if speculation.note:
        unused = (*unused, speculation.note)
    if speculation.tokens:  # what the same demand takes without the draft
        plain = plan_capacity(
            spec, gpu_name, users=users, output_tokens=output_tokens, prompt_tokens=prompt_tokens,
            tpot_slo_s=tpot_slo_s, ttft_slo_s=ttft_slo_s, tp=tp, pp=pp,
            gpus_per_node=gpus_per_node, network=network, nics_per_node=nics_per_node,
            engine=engine, precision=precision, kv_precision=kv_precision,
            gpu_memory_utilization=gpu_memory_utilization, max_parallel=max_parallel, ep=ep, dp=dp,
        )  # fmt: skip
        met = "meets the target" if plain.slo_met else "does not meet the target"
        more = (*more, f"without the draft: {counted(plain.gpus, 'GPU')} ({counted(plain.replicas, 'replica')} "
                       f"of tp {plain.tp}), {plain.tpot_s * 1e3:.3g} ms per token, {met}")  # fmt: skip
    return _assemble(d, chosen, sized, reason, network, notes=unused, more_advice=more)


def _one_gpu_with_host_memory(
    d: _Demand, fabric: tuple[Fabric, tuple[str, ...]], host: Host
) -> str:
    """Where every layer needs more than one GPU, what the engine makes of one, keeping the
    other layers in host memory (``_size_offload``): one line of advice ("" if none fits)."""
    try:
        one = _size_offload(d, 1, *fabric, host)
    except InputError:  # not even one layer fits beside the GPU's fixed part
        return ""
    off = one.offload
    assert off is not None
    met = " (meets the target)" if one.slo_met else ""
    return (f"on one {d.gpu.name} (--pp 1) {d.engine.title} keeps {off.gpu_layers} of {off.layers} layers on "
            f"the GPU and reads the rest from host memory: {one.tpot_s * 1e3:.0f} ms per token{met}")  # fmt: skip


def _search_tp(
    d: _Demand, pp: int | None, node_gpus: int, fabric_for: FabricFor, across: bool = True
) -> tuple[_Sized, list[_Sized], str]:
    """Size every tensor-parallel size (powers of two) inside a node, then (``across``) across
    nodes while that is needed to meet the targets or would use fewer GPUs; pick the fewest GPUs
    that meet."""
    sized: list[_Sized] = []

    def consider(t: int) -> _Sized | None:
        stages = pp if pp is not None else _min_pp(d, t)
        if stages is None or not _fits(d, t, stages, 1):
            return None
        if d.speculation.tokens and stages > 1:  # speculative decoding is planned without stages
            return None
        try:
            fab, notes = fabric_for(t, stages)
        except InputError:  # e.g. tp x pp does not fill whole nodes of --gpus-per-node
            return None
        s = _size(d, t, stages, fab, notes)
        sized.append(s)
        return s

    def best_met() -> float:
        return min((float(s.gpus) for s in sized if s.slo_met), default=math.inf)

    # only tensor-parallel sizes that the experts' and the attention's splits divide
    unit = math.lcm(d.ep, d.dp)
    t = 1
    while t <= node_gpus:
        if d.spec.heads % t == 0 and t % unit == 0:
            consider(t)
        t *= 2
    while across and t <= min(MAX_TP, d.spec.heads):  # across nodes: only when it could win
        if d.spec.heads % t == 0 and t % unit == 0:
            stages = pp if pp is not None else (_min_pp(d, t) or 1)
            if t * stages < best_met():
                consider(t)
        t *= 2
    if not sized:
        split = f" at a tensor-parallel size that --ep/--dp divide ({unit}, 2 x {unit}, ...)"
        raise InputError(
            f"{d.spec.name} does not fit on up to {MAX_TP} {d.gpu.name} GPUs per replica "
            f"within {d.limits.usable_bytes_per_gpu / 1e9:.3g} GB each{split if unit > 1 else ''}",
            "use a lower --precision, a larger GPU, or shorten the prompt/output",
        )
    met = [s for s in sized if s.slo_met]
    tried = ", ".join(
        f"tp {s.tp}" + (f" x pp {s.pp}" if s.pp > 1 else "") + f": {counted(s.gpus, 'GPU')}"
        + ("" if s.slo_met else " (target not met)")
        for s in sized
    )  # fmt: skip
    if met:
        # equal GPUs and replica size (tp 4 x pp 2 against tp 8): the faster per token wins, as
        # a pipeline's stages read their weights one after the other within a decode step
        chosen = min(met, key=lambda s: (s.gpus, s.tp * s.pp, s.tpot_s))
        reason = (f"tp {chosen.tp}: the fewest GPUs that meet the targets ({tried}); "
                  "ties go to the smaller replica, then the faster")  # fmt: skip
    else:
        chosen = min(sized, key=lambda s: (_shortfall(d, s), s.gpus))
        reason = (f"tp {chosen.tp}: no replica size meets the targets; this one comes closest "
                  f"({tried})")  # fmt: skip
    return chosen, sized, reason


def _assemble(
    d: _Demand,
    s: _Sized,
    sized: list[_Sized],
    reason: str,
    network: str | None,
    host: Host | None = None,
    whole: tuple[int | None, float | None] = (None, None),
    notes: tuple[str, ...] = (),
    ram: int | None = None,
    more_advice: tuple[str, ...] = (),
) -> CapacityPlan:
    """The plan for replica ``s``; ``host``, ``whole`` (the fewest GPUs that hold every layer
    and their time per output token) and ``ram`` (--host-ram) where ``s`` keeps layers in host
    memory; ``more_advice`` is added to the advice."""
    best, tp, pp, lim = s.estimate, s.tp, s.pp, d.limits
    users, tpot_slo_s, ttft_slo_s = d.users, d.tpot_slo_s, d.ttft_slo_s
    egress = users / s.tpot_s * SSE_BYTES_PER_TOKEN * 8
    weights_bytes = d.counts.total * lim.bits_per_weight / 8
    load_s = None
    if network:
        load_s = plan_transfer(weights_bytes, network, hosts=1).time_one_s
    advice = [
        f"{counted(s.replicas, 'replica')} behind an HTTP load balancer that routes by least outstanding requests; "
        "keep a user's conversation on one replica when prefix caching matters"
        if s.replicas > 1
        else "one replica serves them all: point every client at it, no load balancer needed",
        f"egress for streamed tokens is about {format_rate(egress, 2)}: the serving network is not the limit"
        if egress < 1e9
        else f"egress for streamed tokens is {format_rate(egress, 2)}: size the front-end links for it",
    ]
    if (s.replicas > 1 and lim.max_parallel and s.batch == lim.max_parallel
            and s.max_batch_kv > lim.max_parallel):  # fmt: skip
        advice.insert(0, f"{lim.engine} runs {counted(lim.max_parallel, 'request')} at once per replica "
                      f"while the KV cache holds {s.max_batch_kv}: raise that limit "
                      f"({'OLLAMA_NUM_PARALLEL' if lim.engine == 'ollama' else 'the engine option'}, "
                      "then --max-parallel here) for fewer replicas")  # fmt: skip
    off = s.offload
    if off is not None:
        host_layers = off.layers - off.gpu_layers
        share = off.decode_host_s / off.decode_step_s
        whole_pp, whole_s = whole
        fits_on = (
            f"every layer fits on {counted(whole_pp, d.gpu.name + ' GPU')} (--pp {whole_pp})"
            + (f", {whole_s * 1e3:.0f} ms per token" if whole_s is not None else "")
            if whole_pp is not None
            else f"no count of {d.gpu.name} GPUs up to {d.spec.layers} holds every layer"
        )
        advice.insert(0, f"{counted(host_layers, 'layer')}{'' if off.output_on_gpu else ' and the output layer'} "
                      f"are read from host memory at every token, {share:.0%} of its "
                      f"{best.decode_step_s * 1e3:.0f} ms: {fits_on}")  # fmt: skip
        if ram is not None and not off.host_fits(ram):
            need, free = format_bytes(off.host_bytes), format_bytes(ram)
            advice.insert(0, f"a replica's host has {free} free (--host-ram) for {need} of layers: "
                          + ("it does not load; free memory, add swap, or take a smaller quantisation"
                             if d.engine.name == "ollama" else "llama.cpp reads what does not fit from disk at every token"))  # fmt: skip
    elif not s.slo_met and best.decode_step_s > tpot_slo_s:
        advice.insert(
            0,
            f"even one request decodes at {best.decode_step_s * 1e3:.0f} ms per token, above the "
            f"{tpot_slo_s * 1e3:.0f} ms target: "
            + (
                f"use a faster GPU or lower precision ({d.engine.title} runs the layers one GPU after "
                "another: more GPUs hold more, not faster)"
                if d.engine.multi_gpu == "layers"
                else "use more tensor parallelism, a faster GPU or lower precision"
            ),
        )
    elif not s.slo_met and ttft_slo_s is not None:
        advice.insert(0, f"time to first token is {format_time(s.ttft_s, 2)} even for one request, above the {format_time(ttft_slo_s)} "
                      "target: prefill is too slow here (faster GPUs, or keep tensor parallelism inside a node)")  # fmt: skip
    advice += more_advice
    beyond = context_window_note(d.spec, d.prompt_tokens + d.output_tokens, "prompt + output")
    if beyond:
        advice.insert(0, beyond)
    if load_s is not None:
        advice.append(
            f"loading {format_decimal_bytes(weights_bytes)} of weights onto a new replica over {network} takes {format_time(load_s)}"
        )
    if tp > s.fabric.gpus_per_node:
        comm = sum(c.time_per_token_s for c in best.comm)
        advice.append(
            f"tensor parallelism crosses nodes: {comm * 1e3:.2f} ms of every token is all-reduce over {s.fabric.network.name if s.fabric.network else 'the network'}"
        )
    parallel = (f"{lim.max_parallel} requests at once per replica ({lim.max_parallel_source})"
                if lim.max_parallel else f"no cap on requests per replica besides the KV cache ({lim.max_parallel_source})")  # fmt: skip
    assumptions = (
        f"model: {d.spec.name} ({d.spec.source})",
        *((f"model name {d.spec.reading}",) if d.spec.reading else ()),
        f"{users} users each streaming one response of {d.output_tokens} tokens after a {d.prompt_tokens}-token prompt",
        f"target: {format_time(tpot_slo_s)} per output token"
        + (f", TTFT {format_time(ttft_slo_s)}" if ttft_slo_s else ""),
        f"replica: {reason}",
        f"engine memory: {lim.gpu_memory_utilization:.0%} of each GPU ({lim.gpu_memory_utilization_source})"
        + (f", less {lim.reserved_bytes / 2**20:.0f} MiB ({lim.reserved_bytes_source})" if lim.reserved_bytes else "")
        + f": {lim.usable_bytes_per_gpu / 1e9:.3g} GB for weights, activations, runtime and KV cache",
        f"weights: {lim.precision} at {lim.bits_per_weight:.3g} bits per weight ({lim.bits_per_weight_source})",
        f"concurrency: {parallel}",
        f"egress: {SSE_BYTES_PER_TOKEN} bytes per streamed token (OpenAI-style SSE chunk, estimate)",
        "TTFT under load: one prefill plus one decode step (continuous batching admits new requests between steps)",
        f"time per output token under load: the decode step ({format_time(best.decode_step_s, 3)}) plus the prompts of "
        f"the requests that join while one generates, (batch - 1) of them per {d.output_tokens} output tokens "
        + ("riding in the decode steps (the compute the memory-bound step leaves idle is free)"
           if d.engine.prefill_mixed else "as prefill passes the running requests wait for")
        + f" ({format_time(s.tpot_s - best.decode_step_s, 3)} here; {d.engine.prefill_mixed_source})",
        *s.notes,
        *notes,
        *(() if off is None or host is None else (
            f"offload ({d.engine.title}): whole decoder layers on the GPUs while they fit beside "
            "the GPU runtime's context, the engine's reserve and one micro-batch's buffers, the last ones "
            f"first; the rest read from host memory at {host.memory_bw_bytes_per_s / 1e9:.3g} GB/s "
            f"x {host.efficiency:.2f} ({host.title}; {host.efficiency_source}; --host-memory to "
            f"set yours); {format_bytes(off.host_bytes)} per replica in host memory, "
            + ("not checked against its free RAM (--host-ram)" if ram is None
               else f"against {format_bytes(ram)} free (--host-ram)")
            + f" ({d.engine.host_offload_source})",)),
        *best.assumptions,
    )  # fmt: skip
    return CapacityPlan(
        users=users, prompt_tokens=d.prompt_tokens, output_tokens=d.output_tokens, tpot_slo_s=tpot_slo_s,
        ttft_slo_s=ttft_slo_s, tp=tp, pp=pp, gpus_per_replica=tp * pp, max_batch_kv=s.max_batch_kv,
        batch=s.batch, estimate=best, tpot_s=s.tpot_s, ttft_s=s.ttft_s, replicas=s.replicas,
        required_tokens_per_s=users / tpot_slo_s,
        slo_met=s.slo_met and (off is None or off.host_fits(ram) is not False),
        egress_bits_per_s=egress,
        weights_bytes=weights_bytes, weights_load_s=load_s,
        network=s.fabric.network.name if s.fabric.network else "none", advice=tuple(advice),
        assumptions=assumptions, limits=lim, tp_reason=reason, options=tuple(x.option() for x in sized),
        model=d.spec.name, gpu=d.gpu.name, offload=off, host=host if off is not None else None,
        host_ram_bytes=ram if off is not None else None, ep=d.ep, dp=d.dp,
        spec_tokens=d.speculation.tokens,
    )  # fmt: skip
