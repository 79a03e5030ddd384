"""Hybrid models: Gated DeltaNet (linear attention) layers beside gated softmax attention
(Qwen3-Next, Qwen3.5). Parameters against the published totals, the KV cache and recurrent
state against llama.cpp's allocation, and what the state costs a decode step."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from conftest import FIXTURES
from fabriclens.catalog import find_engine, find_gpu, find_link, find_model
from fabriclens.errors import InputError
from fabriclens.model.arch import (
    attention_core_flops_per_token,
    count_params,
    kv_bytes_per_token,
    linear_state_elements,
    state_bytes,
)
from fabriclens.model.collectives import Fabric
from fabriclens.model.inference import estimate_inference
from fabriclens.model.memory import inference_memory

HF = FIXTURES / "hf"
H100 = find_gpu("h100-sxm")
NVLINK = Fabric(find_link("nvlink4-nvswitch"), None, 8, 1)


@pytest.mark.parametrize(
    ("fixture", "total", "active"),
    [
        # model cards: "80B parameters, 3B activated" (Qwen3-Next-80B-A3B), Qwen3.5-27B (dense),
        # Qwen3.5-397B-A17B: 397B total, 17B activated
        ("qwen3-next-80b-a3b-instruct.json", 80e9, None),
        ("qwen3.5-27b.json", 27e9, None),
        ("qwen3.5-397b-a17b.json", 397e9, 17e9),
        # IBM's Granite 4.0 model card: Granite-4.0-H-Small, 32B total, 9B active (Mamba-2)
        ("granite-4.0-h-small.json", 32e9, 9e9),
    ],
)
def test_hybrid_parameter_counts_match_the_published_totals(
    fixture: str, total: float, active: float | None
) -> None:
    """Each Gated DeltaNet layer: in_proj_qkvz (hidden x (2 key + 2 value widths)), in_proj_ba
    (2 per value head), the convolution's taps, out_proj; each softmax layer's query projection
    twice as wide for the output gate. Each Mamba-2 layer: in_proj (z, x, B, C and a time step
    per head), the convolution, out_proj. Totals within 1% of the published figure, the active
    count within 3% (both given to two or three figures)."""
    counts = count_params(find_model(str(HF / fixture)))
    assert counts.total == pytest.approx(total, rel=0.01)
    if active:
        assert counts.active == pytest.approx(active, rel=0.03)


def test_qwen3_next_active_parameters_round_to_its_name() -> None:
    """Qwen3-Next-80B-A3B: 3B activated outside the embedding and the LM head (the name's
    'A3B', one figure): 10 of 512 experts and the shared one, every mixer, in 48 layers."""
    counts = count_params(find_model(str(HF / "qwen3-next-80b-a3b-instruct.json")))
    assert round((counts.active - counts.embedding - counts.lm_head) / 1e9) == 3


@pytest.mark.parametrize(
    ("name", "fixture"),
    [
        ("qwen3-next-80b-a3b", "qwen3-next-80b-a3b-instruct.json"),
        ("qwen3.5-27b", "qwen3.5-27b.json"),
        ("qwen3.5-397b-a17b", "qwen3.5-397b-a17b.json"),
        ("granite-4.0-h-small", "granite-4.0-h-small.json"),
        ("nemotron-h-8b", "nemotron-h-8b-base-8k.json"),
    ],
)
def test_the_catalog_entries_are_their_configs(name: str, fixture: str) -> None:
    spec, from_config = find_model(name), find_model(str(HF / fixture))
    assert count_params(spec) == count_params(from_config)
    assert kv_bytes_per_token(spec) == kv_bytes_per_token(from_config)
    assert linear_state_elements(spec) == linear_state_elements(from_config)
    assert (spec.linear_layers, spec.linear_kind, spec.attn_output_gate, spec.qk_norm) == (
        from_config.linear_layers, from_config.linear_kind, from_config.attn_output_gate,
        from_config.qk_norm,
    )  # fmt: skip


def _config(tmp_path: Path, fixture: str, drop: tuple[str, ...] = (), **changes: object) -> str:
    """A copy of a fixture config.json with ``drop`` keys removed and ``changes`` made."""
    cfg = json.loads((HF / fixture).read_text())
    for key in drop:
        del cfg[key]
    cfg.update(changes)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    return str(path)


def test_layer_types_and_the_interval_agree(tmp_path: Path) -> None:
    """transformers' Qwen3NextConfig: without layer_types, layer i is full attention when
    (i + 1) % full_attention_interval == 0; both ways name the same 36 linear layers."""
    fixture, drop = "qwen3-next-80b-a3b-instruct.json", ("layer_types",)
    assert find_model(_config(tmp_path, fixture, drop)).linear_layers == 36
    interval = _config(tmp_path, fixture, drop, full_attention_interval=2)
    assert find_model(interval).linear_layers == 24


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("layer_types", ["linear_attention"] * 3, "layer_types"),
        ("full_attention_interval", 0, "full_attention_interval"),
        ("linear_num_value_heads", 24, "linear_value_heads"),  # not a multiple of 16 key heads
    ],
)
def test_bad_hybrid_fields_are_one_clear_error(
    tmp_path: Path, key: str, value: object, message: str
) -> None:
    drop = ("layer_types",) if key == "full_attention_interval" else ()
    path = _config(tmp_path, "qwen3-next-80b-a3b-instruct.json", drop, **{key: value})
    with pytest.raises(InputError, match=message):
        find_model(path)


def test_qwen3_5_multimodal_and_text_only_configs_plan_the_language_model() -> None:
    """Qwen3.5's released config.json wraps its language model in text_config (model_type
    qwen3_5_moe_text); a text-only export (Megatron-Bridge's Qwen3.5-27B) keeps it at the top."""
    moe = find_model(str(HF / "qwen3.5-397b-a17b.json"))
    assert (moe.layers, moe.linear_layers, moe.linear_value_heads) == (60, 45, 64)
    assert (moe.experts, moe.experts_per_token, moe.shared_experts) == (512, 10, 1)
    dense = find_model(str(HF / "qwen3.5-27b.json"))
    assert (dense.layers, dense.linear_layers, dense.is_moe) == (64, 48, False)


def test_kv_cache_and_state_match_llama_cpp_allocation() -> None:
    """llama.cpp sizes a hybrid's caches from the GGUF (src/llama-hparams.cpp): the recurrent
    state n_embd_s = ssm_d_state x ssm_d_inner and the convolution's n_embd_r = (ssm_d_conv - 1)
    x (ssm_d_inner + 2 ssm_n_group ssm_d_state), both float32 in every recurrent layer
    (src/llama-model.cpp: recurrent_type_r / _s GGML_TYPE_F32); the KV cache in the full-attention
    layers only. For Qwen3.5-9B (32 layers, every 4th full; ssm.inner_size 4096, state_size 128,
    group_count 16, conv_kernel 4; 4 KV heads of 256): 524,288 + 24,576 values a layer, 52,690,944
    bytes a sequence over 24 layers, and 8 x 2 x 4 x 256 KV values per token. Exact."""
    spec = dataclasses.replace(
        find_model(str(HF / "qwen3.5-27b.json")), name="qwen3.5-9b", layers=32, hidden=4096,
        heads=16, kv_heads=4, ffn=12288, linear_layers=24, linear_value_heads=32,
    )  # fmt: skip
    assert linear_state_elements(spec) == 524_288 + 24_576
    assert state_bytes(spec, 4.0) == 52_690_944
    assert kv_bytes_per_token(spec, 2.0) == 8 * 2 * 4 * 256 * 2


def test_the_state_is_held_per_sequence_whatever_the_context() -> None:
    spec = find_model("qwen3-next-80b-a3b")
    counts = count_params(spec)
    kw = dict(tp=1, pp=1, batch=4, prefill_chunk_tokens=1024, weight_precision="bf16",
              kv_bytes_per_value=2.0, capacity_bytes=1e12)  # fmt: skip
    short = inference_memory(spec, counts, context_tokens=1024, **kw)  # type: ignore[arg-type]
    long = inference_memory(spec, counts, context_tokens=9216, **kw)  # type: ignore[arg-type]
    # 8,192 more tokens of KV in the 12 softmax layers; the state unchanged
    grown = long.per_gpu_bytes["kv_cache"] - short.per_gpu_bytes["kv_cache"]
    assert grown == 4 * 8192 * 12 * 2 * 2 * 256 * 2.0
    # at float32 the state is twice what it is at 16 bits (SGLang's default against vLLM's)
    f32 = inference_memory(spec, counts, context_tokens=1024, state_bytes_per_value=4.0,
                           **kw).per_gpu_bytes["kv_cache"]  # type: ignore[arg-type]  # fmt: skip
    b16 = inference_memory(spec, counts, context_tokens=1024, state_bytes_per_value=2.0,
                           **kw).per_gpu_bytes["kv_cache"]  # type: ignore[arg-type]  # fmt: skip
    assert f32 - b16 == 4 * state_bytes(spec, 2.0)


def test_each_decode_step_reads_and_writes_the_state() -> None:
    """Beside the weights, a step moves 2 x the state of every sequence in the batch (read and
    written back): with 64 sequences the step grows by at least that over the memory rate."""
    spec = find_model("qwen3-next-80b-a3b")
    counts = count_params(spec)
    vllm = find_engine("vllm")
    kw = dict(tp=1, pp=1, prompt_tokens=128, output_tokens=128)

    def step(engine_state: float, batch: int) -> float:
        engine = dataclasses.replace(vllm, state_bytes=engine_state)
        est = estimate_inference(spec, counts, H100, NVLINK, engine, batch=batch, **kw)  # type: ignore[arg-type]
        return est.decode_step_s

    rate = H100.hbm_bw_bytes_per_s * H100.decode_stream_efficiency
    extra = step(4.0, 64) - step(2.0, 64)  # the same step with the state at twice the bytes
    assert extra == pytest.approx(2.0 * 64 * state_bytes(spec, 2.0) / rate, rel=1e-6)
    assert "recurrent state" in " ".join(
        estimate_inference(spec, counts, H100, NVLINK, vllm, batch=1, **kw).assumptions  # type: ignore[arg-type]
    )


def test_linear_layers_replace_the_attention_square() -> None:
    """A softmax layer's attention grows with the context; a Gated DeltaNet layer's chunked
    mixing does not: averaged over Qwen3-Next's layers, a quarter of the square remains."""
    spec = find_model("qwen3-next-80b-a3b")
    growth = attention_core_flops_per_token(spec, 65536) - attention_core_flops_per_token(
        spec, 32768
    )
    transformer = dataclasses.replace(spec, linear_layers=0)
    full = attention_core_flops_per_token(transformer, 65536) - attention_core_flops_per_token(
        transformer, 32768
    )
    assert growth == pytest.approx(full * 12 / 48)


def test_sglang_does_not_hide_its_host_time_for_a_hybrid() -> None:
    """SGLang's MambaRadixCache (no_buffer, its default for hybrid linear-attention models)
    turns the overlap scheduler off (sgl-project/sglang docs/basic_usage/qwen3.md): the 1.5 ms
    a step of host time is added to a hybrid's step, and hidden for a transformer's."""
    sglang = find_engine("sglang")
    hybrid = find_model("qwen3-next-80b-a3b")
    transformer = dataclasses.replace(hybrid, linear_layers=0)
    assert sglang.overlaps_for(transformer) and not sglang.overlaps_for(hybrid)
    assert find_engine("vllm").overlaps_for(hybrid)
    kw = dict(tp=2, pp=1, batch=1, prompt_tokens=512, output_tokens=256)
    est = estimate_inference(hybrid, count_params(hybrid), find_gpu("b200"), NVLINK, sglang, **kw)  # type: ignore[arg-type]
    assert est.host_step_hidden_s == 0.0
    assert any("turns that overlap off" in a for a in est.assumptions)


def test_a_hybrid_counts_its_linear_layers_kernels() -> None:
    """Qwen3-Next on an engine whose kernels were read: three more kernels in each of its 36
    linear layers, the query/key norms in its 12 softmax layers only."""
    from fabriclens.model.inference import (
        LINEAR_EXTRA_KERNELS,
        MOE_EXTRA_KERNELS,
        QK_NORM_KERNELS,
        SHARED_EXPERT_KERNELS,
        extra_kernels,
    )

    spec = find_model("qwen3-next-80b-a3b")
    moe = 48 * (MOE_EXTRA_KERNELS + SHARED_EXPERT_KERNELS)
    assert (
        extra_kernels(spec)
        == moe + 36 * LINEAR_EXTRA_KERNELS["gated_deltanet"] + 12 * QK_NORM_KERNELS
    )


def test_granite_mamba2_caches_match_llama_cpp_and_its_attention_layers() -> None:
    """Granite-4.0-H-Small: the KV cache in its 4 attention layers, 2 x 8 KV heads of 128 at 2
    bytes, 16,384 bytes a token (as a public note on its config works it out); each Mamba-2 layer
    a state of ssm_d_state x ssm_d_inner = 128 x 8,192 and a convolution of (4 - 1) x (8,192 +
    2 x 1 x 128), llama.cpp's n_embd_s and n_embd_r (src/llama-hparams.cpp). Exact."""
    spec = find_model(str(HF / "granite-4.0-h-small.json"))
    assert (spec.linear_kind, spec.linear_layers, spec.shared_experts) == ("mamba2", 36, 2)
    assert kv_bytes_per_token(spec, 2.0) == 16_384
    assert linear_state_elements(spec) == 128 * 8192 + 3 * (8192 + 2 * 128)
    assert count_params(spec) == count_params(find_model("granite4:small-h"))


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("intermediate_size", 1000, "whole number of experts"),  # 1,536 is not a multiple
        ("layer_types", ["mamba"] * 3, "layer_types"),
        ("mamba_d_head", 6.5, "mamba_d_head"),
    ],
)
def test_bad_granite_hybrid_fields_are_one_clear_error(
    tmp_path: Path, key: str, value: object, message: str
) -> None:
    path = _config(tmp_path, "granite-4.0-h-small.json", **{key: value})
    with pytest.raises(InputError, match=message):
        find_model(path)


