"""Kernel rates the catalog takes from published measurements: each is the measurement over the
catalog's peak.

Sources (each quoted in the GPU's catalog entry):
- FP8 GEMM, MI300X: AMD rocm-blogs "Measuring Max-Achievable FLOPs - Part 2" (hipBLASLt,
  1,273 TFLOPS); MI355X: "FP8 GEMM Optimization on AMD CDNA4 Architecture" (hipBLASLt at
  M = N = K = 8192, 3,130 TFLOPS).
- Streaming, MI300X: "Deep dive into the MI300 compute and memory partition modes" (a copy kernel
  at 4,017 GB/s in SPX/NPS1).
- Fused attention: ROCm/aiter op_tests/cpp/mha/README.md, batch 8, 64 query / 8 KV heads of 128,
  4,096 tokens, causal: MI300X forward 509.255 and backward 402.18 (FP32 dQ atomics), MI355X
  forward 1190.295 and backward 972.25 (BF16 dQ atomics).
- FlashAttention-2, RTX 4090: apache/tvm tl_doc/flash_perf.md (flash_attn_func, 2k tokens, head
  dim 128, causal): forward 151.19, backward 99.23; RTX 3090 and RTX A6000: thu-ml/SageAttention's
  charts (SDPA flash backend, 4k tokens, causal): forward 62 and 94 (FP32-accumulate peaks 71 and
  154.8); RTX 5090: the same repository's SageAttention2++ chart, forward 192 (peak 209.5).
Tolerance: 0.005 of peak, the catalog's two-decimal rounding.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from fabriclens.catalog import find_gpu
from fabriclens.catalog.gemm_shapes import DATA as GEMM_SHAPES

GPUS_DATA = GEMM_SHAPES.parent

TFLOPS = 1e12


@pytest.mark.parametrize(
    ("gpu", "field", "measured", "peak_field", "phrase"),
    [
        ("mi300x", "fp8_matmul_efficiency", 1273 * TFLOPS, "fp8_flops_per_s", "Part 2"),
        ("mi355x", "fp8_matmul_efficiency", 3130 * TFLOPS, "fp8_flops_per_s", "CDNA4"),
        ("mi300x", "fused_attention_efficiency", 509.255 * TFLOPS, "bf16_flops_per_s", "aiter"),
        ("mi300x", "fused_attention_bwd_efficiency", 402.18 * TFLOPS, "bf16_flops_per_s", "aiter"),
        ("mi355x", "fused_attention_efficiency", 1190.295 * TFLOPS, "bf16_flops_per_s", "aiter"),
        ("mi355x", "fused_attention_bwd_efficiency", 972.25 * TFLOPS, "bf16_flops_per_s", "aiter"),
        ("mi300x", "memory_bw_efficiency", 4017e9, "hbm_bw_bytes_per_s", ""),
        ("rtx-4090", "attention_efficiency", 151.19 * TFLOPS, "bf16_flops_per_s", "tvm"),
        ("rtx-4090", "attention_bwd_efficiency", 99.23 * TFLOPS, "bf16_flops_per_s", "tvm"),
        ("rtx-3090", "attention_efficiency", 62 * TFLOPS, "bf16_flops_per_s", "SageAttention"),
        ("rtx-a6000", "attention_efficiency", 94 * TFLOPS, "bf16_flops_per_s", "SageAttention"),
        ("rtx-5090", "attention_efficiency", 192 * TFLOPS, "bf16_flops_per_s", "SageAttention"),
    ],
)
def test_an_amd_rate_is_the_measurement_over_the_peak(
    gpu: str, field: str, measured: float, peak_field: str, phrase: str
) -> None:
    spec = find_gpu(gpu)
    assert getattr(spec, field) == pytest.approx(measured / getattr(spec, peak_field), abs=0.005)
    source_field = {
        "attention_efficiency": "attention_efficiency_source",
        "attention_bwd_efficiency": "attention_bwd_efficiency_source",
        "fp8_matmul_efficiency": "fp8_matmul_efficiency_source",
        "fused_attention_efficiency": "fused_attention_efficiency_source",
        "fused_attention_bwd_efficiency": "fused_attention_efficiency_source",
    }.get(field)
    if source_field:
        source = getattr(spec, source_field)
        assert phrase in source and "estimate" not in source


def test_the_siblings_take_the_measured_rates_and_say_they_are_estimates() -> None:
    """MI325X (CDNA 3, as MI300X) and MI350X (CDNA 4, as MI355X) have no column in AITER's table."""
    for sibling, measured in (("mi325x", "mi300x"), ("mi350x", "mi355x")):
        a, b = find_gpu(sibling), find_gpu(measured)
        assert a.attention_rates("fused")[:2] == b.attention_rates("fused")[:2]
        assert a.fused_attention_efficiency_source.startswith("estimate")


