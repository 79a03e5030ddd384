"""Catalog entry schemas: frozen dataclasses that check their own fields.

Every entry carries ``source``; estimates say so. The checks run when an entry is built (from
the TOML files, a Hugging Face config.json or command-line flags) and raise ``ValueError`` with
the field's name; the loaders turn that into a clear message.

(Plain dataclasses rather than pydantic models: building pydantic classes costs every command
~0.1-0.2 s of start-up, against a 0.5 s budget for a whole `fabriclens plan`.)
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Literal


def _check(ok: bool, field: str, message: str) -> None:
    if not ok:
        raise ValueError(f"{field}: {message}")


def _numbers(
    entry: object, fields: tuple[str, ...], ok: Callable[[float], bool], bound: str
) -> None:
    """Each field is a finite number (not a bool) for which ``ok`` holds; ``bound`` says what ok
    means. TOML spells inf and nan, and no catalog value is either."""
    for name in fields:
        value = getattr(entry, name)
        _check(
            isinstance(value, int | float) and not isinstance(value, bool),
            name,
            f"must be a number, not {value!r}",
        )
        _check(math.isfinite(value), name, f"must be a finite number, not {value!r}")
        _check(ok(value), name, f"must be {bound}, not {value!r}")


def _positive(entry: object, *fields: str) -> None:
    _numbers(entry, fields, lambda v: v > 0, "greater than 0")


def _non_negative(entry: object, *fields: str) -> None:
    _numbers(entry, fields, lambda v: v >= 0, "0 or more")


def _fraction(entry: object, *fields: str) -> None:
    for name in fields:
        value = getattr(entry, name)
        _check(
            isinstance(value, int | float) and 0 < value <= 1,
            name,
            f"must be in (0, 1], not {value!r}",
        )


def _one_of(entry: object, name: str, allowed: tuple[str, ...]) -> None:
    value = getattr(entry, name)
    _check(value in allowed, name, f"must be one of {', '.join(allowed)}, not {value!r}")


def _integers(entry: object, *fields: str) -> None:
    for name in fields:
        value = getattr(entry, name)
        _check(
            isinstance(value, int) and not isinstance(value, bool),
            name,
            f"must be a whole number, not {value!r}",
        )


@dataclass(frozen=True, kw_only=True)
class _Entry:
    name: str  # catalog id, lower case, used on the command line
    aliases: tuple[str, ...] = ()
    title: str = ""
    source: str  # paper, vendor spec or measured run
    notes: str = ""

    def __post_init__(self) -> None:
        _check(isinstance(self.name, str) and bool(self.name), "name", "must be a non-empty string")
        _check(
            isinstance(self.source, str) and len(self.source) >= 3,
            "source",
            "must name where the values come from",
        )
        object.__setattr__(self, "aliases", tuple(self.aliases))


@dataclass(frozen=True, kw_only=True)
class Gpu(_Entry):
    """One accelerator SKU. Peaks are dense (no structured sparsity)."""

    memory_bytes: int
    hbm_bw_bytes_per_s: float
    bf16_flops_per_s: float
    fp16_flops_per_s: float
    fp8_flops_per_s: float  # 0 where the GPU has no FP8 tensor cores
    fp4_flops_per_s: float = 0.0  # dense FP4 (NVFP4) tensor-core peak; 0 where it has none
    matmul_efficiency: float  # best achievable GEMM / peak
    matmul_efficiency_source: str
    memory_bw_efficiency: float  # achievable streaming / peak
    # the rate one token's decode GEMVs stream their weights at, over peak, where it was measured
    # (catalog/data/decode_gemv.csv; 0: memory_bw_efficiency)
    decode_bw_efficiency: float = 0.0
    decode_bw_efficiency_source: str = ""
    intra_link: str  # default intra-node link id
    host_link: str = "pcie4-x16"  # PCIe link between host memory and the GPU
    max_gpus_per_node: int = 8
    power_w: float = 0
    # FlashAttention's rate as a fraction of the dense BF16 peak (attention runs in BF16 even in
    # FP8 training: Transformer Engine casts only the linear layers by default), FLOPs counted as
    # its benchmarks count them (the backward 2.5x the forward); the backward's own rate where it
    # is published apart (0: the same)
    attention_efficiency: float = 0.55
    attention_efficiency_source: str = (
        "FlashAttention-2 paper (Dao 2023): forward + backward at 50-70% of A100 peak"
    )
    attention_bwd_efficiency: float = 0.0
    attention_bwd_efficiency_source: str = ""
    # the fused attention kernel of the vendor stacks (cuDNN through Transformer Engine and XLA on
    # NVIDIA, AITER through Transformer Engine on AMD)
    # where it is published apart from FlashAttention-2 (0: the FlashAttention-2 rates)
    fused_attention_efficiency: float = 0.0
    fused_attention_bwd_efficiency: float = 0.0
    fused_attention_efficiency_source: str = ""
    fp8_matmul_efficiency: float = 0.0  # best achievable FP8 GEMM / FP8 peak; 0: as BF16's
    fp8_matmul_efficiency_source: str = ""
    # architecture generation (GENERATIONS): what a training framework's efficiency is keyed by;
    # "" (a user's GPU that does not say) takes the newest calibrated generation's
    generation: str = ""
    # the measured GEMM-by-shape table of its architecture (catalog/gemm_shapes.py); "": every
    # GEMM shape at matmul_efficiency
    gemm_shapes: str = ""
    # memory sizes the part is sold with (GB): a name may end in -<size>gb to pick one
    # (m2-max-64gb); memory_bytes is then that size's (the entry's own: its smallest)
    memory_options_gb: tuple[int, ...] = ()
    # unified memory shared with the CPU: the GPU may use only part of it (unified_gpu_share)
    unified_memory: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "memory_options_gb", tuple(self.memory_options_gb))
        for size in self.memory_options_gb:
            _check(isinstance(size, int) and not isinstance(size, bool) and size > 0,
                   "memory_options_gb", f"sizes must be whole numbers of GB, not {size!r}")  # fmt: skip
        if self.memory_options_gb:  # the entry itself is its smallest size
            smallest = sized_memory_bytes(self, self.memory_options_gb[0])
            _check(self.memory_bytes == smallest, "memory_bytes",
                   f"must be its smallest size's, {smallest} (memory_options_gb)")  # fmt: skip
        if self.generation:
            _one_of(self, "generation", GENERATIONS)
        if self.gemm_shapes:
            _one_of(self, "gemm_shapes", GEMM_SHAPE_TABLES)
        _integers(self, "memory_bytes", "max_gpus_per_node")
        _positive(
            self,
            "memory_bytes",
            "hbm_bw_bytes_per_s",
            "bf16_flops_per_s",
            "fp16_flops_per_s",
            "max_gpus_per_node",
        )
        _non_negative(self, "fp8_flops_per_s", "power_w")
        _fraction(self, "matmul_efficiency", "memory_bw_efficiency", "attention_efficiency")
        _non_negative(self, "decode_bw_efficiency")
        _check(self.decode_bw_efficiency <= 1, "decode_bw_efficiency", "must be at most 1")
        _check(not self.decode_bw_efficiency or len(self.decode_bw_efficiency_source) >= 3,
               "decode_bw_efficiency_source", "must say where the value comes from")  # fmt: skip
        shares = ("attention_bwd_efficiency", "fused_attention_efficiency",
                  "fused_attention_bwd_efficiency")  # fmt: skip
        _non_negative(self, "fp8_matmul_efficiency", *shares)
        for name in shares:
            _check(getattr(self, name) <= 1, name, "must be at most 1")
        _check(
            bool(self.fused_attention_efficiency) == bool(self.fused_attention_bwd_efficiency),
            "fused_attention_efficiency",
            "give fused_attention_efficiency and fused_attention_bwd_efficiency together",
        )
        _check(self.fp8_matmul_efficiency <= 1, "fp8_matmul_efficiency", "must be at most 1")
        for name in (
            ("matmul_efficiency", "attention_efficiency")
            + (("fp8_matmul_efficiency",) if self.fp8_matmul_efficiency else ())
            + (("attention_bwd_efficiency",) if self.attention_bwd_efficiency else ())
            + (("fused_attention_efficiency",) if self.fused_attention_efficiency else ())
        ):
            _check(
                len(getattr(self, f"{name}_source")) >= 3,
                f"{name}_source",
                "must say where it comes from",
            )

    def attention_rates(self, kernel: str) -> tuple[float, float, str]:
        """Forward and backward attention rates as fractions of the BF16 peak for ``kernel``
        (ATTENTION_KERNELS), and where they come from."""
        if kernel == "fused" and self.fused_attention_efficiency:
            return (self.fused_attention_efficiency, self.fused_attention_bwd_efficiency,
                    self.fused_attention_efficiency_source)  # fmt: skip
        bwd = self.attention_bwd_efficiency or self.attention_efficiency
        source = self.attention_efficiency_source + (
            f"; backward: {self.attention_bwd_efficiency_source}"
            if self.attention_bwd_efficiency
            else ""
        )
        return self.attention_efficiency, bwd, source

    @property
    def decode_stream_efficiency(self) -> float:
        """The share of the HBM bandwidth a decode step's weight GEMVs stream at: measured where
        decode_bw_efficiency is set, else memory_bw_efficiency."""
        return self.decode_bw_efficiency or self.memory_bw_efficiency

    @property
    def decode_bytes_per_s(self) -> float:
        """The rate a decode step reads weights and KV cache at: the HBM bandwidth at
        decode_stream_efficiency."""
        return self.hbm_bw_bytes_per_s * self.decode_stream_efficiency

    def serving_attention(self) -> tuple[float, str]:
        """The forward attention rate serving engines reach, as a share of the BF16 peak: the
        better of the catalog's FlashAttention-2 and cuDNN figures (vLLM, SGLang and
        TensorRT-LLM run FlashAttention-3, FlashInfer or their own fused kernels, not
        FlashAttention-2, where those are faster), and where it comes from."""
        if self.fused_attention_efficiency > self.attention_efficiency:
            return self.fused_attention_efficiency, self.fused_attention_efficiency_source
        return self.attention_efficiency, self.attention_efficiency_source

    def gemm_efficiency(self, precision: str) -> float:
        """Best achievable GEMM throughput over the peak of ``precision``."""
        if precision in ("fp8", "fp4") and self.fp8_matmul_efficiency:
            # FP4 GEMMs: FP8's fraction, an estimate (no published FP4 MAMF figure)
            return self.fp8_matmul_efficiency
        return self.matmul_efficiency


def unified_gpu_share(memory_gb: float) -> float:
    """The share of a Mac's unified memory its GPU may use by default (Metal's
    recommendedMaxWorkingSetSize; raised with `sysctl iogpu.wired_limit_mb`): two thirds up to
    32 GB, three quarters above, as Metal reports it (16 GB: 10922.67 MB, llama-cpp-python#687;
    32 GB: 21845.34 MB, ollama#434; 64 GB: 49152 MiB, llama.cpp#1870)."""
    return 2 / 3 if memory_gb <= 32 else 3 / 4


def sized_memory_bytes(gpu: Gpu, size_gb: int) -> int:
    """The memory ``gpu`` has for work when sold with ``size_gb``: all of it, or on unified
    memory the share its GPU may use."""
    share = unified_gpu_share(size_gb) if gpu.unified_memory else 1.0
    return int(size_gb * 2**30 * share)


def with_memory(gpu: Gpu, size_gb: int) -> Gpu:
    """``gpu`` sold with ``size_gb`` of memory (one of its memory_options_gb): named
    <name>-<size>gb, a part of that one size."""
    return replace(
        gpu,
        name=f"{gpu.name}-{size_gb}gb",
        aliases=(),
        memory_options_gb=(),
        title=f"{gpu.title or gpu.name} with {size_gb} GB",
        memory_bytes=sized_memory_bytes(gpu, size_gb),
    )


# attention kernels a training framework runs (Framework.attention, Gpu.attention_rates)
ATTENTION_KERNELS = ("flash", "fused")
# each kernel as plans and the catalog name it
ATTENTION_NAMES = {"flash": "FlashAttention-2", "fused": "cuDNN fused attention"}
# how a training framework runs a layer's elementwise work (Framework.elementwise,
# model/elementwise.py): fused kernels, op by op as eager PyTorch does, or with fused norms and
# rotary and the gated MLP op by op (nanotron: flash-attn's Triton RMSNorm and rotary kernels)
ELEMENTWISE_MODES = ("fused", "eager", "eager-mlp")
# how a training framework dispatches MoE tokens across nodes (Framework.moe_dispatch, model/moe.py):
# a flat all-to-all, or once per destination node and on over NVLink (DeepEP, HybridEP)
MOE_DISPATCH_MODES = ("all-to-all", "node-dedup")
# how decoder layers are laid over pipeline stages: the same number each (Megatron-LM's default;
# the first and last stages one fewer when it does not divide), or balanced by compute with the
# LM head counted on the last (nanotron's get_block_compute_costs; Megatron's
# --account-for-loss-in-pipeline-split) (model/memory.py: stage_layer_counts)
PIPELINE_SPLITS = ("even", "balanced")
# how a training framework lays out a block's input projections (Framework.projections,
# model/lora.py): the query, key and value projections and the MLP's gate and up each their own
# linear layer (Hugging Face Transformers' q_proj, k_proj, v_proj; torchtitan's wq, wk, wv;
# MaxText's query, key, value), or one linear layer each (Megatron-Core's linear_qkv and
# linear_fc1, nanotron's qkv_proj and gate_up_proj): a LoRA adapter on a fused one reads its input
# once
PROJECTION_LAYOUTS = ("separate", "fused")
# what a framework's full recompute reruns in the backward (Framework.recompute_reruns): the
# layer's whole forward again ("layer": torch.utils.checkpoint, Megatron-LM's full recompute), or
# only what the backward reads ("needed": JAX's remat, whose partial evaluation drops the layer's
# last matmul, the MLP's down projection, as its output is not a residual of the backward)
RECOMPUTE_RERUNS = ("layer", "needed")
# how a training framework splits its data-parallel gradient reduction and weight gathering into
# calls (Framework.grad_buckets, model/comm.py: bucket_params): "whole", one call over the whole
# gradient, overlapped with the backward as if finely bucketed (the ledger's first-order form);
# "megatron-core", Megatron-Core DDP's buckets of max(40M, 1M x dp x cp) parameters, each a call
# that pays its latency, launched when its gradients are ready, the last one after the backward;
# "ddp", PyTorch DistributedDataParallel's buckets of 25 MiB of gradient (bucket_cap_mb) for the
# all-reduce of a ZeRO-0 run (ZeRO-1/2 in this family are DeepSpeed's, whose 5e8-element buckets
# hold most models' gradients in one call); "ddp-all-stages", the same buckets below ZeRO-3
# whatever the stage (nanotron wraps the model in DDP at every stage and reduce-scatters each
# bucket under ZeRO-1); with either, the weights' gather stays one call
GRAD_BUCKETS = ("whole", "megatron-core", "ddp", "ddp-all-stages")
# how a training framework's ZeRO-3 / FSDP gathers weights and scatters gradients
# (Framework.zero3_calls, model/step.py): one call per decoder layer over its flat parameters,
# prefetched behind the compute (FSDP's FlatParameter units, DeepSpeed from 0.6 on); or one call
# per parameter tensor, as lists of one view per rank, with the device synchronized before each
# gather (DeepSpeed's ZeRO-3 from 0.3.13 to 0.5: partition_parameters.py _allgather_param and
# _reduce_scatter_gradient, stage3.py _synchronize_communication)
ZERO3_CALLS = ("per-layer", "per-tensor")
# a mixture of experts' tensor parallelism inside the experts when a run sets expert parallelism
# but not that: the attention's TP degree (Megatron-Core: expert_tensor_parallel_size None takes
# tensor_model_parallel_size) or 1, each expert whole (torchtitan: expert_tensor_parallel_degree 1)
EXPERT_TP_DEFAULTS = ("tp", "1")
# the element type a training framework reduces data-parallel gradients in (Framework.grad_reduce)
GRAD_REDUCE_DTYPES = {"bf16": 2.0, "fp32": 4.0}
# the architectures catalog/data/gemm_shapes.csv holds a GEMM-by-shape table for
GEMM_SHAPE_TABLES = ("sm_90", "sm_100", "gfx942")
# GPU architecture generations in order of release (AMD's CDNA 2, 3 and 4 and its Radeon RDNA 3
# and 4 beside their NVIDIA peers) (and Apple silicon's Metal GPUs last: no training framework's
# share is calibrated on them)
GENERATIONS = ("pascal", "volta", "turing", "ampere", "cdna2", "ada", "hopper", "rdna3", "cdna3",
               "blackwell", "cdna4", "rdna4", "apple")  # fmt: skip


def _check_spread(name: str, band: object, holds_plan: bool = True) -> None:
    """A spread: empty, or 0 < low < high (positive speed ratios) over runs >= 1. A framework's
    dense spread holds the plan (low <= 1 <= high: its share is those rows' median); an engine's
    and a framework's MoE spread need not (``holds_plan`` False): nothing is fitted to those rows,
    and every published run may fall short of what the model plans."""
    _check(isinstance(band, dict), name, "must be a table { low, high, runs }")
    assert isinstance(band, dict)
    if not band:
        return
    _check(set(band) == {"low", "high", "runs"}, name, "must have exactly low, high and runs")
    low, high, runs = band["low"], band["high"], band["runs"]
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (low, high))
    if holds_plan:
        _check(numbers and 0 < low <= 1 <= high, name,
               f"needs 0 < low <= 1 <= high, not {low!r}, {high!r}")  # fmt: skip
    else:
        _check(numbers and 0 < low < high, name, f"needs 0 < low < high, not {low!r}, {high!r}")
    _check(isinstance(runs, int) and not isinstance(runs, bool) and runs >= 1, f"{name}.runs",
           f"must be a whole number of runs, at least 1, not {runs!r}")  # fmt: skip


