"""The vectorised step model agrees with the scalar one, layout by layout."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from fabriclens.catalog import find_gpu, find_model, find_network
from fabriclens.model.arch import count_params
from fabriclens.model.batch import REC, evaluate
from fabriclens.model.layout import TrainConfig
from fabriclens.model.step import estimate_training_step
from fabriclens.plan.planner import resolve_fabric


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(
    model=st.sampled_from(
        [
            "llama-3.1-8b",
            "mixtral-8x7b",
            "qwen2.5-7b",
            "gpt2",
            "deepseek-v3",
            "mpt-7b",
            "qwen3-30b-a3b",
        ]
    ),
    gpu=st.sampled_from(["h100-sxm", "a100", "rtx-4090", "h100-pcie"]),
    nodes=st.sampled_from([1, 2, 4]),
    gpn=st.sampled_from([1, 2, 4, 8]),
    network=st.sampled_from(["1gbe", "25gbe", "100g-roce", "ndr-ib"]),
    nics=st.sampled_from([1, 2, 8]),
    tp=st.sampled_from([1, 2, 4, 8]),
    pp=st.sampled_from([1, 2, 4]),
    ep=st.sampled_from([1, 2, 4, 8]),
    zero=st.sampled_from([0, 1, 2, 3]),
    rec=st.sampled_from(["none", "selective", "full"]),
    mb=st.sampled_from([1, 2, 4]),
    il=st.sampled_from([1, 2]),
    sp=st.booleans(),
    workload=st.sampled_from(["pretrain", "lora"]),
    lora_bits=st.sampled_from([16, 4]),
    flash=st.booleans(),
    dropout=st.booleans(),
    framework=st.sampled_from([1.0, 0.66]),
    attention=st.sampled_from(["flash", "fused"]),
    elementwise=st.sampled_from(["fused", "eager"]),
    grad_bytes=st.sampled_from([2.0, 4.0]),
    moe_dispatch=st.sampled_from(["all-to-all", "node-dedup"]),
    ep_overlap=st.booleans(),
)
def test_batch_equals_scalar(model, gpu, nodes, gpn, network, nics, tp, pp, ep, zero, rec, mb, il, sp, workload,
                             lora_bits, flash, dropout, framework, attention, elementwise, grad_bytes, moe_dispatch, ep_overlap) -> None:  # type: ignore[no-untyped-def]  # fmt: skip
    spec = find_model(model)
    gpus = nodes * gpn
    assume(gpus % (tp * pp) == 0 and spec.heads % tp == 0 and pp <= spec.layers)
    dp = gpus // (tp * pp)
    assume(not spec.is_moe or (spec.experts % ep == 0 and dp % ep == 0))
    assume(spec.is_moe or ep == 1)
    assume(il == 1 or (pp > 1 and spec.layers % (pp * il) == 0))
    g = find_gpu(gpu)
    fabric, _ = resolve_fabric(
        g, gpus, gpus_per_node=gpn, network_name=network if nodes > 1 else None, nics_per_node=nics
    )
    counts = count_params(spec)
    gb = dp * mb * 4
    base = TrainConfig(gpus=gpus, gpus_per_node=gpn, seq_len=2048, global_batch=gb, workload=workload,  # type: ignore[arg-type]
                       lora_base_bits=lora_bits, flash_attention=flash, dropout=dropout,
                       framework_efficiency=framework, attention_kernel=attention,
                       elementwise=elementwise, grad_bytes=grad_bytes, moe_dispatch=moe_dispatch,
                       ep_overlap=ep_overlap)  # fmt: skip
    cfg = replace(base, tp=tp, pp=pp, dp=dp, ep=ep, zero=zero, recompute=rec, micro_batch=mb, interleave=il,  # type: ignore[arg-type]
                  sequence_parallel=sp)  # fmt: skip
    scalar = estimate_training_step(spec, counts, g, fabric, cfg)
    arrays = {"tp": [tp], "pp": [pp], "dp": [dp], "ep": [ep], "zero": [zero], "rec": [REC[rec]], "mb": [mb],
              "interleave": [il], "sp": [int(sp)], "gb": [gb]}  # fmt: skip
    out = evaluate(spec, counts, g, fabric, base, arrays)
    assert out["time_s"][0] == pytest.approx(scalar.time_s, rel=1e-9)
    assert out["compute_s"][0] == pytest.approx(scalar.compute_s, rel=1e-9)
    assert out["comm_exposed_s"][0] == pytest.approx(scalar.comm_exposed_s, rel=1e-9, abs=1e-15)
    assert out["bubble_s"][0] == pytest.approx(scalar.bubble_s, rel=1e-9, abs=1e-15)
    assert out["memory_bytes"][0] == pytest.approx(scalar.memory.total_per_gpu_bytes, rel=1e-9)
    assert bool(out["fits"][0]) == scalar.memory.fits


def test_many_layouts_at_once_match_one_by_one() -> None:
    spec = find_model("llama-3.1-70b")
    g = find_gpu("h100-sxm")
    fabric, _ = resolve_fabric(g, 64, network_name="ndr-ib")
    base = TrainConfig(gpus=64, gpus_per_node=8, seq_len=4096, global_batch=512)
    rows = [
        (t, p, 64 // (t * p), z, r, m)
        for t in (2, 4, 8)
        for p in (1, 2, 4)
        for z in (1, 3)
        for r in (0, 2)
        for m in (1, 2)
    ]
    arrays = {
        k: np.array(v)
        for k, v in zip(
            ("tp", "pp", "dp", "zero", "rec", "mb"), zip(*rows, strict=True), strict=True
        )
    }
    n = len(rows)
    arrays.update(ep=np.ones(n), interleave=np.ones(n), sp=np.ones(n), gb=np.full(n, 512))
    out = evaluate(spec, count_params(spec), g, fabric, base, arrays)
    rec_names = {0: "none", 2: "full"}
    for i, (t, p, d, z, r, m) in enumerate(rows):
        cfg = replace(
            base,
            tp=t,
            pp=p,
            dp=d,
            zero=z,
            recompute=rec_names[r],
            micro_batch=m,
            sequence_parallel=True,
        )  # type: ignore[arg-type]
        assert out["time_s"][i] == pytest.approx(
            estimate_training_step(spec, count_params(spec), g, fabric, cfg).time_s, rel=1e-9
        )
    assert find_network("ndr-ib").kind == "ib"
