"""Inference: prefill (time to first token), decode speed, KV cache, tensor-parallel traffic.

Decode is bound by reading the weights and the KV cache once per step (memory-bandwidth
roofline), or by compute for large batches; the engine adds fixed per-step and per-layer costs
(catalog: engines.toml). Tensor parallelism adds two all-reduces of batch x hidden values per
layer per token, which are latency-bound and therefore sensitive to the link they cross.
A mixture of experts reads only the experts the batch's tokens select: with uniform routing,
E x (1 - (1 - k/E)^B) distinct experts per layer for B tokens; with expert parallelism each rank
holds E/ep of them and the step waits for the rank whose share the batch touches most
(busiest_rank_experts). Under load each output token also
carries the prompts of the requests that join meanwhile (serving_tpot_s). A hybrid model's
linear-attention layers keep no KV cache: each decode step reads and writes their recurrent
state, a fixed size per sequence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import partial

from fabriclens.catalog.gemm_growth import gemm_growth
from fabriclens.catalog.schema import Engine, Gpu, ModelSpec
from fabriclens.model.arch import (
    ParamCounts,
    attention_core_flops_per_token,
    count_params,
    decode_attention_flops_per_token,
    expert_params,
    head_params,
    index_key_bytes_per_token,
    indexer_flops_per_token,
    k_width,
    kv_bytes_per_token,
    kv_read_bytes_per_token,
    linear_projections,
    linear_share,
    moe_layers,
    q_width,
    routed_width,
    state_bytes,
    state_bytes_per_layer,
    tp_share,
    v_dim,
    v_width,
)
from fabriclens.model.collectives import (
    CollectiveEstimate,
    Fabric,
    Op,
    estimate_collective,
    estimate_engine_all_reduce,
)
from fabriclens.model.layout import WEIGHT_BYTES, ranks_per_node
from fabriclens.model.memory import MemoryLedger, inference_memory, stage_layer_counts
from fabriclens.model.step import peak_flops

PREFILL_CHUNK_TOKENS = 8192  # chunked prefill working set (vLLM-style), estimate
# A block-scaled FP8 GEMM at decode batch sizes does not reach the HBM roofline: with one
# token there is one tile row, so only N/128 thread blocks run and each walks the whole K
# dimension in 128-wide steps, one dependent load after another. DeepSeek-V3 shapes at batch 1
# (sgl-project/sglang#5820, vLLM CUTLASS kernel): 14.5 us for N=3072 K=1536 (12 steps) and
# 20.6 us for N=512 K=7168 (56 steps): 0.139 us per K step. The fixed part of those timings
# (launch, epilogue) is the engine's per-layer kernel gaps, counted in engines.toml.
FP8_GEMM_K_STEP_S = (20.6e-6 - 14.5e-6) / (7168 / 128 - 1536 / 128)


def decode_gemms(
    spec: ModelSpec,
    tp: int,
    moe_layer: bool,
    touched: float,
    linear: bool = False,
    mlp: bool = True,
    ep: int = 1,
    attn_tp: int | None = None,
) -> list[tuple[float, int]]:
    """(weights per GPU, input width K) of each GEMM kernel one decoder layer runs in a decode
    step: QKV and output projections (MLA: the query down/up, the KV down-projection, the two
    absorbed per-head matmuls and the output; a hybrid's ``linear`` layer: its input and output
    projections), then the MLP (gate-up, down) or, in a MoE layer, the router, the shared
    experts' two GEMMs and the fused routed-expert kernel's two (none for a layer without an
    MLP, ``mlp`` False). With expert parallelism ``ep`` (dividing ``tp``) each routed expert is
    split only over the tp / ep ranks of its group, and ``touched`` is ep x the experts the
    busiest rank reads. ``attn_tp`` (data-parallel attention) splits the attention's GEMMs over
    fewer ranks than the MLP's."""
    h = spec.hidden
    a_tp = attn_tp or tp  # the ranks the attention's GEMMs are split over
    attn: list[tuple[float, int]]
    if linear:  # column-parallel input projections, the row-parallel output last
        projections = linear_projections(spec)
        attn = [(i * o / a_tp, i // a_tp if n == len(projections) - 1 else i)
                for n, (i, o) in enumerate(projections)]  # fmt: skip
    elif spec.is_mla:
        r = spec.q_lora_rank
        q = [(h * r, h), (r * q_width(spec) / a_tp, r)] if r else [(h * q_width(spec) / a_tp, h)]
        absorb = spec.kv_lora_rank * spec.heads / a_tp
        attn = [*q, (h * (spec.kv_lora_rank + spec.qk_rope_head_dim), h),
                (absorb * spec.qk_nope_head_dim, spec.qk_nope_head_dim),
                (absorb * spec.v_head_dim, spec.kv_lora_rank),
                (spec.heads * v_dim(spec) * h / a_tp, spec.heads * v_dim(spec) // a_tp)]  # fmt: skip
    else:
        gate = q_width(spec) if spec.attn_output_gate else 0  # Qwen3-Next's output gate
        qkv = h * (q_width(spec) + gate + k_width(spec) + v_width(spec)) / a_tp
        attn = [(qkv, h), (q_width(spec) * h / a_tp, q_width(spec) // a_tp)]
    gated = 2 if spec.mlp == "swiglu" else 1
    if not mlp:
        return attn
    if not moe_layer:
        f = spec.ffn
        return [*attn, (gated * h * f / tp, h), (f * h / tp, f // tp)]
    f = spec.moe_ffn or spec.ffn
    w = routed_width(spec)  # a LatentMoE's experts read and write its latent
    shared = spec.shared_experts * f * h / tp
    routed = touched * f * w / tp
    moe_tp = max(1, tp // ep)  # the ranks one routed expert is split over
    latent = (
        [(h * spec.moe_latent, h), (spec.moe_latent * h, spec.moe_latent)]
        if spec.moe_latent
        else []
    )
    return [*attn, (h * spec.experts, h), *latent, (gated * shared, h),
            (shared, max(1, f * spec.shared_experts // tp)), (gated * routed, w),
            (routed, max(1, f // moe_tp))]  # fmt: skip


@dataclass(frozen=True, slots=True)
class TokenComm:
    """Per generated token: one kind of collective across a parallel group."""

    group: str
    op: str
    size_bytes: float
    count_per_token: float
    link: str
    time_per_token_s: float


@dataclass(frozen=True, slots=True)
class InferenceEstimate:
    """Serving one batch: prefill, decode, KV cache and communication."""

    ttft_s: float
    prefill_s: float
    prefill_compute_s: float  # the prompts' matmuls and attention: no weight read, no overhead
    prefill_comm_s: float  # the prompts' tensor-parallel all-reduces and pipeline sends
    decode_step_s: float
    decode_slack_s: float  # compute a memory-bound step leaves idle while the weights stream
    decode_tokens_per_s: float  # per sequence
    batch_tokens_per_s: float
    e2e_s: float
    kv_cache_bytes_per_token: float  # whole model, one replica
    kv_cache_bytes_per_gpu: float
    weights_read_per_step_bytes: float
    decode_bound: str  # memory bandwidth, compute, communication, engine overhead
    comm: tuple[TokenComm, ...]
    memory: MemoryLedger
    assumptions: tuple[str, ...]
    engine_caveat: str = ""  # how far the engine's published runs sit from this (catalog)
    precision: str = ""  # the weights' format served (bf16, fp8, int8, int4)
    kv_precision: str = ""  # the KV cache's
    # the engine's per-step host time the GPU's work hides (an engine that overlaps its
    # scheduling); a release before the overlap adds it to every step
    host_step_hidden_s: float = 0.0
    overlap_since: str = ""  # the engine's first release that hides it
    state_bytes_per_sequence: float = 0.0  # a hybrid's recurrent state, whole model, one replica
    # speculative decoding: one step (the draft's passes and the model's verification of their
    # tokens) and its draft passes; decode_step_s is then that step over the accept length
    spec_step_s: float = 0.0
    draft_s: float = 0.0
    plain_decode_step_s: float = 0.0  # the same batch without the draft (set by the planner)
    accept_length: float = 1.0
    spec_tokens: int = 0
    draft_topk: int = 1  # candidates kept a draft pass (SGLang's --speculative-eagle-topk)
    verify_tokens: int = 0  # positions a sequence the model verifies a step (0: no drafts)
    draft: str = ""
    # a serving benchmark's mean time per output token at this concurrency, the prompts of the
    # requests that join meanwhile included (serving_tpot_s; set by the planner, 0: not set)
    tpot_under_load_s: float = 0.0


def qk_norm_exchanges(
    spec: ModelSpec, prefill_tokens: float, decode_tokens: float
) -> list[tuple[Op, float, float]]:
    """(collective, bytes at prefill, bytes a decode step) of each exchange one layer's query and
    key norms make between tensor-parallel ranks (ModelSpec.qk_norm_exchange): the two fp32 sums
    of squares a token all-reduced in one call, or the whole query, then key, projection gathered
    in 16 bits (an all-gather's size is the gathered array's, as in nccl-tests)."""
    if spec.qk_norm_exchange == "all_reduce":
        return [("all_reduce", prefill_tokens * 8.0, decode_tokens * 8.0)]
    if spec.qk_norm_exchange == "all_gather":
        return [
            ("all_gather", prefill_tokens * width * 2.0, decode_tokens * width * 2.0)
            for width in (q_width(spec), k_width(spec))
        ]
    return []


def _nccl_all_reduce(
    size_bytes: float, ranks: int, fabric: Fabric, ranks_per_node: int
) -> CollectiveEstimate:
    return estimate_collective("all_reduce", size_bytes, ranks, fabric, ranks_per_node)


def serving_tpot_s(
    step: InferenceEstimate, one: InferenceEstimate, batch: int, output_tokens: int, mixed: bool
) -> float:
    """Mean time per output token of one request in steady-state continuous batching.

    ``step`` is the decode step of the batch, ``one`` the estimate of a single request (its
    prompt's prefill). Each of the batch's other ``batch - 1`` slots turns over once while a
    request generates its ``output_tokens``, and each newcomer's prompt runs on the same GPUs:
    k = (batch - 1) / output_tokens prompts per step. With ``mixed`` prefill (vLLM's chunked
    prefill, TensorRT-LLM's in-flight batching) the prompts' chunks ride in the decode steps: the
    weights are read once for both, so the prompts cost only the compute the memory-bound step
    leaves idle, beyond it, plus their all-reduces. Otherwise (SGLang's default, TGI) each prompt
    is a prefill pass the running requests wait for, weights re-read and engine overhead paid.
    Negligible for short prompts and long answers; for long prompts (RAG, agents) with short
    answers it can be the larger part of each token."""
    if output_tokens <= 1 or batch <= 1:
        return step.decode_step_s
    k = (batch - 1) / output_tokens
    if mixed:
        extra = max(0.0, k * one.prefill_compute_s - step.decode_slack_s) + k * one.prefill_comm_s
    else:
        extra = k * one.prefill_s
    return step.decode_step_s + extra


# Kernels per decoder layer behind an engine's `layer_overhead_s` (CUDA-graph replay leaves a
# gap of a few microseconds after each): a dense layer with grouped-query attention runs about
# ten (two norms, the QKV and output GEMMs, rotary, attention, the MLP's gate-up GEMM,
# activation and down GEMM, the residual adds).
DENSE_LAYER_KERNELS = 10
# ...four of them the MLP's (its norm, gate-up GEMM, activation and down GEMM): a layer without an
# MLP (ModelSpec.mlp_free_layers) runs that many fewer
MLP_KERNELS = 4
# A mixture-of-experts MLP replaces the dense MLP's three kernels with seven: the router GEMM,
# top-k, the token sort (moe_align_block_size), the gate-up grouped GEMM, the activation, the
# down grouped GEMM and the weighted sum of the top-k outputs (vLLM's and SGLang's fused_experts,
# fused_moe.py); shared experts add a dense MLP's three.
MOE_EXTRA_KERNELS = 4
SHARED_EXPERT_KERNELS = 3
# Multi-head latent attention runs about ten kernels where grouped-query attention runs five:
# the fused q/kv down-projection, two norms, the q up-projection, the key absorption (a batched
# GEMM), rotary, the cache write, the MLA decode kernel, the value absorption and the output
# GEMM (SGLang's DeepseekV2AttentionMLA.forward_absorb).
MLA_EXTRA_KERNELS = 5
# A family that normalises its queries and keys (ModelSpec.qk_norm: Qwen3, OLMo 2, Gemma 3) runs
# two more: the query norm and the key norm, apart from the rotary kernel (vLLM's Qwen3Attention
# calls q_norm and k_norm as two RMSNorm layers; SGLang's Qwen3-MoE decode trace in
# sgl-project/sglang#22355 counts 480 apply_qk_norm launches beside 240 rotary ones)
QK_NORM_KERNELS = 2
# A linear layer's decode runs more kernels than a GQA attention's four (QKV GEMM, rotary,
# attention with its cache write, output GEMM): SGLang's Qwen3GatedDeltaNet under a CUDA graph
# runs the qkvz and ba input GEMMs, fused_qkvzba_split_reshape_cat, the convolution's update,
# the gated delta-rule update, the gated RMSNorm and the output GEMM, seven
# (sgl-project/sglang python/sglang/srt/models/qwen3_next.py); vLLM's MambaMixer2 the input
# GEMM, causal_conv1d_update, selective_state_update, the gated RMSNorm and the output GEMM,
# five (vllm/model_executor/layers/mamba/mamba_mixer2.py)
LINEAR_EXTRA_KERNELS = {"gated_deltanet": 3, "mamba2": 1}
# A sparse-attention indexer runs nine more in its layer: its query GEMM (wq_b), the fused key
# and head-weight GEMM (wk_weights_proj), the key's LayerNorm, rotary, the query's FP8 quant and
# the head weights' scaling (vLLM's DeepSeek-V3.2 Indexer.forward, models/deepseek_v2.py), then in
# sparse_attn_indexer's decode path the key's FP8 quant and cache write, the paged MQA logits over
# the cached keys, and the top-k
INDEXER_KERNELS = 9
# A LatentMoE layer runs two more GEMMs, down to the latent before its experts and back up after
# (fc1_latent_proj and fc2_latent_proj in NVIDIA's NemotronH modules: transformers' remote code
# for Nemotron 3 and TensorRT-LLM's modeling_nemotron_h.py)
LATENT_MOE_KERNELS = 2
# ...and a fused routed-expert call takes longer than its kernels' gaps and weight read. Measured at
# batch 1 in a CUDA graph (SGLang's Triton fused_moe, top-k through the weighted sum: NVIDIA's
# aiconfigurator tables, 159 calls on B200, H100 and H200 at tensor parallel 2-8, BF16 and block
# FP8; catalog/data/moe_kernels.csv), it takes its experts' read at the GPU's decode streaming rate
# (Gpu.decode_stream_efficiency) plus 6.4 us, 4.79 us per 1,024 of the width its gate-up GEMM reads
# (the hidden size, or a LatentMoE's latent) and 1.33 us per routed expert a token: a least-squares
# fit, within 7.6% of the median call (tests/unit/test_moe_call.py). The grouped GEMMs walk their K
# dimension in dependent steps over a few experts' tiles, so the wider the token, the longer. The
# engines' own benchmarks: 40 us for Qwen3-30B-A3B's FP8 experts on an H100 (vllm#24700; the fit:
# 40), 29 us for Qwen3-Next's on an H100 (vllm#44830; the fit: 32), 32 us for Qwen3-235B-A22B's
# share at tensor parallel 8 on an H200 (sglang#11730; the fit: 41, the table's own call of that
# shape: 38). The call's six kernels (top-k, the sort, the two grouped GEMMs, the activation, the
# weighted sum) are counted as kernel gaps already; what the fit adds beyond them is charged to each
# call.
MOE_CALL_BASE_S = 6.42e-6
MOE_CALL_PER_1024_WIDTH_S = 4.79e-6
MOE_CALL_PER_EXPERT_S = 1.33e-6
MOE_CALL_KERNELS = 6


def moe_call_fixed_s(spec: ModelSpec) -> float:
    """A fused routed-expert call's latency beyond its weight read, at batch 1 (the fit above)."""
    width = routed_width(spec) / 1024
    return (
        MOE_CALL_BASE_S
        + MOE_CALL_PER_1024_WIDTH_S * width
        + MOE_CALL_PER_EXPERT_S * spec.experts_per_token
    )


def moe_call_latency_s(spec: ModelSpec, per_kernel_s: float) -> float:
    """What a fused routed-expert call adds beyond the gaps of its kernels, already counted."""
    return max(0.0, moe_call_fixed_s(spec) - MOE_CALL_KERNELS * per_kernel_s)


def extra_kernels(spec: ModelSpec) -> int:
    """Kernels a decode step runs beyond DENSE_LAYER_KERNELS per layer: those of the MoE MLPs,
    their shared experts, latent attention, sparse-attention indexers, linear attention and
    query/key norms."""
    extra = moe_layers(spec) * (
        MOE_EXTRA_KERNELS + (SHARED_EXPERT_KERNELS if spec.shared_experts else 0)
    )
    extra += spec.layers * MLA_EXTRA_KERNELS if spec.is_mla else 0
    extra += spec.linear_layers * LINEAR_EXTRA_KERNELS[spec.linear_kind]
    extra += spec.index_layers * INDEXER_KERNELS
    extra += moe_layers(spec) * LATENT_MOE_KERNELS if spec.moe_latent else 0
    # a hybrid's query/key norms run in its softmax layers only
    norms = spec.layers - spec.linear_layers
    return extra + (norms * QK_NORM_KERNELS if spec.qk_norm else 0)


def kernel_kinds(spec: ModelSpec) -> str:
    """What extra_kernels counted for ``spec``, in words."""
    kinds = [what for what, has in (("mixture-of-experts", spec.is_moe),
             ("latent-attention", spec.is_mla), ("sparse-attention indexer", spec.is_sparse),
             ("linear-attention", spec.is_hybrid),
             ("query/key norm", spec.qk_norm)) if has]  # fmt: skip
    return ", ".join(kinds[:-1]) + (" and " if len(kinds) > 1 else "") + kinds[-1] if kinds else ""


def engine_extra_kernels(engine: Engine, spec: ModelSpec) -> int:
    """extra_kernels for an engine whose MoE and MLA kernels were counted (moe_kernel_gaps),
    else 0: its per-layer constant alone."""
    return extra_kernels(spec) if engine.moe_kernel_gaps else 0


def engine_overhead_s(engine: Engine, spec: ModelSpec) -> float:
    """An engine's fixed cost per decode step: its scheduling, plus a kernel gap of
    layer_overhead_s / DENSE_LAYER_KERNELS for each kernel of every layer, counted by layer kind
    where the engine's kernels were read (more for a mixture-of-experts MLP, shared experts and
    latent attention), and there each fused routed-expert call's own latency
    (moe_call_latency_s)."""
    per_kernel = engine.layer_overhead_s / DENSE_LAYER_KERNELS
    moe_calls = (
        moe_layers(spec) * moe_call_latency_s(spec, per_kernel) if engine.moe_kernel_gaps else 0.0
    )
    return (
        engine.step_overhead_s
        + engine.layer_overhead_s * spec.layers
        - per_kernel * MLP_KERNELS * spec.mlp_free_layers
        + per_kernel * engine_extra_kernels(engine, spec)
        + moe_calls
    )


def experts_touched(experts: int, per_token: int, tokens: int) -> float:
    """Expected distinct experts a layer reads for ``tokens`` tokens (uniform routing)."""
    if experts == 0:
        return 0.0
    return experts * (1.0 - (1.0 - per_token / experts) ** tokens)


def busiest_rank_experts(experts: int, per_token: int, tokens: int, ep: int) -> float:
    """Expected distinct experts the busiest of ``ep`` expert-parallel ranks reads for ``tokens``
    tokens (uniform routing), each rank holding ``experts / ep`` of them.

    Each expert is touched with probability p = 1 - (1 - k/E)^B; a rank's count is then
    binomial over its E/ep experts (the dependence between experts, exact at one token, is
    small), and the expected maximum of ep independent counts is the sum over m >= 1 of
    1 - P(count < m)^ep. One rank (ep 1) reads the mean, experts_touched. At one token,
    DeepSeek-V3's 8 of 256 experts over 8 ranks put 1 on a rank on average and 2.5 on the
    busiest; at 64 tokens every rank reads nearly all of its 32."""
    if experts == 0 or ep <= 1:
        return experts_touched(experts, per_token, tokens)
    n = experts // ep
    p = 1.0 - (1.0 - per_token / experts) ** tokens
    below, expected = 0.0, 0.0  # P(count < m), E[max]
    for m in range(1, n + 1):
        below += math.comb(n, m - 1) * p ** (m - 1) * (1.0 - p) ** (n - m + 1)
        expected += 1.0 - min(1.0, below) ** ep
    return expected


# Speculative decoding: a draft proposes ``spec_tokens`` tokens one after another, and the model
# verifies them in one step over spec_tokens + 1 positions a sequence, emitting the drafts it
# accepts and one token of its own: ``accept_length`` a step on average (SGLang's bench_serving
# prints it as 'Accept length', vLLM's metrics as the mean acceptance length). The draft runs
# spec_tokens passes a step (SGLang's EAGLE worker: spec_tokens - 1 draft steps after the first
# token, taken from the last pass, and one draft-extend over the accepted tokens; vLLM's proposer
# spec_tokens passes). NVIDIA's aiconfigurator prices an MTP iteration the same way: the layers'
# work plus one layer a draft token, over nextn + 1 tokens a request, the accepted tokens applied
# above it (mtp_scale_factor in aiconfigurator_core/sdk/models/helpers.py). Its kinds:
#   mtp     the model's own next-token layer (DeepSeek-V3's MTP module; GLM-4.5 and later,
#           Qwen3-Next, Qwen3.5): one decoder layer of the model's kind, experts and latent
#           attention included, in the checkpoint's format (16 bits in an NVFP4 one), sharing
#           the model's embedding and LM head, after an eh_proj GEMM of 2 x hidden to hidden
#           kept whole in 16 bits on every rank (nn.Linear in SGLang's deepseek_nextn.py and
#           vLLM's MTP layers)
#   eagle   a one-layer dense head of the model's width in 16 bits (EAGLE, Li et al. 2024,
#           arXiv 2401.15077) after the same 2 x hidden fc, sharing the LM head
#   eagle3  as eagle with a 3 x hidden fc (three layers' features) and an LM head of its own over
#           32,000 draft tokens (EAGLE-3's draft_vocab_size, e.g. yuhuili/EAGLE3-LLaMA3.1-Instruct-8B)
DRAFT_KINDS = ("mtp", "eagle", "eagle3")
# A tree of drafts (SGLang's EAGLE with --speculative-eagle-topk k > 1, Li et al. 2024's
# EAGLE-2): the first pass proposes the k best next tokens of each sequence, and each later pass
# drafts from those k branches, so it runs over batch x k tokens (SGLang's EagleDraftInput:
# topk candidates per sequence, expanded step by step); the model then verifies the
# --speculative-num-draft-tokens best positions of the tree in one pass (a tree mask over them),
# at most 1 + k x steps of them, and still emits at most steps + 1 tokens a step.
# model families released with a next-token (MTP) layer: DeepSeek-V3/R1 and V3.2, GLM-4.5 to
# GLM-5, Qwen3-Next and Qwen3.5 (num_nextn_predict_layers / mtp_num_hidden_layers in config.json)
MTP_FAMILIES = frozenset({"deepseek_v3", "deepseek_v32", "glm4_moe", "glm4_moe_lite",
                          "glm_moe_dsa", "qwen3_next", "qwen3_5_moe_text", "qwen3_5_text"})  # fmt: skip
EAGLE3_DRAFT_VOCAB = 32000
DRAFT_DESCRIPTIONS = {
    "mtp": "decoder layer of the model's kind, its own next-token (MTP) layer, sharing its LM head",
    "eagle": "dense 16-bit layer of the model's width (EAGLE), sharing its LM head",
    "eagle3": "dense 16-bit layer of the model's width with a 32,000-token LM head (EAGLE-3)",
}
# a draft pass runs six kernels beyond its decoder layer: two input norms, the fc (eh_proj) GEMM,
# the final norm, the LM head GEMM and the top-k over its logits
DRAFT_EXTRA_KERNELS = 6


def default_draft(spec: ModelSpec) -> str:
    """The draft a model is served with by default: its own MTP layer where it has one."""
    return "mtp" if spec.family in MTP_FAMILIES else "eagle3"


def draft_layer_spec(spec: ModelSpec, kind: str) -> ModelSpec:
    """The draft as a one-layer model: the model's own kind of layer for ``mtp`` (a MoE layer
    where it has experts, full attention in a hybrid, its indexer in a sparse model), a dense
    layer of its width and attention heads for ``eagle``/``eagle3``."""
    one = {"layers": 1, "first_dense_layers": 0, "moe_layer_step": 1, "mlp_free_layers": 0,
           "linear_layers": 0, "sliding_window": 0, "sliding_window_layers": 0,
           "params_published": 0, "name": f"{spec.name}-{kind}-draft"}  # fmt: skip
    if kind == "mtp":
        return replace(spec, index_layers=min(1, spec.index_layers), **one)  # type: ignore[arg-type]
    dense = {"experts": 0, "experts_per_token": 0, "moe_ffn": 0, "shared_experts": 0,
             "expert_groups": 0, "expert_groups_per_token": 0, "moe_latent": 0, "q_lora_rank": 0,
             "kv_lora_rank": 0, "qk_rope_head_dim": 0, "qk_nope_head_dim": 0, "v_head_dim": 0,
             "index_heads": 0, "index_head_dim": 0, "index_topk": 0, "index_layers": 0,
             "attn_output_gate": False, "tied_embeddings": False,
             "vocab": EAGLE3_DRAFT_VOCAB if kind == "eagle3" else spec.vocab}  # fmt: skip
    return replace(spec, **one, **dense)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class DraftPass:
    """One pass of a speculative draft over the batch, and what the draft holds per GPU."""

    time_s: float
    weights_bytes_per_gpu: float  # beyond what it shares with the model
    kv_bytes_per_gpu: float


def _draft_format(kind: str, precision: str, weight_bytes_per_param: float) -> tuple[str, float]:
    """The draft's weight format and bytes a weight: an MTP layer comes in the checkpoint's
    format, but NVFP4 checkpoints keep it in 16 bits (TensorRT-LLM's DeepSeek-R1 on B200 blog,
    its precision table: '3x MTP Layers | bf16'); an EAGLE head is released in 16 bits."""
    if kind == "mtp" and precision != "fp4":
        return precision, weight_bytes_per_param
    return "bf16", WEIGHT_BYTES["bf16"]


def _fc_bytes(spec: ModelSpec, kind: str) -> float:
    """The draft's fc (eh_proj): 3 x hidden (EAGLE-3) or 2 x hidden to hidden, in 16 bits."""
    return (3 if kind == "eagle3" else 2) * spec.hidden * spec.hidden * WEIGHT_BYTES["bf16"]


def draft_memory(
    spec: ModelSpec,
    kind: str,
    *,
    tp: int,
    dp: int,
    batch: int,
    context_tokens: int,
    precision: str,
    kv_precision: str,
    weight_bytes_per_param: float,
    capacity_bytes: float,
) -> tuple[float, float]:
    """What a draft adds to each GPU: its weights beyond the embedding and LM head it shares
    with the model (an EAGLE-3 head's own head included) plus its fc kept whole on every rank,
    and its one layer's KV cache for ``batch`` sequences."""
    d = draft_layer_spec(spec, kind)
    counts = count_params(d)
    dprec, wbytes = _draft_format(kind, precision, weight_bytes_per_param)
    mem = inference_memory(
        d, counts, tp=tp, pp=1, batch=batch, context_tokens=context_tokens,
        prefill_chunk_tokens=batch, weight_precision=dprec,
        kv_bytes_per_value=WEIGHT_BYTES[kv_precision], capacity_bytes=capacity_bytes,
        weight_bytes_per_param=wbytes, dp=dp,
    )  # fmt: skip
    return _draft_adds(spec, kind, d, counts, mem, tp, wbytes)


def _draft_adds(
    spec: ModelSpec,
    kind: str,
    d: ModelSpec,
    counts: ParamCounts,
    mem: MemoryLedger,
    tp: int,
    wbytes: float,
) -> tuple[float, float]:
    """(weights, KV cache) per GPU the draft ``d`` adds, from its own ledger: less the
    embedding and LM head it shares with the model (an EAGLE-3 head keeps its own), plus its
    fc kept whole on every rank."""
    shared = counts.embedding + (head_params(d, counts) if kind != "eagle3" else 0.0)
    weights = mem.per_gpu_bytes["weights"] - shared / tp * wbytes + _fc_bytes(spec, kind)
    return weights, mem.per_gpu_bytes["kv_cache"]


def draft_pass(
    spec: ModelSpec,
    kind: str,
    gpu: Gpu,
    fabric: Fabric,
    engine: Engine,
    *,
    tp: int,
    batch: int,
    prompt_tokens: int,
    output_tokens: int,
    ep: int,
    dp: int,
    precision: str,
    kv_precision: str,
    weight_bytes_per_param: float,
) -> DraftPass:
    """One draft pass, planned as a decode step of the one-layer draft (draft_layer_spec): its
    layer's weights, KV cache, all-reduces and kernel gaps, the LM head it reads, plus its fc
    read whole in 16 bits on every rank and DRAFT_EXTRA_KERNELS more gaps; the engine's per-step
    host time is counted once, in the step."""
    d = draft_layer_spec(spec, kind)
    counts = count_params(d)
    dprec, wbytes = _draft_format(kind, precision, weight_bytes_per_param)
    est = estimate_inference(
        d, counts, gpu, fabric, replace(engine, step_overhead_s=0.0), tp=tp, pp=1,
        batch=batch, prompt_tokens=prompt_tokens, output_tokens=output_tokens,
        ep=ep if d.is_moe else 1, dp=dp, precision=dprec, kv_precision=kv_precision,
        weight_bytes_per_param=wbytes,
    )  # fmt: skip
    gaps = DRAFT_EXTRA_KERNELS * engine.layer_overhead_s / DENSE_LAYER_KERNELS
    mem_rate = gpu.decode_bytes_per_s
    weights, kv = _draft_adds(spec, kind, d, counts, est.memory, tp, wbytes)
    return DraftPass(
        time_s=est.decode_step_s + _fc_bytes(spec, kind) / mem_rate + gaps,
        weights_bytes_per_gpu=weights,
        kv_bytes_per_gpu=kv,
    )


def estimate_inference(
    spec: ModelSpec,
    counts: ParamCounts,
    gpu: Gpu,
    fabric: Fabric,
    engine: Engine,
    *,
    tp: int,
    pp: int,
    batch: int,
    prompt_tokens: int,
    output_tokens: int,
    ep: int = 1,
    dp: int = 1,
    precision: str = "bf16",
    kv_precision: str = "bf16",
    weight_bytes_per_param: float | None = None,
    memory_capacity_bytes: float | None = None,
    spec_tokens: int = 0,
    accept_length: float = 1.0,
    draft: str = "mtp",
    draft_topk: int = 1,
    verify_tokens: int = 0,
) -> InferenceEstimate:
    """Estimate one batch of ``batch`` requests on a tp x pp group of GPUs.

    ``ep`` splits a mixture of experts' routed experts over that many of each stage's tp ranks
    (expert parallelism inside the tensor-parallel group, as SGLang's --ep and vLLM's
    --enable-expert-parallel run it without data-parallel attention): each rank holds E/ep
    experts, each split over tp/ep ranks; the attention stays tensor-parallel and the MoE
    output is all-reduced over the tp ranks as before.

    ``dp`` runs the attention data-parallel inside the tensor-parallel group (SGLang's
    --enable-dp-attention with --dp, vLLM's --data-parallel-size for a MoE model): each of dp
    attention groups of tp/dp ranks serves its own share of the batch, holding the attention
    weights split over its tp/dp ranks and only its own requests' KV cache; the MLPs and experts
    run over all tp ranks on the gathered tokens (an all-gather before each MLP, a
    reduce-scatter after it, instead of the all-reduces). A step waits for the group with the
    most requests, ceil(batch / dp).

    ``weight_bytes_per_param`` overrides the nominal size of ``precision`` (an engine's own
    format: GGUF Q4_K_M is 4.89 bits, not 4); ``memory_capacity_bytes`` is what the engine may
    use of each GPU (default: all of it).

    ``spec_tokens`` > 0 decodes speculatively with a ``draft`` of DRAFT_KINDS proposing that many
    tokens a step, ``accept_length`` emitted a step on average: each step verifies
    spec_tokens + 1 positions a sequence (the weights and each sequence's KV cache read once for
    them, the FLOPs, experts touched and all-reduces of that many tokens) after spec_tokens draft
    passes (draft_pass), and decode_step_s is that step over accept_length. A tree of drafts
    (``draft_topk`` > 1) verifies ``verify_tokens`` positions a sequence instead, and its draft
    passes after the first run over batch x draft_topk tokens."""
    wbytes = WEIGHT_BYTES[precision] if weight_bytes_per_param is None else weight_bytes_per_param
    kvbytes = WEIGHT_BYTES[kv_precision]
    # NVFP4 weights run on FP4 tensor cores where the GPU has them (Blackwell), else their
    # kernels dequantize them and compute in 16 bits (W4A16)
    if precision == "fp4":
        compute = "fp4" if gpu.fp4_flops_per_s else "bf16"
    else:
        compute = "fp8" if precision == "fp8" and gpu.fp8_flops_per_s else "bf16"
    peak = peak_flops(gpu, compute)
    mm_rate = peak * gpu.gemm_efficiency(compute)
    attn_share, attn_source = gpu.serving_attention()
    attn_rate = gpu.bf16_flops_per_s * attn_share  # attention runs in BF16
    mem_rate = gpu.decode_bytes_per_s
    h = spec.hidden
    L = spec.layers
    stage_layers = stage_layer_counts(L, pp)
    per_layer_dense = counts.layers_dense / L
    moe_share = moe_layers(spec) / L  # MoE layers per decoder layer
    head_weights = head_params(spec, counts)  # a tied model's head is the embedding
    # data-parallel attention: attention split over attn_tp ranks on its group's requests
    attn_tp = tp // dp
    group_batch = -(-batch // dp)  # the busiest attention group's requests
    # positions a decode step runs: one a sequence, or the drafts and one more when verifying
    per_seq = (verify_tokens or spec_tokens + 1) if spec_tokens else 1
    dtok, g_dtok = batch * per_seq, group_batch * per_seq
    attn_per_layer = counts.attention / L  # the token mixers' weights (indexers included)

    def rank_share(attn: float, rest: float, whole: float) -> float:
        """One rank's part: the attention's over the attention group (``whole`` of it on every
        rank), the rest over all tp ranks; tp_share of the sum without data parallelism."""
        return tp_share(attn, whole, attn_tp) + rest / tp

    # --- communication: tensor-parallel all-reduces, pipeline sends ---
    tokens = batch * prompt_tokens
    group_tokens = group_batch * prompt_tokens  # the busiest attention group's prompts
    tp_per_node = ranks_per_node(tp, fabric.gpus_per_node, tp * pp)
    comm: list[TokenComm] = []
    prefill_comm = 0.0
    step_comm = 0.0
    all_reduce = estimate_engine_all_reduce if engine.custom_all_reduce else _nccl_all_reduce
    if tp > 1:
        # one after each layer's mixer and one after its MLP (a layer without one: the first)
        n_ar = 2 * L - spec.mlp_free_layers
        if dp == 1:
            ar_prefill = all_reduce(tokens * h * 2.0, tp, fabric, tp_per_node)
            prefill_comm += n_ar * ar_prefill.time_s
            ar_decode = all_reduce(dtok * h * 2.0, tp, fabric, tp_per_node)
            step_comm += n_ar * ar_decode.time_s
            comm.append(
                TokenComm("tp", "all_reduce", dtok * h * 2.0, n_ar, ar_decode.link,
                          n_ar * ar_decode.time_s)
            )  # fmt: skip
        else:
            # each MLP gathers every group's tokens and scatters its output back reduced; an
            # attention group of several ranks all-reduces its own tokens after the mixer
            n_mlp = L - spec.mlp_free_layers
            for op in ("all_gather", "reduce_scatter"):
                ahead = estimate_collective(op, tokens * h * 2.0, tp, fabric, tp_per_node)
                prefill_comm += n_mlp * ahead.time_s
                each = estimate_collective(op, dtok * h * 2.0, tp, fabric, tp_per_node)
                step_comm += n_mlp * each.time_s
                comm.append(TokenComm("tp", op, dtok * h * 2.0, n_mlp, each.link,
                                      n_mlp * each.time_s))  # fmt: skip
            if attn_tp > 1:
                attn_per_node = ranks_per_node(attn_tp, fabric.gpus_per_node, tp * pp)
                ar_prefill = all_reduce(group_tokens * h * 2.0, attn_tp, fabric, attn_per_node)
                prefill_comm += L * ar_prefill.time_s
                ar_decode = all_reduce(g_dtok * h * 2.0, attn_tp, fabric, attn_per_node)
                step_comm += L * ar_decode.time_s
                comm.append(TokenComm("attention tp", "all_reduce", g_dtok * h * 2.0, L,
                                      ar_decode.link, L * ar_decode.time_s))  # fmt: skip
    if attn_tp > 1 and spec.qk_norm_exchange:
        # a whole-projection query/key norm exchanges its part between the attention group's
        # ranks in every softmax-attention layer (schema.QK_NORM_EXCHANGE)
        n_norm = L - spec.linear_layers
        per_node = ranks_per_node(attn_tp, fabric.gpus_per_node, tp * pp)
        group = "tp" if dp == 1 else "attention tp"
        for op, prefill_size, decode_size in qk_norm_exchanges(spec, group_tokens, g_dtok):
            run = all_reduce if op == "all_reduce" else partial(estimate_collective, op)
            prefill_comm += n_norm * run(prefill_size, attn_tp, fabric, per_node).time_s
            each = run(decode_size, attn_tp, fabric, per_node)
            step_comm += n_norm * each.time_s
            comm.append(TokenComm(group, op, decode_size, n_norm, each.link,
                                  n_norm * each.time_s))  # fmt: skip
    if pp > 1:
        # stages sit tp GPUs apart: on one node while the replica fits in it, else across nodes
        same_node = tp * pp <= fabric.gpus_per_node or fabric.network is None
        per_node = 2 if same_node else 1
        p2p_decode = estimate_collective(
            "send_recv", dtok * h * 2.0, 2, fabric, ranks_per_node=per_node
        )
        p2p_prefill = estimate_collective(
            "send_recv", tokens * h * 2.0, 2, fabric, ranks_per_node=per_node
        )
        step_comm += (pp - 1) * p2p_decode.time_s
        prefill_comm += (pp - 1) * p2p_prefill.time_s
        comm.append(
            TokenComm(
                "pp",
                "send_recv",
                dtok * h * 2.0,
                pp - 1,
                p2p_decode.link,
                (pp - 1) * p2p_decode.time_s,
            )
        )
    overhead = engine_overhead_s(engine, spec)

    # --- per stage: prefill (compute-bound over batch x prompt tokens) and decode (read the
    # weights of the experts touched, the KV cache, the whole LM head; look up batch rows of
    # the input embedding) ---
    kv_total = kv_bytes_per_token(spec, kvbytes)
    kv_shard = 1.0 if spec.is_mla else min(attn_tp, spec.kv_heads)
    kv_per_layer_token = kv_total / kv_shard / L
    avg_context = prompt_tokens + output_tokens / 2
    # a sliding window reads W keys at most, sparse attention its top-k and every indexer key
    kv_read_per_layer = kv_read_bytes_per_token(spec, avg_context, kvbytes) / kv_shard / L
    replicated = counts.replicated / L  # weights every TP rank holds and runs whole
    touched = experts_touched(spec.experts, spec.experts_per_token, dtok) if spec.is_moe else 0.0
    # the routed-expert weights a step waits for: the busiest expert-parallel rank's (without
    # expert parallelism, the mean), written as experts over the tp ranks (ep x that rank's
    # count) so that tp_share divides it as before
    busiest = (
        busiest_rank_experts(spec.experts, spec.experts_per_token, dtok, ep) if spec.is_moe else 0.0
    )
    touched_read = ep * busiest
    # measured decode GEMM growth (catalog/gemm_growth.py): BF16 cuBLAS GEMMs of a dense model
    grows = wbytes == 2.0 and not spec.is_moe and dtok > 1
    step_growth = gemm_growth(gpu.name, dtok) if grows else None
    gemm_slowdown = max(1.0, step_growth or 1.0)  # where it exceeds the roofline's stream time
    prompt_experts = (
        ep * busiest_rank_experts(spec.experts, spec.experts_per_token, tokens, ep)
        if spec.is_moe
        else 0.0
    )
    matmul_per_layer = counts.layer_matmul_active / L
    # the recurrent state per sequence, averaged over the layers; TP splits its value heads
    lin_share = linear_share(spec)
    state_per_layer = state_bytes_per_layer(spec, engine.state_bytes, attn_tp)
    prefill_s = prefill_compute_sum = 0.0
    t_mem_sum = t_compute_sum = slack = 0.0
    weights_read = 0.0
    for i, n in enumerate(stage_layers):
        last, first = i == pp - 1, i == 0
        # the weights the prompt reads: the experts its tokens route to (every one beyond a few
        # dozen tokens, one token's top-k at a prompt of one) and the embedding rows it looks up
        prompt_read = n * per_layer_dense + n * moe_share * prompt_experts * expert_params(spec)
        prompt_read += (tokens * h if first else 0.0) + (head_weights if last else 0.0)
        mm = rank_share(
            2.0 * group_tokens * attn_per_layer * n,
            2.0 * tokens * (matmul_per_layer - attn_per_layer) * n,
            2.0 * group_tokens * replicated * n,
        )
        # every TP rank runs the whole indexer (its heads are not split)
        core = (
            group_tokens
            * n
            * tp_share(
                attention_core_flops_per_token(spec, prompt_tokens),
                indexer_flops_per_token(spec, prompt_tokens),
                attn_tp,
            )
            / 2
        )
        head = 2.0 * batch * h * spec.vocab / tp if last else 0.0
        prefill_compute = mm / mm_rate + core / attn_rate + head / mm_rate
        attn_held = n * attn_per_layer
        prompt_rank = rank_share(attn_held, prompt_read - attn_held, n * replicated)
        prefill_s += max(prefill_compute, prompt_rank * wbytes / mem_rate)
        prefill_compute_sum += prefill_compute
        read = n * per_layer_dense + n * moe_share * touched_read * expert_params(spec)
        read += (dtok * h if first else 0.0) + (head_weights if last else 0.0)
        stage_read = rank_share(attn_held, read - attn_held, n * replicated) * wbytes
        weights_read = max(weights_read, stage_read)
        kv_read = group_batch * kv_read_per_layer * n
        # a cache grown by concatenation is copied whole each step: read once more, written once
        kv_read += engine.kv_cache_copies * group_batch * avg_context * kv_per_layer_token * n
        # a hybrid's linear layers read their recurrent state and write it back, every step
        kv_read += 2.0 * group_batch * state_per_layer * n
        # the GEMMs' weight stream, at the share of it the engine's quantized kernels reach
        t_weights = stage_read / (mem_rate * engine.stream_share(precision))
        if wbytes == 1.0 and compute == "fp8":  # block-scaled FP8 GEMMs: K-step latency
            n_moe_stage = n * moe_share
            n_bare = n * spec.mlp_free_layers / L  # layers without an MLP
            mixers = ((1.0 - lin_share, False), (lin_share, True)) if lin_share else ((1.0, False),)
            kinds = ((n - n_moe_stage - n_bare, False, True), (n_moe_stage, True, True),
                     (n_bare, False, False))  # fmt: skip
            for layers_of_kind, is_moe, has_mlp in kinds:
                for mixer_share, linear in mixers:
                    if layers_of_kind * mixer_share > 0:
                        gemms = decode_gemms(
                            spec, tp, is_moe, touched_read, linear, has_mlp, ep, attn_tp
                        )
                        t_weights += (
                            layers_of_kind
                            * mixer_share
                            * sum(
                                max(0.0, k / 128 * FP8_GEMM_K_STEP_S - p * wbytes / mem_rate)
                                for p, k in gemms
                                if p > 0
                            )
                        )
        dec_flops = rank_share(
            2.0 * g_dtok * attn_per_layer * n,
            2.0
            * dtok
            * ((matmul_per_layer - attn_per_layer) * n + (spec.vocab * h if last else 0.0)),
            2.0 * g_dtok * replicated * n,
        )
        dec_core = (
            g_dtok
            * n
            * tp_share(
                decode_attention_flops_per_token(spec, avg_context),
                indexer_flops_per_token(spec, avg_context),
                attn_tp,
            )
        )
        t_gemm_math = dec_flops / mm_rate
        # the weights' GEMMs and the attention over the KV cache are different kernels that run
        # one after the other: each is bound by its own resource (a large batch's GEMMs by
        # compute while its attention streams the KV cache), and neither hides the other
        for t_read, t_math in (
            # a dense model's 16-bit GEMMs over more than one token run slower than their stream
            # and math allow (tile and wave quantisation): their measured growth
            (t_weights * gemm_slowdown, t_gemm_math),
            (kv_read / mem_rate, dec_core / attn_rate),
        ):
            if t_read >= t_math:
                t_mem_sum += t_read
            else:
                t_compute_sum += t_math
        slack += max(0.0, t_weights - t_gemm_math)  # compute the weight stream leaves idle
    prefill_s += prefill_comm + overhead
    speculative = spec_tokens > 0
    drafted = None
    if speculative:
        drafted = draft_pass(
            spec, draft, gpu, fabric, engine, tp=tp, batch=batch, prompt_tokens=prompt_tokens,
            output_tokens=output_tokens, ep=ep, dp=dp, precision=precision,
            kv_precision=kv_precision, weight_bytes_per_param=wbytes,
        )  # fmt: skip
    t_draft = spec_tokens * drafted.time_s if drafted else 0.0
    if drafted and draft_topk > 1 and spec_tokens > 1:
        # a tree: the passes after the first draft from draft_topk branches of each sequence
        branched = draft_pass(
            spec, draft, gpu, fabric, engine, tp=tp, batch=batch * draft_topk,
            prompt_tokens=prompt_tokens, output_tokens=output_tokens, ep=ep, dp=dp,
            precision=precision, kv_precision=kv_precision, weight_bytes_per_param=wbytes,
        )  # fmt: skip
        t_draft = drafted.time_s + (spec_tokens - 1) * branched.time_s
    hidden = 0.0
    if engine.overlaps_for(spec, pp, speculative):
        # the host prepares the next step while the GPU runs this one: its per-step time hides
        # behind the GPU's work (weights, KV cache, communication, the layers' kernel gaps)
        gpu_side = (
            t_mem_sum + t_compute_sum + step_comm + t_draft + overhead - engine.step_overhead_s
        )
        hidden = min(engine.step_overhead_s, gpu_side)  # step = max(gpu_side, host)
    visible_overhead = overhead - hidden
    spec_step = t_mem_sum + t_compute_sum + step_comm + t_draft + visible_overhead
    step = spec_step / accept_length  # a token a sequence: the step over the tokens it emits
    parts = {
        "memory bandwidth": t_mem_sum,
        "compute": t_compute_sum,
        "communication": step_comm,
        "engine overhead": visible_overhead,
        "speculative draft": t_draft,
    }
    bound = max(parts.items(), key=lambda kv: kv[1])[0]
    memory = inference_memory(
        spec,
        counts,
        tp=tp,
        pp=pp,
        batch=batch,
        context_tokens=prompt_tokens + output_tokens,
        prefill_chunk_tokens=min(tokens, PREFILL_CHUNK_TOKENS),
        weight_precision=precision,
        kv_bytes_per_value=kvbytes,
        capacity_bytes=gpu.memory_bytes if memory_capacity_bytes is None else memory_capacity_bytes,
        weight_bytes_per_param=wbytes,
        state_bytes_per_value=engine.state_bytes,
        dp=dp,
    )
    if drafted:
        ledger = dict(memory.per_gpu_bytes)
        ledger["weights"] += drafted.weights_bytes_per_gpu
        ledger["kv_cache"] += drafted.kv_bytes_per_gpu
        own_head = "its own 32,000-token head included; " if draft == "eagle3" else ""
        note = (
            f"memory: the {draft} draft's layer and fc ({own_head}"
            f"{drafted.weights_bytes_per_gpu / 2**30:.2f} GiB) with the weights, its one layer's "
            f"KV cache ({drafted.kv_bytes_per_gpu / 2**30:.2f} GiB) with the KV cache"
        )
        memory = MemoryLedger(ledger, memory.capacity_bytes, (*memory.notes, note))
    assumptions = (
        (
            f"decode: weights ({precision}, {wbytes * 8:.3g} bits each; the whole LM head, batch rows of the "
            f"input embedding) and KV cache ({kv_precision}) read once per step at "
            f"{gpu.decode_stream_efficiency:.0%} of {gpu.hbm_bw_bytes_per_s / 1e12:.2f} TB/s"
            + (f" ({gpu.decode_bw_efficiency_source})" if gpu.decode_bw_efficiency else "")
            + (
                f", the weights at {engine.stream_share(precision):.0%} of that: {engine.name}'s "
                f"{precision} kernels ({engine.stream_share_source})"
                if engine.stream_share(precision) < 1.0
                else ""
            )
            + f"; average context {avg_context:.0f} tokens",
            f"prefill: {peak / 1e12:.0f} TFLOP/s x {gpu.matmul_efficiency:.3g} for matmuls, causal "
            f"attention at {attn_share:.0%} of the BF16 peak ({attn_source})",
            f"engine {engine.name}: {engine.step_overhead_s * 1e3:.2g} ms per step + "
            f"{engine.layer_overhead_s * 1e6:.0f} us per layer ({engine.source})"
            + (
                f"; {engine_extra_kernels(engine, spec):,} more kernel gaps of "
                f"{engine.layer_overhead_s / DENSE_LAYER_KERNELS * 1e6:.1f} us for the "
                f"{kernel_kinds(spec)} kernels"
                if engine_extra_kernels(engine, spec)
                else ""
            ),
        )
        + (
            (
                f"{engine.name}{' ' + engine.release if engine.release else ''} prepares each "
                f"step on the host while the GPU runs the one before, so its "
                f"{engine.step_overhead_s * 1e3:.2g} ms per step hides behind the GPU's work and "
                f"only the larger of the two counts ("
                + (
                    f"every release: {engine.overlap_source})"
                    if engine.overlap_always
                    else f"since release {engine.overlap_since}: {engine.overlap_source}; name an "
                    f"earlier release as {engine.name}@{engine.release_before_overlap})"
                ),
            )
            if engine.overlaps_for(spec, pp)
            else (
                (
                    f"{engine.name} turns that overlap off "
                    + (
                        f"for a hybrid model, so its {engine.step_overhead_s * 1e3:.2g} ms per "
                        f"step is added to every step ({engine.overlaps_hybrid_source})"
                        if spec.is_hybrid and not engine.overlaps_hybrid
                        else f"with pipeline stages, so its {engine.step_overhead_s * 1e3:.2g} ms "
                        f"per step is added to every step ({engine.overlaps_pipeline_source})"
                    ),
                )
                if engine.overlaps_scheduling
                else ()
            )
        )
        + (
            (
                f"KV cache copied whole each step ({engine.kv_cache_copies:g} more passes over it: "
                f"{engine.kv_cache_copies_source})",
            )
            if engine.kv_cache_copies
            else ()
        )
        + (
            (
                "tensor parallel: 2 all-reduces of batch x hidden per layer per token, not "
                "overlapped; "
                + (
                    "inside a node up to 8 MiB the engine's own one-shot/two-shot kernel, else NCCL"
                    if engine.custom_all_reduce
                    else "through NCCL"
                )
                + f" ({engine.custom_all_reduce_source})",
            )
            if tp > 1 and dp == 1
            else ()
        )
        + (
            (
                "query/key norms over the whole projection: each softmax-attention layer "
                + (
                    "all-reduces the query's and key's sums of squares (8 bytes a token) over "
                    "the attention's ranks"
                    if spec.qk_norm_exchange == "all_reduce"
                    else "gathers the whole query and key projections from the attention's ranks"
                )
                + ", not overlapped (vLLM's and SGLang's MiniMax-M2 code, vLLM's OLMo 2)",
            )
            if attn_tp > 1 and spec.qk_norm_exchange
            else ()
        )
        + (
            (
                f"data-parallel attention: {dp} attention groups of {attn_tp} rank(s), each with "
                f"its own requests ({group_batch} on the busiest) and their KV cache, the "
                f"attention weights split over its {attn_tp} rank(s); the MLPs run over all {tp} "
                "ranks on the gathered tokens: an all-gather before each and a reduce-scatter "
                "after it, through NCCL"
                + (
                    ", and an all-reduce inside each group after its attention"
                    if attn_tp > 1
                    else ""
                )
                + " (SGLang --enable-dp-attention, vLLM --data-parallel-size for MoE models)",
            )
            if dp > 1
            else ()
        )
        + (
            ("MoE: uniform routing; distinct experts read per layer E(1-(1-k/E)^B)",)
            if spec.is_moe and ep == 1
            else (
                f"expert parallel {ep}: each of {ep} ranks holds {spec.experts // ep} of the "
                f"{spec.experts} experts"
                + (f", each split over {tp // ep} ranks" if tp > ep else " whole")
                + (
                    "; attention stays tensor-parallel and the MoE output is all-reduced over "
                    f"the {tp} ranks as without it"
                    if dp == 1
                    else ""
                )
                + "; a step waits for the rank whose experts the batch touches most: with "
                "uniform routing "
                f"{busiest:.1f} "
                f"distinct experts on the busiest rank where the mean is {touched / ep:.1f} "
                "(its weight read and FP8 K-steps; the fused call's latency as without expert "
                "parallelism: balanced calls with it take 0.95x the time at the median, "
                "catalog/data/moe_kernels_ep.csv; the routed FLOPs balanced)",
            )
            if spec.is_moe
            else ()
        )
        + (
            (
                f"hybrid: {spec.linear_layers} of {spec.layers} layers are linear attention "
                f"({'Mamba-2' if spec.linear_kind == 'mamba2' else 'Gated DeltaNet'}): no KV "
                f"cache; each step reads and writes their recurrent state, "
                f"{state_bytes(spec, engine.state_bytes) / 2**20:.1f} MiB per sequence at "
                f"{engine.state_bytes:g} bytes/value ({engine.state_bytes_source})",
            )
            if spec.linear_layers
            else ()
        )
        + (
            (
                f"sparse attention: each token attends to the {spec.index_topk:,} cached tokens "
                f"its indexer selects ({min(avg_context, spec.index_topk):,.0f} at the average "
                f"context), and the indexer in {spec.index_layers} of {spec.layers} layers "
                f"scores every cached key ({index_key_bytes_per_token(spec) / spec.index_layers:g}"
                " bytes each, FP8); its weights sit whole on every TP rank (vLLM, SGLang)",
            )
            if spec.is_sparse
            else ()
        )
        + (
            (
                f"decode GEMMs over {dtok:,.0f} tokens: {step_growth:.2f}x their one-token time, "
                f"where that exceeds their stream and math time (measured BF16 GEMMs on the "
                f"{gpu.name}, NVIDIA's aiconfigurator vLLM collector: catalog/data/"
                "decode_gemm_growth.csv)",
            )
            if step_growth is not None and step_growth > 1.005
            else ()
        )
        + (
            (
                f"FP8 decode GEMMs: at least {FP8_GEMM_K_STEP_S * 1e6:.3f} us per 128-wide step of "
                "the input width K (block-scaled FP8 GEMMs at batch 1 run below the HBM roofline: "
                "sgl-project/sglang#5820)",
            )
            if wbytes == 1.0 and compute == "fp8"
            else ()
        )
        + (
            (
                f"speculative decoding: {'an' if draft.startswith('e') else 'a'} {draft} draft proposes {spec_tokens} token(s) a step"
                + (
                    f" as a tree, keeping the {draft_topk} best candidates of each sequence at "
                    f"each pass (its passes after the first over {draft_topk} x the batch)"
                    if draft_topk > 1
                    else ""
                )
                + " and "
                f"the model verifies them in one pass over {per_seq} positions a sequence (the "
                "weights and each sequence's KV cache read once, the FLOPs, experts and "
                f"all-reduces of {per_seq} tokens); {accept_length:g} tokens emitted a step on "
                f"average (the accept length given); {spec_tokens} draft pass(es) of "
                f"{drafted.time_s * 1e6:.0f} us"
                + (f" ({t_draft * 1e6:.0f} us in all)" if draft_topk > 1 else "")
                + f" (one {DRAFT_DESCRIPTIONS[draft]}, the fc of "
                f"{3 if draft == 'eagle3' else 2} x hidden read whole in 16 bits on every rank, "
                f"{DRAFT_EXTRA_KERNELS} more kernel gaps); a step {spec_step * 1e3:.3g} ms, "
                f"{step * 1e3:.3g} ms a token"
                + (
                    f"; {engine.name} turns its overlapped scheduling off for it, so its "
                    f"{engine.step_overhead_s * 1e3:.2g} ms per step is added to every step "
                    f"({engine.overlaps_speculative_source})"
                    if engine.overlaps_for(spec, pp) and not engine.overlaps_speculative
                    else ""
                ),
            )
            if drafted
            else ()
        )
    )
    ttft = prefill_s
    return InferenceEstimate(
        ttft_s=ttft,
        prefill_s=prefill_s,
        prefill_compute_s=prefill_compute_sum,
        prefill_comm_s=prefill_comm,
        decode_step_s=step,
        decode_slack_s=slack / accept_length,
        decode_tokens_per_s=1.0 / step,
        batch_tokens_per_s=batch / step,
        e2e_s=ttft + max(0, output_tokens - 1) * step,
        kv_cache_bytes_per_token=kv_total,
        state_bytes_per_sequence=state_bytes(spec, engine.state_bytes),
        kv_cache_bytes_per_gpu=memory.per_gpu_bytes["kv_cache"],
        weights_read_per_step_bytes=weights_read,
        decode_bound=bound,
        # a token's share of a step's collectives: a speculative step emits accept_length
        comm=tuple(
            replace(
                c,
                count_per_token=c.count_per_token / accept_length,
                time_per_token_s=c.time_per_token_s / accept_length,
            )
            for c in comm
        ),
        memory=memory,
        assumptions=assumptions + memory.notes,
        engine_caveat="; ".join(
            text
            for text in (engine.measured_caveat, engine.moe_caveat if spec.is_moe else "")
            if text
        ),
        precision=precision,
        kv_precision=kv_precision,
        host_step_hidden_s=hidden,
        overlap_since=engine.overlap_since if hidden else "",
        spec_step_s=spec_step if speculative else 0.0,
        draft_s=t_draft,
        accept_length=accept_length,
        spec_tokens=spec_tokens,
        draft=draft if speculative else "",
        draft_topk=draft_topk if speculative else 1,
        verify_tokens=per_seq if speculative else 0,
    )
