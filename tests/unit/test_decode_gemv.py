"""The rate a decode step streams its weights at, from measured GEMVs.

Source: NVIDIA's ai-dynamo/aiconfigurator GEMM tables (vLLM's BF16 linear at batch 1 in a CUDA
graph, six weight copies timed back to back; catalog/data/decode_gemv.csv names the files). A
GEMV of b weight bytes takes a fixed latency plus b over a streaming rate; gpus.toml's
decode_bw_efficiency must be that rate over the GPU's peak bandwidth (least squares of latency on
(1, bytes) over each GPU's rows), and the line must follow the measurements."""

from __future__ import annotations

import csv
from collections import defaultdict

import numpy as np
import pytest

from fabriclens.catalog import find_gpu
from fabriclens.catalog.gemm_shapes import DATA as GEMM_SHAPES


def _rows() -> dict[str, list[tuple[float, float]]]:
    """(weight bytes, latency in seconds) of each measured GEMV, by GPU."""
    by_gpu: dict[str, list[tuple[float, float]]] = defaultdict(list)
    with (GEMM_SHAPES.parent / "decode_gemv.csv").open(encoding="utf-8") as fh:
        for r in csv.DictReader(line for line in fh if not line.startswith("#")):
            by_gpu[r["gpu"]].append(
                (int(r["n"]) * int(r["k"]) * 2.0, float(r["latency_us"]) * 1e-6)
            )
    return by_gpu


def _fit(points: list[tuple[float, float]]) -> tuple[float, float]:
    """(fixed latency s, streaming rate bytes/s) of the least-squares line."""
    b = np.array([p[0] for p in points])
    t = np.array([p[1] for p in points])
    (fixed, per_byte), *_ = np.linalg.lstsq(np.vstack([np.ones_like(b), b]).T, t, rcond=None)
    return float(fixed), 1.0 / float(per_byte)


def test_each_measured_gpus_decode_efficiency_is_the_fitted_streaming_rate() -> None:
    """Nine GPUs, 224-255 GEMVs each (n and k 1,024-65,536): A100 0.80, H100 0.86, H200 0.835,
    B200 0.785, GB200 0.81, L40S 0.85, B300 0.825, GB300 0.815, RTX PRO 6000 Blackwell 0.85 of the
    spec bandwidth, each within 0.005 of the fit; the fixed part is 2.5-8.8 us a kernel."""
    rows = _rows()
    assert len(rows) == 9 and all(224 <= len(v) <= 255 for v in rows.values())
    for name, points in rows.items():
        gpu = find_gpu(name)
        fixed, rate = _fit(points)
        assert gpu.decode_bw_efficiency == pytest.approx(rate / gpu.hbm_bw_bytes_per_s, abs=0.005)
        assert gpu.decode_stream_efficiency == gpu.decode_bw_efficiency
        assert "decode_gemv.csv" in gpu.decode_bw_efficiency_source
        assert 2e-6 <= fixed <= 9e-6, name


def test_the_line_follows_the_measured_gemvs() -> None:
    """Fixed latency plus bytes over the rate: within 9% of the median GEMV on every GPU."""
    for name, points in _rows().items():
        fixed, rate = _fit(points)
        errors = [abs((fixed + b / rate) / t - 1) for b, t in points]
        assert np.median(errors) < 0.09, name


def test_a_gpu_without_measurements_streams_at_its_memory_efficiency() -> None:
    """An unmeasured GPU (H100 PCIe) decodes at memory_bw_efficiency, the estimate."""
    gpu = find_gpu("h100-pcie")
    assert gpu.decode_bw_efficiency == 0
    assert gpu.decode_stream_efficiency == gpu.memory_bw_efficiency


def test_a_card_on_a_measured_die_takes_that_dies_rate() -> None:
    """The GeForce and workstation cards built on a measured GPU's die and memory controller
    take its rate, and say so: AD102 (RTX 4090, RTX 6000 Ada, L40) the L40S's, GB202 (RTX 5090)
    the RTX PRO 6000 Blackwell's."""
    for card, measured in (("rtx-4090", "l40s"), ("rtx-6000-ada", "l40s"), ("l40", "l40s"),
                           ("rtx-5090", "rtx-pro-6000-blackwell")):  # fmt: skip
        gpu, sibling = find_gpu(card), find_gpu(measured)
        assert gpu.decode_bw_efficiency == sibling.decode_bw_efficiency
        assert f"as measured on the {measured}" in gpu.decode_bw_efficiency_source
