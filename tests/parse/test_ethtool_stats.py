"""`ethtool -S` counters and the congestion facts doctor reads from them."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from conftest import FIXTURES
from fabriclens.diagnose.host import diagnose_host, nic_facts
from fabriclens.parse.ethtool import congestion_counters, parse_ethtool_stats
from fabriclens.parse.netdev import NetInterface


def test_mlx5_counters() -> None:
    stats = parse_ethtool_stats((FIXTURES / "ethtool-S-mlx5-congested.txt").read_text())
    assert stats["rx_prio3_pause"] == 884211 and "NIC statistics" not in stats
    c = congestion_counters(stats)
    # pause frames: both directions, per priority (durations and transitions are not frames)
    assert c["pause_frames"] == 884211 + 120034
    assert (
        c["discards"] == 3321 + 12 + 5 + 2 and c["ecn_marked"] == 50123 and c["out_of_buffer"] == 17
    )
    assert c["pause_storms"] == 0
    assert congestion_counters({}) == dict.fromkeys(c, 0)  # a driver without these counters


def test_congestion_findings_and_what_rose() -> None:
    nic = NetInterface("ens1f0", "up", 100000, "full", 4200, "mlx5_core", True, {})
    then = congestion_counters(
        parse_ethtool_stats((FIXTURES / "ethtool-S-mlx5-congested.txt").read_text())
    )
    now = then | {"pause_frames": then["pause_frames"] + 20000}
    ids = {f.rule for f in diagnose_host([nic_facts(nic, None, nic, 2.0, now, then)], [])}
    assert ids == {"nic-discards", "nic-rx-out-of-buffer", "nic-pause-rising"}
    quiet = {f.rule for f in diagnose_host([nic_facts(nic, None, nic, 2.0, then, then)], [])}
    assert "nic-pause-rising" not in quiet  # the same counters twice: nothing rising now
    assert diagnose_host([nic_facts(nic, None)], []) == []  # ethtool -S not read: nothing claimed


@given(st.text(max_size=400))
def test_garbage(text: str) -> None:
    congestion_counters(parse_ethtool_stats(text))
