"""Turn a PlanRequest into estimates: validate, fill defaults (stating each), evaluate."""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from fabriclens.catalog import (
    find_engine,
    find_framework,
    find_gpu,
    find_host,
    find_link,
    find_network,
)
from fabriclens.catalog.model_names import OLLAMA_TAG
from fabriclens.catalog.schema import (
    ATTENTION_KERNELS,
    ATTENTION_NAMES,
    GRAD_REDUCE_DTYPES,
    MOE_DISPATCH_MODES,
    PIPELINE_SPLITS,
    Engine,
    Framework,
    Gpu,
    Host,
    IntraLink,
    ModelSpec,
    Network,
    split_release,
)
from fabriclens.errors import InputError
from fabriclens.model.arch import ParamCounts, count_params
from fabriclens.model.collectives import Fabric
from fabriclens.model.inference import (
    DRAFT_KINDS,
    InferenceEstimate,
    default_draft,
    estimate_inference,
    serving_tpot_s,
)
from fabriclens.model.layout import KV_PRECISIONS, WEIGHT_BYTES, TrainConfig
from fabriclens.model.lora import LORA_TARGET_NAMES, LORA_TARGETS
from fabriclens.model.memory import stage_layer_counts, training_memory
from fabriclens.model.offload import (
    H2D_EFFICIENCY,
    OFFLOAD_MIN_BATCH,
    UBATCH_TOKENS,
    Offload,
    estimate_offload,
)
from fabriclens.model.step import StepEstimate, estimate_training_step
from fabriclens.plan.fit import first_fit, min_gpus_inference, min_gpus_training
from fabriclens.plan.layouts import check_tp as _check_tp
from fabriclens.plan.layouts import ep_ranks, interleave_fits, interleave_possible, layout_config
from fabriclens.plan.layouts import validate_layout as _validate_layout
from fabriclens.plan.request import PlanRequest
from fabriclens.units import format_number, parse_bandwidth, parse_rate, parse_size

WORKLOADS = ("pretrain", "full-finetune", "lora", "qlora", "inference")
DEFAULT_MULTI_NODE_NETWORK = "ndr-ib"
DEFAULT_GLOBAL_BATCH = {"pretrain": 512, "full-finetune": 128, "lora": 64}
# what most training runs use (Hugging Face, FSDP, DeepSpeed, torchtitan, Composer); Megatron-LM
# users say --framework megatron, NVIDIA's published NeMo recipes --framework nemo
DEFAULT_FRAMEWORK = "pytorch"
# whose kernels the kernel-level step runs (its attention, elementwise fusion, MoE dispatch,
# gradient reduction), each at its achievable rate (share 1.0); its own runs reach its share
KERNEL_LEVEL_FRAMEWORK = "nemo"


@dataclass(frozen=True)
class Plan:
    """One evaluated plan for one network choice."""

    request: PlanRequest
    model: ModelSpec
    counts: ParamCounts
    gpu: Gpu
    intra: IntraLink
    network: Network | None
    nics_per_node: int
    gpus_per_node: int
    workload: str
    config: TrainConfig | None
    training: StepEstimate | None
    inference: InferenceEstimate | None
    tp: int
    pp: int
    defaults: tuple[str, ...]
    min_gpus: int | None = None
    framework: Framework | None = None  # training plans: the framework the step time assumes
    kernel_level: StepEstimate | None = None  # the same layout at the kernel-level step (1.0)
    # inference too large for the GPUs on an engine that keeps layers in host memory
    offload: Offload | None = None
    host: Host | None = None
    host_ram_bytes: int | None = None  # --host-ram: free host memory (RAM + swap), as given

    @property
    def host_fits(self) -> bool | None:
        """The host holds the layers left there (None: --host-ram not given, or no offload)."""
        return None if self.offload is None else self.offload.host_fits(self.host_ram_bytes)

    @property
    def fits(self) -> bool:
        """The one verdict: the job fits in GPU memory, and the split asked for in host memory
        too (exit status 1 otherwise)."""
        if self.inference is not None:
            gpu_fits = self.inference.memory.fits
        else:
            assert self.training is not None
            gpu_fits = self.training.memory.fits
        if self.offload is None:
            return gpu_fits
        return gpu_fits and self.offload.fits and self.host_fits is not False

    @property
    def nodes(self) -> int:
        """Nodes in the job."""
        return math.ceil(self.request.gpus / self.gpus_per_node)

    @property
    def warnings(self) -> tuple[str, ...]:
        """What the user must not miss: tokens beyond the model's context window."""
        if self.workload == "inference":
            tokens = self.request.prompt_tokens + self.request.output_tokens
            note = context_window_note(self.model, tokens, "prompt + output")
        elif self.config is not None:
            note = context_window_note(self.model, self.config.seq_len, "the sequence length")
        else:
            note = ""
        return (note,) if note else ()

    @property
    def network_name(self) -> str:
        """The network id, or "none" for a single node."""
        return self.network.name if self.network else "none"

    @property
    def network_cost(self) -> float:
        """Relative network cost of the whole job: ports x per-port cost."""
        if self.network is None or self.nodes <= 1:
            return 0.0
        return self.network.cost_relative * self.nics_per_node * self.nodes


def _check_positive(name: str, value: int | None) -> None:
    if value is not None and value < 1:
        raise InputError(f"--{name} must be at least 1 (got {value})", f"give a positive --{name}")


WIRE_TCP_GOODPUT = 1448 / 1538  # TCP payload per 1500-MTU Ethernet frame on the wire


def network_or_rate(name: str) -> Network:
    """A catalog network, or a plain TCP/Ethernet link of a given wire rate ("400mbit",
    "2.5Gbit/s", "3GB/s"), as measured links and lab links are described."""
    try:
        return find_network(name)
    except InputError as exc:
        if re.fullmatch(r"[0-9.eE+-]*\s*[a-zA-Z]?", name.strip()):  # "5g" stays a typo
            raise
        try:
            rate = parse_rate(name)
        except InputError as bad_rate:
            if "bits or bytes" in bad_rate.problem:
                raise
            raise exc from None
    return Network(name=name, title=f"{rate / 1e6:,.0f} Mbit/s Ethernet, TCP", kind="tcp", rate_bits_per_s=rate,
                   efficiency=WIRE_TCP_GOODPUT, efficiency_source="TCP goodput 1448/1538 bytes per 1500-MTU frame",
                   latency_s=50e-6, cost_relative=1.0, source="a wire rate given on the command line")  # fmt: skip


def default_nics_per_node(network: Network | None, gpus_per_node: int) -> int:
    """NICs per node when not given: what a cloud instance type comes with (the network's
    ``nics_per_node``), else one per GPU for RDMA on nodes of 4+ GPUs (the HGX reference design),
    else 1 (a TCP node, a workstation)."""
    if network is not None and network.nics_per_node:
        return network.nics_per_node
    if network is not None and network.kind != "tcp" and gpus_per_node >= 4:
        return gpus_per_node
    return 1


def like_for_like(req: PlanRequest, networks: tuple[str | None, ...]) -> PlanRequest:
    """``req`` with one NIC count for every network of a comparison, unless the user set one.

    Alone, each network gets its own default (one per GPU for RDMA, 1 for TCP); side by side
    those would compare NIC counts as much as networks. The comparison takes the largest of the
    defaults, one per GPU as GPU clusters are built, for every network, and says so."""
    if req.nics_per_node is not None or len([n for n in networks if n]) < 2:
        return req
    if req.gpus_per_node is not None and req.gpus_per_node < 1:
        return req  # resolve_fabric reports it
    gpn = req.gpus_per_node or min(find_gpu(req.gpu).max_gpus_per_node, req.gpus)
    if req.gpus <= gpn:
        return req  # one node: no network traffic to compare
    chosen = [network_or_rate(n) for n in networks if n]
    free = [n for n in chosen if not n.nics_per_node]  # cloud fabrics keep their instance's NICs
    if not free:
        return req
    nics = max(default_nics_per_node(n, gpn) for n in free)
    why = "one per GPU, as RDMA clusters are built" if nics > 1 else "one per node"
    fixed = [n.name for n in chosen if n.nics_per_node]
    also = f"; {', '.join(fixed)} keep the NICs their instance type comes with" if fixed else ""
    note = (
        f"NICs per node: {nics} for every network compared ({why}), so the comparison is of "
        f"networks, not of NIC counts (set --nics-per-node){also}"
    )
    return replace(req, comparison_nics=nics, extra_notes=(*req.extra_notes, note))


