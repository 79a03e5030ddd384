"""Output captured from the real tools on the test machine: mtr --json, ethtool and ethtool -S
on a virtio NIC (no speed, no supported modes, no mlx5 counters: nothing may be claimed)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from conftest import FIXTURES
from fabriclens.diagnose.host import diagnose_host, nic_facts
from fabriclens.parse.ethtool import congestion_counters, parse_ethtool, parse_ethtool_stats
from fabriclens.parse.mtr import parse_mtr_json
from fabriclens.parse.netdev import NetInterface


def test_mtr_json() -> None:
    hops = parse_mtr_json((FIXTURES / "mtr-loopback.json").read_text())
    assert hops == [
        {"host": "127.0.0.1", "loss_pct": 0.0, "avg_ms": 0.081, "best_ms": 0.07, "worst_ms": 0.092}
    ]
    assert (
        parse_mtr_json('{"report": {"hubs": "x"}}') is None
        and parse_mtr_json("mtr: unknown host") is None
    )


def test_virtio_nic_claims_nothing() -> None:
    info = parse_ethtool((FIXTURES / "ethtool-virtio.txt").read_text())
    assert info.speed_mbps is None and info.supported_mbps == [] and info.link_detected is True
    stats = parse_ethtool_stats((FIXTURES / "ethtool-S-virtio.txt").read_text())
    assert stats["rx_kicks"] > 0 and "NIC statistics" not in stats
    cong = congestion_counters(stats)
    assert cong == dict.fromkeys(cong, 0)
    nic = NetInterface("eth0", "up", None, None, 1400, "virtio_net", True, {})
    assert diagnose_host([nic_facts(nic, info, nic, 1.0, cong, cong)], []) == []


@given(st.text(max_size=300))
def test_mtr_garbage(text: str) -> None:
    parse_mtr_json(text)
