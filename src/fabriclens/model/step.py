"""Training step time: compute at achievable efficiency, pipeline bubble, exposed communication.

Per micro-batch and pipeline stage, each layer costs
    matmuls   / (peak x matmul_efficiency x shape share)  (catalog: measured MAMF where
                published; each GEMM's shape at its measured rate, model/gemm.py)
  + attention / (BF16 peak x the GPU's attention rate for the framework's kernel: FlashAttention-2
                or cuDNN's fused attention; causal half)
  + elementwise bytes / (HBM bandwidth x memory_bw_efficiency)
with every rate also multiplied by the training framework's efficiency (1.0: the kernel-level
step a Megatron-Core-class framework reaches; eager PyTorch stacks reach less, catalog
frameworks.toml), and, for a framework that launches every op from Python (eager PyTorch), a
host time per layer per micro-batch its kernels do not cover (frameworks.toml layer_host_ms),
where the elementwise traffic (norms, activations, softmax, dropout, residual adds) is taken as
twice the activation bytes the layer stores (each is written once and read back once), as fused
kernels move it; a framework that runs RMSNorm, rotary and SwiGLU op by op (eager PyTorch) adds
what those chains of kernels move besides (model/elementwise.py); a mixture of experts adds the
permutations that move each token's routed copies into expert order and back (model/moe.py).
Backward costs twice the forward (its input- and weight-gradient GEMMs at their own shapes;
FlashAttention's backward 2.5x its forward's FLOPs, as it recomputes the scores);
recomputation adds a forward (full) or the attention core
(selective). The last stage adds the LM head's GEMMs and the loss, which streams the
tokens x vocabulary logits through HBM (LOSS_BYTES_PER_LOGIT). The pipeline adds
(pp-1)/interleave micro-batch times of bubble (Narayanan et al. 2021). Tensor, expert and
pipeline communication is exposed (Megatron's default, no overlap; the expert all-to-all can
hide behind other micro-batches' compute, and a node-deduplicating dispatcher sends a token
once per destination node, model/moe.py); data-parallel gradient
traffic hides behind the last micro-batch's backward; context-parallel KV exchange hides behind
attention; ZeRO-3's forward gathers hide behind the forward, its backward gathers and gradient
reduce-scatters (on the same links) behind the backward.
"""

from __future__ import annotations

from dataclasses import dataclass

from fabriclens.catalog.schema import ATTENTION_NAMES, Gpu, ModelSpec
from fabriclens.model.arch import (
    ParamCounts,
    attention_core_flops_per_token,
    expert_tensors,
    forward_flops_per_token,
    k_width,
    last_matmul_share,
    linear_share,
    mean_mlp_width,
    moe_layers,
    op_checkpoint_split,
    per_tensor_calls,
    routed_width,
    v_dim,
    v_width,
)
from fabriclens.model.collectives import Fabric, Op
from fabriclens.model.comm import (
    DDP_BUCKET_BYTES,
    CommEntry,
    bucket_params,
    bucketed_entry,
    ddp_buckets,
    entry,
    gather_bucket_params,
)
from fabriclens.model.elementwise import eager_extra_bytes_per_token
from fabriclens.model.gemm import layer_shape_shares, lm_head_shape_shares
from fabriclens.model.layout import WEIGHT_BYTES, TrainConfig, place_groups
from fabriclens.model.lora import LORA_TARGET_NAMES, adapter_bytes_per_token
from fabriclens.model.memory import (
    MemoryLedger,
    activation_bytes_per_layer,
    busiest_layers,
    config_adapter_params,
    frozen_base_bytes,
    param_share,
    pipeline_stages,
    score_elements_per_token,
    split_head_layers,
    training_memory,
    unfused_score_stored_bytes,
)
from fabriclens.model.moe import (
    dispatch_network_share,
    moe_host_per_layer_s,
    permute_bytes_per_token,
    permute_moves,
    routed_input_bytes_per_token,
)

# eager PyTorch at small micro-batches: the published runs at this many tokens per micro-batch or
# fewer spread wider about the step than its likely range (reference/, tests/unit/test_step.py):
# the host time per layer (frameworks.toml layer_host_ms) is a mean over stacks whose op counts
# differ, and there it is a large part of the step; the plan says so
SMALL_EAGER_TOKENS = 2048
SMALL_EAGER_RUNS = 21

