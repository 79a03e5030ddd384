"""MoE token routing: permutation traffic, routed activations, node-deduplicated dispatch and
expert-parallel overlap (model/moe.py, model/step.py)."""

from __future__ import annotations

import json
import math
import random
from dataclasses import replace

import numpy as np
import pytest

from fabriclens.catalog import find_framework, find_gpu, find_model
from fabriclens.cli.app import run
from fabriclens.model.arch import count_params
from fabriclens.model.layout import TrainConfig
from fabriclens.model.memory import activation_bytes_per_layer
from fabriclens.model.moe import (
    dispatch_network_share,
    distinct_remote_nodes,
    permute_bytes_per_token,
    routed_input_bytes_per_token,
)
from fabriclens.model.step import estimate_training_step
from fabriclens.plan.planner import resolve_fabric


def _simulated_remote_nodes(experts: int, k: int, nodes: int, trials: int, seed: int) -> float:
    """Monte Carlo: tokens on node 0 pick k distinct experts uniformly; count remote nodes hit."""
    rng = random.Random(seed)
    per_node = experts // nodes
    total = 0
    for _ in range(trials):
        picked = rng.sample(range(experts), k)
        total += len({e // per_node for e in picked} - {0})
    return total / trials


@pytest.mark.parametrize(
    ("experts", "k", "nodes"), [(256, 8, 8), (128, 8, 2), (128, 8, 16), (8, 2, 4), (64, 6, 8)]
)
def test_distinct_remote_nodes_matches_random_routing(experts: int, k: int, nodes: int) -> None:
    """The hypergeometric expectation against 40,000 simulated tokens (seeded). Tolerance: 4
    standard errors of the simulated mean (the count is at most nodes - 1)."""
    trials = 40_000
    simulated = _simulated_remote_nodes(experts, k, nodes, trials, seed=experts * k + nodes)
    expected = distinct_remote_nodes(experts, k, nodes)
    assert abs(simulated - expected) < 4 * (nodes - 1) / 2 / math.sqrt(trials)


def test_dedup_share_for_deepseek_v3_on_8_nodes() -> None:
    """DeepSeek-V3 (256 experts, top-8, 8 groups of which a token uses 4) over EP 64 on 8 nodes:
    a flat all-to-all sends 8 x 7/8 = 7 copies off the node; node-deduplicated dispatch sends one
    per remote node among the 4 chosen ("at most M = 4 nodes", DeepSeek-V3 report 2.1.2):
    7 x (1 - C(7, 4) / C(8, 4)) = 3.5, half the copies. Without the group limit, 7 x (1 - C(224, 8)
    / C(256, 8)). Exact."""
    spec = find_model("deepseek-v3")
    assert (spec.expert_groups, spec.expert_groups_per_token) == (8, 4)
    assert dispatch_network_share(spec, 8, "node-dedup") == pytest.approx(0.5, rel=1e-12)
    free = replace(spec, expert_groups=0, expert_groups_per_token=0)
    p_none = math.comb(224, 8) / math.comb(256, 8)
    assert dispatch_network_share(free, 8, "node-dedup") == pytest.approx(1 - p_none, rel=1e-12)
    assert dispatch_network_share(spec, 8, "all-to-all") == 1.0
    assert dispatch_network_share(spec, 1, "node-dedup") == 1.0  # one node: nothing to save


def _router_remote_nodes(nodes: int, trials: int = 20_000) -> float:
    """Megatron-Core's group-limited top-k under forced balancing (random logits): groups scored
    by the sum of their top k/g experts, the best g groups kept, the top k of their experts
    taken; the mean number of remote nodes (experts in contiguous blocks per node) they sit on."""
    experts, k, groups, picked = 256, 8, 8, 4
    rng = np.random.default_rng(nodes)
    s = rng.random((trials, experts))
    per_group = experts // groups
    score = np.sort(s.reshape(trials, groups, per_group), axis=2)[:, :, -(k // picked) :].sum(2)
    keep = np.zeros((trials, groups), dtype=bool)
    np.put_along_axis(keep, np.argsort(-score, axis=1)[:, :picked], True, axis=1)
    top = np.argsort(-np.where(np.repeat(keep, per_group, axis=1), s, -1.0), axis=1)[:, :k]
    node = top // (experts // nodes)
    return float(np.mean([len(set(row) - {0}) for row in node]))


@pytest.mark.parametrize(
    ("nodes", "tolerance"), [(2, 0.02), (4, 0.02), (8, 0.02), (16, 0.08), (32, 0.08)]
)
def test_group_limited_dispatch_follows_megatrons_router(nodes: int, tolerance: float) -> None:
    """The expectation against 20,000 simulated tokens of the router itself (seeded). Where a
    node holds whole groups (2-8 nodes) it matches within 2%; where a group spans nodes (16, 32)
    the model draws the k experts uniformly from the chosen groups while the router takes about
    k/g from each, so it counts 4-7% fewer remote nodes: tolerance 8%."""
    model = distinct_remote_nodes(256, 8, nodes, 8, 4)
    assert model == pytest.approx(_router_remote_nodes(nodes), rel=tolerance)


def test_permutation_bytes_count_each_move_of_the_routed_copies() -> None:
    """Qwen3-30B-A3B (every layer MoE, top-8, hidden 2048): permute + unpermute, plus the sort by
    local expert and back when EP feeds several local experts; each move reads and writes 8 BF16
    copies: 2 x 8 x 2048 x 2 = 65,536 bytes. Exact."""
    spec = find_model("qwen3-30b-a3b")
    move = 2 * 8 * 2048 * 2
    assert permute_bytes_per_token(spec, 1) == 2 * move
    assert permute_bytes_per_token(spec, 16) == 4 * move  # 8 local experts: sorted by expert
    assert permute_bytes_per_token(spec, 128) == 2 * move  # one expert per GPU: no sort
    assert permute_bytes_per_token(find_model("llama-3.1-8b"), 8) == 0.0
    assert routed_input_bytes_per_token(spec) == 8 * 2048 * 2


def test_routed_copies_are_activation_memory() -> None:
    """The k routed copies the experts' first GEMMs keep grow a MoE layer's activations by
    tokens x k x hidden x 2 bytes, split over TP like the MLP. Exact."""
    spec = find_model("qwen3-30b-a3b")
    cfg = TrainConfig(gpus=8, gpus_per_node=8, seq_len=4096, micro_batch=1)
    dense_like = replace(spec, experts_per_token=8)
    got = activation_bytes_per_layer(dense_like, cfg, "none")
    assert got - activation_bytes_per_layer(replace(spec, experts_per_token=4), cfg, "none") == (
        pytest.approx(
            4096 * (8 - 4) * 2048 * 2  # routed copies
            + 6 * 4096 * (8 - 4) * 768,  # the k experts' SwiGLU activations
            rel=1e-12,
        )
    )


def _est(cfg: TrainConfig, gpus: int = 32):  # type: ignore[no-untyped-def]
    spec = find_model("qwen3-30b-a3b")
    g = find_gpu("h100-sxm")
    fabric, _ = resolve_fabric(g, gpus, gpus_per_node=8, network_name="ndr-ib", nics_per_node=8)
    return estimate_training_step(spec, count_params(spec), g, fabric, cfg)


def _a2a(est):  # type: ignore[no-untyped-def]
    return next(c for c in est.comm if c.op == "all_to_all")


def test_node_dedup_cuts_the_cross_node_dispatch_and_sends_once_per_gpu_inside_a_node() -> None:
    """Across nodes a DeepEP-class dispatcher sends a token once per destination node; inside
    one node once per destination GPU (DeepEP's dispatch layout, is_token_in_rank), not once
    per routed expert: Qwen3-30B-A3B's top-8 of 128 experts on 8 GPUs reach 5.3 distinct GPUs,
    4.6 of them remote, against the flat all-to-all's 7 remote copies."""
    spec = find_model("qwen3-30b-a3b")
    base = TrainConfig(gpus=32, gpus_per_node=8, dp=32, ep=32, seq_len=4096, global_batch=256,
                       precision="fp8")  # fmt: skip
    flat, dedup = _est(base), _est(replace(base, moe_dispatch="node-dedup"))
    share = dispatch_network_share(spec, 4, "node-dedup")
    assert _a2a(dedup).size_bytes == pytest.approx(_a2a(flat).size_bytes * share, rel=1e-12)
    assert _a2a(dedup).time_s < _a2a(flat).time_s and dedup.time_s < flat.time_s
    inside = replace(base, ep=8)  # EP inside one node: once per destination GPU
    flat_in, dedup_in = _a2a(_est(inside)), _a2a(_est(replace(inside, moe_dispatch="node-dedup")))
    per_gpu = dispatch_network_share(spec, 8, "node-dedup")
    assert per_gpu == pytest.approx(distinct_remote_nodes(128, 8, 8) / (8 * 7 / 8), rel=1e-12)
    assert 0.6 < per_gpu < 0.7
    assert dedup_in.size_bytes == pytest.approx(flat_in.size_bytes * per_gpu, rel=1e-12)
    assert "once per destination GPU" in dedup_in.note


def test_ep_overlap_hides_the_all_to_all_behind_other_micro_batches() -> None:
    base = TrainConfig(gpus=32, gpus_per_node=8, dp=32, ep=32, seq_len=4096, global_batch=256,
                       precision="fp8")  # fmt: skip
    plain, overlapped = _est(base), _est(replace(base, ep_overlap=True))
    assert _a2a(plain).exposed_s == _a2a(plain).time_s
    window = (base.microbatches - 1) * plain.microbatch_compute_s
    assert _a2a(overlapped).exposed_s == pytest.approx(
        max(0.0, _a2a(plain).time_s - window), rel=1e-9
    )
    assert overlapped.time_s < plain.time_s


def test_nvidia_recipes_dispatch_once_per_node_others_flat() -> None:
    """Megatron-Bridge perf_recipes set moe_token_dispatcher_type "flex" with the HybridEP or
    DeepEP backend for DeepSeek-V3 (H100, B200) and Qwen3-30B-A3B (H100); Megatron-LM's and
    torchtitan's defaults are a flat all-to-all."""
    assert find_framework("nemo").moe_dispatch == "node-dedup"
    assert find_framework("megatron").moe_dispatch == "all-to-all"
    assert find_framework("pytorch").moe_dispatch == "all-to-all"


def test_plan_flags_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["plan", "qwen3-30b-a3b", "--gpus", "32", "--tp", "1", "--pp", "1", "--ep", "32",
            "--network", "ndr-ib", "--json"]  # fmt: skip
    assert run(argv) == 0
    flat = json.loads(capsys.readouterr().out)
    assert run([*argv, "--moe-dispatch", "node-dedup", "--ep-overlap"]) == 0
    tuned = json.loads(capsys.readouterr().out)
    assert flat["framework"]["moe_dispatch"] == "all-to-all" and not flat["framework"]["ep_overlap"]
    assert tuned["framework"]["moe_dispatch"] == "node-dedup" and tuned["framework"]["ep_overlap"]
    assert tuned["step"]["time_s"] < flat["step"]["time_s"]


def test_bad_moe_dispatch_is_one_line_with_the_fix(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["plan", "mixtral-8x7b", "--gpus", "8", "--ep", "8", "--moe-dispatch", "ring"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--moe-dispatch all-to-all or node-dedup" in err


def test_the_plans_moe_caveat_states_the_largest_published_miss() -> None:
    """The MoE assumption line says NVIDIA's MoE runs are "up to 2.7x slower" than the model:
    that is the largest predicted / measured speed (a time row's ratio inverted) over the MoE rows
    of reference/training_more.csv (to one decimal), so the caveat follows the data."""
    from reference import _rows, _training_spec, more_training_cases

    moe = {
        r["id"] for r in _rows("training_more.csv") if not r["exclude"] and _training_spec(r).is_moe
    }
    ratios = [
        c.measured / c.predicted if c.unit.startswith("s") else c.predicted / c.measured
        for c in more_training_cases()
        if c.row_id in moe
    ]
    assert len(ratios) >= 9
    assert round(max(ratios), 1) == 2.7
    cfg = TrainConfig(gpus=16, gpus_per_node=8, dp=16, ep=16, seq_len=4096, global_batch=256)
    assert any("up to 2.7x slower" in a for a in _est(cfg, gpus=16).assumptions)


def test_the_plans_moe_caveat_states_nvidias_moe_median() -> None:
    """The same line says NVIDIA's MoE recipes on H100 run at "a median 0.91" of the step (the MoE
    layers' host time included) and its dense ones at 0.90: the medians
    benchmarks/calibrate_frameworks.py prints for NeMo on Hopper over the calibration rows (MoE
    rows set no share; dense rows are the reference)."""
    from calibrate_frameworks import calibrate
    from reference import all_training_cases

    cases = all_training_cases(kernel_level=True)
    moe = {(c.framework, c.generation): c for c in calibrate(cases, moe=True)}
    dense = {(c.framework, c.generation): c for c in calibrate(cases)}
    assert f"{moe['nemo', 'hopper'].share:.2f}" == "0.91" and moe["nemo", "hopper"].rows >= 5
    assert f"{dense['nemo', 'hopper'].share:.2f}" == "0.90"
    cfg = TrainConfig(gpus=16, gpus_per_node=8, dp=16, ep=16, seq_len=4096, global_batch=256)
    line = next(a for a in _est(cfg, gpus=16).assumptions if a.startswith("MoE:"))
    assert "a median 0.91 of this step (its dense ones at 0.90)" in line


def test_per_node_dispatch_never_sends_more_than_the_flat_one() -> None:
    """A group limit wider than the top-k (a user catalog's 6 of 8 groups for top-2) must not make
    the per-node dispatch cost more than every copy."""
    spec = replace(find_model("deepseek-v3"), experts_per_token=2, expert_groups_per_token=6)
    for nodes in (2, 4, 8, 16, 32):
        assert 0 < dispatch_network_share(spec, nodes, "node-dedup") <= 1.0


def test_zero3_gathers_the_experts_over_their_data_parallel_group() -> None:
    """ZeRO-3 / FSDP shards a mixture of experts' experts over their own data-parallel group
    (dp / ep ranks hold copies of the same experts): the memory ledger holds 1/(dp/ep) of them, so
    each MoE layer must gather its experts' weights there, forward and backward, and scatter
    their gradients there, where before the step gathered only the dense weights and
    all-reduced the experts' gradients whole. Found on the MoE Parallel Folding paper's FSDP + EP
    baselines (arXiv 2504.14960, reference/training_more.csv tm661-tm698: 68-115% fast before,
    17-53% after). Exact sizes, nccl-tests convention (the gathered array, a rank's input)."""
    spec = find_model("qwen3-30b-a3b")
    counts = count_params(spec)
    cfg = TrainConfig(gpus=32, gpus_per_node=8, dp=32, ep=8, zero=3, seq_len=4096, global_batch=64)
    est = _est(cfg)
    experts = counts.experts / cfg.ep  # this rank's experts, before ZeRO-3 shards them
    gathers = [c for c in est.comm if c.group == "dp-expert" and c.op == "all_gather"]
    scatters = [c for c in est.comm if c.group == "dp-expert" and c.op == "reduce_scatter"]
    assert len(gathers) == 2  # forward and backward
    assert all(c.size_bytes == pytest.approx(2.0 * experts, rel=1e-9) for c in gathers)
    assert len(scatters) == 1
    assert scatters[0].size_bytes == pytest.approx(experts * cfg.grad_bytes, rel=1e-9)
    assert not [c for c in est.comm if c.group == "dp-expert" and c.op == "all_reduce"]
    # ZeRO-1 keeps the experts whole on each rank: their gradients are all-reduced, nothing gathered
    z1 = _est(replace(cfg, zero=1))
    assert [c.op for c in z1.comm if c.group == "dp-expert"] == ["all_reduce"]


def test_moe_layers_gather_the_routed_copies_over_the_expert_tp_group() -> None:
    """Megatron-Core's all-to-all dispatcher with the experts split over the TP ranks (its default
    expert tensor parallelism) gathers the k routed copies of each token over them after the
    all-to-all and scatters them back before it (AllGather-V / ReduceScatter-V within the ETP
    group: Liu et al. 2025, arXiv 2504.14960, sec. 3.3), so a MoE layer's MLP moves k times a
    dense layer's TP pair; with each expert whole on its rank (ETP 1, MoE Parallel Folding) it
    moves none. Before, every layer paid the dense pair. Exact sizes and counts: Qwen3-30B-A3B
    (top 8, no shared experts), tp 2, one micro-batch."""
    spec = find_model("qwen3-30b-a3b")
    cfg = TrainConfig(gpus=16, gpus_per_node=8, tp=2, dp=8, ep=8, sequence_parallel=True,
                      seq_len=4096, global_batch=8)  # fmt: skip
    act = 4096 * spec.hidden * 2.0  # a micro-batch's activations, bf16
    layers = spec.layers  # every layer a MoE layer

    def tp_calls(c: TrainConfig) -> dict[tuple[str, float], float]:
        est = _est(c, gpus=16)
        return {(e.op, e.size_bytes): e.count for e in est.comm if e.group == "tp"}

    routed = act * spec.experts_per_token
    assert tp_calls(cfg) == {
        ("all_gather", act): 2 * layers,  # the attention's, forward and backward
        ("reduce_scatter", act): 2 * layers,
        ("all_gather", routed): 2 * layers,  # the routed copies', forward and backward
        ("reduce_scatter", routed): 2 * layers,
    }
    assert tp_calls(replace(cfg, etp=1)) == {
        ("all_gather", act): 2 * layers,
        ("reduce_scatter", act): 2 * layers,
    }


def test_the_optimizer_updates_each_experts_states_on_its_expert_data_parallel_ranks() -> None:
    """ZeRO shards a dense weight's optimizer states over the dp ranks but an expert's only over
    the ranks that hold the same experts (dp / ep): the memory ledger already held them so, the
    optimizer step's HBM traffic (Adam, 28 bytes per parameter) divided the experts by dp as
    well, ep times too little. Exact, Qwen3-30B-A3B on 32 GPUs with ep 8, ZeRO-1."""
    from fabriclens.model.memory import param_share
    from fabriclens.model.step import ADAM_BYTES_PER_PARAM

    spec = find_model("qwen3-30b-a3b")
    cfg = TrainConfig(gpus=32, gpus_per_node=8, dp=32, ep=8, zero=1, seq_len=4096, global_batch=64)
    est = _est(cfg)
    share = param_share(spec, count_params(spec), 1, 1, 8)
    gpu = find_gpu("h100-sxm")
    rate = gpu.hbm_bw_bytes_per_s * gpu.memory_bw_efficiency * cfg.framework_efficiency
    updated = share.dense / 32 + share.expert / (32 // 8)
    assert est.optimizer_s == pytest.approx(ADAM_BYTES_PER_PARAM * updated / rate, rel=1e-9)


def test_whole_experts_fold_the_expert_parallel_group_over_the_tp_ranks(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Megatron-Core lays the experts out as expert-TP x EP x expert-DP x PP over the same ranks
    (parallel_state.initialize_model_parallel: the expert RankGenerator, order tp-cp-ep-dp-pp),
    so an EP group is ep consecutive ranks at stride expert-TP. Qwen3-235B at TP 2, DP 4, EP 8 on
    8-GPU nodes, as XTuner's Pai-Megatron runs (reference tm648-tm657): with --etp 1 the EP group
    is one node's eight ranks, every rank holds 16 whole experts (twice what it holds with the
    experts split over TP 2), and no two ranks of a stage hold the same experts; with the experts
    split over TP the same ep cannot be carved from dp 4, and the plan says so with the fix."""
    from fabriclens.errors import InputError
    from fabriclens.model.layout import expert_dp, place_groups
    from fabriclens.model.memory import pipeline_stages, stage_share
    from fabriclens.plan.layouts import validate_layout

    spec = find_model("qwen3-235b-a22b")
    counts = count_params(spec)
    cfg = TrainConfig(gpus=256, gpus_per_node=8, tp=2, pp=32, dp=4, ep=8, etp=1, zero=1,
                      seq_len=4096, global_batch=1024)  # fmt: skip
    validate_layout(spec, cfg)
    groups = place_groups(cfg)
    assert (groups["ep"].size, groups["ep"].per_node) == (8, 8) and not groups["ep"].crosses_nodes
    assert expert_dp(cfg) == 1 and groups["dp-expert"].size == 1
    stage = pipeline_stages(spec.layers, cfg.pp)[1]
    whole = stage_share(spec, counts, 2, 8, stage, cfg.pp, etp=1).expert
    split = stage_share(spec, counts, 2, 8, stage, cfg.pp).expert
    assert whole == pytest.approx(2 * split) and whole == pytest.approx(
        stage.layers * counts.experts / spec.layers / 8
    )
    # the experts split over the TP ranks: ep 4 at stride 2 spans a node's eight ranks
    split_cfg = replace(cfg, ep=4, etp=0)
    assert place_groups(split_cfg)["ep"].per_node == 4 and expert_dp(split_cfg) == 1
    with pytest.raises(InputError) as err:
        validate_layout(spec, replace(cfg, etp=0))
    assert "dp x cp" in err.value.message and "--etp 1" in err.value.fix
    argv = ["plan", "qwen3-235b-a22b", "--gpu", "h800", "--gpus", "256", "--tp", "2", "--pp", "32",
            "--ep", "8", "--zero", "1", "--recompute", "full", "--network", "ndr-ib"]  # fmt: skip
    assert run([*argv, "--etp", "1"]) == 0
    capsys.readouterr()
    # left out, the plan tries both expert layouts and takes the one this ep allows
    assert run(argv) == 0
    assert "ep 8 (etp 1)" in " ".join(capsys.readouterr().out.split())
    assert run([*argv, "--etp", "2"]) == 2
    assert "--etp 1" in capsys.readouterr().err


def test_each_moe_layer_pays_its_host_time_per_micro_batch() -> None:
    """The MoE layers' host time (model/moe.py MOE_LAYER_HOST_MS) adds, per micro-batch, the
    value times the MoE layers of the busiest stage, scaled by the framework's share, and a third
    more under full recompute (the rerun forward routes again); a dense model pays none; the
    assumption line states it."""
    from fabriclens.model.moe import MOE_LAYER_HOST_MS

    spec = find_model("qwen3-30b-a3b")  # 48 layers, every one MoE
    g = find_gpu("h100-sxm")
    fabric, _ = resolve_fabric(g, 8, gpus_per_node=8, network_name="ndr-ib", nics_per_node=8)
    base = TrainConfig(gpus=8, gpus_per_node=8, dp=8, ep=8, seq_len=4096, global_batch=64,
                       framework_efficiency=0.8)  # fmt: skip
    for recompute, reruns in (("none", 1.0), ("full", 4.0 / 3.0)):
        cfg = replace(base, recompute=recompute)  # type: ignore[arg-type]
        with_host = estimate_training_step(spec, count_params(spec), g, fabric, cfg)
        without = estimate_training_step(
            spec, count_params(spec), g, fabric, replace(cfg, moe_layer_host_s=0.0)
        )
        expected = 48 * cfg.microbatches * MOE_LAYER_HOST_MS / 1e3 * reruns / 0.8
        assert with_host.compute_s - without.compute_s == pytest.approx(expected, rel=1e-9)
        assert any("ms of host time per MoE layer" in a for a in with_host.assumptions)
    dense = find_model("llama-3.1-8b")
    cfg = replace(base, ep=1)
    a = estimate_training_step(dense, count_params(dense), g, fabric, cfg)
    b = estimate_training_step(
        dense, count_params(dense), g, fabric, replace(cfg, moe_layer_host_s=0)
    )
    assert a.time_s == b.time_s


def test_the_plans_json_states_the_moe_layers_host_time(capsys: pytest.CaptureFixture[str]) -> None:
    """`plan --json` carries the MoE layers' host time under framework (what the step charged);
    a dense model's is 0."""
    from fabriclens.model.moe import MOE_LAYER_HOST_MS

    for model, expected in (("mixtral-8x7b", MOE_LAYER_HOST_MS), ("llama-3.1-8b", 0)):
        run(["plan", model, "--gpus", "8", "--json"])
        doc = json.loads(capsys.readouterr().out)
        assert doc["framework"]["moe_layer_host_ms"] == expected
