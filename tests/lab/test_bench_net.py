"""`fabriclens bench net` across a lab link: the measured goodput is what the cap allows."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from fabriclens.lab import LinkSpec, lab_session

WIRE_GOODPUT = 1448 / 1538


@pytest.mark.parametrize("tool", ["builtin", "iperf3"])
def test_bench_net_measures_the_lab_cap(tool: str, quietly) -> None:  # type: ignore[no-untyped-def]
    """200 Mbit/s lab link: goodput within 5% of 200 x 1448/1538 Mbit/s, and judged ok."""
    with lab_session("bn", hosts=2, link=LinkSpec(bandwidth_bits_per_s=200e6)) as lab:
        if tool == "builtin":
            server = [
                sys.executable,
                "-m",
                "fabriclens",
                "bench",
                "net",
                "--serve",
                "--bind",
                "0.0.0.0",
                "--timeout",
                "30",
            ]
        else:
            server = ["iperf3", "-s"]
        lab.popen("h2", server, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        lab.wait_listening("h2", 5299 if tool == "builtin" else 5201)
        argv = [sys.executable, "-m", "fabriclens", "bench", "net", lab.host("h2").address, "--tool", tool,
                "--streams", "1", "--duration", "2", "--expect", "200mbit", "--json"]  # fmt: skip

        def measure() -> dict:  # type: ignore[type-arg]
            res = lab.run("h1", argv, timeout_s=60)
            assert res.returncode in (0, 1), res.stderr
            return json.loads(res.stdout)  # type: ignore[no-any-return]

        want = 200e6 * WIRE_GOODPUT
        doc, stolen = quietly(
            measure, lambda d: abs(d["best_goodput_bits_per_s"] / want - 1) <= 0.05
        )
    assert doc["tool"] == tool
    # a host that steals CPU can slow the sender by that share; it cannot make a cap leak
    assert 1 - 0.05 - stolen <= doc["best_goodput_bits_per_s"] / want <= 1.05
    assert doc["level"] == "ok"


def test_bench_net_flags_a_slow_link() -> None:
    """A host capped at 50 Mbit/s where 200 Mbit/s was expected: exit 1, critical."""
    with lab_session("bs", hosts=2, overrides={"h2": {"bandwidth": "50mbit"}}) as lab:
        lab.popen("h2", [sys.executable, "-m", "fabriclens", "bench", "net", "--serve", "--bind", "0.0.0.0", "--timeout", "30"],
                  stdout=subprocess.DEVNULL)  # fmt: skip
        lab.wait_listening("h2", 5299)
        res = lab.run("h1", [sys.executable, "-m", "fabriclens", "bench", "net", lab.host("h2").address, "--tool", "builtin",
                             "--streams", "1", "--duration", "2", "--expect", "200mbit", "--json"], timeout_s=60)  # fmt: skip
    assert res.returncode == 1
    assert json.loads(res.stdout)["level"] == "critical"
