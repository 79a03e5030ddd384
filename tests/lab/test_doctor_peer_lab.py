"""`doctor --peer` between lab hosts: the configured delay and loss, and an MTU black hole."""

from __future__ import annotations

import json
import subprocess
import sys

from fabriclens.lab import lab_session

FL = [sys.executable, "-m", "fabriclens", "doctor", "--json", "--sys-root", "/"]


def _rules(doc: dict) -> set[str]:  # type: ignore[type-arg]
    return {f["rule"] for f in doc["findings"]}


def test_peer_delay_loss_and_path_mtu(quietly) -> None:  # type: ignore[no-untyped-def]
    """The configured 5 ms each way on h2's link is read as 10 ms more round trip than the same
    path without it. Where the kernel has no netem the delay is a userspace stage, whose own
    forwarding adds to every round trip as much as the host's scheduling gives it (0.1-1.2 ms
    on a busy two-core machine), so the path is measured first with the stage and no delay."""
    with lab_session("dp", hosts=2, overrides={"h2": {"delay": "0ms", "loss": "20%"}}) as lab:

        def measure() -> dict:  # type: ignore[type-arg]
            res = lab.run("h1", [*FL, "--peer", lab.host("h2").address], timeout_s=120)
            assert res.returncode in (0, 1), res.stderr
            return json.loads(res.stdout)  # type: ignore[no-any-return]

        base = measure()["peers"][0]["rtt_ms"]
        assert base is not None and base < 5.0, base  # the path itself, no delay yet
        lab.impair("h2", {"delay": "5ms"})
        lossy, _ = quietly(
            measure,
            lambda d: (
                d["peers"][0]["rtt_ms"] is not None
                and abs(d["peers"][0]["rtt_ms"] - base - 10.0) <= 0.3 + 0.5
            ),
        )
    peer = lossy["peers"][0]
    assert peer["reachable"] and peer["sent"] == 20
    assert abs(peer["rtt_ms"] - base - 10.0) <= 0.8  # 5 ms each way on h2's link
    assert peer["loss_pct"] > 0 and "peer-loss" in _rules(
        lossy
    )  # 19% per echo: P(no loss in 20) ~ 1.5%... see below
    assert peer["path_mtu"] == 1500 and not peer["path_mtu_below"]

    with lab_session("dm", hosts=2) as lab:
        lab.impair(
            "h2", {"mtu": "9000"}
        )  # jumbo frames on h2, not on the switch: big frames vanish
        res = lab.run("h2", [*FL, "--peer", lab.host("h1").address], timeout_s=120)
    doc = json.loads(res.stdout)
    assert res.returncode == 1
    assert doc["peers"][0]["iface_mtu"] == 9000 and doc["peers"][0]["path_mtu"] == 1500
    assert "peer-path-mtu-below-interface" in _rules(doc)


def test_peer_over_ipv6_path_mtu_and_throughput() -> None:
    """Over IPv6 a ping carries 48 bytes of headers, not IPv4's 28: a clean 1500-byte path must
    read 1500 and raise no path MTU finding (it read 1480, a false black hole). `doctor --serve`
    answers IPv6 peers too (it listened on 0.0.0.0 alone: no throughput test over IPv6)."""
    with lab_session("d6", hosts=2) as lab:
        for i, h in enumerate(("h1", "h2"), 1):
            added = lab.run(h, ["ip", "-6", "addr", "add", f"fd00:f1::{i}/64", "dev", "eth0", "nodad"])  # fmt: skip
            assert added.returncode == 0, added.stderr
        lab.popen("h2", [sys.executable, "-m", "fabriclens", "doctor", "--serve", "--serve-for", "60"],
                  stdout=subprocess.DEVNULL)  # fmt: skip
        lab.wait_listening("h2", 5299)
        res = lab.run("h1", [*FL, "--peer", "fd00:f1::2", "--expect", "1gbit"], timeout_s=120)
    doc = json.loads(res.stdout)
    peer = doc["peers"][0]
    assert peer["reachable"] and peer["iface_mtu"] == 1500 and peer["path_mtu"] == 1500, peer
    assert "peer-path-mtu-below-interface" not in _rules(doc)
    assert "ping -M do -s 1452 -c 2 fd00:f1::2" in peer["commands"]
    assert peer["goodput_bits_per_s"] and peer["goodput_bits_per_s"] > 1e8, peer


def test_a_peer_that_drops_icmp_echo_is_reachable() -> None:
    """A peer that ignores ping (as behind a cloud security group) but answers TCP: reachable,
    `peer-icmp-blocked` (info), its throughput measured; it was called unreachable (critical)
    and its throughput test skipped."""
    with lab_session("di", hosts=2) as lab:
        ignored = lab.run("h2", ["sysctl", "-w", "net.ipv4.icmp_echo_ignore_all=1"])
        assert ignored.returncode == 0, ignored.stderr
        lab.popen("h2", [sys.executable, "-m", "fabriclens", "doctor", "--serve", "--serve-for", "60"],
                  stdout=subprocess.DEVNULL)  # fmt: skip
        lab.wait_listening("h2", 5299)
        res = lab.run("h1", [*FL, "--peer", lab.host("h2").address, "--expect", "1gbit"], timeout_s=120)  # fmt: skip
    doc = json.loads(res.stdout)
    peer = doc["peers"][0]
    assert peer["reachable"] and not peer["icmp_answered"] and peer["received"] == 0, peer
    assert (
        peer["loss_pct"] is None and peer["path_mtu"] is None and peer["tcp_connect_ms"] is not None
    )
    assert peer["goodput_bits_per_s"] and peer["goodput_bits_per_s"] > 1e8, peer
    assert "peer-icmp-blocked" in _rules(doc) and "peer-unreachable" not in _rules(doc)
    assert not {"peer-loss", "peer-latency-high"} & _rules(doc)
