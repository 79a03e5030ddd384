"""What LoRA's adapters add to a training step: the activations their small GEMMs move.

A LoRA adapter beside a frozen linear layer W (in -> out) adds B(A x) to its output, A and B of
rank r (16 or so). Its FLOPs are negligible, but run as their own kernels beside the frozen GEMM
(Megatron-Core's LoRALinear as NeMo and Megatron-Bridge wrap every linear layer with it, NeMo 1's
ParallelLinearAdapter, PEFT's lora.Linear) the adapter streams the layer's input and output
through HBM again, and a skinny GEMM of width r runs at the memory's speed. Per token and adapted
linear layer, in elements of 16-bit activations:

  forward   read x for A x (in); write B(A x) (out); read y and B(A x), write their sum (3 out)
  backward  read dY for dY B^T and again for B's gradient (2 out); write the adapter's input
            gradient and read x for A's gradient (2 in); add the adapter's input gradient to
            the frozen layer's (read 2 in, write in)

1 in + 4 out forward and 5 in + 2 out backward, 6 (in + out) in all; the r-wide intermediates,
the adapters' weights and their gradients are too small to count. A lora_dropout, a separate
scaling pass (PEFT multiplies B(A x) by alpha / r on its own) or an unfused dropout mask adds
more; none is counted, so this is the least an unfused adapter moves. Under tensor parallelism
each layer's operands are the frozen GEMM's on one rank: a column-parallel projection (queries,
keys and values, the MLP's gate and up) reads the whole input (gathered under sequence
parallelism) and writes 1/tp of the output; a row-parallel one (attention's output, the MLP's
down projection) reads 1/tp of the input and writes the whole output, or 1/tp of the tokens'
under sequence parallelism. Adapters sit on the linear layers LORA_TARGETS names (every
attention and MLP projection by default; memory.adapter_params counts their parameters alike),
one adapter per linear layer as the framework lays them out (q/k/v and gate/up fused into one
each read their input once), in a mixture of experts on each of the k experts a token is routed
to and on the shared ones.
"""

from __future__ import annotations

from fabriclens.catalog.schema import ModelSpec
from fabriclens.model.arch import (
    attention_projections,
    dense_mlp_layers,
    linear_projections,
    moe_layers,
    routed_width,
    softmax_layers,
)

ACTIVATION_BYTES = 2.0  # the adapters' inputs and outputs are 16-bit activations
FWD_IN, FWD_OUT = 1.0, 4.0  # elements per token of an adapted layer's input and output, forward
BWD_IN, BWD_OUT = 5.0, 2.0  # and backward

# which linear layers carry adapters: every projection of attention and MLP (PEFT's
# "all-linear", the QLoRA recipe, NeMo AutoModel's match_all_linear); attention's only, queries,
# keys, values and output (NeMo's and MLPerf's target_modules ['attention']); the fused QKV
# projection only (Megatron-Bridge's ['linear_qkv']); queries and values (PEFT's default for
# Llama-family models, q_proj and v_proj); the MLP's projections only (gate, up and down)
LORA_TARGETS = ("all", "attention", "qkv", "qv", "mlp")
LORA_TARGET_NAMES = {
    "all": "every attention and MLP projection",
    "attention": "attention's query, key, value and output projections",
    "qkv": "the query, key and value projections",
    "qv": "the query and value projections",
    "mlp": "the MLP's gate, up and down projections",
}

Proj = tuple[float, float, bool]  # input width, output width, row-parallel


def mixer_targets(
    projections: tuple[tuple[int, int], ...],
    targets: str,
    mla: bool = False,
    fused: bool = False,
) -> list[Proj]:
    """The adapted ones of a token mixer's projections (attention's, or a linear layer's) as
    (input, output, row-parallel), the last row-parallel: all of them, or all but the output
    projection, or the queries and values of a plain q, k, v, o attention (``qv``; MLA's and a
    linear layer's inputs are taken whole, as ``qkv``), or none (``mlp``). ``fused``: a plain
    attention's query, key and value projections are one linear layer (Megatron-Core's
    linear_qkv), which an adapter reads once."""
    if targets == "mlp":
        return []
    last = len(projections) - 1
    projs = [(float(i), float(o), n == last) for n, (i, o) in enumerate(projections)]
    plain = not mla and len(projs) == 4  # q, k, v, o
    if targets == "qv" and plain:
        return [projs[0], projs[2]]
    if fused and plain:
        projs = [(projs[0][0], sum(o for _, o, _ in projs[:3]), False), projs[3]]
    return projs if targets in ("all", "attention") else projs[:-1]