def _spread_band(band: dict[str, float]) -> tuple[float, float, int] | None:
    """A checked spread as (low, high, runs); None when it is empty (too few runs to say)."""
    if not band:
        return None
    return float(band["low"]), float(band["high"]), int(band["runs"])


@dataclass(frozen=True, kw_only=True)
class Framework(_Entry):
    """A training framework: the share of the kernel-level step time (model/step.py) it reaches.

    ``efficiency`` maps GPU generations to that share; a generation it does not list takes the
    nearest listed one (ties: the newer), and says so.
    """

    efficiency: dict[str, float]
    efficiency_source: str
    # the attention kernel it runs (ATTENTION_KERNELS): FlashAttention-2 through PyTorch's SDPA or
    # flash-attn ("flash"), or cuDNN's fused attention through Transformer Engine / XLA ("fused")
    attention: str = "flash"
    # another kernel on some GPU generations (eager PyTorch's SDPA picks cuDNN's on Blackwell)
    attention_by_generation: dict[str, str] = field(default_factory=dict)
    # its elementwise work (ELEMENTWISE_MODES): fused kernels (Transformer Engine, XLA,
    # torch.compile), op by op (eager PyTorch's RMSNorm, rotary and SwiGLU), or only the gated
    # MLP op by op
    elementwise: str = "fused"
    # the element type of its data-parallel gradient reduction (GRAD_REDUCE_DTYPES): Megatron-LM
    # reduces BF16 runs' gradients in FP32 by default, FSDP mixed precision usually in BF16
    grad_reduce: str = "bf16"
    # how it splits that reduction and the weights' gather into calls (GRAD_BUCKETS)
    grad_buckets: str = "whole"
    # how its ZeRO-3 gathers weights and scatters gradients (ZERO3_CALLS)
    zero3_calls: str = "per-layer"
    # how it sends MoE tokens to experts on other nodes (MOE_DISPATCH_MODES)
    moe_dispatch: str = "all-to-all"
    # how it lays decoder layers over pipeline stages (PIPELINE_SPLITS)
    pipeline_split: str = "even"
    # what its full recompute reruns (RECOMPUTE_RERUNS): the whole layer, or only what the
    # backward reads
    recompute_reruns: str = "layer"
    # its experts' TP degree when a run gives expert parallelism but not that (EXPERT_TP_DEFAULTS)
    expert_tp: str = "tp"
    # its blocks' input projections (PROJECTION_LAYOUTS): separate linear layers or fused ones
    projections: str = "separate"
    # host time per decoder layer per micro-batch, forward and backward, that its kernels do not
    # cover (eager PyTorch: Python, the dispatcher and FSDP's hooks launch every op; ms at the
    # kernel level, scaled by the share like every kernel); 0: none priced
    layer_host_ms: float = 0.0
    # how far its published runs fall from the planned step once its share is applied: the 5th
    # and 95th percentile of measured / planned speed over its calibration rows ({low, high,
    # runs}; benchmarks/calibrate_frameworks.py); moe_spread the same over its MoE rows. Empty:
    # too few rows to say
    spread: dict[str, float] = field(default_factory=dict)
    moe_spread: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__post_init__()
        _one_of(self, "attention", ATTENTION_KERNELS)
        _one_of(self, "moe_dispatch", MOE_DISPATCH_MODES)
        _one_of(self, "pipeline_split", PIPELINE_SPLITS)
        _one_of(self, "recompute_reruns", RECOMPUTE_RERUNS)
        _one_of(self, "projections", PROJECTION_LAYOUTS)
        _one_of(self, "elementwise", ELEMENTWISE_MODES)
        _one_of(self, "grad_reduce", tuple(GRAD_REDUCE_DTYPES))
        _one_of(self, "grad_buckets", GRAD_BUCKETS)
        _one_of(self, "zero3_calls", ZERO3_CALLS)
        _one_of(self, "expert_tp", EXPERT_TP_DEFAULTS)
        _check(
            isinstance(self.layer_host_ms, int | float)
            and not isinstance(self.layer_host_ms, bool)
            and 0 <= self.layer_host_ms <= 100,
            "layer_host_ms",
            "must be a number of milliseconds from 0 to 100",
        )
        _check(
            isinstance(self.efficiency, dict) and bool(self.efficiency),
            "efficiency",
            "must map at least one GPU generation to a share",
        )
        for gen, value in self.efficiency.items():
            _check(
                gen in GENERATIONS, "efficiency", f"{gen!r} is not one of {', '.join(GENERATIONS)}"
            )
            _check(
                isinstance(value, int | float) and not isinstance(value, bool) and 0 < value <= 1,
                f"efficiency.{gen}",
                f"must be in (0, 1], not {value!r}",
            )
        _check(
            len(self.efficiency_source) >= 3, "efficiency_source", "must say where it comes from"
        )
        _check(
            isinstance(self.attention_by_generation, dict),
            "attention_by_generation",
            "must map GPU generations to attention kernels",
        )
        for gen, kernel in self.attention_by_generation.items():
            _check(
                gen in GENERATIONS,
                "attention_by_generation",
                f"{gen!r} is not one of {', '.join(GENERATIONS)}",
            )
            _check(
                kernel in ATTENTION_KERNELS,
                f"attention_by_generation.{gen}",
                f"must be one of {', '.join(ATTENTION_KERNELS)}, not {kernel!r}",
            )
        _check_spread("spread", self.spread)  # its share is its rows' median: it holds the plan
        _check_spread("moe_spread", self.moe_spread, holds_plan=False)  # MoE rows set no share

    def likely_range(self, moe: bool) -> tuple[float, float, int] | None:
        """The middle 90% of measured / planned speed over its published calibration runs (MoE
        runs for an MoE model) and how many runs that is; None when too few to say."""
        return _spread_band(self.moe_spread if moe else self.spread)

    def attention_for(self, generation: str) -> str:
        """The attention kernel it runs on a GPU of ``generation``."""
        return self.attention_by_generation.get(generation, self.attention)

    @property
    def default_etp(self) -> int:
        """Its experts' TP as TrainConfig.etp takes it (0: the TP degree, 1: each expert whole),
        for a run that gives expert parallelism but not that (``expert_tp``)."""
        return 1 if self.expert_tp == "1" else 0

    def efficiency_for(self, generation: str) -> tuple[float, str]:
        """The share for a GPU of ``generation`` and the generation it was taken from."""
        if generation in self.efficiency:
            return float(self.efficiency[generation]), generation
        listed = sorted(self.efficiency, key=GENERATIONS.index)
        if generation not in GENERATIONS:  # a GPU that does not say: the newest listed
            return float(self.efficiency[listed[-1]]), listed[-1]
        at = GENERATIONS.index(generation)
        nearest = min(listed, key=lambda g: (abs(GENERATIONS.index(g) - at), -GENERATIONS.index(g)))
        return float(self.efficiency[nearest]), nearest


