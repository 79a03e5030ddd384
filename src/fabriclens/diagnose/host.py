"""Host findings: NIC and RDMA facts from the probes' raw readings, rules from data/host_rules.toml."""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Mapping
from typing import Any

from fabriclens.conditions import holds
from fabriclens.diagnose.engine import Finding, Rule, load_rules
from fabriclens.parse.ethtool import EthtoolInfo
from fabriclens.parse.netdev import NetInterface, RdmaPort
from fabriclens.parse.nvidia_smi import GpuReading, Topology
from fabriclens.parse.proc_net import Listener

FACTS = {
    "nic": {"name", "physical", "nic_state", "duplex", "driver", "speed_mbps", "max_speed_mbps", "speed_below", "errors",
            "crc_errors", "drops", "mtu", "sample_s", "errors_new", "drops_new", "rx_bits_per_s", "tx_bits_per_s",
            "pause_frames", "pause_storms", "discards", "ecn_marked", "out_of_buffer", "pause_new", "discards_new"},
    "rdma": {"device", "port", "state", "phys_state", "port_active", "link_layer", "symbol_errors",
             "link_downed", "ecn_marked", "cnp_handled", "cnp_sent", "ack_timeouts", "out_of_sequence", "packet_seq_errors", "retransmits", "xmit_discards",
             "sample_s", "errors_new", "flaps_new", "ack_timeouts_new", "rx_bits_per_s", "tx_bits_per_s",
             "active_mtu", "max_mtu", "mtu_below", "fabric_mtu", "mtu_off_fabric"},
    "gpu": {"index", "name", "memory_total_mib", "memory_used_mib", "pcie_gen", "pcie_gen_max", "pcie_width", "pcie_width_max", "pcie_width_below",
            "pcie_gen_below", "busy_low_power", "utilization_pct", "power_w", "power_limit_w", "util_samples",
            "util_mean_pct", "util_idle_share", "util_busy_share", "util_swinging", "slowdown", "slowed",
            "nvlinks_active"},
    "affinity": {"gpu", "nic", "link", "nic_far", "nic_cross_socket"},
    "xid": {"code", "device", "count", "line", "meaning", "action", "xid_severity", "known"},
    "kernel_nic": {"driver", "device", "link_down", "health", "line"},
    "pcie": {"address", "kind", "name", "cap_speed_gts", "cap_width", "sta_speed_gts", "sta_width", "width_below",
             "speed_below"},
    "acs": {"address", "name", "acs_on", "acs_flags", "below"},
    "numa": {"gpu", "numa_node", "nics_same_node", "nics_other_node", "other"},
    "endpoint": {"url", "reachable", "error", "requests", "ttft_ms", "network_ms", "network_share", "network_pct",
                 "server_ms", "server_share", "server_pct", "rtt_ms", "tls_version"},
    "topology": {"gpus", "pairs", "nvlink_pairs"},
    "limits": {"memlock", "memlock_unlimited", "shm_mib", "rdma_ports", "gpus"},
    "nvswitch": {"nvswitches", "fm_state", "fm_active"},
    "service": {"service", "port", "addresses", "loopback_only", "fix_hint"},
    "peer": {"peer", "ping_ok", "reachable", "icmp_answered", "sent", "received", "loss_pct", "rtt_ms", "rtt_avg_ms", "jitter_ms",
             "tcp_port", "tcp_connect_ms", "device", "jitter_share", "iface_mtu", "path_mtu", "path_mtu_below", "goodput_bits_per_s",
             "goodput_mbps", "expected_bits_per_s", "expected_mbps", "goodput_share", "goodput_pct", "weights_gb",
             "weights_load_s", "weights_load_min", "weights_load_expected_min", "weights_expected_note"},
}  # fmt: skip

# inference servers at their default ports, and how each is told to listen on every address
SERVICES = {
    11434: ("Ollama", "start it with OLLAMA_HOST=0.0.0.0 (systemctl edit ollama: Environment=OLLAMA_HOST=0.0.0.0)"),
    8000: ("vLLM (OpenAI-compatible server)", "start it with --host 0.0.0.0"),
    8080: ("Text Generation Inference", "start it with --hostname 0.0.0.0"),
    30000: ("SGLang", "start it with --host 0.0.0.0"),
    1234: ("LM Studio", "enable 'Serve on Local Network' in its server settings"),
}  # fmt: skip