def context_window_note(spec: ModelSpec, tokens: int, what: str) -> str:
    """A warning when ``tokens`` exceed the model's context window ("" when they fit): the
    memory and time are still computed, but the model was not trained on such positions."""
    if tokens <= spec.max_positions:
        return ""
    return (f"{what} of {tokens:,} tokens is beyond {spec.name}'s context window of "
            f"{spec.max_positions:,}: the model needs a longer-context variant or RoPE scaling "
            "for it (the estimate assumes one)")  # fmt: skip


def resolve_fabric(
    gpu: Gpu,
    gpus: int,
    *,
    gpus_per_node: int | None = None,
    intra_link: str | None = None,
    network_name: str | None = None,
    nics_per_node: int | None = None,
    comparison_nics: int | None = None,
) -> tuple[Fabric, list[str]]:
    """The fabric for ``gpus`` of ``gpu``, filling what is not given and saying so.
    ``comparison_nics`` (a comparison's common NIC count) applies to networks whose instance
    type does not fix one."""
    notes: list[str] = []
    if gpus < 1 or (gpus_per_node is not None and gpus_per_node < 1):
        raise InputError(
            "the GPU count and GPUs per node must be at least 1", "give positive counts"
        )
    gpn = gpus_per_node or min(gpu.max_gpus_per_node, gpus)
    if gpus_per_node is None:
        notes.append(f"gpus per node: {gpn} (at most {gpu.max_gpus_per_node} for {gpu.title})")
    if gpus > gpn and gpus % gpn:
        raise InputError(
            f"{gpus} GPUs do not fill whole nodes of {gpn}",
            "use a multiple of --gpus-per-node, or change --gpus-per-node",
        )
    default_link = gpu.intra_link if gpn > 1 else "none"
    paired = find_link(default_link)
    if intra_link is None and gpn > paired.max_gpus:
        # a GPU sold in bridged pairs (H100 NVL): beyond the pair, its GPUs talk over PCIe
        notes.append(
            f"intra-node link: {gpu.host_link} ({paired.title} joins {paired.max_gpus} GPUs; "
            f"{gpn} on a node talk over PCIe; set --intra-link)"
        )
        default_link = gpu.host_link
    intra = find_link(intra_link or default_link)
    if gpn > intra.max_gpus:
        raise InputError(
            f"intra-node link {intra.name} joins at most {intra.max_gpus} GPUs, not {gpn}",
            "lower --gpus-per-node or choose another --intra-link",
        )
    nodes = math.ceil(gpus / gpn)
    network: Network | None = None
    if network_name:
        network = network_or_rate(network_name)
    elif nodes > 1:
        network = find_network(DEFAULT_MULTI_NODE_NETWORK)
        notes.append(f"network: {network.title} (default for multi-node; set --network)")
    if nics_per_node is not None:
        nics = nics_per_node
    elif network is not None and network.nics_per_node:
        nics = network.nics_per_node
        notes.append(f"NICs per node: {nics}, as the instance type comes ({network.title}; set --nics-per-node)")  # fmt: skip
    elif comparison_nics is not None:
        nics = comparison_nics
    else:
        nics = default_nics_per_node(network, gpn)
        if nics > 1:
            notes.append(
                f"NICs per node: {nics}, one per GPU (HGX reference design; set --nics-per-node)"
            )
        elif network is not None and nodes > 1:
            notes.append("NICs per node: 1 (set --nics-per-node)")
    host = find_link(gpu.host_link)
    return Fabric(intra, network, gpn, nics, host, generation=gpu.generation), notes


def _training_candidates(
    req: PlanRequest, spec: ModelSpec, gpn: int, wide: bool = False, default_etp: int = 0
) -> list[dict[str, object]]:
    """Layouts to try for the parts the user left out, pipeline interleaving among them (a
    pipeline of few micro-batches loses a fifth of its step or more to the bubble without it).
    ``wide`` (search) adds ZeRO 0 and 2 and expert-parallel degrees; ``default_etp`` is the
    framework's expert TP where --ep is given without --etp (Framework.default_etp)."""
    tps = [req.tp] if req.tp else [t for t in (1, 2, 4, 8) if t <= gpn and spec.heads % t == 0]
    cp = req.cp or 1
    out: list[dict[str, object]] = []
    for tp in tps:
        if req.pp:
            pps = [req.pp]
        else:
            max_pp = req.gpus // (tp * cp)
            pps = [p for p in (1, 2, 4, 8, 16) if p <= max_pp and spec.layers >= p]
        for pp in pps:
            if req.gpus % (tp * pp * cp):
                continue
            dp = req.gpus // (tp * pp * cp)
            if req.dp and req.dp != dp:
                continue
            if req.zero is not None:
                zeros = [req.zero]
            elif dp == 1:
                zeros = [0]
            else:
                zeros = [0, 1, 2, 3] if wide else [1, 3]
            recs = [req.recompute] if req.recompute else ["none", "selective", "full"]
            mbs = [req.micro_batch] if req.micro_batch else [1, 2, 4, 8]
            if req.interleave:
                ils = [req.interleave]
            elif pp > 1:  # 1 always: pp need not divide the layers without interleaving
                ils = [1] + [v for v in (2, 4) if interleave_fits(spec.layers, pp * v)]
            else:
                ils = [1]
            # the experts split over the TP ranks (0: Megatron-Core's default, etp = tp), or
            # whole on each rank with the EP group folded over the TP ranks (1: MoE Parallel
            # Folding), both where a wide search chooses the expert parallelism; an --ep given
            # without --etp runs at the framework's default, unless only the other layout can
            # hold that many expert ranks
            if req.etp is not None:
                etps = [req.etp]
            elif req.ep and spec.is_moe and tp > 1:
                fits = ep_ranks(tp, cp, dp, default_etp) % req.ep == 0
                etps = [default_etp if fits else 1 - default_etp]
            elif wide and spec.is_moe and tp > 1:
                etps = [0, 1]
            else:
                etps = [0]
            for etp in etps:
                if req.ep:
                    eps = [req.ep]
                elif wide and spec.is_moe:
                    eps = [
                        e
                        for e in (1, 2, 4, 8, 16, 32, 64)
                        if spec.experts % e == 0 and ep_ranks(tp, cp, dp, etp) % e == 0
                    ]
                else:
                    eps = [1]
                # micro-batch innermost: evaluate_layouts stops at the first that does not fit
                for zero, rec, il, ep, mb in itertools.product(zeros, recs, ils, eps, mbs):
                    out.append(
                        {"tp": tp, "pp": pp, "dp": dp, "zero": zero, "recompute": rec,
                         "micro_batch": mb, "interleave": il, "ep": ep, "etp": etp}
                    )  # fmt: skip
    return out