@dataclass(frozen=True, kw_only=True)
class IntraLink(_Entry):
    """How GPUs inside one node talk to each other."""

    kind: Literal["none", "pcie", "nvlink"]
    bw_bytes_per_s: float  # line rate per GPU, one direction
    efficiency: float  # achievable bus bandwidth / line rate
    efficiency_source: str
    latency_s: float  # per ring step (hop)
    max_gpus: int
    p2p: bool = True
    nvls: bool = False
    nvls_algbw_fraction: float = 0.0  # NVLink SHARP all-reduce algbw / line rate

    def __post_init__(self) -> None:
        super().__post_init__()
        _one_of(self, "kind", ("none", "pcie", "nvlink"))
        _non_negative(self, "bw_bytes_per_s", "latency_s", "nvls_algbw_fraction")
        _fraction(self, "efficiency")
        _integers(self, "max_gpus")
        _positive(self, "max_gpus")
        _check(self.nvls_algbw_fraction <= 1, "nvls_algbw_fraction", "must be at most 1")
        _check(
            not self.nvls or self.nvls_algbw_fraction > 0,
            "nvls_algbw_fraction",
            "an NVLS link needs it above 0",
        )


@dataclass(frozen=True, kw_only=True)
class Network(_Entry):
    """An inter-node network choice: one NIC of this kind per `nics_per_node`."""

    # efa: AWS's SRD transport (RDMA-like, not RoCE); slingshot: HPE's Ethernet with its own
    # RDMA (Cassini NICs, libfabric's cxi provider)
    kind: Literal["tcp", "roce", "ib", "efa", "slingshot"]
    rate_bits_per_s: float  # line rate per NIC port
    efficiency: float  # achievable collective bus bw / line rate
    efficiency_source: str
    latency_s: float  # per-message latency (alpha) through the stack
    cost_relative: float  # per-node-port cost, 100GbE = 1.0 (estimate)
    mtu_bytes: int = 1500
    # the measured cost of one step of an NCCL ring across nodes, where published sweeps on this
    # network give it (0: NCCL's tuner constants price the steps; model/collectives.py
    # net_step_floor), and where it comes from
    ring_step_s: float = 0.0
    ring_step_source: str = ""
    # what one level of an NCCL all-reduce tree across nodes adds to the network's latency, each
    # way (twice for Simple), where published sweeps on this network measure it (0: NCCL's tuner
    # constants; model/collectives.py tree_level_s), and where it comes from
    tree_step_s: float = 0.0
    tree_step_source: str = ""
    nics_per_node: int = 0  # the NIC ports a cloud instance type comes with; 0: the user's choice

    def __post_init__(self) -> None:
        super().__post_init__()
        _one_of(self, "kind", ("tcp", "roce", "ib", "efa", "slingshot"))
        _positive(self, "rate_bits_per_s", "latency_s", "cost_relative", "mtu_bytes")
        _integers(self, "nics_per_node")
        _non_negative(self, "nics_per_node", "ring_step_s", "tree_step_s")
        _fraction(self, "efficiency")
        _check(not self.ring_step_s or len(self.ring_step_source) >= 3,
               "ring_step_source", "must say where the value comes from")  # fmt: skip
        _check(not self.tree_step_s or len(self.tree_step_source) >= 3,
               "tree_step_source", "must say where the value comes from")  # fmt: skip

    @property
    def bw_bytes_per_s(self) -> float:
        """Line rate in bytes per second."""
        return self.rate_bits_per_s / 8


