"""The vectorised step model agrees with the scalar one, layout by layout."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from fabriclens.catalog import find_gpu, find_model, find_network
from fabriclens.catalog.schema import PROJECTION_LAYOUTS
from fabriclens.model.arch import count_params
from fabriclens.model.batch import REC, _stage_layers, evaluate
from fabriclens.model.layout import TrainConfig
from fabriclens.model.lora import LORA_TARGETS
from fabriclens.model.memory import head_cost_layers, stage_layer_counts
from fabriclens.model.step import estimate_training_step
from fabriclens.plan.layouts import ep_ranks
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
            "qwen3-next-80b-a3b",
            "granite-4.0-h-small",
            "nemotron-h-8b",
            "glm-5.2",  # sparse attention: indexers whole on every TP rank, in 21 of 78 layers
            "minimax-m2.5",
            "nemotron-3-super-120b-a12b",  # LatentMoE: experts and dispatch at a 1,024 latent
        ]
    ),
    gpu=st.sampled_from(["h100-sxm", "a100", "rtx-4090", "h100-pcie"]),
    nodes=st.sampled_from([1, 2, 4]),
    gpn=st.sampled_from([1, 2, 4, 8]),
    network=st.sampled_from(["1gbe", "25gbe", "100g-roce", "ndr-ib"]),
    nics=st.sampled_from([1, 2, 8]),
    tp=st.sampled_from([1, 2, 4, 8]),
    pp=st.sampled_from([1, 2, 3, 4]),
    ep=st.sampled_from([1, 2, 4, 8]),
    zero=st.sampled_from([0, 1, 2, 3]),
    rec=st.sampled_from(["none", "selective", "op", "full"]),
    mb=st.sampled_from([1, 2, 4]),
    il=st.sampled_from([1, 2]),
    sp=st.booleans(),
    workload=st.sampled_from(["pretrain", "lora"]),
    lora_bits=st.sampled_from([16, 4]),
    targets=st.sampled_from(LORA_TARGETS),
    projections=st.sampled_from(PROJECTION_LAYOUTS),
    flash=st.booleans(),
    dropout=st.booleans(),
    framework=st.sampled_from([1.0, 0.66]),
    attention=st.sampled_from(["flash", "fused"]),
    elementwise=st.sampled_from(["fused", "eager", "eager-mlp"]),
    grad_bytes=st.sampled_from([2.0, 4.0]),
    moe_dispatch=st.sampled_from(["all-to-all", "node-dedup"]),
    ep_overlap=st.booleans(),
    split=st.sampled_from(["even", "balanced"]),
    etp=st.sampled_from([0, 1]),
    reruns=st.sampled_from(["layer", "needed"]),
    host=st.sampled_from([0.0, 2.75e-3]),
    buckets=st.sampled_from(["whole", "megatron-core", "ddp", "ddp-all-stages"]),
    calls=st.sampled_from(["per-layer", "per-tensor"]),
)
def test_batch_equals_scalar(model, gpu, nodes, gpn, network, nics, tp, pp, ep, zero, rec, mb, il, sp, workload,
                             lora_bits, targets, projections, flash, dropout, framework, attention, elementwise, grad_bytes, moe_dispatch, ep_overlap, split, etp, reruns, host, buckets, calls) -> None:  # type: ignore[no-untyped-def]  # fmt: skip
    spec = find_model(model)
    gpus = nodes * gpn
    assume(gpus % (tp * pp) == 0 and spec.heads % tp == 0 and pp <= spec.layers)
    dp = gpus // (tp * pp)
    # ep carved from dp, or with each expert whole (etp 1) from tp x dp (plan.layouts.ep_ranks)
    assume(not spec.is_moe or (spec.experts % ep == 0 and ep_ranks(tp, 1, dp, etp) % ep == 0))
    assume(spec.is_moe or ep == 1)
    assume(il == 1 or (pp > 1 and spec.layers % (pp * il) == 0))
    g = find_gpu(gpu)
    fabric, _ = resolve_fabric(
        g, gpus, gpus_per_node=gpn, network_name=network if nodes > 1 else None, nics_per_node=nics
    )
    counts = count_params(spec)
    gb = dp * mb * 4
    base = TrainConfig(gpus=gpus, gpus_per_node=gpn, seq_len=2048, global_batch=gb, workload=workload,  # type: ignore[arg-type]
                       lora_base_bits=lora_bits, lora_targets=targets, projections=projections,
                       flash_attention=flash,
                       dropout=dropout, framework_efficiency=framework, attention_kernel=attention,
                       elementwise=elementwise, grad_bytes=grad_bytes, moe_dispatch=moe_dispatch,
                       ep_overlap=ep_overlap, pipeline_split=split, etp=etp,
                       recompute_reruns=reruns, layer_host_s=host, grad_buckets=buckets,
                       zero3_calls=calls)  # fmt: skip
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


def test_vectorised_stage_layers_are_the_scalar_split() -> None:
    """batch._stage_layers (per layout) gives memory.stage_layer_counts' first, busiest middle
    and last stage, even and balanced by cost, for every pipeline depth up to the layer count."""
    for layers in (2, 5, 16, 22, 32, 61, 80, 126):
        for head in (0.0, 0.97, 1.94, 3.56, 12.0):
            pps = np.arange(1, layers + 1, dtype=float)
            first, middle, last = _stage_layers(layers, pps, head)
            for i, pp in enumerate(range(1, layers + 1)):
                counts = stage_layer_counts(layers, pp, head)
                assert sum(counts) == layers
                assert (first[i], last[i]) == (counts[0], counts[-1]), (layers, head, pp)
                if pp >= 3:
                    assert middle[i] == max(counts[1:-1]), (layers, head, pp)


def test_a_balanced_split_moves_layers_off_the_stage_with_the_lm_head() -> None:
    """nanotron's split (build_model: 'Balance compute across PP blocks'): the LM head counts as
    vocab x hidden against a layer's 4 x heads x head width x hidden + 3 x ffn x hidden, so the
    last stage holds fewer layers; its 1.34B model (16 layers of 2048, ffn 8192, vocabulary
    131,072: a head of exactly 4 layers) on two stages is 11 / 5 (the first stage takes layers
    until their cost passes half of 20), and the step on that pipeline is shorter than an even
    split's."""
    spec = replace(find_model("llama-3.2-1b"), layers=16, hidden=2048, heads=32, kv_heads=32,
                   ffn=8192, vocab=131072, tied_embeddings=True)  # fmt: skip
    counts = count_params(spec)
    head = head_cost_layers(spec, counts)
    assert head == pytest.approx(4.0)
    assert stage_layer_counts(16, 2, head) == (11, 5)
    assert stage_layer_counts(16, 2) == (8, 8)
    g = find_gpu("h100-sxm")
    fabric, _ = resolve_fabric(g, 8, gpus_per_node=8, network_name=None, nics_per_node=1)
    even = TrainConfig(gpus=8, gpus_per_node=8, tp=1, pp=2, dp=4, seq_len=4096, global_batch=256,
                       micro_batch=4)  # fmt: skip
    balanced = replace(even, pipeline_split="balanced")
    t_even = estimate_training_step(spec, counts, g, fabric, even).time_s
    t_bal = estimate_training_step(spec, counts, g, fabric, balanced).time_s
    assert t_bal < 0.97 * t_even