def _base_config(
    req: PlanRequest, spec: ModelSpec, gpu: Gpu, gpn: int
) -> tuple[TrainConfig, list[str]]:
    notes: list[str] = []
    workload = "lora" if req.workload == "qlora" else req.workload
    base_bits = 4 if req.workload == "qlora" else req.lora_base_bits
    seq = req.seq_len or min(spec.max_positions, 4096)
    if req.seq_len is None:
        notes.append(f"sequence length: {seq}")
    precision = req.precision or "bf16"
    if precision == "fp8" and gpu.fp8_flops_per_s == 0:
        raise InputError(f"{gpu.title} has no FP8 tensor cores", "use --precision bf16")
    if precision not in ("bf16", "fp16", "fp8"):
        raise InputError(
            f"training precision {precision!r} is not supported", "use bf16, fp16 or fp8"
        )
    gb = req.global_batch or DEFAULT_GLOBAL_BATCH[workload]
    framework, efficiency, fw_note = training_framework(req, gpu)
    notes.append(fw_note)
    given = req.grad_reduce
    grad_reduce = framework.grad_reduce if given is None else given.strip().lower()
    if grad_reduce not in GRAD_REDUCE_DTYPES:
        raise InputError(
            f"gradient reduction in {grad_reduce!r} is not modelled",
            "use --grad-reduce bf16 or fp32",
        )
    if given is None:
        notes.append(
            f"gradients reduced in {grad_reduce.upper()} ({framework.title}'s default; "
            "--grad-reduce bf16 | fp32 to change it)"
        )
    given_dispatch = req.moe_dispatch
    moe_dispatch = (
        framework.moe_dispatch if given_dispatch is None else given_dispatch.strip().lower()
    )
    if moe_dispatch not in MOE_DISPATCH_MODES:
        raise InputError(
            f"MoE dispatch {moe_dispatch!r} is not modelled",
            "use --moe-dispatch all-to-all or node-dedup",
        )
    if spec.is_moe and given_dispatch is None:
        how = (
            "once per destination node" if moe_dispatch == "node-dedup" else "by a flat all-to-all"
        )
        notes.append(
            f"MoE tokens dispatched {how} across nodes ({framework.title}'s default; "
            "--moe-dispatch all-to-all | node-dedup to change it)"
        )
    default_attention = framework.attention_for(gpu.generation)
    attention = default_attention if req.attention is None else req.attention.strip().lower()
    if attention not in ATTENTION_KERNELS:
        raise InputError(
            f"attention kernel {attention!r} is not modelled",
            "use --attention flash (FlashAttention-2) or fused (cuDNN's)",
        )
    if attention != default_attention:
        notes.append(
            f"attention: {ATTENTION_NAMES[attention]} (--attention; {framework.title} runs "
            f"{ATTENTION_NAMES[default_attention]} on this GPU by default)"
        )
    split = (
        framework.pipeline_split
        if req.pipeline_split is None
        else req.pipeline_split.strip().lower()
    )
    if split not in PIPELINE_SPLITS:
        raise InputError(
            f"pipeline split {req.pipeline_split!r} is not modelled",
            "use --pipeline-split even (the same layers per stage) or balanced (by compute)",
        )
    if split != framework.pipeline_split:
        notes.append(
            f"pipeline split: {split} (--pipeline-split; {framework.title} splits "
            f"{framework.pipeline_split} by default)"
        )
    targets = (req.lora_targets or "all").strip().lower()
    if targets not in LORA_TARGETS:
        raise InputError(
            f"LoRA targets {req.lora_targets!r} are not modelled",
            "use --lora-targets all (every attention and MLP projection), attention "
            "(queries, keys, values and output), qkv, qv or mlp",
        )
    if req.lora_targets is not None and workload == "lora":
        notes.append(f"LoRA adapters on {LORA_TARGET_NAMES[targets]} (--lora-targets)")
    cfg = TrainConfig(
        gpus=req.gpus,
        gpus_per_node=gpn,
        cp=req.cp or 1,
        ep=req.ep or 1,
        seq_len=seq,
        global_batch=gb,
        interleave=req.interleave or 1,
        precision=precision,  # type: ignore[arg-type]
        workload=workload,  # type: ignore[arg-type]
        flash_attention=req.flash_attention,
        lora_rank=req.lora_rank,
        lora_base_bits=base_bits,
        lora_targets=targets,
        projections=framework.projections,
        sequence_parallel=bool(req.sequence_parallel),
        framework_efficiency=efficiency,
        attention_kernel=attention,
        elementwise=framework.elementwise,
        moe_dispatch=moe_dispatch,
        ep_overlap=req.ep_overlap,
        etp=req.etp or 0,
        grad_bytes=GRAD_REDUCE_DTYPES[grad_reduce],
        pipeline_split=split,
        recompute_reruns=framework.recompute_reruns,
        grad_buckets=framework.grad_buckets,
        zero3_calls=framework.zero3_calls,
        layer_host_s=framework.layer_host_ms / 1e3,
        dropout=req.dropout,
        overlap_dp=req.dp_overlap,
    )
    if req.dropout:
        notes.append(
            "dropout on (--dropout): its masks are stored for the backward"
            + ("" if req.flash_attention else ", the score matrix's among them")
        )
    if not req.dp_overlap:
        notes.append(
            "data-parallel gradients reduced after the backward (--no-dp-overlap), not behind it"
        )
    return cfg, notes


def kernel_level_config(cfg: TrainConfig) -> TrainConfig:
    """``cfg`` at the kernel level: NVIDIA's kernels (their attention, fused elementwise kernels,
    MoE dispatch and gradient reduction), every one at its achievable rate."""
    reference = find_framework(KERNEL_LEVEL_FRAMEWORK)
    return replace(
        cfg,
        framework_efficiency=1.0,
        attention_kernel=reference.attention,
        elementwise=reference.elementwise,
        moe_dispatch=reference.moe_dispatch,
        grad_bytes=GRAD_REDUCE_DTYPES[reference.grad_reduce],
        grad_buckets=reference.grad_buckets,
        zero3_calls=reference.zero3_calls,
        layer_host_s=reference.layer_host_ms / 1e3,
    )


def training_framework(req: PlanRequest, gpu: Gpu) -> tuple[Framework, float, str]:
    """The request's training framework (default: eager PyTorch), its share of the kernel-level
    step on ``gpu``, and the line that says where that share comes from."""
    framework = find_framework(req.framework or DEFAULT_FRAMEWORK)
    efficiency, generation = framework.efficiency_for(gpu.generation)
    told = (
        ""
        if req.framework
        else " (default; --framework pytorch-compile | megatron | nemo | jax | paxml for the others)"
    )
    taken = (
        ""
        if generation == gpu.generation
        else f", {generation}'s value: no published runs on {gpu.generation or 'this GPU'} (estimate)"
    )
    note = (
        f"framework: {framework.title}{told} reaches {efficiency:.2f} of the kernel-level step "
        f"on {generation}{taken} ({framework.efficiency_source})"
    )
    return framework, efficiency, note


def _setup(
    req: PlanRequest, network_name: str | None
) -> tuple[ModelSpec, ParamCounts, Gpu, Fabric, list[str]]:
    """What every plan starts from: the model, its counts, the GPU and the fabric."""
    gpu = find_gpu(req.gpu)
    fabric, notes = resolve_fabric(
        gpu,
        req.gpus,
        gpus_per_node=req.gpus_per_node,
        intra_link=req.intra_link,
        network_name=network_name,
        nics_per_node=req.nics_per_node,
        comparison_nics=req.comparison_nics,
    )
    notes.insert(0, f"model: {req.model.name} ({req.model.source})")
    if req.model.reading:
        serving_only = (
            "; that format is the served one: a training plan keeps its own --precision"
            if req.model.named_precision and req.workload != "inference"
            else ""
        )
        notes.insert(1, f"model name {req.model.reading}{serving_only}")
    if req.fabric_design is not None:  # `plan --fabric`: simulated network collectives
        from fabriclens.fabric.simulate import simulated_network
        from fabriclens.fabric.topology import FabricDesign

        assert isinstance(req.fabric_design, FabricDesign)
        fabric, note = simulated_network(req.fabric_design, fabric, req.gpus)
        notes.append(note)
    return req.model, count_params(req.model), gpu, fabric, [*req.extra_notes, *notes]


@dataclass
class Prepared:
    """What evaluating a request's layouts starts from."""

    spec: ModelSpec
    counts: ParamCounts
    gpu: Gpu
    fabric: Fabric
    base: TrainConfig
    notes: list[str]
    candidates: list[dict[str, object]]


