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
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from fabriclens.parse.ping import parse_ping
from fabriclens.probes._run import run_command

_HOSTNAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$")
IP_ICMP_OVERHEAD = 28  # IPv4 header + ICMP header: ping -s N sends N + 28 bytes of IP packet
IP6_ICMP_OVERHEAD = 48  # IPv6 header (40) + ICMPv6 header (8)
MIN_PATH_MTU = {4: 576, 6: 1280}  # the smallest packet each IP version must carry unfragmented
RESOLVE_TIMEOUT_S = 5.0  # a peer's name is looked up within this


def ip_version(host: str) -> int:
    """4 or 6: the address family ping uses for ``host`` (a name: the first address it resolves
    to, as ping takes it; 4 when it does not resolve within RESOLVE_TIMEOUT_S)."""
    try:
        return ipaddress.ip_address(host).version
    except ValueError:
        pass
    from fabriclens.bench.http_timing import Deadline, resolve

    try:  # getaddrinfo takes no timeout: resolve() bounds it
        family = resolve(host, 0, Deadline(RESOLVE_TIMEOUT_S))[0]
    except (OSError, UnicodeError):  # a timeout is an OSError too
        return 4
    return 6 if family == socket.AF_INET6 else 4


def icmp_overhead(version: int) -> int:
    """Bytes ping adds to its ``-s`` payload to make the IP packet."""
    return IP6_ICMP_OVERHEAD if version == 6 else IP_ICMP_OVERHEAD


def valid_host(host: str) -> bool:
    """An IP address or a DNS name (no options, no shell characters)."""
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return bool(_HOSTNAME.match(host))


def _ping(host: str, count: int, interval: float, size: int | None = None, df: bool = False,
          deadline: int | None = None) -> Any:  # fmt: skip
    argv = ["ping", "-n", "-c", str(count), "-i", str(interval), "-W", "1"]
    if deadline is not None:  # exit then, whatever has been sent or received
        argv += ["-w", str(deadline)]
    if size is not None:
        argv += ["-s", str(size)]
    if df:
        argv += ["-M", "do"]
    bound = deadline if deadline is not None else count * (interval + 1)
    return run_command([*argv, host], timeout_s=bound + 5)


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


MTU_PROBES_AT_ONCE = 8  # don't-fragment sizes probed at once in each round of the search
COMMON_PATH_MTUS = (1500,)  # probed with the size above it in the first round: a jumbo-frame
# black hole on plain Ethernet is the usual answer, found in one round


def _spread(lo: int, hi: int, n: int) -> set[int]:
    """Up to ``n`` sizes spread evenly over (lo, hi]."""
    if hi - lo <= n:
        return set(range(lo + 1, hi + 1))
    step = (hi - lo) / (n + 1)
    return {lo + round(step * i) for i in range(1, n + 1)}


def path_mtu(
    host: str,
    iface_mtu: int,
    loss: float = 0.0,
    rtt_ms: float | None = None,
    version: int | None = None,
) -> int | None:
    """Largest IP packet that crosses the path unfragmented, probed with don't-fragment pings
    between IP's minimum (576 bytes over IPv4, 1280 over IPv6) and the interface's MTU (a silent
    drop of big frames shows as a smaller path MTU).

    Each probed size pings until one echo returns or its deadline passes, so a size that fits
    costs a round trip and one that vanishes the deadline; several sizes go at once in each
    round (a search in rounds of ``MTU_PROBES_AT_ONCE``, not one size after another). ``loss``
    (the echo loss already measured, from few pings: taken generously) sets how many pings each
    size may send before its deadline, ``rtt_ms`` (the measured round trip) how long the last
    one's echo is waited for; ``version`` the IP version (found from ``host`` when not given)."""
    count = pings_per_size(min(0.5, 1.5 * loss + 0.05) if loss > 0 else 0.0)
    gap = 0.05 if os.geteuid() == 0 else 0.2
    version = version or ip_version(host)
    overhead = icmp_overhead(version)  # an IPv6 header is 20 bytes more: 1500 is not 1480
    wait_s = max(0.5, 2 * (rtt_ms if rtt_ms is not None else 250.0) / 1e3)
    deadline = max(1, math.ceil(count * gap + wait_s))  # ping's -w takes whole seconds

    def one(mtu: int) -> bool:  # pings until the first echo, or the deadline
        res = _ping(host, 1, gap, size=mtu - overhead, df=True, deadline=deadline)
        summary = parse_ping(res.stdout)
        return bool(summary and summary.received)

    def passes(sizes: set[int]) -> dict[int, bool]:
        with ThreadPoolExecutor(len(sizes)) as pool:
            return dict(zip(sorted(sizes), pool.map(one, sorted(sizes)), strict=True))

    top = min(iface_mtu, 65535)  # an IP packet's largest size (loopback's MTU is 65536)
    if passes({top})[top]:
        return top
    floor = MIN_PATH_MTU[version]
    if top <= floor:
        return None
    lo, hi = floor, top - 1  # the answer lies in [lo, hi] once lo is known to pass
    sizes = {lo} | {s for c in COMMON_PATH_MTUS for s in (c, c + 1) if lo < c < hi}
    sizes |= _spread(lo, hi, MTU_PROBES_AT_ONCE - len(sizes))
    while True:
        got = passes(sizes)
        if got.get(floor) is False:
            return None
        hi = min([s - 1 for s, ok in got.items() if not ok] + [hi])
        lo = max([s for s, ok in got.items() if ok and s <= hi] + [lo])
        if lo >= hi:
            return lo
        sizes = _spread(lo, hi, MTU_PROBES_AT_ONCE)


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


