"""Memory ledger: exact cases and invariants (ZeRO, TP, recompute, LoRA, inference)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from fabriclens.catalog import find_gpu, find_model
from fabriclens.model.arch import count_params
from fabriclens.model.layout import TrainConfig
from fabriclens.model.memory import (
    activation_bytes_per_layer,
    adapter_params,
    inference_memory,
    training_memory,
)
from fabriclens.plan.fit import min_gpus_inference, min_gpus_training

SPEC = find_model("llama-3.1-70b")
COUNTS = count_params(SPEC)
H100 = find_gpu("h100-sxm")
BASE = TrainConfig(
    gpus=64, gpus_per_node=8, tp=8, pp=1, dp=8, zero=3, seq_len=4096, global_batch=64
)


def _total(cfg: TrainConfig) -> float:
    return training_memory(SPEC, COUNTS, cfg, H100.memory_bytes).total_per_gpu_bytes


def test_zero_stages_shard_as_the_zero_paper_says() -> None:
    """Rajbhandari et al. 2020, Fig. 1: 2+2+12 bytes/param; stage k shards the first k."""
    comps = {
        z: training_memory(SPEC, COUNTS, replace(BASE, zero=z), H100.memory_bytes).per_gpu_bytes
        for z in range(4)
    }
    params_gpu = comps[0]["weights"] / 2
    assert comps[0]["optimizer"] == pytest.approx(12 * params_gpu)
    assert comps[1]["optimizer"] == pytest.approx(12 * params_gpu / 8)
    assert comps[2]["gradients"] == pytest.approx(2 * params_gpu / 8)
    assert comps[3]["weights"] == pytest.approx(2 * params_gpu / 8)


@pytest.mark.parametrize("dp_pair", [(2, 4), (4, 8), (8, 16), (16, 64)])
def test_zero3_memory_falls_as_dp_grows(dp_pair: tuple[int, int]) -> None:
    small, large = (replace(BASE, gpus=8 * d, dp=d) for d in dp_pair)
    assert _total(large) < _total(small)


def test_tensor_parallel_divides_weights() -> None:
    one = training_memory(SPEC, COUNTS, replace(BASE, tp=1, dp=64, zero=0), H100.memory_bytes)
    eight = training_memory(SPEC, COUNTS, replace(BASE, tp=8, dp=8, zero=0), H100.memory_bytes)
    assert eight.per_gpu_bytes["weights"] == pytest.approx(
        one.per_gpu_bytes["weights"] / 8, rel=1e-9
    )


def test_recompute_orders_activation_memory() -> None:
    cfg = replace(BASE, flash_attention=False, dropout=True)
    none, sel, full = (
        activation_bytes_per_layer(SPEC, cfg, r) for r in ("none", "selective", "full")
    )
    assert full < sel < none


def test_korthikanti_activation_formula_for_gpt() -> None:
    """Korthikanti et al. 2022 eq. (2): sbh(10 + 24/t + 5as/(ht)) bytes per layer, no SP."""
    from fabriclens.catalog.schema import ModelSpec

    h, a, s, t = 12288, 96, 2048, 8
    gpt = ModelSpec(name="gpt3", source="Korthikanti", layers=96, hidden=h, heads=a, kv_heads=a,
                    ffn=4 * h, vocab=51200, mlp="gelu")  # fmt: skip
    cfg = TrainConfig(
        gpus=8, gpus_per_node=8, tp=t, seq_len=s, micro_batch=1, flash_attention=False, dropout=True
    )
    expected = s * h * (10 + 24 / t + 5 * a * s / (h * t))
    assert activation_bytes_per_layer(gpt, cfg, "none") == pytest.approx(expected, rel=1e-9)


def test_lora_and_qlora_need_less_than_full_finetune() -> None:
    single = TrainConfig(
        gpus=1,
        gpus_per_node=1,
        tp=1,
        dp=1,
        zero=0,
        seq_len=2048,
        global_batch=1,
        workload="full-finetune",
    )
    spec = find_model("llama-3.1-8b")
    counts = count_params(spec)
    full = training_memory(spec, counts, single, H100.memory_bytes).total_per_gpu_bytes
    lora = training_memory(
        spec, counts, replace(single, workload="lora"), H100.memory_bytes
    ).total_per_gpu_bytes
    qlora = training_memory(
        spec, counts, replace(single, workload="lora", lora_base_bits=4), H100.memory_bytes
    )
    assert qlora.total_per_gpu_bytes < lora < full
    # QLoRA's frozen base: 4.127 bits per parameter (Dettmers et al. 2023) for the linear layers;
    # bitsandbytes leaves the embedding and LM head in 16 bit: ~5.3 GiB for Llama-3.1-8B
    ends = counts.embedding + counts.lm_head
    expected = (counts.total - ends) * 4.127 / 8 + 2 * ends
    assert qlora.per_gpu_bytes["weights"] == pytest.approx(expected, rel=1e-6)
    assert qlora.per_gpu_bytes["weights"] / 2**30 == pytest.approx(5.3, abs=0.1)


def test_fsdp_shards_the_frozen_base_of_lora_and_qlora() -> None:
    """FSDP+QLoRA (Answer.AI 2024: Llama-2-70B fine-tuned on two 24 GB cards): ZeRO-3 divides the
    frozen base over the data-parallel ranks; without it every rank holds all of it."""
    spec = find_model("llama-2-70b")
    counts = count_params(spec)
    base = TrainConfig(gpus=2, gpus_per_node=2, tp=1, dp=2, zero=0, seq_len=2048, global_batch=2,
                       micro_batch=1, workload="lora", lora_base_bits=4, recompute="full")  # fmt: skip
    whole = training_memory(spec, counts, base, 24e9).per_gpu_bytes["weights"]
    sharded = training_memory(spec, counts, replace(base, zero=3), 24e9).per_gpu_bytes["weights"]
    assert sharded == pytest.approx(whole / 2, rel=1e-9)
    assert sharded < 20e9 < whole  # fits a 24 GB card only when sharded


def test_lora_on_a_mixture_of_experts_trains_every_expert() -> None:
    """PEFT matches every expert's projections: Mixtral-8x7B rank 16 has adapters on all 8
    experts of each layer (first principles: r x (in + out) per matrix)."""
    spec = find_model("mixtral-8x7b")
    r, h, f = 16, spec.hidden, spec.moe_ffn or spec.ffn
    hd = spec.hidden // spec.heads
    attn = r * ((h + spec.heads * hd) * 2 + (h + spec.kv_heads * hd) * 2)
    expected = spec.layers * (attn + spec.experts * 3 * r * (h + f))
    assert adapter_params(spec, r) == pytest.approx(expected, rel=1e-9)


def test_inference_fit_and_minimum_gpus() -> None:
    """70B in bf16 (141 GB of weights) cannot fit one 80 GB H100; two hold it."""
    kwargs = {"batch": 1, "context_tokens": 4096, "precision": "bf16", "kv_bytes_per_value": 2.0}
    assert min_gpus_inference(SPEC, COUNTS, H100, **kwargs) == 2  # type: ignore[arg-type]
    one = inference_memory(SPEC, COUNTS, tp=1, pp=1, batch=1, context_tokens=4096, prefill_chunk_tokens=4096,
                           weight_precision="bf16", kv_bytes_per_value=2.0, capacity_bytes=H100.memory_bytes)  # fmt: skip
    assert not one.fits
    int4 = dict(kwargs, precision="int4")
    assert min_gpus_inference(SPEC, COUNTS, H100, **int4) == 1  # type: ignore[arg-type]


def test_training_minimum_gpus_respects_the_16_bytes_per_parameter_floor() -> None:
    n = min_gpus_training(SPEC, COUNTS, H100, BASE, 8)
    assert n is not None
    assert n * H100.memory_bytes >= 16 * COUNTS.total
    assert not training_memory(
        SPEC, COUNTS, replace(BASE, gpus=n // 2, dp=max(1, n // 16)), H100.memory_bytes
    ).fits
