"""Mixture-of-experts token routing: what moving tokens to their experts costs.

Two costs a dense layer does not have, per MoE layer and per token of a micro-batch:

* Permutation traffic in HBM. Megatron-Core's all-to-all token dispatcher
  (megatron/core/transformer/moe/token_dispatcher.py with moe_utils.py's ``permute``,
  ``sort_chunks_by_idxs`` and ``unpermute``) copies each token's hidden vector once per routed
  expert into expert order (permute) and, when a GPU holds several experts behind an
  expert-parallel all-to-all, sorts the chunks it receives by local expert; the combine makes
  the same moves in reverse (unsort, then unpermute's probability-weighted scatter-add). Each
  move reads and writes the k routed copies (BF16); the backward moves the gradients the same
  way. The all-to-all's own reads and writes are the collective's, in the communication ledger.
  The routed copy is also what each expert's first GEMM keeps for its weight gradient, so it is
  activation memory (``routed_input_bytes_per_token``).
* Network bytes of the dispatch. A flat all-to-all sends every routed copy to its expert's GPU,
  so (n - g)/n of the k copies leave the node. Hierarchical dispatchers -- DeepEP's normal
  kernels (deepseek-ai/DeepEP README; DeepSeek-V3 technical report, section 3.2.2), NVIDIA's
  HybridEP, both behind Megatron-Core's "flex" dispatcher -- send a token once to each remote
  node that holds one of its experts and fan it out over NVLink there. The network then carries
  the expected number of distinct remote nodes per token: with k of E experts drawn uniformly
  (NVIDIA's published MoE benchmarks force-balance the routing) over N nodes of E/N experts,
  (N - 1) x (1 - C(E - E/N, k) / C(E, k)); with group-limited routing (DeepSeek-V3: experts in 8
  groups, a token's from its best 4, "each token will be sent to at most M = 4 nodes", report
  section 2.1.2; Megatron-Core's moe_router_num_groups / moe_router_group_topk, which its forced
  balancing keeps) from the chosen groups' experts only. Inside one node the same kernels send
  a token once to each GPU that holds one of its experts (DeepEP's ``get_dispatch_layout``:
  ``is_token_in_rank``, a tokens x ranks table), so NVLink carries the distinct remote GPUs.
"""

from __future__ import annotations

from fabriclens.catalog.schema import ModelSpec
from fabriclens.model.arch import moe_layers, routed_width

ROUTED_BYTES = 2.0  # BF16 hidden vectors

# Host time of one MoE layer per micro-batch, forward and backward, that its kernels do not cover
# (ms at the kernel level, scaled by the framework's share like every kernel; a full recompute's
# rerun forward adds a third). The kernel-level step prices a MoE layer's GEMMs, permutations and
# all-to-all, not the chain of small kernels around them -- the router's (72 in Megatron-Core's
# before its fusion, 31 after: NVIDIA/Megatron-LM docs/discussions/deepseek-v3-gb200-optimization,
# sec. 2.1.4), the dispatcher's bookkeeping and a grouped GEMM launched expert by expert -- nor the
# dispatcher's device-to-host copy of the tokens per expert, which stops the host from running
# ahead of the GPU once a pass (Megatron-Core's MoE README, "CPU Overhead Bottleneck": gaps
# between GPU kernels where the CPU cannot launch kernels fast enough, fixed by a larger
# micro-batch or CUDA graphs of the router and preprocess; Megatron-Bridge's
# docs/training/cuda-graphs.md finds those graphs make a launch-bound mid-sized MoE step
# "low-teens to low-20s percent faster").
# At a few microseconds a launch, a few hundred launches a layer make about a millisecond. The
# value is calibrated: the grid value (benchmarks/calibrate_frameworks.py, MOE_HOST_GRID_MS) that
# brings the MoE calibration rows of reference/ closest to their measured speed, the least sum of
# |log(measured / planned speed)|, the shares set by the dense rows; tests/unit/
# test_framework_calibration.py re-derives it. It weighs most on small layers: a micro-batch of
# one sequence, fine-grained experts, a fast GPU.
MOE_LAYER_HOST_MS = 1.50


def moe_share(spec: ModelSpec) -> float:
    """The share of the layers that are MoE layers (per-layer averages use it)."""
    return moe_layers(spec) / spec.layers if spec.is_moe else 0.0


def moe_host_per_layer_s(spec: ModelSpec, moe_layer_host_s: float) -> float:
    """The MoE layers' host time averaged over the model's layers (per-layer averages use it)."""
    return moe_share(spec) * moe_layer_host_s


def permute_moves(spec: ModelSpec, ep: float) -> int:
    """Permutation moves per MoE layer per pass: permute and unpermute, plus the sort by local
    expert and its inverse when an expert-parallel all-to-all feeds several local experts."""
    return 2 + (2 if ep > 1 and spec.experts / ep > 1 else 0)


def permute_bytes_per_token(spec: ModelSpec, ep: float) -> float:
    """HBM bytes the permutation moves for one token in one pass (forward; the backward moves
    as many), averaged over the model's layers; each move reads and writes the k copies."""
    if not spec.is_moe:
        return 0.0
    per_move = 2.0 * spec.experts_per_token * routed_width(spec) * ROUTED_BYTES
    return moe_share(spec) * permute_moves(spec, ep) * per_move


def routed_input_bytes_per_token(spec: ModelSpec) -> float:
    """Activation bytes of the k routed copies each expert GEMM keeps, averaged over layers."""
    return moe_share(spec) * spec.experts_per_token * routed_width(spec) * ROUTED_BYTES


def _none_drawn(pool: float, held: float, k: int) -> float:
    """The chance that k draws without replacement from ``pool`` miss all ``held`` of them."""
    p = 1.0
    for i in range(k):
        p *= max(0.0, pool - held - i) / max(1.0, pool - i)
    return p


def distinct_remote_nodes(
    experts: int, k: int, nodes: float, groups: int = 0, picked: int = 0
) -> float:
    """Expected remote nodes holding at least one of a token's k experts, ``experts`` spread evenly
    over ``nodes`` nodes (the token's own among them): the k drawn without replacement from all
    experts, or with group-limited routing from the ``picked`` of ``groups`` equal groups the token
    chooses. A node holding whole groups is reached when one of its groups is chosen (each chosen
    group supplies one of the top-k: the router chose it for its best experts, so this holds while
    ``picked`` <= k); a group spread over several nodes reaches each node its experts are drawn
    from."""
    n = max(1.0, nodes)
    if not groups:
        return (n - 1.0) * (1.0 - _none_drawn(experts, experts / n, k))
    if groups >= n:  # each node holds groups / n whole groups
        return (n - 1.0) * (1.0 - _none_drawn(groups, groups / n, picked))
    chosen = picked * experts / groups  # experts the token may use
    p_node = picked / groups * (1.0 - _none_drawn(chosen, experts / n, k))
    return (n - 1.0) * p_node


def dispatch_network_share(spec: ModelSpec, nodes: float, mode: str) -> float:
    """Bytes of the dispatch as a share of a flat all-to-all's: 1 for the flat one, distinct
    remote destinations / (k (N-1)/N) for a deduplicating one (DeepEP's: once per destination
    node across nodes, once per destination GPU inside one; ``nodes`` is then the EP ranks)."""
    if mode != "node-dedup" or not spec.is_moe or nodes <= 1:
        return 1.0
    k = spec.experts_per_token
    remote = distinct_remote_nodes(
        spec.experts, k, nodes, spec.expert_groups, spec.expert_groups_per_token
    )
    return min(1.0, remote / (k * (nodes - 1.0) / nodes))  # never more than the flat one
