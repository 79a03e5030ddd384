"""Layers kept in host memory (model/offload.py): invariants from first principles."""

from __future__ import annotations

import dataclasses
import statistics

import pytest

from fabriclens.catalog import find_engine, find_gpu, find_host, find_link, find_model, hosts
from fabriclens.model.arch import count_params
from fabriclens.model.collectives import Fabric
from fabriclens.model.inference import estimate_inference
from fabriclens.model.offload import estimate_offload, place_layers
from reference import offload_cases

OLLAMA = find_engine("ollama")
Q4 = OLLAMA.bytes_per_weight("int4")


def _offload(model: str, gpu: str, gpus: int = 1, **kw):  # type: ignore[no-untyped-def]
    spec = find_model(model)
    g = find_gpu(gpu)
    args = {"gpus": gpus, "batch": 1, "prompt_tokens": 512, "output_tokens": 128,
            "weight_bytes_per_param": Q4, "kv_bytes_per_value": 2.0,
            "host_link_bytes_per_s": find_link(g.host_link).bw_bytes_per_s} | kw  # fmt: skip
    host = kw.pop("host", find_host("desktop-ddr5"))
    args.pop("host", None)
    engine = args.pop("engine", OLLAMA)
    return estimate_offload(spec, count_params(spec), g, engine, host, **args)


def test_whole_layers_fill_each_gpu() -> None:
    assert place_layers([10.0, 10.0], 3.0, 80) == 6  # 3 + 3: no layer straddles two GPUs
    assert place_layers([10.0, -1.0], 3.0, 80) == 3  # a GPU without room holds none
    assert place_layers([1000.0], 3.0, 80) == 80  # never more than the model has


def test_more_gpu_memory_holds_more_layers_and_runs_faster() -> None:
    small = _offload("llama-3.1-70b", "rtx-3060")
    large = _offload("llama-3.1-70b", "rtx-4090")
    two = _offload("llama-3.1-70b", "rtx-3060", gpus=2)
    assert 0 < small.gpu_layers < large.gpu_layers < 80
    assert two.gpu_layers == 2 * small.gpu_layers
    assert small.decode_step_s > two.decode_step_s > large.decode_step_s
    assert small.gpu_bytes_per_gpu <= find_gpu("rtx-3060").memory_bytes
    assert small.reported_layers == (small.gpu_layers, 81)  # Ollama's count: output layer too


def test_asking_for_the_split_that_fits_is_the_automatic_split() -> None:
    """--gpu-layers (llama.cpp's -ngl) at the count the engine would place gives the same plan;
    one layer more than fits does not fit, and each layer moved to the host costs its read."""
    auto = _offload("llama-3.1-70b", "rtx-3060")
    asked = _offload("llama-3.1-70b", "rtx-3060", gpu_layers=auto.gpu_layers)
    assert auto.requested is None and asked.requested == auto.gpu_layers
    assert dataclasses.replace(asked, requested=None) == auto
    assert auto.fits and auto.max_gpu_layers == auto.gpu_layers
    over = _offload("llama-3.1-70b", "rtx-3060", gpu_layers=auto.gpu_layers + 1)
    assert not over.fits and over.gpu_bytes_per_gpu > find_gpu("rtx-3060").memory_bytes
    assert over.max_gpu_layers == auto.gpu_layers
    fewer = _offload("llama-3.1-70b", "rtx-3060", gpu_layers=auto.gpu_layers - 10)
    assert fewer.fits and fewer.gpu_bytes_per_gpu < auto.gpu_bytes_per_gpu
    assert fewer.decode_host_s > auto.decode_host_s
    # -ngl 0: every decoder layer and the output layer in host memory; above the layer count
    # (-ngl 999, a common spelling of "all"): the output layer joins the GPU too
    none = _offload("llama-3.1-8b", "rtx-4090", gpu_layers=0)
    assert none.gpu_layers == 0 and not none.output_on_gpu and none.reported_layers == (0, 33)
    every = _offload("llama-3.1-8b", "rtx-4090", gpu_layers=999)
    assert every.gpu_layers == 32 and every.output_on_gpu and every.decode_host_s == 0.0


