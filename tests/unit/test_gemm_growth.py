"""A decode step's dense BF16 GEMMs over many tokens take their measured growth over one token's
time (catalog/gemm_growth.py).

Source: NVIDIA's ai-dynamo/aiconfigurator vLLM GEMM collector (commit 095f58a51c4c), the same
files decode_gemv.csv's one-row times come from: on an A100, GEMMs of 128 rows take 1.20x, of
256 rows 1.73x their one-row time, where a roofline at the catalog's rates says 1.0 and 1.56.
Tolerances: the interpolation is exact; the step's change is the GEMMs' alone (1e-9)."""

from __future__ import annotations

import csv

import pytest

import fabriclens.model.inference as inference
from fabriclens.catalog import find_engine, find_gpu, find_link, find_model
from fabriclens.catalog.gemm_growth import DATA, gemm_growth, gemm_growth_gpus
from fabriclens.model.arch import count_params
from fabriclens.model.collectives import Fabric


def _rows(path):  # type: ignore[no-untyped-def]
    with path.open(encoding="utf-8") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def test_each_curve_is_a_catalog_gpu_measured_with_its_one_row_times() -> None:
    """Every curve starts at one row (growth 1) and comes from the vLLM release whose one-row
    times set the GPU's decode_bw_efficiency (decode_gemv.csv), so the two agree at one token."""
    gemv = {(r["gpu"], r["vllm"]) for r in _rows(DATA.parent / "decode_gemv.csv")}
    rows = _rows(DATA)
    assert len(gemm_growth_gpus()) >= 9
    for gpu in gemm_growth_gpus():
        find_gpu(gpu)  # a catalog name
        mine = [r for r in rows if r["gpu"] == gpu]
        assert {(gpu, r["version"]) for r in mine} <= gemv
        assert mine[0]["m"] == "1" and float(mine[0]["growth"]) == 1.0
        assert all(int(r["shapes"]) >= 20 for r in mine)
    assert gemm_growth("a100-sxm-80gb", 128) == pytest.approx(1.20, abs=0.01)
    assert gemm_growth("a100-sxm-80gb", 256) == pytest.approx(1.73, abs=0.01)


def test_growth_is_interpolated_inside_the_measured_rows_and_absent_outside() -> None:
    lo, hi = gemm_growth("h100-sxm", 128), gemm_growth("h100-sxm", 160)
    assert lo is not None and hi is not None
    assert gemm_growth("h100-sxm", 144) == pytest.approx((lo + hi) / 2, abs=1e-12)
    assert gemm_growth("h100-sxm", 1) == 1.0
    assert gemm_growth("h100-sxm", 5000) is None  # beyond the table: a compute-bound step
    assert gemm_growth("rtx-4090", 128) is None  # not measured


def _step(model: str, gpu: str, batch: int, precision: str = "bf16") -> inference.InferenceEstimate:
    spec, g = find_model(model), find_gpu(gpu)
    return inference.estimate_inference(
        spec, count_params(spec), g, Fabric(find_link(g.intra_link), None, 8),
        find_engine("vllm"), tp=1, pp=1, batch=batch, prompt_tokens=512, output_tokens=128,
        precision=precision,
    )  # fmt: skip


def test_a_dense_bf16_step_pays_the_measured_growth_of_its_gemms(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Llama-2-7B at 128 sequences on an A100: the roofline says memory-bound (its math is 0.78 of
    its weight stream), the measured GEMMs take 1.20x the one-token time; the step grows by the
    weights' stream time x 0.20 and says so. One sequence, int4 weights and a mixture-of-experts
    model are not touched."""
    gpu = find_gpu("a100-sxm-80gb")
    grown = _step("llama-2-7b", "a100-sxm-80gb", 128)
    with monkeypatch.context() as m:
        m.setattr(inference, "gemm_growth", lambda name, rows: None)
        flat = _step("llama-2-7b", "a100-sxm-80gb", 128)
        flat_one = _step("llama-2-7b", "a100-sxm-80gb", 1)
        flat_int4 = _step("llama-2-7b", "a100-sxm-80gb", 128, "int4")
        flat_moe = _step("mixtral-8x7b", "h100-sxm", 64)
    stream = gpu.hbm_bw_bytes_per_s * gpu.decode_stream_efficiency
    growth = gemm_growth("a100-sxm-80gb", 128)
    assert growth is not None
    assert grown.decode_step_s - flat.decode_step_s == pytest.approx(
        (growth - 1) * grown.weights_read_per_step_bytes / stream, rel=1e-9
    )
    assert any("decode_gemm_growth.csv" in a for a in grown.assumptions)
    assert not any("decode_gemm_growth.csv" in a for a in flat.assumptions)
    one = _step("llama-2-7b", "a100-sxm-80gb", 1)
    assert one.decode_step_s == flat_one.decode_step_s
    assert (
        _step("llama-2-7b", "a100-sxm-80gb", 128, "int4").decode_step_s == flat_int4.decode_step_s
    )
    assert _step("mixtral-8x7b", "h100-sxm", 64).decode_step_s == flat_moe.decode_step_s
