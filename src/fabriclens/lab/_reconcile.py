"""`lab status` compares a lab's state with what exists: its namespaces (the ones it created),
each host's eth0 and switch port, the userspace stage's process, and the qdiscs on both ends."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from fabriclens.lab._ip import ip, tc
from fabriclens.lab._proc import netns_inode
from fabriclens.units import format_rate

if TYPE_CHECKING:
    from fabriclens.lab.lab import Host, Lab

RATE_TOLERANCE = 0.01  # tc stores rates in bytes/s: a few bits of rounding, never 1%


def drift(lab: Lab) -> list[str]:
    """One line per difference between ``lab``'s state and the host; empty when none."""
    out: list[str] = []
    switch_ok = _netns_ok(lab, lab.switch_netns, "the switch", out)
    for host in lab.hosts:
        lines: list[str] = [host.note] if host.note else []
        if _netns_ok(lab, host.netns, "its", lines):
            _check_host(lab, host, switch_ok, lines)
        out += [f"{host.name}: {line}" for line in lines]
    return out


def _netns_ok(lab: Lab, netns: str, whose: str, out: list[str]) -> bool:
    inode = netns_inode(netns)
    if inode is None:
        out.append(f"{whose} namespace {netns} is missing")
        return False
    if lab.netns_inodes.get(netns, inode) != inode:
        out.append(f"{whose} namespace {netns} is not the one the lab created")
        return False
    return True


def _link(netns: str, dev: str) -> dict[str, Any] | None:
    shown = ip("-j", "link", "show", dev, netns=netns, check=False)
    try:
        doc = json.loads(shown.stdout) if shown.ok else None
    except ValueError:
        return None
    return doc[0] if isinstance(doc, list) and doc else None


def _check_host(lab: Lab, host: Host, switch_ok: bool, out: list[str]) -> None:
    spec = host.link
    if host.path == "tap" and not lab._forwarder_alive(host):
        pid = host.forwarder_pid
        out.append(
            f"its userspace stage ({f'pid {pid}' if pid else 'no process'}) is not running: "
            "the link carries no traffic"
        )
    eth0 = _link(host.netns, "eth0")
    if eth0 is None:
        out.append("eth0 is missing: the host has no link (DOWN)")
    else:
        admin_up = "UP" in eth0.get("flags", [])
        if admin_up != spec.up:
            out.append(
                f"eth0 is {'up' if admin_up else 'down'}, the state says "
                f"{'up' if spec.up else 'down'}"
            )
        if eth0.get("mtu") != spec.mtu:
            out.append(f"eth0 has mtu {eth0.get('mtu')}, the state says {spec.mtu}")
        _check_qdiscs(host, host.netns, "eth0", out)
    if switch_ok:
        if _link(lab.switch_netns, host.switch_port) is None:
            out.append(f"its switch port {host.switch_port} is missing (DOWN)")
        else:
            _check_qdiscs(host, lab.switch_netns, host.switch_port, out)


def _check_qdiscs(host: Host, netns: str, dev: str, out: list[str]) -> None:
    spec = host.link
    shown = tc("-j", "qdisc", "show", "dev", dev, netns=netns, check=False)
    try:
        kinds = {q.get("kind"): q for q in json.loads(shown.stdout or "[]")}
    except (ValueError, AttributeError):
        return
    want = spec.bandwidth_bits_per_s
    tbf = kinds.get("tbf")
    have = float(tbf.get("options", {}).get("rate", 0)) * 8 if tbf else 0.0
    if want and not tbf:
        out.append(f"{dev} has no bandwidth cap, the state says {format_rate(want)}")
    elif tbf and not want:
        out.append(f"{dev} is capped at {format_rate(have)}, the state says unshaped")
    elif tbf and abs(have / want - 1) > RATE_TOLERANCE:
        out.append(f"{dev} is capped at {format_rate(have)}, the state says {format_rate(want)}")
    want_netem = spec.impaired and host.path == "veth"
    if want_netem != ("netem" in kinds):
        out.append(
            f"{dev} {'lacks' if want_netem else 'has'} netem delay/jitter/loss, the state says "
            f"{'it has' if want_netem else 'none'}"
        )