@functools.cache
def host_rules() -> tuple[Rule, ...]:
    """The built-in host rules, checked against the facts each scope provides."""
    return load_rules("host_rules.toml", FACTS)


def _grew(now: Mapping[str, int], then: Mapping[str, int], names: tuple[str, ...]) -> int:
    """How much the named counters rose between two readings; one that went backwards (driver
    reload, reset) counts as no change."""
    return sum(max(0, now.get(n, 0) - then.get(n, 0)) for n in names)


def _sampled(nic: NetInterface, earlier: NetInterface | None, seconds: float) -> dict[str, Any]:
    """What changed between two readings ``seconds`` apart; None for all when not sampled."""
    if earlier is None or seconds <= 0:
        return dict.fromkeys(
            ("sample_s", "errors_new", "drops_new", "rx_bits_per_s", "tx_bits_per_s")
        )

    def delta(*keys: str) -> int:
        return _grew(nic.stats, earlier.stats, keys)

    return {
        "sample_s": round(seconds, 3),
        "errors_new": delta("rx_errors", "tx_errors"),
        "drops_new": delta("rx_dropped", "tx_dropped"),
        "rx_bits_per_s": delta("rx_bytes") * 8 / seconds,
        "tx_bits_per_s": delta("tx_bytes") * 8 / seconds,
    }


CONGESTION_KEYS = ("pause_frames", "pause_storms", "discards", "ecn_marked", "out_of_buffer")


def _congestion(
    now: dict[str, int] | None, then: dict[str, int] | None, seconds: float
) -> dict[str, Any]:
    """`ethtool -S` congestion counters (None where not read), and what rose while sampling."""
    if now is None:
        return dict.fromkeys((*CONGESTION_KEYS, "pause_new", "discards_new"))
    out: dict[str, Any] = {k: now.get(k, 0) for k in CONGESTION_KEYS}
    if then is None or seconds <= 0:
        return out | {"pause_new": None, "discards_new": None}
    return out | {"pause_new": _grew(now, then, ("pause_frames",)),
                  "discards_new": _grew(now, then, ("discards",))}  # fmt: skip


def nic_facts(
    nic: NetInterface,
    ethtool: EthtoolInfo | None,
    earlier: NetInterface | None = None,
    seconds: float = 0.0,
    congestion: dict[str, int] | None = None,
    earlier_congestion: dict[str, int] | None = None,
) -> dict[str, Any]:
    """Facts about one interface; with an ``earlier`` reading ``seconds`` before, the rates too.
    ``congestion`` is `parse.ethtool.congestion_counters` of `ethtool -S` (None: not read)."""
    speed = nic.speed_mbps or (ethtool.speed_mbps if ethtool else None) or 0
    top = (ethtool.max_supported_mbps if ethtool else None) or 0
    s = nic.stats
    return {
        "name": nic.name,
        "physical": nic.physical,
        "nic_state": nic.operstate or "unknown",
        "speed_mbps": speed,
        "max_speed_mbps": top,
        "speed_below": bool(speed and top and speed < top and nic.operstate == "up"),
        "errors": s.get("rx_errors", 0) + s.get("tx_errors", 0),
        "crc_errors": s.get("rx_crc_errors", 0),
        "drops": s.get("rx_dropped", 0) + s.get("tx_dropped", 0),
        "mtu": nic.mtu or 0,
        "duplex": nic.duplex or "unknown",
        "driver": nic.driver or "unknown",
        **_sampled(nic, earlier, seconds),
        **_congestion(congestion, earlier_congestion, seconds),
    }


RDMA_ERROR_COUNTERS = ("symbol_error", "port_rcv_errors", "local_link_integrity_errors",
                       "excessive_buffer_overrun_errors", "link_error_recovery")  # fmt: skip


