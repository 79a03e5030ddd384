"""Raw records of network interfaces and RDMA ports, as the sysfs probes read them (pure types)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class NetInterface:
    """What sysfs says about one network interface."""

    name: str
    operstate: str | None
    speed_mbps: int | None  # None when unknown (down links, virtual devices report -1)
    duplex: str | None
    mtu: int | None
    driver: str | None
    physical: bool  # backed by a device (not lo, veth, bridge, tun)
    stats: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class RdmaPort:
    """One port of an RDMA device (what `ibstatus` prints, read directly)."""

    device: str
    port: int
    state: str | None  # e.g. "4: ACTIVE"
    phys_state: str | None  # e.g. "5: LinkUp"
    rate: str | None  # e.g. "400 Gb/sec (4X NDR)"
    link_layer: str | None  # InfiniBand or Ethernet (RoCE)
    counters: dict[str, int] = field(default_factory=dict)
    hw_counters: dict[str, int] = field(default_factory=dict)
    active_mtu: int | None = None  # RDMA path MTU in use (ibv_devinfo; RoCE: from the netdev MTU)
    max_mtu: int | None = None  # the largest the port supports

    @property
    def rate_gbps(self) -> float | None:
        """The rate as a number: `400 Gb/sec (4X NDR)` -> 400.0 (None when unreadable)."""
        m = re.match(r"\s*([\d.]+)\s*Gb/sec", self.rate or "")
        return float(m.group(1)) if m else None

    @property
    def active(self) -> bool:
        """True when the port state is ACTIVE."""
        return bool(self.state) and "ACTIVE" in (self.state or "")
