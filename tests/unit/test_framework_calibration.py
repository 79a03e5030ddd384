"""Training frameworks: the share of the kernel-level step each reaches, where it comes from, and
what the planner does with it (catalog frameworks.toml, benchmarks/calibrate_frameworks.py)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from calibrate_frameworks import (
    HOST_GRID_MS,
    MIN_ROWS,
    MOE_HOST_GRID_MS,
    REFERENCE,
    calibrate,
    calibrated_frameworks,
    host_misfit,
    moe_host_misfit,
    spreads,
)
from fabriclens.catalog import find_framework, find_gpu, find_link, find_model, frameworks, gpus
from fabriclens.catalog.load import share_owner
from fabriclens.catalog.schema import GENERATIONS
from fabriclens.cli.app import run
from fabriclens.model.arch import count_params
from fabriclens.model.collectives import Fabric
from fabriclens.model.layout import TrainConfig
from fabriclens.model.moe import MOE_LAYER_HOST_MS
from fabriclens.model.step import estimate_training_step
from fabriclens.plan.planner import make_plans
from fabriclens.plan.request import PlanRequest
from reference import all_training_cases, median_abs_error

KERNEL_LEVEL = all_training_cases(kernel_level=True)
CALIBRATIONS = calibrate(KERNEL_LEVEL)


def test_catalog_shares_are_the_calibration_medians() -> None:
    """Every share the catalog lists for a calibrated framework is the median measured /
    kernel-level speed over that framework's calibration rows on that generation (rounded to
    0.01), from at least MIN_ROWS rows; no share is listed without them."""
    calibrated = {(c.framework, c.generation): c for c in CALIBRATIONS if c.calibrated}
    fitted = calibrated_frameworks(CALIBRATIONS)
    for fw in frameworks():
        if fw.name not in fitted:
            continue
        for generation, share in fw.efficiency.items():
            cal = calibrated.get((fw.name, generation))
            assert cal is not None, f"{fw.name} on {generation}: no {MIN_ROWS} calibration rows"
            assert share == pytest.approx(cal.share, abs=0.005), (fw.name, generation, cal)
    assert ("pytorch", "hopper") in calibrated and ("pytorch", "ampere") in calibrated
    assert ("megatron", "ampere") in calibrated
    assert ("nemo", "hopper") in calibrated and ("nemo", "blackwell") in calibrated


def test_the_readme_shows_the_calibration_the_catalog_holds() -> None:
    """The README prints calibrate_frameworks.py's and calibrate_engines.py's tables; a table
    copied before the catalog was updated says so on its lines ("CATALOG DIFFERS") and must not
    stand there."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text("utf-8")
    assert "Host time per layer per micro-batch (pytorch)" in readme
    assert "CATALOG DIFFERS" not in readme


def test_a_framework_without_enough_rows_keeps_the_kernel_level() -> None:
    """No constant is fitted to a handful of rows: a framework under MIN_ROWS calibration rows on
    every generation is not calibrated (JAX had 9 until the tenth pass), and a catalog entry for
    one lists 1.0 and says it is not calibrated."""
    jax = [c for c in KERNEL_LEVEL if c.framework == "jax" and c.split == "calibration"]
    assert len(jax) >= MIN_ROWS and "jax" in calibrated_frameworks(CALIBRATIONS)
    few = [c for c in KERNEL_LEVEL if c.framework != "jax"] + jax[: MIN_ROWS - 1]
    assert "jax" not in calibrated_frameworks(calibrate(few))
    uncalibrated = {c.framework for c in CALIBRATIONS} - calibrated_frameworks(CALIBRATIONS)
    for name in uncalibrated:
        fw = find_framework(name)
        assert set(fw.efficiency.values()) == {1.0}, name
        assert "not calibrated" in fw.efficiency_source, name