@dataclass
class Evaluated:
    """Every layout tried for one network: the ones that fit, ranked by step time."""

    prep: Prepared
    ranked: list[tuple[TrainConfig, StepEstimate]]  # fitting layouts, fastest first (up to top)
    tried: int
    fallback: TrainConfig | None  # least memory, when nothing fits
    fitting: int = 0

    @property
    def spec(self) -> ModelSpec:
        """The model."""
        return self.prep.spec

    @property
    def counts(self) -> ParamCounts:
        """Its parameter counts."""
        return self.prep.counts

    @property
    def gpu(self) -> Gpu:
        """The GPU."""
        return self.prep.gpu

    @property
    def fabric(self) -> Fabric:
        """The fabric the layouts ran on."""
        return self.prep.fabric

    @property
    def base(self) -> TrainConfig:
        """The configuration every layout starts from."""
        return self.prep.base

    @property
    def notes(self) -> list[str]:
        """Defaults chosen, to report."""
        return self.prep.notes


def prepare_layouts(req: PlanRequest, network_name: str | None, wide: bool = False) -> Prepared:
    """The fabric, the base configuration and the candidate layouts (validated flags)."""
    spec, counts, gpu, fabric, notes = _setup(req, network_name)
    base, more = _base_config(req, spec, gpu, fabric.gpus_per_node)
    notes += more
    if req.tp:
        _check_tp(spec, req.tp)
    fixed = (req.tp or 1) * (req.pp or 1) * (req.cp or 1)
    if req.gpus % fixed:
        raise InputError(
            f"{req.gpus} GPUs are not divisible by tp x pp x cp = {fixed}",
            "change --gpus, --tp, --pp or --cp so that they divide",
        )
    framework = find_framework(req.framework or DEFAULT_FRAMEWORK)
    cands = _training_candidates(req, spec, fabric.gpus_per_node, wide, framework.default_etp)
    if not cands:
        raise InputError(
            f"no layout of {req.gpus} GPUs matches the given --tp/--pp/--dp/--cp",
            "check that tp x pp x cp x dp equals --gpus",
        )
    return Prepared(spec, counts, gpu, fabric, base, notes, cands)


def evaluate_layouts(
    req: PlanRequest,
    network_name: str | None,
    wide: bool = False,
    top: int | None = None,
    vectorised: bool | None = None,
) -> Evaluated:
    """Evaluate every layout the request leaves open (``wide``: also ZeRO 0/2, interleaving and
    expert parallelism, as `search` does) and return the ``top`` fastest that fit (all when
    None); raises InputError when no layout is valid.

    The vectorised model (model/batch.py, tested equal to the scalar one) ranks the candidates;
    the chosen ones are evaluated again one by one for their full ledgers. Context parallelism,
    and requests whose every candidate is invalid (to report the precise reason), take the
    one-by-one path. ``vectorised`` defaults to ``wide``: numpy's import costs more than one
    network's worth of one-by-one evaluation, so a single plan skips it."""
    prep = prepare_layouts(req, network_name, wide)
    ev = None
    if (wide if vectorised is None else vectorised) and (req.cp or 1) == 1:
        ev = _evaluate_vectorised(req, prep, top)
    ev = ev or _evaluate_one_by_one(req, prep, top)
    if ev.fitting == 0:
        # the quick candidates (TP within a node, power-of-two PP, no CP or EP) hold nothing:
        # look through every layout plan accepts, so plan, search and "fewest GPUs" agree
        found = first_fit(prep.spec, prep.counts, prep.gpu, prep.base, req)
        if found is not None:
            est = estimate_training_step(prep.spec, prep.counts, prep.gpu, prep.fabric, found)
            prep.notes.append(
                "only a layout outside the usual candidates fits (TP beyond a node, uneven PP, "
                "CP or EP): it is shown"
            )
            return Evaluated(prep, [(found, est)], ev.tried + 1, None, 1)
    return ev


def _evaluate_vectorised(req: PlanRequest, prep: Prepared, top: int | None) -> Evaluated | None:
    import numpy as np  # only here: a single plan does not pay for numpy's import

    from fabriclens.model.batch import REC, evaluate

    spec, base, cands = prep.spec, prep.base, prep.candidates
    n = len(cands)
    col = {k: np.array([c[k] for c in cands], dtype=float) for k in ("tp", "pp", "dp", "ep", "etp", "zero", "micro_batch", "interleave")}  # fmt: skip
    tp, pp, dp, ep, mb, il = (col[k] for k in ("tp", "pp", "dp", "ep", "micro_batch", "interleave"))
    etp = col["etp"]  # 0: the TP degree, 1: whole experts
    # as layout_config does: round the default global batch up to a multiple of dp x micro-batch
    if req.global_batch is None:
        gb = np.ceil(base.global_batch / (dp * mb)) * dp * mb
    else:
        gb = np.full(n, float(base.global_batch))
    sp = (
        np.full(n, float(base.sequence_parallel))
        if req.sequence_parallel is not None
        else (tp > 1).astype(float)
    )
    ranks = np.where(etp == 1, tp * dp, dp)  # plan.layouts.ep_ranks
    moe_ok = (ep == 1) | (spec.is_moe & (spec.experts % ep == 0) & (ranks % ep == 0))
    valid = (
        (spec.heads % tp == 0) & (pp <= spec.layers) & (tp * pp * dp == base.gpus) & moe_ok
        & ((il == 1) | ((pp > 1) & interleave_possible(spec.layers, pp * il)))
        & (gb % (dp * mb) == 0)
    )  # fmt: skip
    idx = np.flatnonzero(valid)
    if idx.size == 0:
        return None
    rec = np.array([REC[str(cands[i]["recompute"])] for i in idx])
    arrays = {"tp": tp[idx], "pp": pp[idx], "dp": dp[idx], "ep": ep[idx], "zero": col["zero"][idx], "rec": rec,
              "mb": mb[idx], "interleave": il[idx], "sp": sp[idx], "gb": gb[idx]}  # fmt: skip
    # the vectorised model takes the experts' TP degree for a whole call: one call per value
    out: dict[str, Any] = {}
    for e in np.unique(etp[idx]):
        sel = np.flatnonzero(etp[idx] == e)
        part = evaluate(spec, prep.counts, prep.gpu, prep.fabric, replace(base, etp=int(e)),
                        {k: v[sel] for k, v in arrays.items()})  # fmt: skip
        for k, v in part.items():
            out.setdefault(k, np.empty(idx.size, dtype=np.asarray(v).dtype))[sel] = v
    fit = np.flatnonzero(
        np.logical_or(out["fits"], n == 1)
    )  # a pinned layout shows even if too big
    order = fit[np.argsort(out["time_s"][fit], kind="stable")]
    if top is not None:
        order = order[:top]
    ranked = []
    for j in order:
        cfg = layout_config(req, base, cands[int(idx[j])])
        _validate_layout(spec, cfg)
        ranked.append((cfg, estimate_training_step(spec, prep.counts, prep.gpu, prep.fabric, cfg)))
    fallback = None
    if not ranked:
        fallback = layout_config(req, base, cands[int(idx[int(np.argmin(out["memory_bytes"]))])])
    return Evaluated(prep, ranked, int(idx.size), fallback, int(np.count_nonzero(out["fits"])))


