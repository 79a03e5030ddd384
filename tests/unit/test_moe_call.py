"""A fused routed-expert call's latency at batch 1, fitted to measured calls.

Source: NVIDIA's ai-dynamo/aiconfigurator kernel tables (SGLang's Triton fused_moe in a CUDA graph,
B200, H100 and H200; catalog/data/moe_kernels.csv names the files). The model charges a call its
experts' weight read at the GPU's streaming rate plus a fixed latency that grows with the width
its gate-up GEMM reads and the routed experts a token: the constants in model/inference.py must
be the least-squares fit to those measurements, and the fit must follow them."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from fabriclens.catalog import find_engine, find_gpu, find_model
from fabriclens.catalog.gemm_shapes import DATA as GEMM_SHAPES
from fabriclens.model.inference import (
    MOE_CALL_BASE_S,
    MOE_CALL_KERNELS,
    MOE_CALL_PER_1024_WIDTH_S,
    MOE_CALL_PER_EXPERT_S,
    engine_overhead_s,
    moe_call_fixed_s,
    moe_call_latency_s,
)

WEIGHT_BYTES = {"bfloat16": 2.0, "fp8_block": 1.0}


def _calls() -> list[dict[str, str]]:
    with (GEMM_SHAPES.parent / "moe_kernels.csv").open(encoding="utf-8") as fh:
        return list(csv.DictReader(line for line in fh if not line.startswith("#")))


def _roofline_us(row: dict[str, str]) -> float:
    """The k experts' shard of weights (gate, up and down) read at the GPU's streaming rate."""
    gpu = find_gpu(row["gpu"])
    weights = (
        int(row["topk"]) * 3 * int(row["hidden"]) * int(row["inter"]) / int(row["tp"])
        * WEIGHT_BYTES[row["dtype"]]
    )  # fmt: skip
    return weights / (gpu.hbm_bw_bytes_per_s * gpu.decode_stream_efficiency) * 1e6


def test_the_constants_are_the_fit_to_the_measured_calls() -> None:
    """159 calls: three GPUs, BF16 and block FP8, tensor parallel 2-8, hidden 2,048-7,168, 6-22
    experts a token. Least squares of (measured - read) on (1, hidden / 1024, top-k); the
    catalog's constants to 0.05 us."""
    rows = _calls()
    assert len(rows) == 159 and {r["gpu"] for r in rows} == {"b200", "h100-sxm", "h200"}
    excess = np.array([float(r["latency_us"]) - _roofline_us(r) for r in rows])
    x = np.array([[1.0, int(r["hidden"]) / 1024, int(r["topk"])] for r in rows])
    fit, *_ = np.linalg.lstsq(x, excess, rcond=None)
    given = np.array([MOE_CALL_BASE_S, MOE_CALL_PER_1024_WIDTH_S, MOE_CALL_PER_EXPERT_S]) * 1e6
    assert fit == pytest.approx(given, abs=0.05)


def test_the_fit_follows_the_calls() -> None:
    """Read plus the fixed latency: within 7.6% of the median call, 16% at the 90th percentile."""
    errors = []
    for r in _calls():
        spec = find_model("qwen3-30b-a3b")
        shaped = spec.__class__(**{**spec.__dict__, "hidden": int(r["hidden"]),
                                   "experts_per_token": int(r["topk"])})  # fmt: skip
        planned = _roofline_us(r) + moe_call_fixed_s(shaped) * 1e6
        errors.append(abs(planned / float(r["latency_us"]) - 1))
    assert np.median(errors) < 0.076 and np.quantile(errors, 0.9) < 0.16


def test_a_call_adds_what_its_kernel_gaps_do_not_cover() -> None:
    """SGLang's six kernel gaps of 3 us are already counted: Qwen3-30B-A3B (hidden 2,048, 8 a
    token) adds 8.6 us a call, DeepSeek-V3 (7,168, 8) 32.6, whose 58 MoE layers add that to its
    step; a LatentMoE's calls read their latent, not the hidden size."""
    sglang = find_engine("sglang")
    gap = sglang.layer_overhead_s / 10
    qwen, ds = find_model("qwen3-30b-a3b"), find_model("deepseek-v3")
    assert moe_call_latency_s(qwen, gap) == pytest.approx(
        26.6e-6 - MOE_CALL_KERNELS * gap, abs=1e-7
    )
    assert moe_call_latency_s(ds, gap) == pytest.approx(50.6e-6 - MOE_CALL_KERNELS * gap, abs=1e-7)
    plain = ds.__class__(**{**ds.__dict__, "experts": 0, "experts_per_token": 0, "moe_ffn": 0,
                            "shared_experts": 0, "first_dense_layers": 0, "expert_groups": 0,
                            "expert_groups_per_token": 0})  # fmt: skip
    assert engine_overhead_s(sglang, ds) - engine_overhead_s(sglang, plain) == pytest.approx(
        58 * (7 * gap + moe_call_latency_s(ds, gap))
    )
    nemotron = find_model("nemotron-3-super-120b-a12b")
    wide = nemotron.__class__(**{**nemotron.__dict__, "moe_latent": 0})
    assert moe_call_fixed_s(wide) - moe_call_fixed_s(nemotron) == pytest.approx(
        MOE_CALL_PER_1024_WIDTH_S * (4096 - 1024) / 1024
    )


def test_a_balanced_expert_parallel_call_takes_the_tensor_parallel_calls_time() -> None:
    """A serving plan with --ep keeps the fused call's fixed latency as fitted to tensor-parallel
    calls and charges only what differs, the busiest rank's experts. Measured: 159 calls of the
    same shapes and bytes per rank (k/ranks whole experts against a 1/ranks slice of all k, at
    2, 4 and 8 ranks; catalog/data/moe_kernels_ep.csv) take 0.95x the tensor-parallel call's time
    at the median, 0.80-1.15x for 80% of them; B200's block-FP8 calls are the fastest (0.79x at
    their median), so there the plan is slower than the kernels. Each pair's tensor-parallel call
    is the one moe_kernels.csv holds (within the 5% its two measurements differ by where a
    shape was measured twice)."""
    with (GEMM_SHAPES.parent / "moe_kernels_ep.csv").open(encoding="utf-8") as fh:
        pairs = list(csv.DictReader(line for line in fh if not line.startswith("#")))
    assert len(pairs) == 159 and {int(p["ranks"]) for p in pairs} == {2, 4, 8}
    key = ("gpu", "dtype", "hidden", "inter", "topk", "experts")
    fitted = {(*(r[k] for k in key), r["tp"]): float(r["latency_us"]) for r in _calls()}
    held = [fitted.get((*(p[k] for k in key), p["ranks"])) for p in pairs]
    assert all(h is not None for h in held)
    # the 384-expert shapes were measured twice, up to 5% apart: this file takes their median
    assert all(h == pytest.approx(float(p["tp_latency_us"]), rel=0.05)
               for h, p in zip(held, pairs, strict=True))  # fmt: skip
    ratio = np.array([float(p["ep_latency_us"]) / float(p["tp_latency_us"]) for p in pairs])
    assert 0.9 <= np.median(ratio) <= 1.0
    assert np.quantile(ratio, 0.1) >= 0.75 and np.quantile(ratio, 0.9) <= 1.2
    b200_fp8 = [r for r, p in zip(ratio, pairs, strict=True)
                if p["gpu"] == "b200" and p["dtype"] == "fp8_block"]  # fmt: skip
    assert np.median(b200_fp8) == pytest.approx(0.79, abs=0.01)