def test_third_party_megatron_runs_reach_less_than_nvidias_recipes() -> None:
    """BLOOM (Megatron-DeepSpeed) and FlagPerf (Megatron-LM) run the same kernels as NVIDIA's
    NeMo recipes without its per-model tuning; their calibration rows sit well below the
    kernel-level step, where NVIDIA's recipes on H100 reach 0.90 of it, which is why they are a
    framework of their own. (NVIDIA's few A100 rows, 2022's NeMo Megatron without FlashAttention
    among them, are under the rule's count: A100 takes the H100 share.)"""
    share = {(c.framework, c.generation): c.share for c in CALIBRATIONS}
    assert share[("megatron", "ampere")] < 0.85 < share[("nemo", "hopper")]


def test_nvidias_recipes_reach_the_most_of_the_kernel_level_step() -> None:
    """The kernel-level step is an upper bound that tuning approaches: no calibrated share
    exceeds 1, and on every generation with their own calibration NVIDIA's tuned recipes (NeMo,
    Megatron-Bridge and its DGX Cloud benchmarks) reach a larger share than anyone else's runs
    (on Ampere, where they have too few rows and take Hopper's, eager PyTorch's share may pass
    theirs: its host time is priced apart, so its share covers the kernels alone). They are not
    the step itself: their H100 rows sit at 0.90 of it (BF16 and FP8 alike), their GB200 and
    B200 rows at 0.80."""
    for fw in frameworks():
        assert all(0 < share <= 1.0 for share in fw.efficiency.values()), fw.name
    nvidia = find_framework(REFERENCE)
    fitted = calibrated_frameworks(CALIBRATIONS)  # the others keep 1.0: not calibrated
    for fw in frameworks():
        for generation in GENERATIONS:
            if fw.name != REFERENCE and fw.name in fitted and generation in fw.efficiency:
                ours, taken_from = nvidia.efficiency_for(generation)
                theirs, _ = fw.efficiency_for(generation)
                if taken_from == generation:
                    assert ours >= theirs, (fw.name, generation, ours, theirs)
    share = {(c.framework, c.generation): c.share for c in CALIBRATIONS}
    assert 0.85 < share[("nemo", "hopper")] < 0.97 and 0.72 < share[("nemo", "blackwell")] < 0.85


def test_calibration_never_reads_a_held_out_row() -> None:
    """Scaling every held-out measurement a hundredfold changes no calibrated share."""
    poisoned = [
        c if c.split == "calibration" else replace(c, measured=c.measured * 100)
        for c in KERNEL_LEVEL
    ]
    assert calibrate(poisoned) == CALIBRATIONS
    # and the rows it does read move it: halving the calibration rows' speed halves the share
    slower = [
        replace(c, measured=c.measured * (2 if c.unit.startswith("s") else 0.5))
        for c in KERNEL_LEVEL
    ]
    halved = {(c.framework, c.generation): c.share for c in calibrate(slower)}
    for cal in CALIBRATIONS:
        assert halved[(cal.framework, cal.generation)] == pytest.approx(cal.share / 2)


def test_held_out_training_rows_meet_the_median_target() -> None:
    """Issue target (planner fidelity II): held-out training rows, median |error| <= 8%, with
    each row's own framework (reference/training*.csv `framework` column), over every held-out
    row (benchmarks/accuracy.py prints the same figure). At the kernel level (every share 1.0)
    the held-out rows that others than NVIDIA's recipes ran sit at ~14.5%, at their calibrated
    shares ~10%: the shares of eager PyTorch stacks and untuned Megatron are the difference."""
    held = [c for c in all_training_cases() if c.split == "held_out"]
    assert len(held) >= 275
    assert median_abs_error(held) <= 0.08
    others = [c for c in KERNEL_LEVEL if c.split == "held_out" and c.framework != REFERENCE]
    mine = [c for c in held if c.framework != REFERENCE]
    assert median_abs_error(others) > median_abs_error(mine) + 0.04


