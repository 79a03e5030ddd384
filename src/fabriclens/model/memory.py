"""Memory ledger per GPU for training (full, LoRA, QLoRA) and inference.

Sources: mixed-precision Adam keeps bf16 weights and gradients plus fp32 master weights and two
fp32 moments, 16 bytes per parameter, sharded by ZeRO stage (Rajbhandari et al. 2020, ZeRO).
Activations per layer follow Korthikanti et al. 2022 (arXiv 2205.05198, section 4), generalised
to GQA, gated MLPs, mixture of experts and FlashAttention (which keeps no score matrix).
QLoRA stores the frozen base as 4-bit NF4 with double-quantised constants, 4.127 bits per
parameter (Dettmers et al. 2023); bitsandbytes quantises only the linear layers, so the token
embedding and the LM head stay in 16 bit (an 8B model's QLoRA weights are ~5.3 GiB, not 3.9).
With ZeRO-3 / FSDP the frozen base is sharded over the data-parallel ranks too (the FSDP+QLoRA
recipe that fits a 70B model on two 24 GB cards, Answer.AI 2024).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fabriclens.catalog.schema import ModelSpec
from fabriclens.model.arch import (
    ParamCounts,
    attention_projections,
    cached_tokens,
    dense_mlp_layers,
    index_key_bytes_per_token,
    k_width,
    kv_bytes_per_token,
    linear_activation_width,
    linear_projections,
    linear_share,
    mean_mlp_width,
    moe_layers,
    op_checkpoint_split,
    q_width,
    routed_width,
    softmax_layers,
    state_bytes,
    state_bytes_per_layer,
    tp_share,
    v_dim,
    v_width,
)
from fabriclens.model.elementwise import qk_norm_width
from fabriclens.model.layout import WEIGHT_BYTES, TrainConfig, expert_dp
from fabriclens.model.lora import (
    LORA_TARGET_NAMES,
    adapts_mlp,
    mixer_targets,
    mlp_adapter_widths,
)
from fabriclens.model.moe import routed_input_bytes_per_token
from fabriclens.units import format_number

GIB = 2**30
CUDA_CONTEXT_BYTES = 1 * GIB  # CUDA context, cuBLAS/cuDNN workspaces (estimate)
FRAGMENTATION = 0.05  # allocator slack on top of what is allocated (estimate)
# what the memory ledgers add beyond their components, as their notes state it
OVERHEAD_NOTE = (
    f"overhead: {CUDA_CONTEXT_BYTES / GIB:.0f} GiB GPU runtime context (CUDA, ROCm or Metal) + "
    f"{FRAGMENTATION:.0%} allocator fragmentation (estimate)"
)
NCCL_BUFFER_BYTES = 0.5 * GIB  # NCCL channel buffers when a collective runs (estimate)
QLORA_BYTES_PER_PARAM = 4.127 / 8
OPTIMIZER_BYTES_PER_PARAM = 12.0  # fp32 master + Adam m + v
ADAPTER_BYTES_PER_PARAM = 16.0  # adapters train with full mixed-precision Adam


@dataclass(frozen=True, slots=True)
class MemoryLedger:
    """Bytes per GPU by component, and whether they fit."""

    per_gpu_bytes: dict[str, float]
    capacity_bytes: float
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def total_per_gpu_bytes(self) -> float:
        """Sum of all components."""
        return sum(self.per_gpu_bytes.values())

    @property
    def fits(self) -> bool:
        """True when the total fits in the GPU's memory."""
        return self.total_per_gpu_bytes <= self.capacity_bytes


@dataclass(frozen=True, slots=True)
class Stage:
    """One pipeline stage: its decoder layers and which end of the model it holds."""

    index: int
    layers: int
    embedding: bool  # the first stage looks up the input embedding
    lm_head: bool  # the last stage holds the LM head and the logits


