"""The HBM traffic of a layer's elementwise work when a framework runs it op by op.

The step model (model/step.py) charges the elementwise work of a layer as a fused framework runs
it: each activation the layer stores is written once and read back once (Transformer Engine's
fused norms, SwiGLU and rotary kernels; XLA; torch.compile's Inductor). Eager PyTorch runs three
pieces of a Llama-style layer as chains of separate kernels instead, and every kernel of the
chain reads its input from HBM and writes its output back:

- RMSNorm: torchtitan's ``RMSNorm`` (torchtitan/models/norms.py) and Hugging Face's
  ``LlamaRMSNorm`` (transformers/models/llama/modeling_llama.py) both compute
  ``(x.float() * rsqrt(x.float().pow(2).mean(-1) + eps)).type_as(x) * weight``;
- rotary embeddings: torchtitan's ``apply_rotary_emb`` (models/llama/model.py) upcasts q and k,
  multiplies them as complex numbers by the frequencies and casts back (Hugging Face's
  ``q * cos + rotate_half(q) * sin`` moves as many bytes);
- the gated MLP: ``w2(F.silu(w1(x)) * w3(x))`` launches the SiLU and the product apart;
- the query and key norms of the families that have them (Qwen3, OLMo 2, Gemma 3:
  ``ModelSpec.qk_norm``): the RMSNorm chain again, over every query and key head.

Each op below is (what it does, bytes read, bytes written) per element of the tensor it runs
on, BF16 activations and the FP32 upcasts the code makes; per-row statistics (the mean, the
rsqrt) and broadcast weights are too small to count. Backward lists are what autograd runs for
those ops. What the fused kernels move is charged already (a fused op reads its inputs and
writes its output once; its backward twice that, as the step model charges every backward), so
only the difference is added. Ops that are one kernel in eager PyTorch too (LayerNorm, GELU,
residual adds) add nothing, and neither do layout copies, which differ between frameworks.
"""

from __future__ import annotations

from fabriclens.catalog.schema import ModelSpec
from fabriclens.model.arch import head_dim, k_width, linear_share, mean_mlp_width, q_width

Op = tuple[str, float, float]  # what, bytes read, bytes written per element

RMSNORM_EAGER_FWD: tuple[Op, ...] = (
    ("x.float()", 2, 4),
    ("pow(2)", 4, 4),
    ("mean(-1)", 4, 0),
    ("x * rsqrt(mean + eps)", 4, 4),
    ("type_as(x)", 4, 2),
    ("* weight", 2, 2),
)
RMSNORM_EAGER_BWD: tuple[Op, ...] = (
    ("* weight: input gradient", 2, 2),
    ("* weight: weight gradient (product, then sum)", 6, 2),
    ("type_as: gradient to FP32", 2, 4),
    ("x * r: gradient of x", 4, 4),
    ("x * r: gradient of r (product, then sum)", 12, 4),
    ("mean: gradient broadcast over the row", 0, 4),
    ("pow(2): 2x * gradient", 8, 4),
    ("the two gradients of x added", 8, 4),
    ("x.float(): gradient to BF16", 4, 2),
)
ROTARY_EAGER_FWD: tuple[Op, ...] = (
    ("x.float()", 2, 4),
    ("complex product with the frequencies", 4, 4),
    ("type_as(x)", 4, 2),
)
ROTARY_EAGER_BWD: tuple[Op, ...] = (
    ("type_as: gradient to FP32", 2, 4),
    ("complex product with the conjugate frequencies", 4, 4),
    ("x.float(): gradient to BF16", 4, 2),
)
GATED_EAGER_FWD: tuple[Op, ...] = (  # per element of the MLP's width
    ("silu(gate)", 2, 2),
    ("silu(gate) * up", 4, 2),
)
GATED_EAGER_BWD: tuple[Op, ...] = (
    ("gradient of up: g * silu(gate)", 4, 2),
    ("gradient of silu(gate): g * up", 4, 2),
    ("silu backward", 4, 2),
)
# the fused kernels these replace: read the input(s), write the output (BF16)
NORM_FUSED: tuple[Op, ...] = (("fused RMSNorm", 2, 2),)
ROTARY_FUSED: tuple[Op, ...] = (("fused rotary", 2, 2),)
GATED_FUSED: tuple[Op, ...] = (("fused SwiGLU", 4, 2),)


