"""Parameter counts and per-token FLOPs of a transformer described by a ModelSpec.

FLOPs follow the usual convention (Narayanan et al. 2021, Korthikanti et al. 2022): a matmul
with an m x k weight costs 2*m*k FLOPs per token; attention scores cost 4*s*d per token per
layer for context s and head width d, counted over the full (non-causal) square.
"""

from __future__ import annotations

from dataclasses import dataclass

from fabriclens.catalog.schema import ModelSpec


def head_dim(spec: ModelSpec) -> int:
    """Width of one attention head."""
    return spec.head_dim or spec.hidden // spec.heads


def qk_dim(spec: ModelSpec) -> int:
    """Width of the query/key dot product per head (MLA: nope + rope parts)."""
    return spec.qk_nope_head_dim + spec.qk_rope_head_dim if spec.is_mla else head_dim(spec)


def v_dim(spec: ModelSpec) -> int:
    """Width of the value vector per head."""
    return spec.v_head_dim if spec.is_mla else head_dim(spec)


def q_width(spec: ModelSpec) -> int:
    """Width of all query heads of a token (MLA: heads x (qk_nope + qk_rope), 128 x 192 for
    DeepSeek-V2/V3, not the hidden size)."""
    return spec.heads * qk_dim(spec)


def k_width(spec: ModelSpec) -> int:
    """Width of all key heads of a token as attention reads them: GQA's kv_heads x head_dim; MLA
    decompresses the latent into a full key per query head (heads x 192 for DeepSeek-V3)."""
    return spec.heads * qk_dim(spec) if spec.is_mla else spec.kv_heads * head_dim(spec)


def v_width(spec: ModelSpec) -> int:
    """Width of all value heads of a token (MLA: heads x v_head_dim after decompression)."""
    return spec.heads * v_dim(spec) if spec.is_mla else spec.kv_heads * head_dim(spec)


def softmax_layers(spec: ModelSpec) -> int:
    """Layers that mix tokens by softmax attention: all but a hybrid model's linear ones."""
    return spec.layers - spec.linear_layers


def linear_share(spec: ModelSpec) -> float:
    """The share of the layers whose token mixer is linear attention (Gated DeltaNet, Mamba-2)."""
    return spec.linear_layers / spec.layers


def windowed_share(spec: ModelSpec) -> float:
    """The share of the softmax-attention layers that attend within the sliding window: all of
    them (Mistral 7B), ``sliding_window_layers`` of them (gpt-oss alternates windowed and full
    layers), or none."""
    if not spec.sliding_window:
        return 0.0
    full = softmax_layers(spec)
    return (spec.sliding_window_layers or full) / full


def cached_tokens(spec: ModelSpec, context: int | float) -> float:
    """Positions the KV cache holds for a sequence of ``context`` tokens, averaged over the
    softmax-attention layers (the ones with a KV cache, :func:`kv_bytes_per_token`): all of
    them, or in a windowed layer the last ``sliding_window`` (Mistral 7B, Jiang et al. 2023,
    section 2: each layer attends to W = 4096 previous tokens; its rolling-buffer cache holds W
    positions). Sparse attention keeps every position: any of them may be selected."""
    share = windowed_share(spec)
    return float(share * min(context, spec.sliding_window) + (1.0 - share) * context)


def attended_tokens(spec: ModelSpec, context: int | float) -> float:
    """Keys one token attends to at position ``context``, averaged over the softmax-attention
    layers: the cached ones (:func:`cached_tokens`), or with DeepSeek Sparse Attention the
    ``index_topk`` its indexer selects (the DeepSeek-V3.2-Exp technical report's DeepSeek Sparse
    Attention: attention over the key-value entries of the top-k index scores, k = 2048 in its
    config.json)."""
    if spec.is_sparse:
        return float(min(context, spec.index_topk))
    return cached_tokens(spec, context)


def attention_band(spec: ModelSpec) -> tuple[int, float]:
    """The most keys a query attends to and the share of the softmax layers so limited: the
    sliding window (:func:`windowed_share`), or sparse attention's top-k in every layer; (0, 0)
    for full attention."""
    if spec.is_sparse:
        return spec.index_topk, 1.0
    return spec.sliding_window, windowed_share(spec)