# FlashAttention-2 reaches 50-73% of A100 peak forward and less backward (Dao 2023, Fig. 4-6).
ADAM_BYTES_PER_PARAM = 28.0  # read grad(2) master(4) m(4) v(4); write master, m, v, bf16 weight
QLORA_DEQUANT_BYTES_PER_PARAM = 4.5  # read 4-bit (0.5), write + read bf16 copy (2 + 2)
# Cross-entropy over the vocabulary, per logit element (PyTorch's and Megatron's FP32 loss):
# forward: upcast the BF16 logits (read 2, write 4), softmax's max/sum passes and its output
# (read 8, write 4); backward: the gradient of the loss (write 4), softmax's backward (read 8,
# write 4), downcast for the LM head's GEMMs (read 4, write 2). Small models with large
# vocabularies spend a sizeable share of the step here (MPT-125M: vocab 50,368, hidden 768).
LOSS_BYTES_PER_LOGIT = 40.0
OVERHEAD_SHARE_FOR_BOTTLENECK = 0.2
# FlashAttention's backward: dV, dP, dQ, dK plus the recomputed scores S = QK^T, five matmuls to
# the forward's two (Dao-AILab/flash-attention benchmarks/benchmark_flash_attention.py: bwd
# FLOPs = 2.5 x fwd)
ATTENTION_BWD_FLOPS = 2.5
# Hidden communication is not free: NCCL kernels run on ~16-32 of the GPU's SMs (one CTA per
# channel) and share its HBM bandwidth, so compute that overlaps them slows down: by 18.9% on
# average (up to 40%) over GPT and Llama training steps on A100, H100, MI250 and MI210 (Lee et
# al. 2025, "Characterizing Compute-Communication Overlap in GPU-Accelerated Distributed Deep
# Learning", arXiv 2507.03114), charged here on the compute that the hidden calls overlap.
OVERLAP_COMPUTE_TAX = 0.2
# A list collective's host work per rank (DeepSpeed's ZeRO-3 before 0.6, per parameter tensor):
# a Python narrow() view per rank, then torch.distributed's NCCL process group copies each rank's
# piece out of (all_gather) or into (reduce_scatter) its flat buffer, one copy_ op per rank
# (ProcessGroupNCCL::allgather / reduce_scatter through flatten_for_scatter_gather). Estimate:
# one eager op's CPU time, ~15 us, as the catalog's eager Transformers engine charges a kernel.
# At 1,536 ranks that is 23 ms a call: what makes SC21's ZeRO-3 runs (Narayanan et al. 2021,
# Table 2) take as long per step on 1,536 GPUs as on 768 (reference/training_more.csv tm261-266).
LIST_COLLECTIVE_RANK_S = 15e-6
# Unfused attention (no FlashAttention) moves its heads x s x s score matrix through HBM, bytes
# per element in 16-bit, with dropout (Megatron's default 0.1) and without. Forward: the QK^T
# GEMM writes the scores (2), the fused scale-mask-softmax reads them and writes P (2 + 2),
# dropout reads P and writes its output and a 1-byte mask (2 + 2 + 1), the PV GEMM reads it (2).
# Backward: dP from the dO V^T GEMM (2), dropout's backward (2 + 1 read, 2 written), softmax's
# (dP and P read, dS written: 6), P read again for dV (2), dS read by the dQ and dK GEMMs (4).
# What is stored is Korthikanti et al. 2022's 5 bytes (2 without dropout) per element.
UNFUSED_SCORE_FWD_BYTES = {True: 13.0, False: 8.0}
UNFUSED_SCORE_BWD_BYTES = {True: 19.0, False: 14.0}


@dataclass(frozen=True, slots=True)
class StepEstimate:
    """One training step, decomposed."""

    time_s: float
    compute_s: float
    comm_exposed_s: float
    bubble_s: float
    optimizer_s: float
    microbatch_compute_s: float
    comm: tuple[CommEntry, ...]
    memory: MemoryLedger
    model_flops: float  # whole step, all GPUs, no recompute (causal half with FlashAttention)
    hw_flops: float  # including recompute
    tokens_per_step: float
    gpus: int
    peak_flops_per_s: float
    bottleneck: str
    assumptions: tuple[str, ...]
    model_flops_full_square: float = 0.0  # Megatron/PaLM convention: the whole score square

    @property
    def tokens_per_s(self) -> float:
        """Training throughput in tokens per second."""
        return self.tokens_per_step / self.time_s

    @property
    def tflops_per_gpu(self) -> float:
        """Model TFLOP/s per GPU (no recompute)."""
        return self.model_flops / self.time_s / self.gpus / 1e12

    @property
    def hw_tflops_per_gpu(self) -> float:
        """Hardware TFLOP/s per GPU (recompute included)."""
        return self.hw_flops / self.time_s / self.gpus / 1e12

    @property
    def mfu(self) -> float:
        """Model FLOPs utilisation."""
        return self.tflops_per_gpu * 1e12 / self.peak_flops_per_s

    @property
    def mfu_full_square(self) -> float:
        """MFU with attention counted as the whole score square (Megatron's and llm-foundry's
        convention, how most published MFUs are computed): higher than ``mfu`` at long context."""
        return self.model_flops_full_square / self.time_s / self.gpus / self.peak_flops_per_s

    @property
    def hfu(self) -> float:
        """Hardware FLOPs utilisation."""
        return self.hw_tflops_per_gpu * 1e12 / self.peak_flops_per_s

    @property
    def comm_share(self) -> float:
        """Share of the step spent in exposed communication."""
        return self.comm_exposed_s / self.time_s


def fp8_cast_elements_per_token(spec: ModelSpec) -> float:
    """Elements cast to FP8 per token per layer in the forward pass: the inputs of the linear
    layers (QKV, output projection, MLP in, MLP out), which Transformer Engine quantises before
    each FP8 GEMM (read BF16, write FP8: 3 bytes each); the backward casts the gradients alike."""
    f = mean_mlp_width(spec)  # k routed + shared experts in MoE layers
    return 2.0 * spec.hidden + spec.heads * v_dim(spec) + f


FP8_CAST_BYTES = 3.0  # read a BF16 element, write its FP8 copy


def peak_flops(gpu: Gpu, precision: str) -> float:
    """Dense tensor-core peak for the compute precision (int weights compute in bf16)."""
    if precision == "fp8":
        return gpu.fp8_flops_per_s
    if precision == "fp4":
        return gpu.fp4_flops_per_s
    if precision == "fp16":
        return gpu.fp16_flops_per_s
    return gpu.bf16_flops_per_s


# the share of a layer's ops a recompute launches again, on top of its forward and backward: a
# full recompute reruns the forward's ops, a third of the layer's; per-op checkpointing
# (torchtitan) nearly as many: every elementwise op and every second matmul, and the matmuls are
# a few of a layer's ops; selective reruns one (the attention core)
HOST_RERUNS = {"none": 0.0, "selective": 0.0, "op": 1.0 / 3.0, "full": 1.0 / 3.0}


def layer_host_time(cfg: TrainConfig) -> float:
    """Host time of one decoder layer per micro-batch (forward, backward and the rerun forward
    of a full or per-op recompute) that its kernels do not cover, at the framework's share."""
    return cfg.layer_host_s * (1.0 + HOST_RERUNS[cfg.recompute]) / cfg.framework_efficiency


def moe_host_time(spec: ModelSpec, cfg: TrainConfig) -> float:
    """The MoE layers' host time per micro-batch that their kernels do not cover (model/moe.py
    MOE_LAYER_HOST_MS), averaged over the decoder layers, at the framework's share; the rerun
    forward of a full or per-op recompute routes the tokens again."""
    per_layer = moe_host_per_layer_s(spec, cfg.moe_layer_host_s)
    return per_layer * (1.0 + HOST_RERUNS[cfg.recompute]) / cfg.framework_efficiency