def op_bytes(ops: tuple[Op, ...]) -> float:
    """Bytes one element moves through ``ops``."""
    return float(sum(r + w for _, r, w in ops))


def _extra(fwd: tuple[Op, ...], bwd: tuple[Op, ...], fused: tuple[Op, ...]) -> tuple[float, float]:
    """Bytes per element eager adds over the fused kernel: forward, backward."""
    base = op_bytes(fused)
    return op_bytes(fwd) - base, op_bytes(bwd) - 2.0 * base


def rotary_width(spec: ModelSpec) -> float:
    """Elements per token the rotary embedding turns: every query and key head (MLA: only the
    rope part of each query head and the one shared rope key)."""
    if spec.positions != "rotary":
        return 0.0
    if spec.is_mla:
        return float(spec.qk_rope_head_dim * (spec.heads + 1))
    return float((spec.heads + spec.kv_heads) * head_dim(spec))


def qk_norm_width(spec: ModelSpec) -> float:
    """Elements per token the query and key norms run over (ModelSpec.qk_norm): every query and
    key head, 0 for a family without them; averaged over the layers, a hybrid's softmax ones."""
    if not spec.qk_norm:
        return 0.0
    return float(q_width(spec) + k_width(spec)) * (1.0 - linear_share(spec))


def eager_extra_parts(spec: ModelSpec, mode: str = "eager") -> tuple[float, float, float, float]:
    """HBM bytes per token per layer that op-by-op elementwise work adds to the fused step's:
    the norms' (forward, backward), then the rotary and MLP chains' (forward, backward). ``mode``
    "eager-mlp": the norms and rotary fused, only the gated MLP op by op; "fused": nothing."""
    norm_f = norm_b = split_f = split_b = 0.0
    if mode == "fused":
        return norm_f, norm_b, split_f, split_b
    mlp_only = mode == "eager-mlp"
    if spec.norm == "rms" and not mlp_only:  # two per layer: before attention and the MLP
        f, b = _extra(RMSNORM_EAGER_FWD, RMSNORM_EAGER_BWD, NORM_FUSED)
        norm_f, norm_b = 2 * spec.hidden * f, 2 * spec.hidden * b
    width = 0.0 if mlp_only else rotary_width(spec)
    if width:
        f, b = _extra(ROTARY_EAGER_FWD, ROTARY_EAGER_BWD, ROTARY_FUSED)
        split_f, split_b = width * f, width * b
    if spec.qk_norm and not mlp_only:  # the query and key norms: the same chain, split by heads
        f, b = _extra(RMSNORM_EAGER_FWD, RMSNORM_EAGER_BWD, NORM_FUSED)
        qk = qk_norm_width(spec)
        split_f, split_b = split_f + qk * f, split_b + qk * b
    if spec.mlp == "swiglu":
        f, b = _extra(GATED_EAGER_FWD, GATED_EAGER_BWD, GATED_FUSED)
        mlp = mean_mlp_width(spec)
        split_f, split_b = split_f + mlp * f, split_b + mlp * b
    return norm_f, norm_b, split_f, split_b


def eager_extra_bytes_per_token(
    spec: ModelSpec, tp: int = 1, sequence_parallel: bool = False, mode: str = "eager"
) -> tuple[float, float]:
    """What op-by-op elementwise work adds on one GPU, per token of its micro-batch and per
    layer: (forward, backward), for a framework's ``mode`` (ELEMENTWISE_MODES). Tensor
    parallelism splits the rotary and MLP chains; the norms only under sequence parallelism
    (else every rank normalises every token)."""
    norm_f, norm_b, split_f, split_b = eager_extra_parts(spec, mode)
    norm_split = tp if (sequence_parallel or tp == 1) else 1
    return norm_f / norm_split + split_f / tp, norm_b / norm_split + split_b / tp
