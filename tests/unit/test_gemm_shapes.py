"""GEMMs run at their shape's measured rate (XLA's matmul_interpolator_data.h, catalog/data/
gemm_shapes.csv), not all at the best one (issue 13, item 5: "every GEMM shape runs at the best
achievable rate")."""

from __future__ import annotations

import csv
from dataclasses import replace

import pytest

from fabriclens.catalog import find_gpu, find_model, gpus
from fabriclens.catalog.gemm_shapes import DATA, GEMM_SHAPE_TABLES, gemm_shape_table
from fabriclens.catalog.load import find_link
from fabriclens.model.arch import count_params
from fabriclens.model.collectives import Fabric
from fabriclens.model.gemm import layer_gemms, layer_shape_shares, relative_rate
from fabriclens.model.layout import TrainConfig
from fabriclens.model.step import estimate_training_step


def _measured() -> dict[tuple[str, int, int, int], float]:
    with DATA.open(encoding="utf-8") as f:
        rows = csv.DictReader(line for line in f if not line.startswith("#"))
        return {(r["table"], int(r["m"]), int(r["n"]), int(r["k"])): float(r["bf16_flops"]) for r in rows}  # fmt: skip


def test_every_table_is_a_complete_grid_and_every_gpu_names_one() -> None:
    measured = _measured()
    for key in GEMM_SHAPE_TABLES:
        table = gemm_shape_table(key)
        assert table.log2_dims == (8, 9, 10, 11, 12)  # 256..4096
        assert len(table.relative["bf16"]) == 125 and max(table.relative["bf16"]) == 1.0
    named = {g.gemm_shapes for g in gpus() if g.gemm_shapes}
    assert named == set(GEMM_SHAPE_TABLES)
    assert find_gpu("h100").gemm_shapes == "sm_90" and find_gpu("h800").gemm_shapes == "sm_90"
    assert find_gpu("a100").gemm_shapes == ""  # XLA's table has no Ampere entry
    # H100, from the file: 4096^3 at 780 TFLOP/s, 2048^3 at 641, 1024^3 at 253
    h100 = {k[1:]: v for k, v in measured.items() if k[0] == "sm_90"}
    assert h100[(4096, 4096, 4096)] == pytest.approx(780.19e12, rel=1e-4)
    assert h100[(2048, 2048, 2048)] == pytest.approx(641.04e12, rel=1e-4)


def test_grid_points_are_the_measurements_and_between_them_it_interpolates() -> None:
    measured = _measured()
    table = gemm_shape_table("sm_90")
    best = max(v for k, v in measured.items() if k[0] == "sm_90")
    for shape in [(4096, 2048, 2048), (1024, 4096, 512), (256, 256, 4096)]:
        rate = relative_rate(table, "bf16", *shape)
        assert rate == pytest.approx(measured[("sm_90", *shape)] / best, rel=1e-12)
    low = relative_rate(table, "bf16", 2048, 2048, 2048)
    high = relative_rate(table, "bf16", 4096, 2048, 2048)
    mid = relative_rate(table, "bf16", 2048 * 2**0.5, 2048, 2048)
    assert min(low, high) < mid < max(low, high)
    # beyond the grid: the rate at its edge (as large as the best shapes)
    assert relative_rate(table, "bf16", 16384, 8192, 8192) == pytest.approx(1.0)


def test_small_and_sharded_layers_run_below_the_best_gemm_rate() -> None:
    h100, a100 = find_gpu("h100"), find_gpu("a100")
    small, big = find_model("llama-3.2-1b"), find_model("llama-3.1-70b")
    fwd_small = layer_shape_shares(h100, small, 4096.0, 1, 1, "bf16")[0]
    fwd_big = layer_shape_shares(h100, big, 4096.0, 1, 1, "bf16")[0]
    assert fwd_small < fwd_big <= 1.0
    assert fwd_small < 0.97  # 2,048-wide projections on 4,096 tokens: measured well below 4096^3
    # tensor parallelism shrinks each rank's GEMMs; FP8 GEMMs lose more at the same shape
    tp8 = layer_shape_shares(h100, big, 4096.0, 8, 1, "bf16")[0]
    assert tp8 < fwd_big
    assert layer_shape_shares(h100, big, 4096.0, 8, 1, "fp8")[0] < tp8
    assert layer_shape_shares(a100, small, 4096.0, 1, 1, "bf16") == (1.0, 1.0, 1.0)


def test_experts_get_the_tokens_routed_to_them() -> None:
    spec = find_model("mixtral-8x7b")
    gemms = layer_gemms(spec, 4096.0, 1, 2)
    # 8 experts over EP 2: each rank holds 4, each receives 4096 x top-2 / 4 tokens
    expert_ms = {shape[0] for shape, _ in gemms if shape[0] != 4096.0}
    assert expert_ms == {4096.0 * 2 / 4}
    flops = sum(m * n * k * c for (m, n, k), c in gemms)
    assert flops == pytest.approx(
        4096.0 * count_params(spec).layer_matmul_active / spec.layers, rel=0.01
    )


def test_the_step_pays_for_the_shapes() -> None:
    h100 = find_gpu("h100")
    spec = find_model("llama-3.2-1b")
    cfg = TrainConfig(gpus=1, gpus_per_node=1, seq_len=4096, global_batch=4)
    fabric = Fabric(find_link(h100.intra_link), None, 1, 1, find_link(h100.host_link))
    counts = count_params(spec)
    shaped = estimate_training_step(spec, counts, h100, fabric, cfg)
    flat = estimate_training_step(spec, counts, replace(h100, gemm_shapes=""), fabric, cfg)
    assert shaped.time_s > flat.time_s * 1.02
    assert any("GEMM-by-shape" in a for a in shaped.assumptions)
    assert any("no GEMM-by-shape table" in a for a in flat.assumptions)
