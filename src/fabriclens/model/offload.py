"""Serving a model that does not fit in the GPUs' memory: layers kept in host memory.

Ollama and llama.cpp run such a model anyway. llama.cpp puts the last ``n_gpu_layers`` decoder
layers on the GPU(s) and keeps the rest, with the token embedding, in host memory; the output
layer joins the GPU only once every decoder layer is there (``-ngl`` above the layer count), and
the KV cache of a GPU layer sits on that GPU. Ollama chooses ``n_gpu_layers`` from its estimate of
the free memory and logs it ("offloaded 20/33 layers to GPU", counting the output layer).

A decode step runs the layers in order and reads each one's weights and KV cache where they live:
on the GPU at its HBM rate, in host memory at what the CPU's kernels reach of the host's memory
bandwidth (catalog: hosts.toml). At batch 1 the CPU's matrix-vector work is bound by that read,
so a few layers left in host memory cost more than all the GPU's layers together. A prompt of
``OFFLOAD_MIN_BATCH`` tokens or more runs the host layers' matrix multiplications on the GPU,
copying their weights over the host link once per micro-batch of ``UBATCH_TOKENS``; a shorter
one runs them on the CPU, read once like a decode step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fabriclens.catalog.schema import Engine, Gpu, Host, ModelSpec
from fabriclens.model.arch import (
    ParamCounts,
    attention_core_flops_per_token,
    cached_tokens,
    expert_params,
    head_params,
    kv_bytes_per_token,
    kv_read_bytes_per_token,
    moe_layers,
    state_bytes_per_layer,
)
from fabriclens.model.inference import engine_overhead_s, experts_touched
from fabriclens.model.memory import CUDA_CONTEXT_BYTES, FRAGMENTATION, activation_bytes
from fabriclens.model.step import peak_flops

# ggml-cuda's offload_op: an operation on host-resident weights runs on the GPU when its batch
# holds at least this many tokens (ggml/src/ggml-cuda/ggml-cuda.cu, min_batch_size)
OFFLOAD_MIN_BATCH = 32
UBATCH_TOKENS = 512  # llama.cpp's default physical micro-batch (-ub, n_ubatch)
# what a pinned host-to-device copy reaches of the PCIe line rate (cudaMemcpy of pinned
# buffers; estimate)
H2D_EFFICIENCY = 0.8


@dataclass(frozen=True, slots=True)
class Offload:
    """Where the layers live and what that costs per token."""

    layers: int  # decoder layers of the model
    gpu_layers: int  # of them, in GPU memory (all GPUs together)
    output_on_gpu: bool  # the output layer (LM head) too
    host_bytes: float  # weights (and KV cache) in host memory
    gpu_bytes_per_gpu: float  # what each GPU holds (the fullest one)
    decode_step_s: float
    decode_host_s: float  # of the step: reading host memory
    prefill_s: float
    host_bw_bytes_per_s: float  # achievable
    h2d_bytes_per_s: float  # host link, achievable
    max_gpu_layers: int  # decoder layers that fit beside the GPUs' fixed part (the automatic split)
    capacity_bytes: float  # of one GPU
    requested: int | None = None  # -ngl / num_gpu as given, None: what fits

    @property
    def fits(self) -> bool:
        """Each GPU holds its share: the layers asked for, or (the automatic split) its fixed part."""
        return self.gpu_bytes_per_gpu <= self.capacity_bytes

    def host_fits(self, free_bytes: int | None) -> bool | None:
        """The host holds what is left there, given its free RAM + swap (None: not given)."""
        return None if free_bytes is None else self.host_bytes <= free_bytes

    @property
    def reported_layers(self) -> tuple[int, int]:
        """Ollama's count, "offloaded N/M layers to GPU": the output layer is one of them."""
        return self.gpu_layers + int(self.output_on_gpu), self.layers + 1

    @property
    def decode_tokens_per_s(self) -> float:
        """Tokens per second of one sequence."""
        return 1.0 / self.decode_step_s