def _rdma_sampled(port: RdmaPort, earlier: RdmaPort | None, seconds: float) -> dict[str, Any]:
    """What changed on an RDMA port between two readings; None for all when not sampled.
    port_rcv_data / port_xmit_data count 4-octet words (kernel sysfs-class-infiniband ABI)."""
    keys = (
        "sample_s",
        "errors_new",
        "flaps_new",
        "ack_timeouts_new",
        "rx_bits_per_s",
        "tx_bits_per_s",
    )
    if earlier is None or seconds <= 0:
        return dict.fromkeys(keys)

    def delta(counters: str, *names: str) -> int:
        return _grew(getattr(port, counters), getattr(earlier, counters), names)

    return {
        "sample_s": round(seconds, 3),
        "errors_new": delta("counters", *RDMA_ERROR_COUNTERS),
        "flaps_new": delta("counters", "link_downed"),
        "ack_timeouts_new": delta("hw_counters", "local_ack_timeout_err"),
        "rx_bits_per_s": delta("counters", "port_rcv_data") * 32 / seconds,
        "tx_bits_per_s": delta("counters", "port_xmit_data") * 32 / seconds,
    }


def rdma_facts(
    port: RdmaPort, earlier: RdmaPort | None = None, seconds: float = 0.0
) -> dict[str, Any]:
    """Facts about one RDMA port; with an ``earlier`` reading ``seconds`` before, the rates too."""
    c, hw = port.counters, port.hw_counters
    return {
        "device": port.device,
        "port": port.port,
        "state": port.state or "unknown",
        "phys_state": port.phys_state or "unknown",
        "port_active": port.active,
        "link_layer": port.link_layer or "unknown",
        "symbol_errors": c.get("symbol_error", 0),
        "link_downed": c.get("link_downed", 0),
        "ecn_marked": hw.get("np_ecn_marked_roce_packets", 0),
        "cnp_handled": hw.get("rp_cnp_handled", 0),
        "cnp_sent": hw.get("np_cnp_sent", 0),
        "ack_timeouts": hw.get("local_ack_timeout_err", 0),
        "out_of_sequence": hw.get("out_of_sequence", 0),
        "packet_seq_errors": hw.get("packet_seq_err", 0),
        "retransmits": hw.get("roce_adp_retrans", 0) + hw.get("req_transport_retries_exceeded", 0),
        "xmit_discards": c.get("port_xmit_discards", 0),
        "active_mtu": port.active_mtu,
        "max_mtu": port.max_mtu,
        "mtu_below": bool(port.active_mtu and port.max_mtu and port.active_mtu < port.max_mtu),
        "fabric_mtu": port.active_mtu,
        "mtu_off_fabric": False,
        **_rdma_sampled(port, earlier, seconds),
    }


def _busy_low_power(g: GpuReading) -> bool:
    """100% busy at under 40% of the power limit: NCCL kernels spin-waiting read as busy."""
    util, power, limit = g.utilization_pct or 0.0, g.power_w or 0.0, g.power_limit_w or 0.0
    return bool(util >= 95 and limit and power < 0.4 * limit)


def gpu_facts(gpu: GpuReading, window: list[GpuReading] | None = None) -> dict[str, Any]:
    """Facts about one GPU; with ``window`` (this GPU's readings over a sampled window) the
    utilisation pattern too: swinging between idle and busy, or busy at low power throughout."""
    width, width_max = gpu.pcie_width or 0, gpu.pcie_width_max or 0
    gen, gen_max = gpu.pcie_gen or 0, gpu.pcie_gen_max or 0
    utils = [g.utilization_pct for g in window or [] if g.utilization_pct is not None]
    n = len(utils)
    low = sum(1 for u in utils if u <= 10) / n if n else None
    high = sum(1 for u in utils if u >= 90) / n if n else None
    spinning = sum(1 for g in window or [] if _busy_low_power(g)) / n if n else None
    return {
        "index": gpu.index, "name": gpu.name, "memory_total_mib": gpu.memory_total_mib,
        "memory_used_mib": gpu.memory_used_mib, "pcie_gen": gen, "pcie_gen_max": gen_max, "pcie_width": width,
        "pcie_width_max": width_max, "pcie_width_below": bool(width and width_max and width < width_max),
        "pcie_gen_below": bool(gen and gen_max and gen < gen_max),
        "busy_low_power": spinning >= 0.8 if spinning is not None else _busy_low_power(gpu),
        "utilization_pct": gpu.utilization_pct or 0.0, "power_w": gpu.power_w or 0.0,
        "power_limit_w": gpu.power_limit_w or 0.0,
        "util_samples": n, "util_mean_pct": round(sum(utils) / n, 1) if n else None,
        "util_idle_share": round(low, 3) if low is not None else None,
        "util_busy_share": round(high, 3) if high is not None else None,
        "util_swinging": bool(n >= 5 and low is not None and high is not None and low >= 0.2 and high >= 0.2),
        "slowdown": ", ".join(gpu.slowdowns), "slowed": bool(gpu.slowdowns),
        "nvlinks_active": gpu.nvlinks_active,
    }  # fmt: skip