def _evaluate_one_by_one(req: PlanRequest, prep: Prepared, top: int | None) -> Evaluated:
    spec, counts, gpu, fabric, base, cands = (
        prep.spec, prep.counts, prep.gpu, prep.fabric, prep.base, prep.candidates,
    )  # fmt: skip
    ranked: list[tuple[TrainConfig, StepEstimate]] = []
    smallest: tuple[float, TrainConfig] | None = None
    first_error: InputError | None = None
    too_big: tuple[object, ...] | None = None  # a layout whose smaller micro-batch did not fit
    for cand in cands:
        family = tuple(v for k, v in cand.items() if k != "micro_batch")
        if family == too_big:
            continue  # memory only grows with the micro-batch
        cfg = layout_config(req, base, cand)
        try:
            _validate_layout(spec, cfg)
        except InputError as exc:
            first_error = first_error or exc
            continue
        mem = training_memory(spec, counts, cfg, gpu.memory_bytes)
        if smallest is None or mem.total_per_gpu_bytes < smallest[0]:
            smallest = (mem.total_per_gpu_bytes, cfg)
        if not mem.fits and len(cands) > 1:
            too_big = family
            continue
        ranked.append((cfg, estimate_training_step(spec, counts, gpu, fabric, cfg, mem)))
    if not ranked and smallest is None:
        assert first_error is not None
        raise first_error
    ranked.sort(key=lambda ce: ce[1].time_s)
    fallback = smallest[1] if smallest is not None and not ranked else None
    fitting = sum(est.memory.fits for _, est in ranked)
    return Evaluated(prep, ranked[:top] if top else ranked, len(cands), fallback, fitting)


def _plan_training(
    req: PlanRequest, network_name: str | None, fewest: dict[object, int | None] | None = None
) -> Plan:
    """``fewest``: the fewest GPUs found so far for a layout base (memory alone decides it, so
    the networks of one request share it)."""
    # a mixture of experts tries every layout `search` does (expert parallelism decides its
    # speed: DeepSeek-V3 on 1,024 GPUs runs 2.2x slower without it), so both give one answer;
    # a dense model tries the quick set (ZeRO 0 and 2 move a dense step by a few per cent)
    moe = req.model.is_moe
    fw = find_framework(req.framework or DEFAULT_FRAMEWORK)
    ev = evaluate_layouts(
        req, network_name, wide=moe, top=1, vectorised=len(req.networks) > 1 or moe
    )
    spec, counts, gpu, fabric, notes = ev.spec, ev.counts, ev.gpu, ev.fabric, ev.notes
    if ev.ranked:
        cfg, est = ev.ranked[0]
    else:
        assert ev.fallback is not None
        cfg = ev.fallback
        est = estimate_training_step(spec, counts, gpu, fabric, cfg)
        notes.append("no layout fits in memory: showing the one that needs least")
    chosen = []
    for key, given in (
        ("tp", req.tp),
        ("pp", req.pp),
        ("zero", req.zero),
        ("recompute", req.recompute),
        ("micro_batch", req.micro_batch),
        ("ep", req.ep if moe else 1),
        ("interleave", req.interleave),
    ):
        if given is None and ev.tried > 1:
            chosen.append(f"{key.replace('_', '-')} {getattr(cfg, key)}")
    if moe and req.etp is None and cfg.tp > 1 and cfg.ep > 1:
        if req.ep is None and ev.tried > 1:
            chosen.append(f"etp {cfg.expert_tp}")
        elif req.ep is not None:
            default = fw.default_etp or cfg.tp
            how = (
                f"split over the {cfg.tp} TP ranks (--etp {cfg.tp})"
                if cfg.expert_tp == cfg.tp
                else "each whole on its rank, MoE Parallel Folding (--etp 1)"
            )
            why = (
                f"{fw.title}'s default"
                if cfg.expert_tp == default
                else f"--ep {cfg.ep} does not fit {fw.title}'s default layout: expert ranks are "
                f"carved from {'tp x dp x cp' if default == 1 else 'dp x cp'}"
            )
            notes.append(f"experts {how}: {why} (--etp 1 or --etp {cfg.tp} to choose)")
    chunks = cfg.pp * cfg.interleave
    if cfg.interleave > 1 and spec.layers % chunks and interleave_fits(spec.layers, chunks):
        notes.append(
            f"pipeline: {spec.layers} layers in pp x interleave = {chunks} chunks counts the "
            "embedding and the loss as a layer each, as Megatron-LM does with "
            "--account-for-embedding-in-pipeline-split and --account-for-loss-in-pipeline-split "
            "(the first and last stages one layer short)"
        )
    elif cfg.interleave > 1 and spec.layers % chunks:
        busiest = max(stage_layer_counts(spec.layers, cfg.pp))
        notes.append(
            f"pipeline: {spec.layers} layers do not split evenly into pp x interleave = {chunks} "
            "chunks: laid out unevenly, as Megatron-Core's --pipeline-model-parallel-layout "
            f"does (Megatron-Bridge's DeepSeek-V3 recipes set one); the busiest stage holds "
            f"{busiest} layers and sets the pace"
        )
    if chosen:
        tried = (
            "the layouts `fabriclens search` tries"
            if moe
            else "ZeRO 1 or 3; `fabriclens search` also tries ZeRO 0 and 2"
        )
        notes.append(f"layout chosen as the fastest that fits ({tried}): " + ", ".join(chosen))
    if req.global_batch is None:
        notes.append(
            f"global batch: {cfg.global_batch} sequences ({format_number(cfg.global_batch * cfg.seq_len / 1e6, 2)}M tokens)"
        )
    gpn = req.gpus_per_node or gpu.max_gpus_per_node
    fewest = {} if fewest is None else fewest
    if (ev.base, gpn) not in fewest:
        fewest[ev.base, gpn] = min_gpus_training(spec, counts, gpu, ev.base, gpn, req)
    min_gpus = fewest[ev.base, gpn]
    kernel_level = (
        estimate_training_step(spec, counts, gpu, fabric, kernel_level_config(cfg), est.memory)
        if kernel_level_config(cfg) != cfg
        else est
    )
    return Plan(
        req,
        spec,
        counts,
        gpu,
        fabric.intra,
        fabric.network,
        fabric.nics_per_node,
        fabric.gpus_per_node,
        req.workload,
        cfg,
        est,
        None,
        cfg.tp,
        cfg.pp,
        tuple(notes),
        min_gpus,
        fw,
        kernel_level,
    )


TRAINING_GPUS = 8  # a training plan's GPUs when --gpus is not given: one 8-GPU node


def default_training_gpus(gpu: Gpu) -> int:
    """The GPUs a training plan (and search) assumes without --gpus: one 8-GPU node, or the one
    GPU of a one-GPU machine (a Mac, a DGX Spark), not eight such machines over a default
    network."""
    return 1 if gpu.max_gpus_per_node == 1 else TRAINING_GPUS


def default_engine(gpu: Gpu, spec: ModelSpec | None = None) -> str:
    """The serving engine a plan assumes when none is named: vLLM; Ollama on Apple GPUs, where
    vLLM, SGLang and TensorRT-LLM do not run (NVIDIA's unified-memory GB10 runs them all), and
    for a model named by its Ollama tag (llama3.1:8b), which is what Ollama pulls and serves."""
    ollama = gpu.generation == "apple" or (spec is not None and spec.named_by == OLLAMA_TAG)
    return "ollama" if ollama else "vllm"


def check_serving_precision(precision: str) -> None:
    """Refuse weights in a format the serving model has no byte size for."""
    if precision not in WEIGHT_BYTES:
        raise InputError(
            f"inference precision {precision!r} is not supported",
            "use bf16, fp8, int8, int4 or fp4 (NVFP4)",
        )


def serving_kv_precision(precision: str, kv_precision: str | None) -> str:
    """The KV cache's format: the one asked for, else fp8 beside fp8 weights, else bf16."""
    kv = kv_precision or ("fp8" if precision == "fp8" else "bf16")
    if kv not in KV_PRECISIONS:
        raise InputError(
            f"KV cache precision {kv!r} is not supported", f"use {', '.join(KV_PRECISIONS)}"
        )
    return kv


def default_host(gpu: Gpu) -> str:
    """The host memory a plan assumes beside a GPU: a desktop's two DDR5 channels beside a
    GeForce card, a server socket's eight beside any other."""
    return "desktop-ddr5" if "GeForce" in gpu.title else "server-ddr5"