def place_layers(room_per_gpu: list[float], per_layer_bytes: float, layers: int) -> int:
    """Decoder layers the GPUs hold: whole layers into each GPU's free room, at most all."""
    if per_layer_bytes <= 0:
        return layers
    return min(layers, sum(int(r // per_layer_bytes) for r in room_per_gpu if r > 0))


def estimate_offload(
    spec: ModelSpec,
    counts: ParamCounts,
    gpu: Gpu,
    engine: Engine,
    host: Host,
    *,
    gpus: int,
    batch: int,
    prompt_tokens: int,
    output_tokens: int,
    weight_bytes_per_param: float,
    kv_bytes_per_value: float,
    host_link_bytes_per_s: float,
    capacity_bytes: float | None = None,
    gpu_layers: int | None = None,
) -> Offload:
    """The split an engine that offloads layers makes on ``gpus`` GPUs, and its speed.

    ``gpu_layers`` sets the split as llama.cpp's ``-ngl`` does (the last N decoder layers; the
    output layer too when N exceeds their count) instead of what fits."""
    wbytes = weight_bytes_per_param
    L = spec.layers
    h = spec.hidden
    moe_share = moe_layers(spec) / L
    dense = counts.layers_dense / L
    per_layer_params = dense + moe_share * spec.experts * expert_params(spec)
    head = head_params(spec, counts)
    context = prompt_tokens + output_tokens
    kv_layer_token = kv_bytes_per_token(spec, kv_bytes_per_value) / L
    state_layer = state_bytes_per_layer(spec, engine.state_bytes)  # a hybrid's recurrent state
    kv_layer = batch * (cached_tokens(spec, context) * kv_layer_token + state_layer)
    layer_bytes = per_layer_params * wbytes * (1 + FRAGMENTATION) + kv_layer
    head_bytes = head * wbytes * (1 + FRAGMENTATION)
    # the GPU's fixed part: the CUDA context, the engine's reserve, the compute buffers of one
    # micro-batch (hidden states, the MLP's intermediates, the logits)
    buffers = activation_bytes(spec, min(batch * prompt_tokens, UBATCH_TOKENS), batch)
    capacity = gpu.memory_bytes if capacity_bytes is None else capacity_bytes
    room = capacity - CUDA_CONTEXT_BYTES - engine.reserved_bytes - buffers
    fit = place_layers([room] * gpus, layer_bytes, L)
    if gpu_layers is None:
        g = fit
        output_on_gpu = g == L and room * gpus - g * layer_bytes >= head_bytes
    else:
        g, output_on_gpu = min(max(gpu_layers, 0), L), gpu_layers > L
    per_gpu = math.ceil(g / gpus) * layer_bytes + (head_bytes if output_on_gpu else 0.0)

    # decode: every layer's weights (the experts the batch touches) and KV cache, where they are
    touched = experts_touched(spec.experts, spec.experts_per_token, batch) if spec.is_moe else 0.0
    read_params = dense + moe_share * touched * expert_params(spec)
    avg_context = prompt_tokens + output_tokens / 2
    kv_read = batch * (
        kv_read_bytes_per_token(spec, avg_context, kv_bytes_per_value) / L + 2.0 * state_layer
    )
    layer_read = read_params * wbytes + kv_read
    gpu_rate = gpu.decode_bytes_per_s
    host_rate = host.achievable_bytes_per_s
    head_read = head * wbytes
    host_s = (L - g) * layer_read / host_rate + (0.0 if output_on_gpu else head_read / host_rate)
    gpu_s = g * layer_read / gpu_rate + (head_read / gpu_rate if output_on_gpu else 0.0)
    overhead = engine_overhead_s(engine, spec)
    step = host_s + gpu_s + overhead

    # prefill: the GPU's layers at its rates; the host's copied to the GPU per micro-batch
    tokens = batch * prompt_tokens
    compute = "bf16"
    mm_rate = peak_flops(gpu, compute) * gpu.gemm_efficiency(compute)
    attn_rate = gpu.bf16_flops_per_s * gpu.attention_efficiency
    per_layer_flops = 2.0 * tokens * counts.layer_matmul_active / L
    core = tokens * attention_core_flops_per_token(spec, prompt_tokens) / 2
    layer_compute = per_layer_flops / mm_rate + core / attn_rate
    head_compute = 2.0 * batch * h * spec.vocab / mm_rate
    h2d = host_link_bytes_per_s * H2D_EFFICIENCY
    host_weights = (L - g) * per_layer_params * wbytes + (0.0 if output_on_gpu else head_read)
    if batch * prompt_tokens >= OFFLOAD_MIN_BATCH:
        passes = math.ceil(tokens / UBATCH_TOKENS)
        host_prefill = passes * host_weights / h2d + (L - g) * layer_compute
    else:
        host_prefill = host_weights / host_rate
    prefill = g * layer_compute + host_prefill + head_compute + overhead
    return Offload(
        layers=L,
        gpu_layers=g,
        output_on_gpu=output_on_gpu,
        host_bytes=host_weights + (L - g) * kv_layer,
        gpu_bytes_per_gpu=per_gpu + CUDA_CONTEXT_BYTES + engine.reserved_bytes + buffers,
        decode_step_s=step,
        decode_host_s=host_s,
        prefill_s=prefill,
        host_bw_bytes_per_s=host_rate,
        h2d_bytes_per_s=h2d,
        max_gpu_layers=fit,
        capacity_bytes=capacity,
        requested=gpu_layers,
    )