# Families whose attention RMS-normalises every query and key head before the rotary embedding,
# as their Hugging Face modeling code does unconditionally (transformers models/qwen3,
# qwen3_moe: q_norm / k_norm over each head; olmo2, olmoe: over the whole query and key
# projections; gemma3: over each head): two more norms per layer, on the query and key widths
QK_NORM_FAMILIES = frozenset(
    {
        "qwen3",
        "qwen3_moe",
        "qwen3_next",
        "qwen3_5_text",
        "qwen3_5_moe_text",
        "olmo2",
        "olmoe",
        "gemma3",
        "gemma3_text",
        "qwen3_vl_text",  # Qwen3-VL's language models: Qwen3's attention (modeling_qwen3_vl)
        "qwen3_vl_moe_text",
        "minimax_m2",  # use_qk_norm, qk_norm_type "per_layer": over the whole projections
    }
)


# Families among those whose query and key norms span the whole projection, every head at once:
# under tensor parallelism a rank holds only its own heads, so each layer's norms need the other
# ranks' part. MiniMax-M2 all-reduces the query's and the key's sums of squares (two fp32 values a
# token) in one call (SGLang's MiniMaxM2QKRMSNorm._forward_naive, sglang/srt/models/minimax_m2.py;
# vLLM's MiniMaxText01RMSNormTP.forward_qk); OLMo 2 and OLMoE gather the whole query and key
# projections, normalise them and keep their own slice (vLLM's Olmo2Attention._apply_qk_norm:
# tensor_model_parallel_all_gather of q, then of k)
QK_NORM_EXCHANGE = {"minimax_m2": "all_reduce", "olmo2": "all_gather", "olmoe": "all_gather"}