def square_context(spec: ModelSpec, seq_len: int | float) -> float:
    """Keys per token in the full-square counting convention over a sequence of ``seq_len``:
    ``seq_len`` itself without a window; with a causal window W < seq_len the band covers
    W(2 seq_len - W)/2 of the square's positions, i.e. 2W - W^2/seq_len keys per row counted
    full-square (so that half of it, what a causal kernel runs, is the band's true average).
    Sparse attention's top-k keys count as a window of k: the same number of keys per query,
    whichever positions they are."""
    w, share = attention_band(spec)
    if not w or seq_len <= w:
        return float(seq_len)
    # layers without the window count the whole square
    return share * (2.0 * w - w * w / seq_len) + (1.0 - share) * seq_len


# DeepSeek Sparse Attention's indexer keys are cached in FP8 with one float32 scale per block
# of 128 values, whatever the KV cache's precision (vLLM DeepseekV32IndexerCache: head_dim
# index_head_dim + index_head_dim // 128 * 4 bytes, uint8; DeepSeek's inference/model.py keeps
# k_cache in float8_e4m3fn and k_scale_cache beside it)
INDEX_KEY_QUANT_BLOCK = 128


def indexer_params(spec: ModelSpec) -> int:
    """Weights of one lightning indexer (transformers DeepseekV32Indexer): its queries from the
    query LoRA latent (wq_b), one key from the hidden state (wk) and its LayerNorm, and a weight
    per head (weights_proj). vLLM and SGLang keep it whole on every tensor-parallel rank."""
    if not spec.is_sparse:
        return 0
    width = spec.index_heads * spec.index_head_dim
    return (spec.q_lora_rank * width + spec.hidden * spec.index_head_dim
            + 2 * spec.index_head_dim + spec.hidden * spec.index_heads)  # fmt: skip