def head_cost_layers(spec: ModelSpec, counts: ParamCounts) -> float:
    """The LM head's cost in decoder layers, as a split balanced by compute counts it on the last
    stage: nanotron's get_block_compute_costs, vocabulary x hidden for the head against
    4 x heads x head width x hidden (its attention, every head taken as a full KV head) plus the
    MLP's weights for a layer."""
    mlp = (counts.dense_mlp + counts.experts_active + counts.shared_and_router) / spec.layers
    per_layer = 4.0 * q_width(spec) * spec.hidden + mlp
    return spec.vocab * spec.hidden / per_layer if per_layer > 0 else 0.0


def split_head_layers(spec: ModelSpec, counts: ParamCounts, cfg: TrainConfig) -> float:
    """The head's cost a ``cfg.pipeline_split`` of "balanced" counts, else 0 (an even split)."""
    return head_cost_layers(spec, counts) if cfg.pipeline_split == "balanced" else 0.0


def stage_layer_counts(layers: int, pp: int, head_layers: float = 0.0) -> tuple[int, ...]:
    """Decoder layers on each of ``pp`` pipeline stages, in order.

    An even split: when ``pp`` does not divide the layers the busiest stages hold
    ceil(layers / pp); the stages that hold one fewer are the first and the last (which carry
    the embedding and the LM head), as Llama 3 405B's 126 layers were split (Dubey et al. 2024,
    section 3.3.2: "reduce one Transformer layer each from the first and the last stages"), then
    middle ones from the end.

    With ``head_layers`` (the LM head's cost in layers, :func:`head_cost_layers`) the split is
    balanced by cost as nanotron's is: blocks in order, each stage taking layers until their
    running cost passes its share, (stage + 1) / pp of the whole, and the last stage the rest and
    the head."""
    if pp <= 1:
        return (layers,)
    if head_layers > 0:
        total = layers + head_layers
        counts = [0] * pp
        stage, cost = 0, 0.0
        for _ in range(layers):
            counts[stage] += 1
            cost += 1.0
            if stage < pp - 1 and cost > total * (stage + 1) / pp:
                stage += 1
        return tuple(counts)
    ceil = -(-layers // pp)
    counts = [ceil] * pp
    order = [0, pp - 1, *range(pp - 2, 1, -1)] if pp > 2 else [0, 1]
    light = pp * ceil - layers
    for i in (order[1], order[0], *order[2:])[:light]:
        counts[i] -= 1
    return tuple(counts)


def pipeline_stages(layers: int, pp: int, head_layers: float = 0.0) -> tuple[Stage, ...]:
    """The stages that can decide a fit or a step: the first (the embedding, the most
    micro-batches in flight), the busiest middle one (as the second: the most in flight of the
    middle ones) and the last (the LM head and the logits); see :func:`stage_layer_counts`."""
    counts = stage_layer_counts(layers, pp, head_layers)
    if pp <= 1:
        return (Stage(0, layers, True, True),)
    first, last = Stage(0, counts[0], True, False), Stage(pp - 1, counts[-1], False, True)
    if pp == 2:
        return (first, last)
    return (first, Stage(1, max(counts[1:-1]), False, False), last)


def busiest_layers(layers: int, pp: int, head_layers: float = 0.0) -> int:
    """Decoder layers on the busiest pipeline stage: the step follows it, not the average."""
    return max(stage_layer_counts(layers, max(1, pp), head_layers))


@dataclass(frozen=True, slots=True)
class ParamShare:
    """Parameters held by one GPU of one pipeline stage (before ZeRO sharding)."""

    dense: float  # sharded by tp (and ZeRO over dp)
    expert: float  # sharded by tp x ep (and ZeRO over dp / ep)
    layers: float  # decoder layers held by the stage
    ends: float = 0.0  # the token embedding and LM head among ``dense`` (kept 16-bit by QLoRA)
    embedding: float = 0.0  # the input embedding among ``ends`` (a lookup, not a matmul)
    stage: Stage | None = None

    @property
    def total(self) -> float:
        """All parameters held, dense and expert."""
        return self.dense + self.expert


def stage_share(
    spec: ModelSpec,
    counts: ParamCounts,
    tp: int,
    ep: int,
    stage: Stage,
    pp: int,
    etp: int = 0,
) -> ParamShare:
    """Parameters on one GPU of ``stage``: its layers, the embedding on the first, the LM head
    on the last (a tied model's last stage keeps its own copy of the embedding as the head,
    as Megatron-LM does when pp > 1). The experts split over ``etp`` x ``ep`` ranks (``etp`` 0:
    the TP degree; 1 keeps each expert whole)."""
    per_layer_dense = (counts.attention + counts.dense_mlp + counts.shared_and_router) / spec.layers
    per_layer_dense += counts.norms / spec.layers
    per_layer_expert = counts.experts / spec.layers
    embedding = counts.embedding if stage.embedding else 0.0
    head = 0.0
    if stage.lm_head:
        head = counts.lm_head if (counts.lm_head or pp == 1) else counts.embedding
    ends = embedding + head
    # the indexers sit whole on every TP rank
    replicated = stage.layers * counts.replicated / spec.layers
    dense = tp_share(stage.layers * per_layer_dense + ends, replicated, tp)
    expert = stage.layers * per_layer_expert / ((etp or tp) * ep)
    return ParamShare(dense, expert, stage.layers, ends / tp, embedding / tp, stage)


def param_share(
    spec: ModelSpec,
    counts: ParamCounts,
    tp: int,
    pp: int,
    ep: int,
    head_layers: float = 0.0,
    etp: int = 0,
) -> ParamShare:
    """Parameters on one GPU of the stage that holds the most (first or last: embedding or LM
    head; a middle stage when the split is uneven)."""
    stages = pipeline_stages(spec.layers, pp, head_layers)
    shares = [stage_share(spec, counts, tp, ep, st, pp, etp) for st in stages]
    return max(shares, key=lambda s: s.total)


def frozen_base_bytes(
    dense: Any, expert: Any, ends: Any, bits: int, dp_dense: Any = 1.0, dp_expert: Any = 1.0
) -> Any:
    """Bytes of a LoRA run's frozen base held by one GPU (numbers or numpy arrays): 16-bit, or
    4-bit NF4 for QLoRA with the embedding and LM head (``ends``, part of ``dense``) in 16 bit;
    divided over ``dp_dense`` / ``dp_expert`` ranks when ZeRO-3 / FSDP shards it."""
    if bits == 4:
        return (QLORA_BYTES_PER_PARAM * ((dense - ends) / dp_dense + expert / dp_expert)
                + 2.0 * ends / dp_dense)  # fmt: skip
    return 2.0 * (dense / dp_dense + expert / dp_expert)


def adapter_state_bytes(
    adapters: Any, grad_shards: Any, optimizer_shards: Any, weight_shards: Any
) -> tuple[Any, Any]:
    """A LoRA run's adapter gradients and optimizer state on one GPU (numbers or numpy arrays),
    ``adapters`` the parameters its tensor/pipeline rank trains, each part divided over the
    data-parallel ranks that hold a shard of it (1 where the ZeRO stage keeps it whole): 16-bit
    gradients (ZeRO-2), fp32 master weights and Adam moments (ZeRO-1) and the adapters' 16-bit
    working weights (ZeRO-3), which the optimizer column counts."""
    grads = 2.0 * adapters / grad_shards
    working = ADAPTER_BYTES_PER_PARAM - 2.0 - OPTIMIZER_BYTES_PER_PARAM
    states = adapters * (OPTIMIZER_BYTES_PER_PARAM / optimizer_shards + working / weight_shards)
    return grads, states


def unfused_score_stored_bytes(dropout: bool) -> float:
    """Bytes per score element an unfused attention keeps for its backward (Korthikanti et al.
    2022: the softmax output, and with dropout its mask and output)."""
    return 5.0 if dropout else 2.0


def score_elements_per_token(spec: ModelSpec, seq_len: int, cp: int) -> float:
    """Elements of one layer's unfused score matrix per query token: heads x the keys it sees
    (the sequence, split by context parallelism); tensor parallelism splits the heads. Averaged
    over the layers: a hybrid's linear layers have none."""
    return spec.heads * seq_len / cp * (1.0 - linear_share(spec))


def lse_bytes_per_token(spec: ModelSpec) -> float:
    """FlashAttention's log-sum-exp kept for the backward, fp32 per head and query token,
    averaged over the layers (none in a hybrid's linear layers)."""
    return 4.0 * spec.heads * (1.0 - linear_share(spec))


def mixer_activation_bytes(spec: ModelSpec, tokens: Any) -> Any:
    """Bytes a layer's token mixer keeps for the backward for ``tokens`` (a number or an array;
    the vectorised model calls it too): Q and K for QK^T, V for the weighted sum, the output
    projection's input (Korthikanti et al. 2022, 4sbh + 2sbh + 2sbh for MHA; MLA materialises
    per-head K, 192 wide, and V, 128); the query/key norms' inputs (Qwen3, OLMo 2, Gemma 3); the
    output gate's pre-activation, for the sigmoid's backward; averaged with a hybrid's linear
    layers, which keep their own."""
    q_w, k_w, v_w, o_w = q_width(spec), k_width(spec), v_width(spec), spec.heads * v_dim(spec)
    attn = 2 * tokens * (q_w + k_w) + 2 * tokens * v_w + 2 * tokens * o_w
    attn = attn + 2 * tokens * qk_norm_width(spec)
    if spec.attn_output_gate:
        attn = attn + 2 * tokens * q_w
    if spec.linear_layers:
        share = linear_share(spec)
        attn = (1.0 - share) * attn + share * 2 * tokens * linear_activation_width(spec)
    return attn


def activation_bytes_per_layer(spec: ModelSpec, cfg: TrainConfig, recompute: str) -> float:
    """Activation bytes one GPU keeps for one layer and one micro-batch (bf16)."""
    t = cfg.tp
    tokens = cfg.micro_batch * cfg.seq_len / cfg.cp
    h = spec.hidden
    sp = cfg.sequence_parallel or t == 1
    if recompute == "full":
        return 2.0 * tokens * h / (t if sp else 1)
    o_w = spec.heads * v_dim(spec)  # the output projection's input (mixer_activation_bytes)
    replicated = tokens * h * (8 + (2 if cfg.dropout else 0))
    attn: float = mixer_activation_bytes(spec, tokens)
    f = mean_mlp_width(spec)  # k routed + shared experts in MoE layers
    mlp = (6 if spec.mlp == "swiglu" else 4) * tokens * f
    if cfg.flash_attention:
        scores = lse_bytes_per_token(spec) * tokens  # log-sum-exp, fp32
    else:
        per_token = score_elements_per_token(spec, cfg.seq_len, cfg.cp)
        scores = unfused_score_stored_bytes(cfg.dropout) * per_token * tokens
    if recompute in ("selective", "op"):
        scores = 0.0 if not cfg.flash_attention else scores
    # MoE: the k routed copies of each token that the experts' first GEMMs keep (model/moe.py)
    routed = tokens * routed_input_bytes_per_token(spec)
    if recompute == "op":
        # per-op checkpointing keeps the block's input, every second matmul's output and the
        # attention output (and its log-sum-exp); the norms, activations and the other matmuls'
        # outputs are recomputed (arch.op_checkpoint_split)
        replicated = 2.0 * tokens * h
        attn = 2.0 * tokens * (op_checkpoint_split(spec)[1] + o_w)
        mlp = 0.0
    split = attn + mlp + scores + routed
    return replicated / (t if sp else 1) + split / t


def _in_flight(cfg: TrainConfig, stage: int = 0) -> float:
    """Micro-batches whose activations stage ``stage`` holds at once: 1F1B's warm-up leaves
    pp - stage in flight (the first stage holds pp, the last one); interleaving adds
    (pp-1)/(pp x interleave) of that (Narayanan et al. 2021)."""
    if cfg.pp == 1:
        return 1.0
    held = float(min(cfg.pp - stage, cfg.microbatches))
    if cfg.interleave > 1:
        held *= 1 + (cfg.pp - 1) / (cfg.pp * cfg.interleave)
    return held


def adapter_params(
    spec: ModelSpec, rank: int, targets: str = "all", projections: str = "separate"
) -> float:
    """LoRA adapter parameters on the ``targets`` projections of every layer (model/lora.py
    LORA_TARGETS: every attention and MLP projection by default), one adapter per linear layer
    (q/k/v and gate/up one each when the framework fuses them, ``projections``); in a mixture of
    experts every expert's projections get adapters (PEFT's target_modules match each expert's
    linear layers), not only the k a token is routed to."""
    h, fused = spec.hidden, projections == "fused"
    attn_targets = mixer_targets(attention_projections(spec), targets, spec.is_mla, fused)
    attn = rank * sum(i + o for i, o, _ in attn_targets)
    lin = (
        rank * sum(i + o for i, o, _ in mixer_targets(linear_projections(spec), targets, mla=True))
        if spec.linear_layers
        else 0
    )
    if not adapts_mlp(targets):
        return softmax_layers(spec) * attn + spec.linear_layers * lin
    dense_mlp = dense_mlp_layers(spec) * rank * mlp_adapter_widths(spec, h, spec.ffn, fused)
    f = spec.moe_ffn or spec.ffn
    moe_mlp = (
        moe_layers(spec)
        * rank
        * (
            spec.experts * mlp_adapter_widths(spec, routed_width(spec), f, fused)
            + spec.shared_experts * mlp_adapter_widths(spec, h, f, fused)
        )
    )
    return softmax_layers(spec) * attn + spec.linear_layers * lin + dense_mlp + moe_mlp


def config_adapter_params(spec: ModelSpec, cfg: TrainConfig) -> float:
    """The adapters a LoRA ``cfg`` trains (:func:`adapter_params` at its rank, targets and the
    framework's projections), over the whole model."""
    return adapter_params(spec, cfg.lora_rank, cfg.lora_targets, cfg.projections)


def training_memory(
    spec: ModelSpec, counts: ParamCounts, cfg: TrainConfig, capacity_bytes: float
) -> MemoryLedger:
    """Per-GPU memory for one training step of the busiest pipeline stage: the first holds the
    embedding and the most micro-batches in flight, the last the LM head and the logits, a
    middle one the most layers when the split is uneven; the largest decides the fit."""
    ledgers = [
        _training_stage_memory(spec, counts, cfg, stage)
        for stage in pipeline_stages(spec.layers, cfg.pp, split_head_layers(spec, counts, cfg))
    ]
    comp, notes = max(ledgers, key=lambda c: sum(c[0].values()))
    return MemoryLedger(comp, capacity_bytes, notes)


def _stage_name(stage: Stage, pp: int) -> str:
    if pp == 1:
        return "the only stage"
    what = "first" if stage.embedding else "last" if stage.lm_head else f"stage {stage.index + 1}"
    return f"{what} of {pp} stages ({stage.layers} layers)"


def _training_stage_memory(
    spec: ModelSpec, counts: ParamCounts, cfg: TrainConfig, stage: Stage
) -> tuple[dict[str, float], tuple[str, ...]]:
    share = stage_share(spec, counts, cfg.tp, cfg.ep, stage, cfg.pp, cfg.expert_tp)
    dp_dense: int = cfg.dp * cfg.cp
    dp_expert: int = max(1, expert_dp(cfg))
    notes: list[str] = []
    comp: dict[str, float] = {}

    def sharded(bytes_per_param: float, stage_needed: int) -> float:
        if cfg.zero >= stage_needed:
            return bytes_per_param * (share.dense / dp_dense + share.expert / dp_expert)
        return bytes_per_param * share.total

    if cfg.trains_base:
        comp["weights"] = sharded(2.0, 3)
        # the gradient buffer holds the element type the gradients are reduced in (Megatron-LM's
        # main_grad is FP32 for BF16 runs by default)
        comp["gradients"] = sharded(cfg.grad_bytes, 2)
        comp["optimizer"] = sharded(OPTIMIZER_BYTES_PER_PARAM, 1)
        notes.append(
            f"memory: bf16 weights, {cfg.grad_reduce} gradients, fp32 master weights and Adam moments "
            f"(16 bytes/parameter), ZeRO stage {cfg.zero} over {dp_dense} data-parallel ranks"
        )
    else:
        shard = cfg.zero >= 3  # FSDP / ZeRO-3 shards the frozen base as well
        comp["weights"] = frozen_base_bytes(
            share.dense, share.expert, share.ends, cfg.lora_base_bits,
            dp_dense if shard else 1, dp_expert if shard else 1,
        )  # fmt: skip
        trainable = config_adapter_params(spec, cfg)
        adapters = trainable / (cfg.tp * cfg.pp)
        comp["gradients"], comp["optimizer"] = adapter_state_bytes(
            adapters, *(dp_dense if cfg.zero >= stage else 1 for stage in (2, 1, 3))
        )
        kind = (
            "QLoRA: 4-bit NF4 base (embedding and LM head in 16 bit)"
            if cfg.lora_base_bits == 4
            else "LoRA: frozen bf16 base"
        )
        if cfg.zero >= 3:
            kind += f", sharded over {dp_dense} data-parallel ranks (ZeRO-3 / FSDP)"
        notes.append(
            f"memory: {kind}, rank-{cfg.lora_rank} adapters on "
            f"{LORA_TARGET_NAMES[cfg.lora_targets]} ({trainable / 1e6:.1f}M trainable parameters)"
        )

    per_layer = activation_bytes_per_layer(spec, cfg, cfg.recompute)
    in_flight = _in_flight(cfg, stage.index)
    acts = per_layer * share.layers * in_flight
    if cfg.recompute == "full":  # one layer's full activations exist while it is recomputed
        acts += activation_bytes_per_layer(spec, cfg, "none")
    elif cfg.recompute == "op":  # and what per-op checkpointing recomputes of one layer
        acts += activation_bytes_per_layer(spec, cfg, "none") - per_layer
    tokens = cfg.micro_batch * cfg.seq_len / cfg.cp
    # bf16 logits + fp32 copy for the loss, on the stage that holds the LM head
    logits = tokens * spec.vocab / cfg.tp * (2 + 4) if stage.lm_head else 0.0
    comp["activations"] = acts + logits
    notes.append(
        f"activations: {cfg.recompute} recompute, "
        f"{'FlashAttention (no score matrix)' if cfg.flash_attention else 'score matrix kept'}, "
        f"sequence parallel {'on' if cfg.sequence_parallel else 'off'}; busiest stage: "
        f"{_stage_name(stage, cfg.pp)}, {format_number(in_flight, 2)} micro-batch(es) in flight"
        + ("; fp32 logits for the loss" if stage.lm_head else "")
    )
    buffers = NCCL_BUFFER_BYTES if cfg.gpus > 1 else 0.0
    if cfg.zero >= 3:  # the gathered layer and the one prefetched
        layer_bytes = (
            2.0 * share.total
            if cfg.trains_base
            else frozen_base_bytes(share.dense, share.expert, share.ends, cfg.lora_base_bits)
        )
        buffers += 2 * layer_bytes / max(1.0, share.layers)
    comp["comm_buffers"] = buffers
    allocated = sum(comp.values())
    comp["framework_overhead"] = CUDA_CONTEXT_BYTES + FRAGMENTATION * allocated
    notes.append(OVERHEAD_NOTE)
    return comp, tuple(notes)


def activation_bytes(
    spec: ModelSpec, chunk_tokens: int, batch: int, tp: int = 1, lm_head: bool = True
) -> float:
    """One prefill chunk's activations (hidden states, the MLP's intermediates) and, where the
    LM head is, the batch's fp32 logits."""
    f = (spec.moe_ffn or spec.ffn) * max(1, spec.experts_per_token)
    logits = 4 * batch * spec.vocab / tp if lm_head else 0.0
    return chunk_tokens * (4 * spec.hidden + 6 * f / tp) + logits


def inference_memory(
    spec: ModelSpec,
    counts: ParamCounts,
    *,
    tp: int,
    pp: int,
    batch: int,
    context_tokens: int,
    prefill_chunk_tokens: int,
    weight_precision: str,
    kv_bytes_per_value: float,
    capacity_bytes: float,
    weight_bytes_per_param: float | None = None,
    state_bytes_per_value: float = 4.0,
    dp: int = 1,
) -> MemoryLedger:
    """Per-GPU memory for serving ``batch`` sequences of ``context_tokens`` each.

    ``weight_bytes_per_param`` overrides the nominal size of ``weight_precision`` (an engine's
    own format); ``capacity_bytes`` is what the engine may use of the GPU. A hybrid model's
    linear layers hold a recurrent state per sequence (``state_bytes_per_value`` each, the
    engine's; float32 by default), counted with the KV cache as the engines pool them. With
    data-parallel attention (``dp`` groups of tp/dp ranks) a GPU holds the attention weights
    split over its group only and the KV cache of its group's requests, ceil(batch / dp)."""
    wbytes = (
        WEIGHT_BYTES[weight_precision] if weight_bytes_per_param is None else weight_bytes_per_param
    )
    attn_tp, group_batch = tp // dp, -(-batch // dp)
    kv_shard = 1.0 if spec.is_mla else min(attn_tp, spec.kv_heads)
    kv_per_layer_token = kv_bytes_per_token(spec, kv_bytes_per_value) / kv_shard / spec.layers
    cached = cached_tokens(spec, context_tokens)  # a sliding window keeps W positions
    state_per_layer = state_bytes_per_layer(spec, state_bytes_per_value, attn_tp)
    # the attention's split weights per layer, held over attn_tp ranks instead of tp
    attn_split = (counts.attention - counts.replicated) / spec.layers * (1 / attn_tp - 1 / tp)
    best: dict[str, float] = {}
    where = ""
    for stage in pipeline_stages(spec.layers, pp):
        share = stage_share(spec, counts, tp, 1, stage, pp)
        comp: dict[str, float] = {"weights": wbytes * (share.total + attn_split * stage.layers)}
        kv_one = (cached * kv_per_layer_token + state_per_layer) * stage.layers
        comp["kv_cache"] = group_batch * kv_one
        # fp32 logits of the batch sit with the LM head, on the last stage
        comp["activations"] = activation_bytes(spec, prefill_chunk_tokens, batch, tp, stage.lm_head)
        comp["comm_buffers"] = NCCL_BUFFER_BYTES if tp * pp > 1 else 0.0
        allocated = sum(comp.values())
        comp["framework_overhead"] = CUDA_CONTEXT_BYTES + FRAGMENTATION * allocated
        if sum(comp.values()) > sum(best.values()):
            best, where = comp, _stage_name(stage, pp)
    layers_note = (
        f" in {spec.sliding_window_layers} of {spec.layers} layers"
        if spec.sliding_window_layers and spec.sliding_window_layers < spec.layers
        else ""
    )
    window = (
        f" (sliding window: {spec.sliding_window} cached{layers_note})"
        if spec.sliding_window and context_tokens > spec.sliding_window
        else ""
    )
    sparse = (
        f" (with the sparse-attention indexer keys of {spec.index_layers} layers,"
        f" {index_key_bytes_per_token(spec) / spec.index_layers:g} bytes a token each, FP8)"
        if spec.is_sparse
        else ""
    )
    hybrid = (
        f" in {softmax_layers(spec)} of {spec.layers} layers; the other {spec.linear_layers} (linear"
        f" attention) hold {state_bytes(spec, state_bytes_per_value) / 2**20:.1f} MiB of recurrent"
        f" state per sequence ({state_bytes_per_value:g} bytes/value) with it"
        if spec.linear_layers
        else ""
    )
    notes = (
        f"memory: {weight_precision} weights ({wbytes * 8:.3g} bits each), KV cache {kv_bytes_per_value:g} bytes/value for "
        f"{group_batch} x {context_tokens} tokens{window}{sparse}{hybrid}"
        + (f" (the busiest of {dp} attention groups' requests)" if dp > 1 else "")
        + f", prefill chunk {prefill_chunk_tokens} tokens; "
        f"busiest stage: {where}",
        OVERHEAD_NOTE,
    )
    return MemoryLedger(best, capacity_bytes, notes)