@dataclass(frozen=True, kw_only=True)
class ModelSpec(_Entry):
    """A transformer architecture; enough to count parameters, FLOPs, memory and traffic."""

    family: str = "llama"
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int = 0  # 0 means hidden / heads
    ffn: int
    vocab: int
    tied_embeddings: bool = False
    mlp: Literal["swiglu", "gelu"] = "swiglu"
    positions: Literal["rotary", "learned", "alibi"] = "rotary"
    max_positions: int = 4096
    norm: Literal["rms", "layer"] = "rms"
    attn_bias: bool = False
    qkv_bias: bool = False
    mlp_bias: bool = False
    sliding_window: int = 0
    # layers that attend within the window (gpt-oss: every other one); 0: all, when there is one
    sliding_window_layers: int = 0
    # Mixture of experts
    experts: int = 0
    experts_per_token: int = 0
    moe_ffn: int = 0
    shared_experts: int = 0
    first_dense_layers: int = 0
    # after them, a mixture of experts in one layer of every moe_layer_step, the others dense
    # (Llama 4 Maverick: 2, MoE in layers 1, 3, 5, ...; config.json interleave_moe_layer_step)
    moe_layer_step: int = 1
    # group-limited routing (DeepSeek-V3: n_group 8, topk_group 4): experts in equal groups, a
    # token's experts drawn from its best groups only; 0: any expert
    expert_groups: int = 0
    expert_groups_per_token: int = 0
    # Multi-head latent attention (DeepSeek-V2/V3)
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    qk_nope_head_dim: int = 0
    v_head_dim: int = 0
    # Hybrid models: layers whose token mixer is linear attention, a Gated DeltaNet (Yang et al.
    # 2024, arXiv 2412.06464; Qwen3-Next: 36 of 48 layers), instead of softmax attention. It
    # keeps no KV cache but a recurrent state of linear_value_heads x key_dim x value_dim per
    # sequence; queries and keys have linear_key_heads heads of linear_key_dim, values and the
    # output gate linear_value_heads of linear_value_dim; a depthwise causal convolution of
    # linear_conv taps runs over the queries, keys and values (transformers qwen3_next)
    linear_layers: int = 0
    linear_key_heads: int = 0
    linear_value_heads: int = 0
    linear_key_dim: int = 0
    linear_value_dim: int = 0
    linear_conv: int = 0
    # the linear layers' kind: "gated_deltanet" (Qwen3-Next, Qwen3.5) or "mamba2" (Granite 4.0-H:
    # Mamba-2's SSD, Dao and Gu 2024; heads of linear_value_dim channels over a state of
    # linear_key_dim, B and C shared over linear_key_heads groups)
    linear_kind: Literal["gated_deltanet", "mamba2"] = "gated_deltanet"
    # routed experts that read and write a latent of this width (Nemotron 3 Super and Ultra's
    # LatentMoE): each MoE layer projects a token down to it before routing and back after, so
    # the experts and their dispatch are moe_latent wide; the router and shared experts work at
    # the hidden width; 0: the experts are hidden wide
    moe_latent: int = 0
    # layers with a token mixer and no MLP: Nemotron-H's blocks hold a mixer or an MLP, not both
    # (hybrid_override_pattern: 24 Mamba-2, 4 attention and 24 MLP blocks in its 8B), planned as
    # 28 layers of which 4 have no MLP
    mlp_free_layers: int = 0
    # the softmax layers' query projection also emits a sigmoid gate per head for the attention
    # output (Qwen3-Next's gated attention: q_proj is heads x head_dim x 2 wide)
    attn_output_gate: bool = False
    # DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5): a lightning indexer of index_heads heads
    # of index_head_dim scores every earlier token with one cached key per token, and attention
    # reads only the index_topk best. index_layers run their own indexer (GLM-5.2: 21 of 78; the
    # rest reuse the previous one's choice); 0 without DSA
    index_heads: int = 0
    index_head_dim: int = 0
    index_topk: int = 0
    index_layers: int = 0
    params_published: float = 0  # published parameter count
    # the format its weights are released in, when not 16-bit (gpt-oss: MXFP4 experts -> int4):
    # what serving it takes by default ("": the engine's default)
    release_precision: str = ""
    # set when a user's name was read as this entry (an Ollama tag, a Hugging Face id): how it
    # was read, and the weights format the name gives ("" for none); not catalog data
    reading: str = ""
    named_precision: str = ""
    named_by: str = ""  # the kind of name it was read from (model_names.ModelName.kind)

    def __post_init__(self) -> None:
        super().__post_init__()
        counts = ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "max_positions")
        rest = ("head_dim", "sliding_window", "sliding_window_layers", "experts", "experts_per_token", "moe_ffn", "shared_experts",
                "first_dense_layers", "moe_layer_step", "expert_groups", "expert_groups_per_token", "q_lora_rank", "kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim",
                "linear_layers", "linear_key_heads", "linear_value_heads", "linear_key_dim", "linear_value_dim", "linear_conv",
                "mlp_free_layers", "moe_latent", "index_heads", "index_head_dim", "index_topk", "index_layers")  # fmt: skip
        _integers(self, *counts, *rest)
        _positive(self, *counts)
        _non_negative(self, *rest, "params_published")
        _one_of(self, "mlp", ("swiglu", "gelu"))
        _one_of(self, "positions", ("rotary", "learned", "alibi"))
        _one_of(self, "norm", ("rms", "layer"))
        _one_of(self, "release_precision", ("", "bf16", "fp16", "fp8", "int8", "int4", "fp4"))
        _one_of(self, "named_precision", ("", "bf16", "fp16", "fp8", "int8", "int4", "fp4"))
        _check(
            self.heads % self.kv_heads == 0,
            "kv_heads",
            f"heads ({self.heads}) must be a multiple of kv_heads ({self.kv_heads})",
        )
        _check(
            not self.experts or 0 < self.experts_per_token <= self.experts,
            "experts_per_token",
            "must be between 1 and experts",
        )
        _check(self.first_dense_layers <= self.layers, "first_dense_layers", "cannot exceed layers")
        _check(
            not self.moe_latent or (self.experts > 0 and self.moe_latent <= self.hidden),
            "moe_latent",
            "needs experts and is at most the hidden width",
        )
        _check(self.moe_layer_step >= 1, "moe_layer_step", "must be 1 or more (1: every layer)")
        _check(
            not self.expert_groups
            or (self.experts % self.expert_groups == 0
                and 0 < self.expert_groups_per_token <= self.expert_groups),
            "expert_groups",
            "must divide experts, with expert_groups_per_token between 1 and expert_groups",
        )  # fmt: skip
        _check(
            self.sliding_window_layers <= self.layers - self.linear_layers,
            "sliding_window_layers",
            "cannot exceed the softmax-attention layers",
        )
        _check(self.linear_layers < self.layers, "linear_layers", "must leave a softmax layer")
        _check(
            self.mlp_free_layers < self.layers - self.first_dense_layers,
            "mlp_free_layers",
            "must leave a layer with an MLP",
        )
        linear_dims = (self.linear_key_heads, self.linear_value_heads, self.linear_key_dim,
                       self.linear_value_dim, self.linear_conv)  # fmt: skip
        _check(
            not self.linear_layers or all(linear_dims),
            "linear_layers",
            "needs linear_key_heads, linear_value_heads, linear_key_dim, linear_value_dim and "
            "linear_conv above 0",
        )
        _check(
            not self.linear_layers or self.linear_value_heads % self.linear_key_heads == 0,
            "linear_value_heads",
            "must be a multiple of linear_key_heads",
        )
        _one_of(self, "linear_kind", ("gated_deltanet", "mamba2"))
        _check(
            not (self.linear_layers and self.is_mla),
            "linear_layers",
            "with multi-head latent attention is not modelled",
        )
        _check(
            not self.index_layers
            or (all((self.index_heads, self.index_head_dim, self.index_topk, self.q_lora_rank,
                     self.kv_lora_rank)) and self.index_layers <= self.layers),
            "index_layers",
            "a sparse-attention indexer needs index_heads, index_head_dim, index_topk and latent "
            "attention with a query LoRA rank, and runs in at most every layer",
        )  # fmt: skip

    @property
    def is_moe(self) -> bool:
        """True for a mixture-of-experts model."""
        return self.experts > 0

    @property
    def is_mla(self) -> bool:
        """True when attention is multi-head latent attention."""
        return self.kv_lora_rank > 0

    @property
    def is_sparse(self) -> bool:
        """True when attention reads only the tokens an indexer selects (DeepSeek Sparse
        Attention: ``index_layers``)."""
        return self.index_layers > 0

    @property
    def is_hybrid(self) -> bool:
        """True when some layers mix tokens by linear attention (``linear_layers``)."""
        return self.linear_layers > 0

    @property
    def qk_norm(self) -> bool:
        """True when each layer RMS-normalises its queries and keys before the rotary embedding
        (the families of QK_NORM_FAMILIES)."""
        return self.family in QK_NORM_FAMILIES

    @property
    def qk_norm_exchange(self) -> str:
        """The collective each softmax-attention layer's query and key norms run between tensor-
        parallel ranks (QK_NORM_EXCHANGE: all_reduce, all_gather), "" when they need none."""
        return QK_NORM_EXCHANGE.get(self.family, "")