def test_eager_host_time_per_layer_is_the_best_fit_of_its_calibration_rows() -> None:
    """Eager PyTorch's published runs fall further below the kernel-level step the less GPU work
    a layer's micro-batch holds (Python and FSDP's hooks launch every op). The catalog's host
    time per layer (frameworks.toml layer_host_ms) is the grid value whose misfit of its dense
    calibration rows to one share per generation is least (benchmarks/calibrate_frameworks.py):
    less than at its grid neighbours, and well below none at all."""
    fw = find_framework("pytorch")
    step = HOST_GRID_MS[1] - HOST_GRID_MS[0]
    assert fw.layer_host_ms in HOST_GRID_MS and 0 < fw.layer_host_ms < HOST_GRID_MS[-1]
    here = host_misfit(fw.layer_host_ms)
    assert here < host_misfit(fw.layer_host_ms - step)
    assert here < host_misfit(fw.layer_host_ms + step)
    assert here < 0.9 * host_misfit(0.0)
    # the frameworks that take eager PyTorch's share take its host time; fused stacks have none
    for name in ("pytorch-compile", "nanotron"):
        assert find_framework(name).layer_host_ms == fw.layer_host_ms
    for name in ("nemo", "megatron", "jax"):
        assert find_framework(name).layer_host_ms == 0


def test_moe_host_time_per_layer_is_the_best_fit_of_the_moe_calibration_rows() -> None:
    """The MoE layers' host time per micro-batch (model/moe.py MOE_LAYER_HOST_MS: the router's
    and dispatcher's small kernels and their device-to-host sync) is the grid value whose misfit
    of the MoE calibration rows to their measured speed is least: less than at its grid
    neighbours, and well below none at all. The MoE rows it is judged on (held out) are in
    test_the_moe_host_time_brings_the_held_out_moe_rows_closer."""
    step = MOE_HOST_GRID_MS[1] - MOE_HOST_GRID_MS[0]
    assert MOE_LAYER_HOST_MS in MOE_HOST_GRID_MS and 0 < MOE_LAYER_HOST_MS < MOE_HOST_GRID_MS[-1]
    here = moe_host_misfit(MOE_LAYER_HOST_MS)
    assert here < moe_host_misfit(MOE_LAYER_HOST_MS - step)
    assert here < moe_host_misfit(MOE_LAYER_HOST_MS + step)
    assert here < 0.95 * moe_host_misfit(0.0)


def test_the_moe_host_time_brings_the_held_out_moe_rows_closer() -> None:
    """Judged on the MoE rows calibration never reads: with the host time their median |error|
    is lower than without it (16.4% without, 10.3% with, over 45 rows when it was set)."""
    import reference

    def held_moe_median() -> float:
        held = [c for c in all_training_cases() if c.moe and c.split == "held_out"]
        assert len(held) >= 40
        return median_abs_error(held)

    with_host = held_moe_median()
    with reference.trial_moe_host_time(0.0):
        without = held_moe_median()
    assert with_host < 0.8 * without


def test_eager_runs_fall_where_a_layers_kernels_are_short_and_the_host_time_follows() -> None:
    """benchmarks/host_time.py: eager PyTorch's published runs (every dense row) reach a smaller
    share of the kernel-level step the shorter a layer's kernels per micro-batch, NVIDIA's fused
    recipes do not; with the catalog's host time the eager runs' short-layer groups sit within 10%
    of the plan. (The short group's median was 0.71 of the long one's; with PEFT's one-GPU
    benchmark loop, whose LoRA runs at 840 tokens a micro-batch beat that trend, it is 0.75.)"""
    import statistics

    from host_time import grouped, kernel_cases

    kernel = kernel_cases()
    layer_ms = {c.row_id: c.layer_ms for c in kernel}
    eager = grouped(kernel, layer_ms, "pytorch")
    short, long = eager[0] + eager[1], eager[-1]  # under 8 ms; 64 ms and more
    assert len(short) >= 10 and len(long) >= 50
    assert statistics.median(short) < 0.8 * statistics.median(long)
    nvidia = grouped(kernel, layer_ms, "nemo")
    nv_short, nv_long = nvidia[0] + nvidia[1], nvidia[-1]
    assert statistics.median(nv_short) > 0.9 * statistics.median(nv_long)
    planned = grouped(all_training_cases(), layer_ms, "pytorch")
    for group in (planned[0] + planned[1], planned[2]):  # under 8 ms; 8-16 ms
        assert abs(statistics.median(group) - 1.0) <= 0.10


