"""`doctor --from`: findings from captured tool output instead of the live host. Pure.

Each text is recognised by its content (parse.detect), read with the parser the live probes use,
and turned into the same facts, so the same host and log rules run. What no input covered is
listed as not checked; text no parser understands is reported as unread, never an error.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field
from typing import Any

from fabriclens.diagnose.engine import Finding, diagnose
from fabriclens.diagnose.host import (
    affinity_facts,
    diagnose_host,
    gpu_facts,
    nic_facts,
    peer_facts,
    rdma_facts,
    service_facts,
    topology_facts,
)
from fabriclens.diagnose.xid import xid_catalogue
from fabriclens.parse.detect import KINDS, detect_kind
from fabriclens.parse.dmesg import parse_dmesg
from fabriclens.parse.ethtool import (
    EthtoolInfo,
    congestion_counters,
    parse_ethtool,
    parse_ethtool_stats,
)
from fabriclens.parse.ibstat import parse_ib_ports
from fabriclens.parse.ip_link import parse_ip_j_link, parse_ip_s_link
from fabriclens.parse.iperf3 import parse_iperf3_json
from fabriclens.parse.lspci import PciDevice, below, parse_lspci
from fabriclens.parse.mtr import parse_mtr_json
from fabriclens.parse.nccl_log import NcclLog, parse_nccl_log
from fabriclens.parse.nccl_tests import parse_nccl_tests
from fabriclens.parse.netdev import NetInterface, RdmaPort
from fabriclens.parse.nvidia_smi import (
    GpuReading,
    Topology,
    parse_gpu_query,
    parse_smi_q,
    parse_topo,
)
from fabriclens.parse.ping import parse_ping
from fabriclens.parse.proc_net import Listener
from fabriclens.parse.torch_log import TorchLog, parse_torch_log


@dataclass(frozen=True)
class Capture:
    """One captured text: where it came from, and (from a collect bundle's manifest) the command
    that printed it and the interface it was about."""

    name: str
    text: str
    command: str = ""
    subject: str = ""


@dataclass
class Baseline:
    """What a collect bundle's sysfs copy gives (the live doctor's own readings)."""

    nics: list[NetInterface] = field(default_factory=list)
    ports: list[RdmaPort] = field(default_factory=list)
    listeners: list[Listener] = field(default_factory=list)
    bundle: bool = (
        False  # a `fabriclens collect` bundle: report not-checked as the live doctor does
    )
    unavailable: tuple[str, ...] = ()  # tools the manifest records as not installed


# what each check needs, for the "not checked" list
CHECKS = (
    ("NIC state, speed, errors and drops", ("sysfs-net", "ip-s-link", "ip-j-link", "ethtool")),
    ("NIC pause / discard / ECN counters", ("ethtool-S",)),
    ("RDMA port state, counters and MTU", ("sysfs-ib", "ibstatus", "ibstat", "ibv_devinfo")),
    ("GPU PCIe link, power and clocks", ("nvidia-smi-q", "nvidia-smi-query")),
    ("GPU-NIC placement and NVLink", ("nvidia-smi-topo",)),
    ("PCIe link training, ACS and NUMA placement", ("lspci",)),
    ("GPU Xid and NIC kernel events", ("dmesg",)),
    ("NCCL / PyTorch log rules", ("nccl-log", "torch-log", "nccl-tests")),
    (
        "the path to a peer (loss, latency, throughput)",
        ("ping", "mtr-json", "iperf3-json", "iperf3-text"),
    ),
)


def _xid_facts(text_events: list[Any]) -> list[dict[str, Any]]:
    groups: dict[tuple[str, int], list[Any]] = {}
    for e in text_events:
        groups.setdefault((e.device, e.code), []).append(e)
    out = []
    for (device, code), events in groups.items():
        entry = xid_catalogue().get(code)
        out.append({"code": code, "device": device, "count": len(events), "line": events[0].line,
                    "meaning": entry["meaning"] if entry else f"Xid {code}: not in the built-in catalogue",
                    "action": entry["action"] if entry else "look it up in NVIDIA's Xid catalogue",
                    "xid_severity": entry["severity"] if entry else "info", "known": entry is not None})  # fmt: skip
    return out


def _pcie_facts(
    devs: list[PciDevice],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    pcie, acs, numa = [], [], []
    for d in devs:
        if d.kind in ("gpu", "nic", "unnamed") and d.sta_width:
            cap_w, cap_s = d.cap_width or d.sta_width, d.cap_speed_gts or d.sta_speed_gts
            shown_w, shown_s = d.cap_width or "?", d.cap_speed_gts or "?"  # no LnkCap in the paste
            pcie.append({"address": d.address, "kind": d.kind, "name": d.name[:60], "cap_speed_gts": shown_s,
                         "cap_width": shown_w, "sta_speed_gts": d.sta_speed_gts, "sta_width": d.sta_width,
                         "width_below": d.sta_width < cap_w or d.marked_width_down,
                         "speed_below": bool(d.sta_speed_gts and cap_s and d.sta_speed_gts < cap_s) or d.marked_speed_down})  # fmt: skip
        if d.kind == "bridge" and d.acs_on:
            under = [x for x in below(d, devs) if x.kind in ("gpu", "nic")]
            if under:
                acs.append({"address": d.address, "name": d.name[:60], "acs_on": len(d.acs_on),
                            "acs_flags": " ".join(f"{f}+" for f in d.acs_on),
                            "below": ", ".join(f"{x.kind.upper()} {x.address}" for x in under)})  # fmt: skip
    unnamed = [d for d in devs if d.kind == "unnamed" and d.acs_shown]
    if any(d.acs_on for d in unnamed):  # a grep of ACSCtl lines: one fact for the whole paste
        flags = sorted({f for d in unnamed for f in d.acs_on}, key=lambda f: f)
        acs.append({"address": "?", "name": "(device lines not in the paste)",
                    "acs_on": sum(1 for d in unnamed if d.acs_on), "acs_flags": " ".join(f"{f}+" for f in flags),
                    "below": f"unnamed devices ({sum(1 for d in unnamed if d.acs_on)} of {len(unnamed)} ACSCtl lines "
                             "have controls on; run lspci -vvv whole to see which bridges)"})  # fmt: skip
    nics = [d for d in devs if d.kind == "nic" and d.numa_node is not None and d.numa_node >= 0]
    for g in (d for d in devs if d.kind == "gpu" and d.numa_node is not None and d.numa_node >= 0):
        same = [n for n in nics if n.numa_node == g.numa_node]
        other = [n for n in nics if n.numa_node != g.numa_node]
        numa.append({"gpu": g.address, "numa_node": g.numa_node, "nics_same_node": len(same),
                     "nics_other_node": len(other),
                     "other": ", ".join(f"{n.address} (node {n.numa_node})" for n in other[:4])})  # fmt: skip
    return pcie, acs, numa


def _ping_peer(text: str) -> dict[str, Any] | None:
    p = parse_ping(text)
    if p is None:
        return None
    host = re.search(r"^PING (\S+)", text, re.M)
    answered = p.received > 0
    probe = {"peer": host.group(1) if host else "peer", "ping_ok": True, "reachable": answered,
             "icmp_answered": answered, "sent": p.sent, "received": p.received, "loss_pct": round(100 * p.loss, 2),
             "rtt_ms": statistics.median(p.times_ms) if p.times_ms else p.avg_ms, "rtt_avg_ms": p.avg_ms,
             "jitter_ms": p.mdev_ms, "tcp_port": None, "tcp_connect_ms": None, "device": None,
             "iface_mtu": None, "path_mtu": None}  # fmt: skip
    return peer_facts(probe)


def _mtr_peer(text: str) -> dict[str, Any] | None:
    hops = parse_mtr_json(text)
    if not hops:
        return None
    last = hops[-1]
    answered = (last["loss_pct"] or 0) < 100
    probe = {"peer": last["host"], "ping_ok": True, "reachable": answered, "icmp_answered": answered,
             "sent": None, "received": None, "loss_pct": last["loss_pct"], "rtt_ms": last["avg_ms"],
             "rtt_avg_ms": last["avg_ms"], "jitter_ms": None, "tcp_port": None, "tcp_connect_ms": None,
             "device": None, "iface_mtu": None, "path_mtu": None, "mtr": {"hops": hops}}  # fmt: skip
    return peer_facts(probe)


def _iperf3_text(text: str) -> float | None:
    """Receiver bitrate of an iperf3 text report, bits/s."""
    scale = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
    rx = [m for m in re.finditer(r"([\d.]+) ([KMGT]?)bits/sec.*receiver", text)]
    if not rx:
        return None
    return float(rx[-1].group(1)) * scale[rx[-1].group(2)]


@dataclass
class _Read:
    ethtool: dict[str, EthtoolInfo] = field(default_factory=dict)
    duplex: dict[str, str] = field(default_factory=dict)
    congestion: dict[str, dict[str, int]] = field(default_factory=dict)
    drivers: dict[str, str] = field(default_factory=dict)
    ip_nics: list[NetInterface] = field(default_factory=list)
    ib_ports: list[RdmaPort] = field(default_factory=list)
    gpus: list[GpuReading] = field(default_factory=list)
    gpu_source: str = "none"
    topo: Topology | None = None
    lspci: list[PciDevice] = field(default_factory=list)
    xids: list[Any] = field(default_factory=list)
    nic_events: list[Any] = field(default_factory=list)
    peers: list[dict[str, Any]] = field(default_factory=list)
    measurements: list[dict[str, Any]] = field(default_factory=list)
    nccl: NcclLog = field(default_factory=NcclLog)
    torch: TorchLog = field(default_factory=TorchLog)
    logs: bool = False


def _subject(cap: Capture, n: int) -> str:
    return cap.subject or f"nic{n} ({cap.name})"


def _read_one(cap: Capture, kind: str, r: _Read) -> int:
    """Parse one capture into ``r``; returns how many records it gave (0: nothing usable)."""
    t = cap.text
    if kind == "ethtool":
        m = re.search(r"^Settings for (\S+?):", t, re.M)
        name = cap.subject or (m.group(1) if m else f"nic{len(r.ethtool)}")
        r.ethtool[name] = parse_ethtool(t)
        if d := re.search(r"Duplex:\s*(\w+)", t):
            r.duplex[name] = d.group(1).lower()
        return 1
    if kind == "ethtool-S":
        stats = parse_ethtool_stats(t)
        r.congestion[_subject(cap, len(r.congestion))] = congestion_counters(stats)
        return len(stats)
    if kind == "ethtool-i":
        if d := re.search(r"^driver: (\S+)", t, re.M):
            r.drivers[cap.subject or f"nic{len(r.drivers)}"] = d.group(1)
        return 1
    if kind in ("ip-s-link", "ip-j-link"):
        nics = parse_ip_s_link(t) if kind == "ip-s-link" else parse_ip_j_link(t)
        known = {n.name for n in r.ip_nics}
        r.ip_nics += [n for n in nics if n.name not in known]
        return len(nics)
    if kind in ("ibstatus", "ibstat", "ibv_devinfo"):
        ports = parse_ib_ports(t)
        r.ib_ports += ports
        return len(ports)
    if kind in ("nvidia-smi-query", "nvidia-smi-q"):
        gpus = parse_gpu_query(t) if kind == "nvidia-smi-query" else parse_smi_q(t)
        if gpus and (not r.gpus or kind == "nvidia-smi-query"):
            r.gpus, r.gpu_source = gpus, kind.replace("-query", " (query)").replace("-q", " -q")
        return len(gpus)
    if kind == "nvidia-smi-topo":
        r.topo = parse_topo(t)
        return len(r.topo.gpus)
    if kind == "lspci":
        r.lspci += parse_lspci(t)
        return len(r.lspci)
    if kind == "dmesg":
        xids, events = parse_dmesg(t)
        r.xids += xids
        r.nic_events += events
        return max(1, len(xids) + len(events))  # a clean kernel log is still a reading
    if kind == "ping":
        peer = _ping_peer(t)
        r.peers += [peer] if peer else []
        return 1 if peer else 0
    if kind == "mtr-json":
        peer = _mtr_peer(t)
        r.peers += [peer] if peer else []
        return 1 if peer else 0
    if kind in ("iperf3-json", "iperf3-text"):
        bits = parse_iperf3_json(t).goodput_bits_per_s if kind == "iperf3-json" else _iperf3_text(t)
        if bits:
            r.measurements.append(
                {"tool": "iperf3", "source": cap.name, "goodput_bits_per_s": bits}
            )
        return 1 if bits else 0
    if kind in ("nccl-log", "torch-log", "nccl-tests"):
        parse_nccl_log(t, r.nccl)
        parse_torch_log(t, r.torch)
        r.logs = True
        if kind == "nccl-tests":
            run = parse_nccl_tests(t)
            if run.rows:
                r.measurements.append({"tool": "nccl-tests", "source": cap.name, "op": run.op,
                                       "best_busbw_GBps": max(row.best_busbw_GBps for row in run.rows), "ranks": run.world_size})  # fmt: skip
        return 1
    if kind in ("sysctl", "ip-j-addr", "ip-j-route", "env", "uname"):
        return 1  # recorded for the reader; no rule reads them yet
    return 0


def _merge_ports(sysfs: list[RdmaPort], tools: list[RdmaPort]) -> list[RdmaPort]:
    """sysfs ports (with counters) first; a tool's MTUs fill in what sysfs lacks."""
    if not sysfs:
        return tools
    from dataclasses import replace

    mtus = {(p.device, p.port): p for p in tools}
    out = []
    for p in sysfs:
        t = mtus.get((p.device, p.port))
        out.append(replace(p, active_mtu=p.active_mtu or (t.active_mtu if t else None),
                           max_mtu=p.max_mtu or (t.max_mtu if t else None)))  # fmt: skip
    return out