def release_key(text: str) -> tuple[int, ...] | None:
    """A release's leading numbers (``0.4.6.post1`` -> (0, 4, 6)), None for text that does not
    start with one (`v` allowed before it)."""
    m = RELEASE_RE.match(text.strip())
    return tuple(int(part) for part in m.group(1).split(".")) if m else None


def valid_release(text: str) -> bool:
    """A release as users and catalogs write it: leading numbers (0.14, 0.8.5), optionally a
    suffix of letters, digits, dots, plus signs or dashes (0.4.6.post1, 0.19.1rc1.dev339+g1)."""
    return release_key(text) is not None and re.fullmatch(r"[\w.+-]+", text.strip()) is not None


def split_release(name: str) -> tuple[str, str]:
    """An engine as named (vllm@0.8.5) -> its name and its release ("" when none is named)."""
    base, _, release = name.partition("@")
    return base.strip(), release.strip()


def release_before(release: str) -> str:
    """A release just before ``release``: its last non-zero number one less, what follows it
    dropped (0.14 -> 0.13, 0.4 -> 0.3, 1.0 -> 0); "" for none."""
    key = release_key(release) if release else None
    nonzero = [i for i, part in enumerate(key or ()) if part > 0]
    if not key or not nonzero:
        return ""
    i = nonzero[-1]
    return ".".join(str(part) for part in (*key[:i], key[i] - 1))


RELEASE_RE = re.compile(r"v?(\d{1,4}(?:\.\d{1,4}){0,3})(?!\.?\d)")


