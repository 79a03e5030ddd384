"""Layout search: finds the published layouts of training.csv (or one the model rates at least
as fast), explains every rank, and builds a Pareto front across networks."""

from __future__ import annotations

import csv
import itertools
from dataclasses import replace

import pytest

from fabriclens.catalog import find_model
from fabriclens.plan.planner import make_plans
from fabriclens.plan.request import PlanRequest
from fabriclens.plan.search import search
from reference import _gpt_spec, reference_dir


def _rows() -> list[dict[str, str]]:
    with (reference_dir() / "training.csv").open(encoding="utf-8") as fh:
        return [r for r in csv.DictReader(fh) if r["model"] in ("22B", "GPT-3 175B")]


@pytest.mark.parametrize("row", _rows(), ids=lambda r: f"{r['model']} {r['recompute']}")
def test_search_finds_the_published_layout_or_better(row: dict[str, str]) -> None:
    """Source: Korthikanti et al. 2022 Table 5 (reference/training.csv)."""
    req = PlanRequest(
        model=_gpt_spec(row), gpu="a100-sxm-80gb", gpus=int(row["gpus"]), workload="pretrain",
        networks=("hdr-ib",), nics_per_node=8, seq_len=int(row["seq_len"]),
        global_batch=int(row["global_batch"]), flash_attention=False,
    )  # fmt: skip
    published = make_plans(replace(req, tp=int(row["tp"]), pp=int(row["pp"]), micro_batch=1,
                                   recompute=row["recompute"], interleave=int(row["interleave"]),
                                   sequence_parallel=row["sequence_parallel"] == "yes"))[0]  # fmt: skip
    assert published.training is not None
    found = search(req, ("hdr-ib",), top=3).results[0]
    assert found.top, "nothing fits"
    assert found.best_time_s <= published.training.time_s * (1 + 1e-9)
    assert all(x.why_slower for x in found.top[1:])


def test_pareto_front_and_upgrades() -> None:
    req = PlanRequest(
        model=find_model("llama-3.1-8b"),
        gpu="h100-sxm",
        gpus=16,
        workload="pretrain",
        nics_per_node=1,
    )
    result = search(req, ("10gbe", "100gbe", "100g-roce", "ndr-ib"), top=2)
    times = {r.network: r.best_time_s for r in result.results}
    costs = {r.network: r.cost_relative for r in result.results}
    front = list(result.pareto)
    assert front[0] == min(costs, key=lambda n: costs[n])
    for lo, hi in itertools.pairwise(front):
        assert costs[hi] > costs[lo] and times[hi] < times[lo]
    assert len(result.upgrades) == len(front) - 1
    assert result.layouts_evaluated >= 4 * 100


@pytest.mark.parametrize("model", ["llama-3.1-70b", "mixtral-8x7b"])
def test_vectorised_ranking_equals_one_by_one(model: str) -> None:
    from fabriclens.plan.planner import evaluate_layouts

    req = PlanRequest(model=find_model(model), gpu="h100-sxm", gpus=32, workload="pretrain")
    fast = evaluate_layouts(req, "ndr-ib", wide=True, top=8, vectorised=True)
    slow = evaluate_layouts(req, "ndr-ib", wide=True, top=8, vectorised=False)
    assert fast.fitting == slow.fitting > 0
    assert [e.time_s for _, e in fast.ranked] == pytest.approx(
        [e.time_s for _, e in slow.ranked], rel=1e-9
    )


def test_search_tries_whole_experts_beside_tensor_parallelism() -> None:
    """For a mixture of experts with TP > 1, search tries the experts split over the TP ranks
    (Megatron-Core's default) and whole on each rank with the expert-parallel group folded over
    the TP ranks (--etp 1, MoE Parallel Folding). Qwen3-235B-A22B on 256 H100s under NVIDIA's
    recipes: the best TP 2 layout keeps the experts whole, where the all-to-all stays inside a
    node; pinning --etp 2 finds only slower TP 2 layouts, and a layout line names etp1."""
    from fabriclens.plan.search import describe

    base = dict(model=find_model("qwen3-235b-a22b"), gpu="h100-sxm", gpus=256,
                workload="pretrain", framework="nemo", tp=2)  # fmt: skip
    folded = search(PlanRequest(**base), ("ndr-ib",), top=3).results[0].top
    split = search(PlanRequest(**base, etp=2), ("ndr-ib",), top=3).results[0].top
    assert folded[0].config.expert_tp == 1 and "etp1" in describe(folded[0].config)
    assert all(r.config.expert_tp == 2 and "etp1" not in describe(r.config) for r in split)
    assert folded[0].estimate.time_s < split[0].estimate.time_s


def test_search_keeps_the_pins_plan_takes() -> None:
    """search pins what plan pins: --ep and --cp hold in every layout it ranks, and a job
    without FlashAttention, with dropout or with the gradients reduced after the backward ranks
    slower than the same job without them (their steps are the plan's). A layout that differs
    from the one above only by TP, with the experts whole on both, names no etp change."""
    from fabriclens.plan.search import why_slower

    moe = dict(model=find_model("deepseek-v3"), gpu="h100-sxm", gpus=256, workload="pretrain")
    ranked = search(PlanRequest(**moe, ep=32), ("ndr-ib",), top=5).results[0].top  # type: ignore[arg-type]
    assert ranked and all(r.config.ep == 32 for r in ranked)
    for above, below in itertools.pairwise(ranked):
        line = why_slower((above.config, above.estimate), (below.config, below.estimate))
        assert "etp 1->1" not in line
    dense = dict(model=find_model("llama-3.1-8b"), gpu="h100-sxm", gpus=16, workload="pretrain",
                 networks=("100g-roce",))  # fmt: skip
    plain = search(PlanRequest(**dense, cp=2), ("100g-roce",), top=1).results[0].top[0]  # type: ignore[arg-type]
    assert plain.config.cp == 2
    for extra in ({"flash_attention": False}, {"dropout": True}, {"dp_overlap": False}):
        other = search(PlanRequest(**dense, cp=2, **extra), ("100g-roce",), top=1).results[0].top[0]  # type: ignore[arg-type]
        assert other.estimate.time_s > plain.estimate.time_s, extra


def test_search_takes_the_pins_from_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    """The same pins as flags: `search --ep 32 --cp 1 --no-flash-attention --dropout
    --no-dp-overlap` ranks only layouts with 32 expert ranks."""
    import json

    from fabriclens.cli.app import run

    argv = ["search", "deepseek-v3", "--gpus", "256", "--network", "ndr-ib", "--ep", "32",
            "--cp", "1", "--no-flash-attention", "--dropout", "--no-dp-overlap", "--top", "3",
            "--json"]  # fmt: skip
    assert run(argv) == 0
    top = json.loads(capsys.readouterr().out)["networks"][0]["top"]
    assert top and all(layout["ep"] == 32 for layout in top)
