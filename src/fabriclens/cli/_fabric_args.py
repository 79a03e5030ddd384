"""What `topo` and `simulate` share: turning flags into a fabric design and its network."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fabriclens.errors import InputError


def resolve_counts(servers: int | None, gpus: int | None, gpus_per_server: int) -> int:
    """Servers from --servers, or --gpus / --gpus-per-server."""
    if gpus_per_server < 1:
        raise InputError("--gpus-per-server must be at least 1", "give a positive count")
    if servers is None and gpus is None:
        raise InputError("give --servers or --gpus", "e.g. --gpus 1024")
    if servers is not None:
        return servers
    assert gpus is not None
    if gpus < 1 or gpus % gpus_per_server:
        raise InputError(
            f"--gpus {gpus} does not fill servers of {gpus_per_server} GPUs",
            "give a multiple of --gpus-per-server",
        )
    return gpus // gpus_per_server


def link_rate(nic_rate: str | None, network: str | None, switch_kind: str) -> tuple[float, Any]:
    """The link rate (bits/s) and the catalog network that carries it."""
    from fabriclens.catalog import find_network, networks
    from fabriclens.units import parse_rate

    if network:
        net = find_network(network)
        rate = parse_rate(nic_rate) if nic_rate else net.rate_bits_per_s
        return rate, net
    rate = parse_rate(nic_rate or "400G")
    kinds = ("ib",) if switch_kind == "ib" else ("roce",)
    for net in networks():
        if (
            net.kind in kinds
            and abs(net.rate_bits_per_s - rate) < 1e-6 * rate
            and not net.nics_per_node
        ):
            return rate, net
    raise InputError(
        f"no catalog network runs {kinds[0]} at {rate / 1e9:g} Gbit/s",
        "name one with --network (`fabriclens catalog networks`)",
    )


def read_design(path: Path) -> tuple[Any, str | None]:
    """A `topo --json` file: the design and the network name it was made for."""
    from fabriclens.fabric.topology import FabricDesign
    from fabriclens.inputs import read_json

    doc = read_json(path, "fabric file", "give the output of `fabriclens topo --json`")
    if not isinstance(doc, dict) or not isinstance(doc.get("design"), dict):
        raise InputError(
            f"{path} has no 'design' object", "give the output of `fabriclens topo --json`"
        )
    return FabricDesign.from_dict(doc["design"]), doc.get("network")