@dataclass(frozen=True, kw_only=True)
class Engine(_Entry):
    """An inference engine's fixed costs per decode step (on top of weights and KV reads)."""

    step_overhead_s: float  # per decode step (scheduling, sampling)
    layer_overhead_s: float  # per decoder layer per step (launch gaps)
    # share of the GPU's memory the engine allocates (weights, activations, KV cache, runtime)
    gpu_memory_utilization: float
    gpu_memory_utilization_source: str
    reserved_bytes: float  # memory kept free besides that share (driver, other processes)
    reserved_bytes_source: str
    # requests one replica runs at once by default; 0: bounded by the KV cache only
    max_parallel: int
    max_parallel_large_gpu: int  # on GPUs with at least large_gpu_bytes (0: as max_parallel)
    large_gpu_bytes: float
    large_gpu_except: tuple[str, ...]  # GPU names (prefixes) that keep max_parallel
    max_parallel_source: str
    default_precision: str  # the weights a user gets without asking for others
    int4_bits_per_weight: float  # what a 4-bit model costs in this engine's format
    int8_bits_per_weight: float
    weight_bits_source: str
    # the share of the 16-bit weight stream's rate its weight-only int8 and int4 kernels reach
    # at decode (dequantizing in the GEMV costs more than the bytes it saves)
    int8_stream_share: float = 1.0
    int4_stream_share: float = 1.0
    stream_share_source: str = "default: quantized weights stream at the 16-bit rate"
    # how far published runs of this engine sit from the model where it is known to miss,
    # stated beside every estimate for it ("": none); moe_caveat beside its estimates for
    # mixture-of-experts models only
    measured_caveat: str = ""
    moe_caveat: str = ""
    # whether newcomers' prompts ride in the decode steps (chunked prefill mixed with decode)
    # or run as prefill passes the running requests wait for (model/inference.py:
    # serving_tpot_s); the default is the mixed scheduler of vLLM V1
    prefill_mixed: bool = True
    prefill_mixed_source: str = "default: prompts mixed into the decode steps (vLLM V1's scheduler)"
    # whether tensor-parallel all-reduces inside a node run the engine's own one-shot kernel
    # (model/collectives.py: estimate_engine_all_reduce) or NCCL
    custom_all_reduce: bool = False
    custom_all_reduce_source: str = "default: NCCL"
    # how one replica spreads over several GPUs when the user names no --tp/--pp
    multi_gpu: str = "tensor"  # "tensor" (tensor parallel) | "layers" (layers split in stages)
    # whether a model that fits on one GPU is loaded onto that one GPU alone, the others left
    # idle, when the user names no --tp/--pp (Ollama's scheduler), rather than spread over all
    one_gpu_when_fits: bool = False
    one_gpu_when_fits_source: str = "default: one replica spreads over every GPU it is given"
    # whether a model too large for the GPUs runs with some layers in host memory (model/offload.py)
    host_offload: bool = False
    host_offload_source: str = "default: the engine refuses a model that does not fit"
    # extra passes over the whole KV cache each decode step, beyond attention's read: a cache that
    # grows by concatenation (Transformers' DynamicCache: torch.cat) reads the old cache and
    # writes a new one every step (2); a preallocated or paged cache appends in place (0)
    kv_cache_copies: float = 0.0
    kv_cache_copies_source: str = "default: a preallocated or paged KV cache, appended in place"
    # bytes per value of a hybrid model's recurrent state (linear attention): float32 unless the
    # engine keeps it at the model's 16-bit dtype
    state_bytes: float = 4.0
    state_bytes_source: str = "default: float32, as the linear-attention kernels return it"
    # whether a decode step pays layer_overhead_s / 10 more for each kernel a mixture-of-experts
    # MLP, its shared experts and latent attention run beyond a dense GQA layer's ten
    # (model/inference.py: extra_kernels), counted from the engine's own MoE and MLA code
    moe_kernel_gaps: bool = False
    moe_kernel_gaps_source: str = "default: not counted (the engine's MoE and MLA kernels not read)"
    # the release from which the engine prepares the next decode step on the host while the GPU
    # runs this one (vLLM's async scheduling, SGLang's overlap scheduler), so that its per-step
    # host time hides behind the GPU's work ("": it never does); release: the one modelled
    # ("": the newest, what an install gets today; `--engine vllm@0.8.5` names another)
    overlap_since: str = ""
    # ...or every release does: a decode loop that never waits on the GPU between tokens
    overlap_always: bool = False
    overlap_source: str = "default: the host prepares each step after the last one ends"
    # whether it keeps that overlap for a hybrid (linear-attention) model, or turns it off there,
    # and with pipeline parallelism
    overlaps_hybrid: bool = True
    overlaps_hybrid_source: str = "default: the same scheduling for every model"
    overlaps_pipeline: bool = True
    overlaps_pipeline_source: str = "default: the same scheduling with pipeline stages"
    # ...and with speculative decoding (a draft proposes tokens the model verifies in one step)
    overlaps_speculative: bool = True
    overlaps_speculative_source: str = "default: the same scheduling with speculative decoding"
    # the requests one replica runs at once by default with speculative decoding (0: as without)
    max_parallel_speculative: int = 0
    max_parallel_speculative_source: str = "default: the same bound as without speculative decoding"
    release: str = ""
    # how far its published decode runs fall from the plan: the 5th and 95th percentile of
    # measured / planned speed over its calibration rows ({low, high, runs};
    # benchmarks/calibrate_engines.py); empty: too few rows to say
    spread: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "large_gpu_except", tuple(self.large_gpu_except))
        _non_negative(
            self, "step_overhead_s", "layer_overhead_s", "reserved_bytes", "large_gpu_bytes"
        )
        _fraction(self, "gpu_memory_utilization")
        _integers(self, "max_parallel", "max_parallel_large_gpu")
        _non_negative(self, "max_parallel", "max_parallel_large_gpu")
        _positive(self, "int4_bits_per_weight", "int8_bits_per_weight")
        _fraction(self, "int8_stream_share")
        _fraction(self, "int4_stream_share")
        _check(len(self.stream_share_source) >= 3, "stream_share_source",
               "must say where the value comes from")  # fmt: skip
        _one_of(self, "default_precision", ("bf16", "fp16", "fp8", "int8", "int4", "fp4"))
        for name in (
            "gpu_memory_utilization_source",
            "reserved_bytes_source",
            "max_parallel_source",
            "weight_bits_source",
        ):
            _check(len(getattr(self, name)) >= 3, name, "must say where the value comes from")
        _check(isinstance(self.measured_caveat, str), "measured_caveat", "must be text")
        _check(isinstance(self.moe_caveat, str), "moe_caveat", "must be text")
        _check(isinstance(self.prefill_mixed, bool), "prefill_mixed", "must be true or false")
        _check(self.multi_gpu in ("tensor", "layers"), "multi_gpu", "must be tensor or layers")
        _check(isinstance(self.one_gpu_when_fits, bool), "one_gpu_when_fits",
               "must be true or false")  # fmt: skip
        _check(len(self.one_gpu_when_fits_source) >= 3, "one_gpu_when_fits_source",
               "must say where the value comes from")  # fmt: skip
        _check(self.state_bytes in (2.0, 4.0), "state_bytes", "must be 2 (16-bit) or 4 (float32)")
        _check(isinstance(self.overlaps_hybrid, bool), "overlaps_hybrid", "must be true or false")
        _check(isinstance(self.overlaps_pipeline, bool), "overlaps_pipeline",
               "must be true or false")  # fmt: skip
        _check(len(self.overlaps_pipeline_source) >= 3, "overlaps_pipeline_source",
               "must say where the value comes from")  # fmt: skip
        _check(isinstance(self.overlaps_speculative, bool), "overlaps_speculative",
               "must be true or false")  # fmt: skip
        _check(len(self.overlaps_speculative_source) >= 3, "overlaps_speculative_source",
               "must say where the value comes from")  # fmt: skip
        _check(isinstance(self.max_parallel_speculative, int) and self.max_parallel_speculative >= 0,
               "max_parallel_speculative", "must be a whole number, 0 or more")  # fmt: skip
        _check(len(self.max_parallel_speculative_source) >= 3, "max_parallel_speculative_source",
               "must say where the value comes from")  # fmt: skip
        _check(len(self.overlaps_hybrid_source) >= 3, "overlaps_hybrid_source",
               "must say where the value comes from")  # fmt: skip
        _check(len(self.state_bytes_source) >= 3, "state_bytes_source",
               "must say where the value comes from")  # fmt: skip
        _check(isinstance(self.moe_kernel_gaps, bool), "moe_kernel_gaps", "must be true or false")
        _check(len(self.moe_kernel_gaps_source) >= 3, "moe_kernel_gaps_source",
               "must say where the value comes from")  # fmt: skip
        _check(isinstance(self.host_offload, bool), "host_offload", "must be true or false")
        _check(len(self.host_offload_source) >= 3, "host_offload_source",
               "must say where the value comes from")  # fmt: skip
        _check(isinstance(self.custom_all_reduce, bool), "custom_all_reduce",
               "must be true or false")  # fmt: skip
        _check(len(self.custom_all_reduce_source) >= 3, "custom_all_reduce_source",
               "must say where the value comes from")  # fmt: skip
        _check(len(self.prefill_mixed_source) >= 3, "prefill_mixed_source",
               "must say where the value comes from")  # fmt: skip
        _non_negative(self, "kv_cache_copies")
        _check_spread("spread", self.spread, holds_plan=False)
        _check(len(self.kv_cache_copies_source) >= 3, "kv_cache_copies_source",
               "must say where the value comes from")  # fmt: skip

        for key in ("overlap_since", "release"):
            value = getattr(self, key)
            _check(isinstance(value, str) and (not value or valid_release(value)),
                   key, "must be a release number like 0.14 or 0.8.5, or empty")  # fmt: skip
        _check(isinstance(self.overlap_always, bool), "overlap_always", "must be true or false")
        _check(not (self.overlap_always and self.overlap_since), "overlap_always",
               "names no release: leave overlap_since empty")  # fmt: skip
        _check(len(self.overlap_source) >= 3, "overlap_source",
               "must say where the value comes from")  # fmt: skip

    @property
    def release_before_overlap(self) -> str:
        """A release just before overlap_since, to name in advice."""
        return release_before(self.overlap_since)

    @property
    def overlaps_scheduling(self) -> bool:
        """Whether the modelled release hides its per-step host time behind the GPU's work."""
        if self.overlap_always:
            return True
        since = release_key(self.overlap_since) if self.overlap_since else None
        if since is None:
            return False
        return not self.release or (release_key(self.release) or ()) >= since

    def overlaps_for(self, spec: ModelSpec, pp: int = 1, speculative: bool = False) -> bool:
        """overlaps_scheduling for this model and layout: an engine may turn the overlap off for
        hybrids, with pipeline stages, or with speculative decoding."""
        return (
            self.overlaps_scheduling
            and (self.overlaps_hybrid or not spec.is_hybrid)
            and (self.overlaps_pipeline or pp <= 1)
            and (self.overlaps_speculative or not speculative)
        )

    def likely_range(self) -> tuple[float, float, int] | None:
        """The middle 90% of measured / planned decode speed over its published calibration
        runs and how many runs that is; None when too few to say."""
        return _spread_band(self.spread)

    def max_parallel_on(self, gpu: Gpu) -> int:
        """Requests one replica runs at once by default on this GPU (0: no bound)."""
        large = gpu.memory_bytes >= self.large_gpu_bytes
        if self.max_parallel_large_gpu and large and not gpu.name.startswith(self.large_gpu_except):
            return self.max_parallel_large_gpu
        return self.max_parallel

    def stream_share(self, precision: str) -> float:
        """The share of the 16-bit weight stream's rate its kernels reach for weights at
        ``precision`` (int8_stream_share, int4_stream_share; 1 for the others)."""
        return {"int8": self.int8_stream_share, "int4": self.int4_stream_share}.get(precision, 1.0)

    def bytes_per_weight(self, precision: str) -> float:
        """Bytes one weight takes at ``precision`` in this engine's weight format."""
        if precision == "int4":
            return self.int4_bits_per_weight / 8
        if precision == "int8":
            return self.int8_bits_per_weight / 8
        return {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "fp4": 0.5625}[precision]  # fp4: NVFP4