def test_megatron_runs_the_fused_rates_and_eager_pytorch_the_flashattention_estimate() -> None:
    """Transformer Engine's fused attention is what the fused kernel names; PyTorch's SDPA on ROCm
    keeps the FlashAttention-2 estimate."""
    gpu = find_gpu("mi355x")
    assert gpu.attention_rates("fused")[:2] == (0.47, 0.39)
    assert gpu.attention_rates("flash")[:2] == (0.35, 0.35)


def test_the_other_geforce_ada_cards_take_the_4090s_attention_as_an_estimate() -> None:
    """FlashAttention-2 nearly saturates a GeForce Ada card's half-rate FP32 accumulation; the
    4060 Ti, 4070, 4070 Ti and 4080 have no published figure of their own."""
    measured = find_gpu("rtx-4090")
    for card in ("rtx-4060-ti-16gb", "rtx-4070", "rtx-4070-ti", "rtx-4080"):
        gpu = find_gpu(card)
        assert gpu.attention_rates("flash")[:2] == measured.attention_rates("flash")[:2]
        assert gpu.attention_efficiency_source.startswith("estimate: the RTX 4090's measured")


def _best_gemms() -> list[dict[str, str]]:
    path = Path(GPUS_DATA) / "gemm_best.csv"
    with path.open(encoding="utf-8") as fh:
        return list(csv.DictReader(line for line in fh if not line.startswith("#")))


def test_the_fastest_measured_gemm_sets_the_rate_where_the_catalog_cites_it() -> None:
    """NVIDIA's aiconfigurator TensorRT-LLM GEMM data (catalog/data/gemm_best.csv): where a GPU's
    matmul_efficiency or fp8_matmul_efficiency cites it (GB200, GB300, L40S FP8, RTX PRO 6000
    Blackwell, B200 FP8) the rate is the fastest GEMM over the peak, within 0.005; where the
    catalog has a measurement of its own (stas00's MAMF for H100, H200, B200 and B300 BF16, B300's
    FP8 MAMF, an H800 FP8 run for H100/H200) the two agree within 10%."""
    rows = _best_gemms()
    assert len(rows) == 16
    cited = 0
    for r in rows:
        gpu = find_gpu(r["gpu"])
        flops = 2 * int(r["m"]) * int(r["n"]) * int(r["k"]) / (float(r["latency_ms"]) * 1e-3)
        fp8 = r["gemm_dtype"] == "fp8"
        rate = gpu.fp8_matmul_efficiency if fp8 else gpu.matmul_efficiency
        source = gpu.fp8_matmul_efficiency_source if fp8 else gpu.matmul_efficiency_source
        peak = gpu.fp8_flops_per_s if fp8 else gpu.bf16_flops_per_s
        if "gemm_best.csv" in source:
            cited += 1
            assert rate == pytest.approx(flops / peak, abs=0.005), (r["gpu"], r["gemm_dtype"])
        else:
            assert rate == pytest.approx(flops / peak, rel=0.10), (r["gpu"], r["gemm_dtype"])
    assert cited == 8


def test_the_other_geforce_blackwell_cards_take_the_5090s_attention_as_an_estimate() -> None:
    """The RTX 5080 and 5060 Ti 16 GB have no published FlashAttention-2 figure of their own."""
    measured = find_gpu("rtx-5090")
    for card in ("rtx-5080", "rtx-5060-ti-16gb"):
        gpu = find_gpu(card)
        assert gpu.attention_rates("flash")[:2] == measured.attention_rates("flash")[:2]
        assert gpu.attention_efficiency_source.startswith("estimate: the RTX 5090's measured")