def index_key_bytes_per_token(spec: ModelSpec) -> float:
    """The indexer keys' cache bytes per token, whole model: one key per layer that runs an
    indexer, in FP8 with its scales (:data:`INDEX_KEY_QUANT_BLOCK`)."""
    d = spec.index_head_dim
    return spec.index_layers * (d + -(-d // INDEX_KEY_QUANT_BLOCK) * 4)


def indexer_flops_per_token(spec: ModelSpec, context: int | float) -> float:
    """FLOPs of the indexer's scores for one query over ``context`` keys, averaged over the
    layers: a dot product per head and key (ReLU and the weighted sum over heads are
    elementwise), only in the layers that run one. Counted at attention's rate, though the
    kernels run them in FP8 (DeepGEMM's fp8_mqa_logits)."""
    if not spec.is_sparse:
        return 0.0
    share = spec.index_layers / spec.layers
    return share * 2.0 * context * spec.index_heads * spec.index_head_dim


def tp_share(total: float, replicated: float, tp: int) -> float:
    """One tensor-parallel rank's part of ``total`` when ``replicated`` of it is kept whole on
    every rank (the sparse-attention indexers) and the rest is split."""
    return (total - replicated) / tp + replicated


def attention_params(spec: ModelSpec) -> int:
    """Weights (and biases) of one attention block, excluding norms."""
    h = spec.hidden
    if spec.is_mla:
        q_width = spec.heads * qk_dim(spec)
        if spec.q_lora_rank:
            q = h * spec.q_lora_rank + spec.q_lora_rank + spec.q_lora_rank * q_width
        else:
            q = h * q_width
        kv_a = h * (spec.kv_lora_rank + spec.qk_rope_head_dim) + spec.kv_lora_rank
        kv_b = spec.kv_lora_rank * spec.heads * (spec.qk_nope_head_dim + spec.v_head_dim)
        out = spec.heads * spec.v_head_dim * h
        return q + kv_a + kv_b + out
    hd = head_dim(spec)
    q_width, kv_width = spec.heads * hd, spec.kv_heads * hd
    gate = q_width if spec.attn_output_gate else 0  # the query projection's gate half
    params = h * (q_width + gate + 2 * kv_width) + q_width * h
    if spec.qkv_bias:
        params += q_width + 2 * kv_width
    if spec.attn_bias:
        params += h
    return params


# The chunked forms of the linear mixers: attention-like products inside a chunk, the recurrent
# state carried between chunks. Gated DeltaNet: 64 tokens (flash-linear-attention's
# chunk_gated_delta_rule, which transformers and vLLM call); Mamba-2's SSD: 256 (mamba_chunk_size,
# transformers' GraniteMoeHybridConfig default)
LINEAR_CHUNK = {"gated_deltanet": 64, "mamba2": 256}


def linear_key_width(spec: ModelSpec) -> int:
    """Width of a linear-attention layer's queries (and of its keys): key heads x key_dim
    (Mamba-2: its C and B, groups x state size)."""
    return spec.linear_key_heads * spec.linear_key_dim


def linear_value_width(spec: ModelSpec) -> int:
    """Width of a linear-attention layer's values (and of its output gate z)."""
    return spec.linear_value_heads * spec.linear_value_dim


def linear_conv_width(spec: ModelSpec) -> int:
    """Channels of the depthwise convolution: queries, keys and values (Mamba-2: x, B and C)."""
    return 2 * linear_key_width(spec) + linear_value_width(spec)


def linear_projections(spec: ModelSpec) -> tuple[tuple[int, int], ...]:
    """(input, output) widths of a linear layer's projections, the last row-parallel. Gated
    DeltaNet: queries, keys, values and the output gate in one (in_proj_qkvz), the decay and the
    update rate per value head (in_proj_ba), the output (transformers qwen3_next). Mamba-2: the
    gate z, x, B, C and a time step per head in one (in_proj), the output (out_proj)."""
    h, v = spec.hidden, linear_value_width(spec)
    if spec.linear_kind == "mamba2":
        return ((h, linear_conv_width(spec) + v + spec.linear_value_heads), (v, h))
    return ((h, linear_conv_width(spec) + v), (h, 2 * spec.linear_value_heads), (v, h))


def linear_attention_params(spec: ModelSpec) -> int:
    """Weights of one linear layer: its projections, the convolution's taps, the per-head decay,
    time-step (and Mamba-2's skip D) parameters and the gated norm's weight (per value head's
    width in a Gated DeltaNet, over all of them in Mamba-2)."""
    projections = sum(i * o for i, o in linear_projections(spec))
    conv = linear_conv_width(spec) * spec.linear_conv
    if spec.linear_kind == "mamba2":
        return projections + conv + 3 * spec.linear_value_heads + linear_value_width(spec)
    return projections + conv + 2 * spec.linear_value_heads + spec.linear_value_dim


def linear_state_elements(spec: ModelSpec) -> int:
    """Recurrent state one sequence keeps per linear layer: a key_dim x value_dim matrix per
    value head, and the convolution's last linear_conv - 1 inputs."""
    matrix = spec.linear_value_heads * spec.linear_key_dim * spec.linear_value_dim
    return matrix + linear_conv_width(spec) * (spec.linear_conv - 1)


def linear_core_flops_per_token(spec: ModelSpec) -> float:
    """FLOPs of a linear layer's mixing per token in the chunked forward, beyond its
    projections, summed over the value heads (queries and keys shared across value heads as
    the layer repeats them). Gated DeltaNet: within a chunk of C tokens the causal products
    Q K^T, A V and the delta rule's W = A(beta K), U = A(beta V) (C x (3 key_dim + 2 value_dim)),
    against the carried state Q S, W S and its update K^T (U - W S) (6 x key_dim x value_dim;
    Yang et al. 2024, section 3). Mamba-2's SSD: C B^T and its product with X inside a chunk
    (C x (state + head width)), the state's update and read-out (4 x state x head width; Dao and
    Gu 2024, section 6). Estimates from the algorithms, not kernel measurements."""
    dk, dv = spec.linear_key_dim, spec.linear_value_dim
    chunk = LINEAR_CHUNK[spec.linear_kind]
    if spec.linear_kind == "mamba2":
        return spec.linear_value_heads * (chunk * (dk + dv) + 4 * dk * dv)
    return spec.linear_value_heads * (chunk * (3 * dk + 2 * dv) + 6 * dk * dv)


def linear_decode_flops_per_token(spec: ModelSpec) -> float:
    """FLOPs of one decode step of a linear layer per sequence: decay the state, add the update
    and read the output from it (about 7 x key_dim x value_dim per value head for the delta
    rule's extra read of S^T k, 5 for Mamba-2)."""
    per_head = 5.0 if spec.linear_kind == "mamba2" else 7.0
    return per_head * spec.linear_value_heads * spec.linear_key_dim * spec.linear_value_dim


def linear_activation_width(spec: ModelSpec) -> int:
    """Elements per token one linear layer keeps for its backward: the convolution's input and
    output, the output gate, the per-head decay and rate (Mamba-2: its time step), the mixing's
    output and the gated norm's (the output projection's input). An estimate by analogy with
    attention's."""
    v = linear_value_width(spec)
    per_head = 1 if spec.linear_kind == "mamba2" else 2  # Mamba-2's time step; the decay and rate
    return 2 * linear_conv_width(spec) + 3 * v + per_head * spec.linear_value_heads


def _mlp_params(hidden: int, ffn: int, gated: bool, bias: bool) -> int:
    if gated:
        return 3 * hidden * ffn + (2 * ffn + hidden if bias else 0)
    return 2 * hidden * ffn + (ffn + hidden if bias else 0)


def dense_mlp_params(spec: ModelSpec) -> int:
    """Weights of one dense MLP block."""
    return _mlp_params(spec.hidden, spec.ffn, spec.mlp == "swiglu", spec.mlp_bias)


def routed_width(spec: ModelSpec) -> int:
    """The width a routed token travels and the experts work at: the hidden size, or the latent
    of a LatentMoE (Nemotron 3 Super: 1024 of 4096)."""
    return spec.moe_latent or spec.hidden


def expert_params(spec: ModelSpec) -> int:
    """Weights of one routed expert (at :func:`routed_width`)."""
    return _mlp_params(
        routed_width(spec), spec.moe_ffn or spec.ffn, spec.mlp == "swiglu", spec.mlp_bias
    )


def shared_expert_params(spec: ModelSpec) -> int:
    """Weights of one shared expert: as wide as a routed one, at the hidden width."""
    return _mlp_params(spec.hidden, spec.moe_ffn or spec.ffn, spec.mlp == "swiglu", spec.mlp_bias)


def latent_projection_params(spec: ModelSpec) -> int:
    """A LatentMoE layer's projections down to the latent and back up (fc1_latent_proj,
    fc2_latent_proj), which every token passes through; 0 without a latent."""
    return 2 * spec.hidden * spec.moe_latent


def moe_layers(spec: ModelSpec) -> int:
    """Number of layers whose MLP is a mixture of experts: after the leading dense layers, one in
    every ``moe_layer_step`` (Hugging Face's Llama 4: layers step-1, 2*step-1, ...), of the
    layers that have an MLP."""
    if not spec.is_moe:
        return 0
    return (spec.layers - spec.first_dense_layers - spec.mlp_free_layers) // spec.moe_layer_step


def dense_mlp_layers(spec: ModelSpec) -> int:
    """Number of layers whose MLP is dense: neither a mixture of experts nor absent."""
    return spec.layers - spec.mlp_free_layers - moe_layers(spec)


def mean_mlp_width(spec: ModelSpec) -> float:
    """The MLP width a token passes through, averaged over the layers: ``ffn`` in dense layers,
    k routed + shared experts of ``moe_ffn`` each in the MoE layers, none in a layer without."""
    dense = spec.ffn * dense_mlp_layers(spec)
    if not spec.is_moe:
        return dense / spec.layers
    moe_f = (spec.moe_ffn or spec.ffn) * (spec.experts_per_token + spec.shared_experts)
    return (moe_f * moe_layers(spec) + dense) / spec.layers


def norm_params_per_layer(spec: ModelSpec) -> int:
    """Two norms per layer (RMSNorm: weight; LayerNorm: weight and bias)."""
    return 2 * spec.hidden * (2 if spec.norm == "layer" else 1)


def layer_tensors(spec: ModelSpec) -> tuple[float, float]:
    """Parameter tensors of one decoder layer, averaged over the layers, in Megatron-Core's
    module layout: (weight matrices, small tensors). The matrices: the attention's fused QKV and
    output projections (MLA: each of its projections; a linear mixer: each of its), a dense MLP's
    fused gate-up and down projections, a MoE layer's router and shared experts' (its routed
    experts are :func:`expert_tensors`). The small ones: the two norms' weights (and LayerNorm
    biases) and the biases. A framework that gathers parameters one tensor at a time (DeepSpeed's
    ZeRO-3 before 0.6) makes a call per tensor; below its persistence threshold (100,000
    elements) a tensor stays gathered, but its gradient is still reduced."""
    attn = float(len(attention_projections(spec))) if spec.is_mla else 2.0
    lin = linear_share(spec)
    if lin:
        attn = (1.0 - lin) * attn + lin * len(linear_projections(spec))
    moe = moe_layers(spec)
    dense = dense_mlp_layers(spec)
    mlp = (2.0 * dense + (1.0 + 2.0 * spec.shared_experts) * moe) / spec.layers
    biases = int(spec.qkv_bias) + int(spec.attn_bias) + 2.0 * spec.mlp_bias * dense / spec.layers
    norms = 2 * (2 if spec.norm == "layer" else 1)
    return attn + mlp, float(norms + biases)


def per_tensor_calls(spec: ModelSpec, trains_base: bool) -> tuple[float, float]:
    """Calls per decoder layer, averaged over the layers, of a framework that gathers parameters
    and reduces gradients one tensor at a time: (gathers: the layer's weight matrices; gradient
    reductions: every tensor it trains, the layer's or LoRA's adapters)."""
    big, small = layer_tensors(spec)
    return big, big + small if trains_base else adapter_tensors(spec)


def expert_tensors(spec: ModelSpec) -> int:
    """Weight matrices of one routed expert (fused gate-up, down), as :func:`layer_tensors`."""
    return 2


def adapter_tensors(spec: ModelSpec) -> float:
    """LoRA's trainable tensors of one decoder layer, averaged over the layers: an A and a B for
    every projection PEFT adapts (each attention projection, each of a mixer's, each MLP linear,
    every expert's), as memory.adapter_params counts their parameters."""
    lin = linear_share(spec)
    attn = (1.0 - lin) * len(attention_projections(spec)) + lin * len(linear_projections(spec))
    n_mlp = 3 if spec.mlp == "swiglu" else 2
    mlp = n_mlp * (dense_mlp_layers(spec) + moe_layers(spec) * (spec.experts + spec.shared_experts))
    return 2.0 * (attn + mlp / spec.layers)


@dataclass(frozen=True, slots=True)
class ParamCounts:
    """Parameter counts of a model, split the way parallelism splits them."""

    total: int
    active: int  # used per token (MoE: routed experts_per_token of experts)
    embedding: int  # input embedding (+ learned positions)
    lm_head: int  # output projection (0 when tied)
    attention: int  # all layers' token mixers (a hybrid's linear-attention layers too)
    replicated: int  # of which every tensor-parallel rank holds and runs the whole (indexers)
    dense_mlp: int  # all dense-MLP layers
    experts: int  # all routed experts, all layers
    experts_active: int  # routed experts used per token, all layers
    shared_and_router: int  # shared experts + routers (+ latent projections), all MoE layers
    norms: int

    @property
    def layers_dense(self) -> int:
        """Decoder-layer weights every token reads, all layers: all but the routed experts."""
        return self.attention + self.dense_mlp + self.shared_and_router + self.norms

    @property
    def layer_matmul_active(self) -> int:
        """Matmul weights touched per token inside the decoder layers (all layers)."""
        return self.attention + self.dense_mlp + self.experts_active + self.shared_and_router


def head_params(spec: ModelSpec, counts: ParamCounts) -> int:
    """The output projection's weights: a tied model's head is the embedding."""
    return counts.lm_head or spec.vocab * spec.hidden


def count_params(spec: ModelSpec) -> ParamCounts:
    """Count parameters: total, active per token, and by part."""
    h = spec.hidden
    embedding = spec.vocab * h + (spec.max_positions * h if spec.positions == "learned" else 0)
    lm_head = 0 if spec.tied_embeddings else spec.vocab * h
    n_moe = moe_layers(spec)
    attention = softmax_layers(spec) * attention_params(spec)
    if spec.linear_layers:
        attention += spec.linear_layers * linear_attention_params(spec)
    replicated = spec.index_layers * indexer_params(spec)
    attention += replicated
    dense_mlp = dense_mlp_layers(spec) * dense_mlp_params(spec)
    per_expert = expert_params(spec)
    experts = n_moe * spec.experts * per_expert
    experts_active = n_moe * spec.experts_per_token * per_expert
    shared_and_router = n_moe * (
        spec.shared_experts * shared_expert_params(spec)
        + h * spec.experts
        + latent_projection_params(spec)
    )
    final_norm = h * (2 if spec.norm == "layer" else 1)
    norms = spec.layers * norm_params_per_layer(spec) + final_norm
    total = embedding + lm_head + attention + dense_mlp + experts + shared_and_router + norms
    active = total - experts + experts_active
    return ParamCounts(
        total=total,
        active=active,
        embedding=embedding,
        lm_head=lm_head,
        attention=attention,
        replicated=replicated,
        dense_mlp=dense_mlp,
        experts=experts,
        experts_active=experts_active,
        shared_and_router=shared_and_router,
        norms=norms,
    )


def forward_flops_per_token(spec: ModelSpec, context: int) -> float:
    """Model FLOPs of one forward pass per token at attention context ``context``.

    2 x (active matmul weights in the layers + the output projection) + 4 x context x
    heads x (qk + v)/2 per layer for the attention scores and their weighted sum.
    """
    counts = count_params(spec)
    matmul = 2.0 * (counts.layer_matmul_active + spec.vocab * spec.hidden)
    return matmul + attention_core_flops_per_token(spec, context) * spec.layers


def attention_core_flops_per_token(spec: ModelSpec, context: int | float) -> float:
    """FLOPs of QK^T and AV for one token in one layer over a sequence of ``context`` tokens
    (full square, as Megatron counts; a sliding window narrows the square to its band),
    averaged over the layers: a hybrid's linear layers count their chunked mixing instead, at
    twice its FLOPs so that the causal half callers take is what it runs."""
    softmax = 2.0 * square_context(spec, context) * spec.heads * (qk_dim(spec) + v_dim(spec))
    softmax += indexer_flops_per_token(spec, context)  # the indexer scores the whole square
    if not spec.linear_layers:
        return softmax
    share = linear_share(spec)
    return (1.0 - share) * softmax + share * 2.0 * linear_core_flops_per_token(spec)


def decode_attention_flops_per_token(spec: ModelSpec, context: int | float) -> float:
    """FLOPs of QK^T and AV for the one new token at position ``context`` in one layer: it reads
    every cached key, or the last ``sliding_window`` of them; averaged over the layers, a
    hybrid's linear layers count their recurrent step."""
    softmax = 2.0 * attended_tokens(spec, context) * spec.heads * (qk_dim(spec) + v_dim(spec))
    softmax += indexer_flops_per_token(spec, context)  # the indexer scores every cached key
    if not spec.linear_layers:
        return softmax
    share = linear_share(spec)
    return (1.0 - share) * softmax + share * linear_decode_flops_per_token(spec)


def kv_bytes_per_token(spec: ModelSpec, bytes_per_value: float = 2.0) -> float:
    """KV-cache bytes per token for the whole model (all softmax-attention layers, one replica;
    a hybrid's linear layers keep a fixed state per sequence instead, :func:`state_bytes`).

    GQA stores kv_heads keys and values; MLA stores the compressed latent and the rope key;
    sparse attention adds its indexer's keys (:func:`index_key_bytes_per_token`).
    """
    if spec.is_mla:
        latent = spec.layers * (spec.kv_lora_rank + spec.qk_rope_head_dim) * bytes_per_value
        return latent + index_key_bytes_per_token(spec)
    return softmax_layers(spec) * 2 * spec.kv_heads * head_dim(spec) * bytes_per_value


def kv_read_bytes_per_token(spec: ModelSpec, context: int | float, bytes_per_value: float) -> float:
    """KV-cache bytes one new token at position ``context`` reads, whole model: the keys and
    values it attends to (:func:`attended_tokens`); with sparse attention, the selected top-k
    entries and every cached indexer key, which the indexer scores."""
    index = index_key_bytes_per_token(spec)
    kv = kv_bytes_per_token(spec, bytes_per_value) - index
    return attended_tokens(spec, context) * kv + cached_tokens(spec, context) * index


def state_bytes(spec: ModelSpec, bytes_per_value: float = 2.0) -> float:
    """Recurrent-state bytes per sequence for the whole model (a hybrid's linear layers; 0 for
    a transformer), whatever the context length."""
    return (
        spec.linear_layers * linear_state_elements(spec) * bytes_per_value
        if spec.linear_layers
        else 0.0
    )


def state_bytes_per_layer(spec: ModelSpec, bytes_per_value: float, tp: int = 1) -> float:
    """state_bytes per sequence on one GPU, averaged over the layers: tensor parallelism splits
    the linear layers' value heads (and their state) as it splits attention's heads."""
    shard = min(tp, spec.linear_value_heads) if spec.linear_layers else 1
    return state_bytes(spec, bytes_per_value) / shard / spec.layers


def attention_projections(spec: ModelSpec) -> tuple[tuple[int, int], ...]:
    """(input, output) widths of each linear layer of one attention block (what LoRA adapts).

    MLA (DeepSeek-V2/V3): the query down- and up-projection (or one projection without a query
    LoRA rank), the joint KV down-projection (latent + rope key), the KV up-projection to
    heads x (qk_nope + v) and the output projection from heads x v_head_dim."""
    h = spec.hidden
    if spec.is_mla:
        q: tuple[tuple[int, int], ...] = (
            ((h, spec.q_lora_rank), (spec.q_lora_rank, q_width(spec)))
            if spec.q_lora_rank
            else ((h, q_width(spec)),)
        )
        kv_b = spec.heads * (spec.qk_nope_head_dim + spec.v_head_dim)
        return (
            *q,
            (h, spec.kv_lora_rank + spec.qk_rope_head_dim),
            (spec.kv_lora_rank, kv_b),
            (spec.heads * v_dim(spec), h),
        )
    hd = head_dim(spec)
    kv = spec.kv_heads * hd
    q_out = spec.heads * hd * (2 if spec.attn_output_gate else 1)  # Qwen3-Next: query and gate
    return ((h, q_out), (h, kv), (h, kv), (spec.heads * hd, h))


def block_linears(spec: ModelSpec) -> tuple[tuple[float, float], ...]:
    """(input, output) widths of one block's linear layers in the order its forward calls them:
    the attention projections, then the MLP's (gate and up before down; MoE layers at the
    width a token passes through, ``mean_mlp_width``)."""
    h, f = float(spec.hidden), mean_mlp_width(spec)
    mlp = ((h, f), (h, f), (f, h)) if spec.mlp == "swiglu" else ((h, f), (f, h))
    attn = tuple((float(i), float(o)) for i, o in attention_projections(spec))
    return attn + mlp


def last_matmul_share(spec: ModelSpec) -> float:
    """The share of a block's matmul FLOPs in its last matmul, the MLP's down projection: what a
    recompute that reruns only what the backward reads (JAX's remat) leaves out, as the backward
    needs that matmul's input, not its output."""
    flops = [i * o for i, o in block_linears(spec)]
    return flops[-1] / sum(flops)


def op_checkpoint_split(spec: ModelSpec) -> tuple[float, float]:
    """torchtitan's per-op selective activation checkpointing (``selective_ac_option = "op"``)
    keeps the output of every matmul but every second one, in the order the forward calls them
    (torchtitan distributed/activation_checkpoint.py: ``to_save = func in _save_list and not
    (func == aten.mm and mm_count % 2 == 0)``), and recomputes everything else. Returns the
    share of the block's matmul FLOPs recomputed and the summed output width of the matmuls
    whose outputs are kept."""
    linears = block_linears(spec)
    flops = [i * o for i, o in linears]
    recomputed = sum(fl for n, fl in enumerate(flops) if n % 2 == 1)
    kept_width = sum(o for n, (_, o) in enumerate(linears) if n % 2 == 0)
    return recomputed / sum(flops), kept_width