@dataclass(frozen=True, kw_only=True)
class Host(_Entry):
    """A host's memory: where an engine that keeps some layers off the GPU (Ollama, llama.cpp)
    reads them on the CPU at every decoded token."""

    memory_bw_bytes_per_s: float  # peak: channels x transfers per second x 8 bytes
    efficiency: float  # what the CPU's matrix-vector kernels reach of the peak
    efficiency_source: str

    def __post_init__(self) -> None:
        super().__post_init__()
        _positive(self, "memory_bw_bytes_per_s")
        _fraction(self, "efficiency")
        _check(len(self.efficiency_source) >= 3, "efficiency_source",
               "must say where the value comes from")  # fmt: skip

    @property
    def achievable_bytes_per_s(self) -> float:
        """The rate a decode step reads host-resident weights at."""
        return self.memory_bw_bytes_per_s * self.efficiency


@dataclass(frozen=True, kw_only=True)
class Switch(_Entry):
    """A fabric switch ASIC/box: its port configurations (``[ports, rate_bits_per_s]`` pairs,
    the native one first, then the breakouts) and a relative cost for ranking designs."""

    port_configs: tuple[tuple[int, float], ...]  # e.g. ((64, 400e9), (128, 200e9), (256, 100e9))
    cost_relative: float  # one switch, in the networks table's unit (a 100GbE port = 1.0; estimate)
    kind: Literal["ethernet", "ib"] = "ethernet"

    def __post_init__(self) -> None:
        super().__post_init__()
        _one_of(self, "kind", ("ethernet", "ib"))
        _positive(self, "cost_relative")
        configs = tuple((int(p), float(r)) for p, r in self.port_configs)
        _check(bool(configs), "port_configs", "needs at least one [ports, rate] pair")
        for ports, rate in configs:
            _check(ports > 0 and rate > 0, "port_configs", f"[{ports}, {rate}] is not positive")
        object.__setattr__(self, "port_configs", configs)

    def ports_at(self, rate_bits_per_s: float) -> int:
        """Ports at a given link rate: a listed configuration of that rate, else the fastest
        configuration's ports each running one slower link (no breakout); 0 when every port is
        slower than the rate."""
        exact = [p for p, r in self.port_configs if abs(r - rate_bits_per_s) < 1e-6 * r]
        if exact:
            return max(exact)
        faster = [p for p, r in self.port_configs if r > rate_bits_per_s]
        return max(faster) if faster else 0

    @property
    def native_rate_bits_per_s(self) -> float:
        """The fastest port rate."""
        return max(r for _, r in self.port_configs)