# Slower than this is no host memory (a Raspberry Pi 5's reaches ~10 GB/s): a unit mistaken
MIN_HOST_MEMORY_BYTES_PER_S = 1e8


def host_or_rate(name: str) -> Host:
    """A catalog host, or a read rate the user measured ("60GB/s"), taken as reached."""
    if not re.match(r"\s*[0-9.]", name):
        return find_host(name)
    rate = parse_bandwidth(name)
    if rate <= 0:
        raise InputError(
            f"--host-memory {name} is not a positive rate", "give a rate such as 60GB/s"
        )
    if rate < MIN_HOST_MEMORY_BYTES_PER_S:
        raise InputError(
            f"--host-memory {name} is slower than any host memory (under 0.1 GB/s)",
            "give the rate the CPU reads its RAM at, e.g. 60GB/s",
        )
    return Host(name=name, title=f"{format_number(rate / 1e9)} GB/s, given", memory_bw_bytes_per_s=rate,
                efficiency=1.0, efficiency_source="a rate given on the command line, taken as reached",
                source="the command line")  # fmt: skip


def _check_gpu_layers(
    n: int, engine: Engine, gpu: Gpu, tp: int, layers: int, fits: bool, notes: list[str]
) -> None:
    """--gpu-layers: llama.cpp's -ngl (Ollama's num_gpu), for the engines that keep the other
    layers in host memory; one line and exit status 2 where it cannot apply."""
    if n < 0:
        raise InputError(
            f"--gpu-layers must be 0 or more (got {n})",
            "give the decoder layers to keep on the GPUs, as llama.cpp's -ngl counts them",
        )
    if not engine.host_offload:
        raise InputError(
            f"--gpu-layers: {engine.title} keeps every layer on the GPUs",
            "use --engine ollama or --engine llama.cpp, which keep the other layers in host memory",
        )
    if gpu.unified_memory:
        raise InputError(
            f"--gpu-layers: {gpu.name} shares one memory with the CPU, so no layer is read over a "
            "host link",
            "leave out --gpu-layers (the plan reads every layer from the shared memory)",
        )
    if tp > 1:
        raise InputError(
            "--gpu-layers: layers split by tensor parallelism stay on the GPUs",
            "use --tp 1 (llama.cpp and Ollama split the layers over GPUs, --pp)",
        )
    if n > layers:
        notes.append(
            f"--gpu-layers {n}: all {layers} decoder layers and the output layer on the GPUs"
            + ("" if fits else ", more than they hold (the memory table)")
        )


def host_ram_size(text: str) -> int:
    """--host-ram: a size with its unit (a bare number would be read as bytes)."""
    if text.strip().isdigit():
        raise InputError(
            f"--host-ram {text}: give the unit", f"e.g. --host-ram {text.strip()}GB or {text}GiB"
        )
    size = parse_size(text)
    if size <= 0:
        raise InputError(f"--host-ram {text} is not a memory size", "e.g. --host-ram 64GB")
    return size


def check_serving_ep(spec: ModelSpec, ep: int | None, tp: int) -> int:
    """The expert-parallel degree of a serving plan: inside the tensor-parallel group (SGLang's
    --ep, vLLM's --enable-expert-parallel), so it must divide --tp and the expert count; 1 when
    not given."""
    if ep in (None, 1):
        return 1
    assert ep is not None
    if not spec.is_moe:
        raise InputError(
            f"--ep {ep}: {spec.name} has no experts to split (not a mixture-of-experts model)",
            "drop --ep",
        )
    if tp % ep or spec.experts % ep:
        raise InputError(
            f"--ep {ep} must divide --tp {tp} and the {spec.experts} experts: serving splits "
            "the experts over ranks of the tensor-parallel group",
            f"use an --ep that divides both (--ep {math.gcd(tp, spec.experts)} at --tp {tp})",
        )
    return ep


def check_serving_dp(dp: int | None, tp: int) -> int:
    """The data-parallel attention groups of a serving replica: inside the tensor-parallel group
    (SGLang's --tp 8 --dp 8 --enable-dp-attention), so it must divide --tp; 1 when not given."""
    if dp is None:
        return 1
    if tp % dp:
        raise InputError(
            f"--dp {dp} must divide --tp {tp}: serving runs data-parallel attention inside the "
            "tensor-parallel group (SGLang's --tp 8 --dp 8 --enable-dp-attention is --tp 8 --dp 8)",
            f"use a --dp that divides --tp {tp}",
        )
    return dp


# engines whose speculative decoding runs a chained draft the way model/inference.py prices it
SPECULATIVE_ENGINES = ("vllm", "sglang", "trtllm")
# engines whose drafts may branch into a tree (SGLang's EAGLE --speculative-eagle-topk)
TREE_ENGINES = ("sglang",)
MAX_SPEC_TOKENS = 16
MAX_DRAFT_TOPK = 16


@dataclass(frozen=True)
class Speculation:
    """Speculative decoding as a serving plan runs it (no drafts: ``tokens`` 0)."""

    tokens: int = 0  # draft passes a step (SGLang: --speculative-num-steps)
    accept_length: float = 1.0
    draft: str = "mtp"
    topk: int = 1  # candidates kept a pass: 1 a chain, more a tree
    verify_tokens: int = 0  # positions a sequence verified a step (0: tokens + 1)
    note: str | None = None  # names a default draft, or says how a draft was taken

    def options(self) -> dict[str, Any]:
        """estimate_inference's speculative arguments."""
        return {"spec_tokens": self.tokens, "accept_length": self.accept_length,
                "draft": self.draft, "draft_topk": self.topk,
                "verify_tokens": self.verify_tokens}  # fmt: skip


def _check_tree(
    engine_name: str, steps: int, topk: int | None, tokens: int | None
) -> tuple[int, int]:
    """(top-k, verified positions) of the drafts: a chain without --draft-topk, else a tree
    that SGLang verifies at --draft-tokens positions a sequence."""
    if topk is None:
        if tokens is not None and tokens != steps + 1:
            raise InputError(
                f"--draft-tokens {tokens}: a chain of {steps} drafts verifies {steps + 1} "
                "positions a sequence; more need a tree of drafts",
                "add --draft-topk K (SGLang's --speculative-eagle-topk), or drop --draft-tokens",
            )
        return 1, steps + 1
    if not 1 <= topk <= MAX_DRAFT_TOPK:
        raise InputError(
            f"--draft-topk must be between 1 and {MAX_DRAFT_TOPK} (got {topk})",
            "give the candidates a draft pass keeps, e.g. --draft-topk 4 (SGLang's default)",
        )
    if topk == 1:
        return _check_tree(engine_name, steps, None, tokens)
    if engine_name not in TREE_ENGINES:
        raise InputError(
            f"--draft-topk {topk}: a tree of drafts is modelled as SGLang's EAGLE runs it, not "
            f"for {engine_name}",
            "give --engine sglang, or drop --draft-topk for a chain of drafts",
        )
    most = 1 + topk * steps
    if tokens is None:
        raise InputError(
            f"--draft-topk {topk} needs --draft-tokens: the positions a sequence the model "
            "verifies a step (SGLang's --speculative-num-draft-tokens)",
            f"give --draft-tokens N, from 2 to {most} (SGLang's default is 8)",
        )
    if not 2 <= tokens <= most:
        raise InputError(
            f"--draft-tokens {tokens} must be between 2 and {most} (the root and the "
            f"{topk} x {steps} candidates {steps} passes of top-{topk} propose)",
            "give SGLang's --speculative-num-draft-tokens",
        )
    return topk, tokens