def test_the_pipeline_split_is_the_frameworks_unless_the_user_names_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """nanotron splits by cost, the other frameworks evenly; --pipeline-split overrides the
    framework's, the plan says so, search and advise take it too, and a split the model does
    not know is one line with the fix, exit 2."""
    from fabriclens.catalog import find_framework
    from fabriclens.cli.app import run
    from fabriclens.plan.planner import make_plans
    from fabriclens.plan.request import PlanRequest

    assert find_framework("nanotron").pipeline_split == "balanced"
    assert find_framework("pytorch").pipeline_split == "even"
    assert find_framework("nanotron").efficiency == find_framework("pytorch").efficiency
    req = PlanRequest(model=find_model("llama-3.2-1b"), gpu="h100-sxm", gpus=8, tp=1, pp=2)
    (even,) = make_plans(req)
    (nano,) = make_plans(replace(req, framework="nanotron"))
    (named,) = make_plans(replace(req, pipeline_split="balanced"))
    assert even.config is not None and nano.config is not None and named.config is not None
    assert (even.config.pipeline_split, nano.config.pipeline_split) == ("even", "balanced")
    assert named.config.pipeline_split == "balanced"
    assert any("--pipeline-split" in n for n in named.defaults)
    assert not any("--pipeline-split" in n for n in nano.defaults + even.defaults)
    assert any("balanced by compute" in a for a in nano.training.assumptions)  # type: ignore[union-attr]
    for argv in (["plan", "llama-3.1-8b", "--gpus", "8", "--pipeline-split", "zigzag"],
                 ["search", "llama-3.1-8b", "--gpus", "8", "--pipeline-split", "zigzag"]):  # fmt: skip
        assert run(argv) == 2, argv
        err = capsys.readouterr().err
        assert "zigzag" in err and "--pipeline-split even" in err and err.count("\n") == 1
    # training-only options on an inference plan would be ignored without a word: refused
    for flag, value in (("--pipeline-split", "balanced"), ("--attention", "fused"),
                        ("--moe-dispatch", "node-dedup")):  # fmt: skip
        assert run(["plan", "llama-3.1-8b", "-w", "inference", flag, value]) == 2
        err = capsys.readouterr().err
        assert f"{flag} applies to training plans" in err and err.count("\n") == 1