PEER_SILENT_S = 2  # seconds of pings that decide a peer silent to the warm-up is down


PEER_STEPS = ("ping", "TCP connect", "path MTU", "route (mtr)")  # probe_peer's steps, in order


def probe_peer(host: str, port: int, iface_mtus: dict[str, int], pings: int = 20,
               on_step: Callable[[int, str], None] | None = None) -> dict[str, Any]:  # fmt: skip
    """Facts about the path to ``host`` (values None where a test could not run). ``on_step(i,
    name)`` is told before each of ``PEER_STEPS`` starts; a peer that answers no ping skips the
    last two."""
    step = on_step or (lambda _i, _name: None)
    step(0, f"{PEER_STEPS[0]} x{pings}")
    # warm-up, not counted: the first probes pay for ARP / neighbour discovery
    warm = parse_ping(_ping(host, 3, 0.2).stdout)
    res = None
    tcp_tried, connect_ms = False, None
    if not (warm and warm.received):
        # Silent to the warm-up: down, or a burst of loss (neighbour discovery over a lossy
        # link), or a firewall that drops ICMP. A peer that answers TCP is alive: its counted
        # pings measure the path. One that does not gets one more chance, 2 s of pings ending
        # at the first echo (ping slows down when nothing answers: 500 pings 20 ms apart took
        # 36 s to a host whose link was down); silent again, the peer is down and those pings
        # are its result.
        connect_ms, tcp_tried = tcp_connect_ms(host, port), True
        if connect_ms is None:
            res = _ping(host, 1, 0.2, deadline=PEER_SILENT_S)
            again = parse_ping(res.stdout)
            res = res if not (again and again.received) else None
    if res is None:
        res = _ping(host, pings, ping_interval(pings))
    ping = parse_ping(res.stdout)
    dev = route_device(host)
    mtu = min(iface_mtus.get(dev or "", 1500), 65535)
    version = ip_version(host)
    icmp = bool(ping and ping.received)
    # ping prints 3-4 significant digits: the median (of two, a float sum) to 0.1 µs
    median = round(statistics.median(ping.times_ms), 4) if ping and ping.times_ms else None
    step(1, PEER_STEPS[1])
    if not tcp_tried:
        connect_ms = tcp_connect_ms(host, port)
    # A peer behind a firewall that drops ICMP echo (a cloud security group's default) answers
    # TCP but none of its counted pings: reachable, its loss not measured (100% of pings lost
    # says nothing about the path), and its path MTU and route, which need ICMP, not checked.
    reachable = icmp or connect_ms is not None
    path = route = None
    if icmp:
        step(2, PEER_STEPS[2])
        path = path_mtu(host, mtu, ping.loss if ping else 0.0, rtt_ms=median, version=version)
        step(3, PEER_STEPS[3])
        route = mtr_path(host)
    return {
        "peer": host,
        "ping_ok": ping is not None,
        "reachable": reachable,
        "icmp_answered": icmp,
        "sent": ping.sent if ping else 0,
        "received": ping.received if ping else 0,
        "loss_pct": round(100 * ping.loss, 2) if ping and (icmp or not reachable) else None,
        "rtt_ms": median,
        "rtt_avg_ms": ping.avg_ms if ping else None,
        "jitter_ms": ping.mdev_ms if ping else None,
        "tcp_port": port,
        "tcp_connect_ms": connect_ms,
        "device": dev,
        "iface_mtu": mtu,
        "path_mtu": path,
        "mtr": route,
        "commands": [
            res.command,
            f"ping -M do -s {mtu - icmp_overhead(version)} -c 2 {host}",
        ],
    }