def check_speculative(
    spec: ModelSpec,
    engine_name: str,
    spec_tokens: int | None,
    accept_length: float | None,
    draft: str | None,
    pp: int,
    draft_topk: int | None = None,
    draft_tokens: int | None = None,
) -> Speculation:
    """Speculative decoding's draft passes, accept length, draft kind and tree for a serving
    plan; no drafts (``Speculation()``) without --spec-tokens."""
    if spec_tokens is None:
        given = next(
            (flag for flag, value in (("--accept-length", accept_length), ("--draft", draft),
                                      ("--draft-topk", draft_topk), ("--draft-tokens", draft_tokens))
             if value is not None),
            None,
        )  # fmt: skip
        if given:
            raise InputError(
                f"{given} describes speculative decoding, which needs --spec-tokens",
                "add --spec-tokens N (the draft tokens proposed a step), or drop " + given,
            )
        return Speculation()
    if not 1 <= spec_tokens <= MAX_SPEC_TOKENS:
        raise InputError(
            f"--spec-tokens must be between 1 and {MAX_SPEC_TOKENS} (got {spec_tokens})",
            "give the draft tokens proposed a step, e.g. --spec-tokens 3",
        )
    if engine_name not in SPECULATIVE_ENGINES:
        raise InputError(
            f"--spec-tokens: speculative decoding is modelled for vLLM, SGLang and TensorRT-LLM, "
            f"not {engine_name}",
            "choose --engine vllm, sglang or trtllm, or drop --spec-tokens",
        )
    if accept_length is None:
        raise InputError(
            f"--spec-tokens {spec_tokens} needs --accept-length: the tokens a step emits depend "
            "on the model, the draft and the text, so the plan does not guess them",
            "give the accept length your engine reports (SGLang's bench_serving prints "
            "'Accept length: 2.46'; vLLM's spec-decode metrics the mean acceptance length)",
        )
    if not (math.isfinite(accept_length) and 1.0 <= accept_length <= spec_tokens + 1):
        raise InputError(
            f"--accept-length {accept_length:g} must be between 1 (every draft rejected) and "
            f"{spec_tokens + 1} (all {spec_tokens} accepted, plus the model's own token)",
            "give the mean tokens a step emits, as the engine reports it",
        )
    if pp > 1:
        raise InputError(
            "--spec-tokens with pipeline stages is not modelled (SGLang refuses the two together)",
            "drop --pp, or drop --spec-tokens",
        )
    topk, verify = _check_tree(engine_name, spec_tokens, draft_topk, draft_tokens)
    if accept_length > verify:
        raise InputError(
            f"--accept-length {accept_length:g} is more than the {verify} positions a sequence "
            "the model verifies a step (--draft-tokens)",
            "give the mean tokens a step emits, at most --draft-tokens",
        )
    chosen = Speculation(spec_tokens, accept_length, draft or default_draft(spec), topk, verify)
    if draft is None:
        what = (
            "the model's own next-token (MTP) layer"
            if chosen.draft == "mtp"
            else "a one-layer EAGLE-3 head"
        )
        return replace(chosen, note=f"draft: {chosen.draft}, {what} (--draft to change it)")
    if draft not in DRAFT_KINDS:
        raise InputError(
            f"unknown --draft {draft!r}",
            f"choose one of {', '.join(DRAFT_KINDS)}",
        )
    if draft == "mtp" and default_draft(spec) != "mtp":
        return replace(
            chosen,
            note=(
                f"draft: mtp, but {spec.name} is not released with a next-token (MTP) layer: planned as "
                "one more decoder layer of its kind, as a trained one would be"
            ),
        )
    return chosen


def _plan_inference(req: PlanRequest, network_name: str | None) -> Plan:
    spec, counts, gpu, fabric, notes = _setup(req, network_name)
    engine = find_engine(req.engine)
    # the same weights `capacity` serves: the model's release format, else the engine's default
    precision = req.precision or spec.release_precision or engine.default_precision
    if req.precision is None and spec.release_precision:
        origin = (
            "as the model name gives them"
            if spec.named_precision
            else f"the format {spec.name} is released in"
        )
        notes.append(f"weights: {precision}, {origin} (--precision to change it)")
    elif req.precision is None and precision != "bf16":
        notes.append(f"weights: {precision}, {engine.title}'s default (--precision to change it)")
    check_serving_precision(precision)
    if precision == "fp8" and gpu.fp8_flops_per_s == 0:
        notes.append(f"{gpu.title} has no FP8 tensor cores: fp8 weights, bf16 compute")
    if precision == "fp4" and gpu.fp4_flops_per_s == 0:
        notes.append(f"{gpu.title} has no FP4 tensor cores: NVFP4 weights, bf16 compute")
    kv_precision = serving_kv_precision(precision, req.kv_precision)
    if req.cp not in (None, 1):
        # a serving plan is one tensor/pipeline-parallel replica: it would be ignored
        raise InputError(
            f"--cp {req.cp} is not modelled for serving: an inference plan is one replica split "
            "by tensor and pipeline parallelism (and inside the tensor-parallel group by expert "
            "parallelism, --ep, and data-parallel attention, --dp)",
            "drop --cp, and plan replicas with `fabriclens capacity`",
        )
    for name, value in (
        ("batch", req.batch),
        ("prompt-tokens", req.prompt_tokens),
        ("output-tokens", req.output_tokens),
    ):
        if value < 1:
            raise InputError(
                f"--{name} must be at least 1 (got {value})", f"give a positive --{name}"
            )
    if req.pp is not None:
        pp = req.pp
    elif req.tp is None and engine.multi_gpu == "layers" and req.gpus > 1:
        pp = req.gpus
        notes.append(
            f"pp {pp}: {engine.title} splits the layers over the {req.gpus} GPUs, its default "
            "(set --tp/--pp)"
        )
    else:
        pp = 1
    if req.tp is not None:
        tp = req.tp
    else:
        tp = req.gpus // pp
        if tp > 1:
            notes.append(f"tp {tp}: one model replica across all {req.gpus} GPUs (set --tp/--pp)")
    if tp * pp != req.gpus:
        raise InputError(
            f"inference uses one replica: tp x pp = {tp * pp} must equal --gpus {req.gpus}",
            "set --gpus to tp x pp (plan replicas with `fabriclens capacity`)",
        )
    _check_tp(spec, tp)
    ep = check_serving_ep(spec, req.ep, tp)
    dp = check_serving_dp(req.dp, tp)
    speculation = check_speculative(
        spec, engine.name, req.spec_tokens, req.accept_length, req.draft, pp,
        req.draft_topk, req.draft_tokens,
    )  # fmt: skip
    if speculation.note:
        notes.append(speculation.note)
    wbytes = engine.bytes_per_weight(precision)  # the engine's format (GGUF Q4_K_M: 4.89 bits)
    serve = partial(
        estimate_inference,
        spec,
        counts,
        gpu,
        fabric,
        engine,
        tp=tp,
        pp=pp,
        batch=req.batch,
        prompt_tokens=req.prompt_tokens,
        output_tokens=req.output_tokens,
        ep=ep,
        dp=dp,
        precision=precision,
        kv_precision=kv_precision,
        weight_bytes_per_param=wbytes,
    )
    est = serve(**speculation.options())
    if speculation.tokens:  # the same batch without the draft, beside it
        est = replace(est, plain_decode_step_s=serve().decode_step_s)
    # under continuous batching each slot is refilled as its request ends: the newcomers'
    # prompts run on the same GPUs (serving_tpot_s, as `capacity` sizes a replica by it)
    one = serve(**speculation.options(), batch=1) if req.batch > 1 else est
    est = replace(
        est,
        tpot_under_load_s=serving_tpot_s(
            est, one, req.batch, req.output_tokens, engine.prefill_mixed
        ),
    )
    offload = host = None
    host_ram = host_ram_size(req.host_ram) if req.host_ram is not None else None
    split = req.gpu_layers is not None and req.gpu_layers <= spec.layers
    if req.gpu_layers is not None:
        _check_gpu_layers(req.gpu_layers, engine, gpu, tp, spec.layers, est.memory.fits, notes)
    # -ngl above the layer count keeps every layer on the GPUs: the plan without host memory
    wants_host = engine.host_offload and (split or (req.gpu_layers is None and not est.memory.fits))
    if req.host_memory is not None or wants_host:
        host = host_or_rate(req.host_memory or default_host(gpu))
    if wants_host and tp == 1 and not gpu.unified_memory:
        assert host is not None
        if req.host_memory is None:
            notes.append(f"host memory: {host.title} (--host-memory to set yours)")
        placement = (
            "whole decoder layers on the GPUs while they fit beside the GPU runtime's context, the "
            "engine's reserve and one micro-batch's buffers, the last ones first, the output "
            "layer only once all are there"
            if req.gpu_layers is None
            else f"the last {min(req.gpu_layers, spec.layers)} decoder layers on the GPUs "
            "(--gpu-layers, placed as llama.cpp's -ngl and Ollama's num_gpu place them)"
        )
        notes.append(
            f"offload ({engine.title}): {placement}; the rest read at "
            f"{host.memory_bw_bytes_per_s / 1e9:.3g} GB/s x {host.efficiency:.2f} "
            f"({host.efficiency_source}); prompts of {OFFLOAD_MIN_BATCH}+ tokens copy the host "
            f"layers' weights to the GPU once per {UBATCH_TOKENS}-token micro-batch at "
            f"{H2D_EFFICIENCY:.0%} of the host link ({engine.host_offload_source})"
        )
        offload = estimate_offload(
            spec,
            counts,
            gpu,
            engine,
            host,
            gpus=pp,
            batch=req.batch,
            prompt_tokens=req.prompt_tokens,
            output_tokens=req.output_tokens,
            weight_bytes_per_param=wbytes,
            kv_bytes_per_value=WEIGHT_BYTES[kv_precision],
            host_link_bytes_per_s=find_link(gpu.host_link).bw_bytes_per_s,
            gpu_layers=req.gpu_layers,
        )
    else:
        why = (
            f"{engine.title} does not keep layers in host memory"
            if not engine.host_offload
            else "every layer is on the GPUs (--gpu-layers)"
            if req.gpu_layers is not None and not split
            else "the model fits in the GPUs"
            if est.memory.fits
            else "Apple GPUs share one memory with the CPU"
            if gpu.unified_memory
            else "layers split by tensor parallelism stay on the GPUs"
        )
        notes += [f"{flag} is not used: {why}" for flag, value in
                  (("--host-memory", req.host_memory), ("--host-ram", req.host_ram)) if value]  # fmt: skip
    return Plan(
        req,
        spec,
        counts,
        gpu,
        fabric.intra,
        fabric.network,
        fabric.nics_per_node,
        fabric.gpus_per_node,
        "inference",
        None,
        None,
        est,
        tp,
        pp,
        tuple(notes),
        min_gpus_inference(
            spec,
            counts,
            gpu,
            batch=req.batch,
            context_tokens=req.prompt_tokens + req.output_tokens,
            precision=precision,
            kv_bytes_per_value=WEIGHT_BYTES[kv_precision],
            state_bytes_per_value=engine.state_bytes,
        ),
        offload=offload,
        host=host,
        host_ram_bytes=host_ram if offload is not None else None,
    )


