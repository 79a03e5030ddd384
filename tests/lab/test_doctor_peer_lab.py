"""`doctor --peer` between lab hosts: the configured delay and loss, and an MTU black hole."""

from __future__ import annotations

import json
import sys

from fabriclens.lab import lab_session

FL = [sys.executable, "-m", "fabriclens", "doctor", "--json", "--sys-root", "/"]


def _rules(doc: dict) -> set[str]:  # type: ignore[type-arg]
    return {f["rule"] for f in doc["findings"]}


def test_peer_delay_loss_and_path_mtu(quietly) -> None:  # type: ignore[no-untyped-def]
    with lab_session("dp", hosts=2, overrides={"h2": {"delay": "5ms", "loss": "20%"}}) as lab:

        def measure() -> dict:  # type: ignore[type-arg]
            res = lab.run("h1", [*FL, "--peer", lab.host("h2").address], timeout_s=120)
            assert res.returncode in (0, 1), res.stderr
            return json.loads(res.stdout)  # type: ignore[no-any-return]

        lossy, _ = quietly(measure, lambda d: abs(d["peers"][0]["rtt_ms"] - 10.0) <= 0.3 + 0.5)
    peer = lossy["peers"][0]
    assert peer["reachable"] and peer["sent"] == 20
    assert abs(peer["rtt_ms"] - 10.0) <= 0.8  # 5 ms each way on h2's link
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
