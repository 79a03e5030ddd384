"""A training job's layout: parallel degrees, batch, precision, and where each group's ranks sit.

Ranks are placed as Megatron-LM does: tensor-parallel ranks innermost, then context, then data
(expert-parallel groups are carved out of data-parallel ranks), pipeline stages outermost.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

from fabriclens.catalog.schema import GRAD_REDUCE_DTYPES
from fabriclens.model.moe import MOE_LAYER_HOST_MS

Workload = Literal["pretrain", "full-finetune", "lora", "inference"]
Recompute = Literal["none", "selective", "op", "full"]
Precision = Literal["bf16", "fp16", "fp8", "int8", "int4", "fp4"]

# fp4 is NVFP4, the format of NVIDIA's Blackwell checkpoints: 4-bit E2M1 values with one FP8
# (E4M3) scale per block of 16 (and a float32 scale per tensor), 4.5 bits a weight (NVIDIA's
# NVFP4 format; the modelopt checkpoints' quantization_config: group_size 16)
WEIGHT_BYTES: dict[str, float] = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5,
                                  "fp4": 0.5625}  # fmt: skip
# what a KV cache may be kept in (no engine keeps one in NVFP4)
KV_PRECISIONS = ("bf16", "fp16", "fp8", "int8", "int4")


@dataclass(frozen=True, slots=True)
class TrainConfig:
    """Everything about a training step except the model and the hardware."""

    gpus: int
    gpus_per_node: int
    tp: int = 1
    pp: int = 1
    dp: int = 1
    cp: int = 1
    ep: int = 1
    # tensor parallelism inside the experts (Megatron-Core's expert_tensor_parallel_size): 0 is
    # the attention's tp, its default; 1 keeps each expert whole on its rank (MoE Parallel Folding)
    etp: int = 0
    zero: int = 1
    recompute: Recompute = "none"
    sequence_parallel: bool = False
    seq_len: int = 4096
    global_batch: int = 256  # sequences per optimizer step
    micro_batch: int = 1
    interleave: int = 1  # virtual pipeline stages per GPU
    precision: Precision = "bf16"  # compute precision of the matmuls
    workload: Workload = "pretrain"
    flash_attention: bool = True
    dropout: bool = False
    lora_rank: int = 16
    lora_base_bits: int = 16  # 16 = LoRA on a bf16 base, 4 = QLoRA
    lora_targets: str = "all"  # the linear layers that carry adapters (model/lora.py LORA_TARGETS)
    # the blocks' input projections: separate linear layers, or q/k/v and gate/up fused into one
    # each (catalog PROJECTION_LAYOUTS, the framework's); a LoRA adapter on a fused one reads once
    projections: str = "separate"
    grad_bytes: float = 2.0  # gradient all-reduce element size (bf16)
    overlap_dp: bool = True  # gradient comm bucketed behind backward compute
    # how the data-parallel reduction and gather are split into calls (catalog GRAD_BUCKETS;
    # model/comm.py: bucket_params): one call over the whole gradient, or Megatron-Core's buckets
    grad_buckets: str = "whole"
    # how ZeRO-3 gathers weights and scatters gradients (catalog ZERO3_CALLS): a call per layer,
    # prefetched behind the compute, or a call per parameter tensor with the device synchronized
    zero3_calls: str = "per-layer"
    # the share of each kernel's achievable rate the training framework reaches (catalog
    # frameworks.toml); 1.0 is the kernel-level step: every kernel at its achievable rate
    framework_efficiency: float = 1.0
    attention_kernel: str = "flash"  # the framework's (catalog frameworks.toml, ATTENTION_KERNELS)
    elementwise: str = "fused"  # ELEMENTWISE_MODES: fused or op by op (model/elementwise.py)
    moe_dispatch: str = "all-to-all"  # MoE tokens across nodes (MOE_DISPATCH_MODES, model/moe.py)
    pipeline_split: str = "even"  # layers over pipeline stages (PIPELINE_SPLITS, model/memory.py)
    # what a full recompute reruns: the whole layer, or only what the backward reads (JAX: all but
    # the layer's last matmul; RECOMPUTE_RERUNS, catalog/schema.py)
    recompute_reruns: str = "layer"
    # host time per decoder layer per micro-batch (forward and backward) that the kernels do not
    # cover, at the kernel level (catalog frameworks.toml layer_host_ms; eager PyTorch)
    layer_host_s: float = 0.0
    # host time per MoE layer per micro-batch (forward and backward) that its kernels do not
    # cover, at the kernel level: the router's and dispatcher's small kernels and the dispatcher's
    # device-to-host sync (model/moe.py MOE_LAYER_HOST_MS); only MoE layers pay it
    moe_layer_host_s: float = MOE_LAYER_HOST_MS / 1e3
    # MoE all-to-all hidden behind another micro-batch's compute (Megatron-Core's
    # overlap_moe_expert_parallel_comm, DeepSeek's DualPipe); off: exposed, as by default
    ep_overlap: bool = False
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def grad_reduce(self) -> str:
        """The element type gradients are reduced and kept in (a GRAD_REDUCE_DTYPES name)."""
        names = [k for k, v in GRAD_REDUCE_DTYPES.items() if v == self.grad_bytes]
        return names[0] if names else f"{self.grad_bytes:g}-byte"

    @property
    def expert_tp(self) -> int:
        """Tensor parallelism inside the experts: the attention's unless set to 1."""
        return self.etp or self.tp

    @property
    def model_parallel(self) -> int:
        """GPUs in one model replica's tensor x context x pipeline slice."""
        return self.tp * self.cp * self.pp

    @property
    def microbatches(self) -> int:
        """Micro-batches per pipeline per optimizer step (gradient accumulation steps x pp)."""
        return max(1, self.global_batch // (self.dp * self.micro_batch))

    @property
    def trains_base(self) -> bool:
        """False for LoRA: the base weights are frozen."""
        return self.workload != "lora"


@dataclass(frozen=True, slots=True)
class Group:
    """One kind of parallel group and how its ranks spread over nodes."""

    name: str  # tp, cp, ep, dp, pp
    size: int
    per_node: int  # ranks of one group on one node
    concurrent_per_node: int  # groups of this kind with ranks on one node (they share NICs)

    @property
    def crosses_nodes(self) -> bool:
        """True when the group spans more than one node."""
        return self.size > self.per_node


def ranks_per_node(size: int, gpus_per_node: int, gpus: int) -> int:
    """Ranks of the worst-placed group of ``size`` consecutive ranks on one node.

    Groups of consecutive ranks tile the nodes only when the size divides the node (or the node
    the size); otherwise some groups straddle a node boundary (tp 4 on 6-GPU nodes: ranks 4-7
    sit 2 + 2 on two nodes) and their collectives cross the network: gcd(size, gpus_per_node)."""
    if gpus <= gpus_per_node:
        return max(1, min(size, gpus_per_node))
    return math.gcd(size, gpus_per_node)


def place_groups(cfg: TrainConfig) -> dict[str, Group]:
    """Where each group's ranks sit, given Megatron's tp-cp-dp-pp rank order."""
    gpn = cfg.gpus_per_node
    groups: dict[str, Group] = {}
    stride = 1
    for name, size in (("tp", cfg.tp), ("cp", cfg.cp), ("dp", cfg.dp), ("pp", cfg.pp)):
        per_node = max(1, min(size, gpn // stride)) if stride <= gpn else 1
        if name == "tp":  # a tp group that straddles two nodes crosses the network
            per_node = ranks_per_node(size, gpn, cfg.gpus)
        # ranks of one node = gpn; this group's ranks on it = per_node
        concurrent = max(1, min(gpn, cfg.gpus) // per_node)
        groups[name] = Group(name, size, per_node, concurrent)
        stride *= size
    # gradients (and ZeRO shards) are reduced over the data- and context-parallel ranks together:
    # Megatron's tp-cp-dp order makes them one contiguous group of cp x dp at stride tp
    per_node = max(1, min(cfg.cp * cfg.dp, gpn // cfg.tp)) if cfg.tp <= gpn else 1
    groups["dp-cp"] = Group("dp" if cfg.cp == 1 else "dp x cp", cfg.cp * cfg.dp, per_node,
                            max(1, min(gpn, cfg.gpus) // per_node))  # fmt: skip
    # expert parallelism: Megatron-Core's expert rank generator lays the same ranks out as
    # etp x ep x expert-dp x pp (order tp-cp-ep-dp-pp with the expert-TP degree as tp), so ep
    # consecutive ranks at stride etp: with the experts split over the TP ranks (etp = tp) they
    # are carved from the cp x dp ranks; with --etp 1 (MoE Parallel Folding) from all of a
    # stage's tp x cp x dp ranks (parallel_state.initialize_model_parallel)
    etp = cfg.expert_tp
    ep_per_node = max(1, min(cfg.ep, gpn // etp)) if etp <= gpn else 1
    groups["ep"] = Group("ep", cfg.ep, ep_per_node, max(1, min(gpn, cfg.gpus) // ep_per_node))
    # expert data parallelism: the ranks holding the same experts, at stride etp x ep; each of a
    # node's ranks is in one such group, so they all run at once and share its NICs
    stride = etp * cfg.ep
    edp = max(1, expert_dp(cfg))
    edp_per_node = max(1, min(edp, gpn // stride)) if stride <= gpn else 1
    groups["dp-expert"] = Group(
        "dp-expert", edp, edp_per_node, max(1, min(gpn, cfg.gpus) // edp_per_node)
    )
    return groups


def expert_dp(cfg: TrainConfig) -> int:
    """Ranks of a pipeline stage that hold the same experts: tp x cp x dp / (etp x ep) (dp x cp
    / ep when the experts are split over the TP ranks)."""
    return cfg.tp * cfg.cp * cfg.dp // (cfg.expert_tp * cfg.ep)
