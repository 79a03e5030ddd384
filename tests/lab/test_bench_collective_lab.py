"""`bench collective` and `bench p2p` over gloo between lab hosts, one rank per host, rendezvous
on host 1: on 1 Gbit/s links the all_reduce plateau agrees with the planner's 1GbE TCP ring
within 20% and with a bare torch.distributed loop within 5%; a host capped at 200 Mbit/s is the
one `bench p2p` names, a host 2 ms away the one slow to answer.

The links carry jumbo frames (MTU 9000): with 1500-byte frames the kernel's per-packet work for
four ranks' traffic saturates this 2-core machine and both our harness and the bare loop reach
only ~50% of the wire (benchmarks/bench.py reports that case too); with 9000-byte frames they
reach the wire. The planner's expectation stays the 1500-MTU one (1448/1538 of the rate), which
jumbo frames beat by ~5%."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from typing import Any

import pytest

from fabriclens.lab import Lab, LinkSpec, lab_session

if os.environ.get("CI") != "true":
    pytest.importorskip("torch", reason="needs torch (make test installs torch==2.13.0)")

# the reference method: a bare torch.distributed timing loop, as one would write it by hand
BARE_LOOP = """
import os, time, torch, torch.distributed as dist
dist.init_process_group("gloo", init_method="env://")
n = dist.get_world_size()
x = torch.ones(32_000_000 // 4)
dist.all_reduce(x)
dist.barrier()
t0 = time.perf_counter()
for _ in range(5):
    dist.all_reduce(x)
dt = (time.perf_counter() - t0) / 5
t = torch.tensor([dt])
dist.all_reduce(t, op=dist.ReduceOp.MAX)
if dist.get_rank() == 0:
    print(32e6 / t.item() / 1e9 * 2 * (n - 1) / n)
dist.destroy_process_group()
"""


def _ranks(lab: Lab, argv: list[str], hosts: list[str], port: int) -> tuple[int, str, str]:
    """Run ``python -m fabriclens argv`` (or ``python -c ...``) as one rank per lab host; returns
    rank 0's status, stdout, stderr."""
    procs: list[subprocess.Popen[bytes]] = []
    master = lab.host(hosts[0]).address
    for rank, h in enumerate(hosts):
        env = ["env", f"RANK={rank}", f"WORLD_SIZE={len(hosts)}", f"MASTER_ADDR={master}", f"MASTER_PORT={port}",
               "GLOO_SOCKET_IFNAME=eth0", f"FABRICLENS_NODE={h}"]  # fmt: skip
        cmd = argv if argv[0] == "-c" else ["-m", "fabriclens", *argv]
        procs.append(lab.popen(h, [*env, sys.executable, *cmd],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE))  # fmt: skip
    out, err = procs[0].communicate(timeout=300)
    for p in procs[1:]:
        p.wait(timeout=60)
    return procs[0].returncode, out.decode(), err.decode()


def _delay_over_noise(lat: dict[str, Any]) -> float:
    """How far the shift of h3's pairs over the clean pairs' median exceeds the clean pairs'
    spread in the same run (positive: the delay shows above the noise)."""
    h3_pairs = [p["us"] for p in lat.get("worst_latency_pairs", []) if "h3" in p["hosts"]]
    others = [p["us"] for p in lat.get("worst_latency_pairs", []) if "h3" not in p["hosts"]]
    if not h3_pairs or not others:
        return -1.0
    shift = statistics.median(h3_pairs) - statistics.median(others)
    return shift - (max(others) - min(others))


def _at_32mb(doc: dict[str, Any]) -> float:
    return float(next(r["busbw_GBps"] for r in doc["sizes"] if r["size_bytes"] == 32_000_000))


def test_all_reduce_plateau_matches_the_planner_and_p2p_names_the_slow_host(quietly) -> None:  # type: ignore[no-untyped-def]
    hosts = ["h1", "h2", "h3", "h4"]
    with lab_session("bc", hosts=4, link=LinkSpec(bandwidth_bits_per_s=1e9, mtu=9000)) as lab:

        def once() -> tuple[dict[str, Any], float]:
            """Our report, then the bare loop on the same links."""
            code, out, err = _ranks(lab, ["bench", "collective", "--op", "all_reduce", "--min-bytes", "8MB",
                                          "--max-bytes", "32MB", "--iters", "5", "--warmup", "1", "--network", "1gbe",
                                          "--check", "--json"], hosts, 29511)  # fmt: skip
            assert code in (0, 1), err
            bare_code, bare, bare_err = _ranks(lab, ["-c", BARE_LOOP], hosts, 29514)
            assert bare_code == 0, bare_err
            return json.loads(out), float(bare)

        def measure() -> tuple[dict[str, Any], float]:
            """Both methods twice, alternating; the best of each (four ranks share two cores here,
            and a run that loses the scheduler only ever comes out slow)."""
            runs = [once(), once()]
            return max((r[0] for r in runs), key=_at_32mb), max(r[1] for r in runs)

        def good(m: tuple[dict[str, Any], float]) -> bool:
            return abs(m[0]["efficiency"] - 1) <= 0.2 and abs(_at_32mb(m[0]) / m[1] - 1) <= 0.05

        (doc, bare), _ = quietly(measure, good)
        lab.impair("h4", {"bandwidth": "200mbit"})
        (code, out, err), _ = quietly(
            lambda: _ranks(
                lab, ["bench", "p2p", "--size", "8MB", "--iters", "2", "--json"], hosts, 29512
            ),
            lambda r: r[0] == 1 and json.loads(r[1])["suspect_nodes"] == ["h4"],
        )
        lab.impair("h3", {"delay": "2ms"})  # 2 ms each way on h3's link: its pairs answer late
        (slow_code, slow_out, slow_err), _ = quietly(
            lambda: _ranks(
                lab, ["bench", "p2p", "--size", "64KB", "--iters", "1", "--json"], hosts, 29513
            ),
            lambda r: r[0] == 1 and _delay_over_noise(json.loads(r[1])) > 0,
        )
    assert doc["ranks"] == 4 and doc["hosts"] == hosts and doc["backend"] == "gloo"
    assert all(r["wrong"] == 0 for r in doc["sizes"])
    # planner: a TCP ring over 1GbE (the catalog's 94% of 1 Gbit/s of goodput per link); within 20%
    assert abs(doc["efficiency"] - 1) <= 0.2, (
        doc["plateau_busbw_GBps"],
        doc["expected_busbw_GBps"],
    )
    assert code == 1, err  # a suspect node is a finding
    p2p = json.loads(out)
    assert p2p["suspect_nodes"] == ["h4"], p2p["node_median_GBps"]
    assert {tuple(sorted(p["hosts"])) for p in p2p["worst_pairs"][:3]} == {
        ("h1", "h4"),
        ("h2", "h4"),
        ("h3", "h4"),
    }
    assert slow_code == 1, slow_err
    lat = json.loads(slow_out)
    assert lat["latency_suspect_nodes"] == ["h3"], lat["node_median_latency_us"]
    h3_pairs = [p["us"] for p in lat["worst_latency_pairs"] if "h3" in p["hosts"]]
    others = [p["us"] for p in lat["worst_latency_pairs"] if "h3" not in p["hosts"]]
    assert len(h3_pairs) == 3 and len(others) == 3, lat
    # Judged against this run, not a fixed margin. p2p latency is one way, and a pair with h3
    # crosses h3's link once, so each of its pairs carries the configured 2 ms: none can be
    # faster (physics, not a tolerance). The four ranks queue for this machine's two cores, so a
    # clean pair can take over a millisecond at times, and a delayed pair waits out its delay
    # while the others compete for the cores: the gap between them need not be the whole delay.
    # What must hold is that the shift of h3's pairs over the clean pairs' median is larger than
    # the spread of the clean pairs measured in the same run: the delay, not the noise. Like the
    # timings above it is measured up to three times (measured_quietly): a moment when another
    # process holds the cores widens one run's spread, not the next; a finder that misses the
    # delay misses it every time and still fails.
    delay_us = 2000.0
    assert min(h3_pairs) >= delay_us, lat
    assert _delay_over_noise(lat) > 0, lat
    # the same op and size timed by the bare loop: within 5%
    assert _at_32mb(doc) == pytest.approx(bare, rel=0.05), (_at_32mb(doc), bare)
