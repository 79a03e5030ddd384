"""iputils ping output -> counts and round trips; host validation for --peer."""

from __future__ import annotations

from fabriclens.parse.ping import parse_ping
from fabriclens.probes.peer import valid_host

OUT = """PING 198.18.0.2 (198.18.0.2) 56(84) bytes of data.
64 bytes from 198.18.0.2: icmp_seq=1 ttl=64 time=10.3 ms
64 bytes from 198.18.0.2: icmp_seq=3 ttl=64 time=10.1 ms

--- 198.18.0.2 ping statistics ---
4 packets transmitted, 2 received, 50% packet loss, time 603ms
rtt min/avg/max/mdev = 10.100/10.200/10.300/0.100 ms
"""
DEAD = """PING 198.18.0.9 (198.18.0.9) 56(84) bytes of data.

--- 198.18.0.9 ping statistics ---
3 packets transmitted, 0 received, 100% packet loss, time 2030ms
"""


def test_parse_ping() -> None:
    s = parse_ping(OUT)
    assert s is not None and (s.sent, s.received, s.loss) == (4, 2, 0.5)
    assert (s.min_ms, s.avg_ms, s.max_ms, s.mdev_ms, s.times_ms) == (
        10.1,
        10.2,
        10.3,
        0.1,
        (10.3, 10.1),
    )
    dead = parse_ping(DEAD)
    assert dead is not None and dead.received == 0 and dead.avg_ms is None and dead.loss == 1.0
    assert parse_ping("ping: unknown host") is None


def test_valid_host() -> None:
    assert all(valid_host(h) for h in ("10.0.0.2", "fe80::1", "node-2.cluster.local", "gpu01"))
    assert not any(valid_host(h) for h in ("-f", "a b", "host;rm", "", "x" * 300))


def test_pings_per_probed_size_grow_with_loss() -> None:
    """A size that fits must not be judged too big for want of echoes: at loss L, k pings all
    vanish with probability L^k, kept under 0.1%."""
    from fabriclens.probes.peer import pings_per_size

    assert pings_per_size(0.0) == 2
    for loss in (0.01, 0.04, 0.2, 0.36, 0.49):
        k = pings_per_size(loss)
        assert loss**k < 0.001 and 2 <= k <= 10
    assert pings_per_size(0.9) == 10
