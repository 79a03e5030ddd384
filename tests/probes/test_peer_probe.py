"""The peer probe's ping plans, against a fake `ping` that knows the path: the path MTU found
exactly in few rounds of don't-fragment sizes, and a peer silent to the warm-up given a deadline."""

from __future__ import annotations

import random
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import ClassVar

import pytest

from fabriclens.probes import peer
from fabriclens.probes._run import CommandResult


def _summary(sent: int, received: int) -> str:
    return (f"--- x ping statistics ---\n{sent} packets transmitted, {received} received, "
            f"{100 * (sent - received) // sent}% packet loss, time 10ms\n")  # fmt: skip


class FakePath:
    """`ping` over a path whose largest unfragmented IP packet is ``mtu`` bytes (None: the peer
    is down); records every ping's arguments."""

    def __init__(self, mtu: int | None) -> None:
        self.mtu, self.calls, self._lock = mtu, [], threading.Lock()  # type: ignore[var-annotated]

    def __call__(self, argv: Sequence[str], timeout_s: float = 10.0) -> CommandResult:
        args = list(argv)
        with self._lock:
            self.calls.append(args)
        v6 = ":" in args[-1]
        extra = peer.IP6_ICMP_OVERHEAD if v6 else peer.IP_ICMP_OVERHEAD
        size = int(args[args.index("-s") + 1]) + extra if "-s" in args else 84
        got = int(self.mtu is not None and size <= self.mtu)
        return CommandResult(tuple(args), 0 if got else 1, _summary(1, got), "")


class Rounds(ThreadPoolExecutor):
    """The thread pools the search opens, one per round, and the sizes each probes."""

    sizes: ClassVar[list[int]] = []

    def map(self, fn, *iterables, **kw):  # type: ignore[no-untyped-def, override]
        Rounds.sizes.append(len(list(iterables[0])))
        return super().map(fn, *iterables, **kw)


@pytest.mark.parametrize("mtu", [576, 577, 1280, 1450, 1499, 1500, 1501, 4096, 8999])
def test_path_mtu_found_exactly_in_rounds(monkeypatch: pytest.MonkeyPatch, mtu: int) -> None:
    fake = FakePath(mtu)
    monkeypatch.setattr(peer, "run_command", fake)
    monkeypatch.setattr(peer, "ThreadPoolExecutor", Rounds)
    Rounds.sizes = []
    assert peer.path_mtu("10.0.0.2", 9000) == mtu
    # every probe goes in a round of up to MTU_PROBES_AT_ONCE sizes at once: the interface's
    # size, then at most 5 rounds over 576..8999, where one size at a time takes 14 in a row
    assert sum(Rounds.sizes) == len(fake.calls) and max(Rounds.sizes) <= peer.MTU_PROBES_AT_ONCE
    assert Rounds.sizes[0] == 1 and len(Rounds.sizes) <= 6, Rounds.sizes


def test_path_mtu_random_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(7)
    for _ in range(200):
        top = rng.choice([1500, 4200, 9000, 65536])
        mtu = rng.randint(576, min(top, 65535))
        monkeypatch.setattr(peer, "run_command", FakePath(mtu))
        assert peer.path_mtu("10.0.0.2", top) == mtu, (top, mtu)


def test_jumbo_black_hole_costs_two_rounds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Jumbo frames on this host, 1500 on the path (the usual black hole): the interface's size,
    then one round that holds 1500 and 1501."""
    fake = FakePath(1500)
    monkeypatch.setattr(peer, "run_command", fake)
    assert peer.path_mtu("10.0.0.2", 9000) == 1500
    assert len(fake.calls) == 1 + peer.MTU_PROBES_AT_ONCE
    # each size pings until one echo returns, or its deadline (whole seconds, as ping takes it)
    assert all(c[c.index("-c") + 1] == "1" and c[c.index("-w") + 1] == "1" for c in fake.calls)


@pytest.mark.parametrize("mtu", [1280, 1480, 1500, 9000])
def test_path_mtu_over_ipv6(monkeypatch: pytest.MonkeyPatch, mtu: int) -> None:
    """An IPv6 packet carries 48 bytes of headers, not 28: a clean 1500-byte path is 1500, not
    1480 (which would be a false "path MTU below the interface" finding)."""
    fake = FakePath(mtu)
    monkeypatch.setattr(peer, "run_command", fake)
    assert peer.path_mtu("fd00:77::2", 9000) == mtu
    assert fake.calls[0][fake.calls[0].index("-s") + 1] == str(9000 - 48)


def test_ipv6_minimum_is_1280(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakePath(1279)
    monkeypatch.setattr(peer, "run_command", fake)
    assert peer.path_mtu("fd00:77::2", 1500) is None


def test_ip_version() -> None:
    assert peer.ip_version("10.0.0.2") == 4 and peer.ip_version("fe80::1") == 6
    assert peer.ip_version("::1") == 6 and peer.ip_version("localhost") in (4, 6)


def test_path_mtu_nothing_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(peer, "run_command", FakePath(None))
    assert peer.path_mtu("10.0.0.2", 1500) is None
    monkeypatch.setattr(peer, "run_command", FakePath(None))
    assert peer.path_mtu("10.0.0.2", 68) is None  # an interface below IPv4's 576 minimum


def test_deadline_follows_the_round_trip_and_loss(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakePath(1400)
    monkeypatch.setattr(peer, "run_command", fake)
    peer.path_mtu("10.0.0.2", 1500, loss=0.3, rtt_ms=1800.0)  # a lossy satellite hop
    deadline = int(fake.calls[0][fake.calls[0].index("-w") + 1])
    assert deadline >= 4  # 2 round trips of 1.8 s after the last of several pings


def _probe(monkeypatch: pytest.MonkeyPatch, fake: FakePath) -> dict:  # type: ignore[type-arg]
    monkeypatch.setattr(peer, "run_command", fake)
    monkeypatch.setattr(peer, "route_device", lambda host: "eth0")
    monkeypatch.setattr(peer, "tcp_connect_ms", lambda host, port: None)
    monkeypatch.setattr(peer, "mtr_path", lambda host: None)
    return peer.probe_peer("10.0.0.2", 22, {"eth0": 1500}, pings=500)


def test_a_peer_that_answers_gets_its_counted_pings(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakePath(1500)
    out = _probe(monkeypatch, fake)
    counted = fake.calls[1]  # after the 3 warm-up pings
    assert counted[counted.index("-c") + 1] == "500" and "-w" not in counted
    assert out["reachable"]


def test_a_peer_silent_to_the_warm_up_gets_2_s_not_its_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A down peer: the warm-up, then 2 s of pings ending at the first echo; none comes, so the
    500 counted pings (36 s where ping slows down unanswered) are not sent."""
    fake = FakePath(None)
    out = _probe(monkeypatch, fake)
    assert len(fake.calls) == 2
    probe = fake.calls[1]
    assert probe[probe.index("-c") + 1] == "1" and probe[probe.index("-w") + 1] == "2"
    assert not out["reachable"] and out["path_mtu"] is None


