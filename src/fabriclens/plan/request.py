"""What the user asked for, before defaults are filled in."""

from __future__ import annotations

from dataclasses import dataclass, field

from fabriclens.catalog.schema import ModelSpec


@dataclass(frozen=True)
class PlanRequest:
    """Inputs of `fabriclens plan`; None means "choose a sensible default and say so"."""

    model: ModelSpec
    gpu: str
    gpus: int
    # False when the user left --gpus out: an inference plan then takes the fewest GPUs that
    # hold the model (a training plan keeps ``gpus``, one 8-GPU node by default)
    gpus_given: bool = True
    workload: str = "pretrain"
    gpus_per_node: int | None = None
    networks: tuple[str, ...] = ()
    nics_per_node: int | None = None
    comparison_nics: int | None = None  # one NIC count for every network compared (like_for_like)
    intra_link: str | None = None
    tp: int | None = None
    pp: int | None = None
    dp: int | None = None
    cp: int | None = None
    ep: int | None = None
    zero: int | None = None
    recompute: str | None = None
    sequence_parallel: bool | None = None
    seq_len: int | None = None
    global_batch: int | None = None
    micro_batch: int | None = None
    interleave: int | None = None
    precision: str | None = None
    flash_attention: bool = True
    lora_rank: int = 16
    lora_base_bits: int = 16
    framework: str | None = None  # training framework (catalog frameworks.toml); None: default
    grad_reduce: str | None = None  # bf16 | fp32 gradient reduction; None: the framework's
    moe_dispatch: str | None = None  # all-to-all | node-dedup (MoE); None: the framework's
    ep_overlap: bool = False  # MoE all-to-all hidden behind another micro-batch's compute
    # inference
    batch: int = 1
    prompt_tokens: int = 1024
    output_tokens: int = 256
    engine: str = "vllm"
    kv_precision: str | None = None
    extra_notes: tuple[str, ...] = field(default_factory=tuple)
    fabric_design: object | None = None  # a fabric.topology.FabricDesign (`plan --fabric`)