def affinity_facts(topo: Topology) -> list[dict[str, Any]]:
    """Each GPU's nearest NIC on the PCIe tree (from `nvidia-smi topo -m`); none without NIC columns."""
    out = []
    for gpu in topo.gpus:
        near = topo.nearest_nic(gpu)
        if near:
            nic, kind = near
            out.append({"gpu": gpu, "nic": nic, "link": kind, "nic_far": kind in ("NODE", "SYS"),
                        "nic_cross_socket": kind == "SYS"})  # fmt: skip
    return out


def service_facts(listeners: list[Listener]) -> list[dict[str, Any]]:
    """Facts about each known inference server port that something listens on."""
    out = []
    for port, (name, hint) in SERVICES.items():
        addrs = sorted({lst.address for lst in listeners if lst.port == port})
        if addrs:
            loopback_only = all(ipaddress.ip_address(a).is_loopback for a in addrs)
            out.append({"service": name, "port": port, "addresses": ", ".join(addrs),
                        "loopback_only": loopback_only, "fix_hint": hint})  # fmt: skip
    return out


def peer_facts(
    probe: dict[str, Any],
    goodput_bits_per_s: float | None = None,
    expected_bits_per_s: float | None = None,
    weights_bytes: float | None = None,
) -> dict[str, Any]:
    """Facts about the path to a peer, from ``probes.peer.probe_peer``; with the measured TCP
    goodput, how it compares with what the link should give and how long ``weights_bytes``
    (a model's files) take to copy at that rate."""
    path, iface = probe.get("path_mtu"), probe.get("iface_mtu")
    share = (
        goodput_bits_per_s / expected_bits_per_s
        if goodput_bits_per_s and expected_bits_per_s
        else None
    )
    load = weights_bytes * 8 / goodput_bits_per_s if weights_bytes and goodput_bits_per_s else None
    load_expected = (
        weights_bytes * 8 / expected_bits_per_s if weights_bytes and expected_bits_per_s else None
    )
    expected_mbps = (expected_bits_per_s or 0) / 1e6
    rtt, jitter = probe.get("rtt_ms"), probe.get("jitter_ms")
    return dict(probe) | {
        "jitter_share": round(jitter / rtt, 3) if rtt and jitter is not None else None,
        "path_mtu_below": bool(path and iface and path < iface),
        "goodput_bits_per_s": goodput_bits_per_s,
        "goodput_mbps": round(goodput_bits_per_s / 1e6, 1) if goodput_bits_per_s else None,
        "expected_bits_per_s": expected_bits_per_s,
        "expected_mbps": round(expected_bits_per_s / 1e6, 1) if expected_bits_per_s else None,
        "goodput_share": round(share, 3) if share is not None else None,
        "goodput_pct": round(100 * share) if share is not None else None,
        "weights_gb": round(weights_bytes / 1e9, 2) if weights_bytes else None,
        "weights_load_s": round(load, 1) if load is not None else None,
        "weights_load_min": round(load / 60, 1) if load is not None else None,
        "weights_load_expected_min": round(load_expected / 60, 1)
        if load_expected is not None
        else None,
        "weights_expected_note": f" ({load_expected / 60:.1f} min at the {expected_mbps:,.0f} Mbit/s the link should give)"
        if load_expected is not None
        else "",
    }


