"""The training step model evaluated for many layouts at once (numpy), for the layout search.

Same equations as :mod:`fabriclens.model.step`, :mod:`~fabriclens.model.memory` and
:mod:`~fabriclens.model.collectives`, written over arrays of layouts (tp, pp, dp, ep, zero,
recompute, micro-batch, interleave, sequence parallel, global batch) for one model, GPU, fabric
and base configuration. tests/unit/test_batch.py checks, over random layouts and models, that it
agrees with the scalar model to 1e-9; the search ranks with it and re-evaluates its top layouts
with the scalar model for their ledgers.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fabriclens.catalog.schema import Gpu, ModelSpec
from fabriclens.model.arch import (
    ParamCounts,
    attention_core_flops_per_token,
    expert_tensors,
    forward_flops_per_token,
    last_matmul_share,
    mean_mlp_width,
    moe_layers,
    op_checkpoint_split,
    per_tensor_calls,
    routed_width,
    v_dim,
)
from fabriclens.model.collectives import (
    BASE_LATENCY_S,
    LL128_BW_FRACTION,
    NCCL_RING_OPS,
    NCCL_RING_PROTOCOLS,
    NVLS_INTRA_S,
    NVLS_MAX_CHANNELS,
    NVLS_TREE_INTRA_S,
    NVLS_TREE_NET_STEP_S,
    ROOT_OPS,
    SHARE_OPS,
    SIMPLE_BASE_LATENCY_S,
    SIMPLE_NET_OVERHEAD_S,
    SIMPLE_NET_STEP_S,
    SWITCH_HOP_LATENCY_S,
    SWITCH_HOPS,
    TREE_ALLREDUCE_BW_FRACTION,
    TREE_SIMPLE_INTRA_STEP_S,
    Fabric,
    net_step_floor,
    nic_rate,
    root_nic_bw,
    tree_level_s,
)
from fabriclens.model.comm import (
    DDP_BUCKET_BYTES,
    MEGATRON_BUCKET_MIN_PARAMS,
    MEGATRON_BUCKET_PARAMS_PER_DP_RANK,
    ddp_buckets,
)
from fabriclens.model.elementwise import eager_extra_parts
from fabriclens.model.gemm import layer_shape_shares, lm_head_shape_shares
from fabriclens.model.layout import WEIGHT_BYTES, TrainConfig
from fabriclens.model.lora import adapter_bytes_per_token
from fabriclens.model.memory import (
    CUDA_CONTEXT_BYTES,
    FRAGMENTATION,
    NCCL_BUFFER_BYTES,
    OPTIMIZER_BYTES_PER_PARAM,
    adapter_state_bytes,
    config_adapter_params,
    frozen_base_bytes,
    lse_bytes_per_token,
    mixer_activation_bytes,
    score_elements_per_token,
    split_head_layers,
    unfused_score_stored_bytes,
)
from fabriclens.model.moe import (
    dispatch_network_share,
    moe_host_per_layer_s,
    permute_bytes_per_token,
    routed_input_bytes_per_token,
)
from fabriclens.model.step import (
    ADAM_BYTES_PER_PARAM,
    ATTENTION_BWD_FLOPS,
    FP8_CAST_BYTES,
    HOST_RERUNS,
    LIST_COLLECTIVE_RANK_S,
    LOSS_BYTES_PER_LOGIT,
    OVERLAP_COMPUTE_TAX,
    QLORA_DEQUANT_BYTES_PER_PARAM,
    UNFUSED_SCORE_BWD_BYTES,
    UNFUSED_SCORE_FWD_BYTES,
    fp8_cast_elements_per_token,
    peak_flops,
)

Arr = np.ndarray[Any, np.dtype[np.float64]]
REC = {"none": 0, "selective": 1, "full": 2, "op": 3}


def _f(x: Any) -> Arr:
    return np.asarray(x, dtype=np.float64)


def _activation(spec: ModelSpec, base: TrainConfig, tp: Arr, mb: Arr, sp: Arr, rec: Arr) -> Arr:
    """memory.activation_bytes_per_layer for arrays (rec: 0 none, 1 selective, 2 full, 3 op)."""
    tokens = mb * base.seq_len / base.cp
    h = spec.hidden
    sp_eff = (sp > 0) | (tp == 1)
    rep_div = np.where(sp_eff, tp, 1.0)
    full = 2.0 * tokens * h / rep_div  # the block's input, all a full recompute keeps
    o_w = spec.heads * v_dim(spec)
    replicated = tokens * h * (8 + (2 if base.dropout else 0))
    attn = mixer_activation_bytes(spec, tokens)
    f = mean_mlp_width(spec)  # k routed + shared experts in MoE layers
    mlp = (6 if spec.mlp == "swiglu" else 4) * tokens * f
    if base.flash_attention:
        scores = lse_bytes_per_token(spec) * tokens  # kept under selective recompute too
    else:
        per_token = score_elements_per_token(spec, base.seq_len, base.cp)
        scores = unfused_score_stored_bytes(base.dropout) * per_token * tokens
        scores = np.where((rec == 1) | (rec == 3), 0.0, scores)
    routed = tokens * routed_input_bytes_per_token(spec)  # MoE: the experts' routed inputs
    per = replicated / rep_div + (attn + mlp + scores + routed) / tp
    # per-op checkpointing: the block's input, every second matmul's output, the attention output
    op = full + (2.0 * tokens * (op_checkpoint_split(spec)[1] + o_w) + scores + routed) / tp
    return np.select([rec == 2, rec == 3], [full, op], per)


def _collective(op: str, size: Arr, ranks: Arr, per_node: Arr, conc: Arr, fabric: Fabric) -> Arr:
    """collectives.estimate_collective(...).time_s for arrays (algorithm "auto")."""
    gpn = fabric.gpus_per_node
    r = np.maximum(ranks, 1.0)
    g = np.minimum(np.minimum(r, per_node), gpn)
    nodes = np.ceil(r / g)
    if op == "all_reduce":
        factor = 2.0 * (r - 1) / r
    elif op in SHARE_OPS:
        factor = (r - 1) / r
    else:
        factor = np.ones_like(r)
    intra_bw = fabric.intra_busbw()
    intra_lat = fabric.intra.latency_s
    # one node
    steps = 2 * (r - 1) if op == "all_reduce" else (np.ones_like(r) if op == "send_recv" else r - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        if op in NCCL_RING_OPS and intra_bw > 0:  # NCCL's ring protocols, the fastest one
            kind = fabric.intra.kind
            ring1 = np.min(
                [base + steps * (nvl if kind == "nvlink" else pci) + size * factor / (intra_bw * share)
                 for _, base, nvl, pci, share in NCCL_RING_PROTOCOLS],
                axis=0,
            )  # fmt: skip
        else:
            lat1 = BASE_LATENCY_S + steps * intra_lat
            ring1 = lat1 + (size * factor / intra_bw if intra_bw > 0 else np.inf)
    best1 = ring1
    if op == "all_reduce" and fabric.intra.nvls:
        nvls_t = NVLS_INTRA_S + size / fabric.nvls_algbw()
        nvls_t = np.where(r > 2, nvls_t, np.inf)
        best1 = np.where(
            ring1 <= np.minimum(ring1, nvls_t) * 1.05, ring1, np.minimum(ring1, nvls_t)
        )
    # several nodes
    net = fabric.network
    if net is not None:
        node_bw = np.minimum(fabric.node_net_bw() / np.maximum(1.0, conc), g * fabric.gpu_net_bw())
        if op == "all_to_all":
            net_busbw = node_bw / g * (r - 1) / np.maximum(1.0, r - g)
        elif op == "send_recv":
            net_busbw = np.minimum(nic_rate(fabric), node_bw)
        else:
            net_busbw = node_bw
        busbw = np.where(g > 1, np.minimum(intra_bw, net_busbw), net_busbw)
        if op == "all_reduce":
            ring_steps, net_steps = 2 * (r - 1), 2 * nodes
        elif op == "send_recv":
            ring_steps, net_steps = np.ones_like(r), np.ones_like(r)
        else:
            ring_steps, net_steps = np.maximum(1.0, r - 1), nodes
        radix, nics = fabric.switch_radix, max(1, fabric.nics_per_node)
        tiers = np.where(
            nodes <= max(1, radix // 2), 1, np.where(nodes * nics <= radix * radix // 2, 2, 3)
        )
        hop_s = np.choose(tiers - 1, [SWITCH_HOPS[1], SWITCH_HOPS[2], SWITCH_HOPS[3]])
        hop_s = hop_s * SWITCH_HOP_LATENCY_S
        intra_steps = ring_steps - net_steps
        floor = net_step_floor(intra_lat, net)  # collectives.net_step_floor
        ring_lat = (
            BASE_LATENCY_S + net_steps * (max(net.latency_s, floor) + hop_s) + intra_steps * floor
        )
        with np.errstate(divide="ignore", invalid="ignore"):
            bw_time = size * factor / busbw
        ringn = ring_lat + bw_time
        if op != "send_recv":
            simple_lat = (
                SIMPLE_BASE_LATENCY_S
                + net_steps * (max(net.latency_s, SIMPLE_NET_STEP_S, floor) + hop_s)
                + intra_steps * max(floor, SIMPLE_NET_OVERHEAD_S)
            )
            ringn = np.minimum(ring_lat + bw_time / LL128_BW_FRACTION, simple_lat + bw_time)
        bestn = ringn
        if op in ("all_reduce", "broadcast"):
            depth = np.ceil(np.log2(np.maximum(nodes, 1.0))) + 1
            mult = 2 if op == "all_reduce" else 1
            if op == "all_reduce":  # NCCL's per-channel cap (collectives.TREE_CHANNEL_BW)
                channels = np.maximum(1.0, fabric.tree_nics() / np.maximum(1.0, conc))
                rate = np.where(
                    nodes <= 2, fabric.tree_channel_rate(2), fabric.tree_channel_rate(3)
                )
                cap = channels * rate  # Fabric.tree_channel_cap, per layout
                ll128_rate = np.where(
                    nodes <= 2,
                    fabric.tree_channel_rate(2, "LL128"),
                    fabric.tree_channel_rate(3, "LL128"),
                )
                ll128_cap = channels * ll128_rate  # its LL128 protocol's
                # two nodes: each byte crosses once each way (collectives.estimate_collective)
                two_node = np.where(g > 1, np.minimum(node_bw, intra_bw), node_bw) * factor
                boost = (
                    (nodes == 2) & (not fabric.intra.nvls) & (fabric.tree_channel_rate(2) < np.inf)
                )
                tree_rate = np.where(boost, np.maximum(busbw, two_node), busbw)
                tree_rate = tree_rate * TREE_ALLREDUCE_BW_FRACTION
                with np.errstate(divide="ignore", invalid="ignore"):
                    tree_bw_time = (
                        size * factor / np.minimum(tree_rate * LL128_BW_FRACTION, ll128_cap)
                    )
                    simple_bw_time = size * factor / np.minimum(tree_rate, cap)
                # the tree's Simple protocol (collectives.TREE_SIMPLE_NET_STEP_S)
                simple_tree = (
                    SIMPLE_BASE_LATENCY_S
                    + mult
                    * (
                        depth * tree_level_s(net, simple=True)
                        + (g - 1) * max(intra_lat, TREE_SIMPLE_INTRA_STEP_S)
                    )
                    + simple_bw_time
                )
            else:
                tree_bw_time = bw_time
                simple_tree = np.inf
            tree = (
                BASE_LATENCY_S
                + mult * (depth * tree_level_s(net) + (g - 1) * intra_lat)
                + tree_bw_time
            )
            tree = np.minimum(tree, simple_tree)
            lowest = np.minimum(ringn, tree)
            if op == "all_reduce" and fabric.intra.nvls:
                with np.errstate(divide="ignore", invalid="ignore"):
                    nvls_cap = (  # Fabric.nvls_tree_cap, per layout, as an algorithm bandwidth
                        np.minimum(g, NVLS_MAX_CHANNELS) * fabric.nvls_tree_channel_rate() / factor
                    )
                nvls_tree = (
                    NVLS_TREE_INTRA_S
                    + 2 * (max(net.latency_s, NVLS_TREE_NET_STEP_S) + hop_s)
                    + size
                    / np.minimum(
                        np.minimum(node_bw, fabric.nvls_algbw()),
                        nvls_cap,
                    )
                )
                nvls_tree = np.where((nodes == 2) & (g > 1), nvls_tree, np.inf)
                lowest = np.minimum(lowest, nvls_tree)
            bestn = np.where(ringn <= lowest * 1.05, ringn, lowest)
        if op in ROOT_OPS:  # collectives._root_collective
            with np.errstate(divide="ignore", invalid="ignore"):
                local = np.where(g > 1, size * (g - 1) / r / intra_bw, 0.0) if intra_bw > 0 else 0.0
                remote = size * (r - g) / r / root_nic_bw(fabric)
            lat = BASE_LATENCY_S + net.latency_s + hop_s
            bestn = lat + np.maximum(local, remote)
    else:
        bestn = np.full_like(r, np.inf)
    out = np.where(nodes <= 1, best1, bestn)
    return np.where((ranks <= 1) | (size <= 0), 0.0, out)


def _per_combination(keys: list[Arr], value: Any) -> list[Arr]:
    """``value(*key)`` (three floats) for each layout, computed once per distinct key."""
    stacked = np.stack([np.broadcast_to(k, keys[0].shape) for k in keys], axis=-1).reshape(
        -1, len(keys)
    )
    if np.all(stacked == np.floor(stacked)) and stacked.min() >= 0:
        # one integer code per row (tokens, tp, ep are small whole numbers): a 1-D unique is
        # several times faster than a row-wise one
        codes = np.zeros(len(stacked), dtype=np.int64)
        for column in stacked.T:
            codes = codes * (int(column.max()) + 1) + column.astype(np.int64)
        _, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
    else:
        _, first, inverse = np.unique(stacked, axis=0, return_index=True, return_inverse=True)
    values = np.array([value(*stacked[i]) for i in first])
    return [values[inverse.ravel(), j].reshape(keys[0].shape) for j in range(3)]


def _shape_shares(
    gpu: Gpu, spec: ModelSpec, tokens: Arr, tp: Arr, ep: Arr, precision: str
) -> list[Arr]:
    """model/gemm.layer_shape_shares per layout: forward, input-gradient, weight-gradient (the
    scalar function over the few distinct micro-batch x TP x EP combinations)."""
    return _per_combination(
        [tokens, tp, ep],
        lambda t, p, e: layer_shape_shares(gpu, spec, float(t), int(p), int(e), precision),
    )


def _head_shares(gpu: Gpu, spec: ModelSpec, tokens: Arr, tp: Arr) -> list[Arr]:
    """model/gemm.lm_head_shape_shares per layout."""
    return _per_combination(
        [tokens, tp], lambda t, p: lm_head_shape_shares(gpu, spec, float(t), int(p))
    )


def _stage_layers(L: int, pp: Arr, head_layers: float) -> list[Arr]:
    """memory.stage_layer_counts per layout: the first stage's layers, the busiest middle
    stage's (where pp >= 3) and the last's. Even: ceil(L / pp), one fewer on the last and then
    the first where pp does not divide L. Balanced by cost (``head_layers`` > 0): stage r ends
    at the first layer whose running cost passes (r + 1) / pp of L + head, so it ends at
    min(L, floor((r + 1) x (L + head) / pp) + 1) (pp <= L)."""
    one = pp <= 1
    if head_layers <= 0:
        ceil = np.ceil(L / pp)
        light = pp * ceil - L
        return [
            np.where(one, float(L), ceil - (light >= 2)),
            ceil,
            np.where(one, float(L), ceil - (light >= 1)),
        ]
    total = L + head_layers

    def end(r: Arr) -> Arr:  # layers on stages 0..r
        return _f(np.minimum(float(L), np.floor(total * (r + 1) / pp) + 1))

    first = np.where(one, float(L), end(np.zeros_like(pp)))
    last = np.where(one, float(L), L - end(pp - 2))
    middle = np.zeros_like(pp)
    for r in range(1, int(np.max(pp, initial=1)) - 1):
        here = end(np.full_like(pp, float(r))) - end(np.full_like(pp, float(r - 1)))
        middle = np.where(r <= pp - 2, np.maximum(middle, here), middle)
    return [first, middle, last]


def _adapter_bytes(
    spec: ModelSpec, base: TrainConfig, tp: Arr, sp: Arr, etp: Arr
) -> tuple[Arr, Arr]:
    """lora.adapter_bytes_per_token for every layout, each distinct (tp, sp, etp) once."""
    keys = np.stack([tp, (sp > 0).astype(float), etp], axis=-1).reshape(-1, 3)
    uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
    vals = np.array(
        [
            adapter_bytes_per_token(
                spec, int(t), bool(s), int(e), base.lora_targets, base.projections
            )
            for t, s, e in uniq
        ]
    )
    shape = np.shape(tp)
    return vals[inverse.ravel(), 0].reshape(shape), vals[inverse.ravel(), 1].reshape(shape)


def evaluate(
    spec: ModelSpec,
    counts: ParamCounts,
    gpu: Gpu,
    fabric: Fabric,
    base: TrainConfig,
    layouts: dict[str, Any],
) -> dict[str, Arr]:
    """Step time, its parts and memory per GPU for every layout in ``layouts`` (arrays)."""
    tp, pp, dp = _f(layouts["tp"]), _f(layouts["pp"]), _f(layouts["dp"])
    ep, zero, rec = _f(layouts["ep"]), _f(layouts["zero"]), _f(layouts["rec"])
    mb, il, sp, gb = (
        _f(layouts["mb"]),
        _f(layouts["interleave"]),
        _f(layouts["sp"]),
        _f(layouts["gb"]),
    )
    cp = float(base.cp)
    gpus, gpn = base.gpus, base.gpus_per_node
    L, h = spec.layers, spec.hidden
    trains = base.trains_base
    # LoRA: the adapters each rank trains, reduces and updates (step.py)
    adapters = np.zeros_like(tp) if trains else config_adapter_params(spec, base) / (tp * pp)
    m = np.maximum(1.0, np.floor(gb / (dp * mb)))

    # --- pipeline stages (memory.pipeline_stages): first, busiest middle, last ---
    one = pp <= 1
    st_layers = _stage_layers(L, pp, split_head_layers(spec, counts, base))
    st_index = [np.zeros_like(pp), np.ones_like(pp), pp - 1]
    exists = [np.ones_like(pp, dtype=bool), pp >= 3, pp >= 2]
    head = counts.lm_head or counts.embedding
    st_ends = [
        np.where(one, counts.embedding + counts.lm_head, float(counts.embedding)),
        np.zeros_like(pp),
        np.where(one, counts.embedding + counts.lm_head, float(head)),
    ]
    st_head = [one, np.zeros_like(pp, dtype=bool), ~one]
    # the busiest stage's layers set the step (memory.busiest_layers)
    layers = np.maximum(np.maximum(st_layers[0], st_layers[2]), np.where(pp >= 3, st_layers[1], 0))

    # --- parameters held (memory.stage_share; param_share: the stage holding the most) ---
    per_dense = (
        counts.attention + counts.dense_mlp + counts.shared_and_router
    ) / L + counts.norms / L
    per_expert = counts.experts / L
    rep = counts.replicated / L  # the indexers sit whole on every TP rank (arch.tp_share)
    st_dense = [
        (n * (per_dense - rep) + e) / tp + n * rep for n, e in zip(st_layers, st_ends, strict=True)
    ]
    # the experts split over etp x ep ranks (layout.place_groups): etp is tp, or 1 with --etp 1
    etp = np.ones_like(tp) if base.etp == 1 else tp
    st_expert = [n * per_expert / (etp * ep) for n in st_layers]
    st_total = [
        np.where(x, d + e, -np.inf) for d, e, x in zip(st_dense, st_expert, exists, strict=True)
    ]
    pick0 = (st_total[0] >= st_total[1]) & (st_total[0] >= st_total[2])
    pick1 = ~pick0 & (st_total[1] >= st_total[2])

    def heaviest(values: list[Arr]) -> Arr:
        return _f(np.where(pick0, values[0], np.where(pick1, values[1], values[2])))

    dense = heaviest(st_dense)
    expert = heaviest(st_expert)
    total = dense + expert
    share_layers = heaviest(st_layers)
    ends_held = heaviest(st_ends) / tp

    # --- memory (memory.training_memory): the busiest of the stages ---
    dp_dense = dp * cp
    dp_expert = np.maximum(1.0, np.floor(tp * dp_dense / (etp * ep)))  # layout.expert_dp
    act_rec = _activation(spec, base, tp, mb, sp, rec)
    act_none = _activation(spec, base, tp, mb, sp, np.zeros_like(rec))
    tokens = mb * base.seq_len / cp
    memory = np.full_like(tp, -np.inf)
    for i in range(3):
        s_dense, s_expert, s_ends = st_dense[i], st_expert[i], st_ends[i] / tp
        s_total = s_dense + s_expert

        split = s_dense / dp_dense + s_expert / dp_expert  # ZeRO-sharded over data parallel
        if trains:
            states = (
                np.where(zero >= 3, 2.0 * split, 2.0 * s_total)
                + np.where(zero >= 2, base.grad_bytes * split, base.grad_bytes * s_total)
                + np.where(zero >= 1, OPTIMIZER_BYTES_PER_PARAM * split,
                           OPTIMIZER_BYTES_PER_PARAM * s_total)
            )  # fmt: skip
        else:
            frozen = np.where(
                zero >= 3,
                frozen_base_bytes(
                    s_dense, s_expert, s_ends, base.lora_base_bits, dp_dense, dp_expert
                ),
                frozen_base_bytes(s_dense, s_expert, s_ends, base.lora_base_bits),
            )
            grads, adapter_states = adapter_state_bytes(
                adapters, *(np.where(zero >= stage, dp_dense, 1) for stage in (2, 1, 3))
            )
            states = frozen + grads + adapter_states
        in_flight = np.where(
            one,
            1.0,
            np.minimum(pp - st_index[i], m) * np.where(il > 1, 1 + (pp - 1) / (pp * il), 1.0),
        )
        acts = (
            act_rec * st_layers[i] * in_flight
            + np.where(rec == 2, act_none, 0.0)
            + np.where(rec == 3, act_none - act_rec, 0.0)
        )
        acts = acts + np.where(st_head[i], tokens * spec.vocab / tp * 6, 0.0)
        buffers = np.full_like(tp, NCCL_BUFFER_BYTES if gpus > 1 else 0.0)
        layer_bytes = (
            2.0 * s_total
            if trains
            else frozen_base_bytes(s_dense, s_expert, s_ends, base.lora_base_bits)
        )
        buffers = buffers + np.where(
            zero >= 3, 2 * layer_bytes / np.maximum(1.0, st_layers[i]), 0.0
        )
        allocated = states + acts + buffers
        stage_memory = allocated + CUDA_CONTEXT_BYTES + FRAGMENTATION * allocated
        memory = np.where(exists[i], np.maximum(memory, stage_memory), memory)

    # --- compute (step.estimate_training_step) ---
    peak = peak_flops(gpu, base.precision)
    fw = base.framework_efficiency
    mm_rate = peak * gpu.gemm_efficiency(base.precision) * fw
    fp8 = base.precision == "fp8"  # attention and the LM head stay BF16 (step.py)
    bf16_mm_rate = gpu.bf16_flops_per_s * gpu.matmul_efficiency * fw if fp8 else mm_rate
    attn_fwd, attn_bwd, _ = gpu.attention_rates(base.attention_kernel)
    attn_peak = gpu.bf16_flops_per_s if fp8 else peak
    attn_rate, attn_bwd_rate = attn_peak * attn_fwd * fw, attn_peak * attn_bwd * fw
    mem_rate = gpu.hbm_bw_bytes_per_s * gpu.memory_bw_efficiency * fw
    layer_mm = 2.0 * tokens * counts.layer_matmul_active / L / tp
    shares = _shape_shares(gpu, spec, tokens, tp, ep, "fp8" if fp8 else "bf16")
    t_mm = layer_mm / (mm_rate * shares[0])
    t_mm_bwd = layer_mm / (mm_rate * shares[1]) + (
        layer_mm / (mm_rate * shares[2]) if trains else 0.0
    )
    core_hw = (
        tokens
        * attention_core_flops_per_token(spec, base.seq_len)
        / tp
        * (0.5 if base.flash_attention else 1.0)
    )
    t_core = core_hw / (attn_rate if base.flash_attention else bf16_mm_rate)
    elem = 2.0 * (act_none - tokens * routed_input_bytes_per_token(spec) / tp)
    # step.py: unfused attention's score matrix is priced with attention, not here
    score_elems = (
        0.0
        if base.flash_attention
        else tokens * score_elements_per_token(spec, base.seq_len, base.cp) / tp
    )
    elem = elem - 2.0 * score_elems * unfused_score_stored_bytes(base.dropout)
    if fp8:
        elem = elem + FP8_CAST_BYTES * tokens * fp8_cast_elements_per_token(spec) / tp
    t_elem = elem / mem_rate
    # MoE: tokens copied into expert order and back, each pass (step.py, model/moe.py)
    t_perm = tokens * np.vectorize(lambda e: permute_bytes_per_token(spec, e))(ep) / tp / mem_rate
    t_eager_fwd: Any = 0.0
    t_eager_bwd: Any = 0.0
    if base.elementwise != "fused":  # step.py: op-by-op RMSNorm, rotary and SwiGLU
        norm_f, norm_b, split_f, split_b = eager_extra_parts(spec, base.elementwise)
        norm_split = np.where((sp > 0) | (tp == 1), tp, 1.0)
        t_eager_fwd = tokens * (norm_f / norm_split + split_f / tp) / mem_rate
        t_eager_bwd = tokens * (norm_b / norm_split + split_b / tp) / mem_rate
    if not base.flash_attention:
        t_core = t_core + UNFUSED_SCORE_FWD_BYTES[base.dropout] * score_elems / mem_rate
    fwd = t_mm + t_core + t_elem + t_eager_fwd + t_perm
    t_core_bwd = (
        ATTENTION_BWD_FLOPS * core_hw / attn_bwd_rate
        if base.flash_attention
        else 2.0 * core_hw / bf16_mm_rate
        + UNFUSED_SCORE_BWD_BYTES[base.dropout] * score_elems / mem_rate
    )
    bwd = t_mm_bwd + t_core_bwd + 2.0 * t_elem + t_eager_bwd + t_perm
    if not trains:  # step.py: LoRA's adapters stream each layer's input and output again
        a_fwd, a_bwd = _adapter_bytes(spec, base, tp, sp, etp)
        fwd = fwd + tokens * a_fwd / mem_rate
        bwd = bwd + tokens * a_bwd / mem_rate
    op_share = op_checkpoint_split(spec)[0]
    skipped = last_matmul_share(spec) if base.recompute_reruns == "needed" else 0.0  # step.py
    recompute = np.select(
        [rec == 0, rec == 1, rec == 3],
        [0.0, t_core, op_share * t_mm + t_elem + t_eager_fwd + t_perm],
        fwd - skipped * t_mm,
    )
    dequant: Any = 0.0
    if not trains and base.lora_base_bits == 4:
        dequant = (
            np.select([rec == 2, rec == 3], [3.0 - skipped, 2.0 + op_share], 2.0)
            * QLORA_DEQUANT_BYTES_PER_PARAM
            * total
            / np.maximum(1.0, share_layers)
            / mem_rate
        )
    reruns = np.select([rec == REC[k] for k in HOST_RERUNS], list(HOST_RERUNS.values()))
    # step.layer_host_time and step.moe_host_time
    host_s = base.layer_host_s + moe_host_per_layer_s(spec, base.moe_layer_host_s)
    host = host_s * (1.0 + reruns) / fw
    per_layer = fwd + bwd + recompute + dequant + host
    head_shares = _head_shares(gpu, spec, tokens, tp)
    passes = 1 / head_shares[0] + 1 / head_shares[1] + (1 / head_shares[2] if trains else 0.0)
    logits = passes * 2.0 * tokens * h * spec.vocab / tp / bf16_mm_rate
    logits = logits + LOSS_BYTES_PER_LOGIT * tokens * spec.vocab / tp / mem_rate
    compute_mb = np.maximum(
        np.maximum(
            st_layers[0] * per_layer + np.where(one, logits, 0.0),
            np.where(pp >= 3, st_layers[1], 0.0) * per_layer,
        ),
        np.where(exists[2], st_layers[2] * per_layer + logits, 0.0),
    )

    # --- placement (layout.place_groups) ---
    def group(size: Arr, stride: Arr) -> tuple[Arr, Arr]:
        per_node = np.where(
            stride <= gpn, np.maximum(1.0, np.minimum(size, np.floor(gpn / stride))), 1.0
        )
        conc = np.maximum(1.0, np.floor(min(gpn, gpus) / per_node))
        return per_node, conc

    tp_pn, tp_cc = group(tp, np.ones_like(tp))
    dp_pn, dp_cc = group(dp, tp * cp)
    pp_pn, _ = group(pp, tp * cp * dp)
    ep_pn, ep_cc = group(ep, etp)  # ep consecutive ranks at stride etp

    # --- communication (step.estimate_training_step's ledger) ---
    act_bytes = tokens * h * 2.0
    # step.py: what a full recompute reruns of the forward's collectives (JAX: all but the one
    # after the last matmul; the all-to-all's dispatch, not its combine)
    needed = base.recompute_reruns == "needed"
    n_passes = np.where(rec == 2, 4.0 if needed else 6.0, 4.0)
    a2a_passes = np.where(rec == 2, 5.0 if needed else 6.0, 4.0)
    per_mb_exposed = np.zeros_like(tp)
    hidden = np.zeros_like(tp)
    once_exposed = np.zeros_like(tp)
    calls = n_passes * layers * m
    rerun = np.where(rec == 3, 2.0 * layers * m, 0.0)  # step.py: per-op checkpointing's gathers
    scatter_rerun: Any = 0.0
    if needed:  # step.py: JAX's full recompute, all but the collective after the last matmul
        rerun = np.where(rec == 2, np.where(sp > 0, 2.0, 1.0) * layers * m, rerun)
        scatter_rerun = np.where(rec == 2, layers * m, 0.0)
    moe_per_stage = layers * moe_layers(spec) / L  # MoE layers of the busiest stage
    routed_calls: Any = 0.0
    if spec.is_moe:  # step.py: a MoE layer's MLP pair, shared experts' and the routed copies'
        moe_mlp_calls = (n_passes / 2) * moe_per_stage * m
        if not spec.shared_experts:
            calls = calls - moe_mlp_calls
        routed_calls = moe_mlp_calls if base.etp != 1 else 0.0  # step.py: ETP 1 gathers none
    calls = calls - (n_passes / 2) * layers * spec.mlp_free_layers / L * m  # step.py: no MLP
    tp_time = np.where(
        sp > 0,
        _collective("all_gather", act_bytes, tp, tp_pn, tp_cc, fabric) * (calls + rerun)
        + _collective("reduce_scatter", act_bytes, tp, tp_pn, tp_cc, fabric)
        * (calls + scatter_rerun),
        _collective("all_reduce", act_bytes, tp, tp_pn, tp_cc, fabric) * (calls + rerun),
    )
    if spec.is_moe:
        routed = act_bytes * spec.experts_per_token * routed_width(spec) / h
        tp_time = tp_time + routed_calls * (
            _collective("all_gather", routed, tp, tp_pn, tp_cc, fabric)
            + _collective("reduce_scatter", routed, tp, tp_pn, tp_cc, fabric)
        )
    per_mb_exposed += np.where(tp > 1, tp_time, 0.0)
    if spec.is_moe:
        a2a_size = tokens / tp * spec.experts_per_token * routed_width(spec) * 2.0
        # step.py: once per destination node, inside one node once per GPU (model/moe.py)
        net_share = np.vectorize(lambda n: dispatch_network_share(spec, n, base.moe_dispatch))
        a2a_size = a2a_size * np.where(ep > ep_pn, net_share(ep / ep_pn), net_share(ep))
        a2a = _collective("all_to_all", a2a_size, ep, ep_pn, ep_cc, fabric)
        a2a_total = np.where(ep > 1, a2a * a2a_passes * moe_per_stage * m, 0.0)
        # step.py: with EP overlap, hidden behind the other micro-batches' compute
        a2a_exposed = (
            np.maximum(0.0, a2a_total - (m - 1) * compute_mb) if base.ep_overlap else a2a_total
        )
        per_mb_exposed += a2a_exposed
        hidden = hidden + (a2a_total - a2a_exposed)
    if base.cp > 1:
        raise ValueError(
            "the batch model covers cp = 1 (the search does not vary context parallelism)"
        )
    p2p_size = act_bytes / np.where(sp > 0, tp, 1.0)
    crosses = pp > pp_pn
    p2p = _collective(
        "send_recv",
        p2p_size,
        np.full_like(tp, 2.0),
        np.where(crosses, 1.0, 2.0),
        np.full_like(tp, float(gpn)),
        fabric,
    )
    per_mb_exposed += np.where(pp > 1, p2p * 2 * m * il, 0.0)

    if trains:
        p_dense, p_expert = dense, expert
    else:
        p_dense, p_expert = adapters, np.zeros_like(tp)
    grad_dense = p_dense * base.grad_bytes
    grad_expert = p_expert * base.grad_bytes
    window = bwd * layers * 0.9 if base.overlap_dp else np.zeros_like(tp)
    has_dp = dp * cp > 1

    def book(time: Arr, exposed: Arr, mask: Any) -> None:
        nonlocal once_exposed, hidden
        once_exposed = once_exposed + np.where(mask, exposed, 0.0)
        hidden = hidden + np.where(mask, time - exposed, 0.0)

    def add(time: Arr, window_s: Arr | float, mask: Any) -> None:
        book(time, np.maximum(0.0, time - window_s), mask)

    # comm.py bucketed_entry and bucket_params: Megatron-Core's buckets, PyTorch DDP's for the
    # gradients' reduction, or one call over the whole
    if base.grad_buckets == "megatron-core":
        reduce_bucket = gather_bucket = np.maximum(
            MEGATRON_BUCKET_MIN_PARAMS, MEGATRON_BUCKET_PARAMS_PER_DP_RANK * dp * cp
        )
    else:  # comm.ddp_buckets: DDP buckets the gradients only; the gather is one call
        ddp = DDP_BUCKET_BYTES / base.grad_bytes
        reduce_bucket = np.where(ddp_buckets(base.grad_buckets, zero), ddp, np.inf)
        gather_bucket = np.full_like(tp, np.inf)

    def add_bucketed(op: str, size: Arr, element: float, ranks: Arr, per_node: Arr, conc: Arr,
                     window_s: Arr | float, mask: Any, per_bucket: Arr) -> None:  # fmt: skip
        one = np.isinf(per_bucket)
        buckets = np.where(one, 1.0, np.maximum(1.0, np.ceil(size / element / per_bucket)))
        call = _collective(op, size / buckets, ranks, per_node, conc, fabric)
        time = call * buckets
        with np.errstate(divide="ignore", invalid="ignore"):
            exposed = np.where(
                one,
                np.maximum(0.0, time - window_s),  # entry's first-order overlap
                np.where(  # comm.bucketed_exposed_s
                    np.asarray(window_s) > 0,
                    np.maximum(call, time - window_s + window_s / buckets),
                    time,
                ),
            )
        book(time, exposed, mask)

    z3 = has_dp & (zero >= 3)
    z12 = has_dp & (zero >= 1) & ~z3
    z0 = has_dp & (zero < 1)
    weights = p_dense * WEIGHT_BYTES["bf16"]
    gathered = weights + (
        0.0 if trains else frozen_base_bytes(dense, 0.0, ends_held, base.lora_base_bits)
    )
    # step.py: ZeRO-3 gathers and scatters layer by layer, each call paying its latency; or
    # (DeepSpeed before 0.6) tensor by tensor, each call copying a view per rank, synchronized
    per_tensor = base.zero3_calls == "per-tensor"
    if per_tensor:
        gathers, reductions = per_tensor_calls(spec, trains)
        g_pcs = np.maximum(1.0, np.round(layers * gathers))
        s_pcs = np.maximum(1.0, np.round(layers * reductions))
        over = dp * LIST_COLLECTIVE_RANK_S
        bwd_gathers = np.where(rec == 2, 2.0, 1.0)
        fwd_window = bwd_window = np.zeros_like(tp)
    else:
        g_pcs = s_pcs = layers
        over = np.zeros_like(tp)
        bwd_gathers = np.ones_like(tp)
        fwd_window = m * layers * fwd * 0.9
        bwd_window = m * layers * (bwd + recompute) * 0.9
    ag3 = (_collective("all_gather", gathered / g_pcs, dp, dp_pn, dp_cc, fabric) + over) * g_pcs
    rs3 = (
        _collective("reduce_scatter", grad_dense / s_pcs, dp, dp_pn, dp_cc, fabric) + over
    ) * s_pcs
    add(ag3 * m, fwd_window, z3)  # the forward's gathers
    add(ag3 * m * bwd_gathers, bwd_window, z3)  # the backward's gathers, then its reduce-scatters
    fwd_left, bwd_left = fwd_window - ag3 * m, bwd_window - ag3 * m * bwd_gathers
    if spec.is_moe:
        # layout.place_groups: tp x cp x dp / (etp x ep) ranks at stride etp x ep
        edp = np.floor(tp * cp * dp / (etp * ep))
        edp_pn, edp_cc = group(edp, etp * ep)
        # step.py: ZeRO-3 gathers the experts over their data-parallel group, after the dense
        expert_w = (
            p_expert * WEIGHT_BYTES["bf16"]
            if trains
            else frozen_base_bytes(0.0, expert, 0.0, base.lora_base_bits)
        )
        z3e = z3 & (expert_w > 0) & (edp > 1)
        if per_tensor:
            pieces = np.maximum(
                1.0, np.round(moe_per_stage * expert_tensors(spec) * spec.experts / ep)
            )
            e_over = edp * LIST_COLLECTIVE_RANK_S
        else:
            pieces = np.maximum(1.0, np.round(moe_per_stage))
            e_over = np.zeros_like(tp)
        eag3 = (
            _collective("all_gather", expert_w / pieces, edp, edp_pn, edp_cc, fabric) + e_over
        ) * pieces
        ers3 = (
            _collective("reduce_scatter", grad_expert / pieces, edp, edp_pn, edp_cc, fabric)
            + e_over
        ) * pieces
        add(eag3 * m, np.maximum(0.0, fwd_left), z3e)
        add(eag3 * m * bwd_gathers, np.maximum(0.0, bwd_left), z3e)
        bwd_left = bwd_left - np.where(z3e, eag3 * m * bwd_gathers, 0.0)
    add(rs3 * m, np.maximum(0.0, bwd_left), z3)
    if spec.is_moe:
        add(ers3 * m, np.maximum(0.0, bwd_left - rs3 * m), z3e & (grad_expert > 0))
    add_bucketed("reduce_scatter", grad_dense, base.grad_bytes, dp, dp_pn, dp_cc, window, z12,
                 reduce_bucket)  # fmt: skip
    add_bucketed("all_gather", weights, WEIGHT_BYTES["bf16"], dp, dp_pn, dp_cc,
                 fwd * layers * 0.9 if base.overlap_dp else 0.0, z12, gather_bucket)  # fmt: skip
    add_bucketed("all_reduce", grad_dense, base.grad_bytes, dp, dp_pn, dp_cc, window, z0,
                 reduce_bucket)  # fmt: skip
    if trains and spec.is_moe:
        add_bucketed("all_reduce", grad_expert, base.grad_bytes, edp, edp_pn, edp_cc, window,
                     has_dp & (edp > 1) & (grad_expert > 0) & ~z3, reduce_bucket)  # fmt: skip

    comm_exposed = per_mb_exposed + once_exposed
    mb_time = compute_mb + per_mb_exposed / m
    bubble = np.where(pp > 1, (pp - 1) / il * mb_time, 0.0)
    optimized = (
        (dense / np.where(zero >= 1, dp * cp, 1.0) + expert / np.where(zero >= 1, dp_expert, 1.0))
        if trains
        else adapters / np.where(zero >= 1, dp * cp, 1.0)  # each rank updates its shard
    )
    optimizer = ADAM_BYTES_PER_PARAM * optimized / mem_rate
    compute_total = m * compute_mb + optimizer + OVERLAP_COMPUTE_TAX * hidden
    time_s = compute_total + comm_exposed + bubble
    tokens_step = gb * base.seq_len
    core = attention_core_flops_per_token(spec, base.seq_len) * L  # per token, all layers
    fwd_run = forward_flops_per_token(spec, base.seq_len) - core * (
        0.5 if base.flash_attention else 0.0
    )  # as step.py: the causal half of the score square with FlashAttention
    model_flops = (3.0 if trains else 2.0) * fwd_run * tokens_step
    return {
        "time_s": time_s,
        "compute_s": compute_total,
        "comm_exposed_s": comm_exposed,
        "bubble_s": bubble,
        "memory_bytes": memory,
        "fits": memory <= gpu.memory_bytes,
        "mfu": model_flops / time_s / gpus / peak,
        "microbatches": m,
    }
