"""Tests toward one peer: ICMP latency, jitter and loss (ping), TCP connect time, path MTU
(ping with don't-fragment), the path per hop (mtr, where installed). Every command has a timeout;
nothing user-supplied passes through a shell (the host is an argument, checked first)."""

from __future__ import annotations

import ipaddress
import math
import os
import re
import shutil
import socket
import statistics
import time
from collections.abc import Callable
from typing import Any

from fabriclens.parse.ping import parse_ping
from fabriclens.probes._run import run_command

_HOSTNAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$")
IP_ICMP_OVERHEAD = 28  # IPv4 header + ICMP header: ping -s N sends N + 28 bytes of IP packet


def valid_host(host: str) -> bool:
    """An IP address or a DNS name (no options, no shell characters)."""
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return bool(_HOSTNAME.match(host))


def _ping(host: str, count: int, interval: float, size: int | None = None, df: bool = False) -> Any:
    argv = ["ping", "-n", "-c", str(count), "-i", str(interval), "-W", "1"]
    if size is not None:
        argv += ["-s", str(size)]
    if df:
        argv += ["-M", "do"]
    return run_command([*argv, host], timeout_s=count * (interval + 1) + 5)


def tcp_connect_ms(host: str, port: int, tries: int = 5) -> float | None:
    """Median TCP connect time; a refused connect still times the round trip (the RST comes back)."""
    times = []
    for _ in range(tries):
        t0 = time.perf_counter()
        try:
            with socket.create_connection((host, port), timeout=3):
                pass
        except ConnectionRefusedError:
            pass
        except OSError:
            break  # unreachable or timed out: more tries only add seconds
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times) if times else None


def route_device(host: str) -> str | None:
    res = run_command(["ip", "route", "get", host], timeout_s=5)
    m = re.search(r"\bdev (\S+)", res.stdout) if res.ok else None
    return m.group(1) if m else None


def pings_per_size(loss: float) -> int:
    """Don't-fragment pings per probed size so that, at this echo loss, a size that fits is
    wrongly judged too big less than 0.1% of the time (a size passes when any echo returns)."""
    if loss <= 0:
        return 2
    if loss >= 0.5:
        return 10
    return min(10, max(2, math.ceil(math.log(0.001) / math.log(loss))))


def path_mtu(host: str, iface_mtu: int, loss: float = 0.0) -> int | None:
    """Largest IP packet that crosses the path unfragmented, probed with don't-fragment pings
    between 576 and the interface's MTU (a silent drop of big frames shows as a smaller path MTU).
    ``loss`` (the echo loss already measured, from few pings: taken generously) sets how many
    pings each size gets."""
    count = pings_per_size(min(0.5, 1.5 * loss + 0.05) if loss > 0 else 0.0)
    gap = 0.05 if os.geteuid() == 0 else 0.2

    def passes(mtu: int) -> bool:
        res = _ping(host, count, gap, size=mtu - IP_ICMP_OVERHEAD, df=True)
        summary = parse_ping(res.stdout)
        return bool(summary and summary.received)

    top = min(iface_mtu, 65535)  # an IP packet's largest size (loopback's MTU is 65536)
    if passes(top):
        return top
    lo, hi = 576, top - 1
    if not passes(lo):
        return None
    while lo < hi:  # largest size that passes
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if passes(mid) else (lo, mid - 1)
    return lo


def mtr_path(host: str) -> dict[str, Any] | None:
    """Hops and the worst hop's loss from `mtr --json`, where mtr is installed."""
    if shutil.which("mtr") is None:
        return None
    from fabriclens.parse.mtr import parse_mtr_json

    fast = ["-i", "0.2"] if os.geteuid() == 0 else []  # intervals below 1 s need root
    # -G 1: wait 1 s, not the default 5 s, for late replies after the last probe (mtr >= 0.87)
    res = run_command(["mtr", "--json", "-n", "-c", "5", *fast, "-G", "1", host], timeout_s=60)
    if not res.ok and "option" in res.stderr:  # an older mtr without --gracetime
        res = run_command(["mtr", "--json", "-n", "-c", "5", *fast, host], timeout_s=60)
    hops = parse_mtr_json(res.stdout)
    return {"hops": hops, "command": res.command} if hops is not None else None


def ping_interval(count: int) -> float:
    """Seconds between pings: 0.2 s (what anyone may use), 20 ms for long runs as root."""
    return 0.02 if count > 20 and os.geteuid() == 0 else 0.2


PEER_STEPS = ("ping", "TCP connect", "path MTU", "route (mtr)")  # probe_peer's steps, in order


def probe_peer(host: str, port: int, iface_mtus: dict[str, int], pings: int = 20,
               on_step: Callable[[int, str], None] | None = None) -> dict[str, Any]:  # fmt: skip
    """Facts about the path to ``host`` (values None where a test could not run). ``on_step(i,
    name)`` is told before each of ``PEER_STEPS`` starts; an unreachable peer skips the last two."""
    step = on_step or (lambda _i, _name: None)
    step(0, f"{PEER_STEPS[0]} x{pings}")
    _ping(host, 3, 0.2)  # warm-up, not counted: the first probes pay for ARP / neighbour discovery
    res = _ping(host, pings, ping_interval(pings))
    ping = parse_ping(res.stdout)
    dev = route_device(host)
    mtu = min(iface_mtus.get(dev or "", 1500), 65535)
    reachable = bool(ping and ping.received)
    median = statistics.median(ping.times_ms) if ping and ping.times_ms else None
    step(1, PEER_STEPS[1])
    connect_ms = tcp_connect_ms(host, port)
    path = route = None
    if reachable:
        step(2, PEER_STEPS[2])
        path = path_mtu(host, mtu, ping.loss if ping else 0.0)
        step(3, PEER_STEPS[3])
        route = mtr_path(host)
    return {
        "peer": host,
        "ping_ok": ping is not None,
        "reachable": reachable,
        "sent": ping.sent if ping else 0,
        "received": ping.received if ping else 0,
        "loss_pct": round(100 * ping.loss, 2) if ping else None,
        "rtt_ms": median,
        "rtt_avg_ms": ping.avg_ms if ping else None,
        "jitter_ms": ping.mdev_ms if ping else None,
        "tcp_port": port,
        "tcp_connect_ms": connect_ms,
        "device": dev,
        "iface_mtu": mtu,
        "path_mtu": path,
        "mtr": route,
        "commands": [res.command, f"ping -M do -s {mtu - IP_ICMP_OVERHEAD} -c 2 {host}"],
    }