def adapts_mlp(targets: str) -> bool:
    """Whether the MLPs (and experts) carry adapters."""
    return targets in ("all", "mlp")


def _traffic(projs: list[Proj], tp: int, sequence_parallel: bool) -> tuple[float, float]:
    """(input, output) elements per token one rank's adapters touch on ``projs``: a
    column-parallel layer reads its whole input and writes 1/tp of its output, a row-parallel
    one reads 1/tp of its input and writes the whole output (1/tp of it under sequence
    parallelism)."""
    ins = sum(i / tp if row else i for i, _, row in projs)
    outs = sum((o / tp if sequence_parallel else o) if row else o / tp for _, o, row in projs)
    return ins, outs


def _mlp(width: float, ffn: float, swiglu: bool, fused: bool) -> list[Proj]:
    """An MLP's projections: gate and up (one linear layer when ``fused``, Megatron-Core's
    linear_fc1), then down."""
    gates = 2 if swiglu else 1
    up = [(width, gates * ffn, False)] if fused else [(width, ffn, False)] * gates
    return [*up, (ffn, width, True)]


def mlp_adapter_widths(spec: ModelSpec, width: float, ffn: float, fused: bool) -> float:
    """The sum of (input + output) widths of an MLP's adapted linear layers: an adapter's
    parameters are its rank times that."""
    return sum(i + o for i, o, _ in _mlp(width, ffn, spec.mlp == "swiglu", fused))


def adapter_bytes_per_token(
    spec: ModelSpec,
    tp: int,
    sequence_parallel: bool,
    expert_tp: int,
    targets: str = "all",
    projections: str = "separate",
) -> tuple[float, float]:
    """(forward, backward) bytes one rank's LoRA adapters move per token of a micro-batch, per
    decoder layer (averaged over the layers), with adapters on ``targets`` (LORA_TARGETS) and
    the input projections laid out as ``projections`` (the framework's PROJECTION_LAYOUTS)."""
    swiglu, mlps, fused = spec.mlp == "swiglu", adapts_mlp(targets), projections == "fused"
    attn = mixer_targets(attention_projections(spec), targets, spec.is_mla, fused)
    parts = [(softmax_layers(spec), _traffic(attn, tp, sequence_parallel))]
    if spec.linear_layers:
        lin = mixer_targets(linear_projections(spec), targets, mla=True)
        parts.append((spec.linear_layers, _traffic(lin, tp, sequence_parallel)))
    h = float(spec.hidden)
    if mlps:
        dense = _traffic(_mlp(h, float(spec.ffn), swiglu, fused), tp, sequence_parallel)
        parts.append((dense_mlp_layers(spec), dense))
    if mlps and spec.is_moe:
        mf = float(spec.moe_ffn or spec.ffn)
        # each routed copy at the experts' width and tensor parallelism (one output per copy,
        # not split by sequence parallelism), the shared experts as a dense MLP
        r_in, r_out = _traffic(_mlp(routed_width(spec), mf, swiglu, fused), expert_tp, False)
        s_in, s_out = _traffic(_mlp(h, mf, swiglu, fused), tp, sequence_parallel)
        k, shared = spec.experts_per_token, spec.shared_experts
        parts.append((moe_layers(spec), (k * r_in + shared * s_in, k * r_out + shared * s_out)))
    ins = sum(n * i for n, (i, _) in parts) / spec.layers
    outs = sum(n * o for n, (_, o) in parts) / spec.layers
    fwd = (FWD_IN * ins + FWD_OUT * outs) * ACTIVATION_BYTES
    bwd = (BWD_IN * ins + BWD_OUT * outs) * ACTIVATION_BYTES
    return fwd, bwd