def test_a_generation_without_rows_takes_its_nearest_neighbour() -> None:
    fw = find_framework("pytorch")
    listed = dict(fw.efficiency)
    assert fw.efficiency_for("hopper") == (listed["hopper"], "hopper")
    assert fw.efficiency_for("blackwell") == (listed["hopper"], "hopper")
    assert fw.efficiency_for("volta") == (listed["ampere"], "ampere")
    assert fw.efficiency_for("ada") == (listed["hopper"], "hopper")  # a tie goes to the newer
    assert fw.efficiency_for("") == (listed["hopper"], "hopper")  # a GPU that does not say


def test_every_builtin_gpu_names_its_generation() -> None:
    for g in gpus():
        assert g.generation in GENERATIONS, g.name


H100 = find_gpu("h100-sxm")
SPEC = find_model("llama-3.1-8b")
ONE_GPU = Fabric(find_link("nvlink4-nvswitch"), None, 1, 1)


def test_the_share_scales_every_kernel() -> None:
    """On one GPU (no communication) the step at a share of 0.5 takes exactly twice as long."""
    cfg = TrainConfig(gpus=1, gpus_per_node=1, dp=1, zero=0, seq_len=2048, global_batch=4)
    full = estimate_training_step(SPEC, count_params(SPEC), H100, ONE_GPU, cfg)
    half = estimate_training_step(
        SPEC, count_params(SPEC), H100, ONE_GPU, replace(cfg, framework_efficiency=0.5)
    )
    assert half.time_s == pytest.approx(2 * full.time_s, rel=1e-12)
    assert any("0.50 of its rate" in a for a in half.assumptions)
    assert not any("of its rate" in a for a in full.assumptions)


def test_default_plan_is_eager_pytorch_with_h100_mfu_of_published_runs() -> None:
    """Issue item 5: `plan llama-3.1-8b --gpus 8` said 70% MFU; published H100 runs of that size
    sit at 33-46% (torchtitan's Llama-3.1-8B on 8 H100s: 33-39%, llm-foundry's MPT-7B: 42-46%).
    The default framework is eager PyTorch; the kernel-level figure beside it is NVIDIA's
    kernels at their rates, of which --framework nemo reaches its calibrated share."""
    req = PlanRequest(model=SPEC, gpu="h100-sxm", gpus=8)
    (plan,) = make_plans(req)
    assert plan.training is not None and plan.framework is not None
    assert plan.framework.name == "pytorch"
    assert 0.33 <= plan.training.mfu <= 0.46
    assert plan.kernel_level is not None and plan.config is not None
    # NVIDIA's recipes on the same layout (on its own, eager PyTorch picks a larger micro-batch,
    # which spreads its host time per layer over more tokens)
    cfg = plan.config
    same = replace(req, framework="nemo", tp=cfg.tp, pp=cfg.pp, dp=cfg.dp, zero=cfg.zero,
                   recompute=cfg.recompute, micro_batch=cfg.micro_batch)  # fmt: skip
    (mega,) = make_plans(same)
    assert mega.training is not None and mega.training.mfu > 0.55
    # NVIDIA's recipes sit between eager PyTorch and the kernel level, nearer the latter (their
    # share prices the kernels, not the exposed communication, so the ratio is near, not equal)
    nemo = find_framework("nemo").efficiency["hopper"]
    ratio = mega.training.tokens_per_s / plan.kernel_level.tokens_per_s
    assert plan.training.tokens_per_s < mega.training.tokens_per_s < plan.kernel_level.tokens_per_s
    assert ratio == pytest.approx(nemo, abs=0.01)
    assert any("framework: eager PyTorch" in n and "(default;" in n for n in plan.defaults)