def estimate_training_step(
    spec: ModelSpec,
    counts: ParamCounts,
    gpu: Gpu,
    fabric: Fabric,
    cfg: TrainConfig,
    memory: MemoryLedger | None = None,
) -> StepEstimate:
    """Estimate one optimizer step of ``cfg`` on ``gpu`` x ``cfg.gpus`` connected by ``fabric``."""
    peak = peak_flops(gpu, cfg.precision)
    fw = cfg.framework_efficiency  # every kernel at this share of its achievable rate
    mm_rate = peak * gpu.gemm_efficiency(cfg.precision) * fw
    # FP8 training keeps attention and the LM head in BF16 (Transformer Engine's defaults)
    fp8 = cfg.precision == "fp8"
    bf16_mm_rate = gpu.bf16_flops_per_s * gpu.matmul_efficiency * fw if fp8 else mm_rate
    attn_fwd, attn_bwd, attn_source = gpu.attention_rates(cfg.attention_kernel)
    fused = cfg.attention_kernel == "fused" and gpu.fused_attention_efficiency > 0
    attn_kernel = ATTENTION_NAMES["fused" if fused else "flash"]
    attn_peak = gpu.bf16_flops_per_s if fp8 else peak  # attention runs in BF16 under FP8
    attn_rate, attn_bwd_rate = attn_peak * attn_fwd * fw, attn_peak * attn_bwd * fw
    mem_rate = gpu.hbm_bw_bytes_per_s * gpu.memory_bw_efficiency * fw
    t, h = cfg.tp, spec.hidden
    tokens = cfg.micro_batch * cfg.seq_len / cfg.cp  # per GPU per micro-batch
    head_layers = split_head_layers(spec, counts, cfg)  # 0: an even split
    share = param_share(spec, counts, t, cfg.pp, cfg.ep, head_layers, cfg.expert_tp)
    layers = busiest_layers(spec.layers, cfg.pp, head_layers)  # the step follows the busiest stage
    stages = pipeline_stages(spec.layers, cfg.pp, head_layers)
    m = cfg.microbatches

    # --- compute per micro-batch per stage ---
    layer_mm = 2.0 * tokens * counts.layer_matmul_active / spec.layers / t
    core = tokens * attention_core_flops_per_token(spec, cfg.seq_len) / t
    core_hw = core * (0.5 if cfg.flash_attention else 1.0)  # causal blocks skipped
    act_none = activation_bytes_per_layer(spec, cfg, "none")
    # MoE: the routed copies are moved by the permutation, not by elementwise kernels
    routed = tokens * routed_input_bytes_per_token(spec) / t
    elem = 2.0 * (act_none - routed)
    # unfused attention: the score matrix's traffic is priced with attention below, not here
    score_elems = (
        0.0
        if cfg.flash_attention
        else tokens * score_elements_per_token(spec, cfg.seq_len, cfg.cp) / t
    )
    elem -= 2.0 * score_elems * unfused_score_stored_bytes(cfg.dropout)
    if fp8:
        elem += FP8_CAST_BYTES * tokens * fp8_cast_elements_per_token(spec) / t
    # each pass's GEMMs at their shapes' share of the best GEMM rate (model/gemm.py)
    s_fwd, s_dgrad, s_wgrad = layer_shape_shares(
        gpu, spec, tokens, t, cfg.ep, "fp8" if fp8 else "bf16"
    )
    t_mm = layer_mm / (mm_rate * s_fwd)
    t_mm_bwd = layer_mm / (mm_rate * s_dgrad)  # input gradients
    if cfg.trains_base:  # and weight gradients
        t_mm_bwd += layer_mm / (mm_rate * s_wgrad)
    t_core = core_hw / attn_rate if cfg.flash_attention else core_hw / bf16_mm_rate
    t_elem = elem / mem_rate
    # MoE: tokens copied into expert order and back, each pass (model/moe.py)
    t_perm = tokens * permute_bytes_per_token(spec, cfg.ep) / t / mem_rate
    # op-by-op frameworks move more: eager RMSNorm, rotary and SwiGLU (model/elementwise.py)
    eager_fwd, eager_bwd = eager_extra_bytes_per_token(
        spec, t, cfg.sequence_parallel, cfg.elementwise
    )
    t_eager_fwd, t_eager_bwd = tokens * eager_fwd / mem_rate, tokens * eager_bwd / mem_rate
    if not cfg.flash_attention:  # the score matrix through HBM, element by element (see above)
        t_core += UNFUSED_SCORE_FWD_BYTES[cfg.dropout] * score_elems / mem_rate
    fwd = t_mm + t_core + t_elem + t_eager_fwd + t_perm
    # a frozen base (LoRA) needs input gradients only, no weight gradients; adapters are tiny
    # FlashAttention's backward recomputes the scores: 2.5x the forward's FLOPs (its benchmarks'
    # convention), at the GPU's backward rate; an unfused backward is 2x its forward
    t_core_bwd = (
        ATTENTION_BWD_FLOPS * core_hw / attn_bwd_rate
        if cfg.flash_attention
        else 2.0 * core_hw / bf16_mm_rate
        + UNFUSED_SCORE_BWD_BYTES[cfg.dropout] * score_elems / mem_rate
    )
    bwd = t_mm_bwd + t_core_bwd + 2.0 * t_elem + t_eager_bwd + t_perm
    # LoRA: the adapters stream each adapted layer's input and output again (model/lora.py);
    # each rank trains, reduces and updates its share of them
    a_fwd, a_bwd = (
        (0.0, 0.0)
        if cfg.trains_base
        else adapter_bytes_per_token(
            spec, t, cfg.sequence_parallel, cfg.expert_tp, cfg.lora_targets, cfg.projections
        )
    )
    adapters = 0.0 if cfg.trains_base else config_adapter_params(spec, cfg) / (t * cfg.pp)
    fwd += tokens * a_fwd / mem_rate
    bwd += tokens * a_bwd / mem_rate
    # per-op checkpointing (torchtitan) reruns every second matmul and all the elementwise work
    op_share = op_checkpoint_split(spec)[0]
    # a full recompute reruns the layer's forward; JAX's remat only what the backward reads: all
    # but the last matmul, the MLP's down projection (RECOMPUTE_RERUNS, catalog/schema.py)
    skipped = last_matmul_share(spec) if cfg.recompute_reruns == "needed" else 0.0
    recompute = {
        "none": 0.0,
        "selective": t_core,
        "op": op_share * t_mm + t_elem + t_eager_fwd + t_perm,
        "full": fwd - skipped * t_mm,
    }[cfg.recompute]
    dequant = 0.0
    if not cfg.trains_base and cfg.lora_base_bits == 4:
        passes = {"full": 3.0 - skipped, "op": 2.0 + op_share}.get(cfg.recompute, 2.0)
        dequant = (
            passes * QLORA_DEQUANT_BYTES_PER_PARAM * share.total / max(1, share.layers) / mem_rate
        )
    # host time the kernels do not cover (eager PyTorch launching every op from Python); the rerun
    # forward of a full or per-op recompute adds a third; scaled by the share like every kernel
    host = layer_host_time(cfg)
    moe_host = moe_host_time(spec, cfg)  # the router's and dispatcher's (model/moe.py)
    per_layer = fwd + bwd + recompute + dequant + host + moe_host
    logits_flops = 2.0 * tokens * h * spec.vocab / t
    h_fwd, h_dgrad, h_wgrad = lm_head_shape_shares(gpu, spec, tokens, t)
    head_passes = 1 / h_fwd + 1 / h_dgrad + (1 / h_wgrad if cfg.trains_base else 0.0)
    logits = head_passes * logits_flops / bf16_mm_rate
    # the loss streams the logits (tokens x vocab, split over TP) through HBM several times
    logits += LOSS_BYTES_PER_LOGIT * tokens * spec.vocab / t / mem_rate
    # the slowest stage sets the pace: the most layers, or the last one's layers + the LM head
    compute_mb = max(st.layers * per_layer + (logits if st.lm_head else 0.0) for st in stages)

    # --- communication ledger ---
    groups = place_groups(cfg)
    comm: list[CommEntry] = []
    act_bytes = tokens * h * 2.0
    # collectives per layer: 2 forward, 2 backward, and the 2 a full recompute reruns; rerunning
    # only what the backward reads (JAX) drops the one after the last matmul (below), and of a
    # MoE layer's all-to-alls the combine, not the dispatch
    full = cfg.recompute == "full"
    needed = full and cfg.recompute_reruns == "needed"
    n_passes = 2 + 2 + (2 if full and not needed else 0)
    a2a_passes = 4 + (1 if needed else 2 if full else 0)
    moe_per_stage = layers * moe_layers(spec) / spec.layers  # MoE layers of the busiest stage
    routed_tp_calls = 0.0
    if t > 1:
        calls: float = n_passes * layers * m
        # per-op checkpointing keeps the reduce-scatters' outputs (torchtitan's _save_list), not
        # the forward's gathers or all-reduces: the backward runs those two again
        rerun = 2 * layers * m if cfg.recompute == "op" else 0
        scatter_rerun = 0
        # both gathers (or the attention's all-reduce) again, one reduce-scatter; a MoE layer's
        # rerun gathers are counted as a dense layer's (JAX MoE with TP and full remat is rare)
        if needed:
            rerun = (2 if cfg.sequence_parallel else 1) * layers * m
            scatter_rerun = layers * m
        if spec.is_moe:
            # a MoE layer's MLP has no dense TP pair: shared experts keep theirs; the routed
            # copies (k per token) are gathered over the expert-TP group after the all-to-all
            # and scattered back before it (Megatron-Core's all-to-all dispatcher: AllGather-V
            # and ReduceScatter-V within the ETP group; Liu et al. 2025, arXiv 2504.14960,
            # sec. 3.3); with ETP 1 (--etp 1) the experts are whole on each rank and need none.
            # Memory and GEMM shapes keep the experts split over the TP ranks either way
            moe_mlp_calls = (n_passes / 2) * moe_per_stage * m
            if not spec.shared_experts:
                calls -= moe_mlp_calls
            if cfg.expert_tp > 1:
                routed_tp_calls = moe_mlp_calls
        # a layer without an MLP (Nemotron-H's mixer blocks) runs its mixer's pair alone
        calls -= (n_passes / 2) * layers * spec.mlp_free_layers / spec.layers * m
        if cfg.sequence_parallel:
            comm.append(
                entry(
                    groups["tp"],
                    "all_gather",
                    act_bytes,
                    calls + rerun,
                    fabric,
                    note="sequence parallel: gather before each block",
                )
            )
            comm.append(
                entry(
                    groups["tp"],
                    "reduce_scatter",
                    act_bytes,
                    calls + scatter_rerun,
                    fabric,
                    note="sequence parallel: scatter after each block",
                )
            )
        else:
            comm.append(
                entry(
                    groups["tp"],
                    "all_reduce",
                    act_bytes,
                    calls + rerun,
                    fabric,
                    note="2 per layer forward, 2 backward (Megatron)",
                )
            )
        if routed_tp_calls:
            routed = act_bytes * spec.experts_per_token * routed_width(spec) / h
            pairs: tuple[tuple[Op, str], ...] = (
                ("all_gather", "gathered"),
                ("reduce_scatter", "scattered back"),
            )
            for op, what in pairs:
                comm.append(
                    entry(groups["tp"], op, routed, routed_tp_calls, fabric,
                          note=f"MoE: the {spec.experts_per_token} routed copies of each token "
                               f"{what} over the expert-TP group")
                )  # fmt: skip
    if spec.is_moe and cfg.ep > 1:
        # each rank dispatches its own tokens: with tensor parallelism (which MoE runs with
        # sequence parallelism) 1/tp of the micro-batch; the tp group then gathers them over
        # NVLink (Megatron-Core's all-to-all dispatcher: num_local_tokens = S/TP x B)
        size = tokens / t * spec.experts_per_token * routed_width(spec) * 2.0
        note = "dispatch + combine per MoE layer"
        ep_group = groups["ep"]
        # node-dedup (DeepEP-class): once per destination node, on over NVLink there (what
        # the network sees); inside one node once per destination GPU (DeepEP's dispatch
        # layout: is_token_in_rank, one copy per rank whatever its experts there)
        nodes = ep_group.size / ep_group.per_node
        within = nodes <= 1
        net_share = dispatch_network_share(
            spec, ep_group.size if within else nodes, cfg.moe_dispatch
        )
        if net_share < 1.0:
            size *= net_share
            where = "GPU" if within else "node"
            note += f"; sent once per destination {where} ({net_share:.2f} of the routed copies)"
        # with EP overlap a micro-batch's dispatch and combine run during another's compute:
        # all micro-batches but one offer theirs (the first forward has nothing beside it)
        window = (m - 1) * compute_mb if cfg.ep_overlap else 0.0
        if cfg.ep_overlap:
            note += "; overlapped with another micro-batch's compute"
        comm.append(
            entry(
                ep_group,
                "all_to_all",
                size,
                a2a_passes * moe_per_stage * m,
                fabric,
                overlap_window_s=window,
                note=note,
            )
        )
    if cfg.cp > 1:
        # ring attention passes each rank's keys and values (MLA: decompressed, 192 + 128 wide),
        # of its own heads only: tensor parallelism splits the heads, so each CP ring carries
        # 1/tp of them (GQA: at least one KV head per rank, as the heads are split)
        kv_split = t if spec.is_mla else min(t, spec.kv_heads)
        size = tokens * cfg.cp * (k_width(spec) + v_width(spec)) * 2.0 / kv_split
        # a hybrid's linear layers have no keys and values to pass, only a chunk-end state
        # (negligible beside them); the size is averaged over the layers, as the calls count them
        size *= 1.0 - linear_share(spec)
        passes = 2 if cfg.recompute != "full" else 3
        comm.append(
            entry(
                groups["cp"],
                "all_gather",
                size,
                passes * layers * m,
                fabric,
                overlap_window_s=m * layers * t_core * 3,
                note="KV exchange, hidden behind attention",
            )
        )
        comm.append(
            entry(
                groups["cp"],
                "reduce_scatter",
                size,
                layers * m,
                fabric,
                overlap_window_s=m * layers * t_core * 2,
                note="dK/dV back to their owners in backward",
            )
        )
    if cfg.pp > 1:
        size = act_bytes / (t if cfg.sequence_parallel else 1)
        comm.append(
            entry(
                groups["pp"],
                "send_recv",
                size,
                2 * m * cfg.interleave,
                fabric,
                note="activations forward, gradients backward",
            )
        )

    dp_group = groups["dp-cp"]  # gradients are reduced over data- and context-parallel ranks
    if cfg.dp * cfg.cp > 1:
        if cfg.trains_base:
            params_dense, params_expert = share.dense, share.expert
        else:  # LoRA: only the adapters are trained, synchronised and updated
            params_dense, params_expert = adapters, 0.0
        grad_dense = params_dense * cfg.grad_bytes
        grad_expert = params_expert * cfg.grad_bytes
        window = bwd * layers * 0.9 if cfg.overlap_dp else 0.0
        # Megatron-Core's buckets (the ranks' gradients and weights, in calls of this many
        # parameters; the experts' buffers take the same size); PyTorch DDP's 25 MiB buckets for
        # the gradients only (comm.bucket_params); other stacks: one call
        bucket = bucket_params(cfg.grad_buckets, cfg.dp * cfg.cp, cfg.grad_bytes, cfg.zero)
        gather_bucket = gather_bucket_params(cfg.grad_buckets, cfg.dp * cfg.cp)
        # nccl-tests sizes: a reduce_scatter's is its input on each rank (this rank's whole
        # gradient), an all_gather's the whole gathered array (this model shard's weights); each
        # rank then moves (dp-1)/dp of it, so ZeRO-1/2 move 2x the parameter bytes per step as an
        # all-reduce does and ZeRO-3 3x (Rajbhandari et al. 2020, sec. 7), whatever the dp degree.
        weight_dense = params_dense * WEIGHT_BYTES["bf16"]
        if cfg.zero >= 3:
            # LoRA under FSDP / ZeRO-3 gathers the frozen base (at its storage precision) too
            gathered = weight_dense + (
                0.0
                if cfg.trains_base
                else frozen_base_bytes(share.dense, 0.0, share.ends, cfg.lora_base_bits)
            )
            # FSDP and ZeRO-3 gather and scatter one layer at a time (FSDP wraps each block as a
            # unit; ZeRO-3 fetches each module's parameters), so every layer's call pays the
            # collective's latency, which grows with the ranks of a ring. FSDP prefetches the
            # next layer's weights while this one computes: the forward's gathers hide behind the
            # forward; in the backward, the gathers and the gradients' reduce-scatters share the
            # same links and hide behind the backward (and recompute)
            expert_group = groups["dp-expert"]
            if cfg.zero3_calls == "per-tensor":
                # DeepSpeed's ZeRO-3 before 0.6: a call per parameter tensor, each a list of one
                # view per rank that torch.distributed copies out of (all_gather) or into
                # (reduce_scatter) its flat buffer one at a time, and the device synchronized
                # before every gather, so nothing overlaps; a full recompute's forward fetches
                # the weights again before the backward does
                gathers, reductions = per_tensor_calls(spec, cfg.trains_base)
                g_pieces = max(1, round(layers * gathers))
                s_pieces = max(1, round(layers * reductions))
                e_pieces = max(
                    1, round(moe_per_stage * expert_tensors(spec) * spec.experts / cfg.ep)
                )
                dense_over = dp_group.size * LIST_COLLECTIVE_RANK_S
                expert_over = expert_group.size * LIST_COLLECTIVE_RANK_S
                bwd_gathers = 2 if cfg.recompute == "full" else 1
                fwd_window = bwd_window = 0.0
                unit = "per-tensor calls, synchronized (DeepSpeed before 0.6)"
            else:
                g_pieces = s_pieces = layers
                e_pieces = max(1, round(moe_per_stage))
                dense_over = expert_over = 0.0
                bwd_gathers = 1
                fwd_window = m * layers * fwd * 0.9
                bwd_window = m * layers * (bwd + recompute) * 0.9
                unit = "per-layer calls"
            note = f"ZeRO-3: gather weights for the {{}}, in {g_pieces} {unit}" + ("" if cfg.trains_base else " (the frozen base and the adapters)")  # fmt: skip
            gather_fwd = entry(dp_group, "all_gather", gathered, m, fabric, pieces=g_pieces,
                               overlap_window_s=fwd_window, note=note.format("forward"),
                               call_overhead_s=dense_over)  # fmt: skip
            comm.append(gather_fwd)
            gather_bwd = entry(dp_group, "all_gather", gathered, m * bwd_gathers, fabric,
                               pieces=g_pieces, overlap_window_s=bwd_window,
                               note=note.format("backward"), call_overhead_s=dense_over)  # fmt: skip
            comm.append(gather_bwd)
            fwd_left, bwd_left = fwd_window - gather_fwd.time_s, bwd_window - gather_bwd.time_s
            # MoE: ZeRO-3 shards the experts over their own data-parallel group (the memory
            # ledger holds 1/(tp x cp x dp / (etp x ep)) of them), so each MoE layer gathers its experts' weights
            # there too and scatters their gradients, in the same windows after the dense calls
            weight_expert = (
                params_expert * WEIGHT_BYTES["bf16"]
                if cfg.trains_base
                else frozen_base_bytes(0.0, share.expert, 0.0, cfg.lora_base_bits)
            )
            sharded_experts = weight_expert > 0 and expert_group.size > 1
            if sharded_experts:
                enote = f"ZeRO-3: gather the experts' weights for the {{}}, in {e_pieces} {unit} over the expert data-parallel group"  # fmt: skip
                experts_fwd = entry(expert_group, "all_gather", weight_expert, m, fabric,
                                    pieces=e_pieces, overlap_window_s=max(0.0, fwd_left),
                                    note=enote.format("forward"), call_overhead_s=expert_over)  # fmt: skip
                experts_bwd = entry(expert_group, "all_gather", weight_expert, m * bwd_gathers,
                                    fabric, pieces=e_pieces, overlap_window_s=max(0.0, bwd_left),
                                    note=enote.format("backward"), call_overhead_s=expert_over)  # fmt: skip
                comm += [experts_fwd, experts_bwd]
                bwd_left -= experts_bwd.time_s
            scatter = entry(
                dp_group,
                "reduce_scatter",
                grad_dense,
                m,
                fabric,
                pieces=s_pieces,
                overlap_window_s=max(0.0, bwd_left),
                note=f"ZeRO-3: scatter gradients in {s_pieces} {unit}"
                + ("" if dense_over else " (behind the backward, after its gathers)"),
                call_overhead_s=dense_over,
            )
            comm.append(scatter)
            if sharded_experts and grad_expert > 0:
                comm.append(
                    entry(expert_group, "reduce_scatter", grad_expert, m, fabric,
                          pieces=e_pieces, overlap_window_s=max(0.0, bwd_left - scatter.time_s),
                          note="ZeRO-3: scatter the experts' gradients over their data-parallel group",
                          call_overhead_s=expert_over)
                )  # fmt: skip
        elif cfg.zero >= 1:
            comm.append(
                bucketed_entry(
                    dp_group,
                    "reduce_scatter",
                    grad_dense,
                    cfg.grad_bytes,
                    bucket,
                    fabric,
                    overlap_window_s=window,
                    note="gradients, after last backward",
                )
            )
            comm.append(
                bucketed_entry(
                    dp_group,
                    "all_gather",
                    weight_dense,
                    WEIGHT_BYTES["bf16"],
                    gather_bucket,
                    fabric,
                    overlap_window_s=fwd * layers * 0.9 if cfg.overlap_dp else 0.0,
                    note="updated weights, behind next forward",
                )
            )
        else:
            comm.append(
                bucketed_entry(
                    dp_group,
                    "all_reduce",
                    grad_dense,
                    cfg.grad_bytes,
                    bucket,
                    fabric,
                    overlap_window_s=window,
                    note="gradients, bucketed behind backward",
                )
            )
        if grad_expert > 0 and groups["dp-expert"].size > 1 and cfg.zero < 3:
            comm.append(
                bucketed_entry(
                    groups["dp-expert"],
                    "all_reduce",
                    grad_expert,
                    cfg.grad_bytes,
                    bucket,
                    fabric,
                    overlap_window_s=window,
                    note="expert gradients",
                )
            )

    comm_exposed = sum(c.exposed_s for c in comm)
    per_mb_exposed = sum(c.exposed_s for c in comm if c.group in ("tp", "ep", "cp", "pp"))
    mb_time = compute_mb + per_mb_exposed / m
    bubble = (cfg.pp - 1) / cfg.interleave * mb_time if cfg.pp > 1 else 0.0

    if cfg.trains_base:
        # ZeRO shards the dense weights' states over dp x cp and the experts' over the ranks
        # holding the same experts (tp x dp x cp / (etp x ep)), as the memory ledger does
        dp_dense = cfg.dp * cfg.cp if cfg.zero >= 1 else 1
        dp_expert = groups["dp-expert"].size if cfg.zero >= 1 else 1
        optimized = share.dense / dp_dense + share.expert / dp_expert
    else:  # the adapters' states, sharded alike (memory.adapter_state_bytes)
        optimized = adapters / (cfg.dp * cfg.cp if cfg.zero >= 1 else 1)
    optimizer = ADAM_BYTES_PER_PARAM * optimized / mem_rate
    hidden_comm = sum(c.time_s - c.exposed_s for c in comm)
    overlap_tax = OVERLAP_COMPUTE_TAX * hidden_comm
    compute_total = m * compute_mb + optimizer + overlap_tax
    time_s = compute_total + comm_exposed + bubble

    tokens_step = float(cfg.global_batch * cfg.seq_len)
    fwd_flops = forward_flops_per_token(spec, cfg.seq_len) * tokens_step
    core_total = attention_core_flops_per_token(spec, cfg.seq_len) * spec.layers * tokens_step
    # FLOPs are counted as the step time above is built: with FlashAttention a causal model runs
    # the lower half of the score square, so MFU <= HFU <= the matmul ceiling hold; the
    # full-square figure (Megatron's convention) is kept beside it for comparing with logs
    core_run = core_total * (0.5 if cfg.flash_attention else 1.0)
    fwd_run = fwd_flops - core_total + core_run
    fwd_bwd = 3.0 if cfg.trains_base else 2.0
    model_flops = fwd_bwd * fwd_run
    layer_mm_run = 2.0 * counts.layer_matmul_active * tokens_step  # the blocks' matmuls, once
    hw_flops = (
        model_flops
        + {
            "none": 0.0,
            "selective": core_run,
            "op": op_share * layer_mm_run,
            "full": fwd_run - skipped * layer_mm_run,
        }[cfg.recompute]
    )

    if memory is None:  # callers that already checked the fit pass the ledger in
        memory = training_memory(spec, counts, cfg, gpu.memory_bytes)
    link_exposed: dict[str, float] = {}
    for c in comm:
        key = "network" if c.link == "network" else "intra-node link"
        link_exposed[key] = link_exposed.get(key, 0.0) + c.exposed_s
    overheads = {**link_exposed, "pipeline bubble": bubble}
    worst = max(overheads.items(), key=lambda kv: kv[1], default=("compute", 0.0))
    if not memory.fits:
        bottleneck = "memory capacity"
    elif worst[1] >= OVERHEAD_SHARE_FOR_BOTTLENECK * time_s:
        bottleneck = worst[0]
    else:
        bottleneck = "compute"

    assumptions = (
        f"compute: {gpu.title} {cfg.precision} peak {peak / 1e12:.0f} TFLOP/s x matmul "
        f"efficiency {gpu.gemm_efficiency(cfg.precision):.3g} ("
        + (
            gpu.fp8_matmul_efficiency_source
            if fp8 and gpu.fp8_matmul_efficiency
            else gpu.matmul_efficiency_source
        )
        + ")"
        + (
            f"; at this layer's GEMM shapes {s_fwd:.0%} of that forward, {s_dgrad:.0%} / "
            f"{s_wgrad:.0%} for input / weight gradients (measured {gpu.gemm_shapes} GEMM-by-shape "
            "table, XLA's matmul_interpolator_data.h)"
            if gpu.gemm_shapes
            else "; every GEMM shape at that rate (no GEMM-by-shape table for this GPU)"
        ),
        (
            f"attention: {attn_kernel}, the causal half of the score square, at {attn_fwd:.0%} of "
            f"the BF16 peak forward and {attn_bwd:.0%} backward (which recomputes the scores: "
            f"{ATTENTION_BWD_FLOPS:g}x the forward's FLOPs) ({attn_source})"
            if cfg.flash_attention
            else "attention: unfused, the whole score square, its matmuls at the BF16 GEMM rate "
            "and the score matrix written to and read back from HBM"
        ),
        *(
            (
                "FP8: the blocks' linear layers in FP8; attention and the LM head in BF16, and each FP8 "
                "GEMM's input cast from BF16 (3 bytes per element; Transformer Engine's defaults)",
            )
            if fp8
            else ()
        ),
        f"elementwise ops: 2 x stored activation bytes at {gpu.memory_bw_efficiency:.0%} of "
        f"{gpu.hbm_bw_bytes_per_s / 1e12:.2f} TB/s HBM"
        + (
            f"; run op by op ({cfg.elementwise}): +{eager_fwd / 1e3:.0f} kB forward, "
            f"+{eager_bwd / 1e3:.0f} kB backward per token per layer for the unfused "
            + (
                "SwiGLU chain"
                if cfg.elementwise == "eager-mlp"
                else "RMSNorm, rotary and SwiGLU chains"
            )
            if eager_fwd or eager_bwd
            else ""
        ),
        "FLOPs: 2 x weights per token per matmul, 4 x context x width for attention, backward = "
        "2 x forward (Narayanan et al. 2021); MFU and HFU count the causal half of the attention "
        "square that FlashAttention runs (mfu_full_square: Megatron's full-square convention, "
        "as most published MFUs are computed)"
        + ("; LoRA: no weight gradients for the frozen base" if not cfg.trains_base else ""),
        *(
            (
                f"LoRA: rank-{cfg.lora_rank} adapters on {LORA_TARGET_NAMES[cfg.lora_targets]} "
                "(--lora-targets), run beside the frozen GEMMs, stream each adapted layer's "
                f"input and output through HBM again: +{a_fwd / 1e3:.0f} kB forward, "
                f"+{a_bwd / 1e3:.0f} kB backward per token per layer, "
                f"{layers * m * tokens * (a_fwd + a_bwd) / mem_rate:.3g} s of this step "
                "(model/lora.py)",
            )
            if not cfg.trains_base
            else ()
        ),
        *(
            (
                f"MoE: {spec.experts_per_token} routed copies of each token moved through HBM "
                f"{permute_moves(spec, cfg.ep)} times a pass by the dispatcher's permutations and kept "
                "for the experts' GEMMs; expert all-to-all "
                + (
                    "once per destination node (inside one node, per destination GPU)"
                    if cfg.moe_dispatch == "node-dedup"
                    else "flat"
                )
                + (", hidden behind other micro-batches' compute" if cfg.ep_overlap else "")
                + f"; {cfg.moe_layer_host_s * 1e3:.2f} ms of host time per MoE layer per "
                "micro-batch that the kernels do not cover (the router's and dispatcher's small "
                "kernels and their device-to-host sync; calibrated on published MoE runs, "
                f"model/moe.py), {layers * m * moe_host:.3g} s of this step"
                + "; routing balanced (model/moe.py). With that host time NVIDIA's own MoE "
                "recipes on H100 run at a median 0.91 of this step (its dense ones at 0.90), but "
                "spread wider, and its published MoE runs are up to 2.7x slower (DeepSeek-V3 in "
                "BF16 under NeMo 25.04; README, known misses)",
            )
            if spec.is_moe
            else ()
        ),
        *(
            (
                "dispatch: eager PyTorch launches every op from Python; at "
                f"{tokens:,.0f} tokens per micro-batch that host time is a large part of the step "
                "and differs from stack to stack more than the likely range says: the "
                f"{SMALL_EAGER_RUNS} published eager runs at {SMALL_EAGER_TOKENS:,} tokens or "
                "fewer per micro-batch ran 0.59-1.61x the planned speed (median 0.99x; README, "
                "known misses)",
            )
            if cfg.elementwise == "eager" and tokens <= SMALL_EAGER_TOKENS
            else ()
        ),
        f"pipeline: 1F1B, bubble (pp-1)/interleave = {cfg.pp - 1}/{cfg.interleave} micro-batch times; "
        f"decoder layers on the first / busiest / last stage {stages[0].layers} / {layers} / "
        f"{stages[-1].layers}, "
        + (
            f"balanced by compute (the LM head counted as {head_layers:.1f} layers on the last)"
            if head_layers
            else "split evenly"
        )
        if cfg.pp > 1
        else "pipeline: none",
        "communication: tensor/expert/pipeline collectives exposed (no overlap); data-parallel "
        "gradients hide behind 90% of the last micro-batch's backward"
        + ("" if cfg.overlap_dp else " (overlap off)")
        + (
            f", in Megatron-Core's buckets of {bucket_params(cfg.grad_buckets, cfg.dp * cfg.cp) / 1e6:.0f}M "
            "parameters (max(40M, 1M x dp x cp)), each call paying its latency and the last one "
            "exposed after the backward"
            if cfg.grad_buckets == "megatron-core" and cfg.dp * cfg.cp > 1 and cfg.zero < 3
            else ""
        )
        + (
            f", in PyTorch DDP's buckets of {DDP_BUCKET_BYTES / 2**20:.0f} MiB of gradient "
            f"({DDP_BUCKET_BYTES / cfg.grad_bytes / 1e6:.1f}M parameters, bucket_cap_mb), each "
            "call paying its latency and the last one exposed after the backward"
            if ddp_buckets(cfg.grad_buckets, cfg.zero) and cfg.dp * cfg.cp > 1
            else ""
        )
        + (
            "; ZeRO-3 as DeepSpeed before 0.6 runs it: a call per parameter tensor (each weight "
            "matrix for the forward, a full recompute's rerun and the backward; every trained "
            f"tensor's gradient), {LIST_COLLECTIVE_RANK_S * 1e6:.0f} us a rank each for its list "
            "of views, the device synchronized before every gather, so none of it overlaps"
            if cfg.zero >= 3 and cfg.zero3_calls == "per-tensor" and cfg.dp * cfg.cp > 1
            else ""
        )
        + f"; hidden communication still slows compute by {OVERLAP_COMPUTE_TAX:.0%} of its "
        "time (NCCL or RCCL kernels occupy SMs or CUs and HBM bandwidth)",
        *(
            (
                f'recompute (per-op, torchtitan\'s selective_ac_option "op"): every second '
                f"matmul of a block ({op_share:.0%} of its matmul FLOPs) and all its elementwise "
                "work run again in the backward, and the tensor-parallel gathers before them",
            )
            if cfg.recompute == "op"
            else ()
        ),
        *(
            (
                "recompute (full, as JAX's remat reruns it: only what the backward reads): the "
                f"forward again but each block's last matmul, the MLP's down projection "
                f"({skipped:.0%} of its matmul FLOPs), and the collective after it",
            )
            if needed
            else ()
        ),
        f"optimizer: Adam, {ADAM_BYTES_PER_PARAM:.0f} bytes of HBM traffic per updated parameter",
        f"bottleneck: the largest overhead when it takes >= {OVERHEAD_SHARE_FOR_BOTTLENECK:.0%} "
        "of the step, else compute",
        *(
            (
                f"framework: every kernel above at {fw:.2f} of its rate (the framework's "
                "measured share of this kernel-level step)",
            )
            if fw != 1.0
            else ()
        ),
        *(
            (
                f"host: {cfg.layer_host_s * 1e3:.2f} ms per decoder layer per micro-batch, "
                "forward and backward (a full or per-op recompute adds a third), that the "
                "kernels do not cover: Python, the dispatcher and FSDP's hooks launching each "
                f"op, which the GPU waits for; {host * 1e3:.2f} ms a layer at the share, "
                f"{layers * m * host:.3g} s of this step (catalog frameworks.toml layer_host_ms: "
                "the value that fits the framework's published runs best, "
                "benchmarks/calibrate_frameworks.py)",
            )
            if cfg.layer_host_s > 0
            else ()
        ),
    )
    return StepEstimate(
        time_s=time_s,
        compute_s=compute_total,
        comm_exposed_s=comm_exposed,
        bubble_s=bubble,
        optimizer_s=optimizer,
        microbatch_compute_s=compute_mb,
        comm=tuple(comm),
        memory=memory,
        model_flops=model_flops,
        model_flops_full_square=fwd_bwd * fwd_flops,
        hw_flops=hw_flops,
        tokens_per_step=tokens_step,
        gpus=cfg.gpus,
        peak_flops_per_s=peak,
        bottleneck=bottleneck,
        assumptions=assumptions + memory.notes,
    )