def endpoint_facts(url: str, http_doc: dict[str, Any] | None, error: str = "") -> dict[str, Any]:
    """Facts about an inference endpoint from `fabriclens http`'s document (with its attribution
    of the time to first token); ``http_doc`` None when the requests failed with ``error``."""
    if http_doc is None:
        return {"url": url, "reachable": False, "error": error, "requests": 0} | dict.fromkeys(
            ("ttft_ms", "network_ms", "network_share", "network_pct", "server_ms", "server_share", "server_pct",
             "rtt_ms", "tls_version"))  # fmt: skip
    a = http_doc["attribution"]
    ttft = a["time_to_first_token_s"]
    net = a["network_s"] / ttft if ttft > 0 else 0.0
    srv = a["server_s"] / ttft if ttft > 0 else 0.0
    return {"url": url, "reachable": True, "error": "", "requests": http_doc["requests"],
            "ttft_ms": round(1e3 * ttft, 1), "network_ms": round(1e3 * a["network_s"], 1),
            "network_share": round(net, 3), "network_pct": round(100 * net), "server_ms": round(1e3 * a["server_s"], 1),
            "server_share": round(srv, 3), "server_pct": round(100 * srv), "rtt_ms": round(1e3 * a["rtt_s"], 2),
            "tls_version": http_doc.get("tls_version")}  # fmt: skip


def topology_facts(topo: Topology) -> dict[str, Any]:
    """Facts about the node's GPU-to-GPU links."""
    return {"gpus": len(topo.gpus), "pairs": topo.pairs, "nvlink_pairs": topo.nvlink_pairs}


def limits_facts(
    memlock_bytes: int | None, shm_bytes: int | None, rdma_ports: int, gpus: int
) -> dict[str, Any]:
    """This process's locked-memory limit (None: unlimited) and the size of /dev/shm (None:
    none), beside what needs them: RDMA ports (NCCL registers its buffers with the NIC) and
    GPUs (NCCL's SHM transport between local ranks)."""
    return {
        "memlock": "unlimited" if memlock_bytes is None else f"{memlock_bytes // 1024} kB",
        "memlock_unlimited": memlock_bytes is None,
        "shm_mib": -1 if shm_bytes is None else shm_bytes // (1 << 20),
        "rdma_ports": rdma_ports,
        "gpus": gpus,
    }


def nvswitch_facts(nvswitches: int, fm_state: str) -> dict[str, Any]:
    """NVSwitch devices on this node and the state systemd gives the Fabric Manager service."""
    return {"nvswitches": nvswitches, "fm_state": fm_state, "fm_active": fm_state == "active"}


def fabric_mtus(ports: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """RoCE ports with the fabric's MTU (the most common active MTU among them) and whether
    each one's differs from it."""
    mtus = [
        p["active_mtu"] for p in ports if p.get("link_layer") == "Ethernet" and p.get("active_mtu")
    ]
    if len(mtus) < 2:
        return ports
    common = max(sorted(set(mtus)), key=mtus.count)
    return [p | {"fabric_mtu": common, "mtu_off_fabric": bool(p.get("active_mtu") and p["active_mtu"] != common)}
            if p.get("link_layer") == "Ethernet" else p for p in ports]  # fmt: skip


def diagnose_host(
    nics: list[dict[str, Any]],
    ports: list[dict[str, Any]],
    gpus: list[dict[str, Any]] | None = None,
    topology: list[dict[str, Any]] | None = None,
    services: list[dict[str, Any]] | None = None,
    peers: list[dict[str, Any]] | None = None,
    affinity: list[dict[str, Any]] | None = None,
    endpoints: list[dict[str, Any]] | None = None,
    extra: Mapping[str, list[dict[str, Any]]] | None = None,
) -> list[Finding]:
    """Findings for every subject, one per rule that fires; ``extra`` holds the subjects only
    captured output gives (scopes xid, kernel_nic, pcie, acs, numa) and this process's limits."""
    subjects = {"nic": nics, "rdma": fabric_mtus(ports), "gpu": gpus or [], "topology": topology or [],
                "service": services or [], "peer": peers or [], "affinity": affinity or [],
                "endpoint": endpoints or [], **{k: [] for k in ("xid", "kernel_nic", "pcie", "acs", "numa", "limits", "nvswitch")},
                **(extra or {})}  # fmt: skip
    found = []
    for rule in host_rules():
        for facts in subjects[rule.scope]:
            if holds(rule.when, facts):
                fill = {k: str(v) for k, v in facts.items()}
                found.append(Finding(
                    rule.id, rule.severity, rule.symptom, rule.cause.format_map(fill),
                    tuple(c.format_map(fill) for c in rule.check), rule.fix.format_map(fill),
                    tuple(e.format_map(fill) for e in rule.evidence), rule.source,
                ))  # fmt: skip
    return found