def make_plans(req: PlanRequest) -> list[Plan]:
    """Evaluate the request once per network (or once if none is given)."""
    if req.workload not in WORKLOADS:
        raise InputError(f"unknown workload {req.workload!r}", f"use one of {', '.join(WORKLOADS)}")
    if req.gpus < 1:
        raise InputError(f"--gpus must be at least 1 (got {req.gpus})", "give a positive --gpus")
    for name in (
        "gpus_per_node",
        "nics_per_node",
        "tp",
        "pp",
        "dp",
        "cp",
        "ep",
        "etp",
        "seq_len",
        "global_batch",
        "micro_batch",
        "interleave",
    ):
        _check_positive(name.replace("_", "-"), getattr(req, name))
    if req.zero is not None and req.zero not in (0, 1, 2, 3):
        raise InputError(f"--zero {req.zero} is not a ZeRO stage", "use 0, 1, 2 or 3")
    if req.recompute is not None and req.recompute not in ("none", "selective", "op", "full"):
        raise InputError(
            f"--recompute {req.recompute!r} is unknown", "use none, selective, op or full"
        )
    if req.framework is not None:
        find_framework(req.framework)  # an unknown name fails here, inference plans too
    if req.etp is not None:
        if not req.model.is_moe:
            raise InputError(
                f"--etp {req.etp}: {req.model.name} is not a mixture of experts",
                "drop --etp (it sets the tensor parallelism inside the experts)",
            )
        if req.etp != 1 and req.etp != req.tp:
            raise InputError(
                f"--etp {req.etp} is neither 1 nor the tensor-parallel degree"
                + (f" ({req.tp})" if req.tp else " (not given)"),
                "give --etp 1 (experts whole on each rank) or --tp N --etp N",
            )
    networks: tuple[str | None, ...] = req.networks or (None,)
    req = like_for_like(req, networks)
    if req.workload == "inference":
        req = _one_gpu_when_it_fits(_fewest_inference_gpus(req, networks[0]), networks[0])
    if req.workload == "inference":
        return [_plan_inference(req, net) for net in networks]
    fewest: dict[object, int | None] = {}  # the same for every network: memory alone decides
    return [_plan_training(req, net, fewest) for net in networks]


def _one_gpu_when_it_fits(req: PlanRequest, network_name: str | None) -> PlanRequest:
    """With several GPUs and no --tp/--pp, an engine that loads a model onto one GPU when it
    fits there (Ollama) serves it from one GPU; the others stay free (for other models)."""
    if req.gpus < 2 or req.tp is not None or req.pp is not None or req.gpu_layers is not None:
        return req
    engine = find_engine(req.engine)
    # by its own name only: the aliases (llama.cpp) share Ollama's other defaults, not its
    # scheduler; llama.cpp's server splits the layers over every GPU it sees (--split-mode layer)
    named = split_release(req.engine or "")[0].lower()  # a release (@0.5.7) aside
    if not engine.one_gpu_when_fits or named != engine.name:
        return req
    trial = _fits_on(req, 1, network_name)
    if trial is None:
        return req
    note = (
        f"GPUs: 1 of the {req.gpus}: {engine.title} loads a model that fits on one GPU onto that "
        f"GPU alone, the others stay free (its FAQ; OLLAMA_SCHED_SPREAD=1 spreads it over all "
        f"{req.gpus}: then give --pp {req.gpus})"
    )
    return replace(trial, extra_notes=(*req.extra_notes, note), gpus_given_count=req.gpus)


def _fewest_inference_gpus(req: PlanRequest, network_name: str | None) -> PlanRequest:
    """Without --gpus (and --tp/--pp), an inference plan serves on the fewest GPUs, 1, 2, 4 ...,
    whose plan fits this batch in memory (the same evaluation `plan` shows), else keeps ``gpus``:
    one replica of an 8B model does not spread over 8 cards because the flag has a default."""
    if req.gpus_given or req.tp is not None or req.pp is not None:
        return req
    n = 1
    while n <= max(req.gpus, 8 * (req.gpus_per_node or 8)):
        trial = _fits_on(req, n, network_name)
        if trial is not None:
            note = f"GPUs: {n}, the fewest that hold the weights and this batch (set --gpus)"
            return replace(trial, extra_notes=(*req.extra_notes, note))
        n *= 2
    return req


def _fits_on(req: PlanRequest, gpus: int, network_name: str | None) -> PlanRequest | None:
    """``req`` on ``gpus`` GPUs when its inference plan fits their memory (the evaluation `plan`
    shows), else None, also for a count the layout cannot take (heads not divisible by it)."""
    trial = replace(req, gpus=gpus, gpus_given=True)
    try:
        plan = _plan_inference(trial, network_name)
    except InputError:
        return None
    return trial if plan.inference is not None and plan.inference.memory.fits else None