def test_where_the_bytes_live_does_not_matter_at_equal_rates() -> None:
    """Host memory as fast as the GPU's (and no engine overhead): the split step takes what the
    whole model on one GPU takes, since a decode step reads the same bytes either way."""
    gpu = find_gpu("rtx-4090")
    rate = gpu.hbm_bw_bytes_per_s * gpu.decode_stream_efficiency
    host = dataclasses.replace(
        find_host("desktop-ddr5"), memory_bw_bytes_per_s=rate, efficiency=1.0
    )
    engine = dataclasses.replace(OLLAMA, step_overhead_s=0.0, layer_overhead_s=0.0)
    spec = find_model("llama-3.1-70b")
    split = _offload("llama-3.1-70b", "rtx-4090", host=host, engine=engine)
    whole = estimate_inference(spec, count_params(spec), gpu, Fabric(find_link(gpu.host_link), None, 1),
                               engine, tp=1, pp=1, batch=1, prompt_tokens=512, output_tokens=128,
                               weight_bytes_per_param=Q4)  # fmt: skip
    assert split.decode_step_s == pytest.approx(whole.decode_step_s, rel=0.02)


def test_host_memory_sets_the_speed_of_the_layers_it_holds() -> None:
    slow = _offload("llama-3.1-70b", "rtx-3060", host=find_host("desktop-ddr4"))
    fast = _offload("llama-3.1-70b", "rtx-3060", host=find_host("server-ddr5"))
    assert slow.gpu_layers == fast.gpu_layers
    ratio = (
        find_host("server-ddr5").achievable_bytes_per_s
        / find_host("desktop-ddr4").achievable_bytes_per_s
    )
    assert slow.decode_host_s / fast.decode_host_s == pytest.approx(ratio, rel=1e-6)
    assert slow.decode_host_s > 0.8 * slow.decode_step_s  # most of the step: the host's read


def test_a_short_prompt_stays_on_the_cpu_a_long_one_streams_the_weights() -> None:
    """Prompts of 32 tokens or more run the host layers' matmuls on the GPU, their weights
    copied over the host link once per 512-token micro-batch: halving the link's rate adds one
    more copy's time per pass, and a prompt under 32 tokens does not use the link at all."""
    link = find_link(find_gpu("rtx-3060").host_link).bw_bytes_per_s
    two = _offload("llama-3.1-70b", "rtx-3060", prompt_tokens=1024)
    halved = _offload(
        "llama-3.1-70b", "rtx-3060", prompt_tokens=1024, host_link_bytes_per_s=link / 2
    )
    copy = two.host_bytes / two.h2d_bytes_per_s  # weights (and a little KV cache)
    assert halved.prefill_s - two.prefill_s == pytest.approx(2 * copy, rel=0.02)
    short = _offload("llama-3.1-70b", "rtx-3060", prompt_tokens=16)
    short_halved = _offload(
        "llama-3.1-70b", "rtx-3060", prompt_tokens=16, host_link_bytes_per_s=link / 2
    )
    assert short_halved.prefill_s == pytest.approx(short.prefill_s)


def test_host_efficiency_is_the_median_of_the_cpu_only_rows() -> None:
    """The one calibrated value: what llama.cpp's CPU kernels reach of a host's peak, the median
    of measured / predicted-at-full-rate over reference/offload.csv's rows with no layer on the
    GPU (their speed is the host's alone). Every host entry carries it."""
    rows = [c for c in offload_cases(host_efficiency=1.0) if c.split == "calibration"]
    assert len(rows) >= 2 and len({c.source for c in rows}) >= 2
    ratio = statistics.median(c.measured / c.predicted for c in rows)
    assert all(h.efficiency == pytest.approx(ratio, abs=0.01) for h in hosts())


def test_held_out_partial_offload_rows() -> None:
    """Source: reference/offload.csv (InventiveHQ's -ngl sweep of Qwen2.5-Coder-14B on an RTX 5060
    Ti, ggml-org/llama.cpp#8035's Llama-2-70B Q2_K on an RTX 3090 and a Tesla P40, llmfit's RTX
    2080 rows). Every row with layers on the GPU is held out; tolerance: median |error| 15%
    (the inference target), each row within 45% (the P40 rows, an old Xeon's, are 36-39% fast)."""
    held = [c for c in offload_cases() if c.split == "held_out"]
    assert len(held) >= 15 and len({c.source for c in held}) >= 3
    assert statistics.median(abs(c.error) for c in held) <= 0.15
    assert all(abs(c.error) <= 0.45 for c in held), [(c.row_id, round(c.error, 3)) for c in held]
