"""A network comparison compares networks: every network gets the same NICs per node."""

from __future__ import annotations

import pytest

from fabriclens.catalog import find_model, find_network
from fabriclens.plan.advise import Facts, advise
from fabriclens.plan.planner import make_plans
from fabriclens.plan.request import PlanRequest
from fabriclens.plan.search import search

REQ = PlanRequest(model=find_model("llama-3.1-8b"), gpu="h100-sxm", gpus=16, tp=1, pp=1, zero=1,
                  recompute="none", micro_batch=1)  # fmt: skip
NETS = ("25gbe", "100g-roce", "ndr-ib")


def test_plan_comparison_gives_every_network_the_same_nic_count_and_says_so() -> None:
    plans = make_plans(PlanRequest(**{**REQ.__dict__, "networks": NETS}))
    assert {p.nics_per_node for p in plans} == {8}  # one per GPU, TCP included
    for p in plans:
        assert any("8 for every network compared" in d for d in p.defaults)


def test_a_given_nic_count_holds_for_every_network() -> None:
    plans = make_plans(PlanRequest(**{**REQ.__dict__, "networks": NETS, "nics_per_node": 2}))
    assert {p.nics_per_node for p in plans} == {2}


def test_a_single_network_keeps_its_own_default() -> None:
    tcp, ib = (make_plans(PlanRequest(**{**REQ.__dict__, "networks": (n,)}))[0] for n in ("25gbe", "ndr-ib"))  # fmt: skip
    assert (tcp.nics_per_node, ib.nics_per_node) == (1, 8)


def _per_port(name: str) -> float:
    return find_network(name).cost_relative


def test_search_and_advise_compare_like_with_like() -> None:
    """Same NIC count on every tier: network costs differ only by the per-port cost."""
    result = search(REQ, NETS, top=1)
    costs = {r.network: r.cost_relative for r in result.results}
    assert costs["ndr-ib"] / costs["25gbe"] == pytest.approx(
        _per_port("ndr-ib") / _per_port("25gbe")
    )
    adv = advise(Facts("small-cluster", 2, workload="pretrain"), REQ, tiers=NETS)
    tiers = {t.network: t.cost_relative for t in adv.tiers}
    assert tiers["ndr-ib"] / tiers["25gbe"] == pytest.approx(
        _per_port("ndr-ib") / _per_port("25gbe")
    )
    assert any("for every network compared" in a for a in adv.assumptions)


def test_cloud_fabrics_keep_their_instance_nic_count() -> None:
    """AWS p5: 32 EFA NICs of 100 Gbit/s per node (AWS EC2 p5 instance page); in a comparison the
    other networks get the common count and p5 keeps its own; --nics-per-node still wins."""
    plans = make_plans(PlanRequest(**{**REQ.__dict__, "networks": ("aws-efa-p5", "ndr-ib")}))
    assert {p.network.name: p.nics_per_node for p in plans} == {"aws-efa-p5": 32, "ndr-ib": 8}
    assert any("aws-efa-p5 keep the NICs" in n for n in plans[0].defaults)
    alone = make_plans(PlanRequest(**{**REQ.__dict__, "networks": ("aws-efa-p5",)}))
    assert alone[0].nics_per_node == 32
    pinned = make_plans(
        PlanRequest(**{**REQ.__dict__, "networks": ("aws-efa-p5",), "nics_per_node": 4})
    )
    assert pinned[0].nics_per_node == 4
