"""Inference capacity: KV-limited batch, latency target, replicas, TP across nodes."""

from __future__ import annotations

import math

import pytest

from fabriclens.catalog import find_model
from fabriclens.plan.capacity import plan_capacity
from reference import reference_dir


def test_replicas_cover_the_users_within_the_target() -> None:
    plan = plan_capacity(
        find_model("llama-3.1-70b"), "h100-sxm", users=100, output_tokens=500, prompt_tokens=1000
    )
    assert plan.slo_met
    assert plan.batch <= plan.max_batch_kv
    assert plan.estimate.decode_step_s <= plan.tpot_slo_s
    assert plan.replicas == math.ceil(100 / plan.batch)
    assert plan.gpus == plan.replicas * plan.tp * plan.pp
    assert plan.provided_tokens_per_s >= 100 * plan.estimate.decode_tokens_per_s * 0.999


def test_tighter_target_needs_more_gpus() -> None:
    spec = find_model("llama-3.1-8b")
    loose = plan_capacity(spec, "a100", users=200, output_tokens=300, tpot_slo_s=0.1)
    tight = plan_capacity(spec, "a100", users=200, output_tokens=300, tpot_slo_s=0.02)
    assert tight.gpus > loose.gpus


def test_single_user_speed_matches_published_decode() -> None:
    """Qwen2.5-7B, A100-80GB, vLLM, batch 1: 84.28 tokens/s (reference/inference.csv).
    Tolerance 15%."""
    assert (reference_dir() / "inference.csv").is_file()
    plan = plan_capacity(
        find_model("qwen2.5-7b"), "a100-sxm-80gb", users=1, output_tokens=2048, prompt_tokens=1
    )
    assert plan.estimate.decode_tokens_per_s == pytest.approx(84.28, rel=0.15)


def test_tensor_parallel_across_nodes_over_1gbe_is_an_order_of_magnitude_slower() -> None:
    """13B over four two-GPU nodes: per-token all-reduces on 1GbE TCP vs 100G RoCE."""
    spec = find_model("llama-2-13b")
    slow = plan_capacity(
        spec, "a100", users=4, output_tokens=200, tp=8, gpus_per_node=2, network="1gbe"
    )
    fast = plan_capacity(
        spec, "a100", users=4, output_tokens=200, tp=8, gpus_per_node=2, network="100g-roce"
    )
    comm = [sum(c.time_per_token_s for c in p.estimate.comm) for p in (slow, fast)]
    assert comm[0] / comm[1] >= 8
    assert any("crosses nodes" in a for a in slow.advice)
