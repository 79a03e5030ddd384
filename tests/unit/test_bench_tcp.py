"""The built-in TCP test on loopback: the server serves, the client measures, the server stops."""

from __future__ import annotations

import threading
import time

from fabriclens.bench.tcp import measure_rtt, measure_throughput, serve, summarise_rtt


def test_builtin_server_and_client_on_loopback() -> None:
    ports: list[int] = []
    done: list[int] = []
    server = threading.Thread(
        target=lambda: done.append(serve("127.0.0.1", 0, 4.0, ready=ports.append)), daemon=True
    )
    server.start()
    for _ in range(100):
        if ports:
            break
        time.sleep(0.02)
    assert ports, "the server did not start"
    result = measure_throughput("127.0.0.1", ports[0], streams=2, duration_s=0.5)
    assert result.bytes_received > 1e6 and result.goodput_bits_per_s > 0
    rtts = measure_rtt("127.0.0.1", ports[0], count=50)
    assert len(rtts) == 50
    summary = summarise_rtt(rtts)
    assert 0 < summary["p50_s"] <= summary["p99_s"]
    server.join(10)
    assert not server.is_alive() and done == [3]  # the server exits on its own after its timeout


def _start(bind: str, seconds: float) -> tuple[threading.Thread, list[int], list[int]]:
    ports: list[int] = []
    done: list[int] = []
    server = threading.Thread(
        target=lambda: done.append(serve(bind, 0, seconds, ready=ports.append)), daemon=True
    )
    server.start()
    for _ in range(100):
        if ports:
            break
        time.sleep(0.02)
    assert ports, f"the server did not start on {bind!r}"
    return server, ports, done


def test_ipv6_server_and_client_on_loopback() -> None:
    """`bench net --serve --bind ::1` listened over IPv4 only and refused the address."""
    server, ports, done = _start("::1", 2.0)
    assert len(measure_rtt("::1", ports[0], count=5)) == 5
    server.join(10)
    assert done == [1]  # one connection carries the echoes


def test_every_address_is_both_versions() -> None:
    """`doctor --serve` answers on every address: an IPv6 peer reaches it as an IPv4 one does
    (it listened on 0.0.0.0, so `doctor --peer` from an IPv6 host found no server)."""
    server, ports, done = _start("", 2.0)
    assert len(measure_rtt("127.0.0.1", ports[0], count=3)) == 3
    assert len(measure_rtt("::1", ports[0], count=3)) == 3
    server.join(10)
    assert done == [2]