def test_plan_on_an_uncalibrated_generation_says_it_is_an_estimate() -> None:
    (plan,) = make_plans(PlanRequest(model=SPEC, gpu="b200", gpus=8))
    assert any("hopper's value" in n and "estimate" in n for n in plan.defaults)


def test_framework_in_json_and_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["plan", "llama-3.1-8b", "--gpus", "8", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["layout"]["framework"] == "pytorch"
    fw = doc["framework"]
    assert fw["efficiency"] == pytest.approx(find_framework("pytorch").efficiency["hopper"])
    assert fw["kernel_level_tokens_per_s"] > doc["throughput"]["tokens_per_s"]
    assert fw["layer_host_ms"] == find_framework("pytorch").layer_host_ms
    assert run(["plan", "llama-3.1-8b", "--gpus", "8", "--framework", "nemo", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["framework"]["layer_host_ms"] == 0
    assert run(["plan", "llama-3.1-8b", "--gpus", "8", "--framework", "torchtitan", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["layout"]["framework"] == "pytorch"  # an alias
    # an inference plan reads no training framework: the option is refused as such
    assert run(["plan", "llama-3.1-8b", "-w", "inference", "--framework", "caffe"]) == 2
    err = capsys.readouterr().err
    assert "--framework applies to training plans" in err and err.count("\n") == 1
    for argv in (
        ["plan", "llama-3.1-8b", "--framework", "caffe"],
        ["search", "llama-3.1-8b", "--framework", "caffe"],
        ["advise", "llama-3.1-8b", "--framework", "caffe"],
    ):
        assert run(argv) == 2, argv
        err = capsys.readouterr().err
        assert "unknown training framework 'caffe'" in err and err.count("\n") == 1
    assert run(["catalog", "frameworks"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in ("nemo", "megatron", "pytorch", "pytorch-compile", "jax"))
    assert "elementwise" in out and "grad reduce" in out and "fp32" in out


def test_catalog_spreads_are_the_calibration_rows_deciles() -> None:
    """The likely range a plan prints is its framework's spread: the 5th and 95th percentile of
    measured / planned speed over that framework's calibration rows (MoE rows apart), planned at
    the catalog's shares; listed only where there are MIN_ROWS of them, and held-out rows never
    move it."""
    cases = all_training_cases()
    fitted = calibrated_frameworks(CALIBRATIONS)
    derived = {(s.framework, s.moe): s for s in spreads(cases, fitted)}
    assert ("pytorch", False) in derived and ("nemo", False) in derived
    assert ("nemo", True) in derived and ("megatron", False) in derived
    for fw in frameworks():
        if share_owner(fw.name) != fw.name:  # pytorch-compile: its base's share and spread
            continue
        for moe in (False, True):
            band, sp = fw.likely_range(moe), derived.get((fw.name, moe))
            if sp is None:
                assert band is None, (fw.name, moe)
                continue
            assert band is not None, (fw.name, moe, sp)
            assert band[2] == sp.runs >= MIN_ROWS
            assert band[0] == pytest.approx(sp.low, abs=0.005), (fw.name, moe)
            assert band[1] == pytest.approx(sp.high, abs=0.005), (fw.name, moe)
            # a framework's share is its dense rows' median, so their range holds the plan; MoE
            # rows set no share, and eager PyTorch's all ran slower than planned
            assert band[0] < 1 < band[1] if not moe else 0 < band[0] < band[1]
    assert (find_framework("pytorch").likely_range(True) or (0, 2))[1] < 1
    assert find_framework("jax").likely_range(True) is None  # no MoE rows: no MoE range
    assert find_framework("pytorch-compile").likely_range(False) == find_framework(
        "pytorch"
    ).likely_range(False)
    poisoned = [c if c.split == "calibration" else replace(c, measured=c.measured * 100)
                for c in cases]  # fmt: skip
    assert spreads(poisoned, fitted) == spreads(cases, fitted)


def test_plan_prints_its_frameworks_likely_range(capsys: pytest.CaptureFixture[str]) -> None:
    """The plan's speed is a median; beside it, where published runs of the framework fell:
    its speed times the spread's low and high, the step time divided by them (JSON and text);
    an MoE model takes the MoE spread; a framework without one says the range is not known."""
    argv = ["plan", "llama-3.1-8b", "--gpus", "16", "--network", "ndr-ib"]
    assert run([*argv, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    t, likely = doc["throughput"], doc["throughput"]["likely"]
    low, high, runs = find_framework("pytorch").likely_range(False) or (0, 0, 0)
    assert likely["known"] and likely["published_runs"] == runs and likely["share_of_runs"] == 0.9
    assert likely["tokens_per_s"] == pytest.approx([t["tokens_per_s"] * low,
                                                    t["tokens_per_s"] * high], rel=1e-3)  # fmt: skip
    time_s = doc["step"]["time_s"]
    assert likely["step_s"] == pytest.approx([time_s / high, time_s / low], rel=1e-3)
    assert run(argv) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"90% of {runs} published runs on this framework" in out
    assert f"{low:.2f}-{high:.2f}x" in out
    moe = ["plan", "mixtral-8x7b", "--gpus", "16", "--network", "ndr-ib", "--framework", "nemo"]
    assert run([*moe, "--json"]) == 0
    likely = json.loads(capsys.readouterr().out)["throughput"]["likely"]
    assert likely["speed_ratio"] == list(find_framework("nemo").likely_range(True) or ())[:2]
    assert run([*moe[:-1], "jax"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "Likely range not known: fewer than 10 published MoE runs of JAX" in out


def test_a_time_rows_speed_ratio_is_inverted_whatever_its_time_unit() -> None:
    """A row that measures a time (a training step in s/iteration, a decode token in ms/token)
    is slower than planned when its measured time is the longer; its measured / planned speed is
    planned time / measured time. The decode rows in ms/token were once taken as speeds, which
    turned the serving engines' likely ranges inside out."""
    from calibrate_frameworks import speed_ratio
    from reference import Case, all_inference_cases

    def case(unit: str, measured: float, predicted: float) -> Case:
        return Case("x", measured, predicted, unit, "src", "", "r", "calibration")

    assert speed_ratio(case("ms/token", 20.0, 10.0)) == pytest.approx(0.5)
    assert speed_ratio(case("s/iteration", 2.0, 1.0)) == pytest.approx(0.5)
    assert speed_ratio(case("s / iteration", 2.0, 1.0)) == pytest.approx(0.5)
    assert speed_ratio(case("tokens/s", 20.0, 10.0)) == pytest.approx(2.0)
    assert speed_ratio(case("tokens/s/GPU", 20.0, 10.0)) == pytest.approx(2.0)
    # every unit the reference rows use is one or the other
    units = {c.unit for c in all_inference_cases()} | {c.unit for c in all_training_cases()}
    times = {u for u in units if u.split("/")[0].strip() in ("s", "ms")}
    assert times == {"ms/token", "s/iteration", "s / iteration", "s"}


def test_maxtext_and_paxml_are_two_frameworks_by_the_code_that_ran_the_job() -> None:
    """MaxText and PaxML are two code bases on one JAX and XLA, calibrated apart (README, "MaxText
    and PaxML apart"): each name finds its own entry, each has its own calibrated H100 share, and
    every reference row whose source is a PaxML table says paxml, every MaxText one jax: the
    label follows the source, never the error."""
    from reference import _rows

    assert find_framework("maxtext").name == "jax" and find_framework("pax").name == "paxml"
    assert share_owner("paxml") == "paxml" and share_owner("maxtext") == "jax"
    shares = {(c.framework, c.generation) for c in CALIBRATIONS if c.calibrated}
    assert {("jax", "hopper"), ("paxml", "hopper")} <= shares
    for row in _rows("training_more.csv"):
        source = row["source"].lower()
        if "paxml" in source or "/pax/" in source:
            assert row["framework"] == "paxml", row["id"]
        elif "maxtext" in source:
            assert row["framework"] == "jax", row["id"]
