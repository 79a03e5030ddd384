"""Transfer time: exact arithmetic at catalog goodput, one-to-many strategies."""

from __future__ import annotations

import math

import pytest

from fabriclens.catalog import find_network
from fabriclens.errors import InputError
from fabriclens.plan.transfer import plan_transfer


def test_140gb_over_1gbe_takes_about_20_minutes() -> None:
    """1GbE TCP goodput = 0.94 Gbit/s (1448/1538 per frame; reference/links.csv: 941)."""
    plan = plan_transfer(140e9, "1gbe")
    assert plan.goodput_bits_per_s == pytest.approx(0.94e9)
    assert plan.time_one_s == pytest.approx(140e9 * 8 / 0.94e9)
    assert 19 * 60 < plan.time_one_s < 21 * 60


def test_one_to_many_strategies() -> None:
    plan = plan_transfer(10e9, "10gbe", hosts=8, storage_bits_per_s=40e9)
    t1 = plan.time_one_s
    by_name = {s.name: s.time_s for s in plan.strategies}
    assert by_name["sequential"] == pytest.approx(8 * t1)
    assert by_name["tree fan-out"] == pytest.approx(math.ceil(math.log2(9)) * t1)
    assert by_name["pipeline chain"] == pytest.approx(t1 + 7 * 64e6 * 8 / plan.goodput_bits_per_s)
    assert by_name["shared storage"] == pytest.approx(max(t1, 8 * 10e9 * 8 / 40e9))
    assert plan.best.name == "pipeline chain"


def test_measured_rate_replaces_the_catalog() -> None:
    plan = plan_transfer(1e9, "1gbe", measured_bits_per_s=500e6)
    assert plan.time_one_s == pytest.approx(16.0)
    assert plan.goodput_source == "measured by the user"


def test_protocols() -> None:
    ndr = find_network("ndr-ib")
    rdma = plan_transfer(1e12, "ndr-ib", protocol="rdma")
    tcp = plan_transfer(1e12, "ndr-ib", protocol="tcp")
    assert rdma.goodput_bits_per_s == pytest.approx(ndr.rate_bits_per_s * ndr.efficiency)
    assert tcp.goodput_bits_per_s < rdma.goodput_bits_per_s
    with pytest.raises(InputError, match="has no RDMA"):
        plan_transfer(1e9, "1gbe", protocol="rdma")
    with pytest.raises(InputError):
        plan_transfer(0, "1gbe")


@pytest.mark.parametrize(
    ("text", "wire_bits_per_s"), [("1Gbit/s", 1e9), ("125MB/s", 1e9), ("3GB/s", 24e9)]
)
def test_every_rate_option_reads_bytes_and_bits_exactly(text: str, wire_bits_per_s: float) -> None:
    """doctor/bench --expect, plan/collective --network and lab --bandwidth share parse_rate."""
    from fabriclens.lab.spec import LinkSpec, with_settings
    from fabriclens.plan.planner import network_or_rate
    from fabriclens.plan.transfer import WIRE_GOODPUT, expected_goodput

    assert expected_goodput(text)[0] == pytest.approx(wire_bits_per_s * WIRE_GOODPUT)
    assert network_or_rate(text).rate_bits_per_s == pytest.approx(wire_bits_per_s)
    spec = with_settings(LinkSpec(), {"bandwidth": text})
    assert spec.bandwidth_bits_per_s == pytest.approx(wire_bits_per_s)


def test_an_ambiguous_rate_is_refused_where_a_network_is_named() -> None:
    from fabriclens.plan.planner import network_or_rate
    from fabriclens.plan.transfer import expected_goodput

    for ask in (network_or_rate, expected_goodput):
        with pytest.raises(InputError, match="could mean bits or bytes"):
            ask("10gb")
    with pytest.raises(InputError, match="unknown network"):
        network_or_rate("5g")