def _nics(base: Baseline, r: _Read) -> list[dict[str, Any]]:
    nics = list(base.nics) or list(r.ip_nics)
    names = {n.name for n in nics}
    for name in [*r.ethtool, *r.congestion]:  # NICs only a pasted ethtool names
        if name not in names:
            info = r.ethtool.get(name)
            state = (
                None
                if info is None or info.link_detected is None
                else ("up" if info.link_detected else "down")
            )
            nics.append(NetInterface(name, state, info.speed_mbps if info else None, r.duplex.get(name), None,
                                     r.drivers.get(name), True))  # fmt: skip
            names.add(name)
    return [nic_facts(n, r.ethtool.get(n.name), congestion=r.congestion.get(n.name)) for n in nics]


def diagnose_captures(
    captures: list[Capture], base: Baseline | None = None
) -> tuple[dict[str, Any], list[Finding]]:
    """The doctor document (same keys as the live doctor's, plus ``inputs`` and ``not_checked``)
    and the findings, from captured texts and (for a bundle) its sysfs copy."""
    base = base or Baseline()
    r = _Read()
    inputs = []
    have: set[str] = set()
    if base.nics:
        have.add("sysfs-net")
    if base.ports:
        have.add("sysfs-ib")
    for cap in captures:
        kind = detect_kind(cap.text)
        n = _read_one(cap, kind, r) if kind not in ("unknown", "empty") else 0
        if n:
            have.add(kind)
        inputs.append({"source": cap.name, "kind": kind, "tool": KINDS.get(kind, ""), "read": bool(n),
                       "command": cap.command})  # fmt: skip
    nics = _nics(base, r)
    ports = [rdma_facts(p) for p in _merge_ports(base.ports, r.ib_ports)]
    gpus = [gpu_facts(g) for g in r.gpus]
    topology = [topology_facts(r.topo)] if r.topo and r.topo.gpus else []
    affinity = affinity_facts(r.topo) if r.topo else []
    services = service_facts(base.listeners) if base.bundle else []
    pcie, acs, numa = _pcie_facts(r.lspci)
    xids = _xid_facts(r.xids)
    kernel_nic: dict[str, dict[str, Any]] = {}
    for e in r.nic_events:
        k = kernel_nic.setdefault(
            e.device,
            {"driver": e.driver, "device": e.device, "link_down": 0, "health": 0, "line": e.line},
        )
        k[e.kind] += 1
    extra = {
        "xid": xids,
        "kernel_nic": list(kernel_nic.values()),
        "pcie": pcie,
        "acs": acs,
        "numa": numa,
    }
    findings = diagnose_host(nics, ports, gpus, topology, services, r.peers, affinity, extra=extra)
    if r.logs:
        findings += diagnose(r.nccl, r.torch)
    not_checked = [{"check": what, "needs": ", ".join(KINDS.get(k, {"sysfs-net": "/sys/class/net", "sysfs-ib": "/sys/class/infiniband"}.get(k, k)) for k in needs)}
                   for what, needs in CHECKS if not have & set(needs)]  # fmt: skip
    if base.bundle:
        findings += _bundle_not_checked(have, base)
    doc = {"inputs": inputs, "interfaces": nics, "rdma_ports": ports, "gpu_source": r.gpu_source, "gpus": gpus,
           "gpu_nic_affinity": affinity, "services": services, "peers": r.peers, "endpoints": [],
           "pcie_links": pcie, "acs_bridges": acs, "gpu_numa": numa, "xid_events": xids,
           "nic_kernel_events": list(kernel_nic.values()), "measurements": r.measurements,
           "not_checked": not_checked}  # fmt: skip
    return doc, findings


def _bundle_not_checked(have: set[str], base: Baseline) -> list[Finding]:
    """The live doctor's not-checked findings, from what the bundle lacks (same rule ids)."""
    out = []
    if not have & {"nvidia-smi-q", "nvidia-smi-query"}:
        out.append(Finding("not-checked-gpu", "info", "GPUs not checked: no nvidia-smi output in the bundle",
                           "no NVIDIA driver answered when it was collected", ("nvidia-smi", "nvidia-smi topo -m"), "", ()))  # fmt: skip
    if "ethtool" in base.unavailable:
        out.append(Finding("not-checked-ethtool", "info", "supported NIC speeds and pause/discard counters not checked: ethtool is not installed",
                           "", ("apt-get install ethtool; ethtool <iface>; ethtool -S <iface>",), "", ()))  # fmt: skip
    if not have & {"sysfs-ib", "ibstatus", "ibstat", "ibv_devinfo"}:
        out.append(Finding("no-rdma", "info", "no RDMA devices: multi-node NCCL traffic will use TCP sockets",
                           "no /sys/class/infiniband entries", ("ls /sys/class/infiniband", "ibstatus"), "", ()))  # fmt: skip
    return out
