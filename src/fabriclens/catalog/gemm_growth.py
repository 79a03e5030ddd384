"""How a decode step's dense GEMMs slow down as its tokens grow, measured per GPU.

At one token a decode GEMM streams its weights (the catalog's decode_bw_efficiency). With more
tokens the same weights feed more rows: in a roofline the time stays flat until the math catches
up with the stream, then grows with the rows. Measured GEMMs do not: tile and wave quantisation
and kernels tuned for either end make 128-256 rows cost 1.01-1.4x a row's time on Hopper,
Blackwell and Ada and up to 1.7x on an A100, where the roofline says 1.0 (or a little more).

Data (``data/decode_gemm_growth.csv``): NVIDIA's ai-dynamo/aiconfigurator vLLM GEMM collector
(the files decode_gemv.csv's one-row times come from), BF16: for each GPU and row count m, the
median over weight shapes of latency(m) / latency(1). Between measured m it is interpolated
linearly; beyond the largest (1,024 rows, a compute-bound step) there is none.
"""

from __future__ import annotations

import bisect
import csv
import functools
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data" / "decode_gemm_growth.csv"
__all__ = ["gemm_growth", "gemm_growth_gpus"]


@functools.cache
def _curves() -> dict[str, tuple[tuple[int, ...], tuple[float, ...]]]:
    rows: dict[str, list[tuple[int, float]]] = {}
    with DATA.open(encoding="utf-8") as f:
        for row in csv.DictReader(line for line in f if not line.startswith("#")):
            rows.setdefault(row["gpu"], []).append((int(row["m"]), float(row["growth"])))
    return {
        gpu: (tuple(m for m, _ in sorted(pts)), tuple(g for _, g in sorted(pts)))
        for gpu, pts in rows.items()
    }


def gemm_growth_gpus() -> tuple[str, ...]:
    """The catalog GPUs with a measured curve."""
    return tuple(sorted(_curves()))


def gemm_growth(gpu: str, rows: float) -> float | None:
    """A BF16 decode GEMM's time at ``rows`` tokens over its time at one, as measured on ``gpu``
    (a catalog name); None where the GPU has no curve or the rows lie beyond it."""
    curve = _curves().get(gpu)
    if curve is None:
        return None
    ms, gs = curve
    if rows <= ms[0]:
        return gs[0]
    if rows > ms[-1]:
        return None
    i = bisect.bisect_left(ms, rows)
    if ms[i] == rows:
        return gs[i]
    m0, m1, g0, g1 = ms[i - 1], ms[i], gs[i - 1], gs[i]
    return g0 + (g1 - g0) * (rows - m0) / (m1 - m0)