def test_nemotron_h_blocks_plan_as_mixer_layers_some_without_an_mlp() -> None:
    """Nemotron-H-8B's 52 blocks (24 Mamba-2, 4 attention, 24 MLP): 28 layers, 4 without an MLP;
    8.1B parameters (the name: 8B); the KV cache in the 4 attention blocks, 2 x 8 x 128 values of
    2 bytes each, 16,384 bytes a token (as a public note on its config counts them); a Mamba-2
    state of ssm_state_size x (heads x head_dim) and a convolution of (4 - 1) x (8,192 + 2 x 8 x
    128), llama.cpp's n_embd_s and n_embd_r. Under tensor parallelism a token's forward runs one
    all-reduce per block: 52, not 2 x 28."""
    spec = find_model(str(HF / "nemotron-h-8b-base-8k.json"))
    assert (spec.layers, spec.linear_layers, spec.mlp_free_layers) == (28, 24, 4)
    assert round(count_params(spec).total / 1e9) == 8
    assert kv_bytes_per_token(spec, 2.0) == 16_384
    assert linear_state_elements(spec) == 128 * 8192 + 3 * (8192 + 2 * 8 * 128)
    est = estimate_inference(spec, count_params(spec), H100, NVLINK, find_engine("vllm"),
                             tp=2, pp=1, batch=1, prompt_tokens=128, output_tokens=128)  # fmt: skip
    assert [c.count_per_token for c in est.comm if c.op == "all_reduce"] == [52]


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-MX", "hybrid_override_pattern"),
        ("M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-E-", "only mixers"),
        ("M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M---------", "no more MLPs than mixers"),
        ("MM", "hybrid_override_pattern"),
    ],
)
def test_bad_nemotron_h_patterns_are_one_clear_error(
    tmp_path: Path, pattern: str, message: str
) -> None:
    path = _config(tmp_path, "nemotron-h-8b-base-8k.json", hybrid_override_pattern=pattern)
    with pytest.raises(InputError, match=message):
        find_model(path)
