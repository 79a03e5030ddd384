"""Moving model files and checkpoints: time over a link at realistic goodput, one-to-many.

Goodput comes from the catalog (1GbE TCP = 94% of line rate: 1448 payload bytes per 1538 on the
wire) or from a rate the user measured. One-to-many strategies:
  sequential   the source sends to each host in turn: N x t1
  parallel     the source sends to all at once: its uplink is shared, still N x t1
  tree         every host that has the file serves another (rsync/scp fan-out, torrent-like):
               the holders double each round, ceil(log2(N + 1)) x t1
  pipeline     the file flows in chunks along a chain (like a broadcast ring): t1 + (N-1) x chunk
  storage      every host reads from shared storage: max(t1, N x size / storage bandwidth)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fabriclens.catalog import find_network, networks
from fabriclens.catalog.schema import Network
from fabriclens.errors import InputError
from fabriclens.units import format_decimal_bytes, format_rate

PIPELINE_CHUNK_BYTES = 64e6
WIRE_GOODPUT = 1448 / 1538  # TCP payload per 1500-MTU Ethernet frame on the wire
DEFAULT_TCP_EFFICIENCY = 0.6  # estimate for TCP over an RDMA-class NIC with no TCP entry


@dataclass(frozen=True, slots=True)
class Strategy:
    """One way of getting the file to every host."""

    name: str
    time_s: float
    note: str


@dataclass(frozen=True, slots=True)
class TransferPlan:
    """How long a transfer takes, and how to spread it to many hosts."""

    size_bytes: float
    link: str
    protocol: str
    goodput_bits_per_s: float
    goodput_source: str
    hosts: int
    time_one_s: float
    strategies: tuple[Strategy, ...]
    advice: tuple[str, ...]

    @property
    def best(self) -> Strategy:
        """The fastest way to reach every host."""
        reach_all = [s for s in self.strategies if self.hosts == 1 or s.name != "one host"]
        return min(reach_all, key=lambda s: s.time_s)


def link_goodput(network: Network, protocol: str) -> tuple[float, str]:
    """Payload bits per second one stream of ``protocol`` gets over one NIC of ``network``."""
    if protocol == "rdma":
        if network.kind == "tcp":
            raise InputError(
                f"{network.name} has no RDMA", "use --protocol tcp, or a RoCE/InfiniBand link"
            )
        return network.rate_bits_per_s * network.efficiency, network.efficiency_source
    if network.kind == "tcp":
        return network.rate_bits_per_s * network.efficiency, network.efficiency_source
    same_rate = [
        n for n in networks() if n.kind == "tcp" and n.rate_bits_per_s == network.rate_bits_per_s
    ]
    if same_rate:
        return (
            network.rate_bits_per_s * same_rate[0].efficiency,
            f"TCP over the NIC, as {same_rate[0].name}: {same_rate[0].efficiency_source}",
        )
    return network.rate_bits_per_s * DEFAULT_TCP_EFFICIENCY, "estimate: TCP over an RDMA NIC"


def plan_transfer(
    size_bytes: float,
    link: str,
    *,
    protocol: str = "tcp",
    hosts: int = 1,
    measured_bits_per_s: float | None = None,
    storage_bits_per_s: float | None = None,
) -> TransferPlan:
    """Time to move ``size_bytes`` to ``hosts`` hosts over ``link`` (a catalog network)."""
    if size_bytes <= 0:
        raise InputError("the size must be positive", "give a size like 140GB")
    if hosts < 1:
        raise InputError(
            f"--hosts {hosts} must be at least 1", "give the number of receiving hosts"
        )
    if protocol not in ("tcp", "rdma"):
        raise InputError(f"unknown protocol {protocol!r}", "use tcp or rdma")
    network = find_network(link)
    if measured_bits_per_s is not None:
        if measured_bits_per_s <= 0:
            raise InputError("--measured must be a positive rate", "give a rate like 850mbit")
        goodput, source = measured_bits_per_s, "measured by the user"
    else:
        goodput, source = link_goodput(network, protocol)
    t1 = size_bytes * 8 / goodput
    strategies = [
        Strategy("one host", t1, f"{format_decimal_bytes(size_bytes)} at {format_rate(goodput)}")
    ]
    if hosts > 1:
        rounds = math.ceil(math.log2(hosts + 1))
        chunk_s = min(PIPELINE_CHUNK_BYTES, size_bytes) * 8 / goodput
        strategies += [
            Strategy("sequential", hosts * t1, "the source sends to one host after another"),
            Strategy("parallel from the source", hosts * t1, "all at once: the source's uplink is shared, no gain"),
            Strategy("tree fan-out", rounds * t1, f"each copy serves another: {rounds} rounds (log2 of {hosts + 1}, rounded up)"),
            Strategy("pipeline chain", t1 + (hosts - 1) * chunk_s, "64 MB chunks flow host to host; every link busy at once"),
        ]  # fmt: skip
        if storage_bits_per_s:
            storage_s = max(t1, hosts * size_bytes * 8 / storage_bits_per_s)
            strategies.append(Strategy("shared storage", storage_s, f"all hosts read at once from storage at {format_rate(storage_bits_per_s)} in total"))  # fmt: skip
    advice = [
        "sync incrementally: model files come as safetensors shards, so `rsync` moves only the shards that changed",
        "compress nothing: weights barely compress and the CPU becomes the bottleneck above 10 Gbit/s",
    ]
    if network.kind == "tcp" and network.rate_bits_per_s >= 25e9 and measured_bits_per_s is None:
        advice.append(
            "one TCP stream rarely fills 25G+: use several streams (parallel rsync/aria2, `iperf3 -P` to check)"
        )
    if hosts > 2:
        advice.append(
            "for many hosts a fan-out or chunked pipeline beats copying from one source; tools: torrent-style sync, parallel-scp trees, or a shared filesystem"
        )
    return TransferPlan(
        size_bytes=size_bytes,
        link=network.name,
        protocol=protocol,
        goodput_bits_per_s=goodput,
        goodput_source=source,
        hosts=hosts,
        time_one_s=t1,
        strategies=tuple(strategies),
        advice=tuple(advice),
    )


def expected_goodput(expect: str | None) -> tuple[float | None, str]:
    """TCP goodput a link should give, from a network id (``1gbe``) or a wire rate (``1gbit``);
    (None, "") when nothing is expected."""
    if not expect:
        return None, ""
    from fabriclens.units import parse_rate

    names = {n.name for n in networks()} | {a for n in networks() for a in n.aliases}
    if expect.lower() in names:
        net = find_network(expect)
        goodput, source = link_goodput(net, "tcp")
        return goodput, f"{net.title}: {goodput / 1e6:,.0f} Mbit/s of TCP goodput ({source})"
    if not expect.strip()[:1].isdigit():
        raise InputError(
            f"--expect {expect!r} is neither a network nor a rate", "give 1gbe or 1Gbit/s"
        )
    rate = parse_rate(expect)  # its errors name the spellings (bits or bytes) to choose from
    return wire_goodput(rate)


def wire_goodput(rate_bits_per_s: float) -> tuple[float, str]:
    """TCP goodput on an Ethernet link of this wire rate (1500-byte MTU), and how it was derived."""
    return (
        rate_bits_per_s * WIRE_GOODPUT,
        f"{rate_bits_per_s / 1e6:,.0f} Mbit/s on the wire x 1448/1538 (TCP payload per 1500-MTU frame)",
    )
