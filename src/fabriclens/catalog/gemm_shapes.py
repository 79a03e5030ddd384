"""Measured GEMM throughput by shape, per GPU architecture.

A GPU's ``matmul_efficiency`` is the best rate any GEMM reaches on it (MAMF: large, square,
aligned shapes). A transformer layer's GEMMs are often smaller or thinner than that: a 2,048-wide
model's projections, a tensor-parallel shard, a micro-batch of a few thousand tokens, an expert
that receives a few hundred. This table says how far each shape falls below the best one.

Data (``data/gemm_shapes.csv``): XLA's default matmul performance table
(``xla/service/gpu/model/matmul_interpolator_data.h``, OpenXLA, read from the ROCm/xla mirror;
the commit is in the CSV's header): GEMM throughput measured on H100 (sm_90), B200 (sm_100) and
MI300X (gfx942) for every m, n, k in 256..4096 (powers of two, batch 1), BF16 and FP8 (e4m3 x
e4m3 -> BF16). There is no Ampere table. Stored as measured; each precision's grid is used as a
share of its best entry (the 4096^3 GEMM), so the catalog's own ``matmul_efficiency`` stays the
rate of the largest shapes and only the fall-off with shape comes from here.
"""

from __future__ import annotations

import csv
import functools
import math
from dataclasses import dataclass
from pathlib import Path

from fabriclens.catalog.schema import GEMM_SHAPE_TABLES

DATA = Path(__file__).resolve().parent / "data" / "gemm_shapes.csv"
__all__ = ["GEMM_SHAPE_TABLES", "GemmShapeTable", "gemm_shape_table"]


@dataclass(frozen=True, slots=True)
class GemmShapeTable:
    """Throughput on a grid of log2 m, n, k; each precision as a share of its best entry."""

    key: str
    log2_dims: tuple[int, ...]  # the grid's exponents, the same for m, n and k
    relative: dict[str, tuple[float, ...]]  # precision -> flat [m][n][k] grid, best entry = 1


@functools.cache
def gemm_shape_table(key: str) -> GemmShapeTable:
    """The table of one architecture (``sm_90``: Hopper)."""
    grids: dict[str, dict[tuple[int, int, int], float]] = {"bf16": {}, "fp8": {}}
    with DATA.open(encoding="utf-8") as f:
        for row in csv.DictReader(line for line in f if not line.startswith("#")):
            if row["table"] != key:
                continue
            dims = (int(row["m"]), int(row["n"]), int(row["k"]))
            for precision in grids:
                if row[f"{precision}_flops"]:
                    grids[precision][dims] = float(row[f"{precision}_flops"])
    if not grids["bf16"]:
        raise KeyError(key)
    exps = sorted({int(math.log2(d)) for shape in grids["bf16"] for d in shape})
    full = [(2**a, 2**b, 2**c) for a in exps for b in exps for c in exps]
    relative: dict[str, tuple[float, ...]] = {}
    for precision, grid in grids.items():
        if any(shape not in grid for shape in full):
            continue  # an incomplete grid is not interpolated
        best = max(grid.values())
        relative[precision] = tuple(grid[shape] / best for shape in full)
    return GemmShapeTable(key, tuple(exps), relative)
