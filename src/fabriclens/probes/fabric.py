"""What network this node's collectives run over, read from the host: active RDMA ports, else
the NIC on the route to the rendezvous host (MASTER_ADDR)."""

from __future__ import annotations

import os
from pathlib import Path

from fabriclens.plan.expect import detected_network
from fabriclens.probes.peer import route_device, valid_host
from fabriclens.probes.sysfs_net import read_interfaces, read_rdma_ports


def detect_network(
    sys_root: Path = Path("/"), toward: str | None = None
) -> tuple[str | None, int | None, str]:
    """(network id or wire rate, NICs per node, how it was found); see plan.expect.detected_network."""
    ports = [(p.rate_gbps, p.link_layer or "Ethernet") for p in read_rdma_ports(sys_root)
             if p.active and p.rate_gbps]  # fmt: skip
    speed = None
    if not ports:
        host = toward or os.environ.get("MASTER_ADDR") or "1.1.1.1"  # only asks the routing table
        dev = route_device(host) if valid_host(host) and sys_root.resolve() == Path("/") else None
        nic = next((n for n in read_interfaces(sys_root) if n.name == dev), None)
        speed = nic.speed_mbps if nic is not None and nic.physical else None
    return detected_network(ports, speed)
