"""How fast a transformer layer's GEMMs run compared with the best GEMM on the GPU.

Each linear layer of a block is a GEMM whose shape follows from the model and the layout: the
tokens of a micro-batch (m), the layer's output width (n) and input width (k), tensor
parallelism splitting n (column-parallel: QKV, MLP up/gate) or k (row-parallel: the attention
output and MLP down projections), and expert parallelism deciding how many tokens each local
expert receives. The backward runs two GEMMs per layer: the input gradient (m x k, reducing n)
and the weight gradient (k x n, reducing m).

Each shape's rate comes from the architecture's measured table (catalog/gemm_shapes.py),
interpolated in log2 of m, n and k and clamped to its 256..4096 grid (shapes beyond it run at the
rate of its edge: they are as large as the best shapes). A pass's share of the GPU's best GEMM
rate is the FLOP-weighted harmonic mean over its GEMMs: the time it takes, not an average of
rates. A GPU without a table (``gemm_shapes = ""``) runs every shape at its best rate.
"""

from __future__ import annotations

import functools
import math

from fabriclens.catalog.gemm_shapes import GemmShapeTable, gemm_shape_table
from fabriclens.catalog.schema import Gpu, ModelSpec
from fabriclens.model.arch import (
    attention_projections,
    dense_mlp_layers,
    linear_projections,
    linear_share,
    moe_layers,
    routed_width,
)

Shape = tuple[float, float, float]  # m, n, k


def relative_rate(table: GemmShapeTable, precision: str, m: float, n: float, k: float) -> float:
    """Measured throughput of an m x n x k GEMM over the table's best (0-1], interpolated."""
    grid = table.relative.get(precision) or table.relative["bf16"]
    exps = table.log2_dims
    size = len(exps)
    idx, frac = [], []
    for d in (m, n, k):
        x = min(max(math.log2(max(d, 1.0)), exps[0]), exps[-1]) - exps[0]
        i = min(int(x), size - 2)
        idx.append(i)
        frac.append(x - i)
    rate = 0.0
    for corner in range(8):
        weight, flat = 1.0, 0
        for axis in range(3):
            up = (corner >> axis) & 1
            weight *= frac[axis] if up else 1.0 - frac[axis]
            flat = flat * size + idx[axis] + up
        rate += weight * grid[flat]
    return rate


def layer_gemms(spec: ModelSpec, tokens: float, tp: int, ep: int) -> list[tuple[Shape, float]]:
    """The forward GEMMs of one decoder layer on one tensor-parallel rank: (m, n, k) and how
    many of each per layer, averaged over dense and MoE layers (and over a hybrid's softmax
    and linear-attention layers)."""
    h = spec.hidden
    gemms: list[tuple[Shape, float]] = []
    share = linear_share(spec)
    mixers = [(attention_projections(spec), 1.0 - share)]
    if share:
        mixers.append((linear_projections(spec), share))
    for projections, count in mixers:
        # column-parallel, then the output projection: row-parallel
        gemms += [((tokens, out / tp, inp), count) for inp, out in projections[:-1]]
        inp, out = projections[-1]
        gemms.append(((tokens, out, inp / tp), count))
    ups = 2 if spec.mlp == "swiglu" else 1

    def mlp(m: float, ffn: float, count: float, width: float = h) -> None:
        gemms.append(((m, ffn / tp, width), ups * count))
        gemms.append(((m, width, ffn / tp), count))

    n_moe = moe_layers(spec)
    dense_share = dense_mlp_layers(spec) / spec.layers
    if dense_share:
        mlp(tokens, spec.ffn, dense_share)
    if n_moe:
        moe_share = n_moe / spec.layers
        local = max(1.0, spec.experts / ep)
        routed = tokens * spec.experts_per_token / local  # each local expert's tokens
        mlp(routed, spec.moe_ffn or spec.ffn, moe_share * local, routed_width(spec))
        if spec.shared_experts:
            mlp(tokens, spec.moe_ffn or spec.ffn, moe_share * spec.shared_experts)
        gemms.append(((tokens, spec.experts, h), moe_share))  # the router
        if spec.moe_latent:  # LatentMoE: down to the latent and back up, every token
            gemms.append(((tokens, spec.moe_latent, h), moe_share))
            gemms.append(((tokens, h, spec.moe_latent), moe_share))
    return gemms


def _harmonic(table: GemmShapeTable, precision: str, shapes: list[tuple[Shape, float]]) -> float:
    flops = sum(m * n * k * c for (m, n, k), c in shapes)
    time = sum(m * n * k * c / relative_rate(table, precision, m, n, k) for (m, n, k), c in shapes)
    return flops / time if time else 1.0


def _pass_shares(
    table: GemmShapeTable, precision: str, fwd: list[tuple[Shape, float]]
) -> tuple[float, float, float]:
    """Forward, input-gradient (m x k, reducing n) and weight-gradient (k x n, reducing m)."""
    dgrad = [((m, k, n), c) for (m, n, k), c in fwd]
    wgrad = [((k, n, m), c) for (m, n, k), c in fwd]
    return (
        _harmonic(table, precision, fwd),
        _harmonic(table, precision, dgrad),
        _harmonic(table, precision, wgrad),
    )


@functools.cache
def layer_shape_shares(
    gpu: Gpu, spec: ModelSpec, tokens: float, tp: int, ep: int, precision: str
) -> tuple[float, float, float]:
    """The layer's forward, input-gradient and weight-gradient GEMMs' share of the GPU's best
    GEMM rate (1.0 each without a table)."""
    if not gpu.gemm_shapes:
        return 1.0, 1.0, 1.0
    return _pass_shares(
        gemm_shape_table(gpu.gemm_shapes), precision, layer_gemms(spec, tokens, tp, ep)
    )


@functools.cache
def lm_head_shape_shares(
    gpu: Gpu, spec: ModelSpec, tokens: float, tp: int
) -> tuple[float, float, float]:
    """The same for the LM head (BF16: tokens x vocab/tp x hidden)."""
    if not gpu.gemm_shapes:
        return 1.0, 1.0, 1.0
    head = [((tokens, spec.vocab / tp, float(spec.hidden)), 1.0)]
    return _pass_shares(gemm_shape_table(gpu.gemm_shapes), "bf16", head)
