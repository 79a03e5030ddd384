"""Catalog entry schemas (pydantic v2). Every entry carries ``source``; estimates say so."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class _Entry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(description="catalog id, lower case, used on the command line")
    aliases: tuple[str, ...] = ()
    title: str = ""
    source: str = Field(min_length=3, description="paper, vendor spec or measured run")
    notes: str = ""


class Gpu(_Entry):
    """One accelerator SKU. Peaks are dense (no structured sparsity)."""

    memory_bytes: int = Field(gt=0)
    hbm_bw_bytes_per_s: float = Field(gt=0)
    bf16_flops_per_s: float = Field(gt=0)
    fp16_flops_per_s: float = Field(gt=0)
    fp8_flops_per_s: float = Field(ge=0, description="0 where the GPU has no FP8 tensor cores")
    matmul_efficiency: float = Field(gt=0, le=1, description="best achievable GEMM / peak")
    matmul_efficiency_source: str = Field(min_length=3)
    memory_bw_efficiency: float = Field(gt=0, le=1, description="achievable streaming / peak")
    intra_link: str = Field(description="default intra-node link id")
    host_link: str = Field(
        default="pcie4-x16", description="PCIe link between host memory and the GPU"
    )
    max_gpus_per_node: int = Field(default=8, ge=1)
    power_w: float = Field(default=0, ge=0)


class IntraLink(_Entry):
    """How GPUs inside one node talk to each other."""

    kind: Literal["none", "pcie", "nvlink"]
    bw_bytes_per_s: float = Field(ge=0, description="line rate per GPU, one direction")
    efficiency: float = Field(gt=0, le=1, description="achievable bus bandwidth / line rate")
    efficiency_source: str = Field(min_length=3)
    latency_s: float = Field(ge=0, description="per ring step (hop) latency")
    max_gpus: int = Field(ge=1, description="most GPUs this link joins")
    p2p: bool = True
    nvls: bool = False
    nvls_algbw_fraction: float = Field(
        default=0.0, ge=0, le=1, description="NVLink SHARP all-reduce algbw / line rate"
    )

    @model_validator(mode="after")
    def _nvls_needs_fraction(self) -> IntraLink:
        if self.nvls and self.nvls_algbw_fraction <= 0:
            raise ValueError("an NVLS link needs nvls_algbw_fraction > 0")
        return self


class Network(_Entry):
    """An inter-node network choice: one NIC of this kind per `nics_per_node`."""

    kind: Literal["tcp", "roce", "ib"]
    rate_bits_per_s: float = Field(gt=0, description="line rate per NIC port")
    efficiency: float = Field(gt=0, le=1, description="achievable collective bus bw / line rate")
    efficiency_source: str = Field(min_length=3)
    latency_s: float = Field(gt=0, description="per-message latency (alpha) through the stack")
    cost_relative: float = Field(gt=0, description="per-node-port cost, 100GbE = 1.0 (estimate)")
    mtu_bytes: int = Field(default=1500, gt=0)

    @property
    def bw_bytes_per_s(self) -> float:
        """Line rate in bytes per second."""
        return self.rate_bits_per_s / 8


class ModelSpec(_Entry):
    """A transformer architecture; enough to count parameters, FLOPs, memory and traffic."""

    family: str = "llama"
    layers: int = Field(gt=0)
    hidden: int = Field(gt=0)
    heads: int = Field(gt=0)
    kv_heads: int = Field(gt=0)
    head_dim: int = Field(default=0, ge=0, description="0 means hidden / heads")
    ffn: int = Field(gt=0)
    vocab: int = Field(gt=0)
    tied_embeddings: bool = False
    mlp: Literal["swiglu", "gelu"] = "swiglu"
    positions: Literal["rotary", "learned", "alibi"] = "rotary"
    max_positions: int = Field(default=4096, gt=0)
    norm: Literal["rms", "layer"] = "rms"
    attn_bias: bool = False
    qkv_bias: bool = False
    mlp_bias: bool = False
    sliding_window: int = Field(default=0, ge=0)
    # Mixture of experts
    experts: int = Field(default=0, ge=0)
    experts_per_token: int = Field(default=0, ge=0)
    moe_ffn: int = Field(default=0, ge=0)
    shared_experts: int = Field(default=0, ge=0)
    first_dense_layers: int = Field(default=0, ge=0)
    # Multi-head latent attention (DeepSeek-V2/V3)
    q_lora_rank: int = Field(default=0, ge=0)
    kv_lora_rank: int = Field(default=0, ge=0)
    qk_rope_head_dim: int = Field(default=0, ge=0)
    qk_nope_head_dim: int = Field(default=0, ge=0)
    v_head_dim: int = Field(default=0, ge=0)
    params_published: float = Field(default=0, ge=0, description="published parameter count")

    @model_validator(mode="after")
    def _consistent(self) -> ModelSpec:
        if self.heads % self.kv_heads:
            raise ValueError(
                f"heads ({self.heads}) must be a multiple of kv_heads ({self.kv_heads})"
            )
        if self.experts and not (0 < self.experts_per_token <= self.experts):
            raise ValueError("experts_per_token must be between 1 and experts")
        return self

    @property
    def is_moe(self) -> bool:
        """True for a mixture-of-experts model."""
        return self.experts > 0

    @property
    def is_mla(self) -> bool:
        """True when attention is multi-head latent attention."""
        return self.kv_lora_rank > 0


class Engine(_Entry):
    """An inference engine's fixed costs per decode step (on top of weights and KV reads)."""

    step_overhead_s: float = Field(ge=0, description="per decode step (scheduling, sampling)")
    layer_overhead_s: float = Field(ge=0, description="per decoder layer per step (launch gaps)")
