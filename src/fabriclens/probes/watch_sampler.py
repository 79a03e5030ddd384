"""What `watch` reads each second: NIC and RDMA counters from sysfs and the GPUs' utilisation
and power, turned into rates between consecutive readings."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fabriclens.measure.watch import LinkRate, link_rate
from fabriclens.parse.netdev import NetInterface, RdmaPort
from fabriclens.probes.gpu import GpuSource
from fabriclens.probes.sysfs_net import read_interfaces, read_rdma_ports


def pick_interfaces(nics: list[NetInterface], wanted: list[str]) -> list[NetInterface]:
    """The NICs to watch: those named, else the physical ones that are up, else every up
    interface but loopback (a VM or container shows only virtual ones)."""
    if wanted:
        return [n for n in nics if n.name in wanted]
    up = [n for n in nics if n.operstate in ("up", "unknown") and n.name != "lo"]
    physical = [n for n in up if n.physical]
    return physical or up


@dataclass
class Sampler:
    """Consecutive readings of the chosen links and GPUs."""

    sys_root: Path
    gpus: GpuSource
    wanted: list[str] = field(default_factory=list)
    link_speed_bits_per_s: float | None = None
    exclude_rdma: tuple[str, ...] = ()
    _nics: dict[str, NetInterface] = field(default_factory=dict)
    _ports: dict[str, RdmaPort] = field(default_factory=dict)
    _at: float = 0.0

    def start(self) -> list[str]:
        """First reading; the names of the links being watched."""
        self._read()
        return list(self._nics) + list(self._ports)

    def _read(self) -> tuple[dict[str, NetInterface], dict[str, RdmaPort]]:
        nics = {n.name: n for n in pick_interfaces(read_interfaces(self.sys_root), self.wanted)}
        ports = {
            f"{p.device}/{p.port}": p for p in read_rdma_ports(self.sys_root, self.exclude_rdma)
        }
        prev = self._nics, self._ports
        self._nics, self._ports, self._at = nics, ports, time.monotonic()
        return prev

    def sample(self) -> tuple[list[dict[str, Any]], list[LinkRate]]:
        """GPU readings now, and each link's rates since the previous call."""
        before = self._at
        (old_nics, old_ports) = self._read()
        dt = self._at - before
        links = []
        for name, nic in self._nics.items():
            if name in old_nics:
                cap = self.link_speed_bits_per_s or (
                    nic.speed_mbps * 1e6 if nic.physical and nic.speed_mbps else None
                )
                links.append(link_rate(name, old_nics[name].stats, nic.stats, dt, cap))
        for name, port in self._ports.items():
            if name in old_ports:
                cap = port.rate_gbps * 1e9 if port.rate_gbps else None
                links.append(link_rate(name, old_ports[name].counters, port.counters, dt, cap,
                                       "port_rcv_data", "port_xmit_data", 32))  # fmt: skip
        gpus = []
        if self.gpus.read is not None:
            try:
                readings = self.gpus.read()
            except Exception:
                readings = []
            gpus = [{"index": g.index, "util_pct": g.utilization_pct, "power_w": g.power_w,
                     "power_limit_w": g.power_limit_w} for g in readings]  # fmt: skip
        return gpus, links