def test_a_lossy_peer_silent_to_the_warm_up_still_gets_its_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The warm-up's 3 echoes all lost on a lossy path (a few percent of runs at 36% loss): the
    2 s probe hears an echo, and the counted pings run as asked (sent == --pings)."""
    fake = FakePath(1500)
    warm = iter([0])  # the warm-up hears nothing, everything after does

    def lossy(argv: Sequence[str], timeout_s: float = 10.0) -> CommandResult:
        res = fake(argv, timeout_s)
        if next(warm, 1) == 0:
            return CommandResult(res.argv, 1, _summary(3, 0), "")
        return res

    out = _probe(monkeypatch, lossy)  # type: ignore[arg-type]
    counted = fake.calls[2]
    assert counted[counted.index("-c") + 1] == "500" and "-w" not in counted
    assert out["reachable"]


def test_a_peer_behind_an_icmp_firewall_is_reachable(monkeypatch: pytest.MonkeyPatch) -> None:
    """No ping answers but a TCP connect does (a security group that drops ICMP echo): the peer
    is reachable, its loss not measured (not 100%), its path MTU not probed."""
    fake = FakePath(None)
    monkeypatch.setattr(peer, "run_command", fake)
    monkeypatch.setattr(peer, "route_device", lambda host: "eth0")
    monkeypatch.setattr(peer, "tcp_connect_ms", lambda host, port: 0.3)
    monkeypatch.setattr(peer, "mtr_path", lambda host: None)
    out = peer.probe_peer("10.0.0.2", 22, {"eth0": 1500}, pings=20)
    assert out["reachable"] and not out["icmp_answered"]
    assert out["loss_pct"] is None and out["rtt_ms"] is None and out["path_mtu"] is None
    # the warm-up, then (TCP answered: the peer is alive) the counted pings; no 2 s probe and
    # no don't-fragment pings
    assert len(fake.calls) == 2 and fake.calls[1][fake.calls[1].index("-c") + 1] == "20"


def test_a_down_peer_keeps_its_loss(monkeypatch: pytest.MonkeyPatch) -> None:
    out = _probe(monkeypatch, FakePath(None))
    assert not out["reachable"] and not out["icmp_answered"] and out["loss_pct"] == 100


def test_a_lossy_peer_that_answers_tcp_gets_its_counted_pings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The warm-up lost whole (a burst of loss while the neighbour is resolved over a lossy link)
    but TCP answers: the peer is alive, and its counted pings measure the path, so its loss is
    seen; the 2 s probe, also lost in such a burst, once made it look ICMP-blocked."""
    fake = FakePath(1500)
    lost = iter([0])  # the warm-up hears nothing, everything after does

    def lossy(argv: Sequence[str], timeout_s: float = 10.0) -> CommandResult:
        res = fake(argv, timeout_s)
        return CommandResult(res.argv, 1, _summary(3, 0), "") if next(lost, 1) == 0 else res

    monkeypatch.setattr(peer, "run_command", lossy)
    monkeypatch.setattr(peer, "route_device", lambda host: "eth0")
    monkeypatch.setattr(peer, "tcp_connect_ms", lambda host, port: 0.4)
    monkeypatch.setattr(peer, "mtr_path", lambda host: None)
    out = peer.probe_peer("10.0.0.2", 22, {"eth0": 1500}, pings=20)
    counted = fake.calls[1]
    assert counted[counted.index("-c") + 1] == "20" and "-w" not in counted
    assert out["icmp_answered"] and out["loss_pct"] == 0 and out["path_mtu"] == 1500
