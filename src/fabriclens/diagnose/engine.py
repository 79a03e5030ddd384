"""Facts from parsed logs, rules from data/rules.toml, findings with their evidence."""

from __future__ import annotations

import functools
import re
import tomllib
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

from fabriclens.conditions import check_known, holds
from fabriclens.diagnose.xid import xid_catalogue
from fabriclens.parse.cuda_errors import STICKY_CODES, cuda_error
from fabriclens.parse.log_patterns import (
    CUDA_RE,
    ERRNO_RE,
    ERRNO_TEXTS,
    VIRTUAL_IFACE_RE,
    WC_STATUS,
    harmless_warning,
)
from fabriclens.parse.nccl_log import Event, NcclLog, is_link_local
from fabriclens.parse.torch_log import TorchLog

SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}
# CUDA's words for a kernel the library has no code for on this GPU (built for other archs)
ARCH_MISSING = (
    "named symbol not found",
    "no kernel image is available for execution on the device",
    "invalid device function",  # CUDA: no kernel for this architecture (nccl#444)
    "invalid kernel file",  # HIP/RCCL: no code object for this GPU (rccl#876)
)
# the events of a connection that failed (parse/log_patterns.py: SOCKET_ERRORS)
# the hosts models are downloaded from: the Hugging Face Hub and its mirror, Ollama's registry
# and the storage it redirects to, ModelScope
DOWNLOAD_HOSTS = ("huggingface.co", "hf.co", "hf-mirror.com", "ollama.ai", "ollama.com",
                  "r2.cloudflarestorage.com", "modelscope.cn")  # fmt: skip
# the names a container reaches its host by (Docker Desktop; Docker Engine with host-gateway),
# and the default bridge's gateway address
# how a loopback server is named (a prefix of its address)
LOOPBACK_NAMES = ("127.", "localhost", "::1")
DOCKER_HOST_NAMES = ("host.docker.internal", "gateway.docker.internal", "172.17.0.1")
CONNECT_FAILURES = ("connect_abort", "connect_timeout", "connect_refused", "unreachable")


@dataclass(frozen=True)
class Rule:
    """One diagnosis rule. Log rules (rules.toml) name the facts whose source lines are quoted
    as evidence; host rules (host_rules.toml) hold one evidence template filled with the facts of
    the subject in their ``scope`` (a NIC, an RDMA port, a GPU, a peer ...)."""

    id: str
    severity: str
    when: dict[str, Any]
    symptom: str
    cause: str
    check: tuple[str, ...]
    fix: str
    evidence: tuple[str, ...]
    scope: str = ""
    fallback: bool = False  # fires only when no other warning or critical rule did
    source: str = ""  # the public thread whose maintainers gave this diagnosis


@dataclass(frozen=True)
class Finding:
    """A rule that fired, with the evidence behind it."""

    rule: str
    severity: str
    symptom: str
    cause: str
    check: tuple[str, ...]
    fix: str
    evidence: tuple[str, ...]
    source: str = ""


def load_rules(filename: str, known: Mapping[str, set[str]]) -> tuple[Rule, ...]:
    """The [[rule]] entries of a rules file in diagnose/data, each checked: a known severity, and
    conditions only on facts its scope provides (``known`` maps scope -> facts; "" for unscoped
    rules). A broken rules file is our bug, so it raises."""
    text = resources.files("fabriclens.diagnose").joinpath("data", filename).read_text("utf-8")
    out = []
    for raw in tomllib.loads(text)["rule"]:
        if raw["severity"] not in SEVERITY_ORDER:
            raise RuntimeError(f"rule {raw['id']}: unknown severity {raw['severity']!r}")
        scope = raw.get("scope", "")
        check_known(raw["id"], raw["when"], known[scope])
        evidence = raw.get("evidence", ())
        out.append(Rule(raw["id"], raw["severity"], dict(raw["when"]), raw["symptom"], raw["cause"],
                        tuple(raw.get("check", ())), raw.get("fix", ""),
                        (evidence,) if isinstance(evidence, str) else tuple(evidence), scope,
                        bool(raw.get("fallback", False)), raw.get("source", "")))  # fmt: skip
    return tuple(out)


@functools.cache
def rules() -> tuple[Rule, ...]:
    """The built-in log rules, checked against the facts the engine provides."""
    return load_rules("rules.toml", {"": set(facts(NcclLog(), TorchLog()))})  # every fact it has


def _progress(torch: TorchLog) -> dict[int, int]:
    """Rank -> how far it got: its last completed work, else the highest SeqNum it timed out on."""
    if len(torch.last_completed) >= 2:
        return dict(torch.last_completed)
    seq: dict[int, int] = {}
    for t in torch.timeouts:
        if t.rank is not None and t.seq is not None:
            seq[t.rank] = max(seq.get(t.rank, t.seq), t.seq)
    return seq


def stragglers(torch: TorchLog) -> list[int]:
    """Ranks whose last completed work (or timed-out SeqNum) is behind the others (needs at
    least two ranks). Work is counted per process group, so ranks whose progress lines name
    different groups are compared only inside their own."""
    done = _progress(torch)
    groups: dict[str, dict[int, int]] = {}
    for rank, work in done.items():
        groups.setdefault(torch.groups.get(rank, ""), {})[rank] = work
    if len(groups) > 1:
        groups.pop("", None)  # ranks of no named group cannot be placed beside the named ones
    behind: list[int] = []
    for members in groups.values():
        if len(members) >= 2 and min(members.values()) != max(members.values()):
            low = min(members.values())
            behind += [r for r, v in members.items() if v == low]
    return sorted(behind)


def _virtual_ifaces(nccl: NcclLog) -> list[str]:
    return [n for n in nccl.ifaces if VIRTUAL_IFACE_RE.match(n) and n != "lo"]


def _link_local_ifaces(nccl: NcclLog) -> list[str]:
    return [n for n, a in nccl.ifaces.items() if is_link_local(a)]


def _device_kinds(devices: list[str]) -> set[str]:
    """The drivers behind NCCL's RDMA devices, by name: mlx5_0:1/RoCE -> mlx, i40iw0:1 -> i,
    bnxt_re0 -> bnxt (a driver names its devices with its own prefix)."""
    kinds = set()
    for dev in devices:
        m = re.match(r"[A-Za-z]+", dev)
        if m:
            kinds.add(m.group(0).lower())
    return kinds


def _link_local_connects(nccl: NcclLog) -> list[Event]:
    kinds = CONNECT_FAILURES
    return [
        e for e in nccl.events if e.kind in kinds and is_link_local(str(e.detail["peer"] or ""))
    ]


def _roce_link_local(nccl: NcclLog) -> int:
    chosen = sum(1 for e in nccl.of("gid_selected") if e.detail["link_local"])
    table = nccl.gid_table
    shown = nccl.of("qp_error") and any(is_link_local(g) and v == 2 for g, v in table.values())
    return chosen + (1 if shown else 0)


def facts(nccl: NcclLog, torch: TorchLog) -> dict[str, Any]:
    """Facts the rules look at."""
    env = nccl.env
    return {
        "transport": nccl.transport or "",
        "ib_devices": len(nccl.ib_devices),
        "ib_device_kinds": len(_device_kinds(nccl.ib_devices)),
        "ib_no_device": nccl.ib_no_device,
        "libibverbs_failed": nccl.libibverbs_failed,
        "gdr": "unknown" if nccl.gdr is None else ("on" if nccl.gdr else "off"),
        "nccl_warnings": sum(1 for w in nccl.warnings if not harmless_warning(w)),
        "completion_errors": len(nccl.completion_errors),
        "retry_exceeded": sum(1 for s, _ in nccl.completion_errors if s == 12),
        "watchdog_timeouts": len(torch.timeouts),
        "watchdog_stack_only": len(torch.timeout_frames) if not torch.timeouts else 0,
        "stragglers": len(stragglers(torch)),
        "ib_disabled_by_env": env.get("NCCL_IB_DISABLE", "0") not in ("0", ""),
        "p2p_disabled_by_env": env.get("NCCL_P2P_DISABLE", "0") not in ("0", ""),
        "socket_forced_by_env": "NCCL_NET" in env and env["NCCL_NET"].lower() == "socket",
        "logs_read": nccl.lines + len(torch.timeouts) + len(torch.last_completed) + len(torch.timeout_frames) + len(nccl.events) + len(nccl.ifaces) + len(nccl.errors) + sum(nccl.net_dirs.values()),
        "single_node": len(nccl.hosts) == 1,
        "error_lines": len(nccl.errors) + len(torch.timeouts),
        "p2p_slower_than_host": sum(1 for pair in nccl.p2p_slowest.values() if pair.slow),
        "ib_local_protection": sum(1 for s, _ in nccl.completion_errors if s == 4),
        "ib_wr_flush": sum(1 for s, _ in nccl.completion_errors if s == 5),
        "qp_timeout": sum(1 for e in nccl.of("qp_error") if e.detail["errno"] == 110),
        "qp_no_device": sum(1 for e in nccl.of("qp_error") if e.detail["errno"] == 19),
        "qp_unreachable": sum(1 for e in nccl.of("qp_error") if e.detail["errno"] in (101, 113)),
        "roce_link_local_gid": _roce_link_local(nccl),
        "socket_virtual_ifaces": len(_virtual_ifaces(nccl)),
        "socket_link_local_ifaces": len(_link_local_ifaces(nccl)),
        "connect_link_local": len(_link_local_connects(nccl)),
        "connect_failed": _count("connect_failed", nccl),
        "peer_gone": len(nccl.of("peer_reset")) + len(nccl.of("peer_closed")),
        "bad_address_family": len(nccl.of("bad_address_family")),
        "socket_ifname_set": "NCCL_SOCKET_IFNAME" in env,
        "p2p_unsupported": sum(1 for e in nccl.of("cuda_error") if e.detail["p2p_unsupported"] and e.detail["where"] != "shm"
                               and "ggml" not in e.line and "TensorRT-LLM" not in e.line),
        "shm_p2p_unsupported": sum(1 for e in nccl.of("cuda_error") if e.detail["p2p_unsupported"] and e.detail["where"] == "shm"),
        "topology_sysfs": len(nccl.of("topology_sysfs")),
        "max_shared_mem": len(nccl.of("max_shared_mem")),
        "ofi_errors": len(nccl.of("ofi_error")),
        "ofi_unreachable": _count("ofi_unreachable", nccl),
        "ofi_failed": _count("ofi_failed", nccl),
        "watchdog_capture": _count("watchdog_capture", nccl),
        "ib_port_error": _count("ib_port_error", nccl),
        "qp_invalid": sum(1 for e in nccl.of("qp_error") if e.detail["errno"] == 22),
        "nccl_218_invalid_argument": _count("nccl_218_invalid_argument", nccl) if _nccl_218_before_fix(nccl) else 0,
        "bootstrap_failed": sum(1 for _, stage in nccl.orphan_traces if stage == "bootstrap"),
        "remote_error": sum(1 for e in nccl.of("nccl_error") if e.detail["code"] == "ncclRemoteError"),
        "system_error": sum(1 for e in nccl.of("nccl_error") if e.detail["code"] == "ncclSystemError"),
        "unhandled_cuda_error": sum(1 for e in nccl.of("nccl_error") if e.detail["code"] == "ncclUnhandledCudaError"),
        "internal_error": sum(1 for e in nccl.of("nccl_error") if e.detail["code"] == "ncclInternalError"),
        "usb_nic": len(nccl.of("usb_nic")) + len(nccl.of("speed_unknown")),
        # releases the log's version lines show, or two when NCCL itself found ranks differ
        "nccl_versions": max(len(nccl.versions), 2 * bool(nccl.of("nccl_version_mismatch"))),
        "nvls_failed": len(nccl.of("nvls_bind")) + sum(1 for e in nccl.of("cuda_error") if e.detail["where"] == "nvls"),
        "socket_type_mismatch": len(nccl.of("socket_type_mismatch")),
        "message_truncated": len(nccl.of("message_truncated")),
        "collective_mismatch": len(nccl.of("collective_mismatch")),
        "shm_failed": _count("shm_failed", nccl),
        "shm_attach_failed": _count("shm_attach_failed", nccl),
        "cuda_arch_missing": _count("cuda_arch_missing", nccl),
        "program_arch_missing": _count("program_arch_missing", nccl),
        "ring_mismatch": len(nccl.of("ring_mismatch")),
        "setup_complete": min(1, len(nccl.of("setup_complete"))),
        "bootstrap_seen": "bootstrap" in nccl.evidence,
        "ib_dmabuf_unsupported": sum(1 for e in nccl.of("ibv_reg_failed") if "dmabuf" in str(e.detail["call"]) and "not supported" in str(e.detail["error"]).lower()),
        "ib_reg_no_memory": sum(1 for e in nccl.of("ibv_reg_failed") if "cannot allocate memory" in str(e.detail["error"]).lower()),
        "ib_create_failed": _count("ibv_create_failed", nccl),
        "ib_gid_change": _count("ib_gid_change", nccl),
        "duplicate_gpu": len(nccl.of("duplicate_gpu")),
        "graph_file_set": "NCCL_GRAPH_FILE" in env,
        "graph_import_failed": len(nccl.of("graph_import_failed")),
        "graph_capture_unsupported": len(nccl.of("graph_capture_unsupported")),
        "connect_loopback": _count("connect_loopback", nccl),
        "topo_xml_invalid": len(nccl.of("topo_xml")),
        "socket_create_failed": len(nccl.of("socket_create_failed")),
        "ofi_register_failed": len(nccl.of("ofi_register_failed")),
        "cuda_init_error": _count("cuda_init_error", nccl),
        "cuda_not_supported": sum(1 for e in nccl.of("cuda_error") if e.detail["text"] == "operation not supported" and e.detail["where"] != "nvls"),
        "cuda_oom": sum(1 for e in nccl.of("cuda_error") if e.detail["text"] == "out of memory" and not e.detail.get("by_program")),
        "program_cuda_oom": _count("program_cuda_oom", nccl),
        "cuda_invalid_handle": _count("cuda_invalid_handle", nccl),
        "ib_access_violation": sum(1 for e in nccl.of("ib_async_event") if "access violation" in str(e.detail["event"]).lower()),
        "socket_wrong_magic": len(nccl.of("socket_wrong_magic")),
        "gdr_distance_disabled": len(nccl.of("gdr_distance")),
        "roce_connect_failed": sum(1 for e in nccl.of("proxy_failed") if e.detail["op"] == "Connect") if any(d.endswith("/RoCE") for d in nccl.ib_devices) else 0,
        "watchdog_short_timeout": sum(1 for t in torch.timeouts if t.timeout_s is not None and t.timeout_s < SHORT_TIMEOUT_S),
        "watchdog_rank0_silent": _rank0_silent(torch),
        "ib_gdr_no_module": len(nccl.of("ib_gdr_no_module")),
        "nvml_gpu_hidden": len(nccl.of("nvml_gpu_hidden")),
        "nvls_oom": _count("nvls_oom", nccl),
        "shm_permission_denied": _count("shm_permission_denied", nccl),
        "host_import_mixed": int(len({e.detail["via"] for e in nccl.of("host_buffer_import")}) > 1),
        "ofi_no_memory": _count("ofi_no_memory", nccl),
        "cuda_stub": _count("cuda_stub", nccl),
        "host_clash": len(nccl.host_clash),
        "cuda_ipc_failed": _count("cuda_ipc_failed", nccl),
        "cuda_kernel_fault": _count("cuda_kernel_fault", nccl),
        "ucx_efa_error": _count("ucx_efa_error", nccl),
        **_pl_rank_facts(nccl),
        "ucx_no_protocol": _count("ucx_no_protocol", nccl),
        "ucx_tls_no_cuda": _count("ucx_tls_no_cuda", nccl),
        "gpu_offload_partial": _count("gpu_offload_partial", nccl),
        "ggml_p2p_unsupported": _count("ggml_p2p_unsupported", nccl),
        "trtllm_oom": _count("trtllm_oom", nccl),
        "vllm_kv_too_small": _vllm_kv_too_small(nccl),
        # out of GPU memory while a CUDA graph was captured (a program's CUDA error, or PyTorch's
        # allocator), the traceback running through the capture
        "cudagraph_oom": int(bool(nccl.of("cudagraph_capture_frame")) and (
            _count("program_cuda_oom", nccl) + len(nccl.of("torch_cuda_oom")) > 0)),
        "ollama_igpu_undercounted": _count("ollama_igpu_undercounted", nccl),
        "ollama_host_share_pct": _ollama_host_share_pct(nccl),
        **{name: _count(name, nccl) for name in (
            "http_client_errors", "http_refused", "http_refused_gateway", "http_refused_ipv6",
            "http_loopback_timeout", "http_no_local_port", "host_oom_killed", "http_unreachable",
            "host_unresolved", "download_host_unresolved", "ray_address_loopback", "ray_address_empty")},
        "chunk_size_set": _count("chunk_size_set", nccl) + int("NCCL_CHUNK_SIZE" in env),
        "gloo_iface_exclusion": sum(1 for e in nccl.of("gloo_iface_missing") if str(e.detail["name"]).startswith("^")),
        # GPUDirect RDMA on some InfiniBand channels, and receives without it elsewhere (a
        # receive writes GPU memory whenever the node can; only sends may skip GDR by design)
        # InfiniBand receives and no channel with GPUDirect RDMA, nothing saying why (no GPU's GDR
        # turned off by its distance, no 'GPU Direct RDMA Enabled/Disabled' line)
        # NCCL's socket transport set up (NET/Socket : Using ...), and not a word of RDMA: no
        # NET/IB device list, no 'No device found', no 'Using network' line, no NET/IB channel
        "socket_only_seen": int(bool(nccl.socket_ifaces) and not nccl.ib_devices and not nccl.ib_no_device
                                and not nccl.transport and sum(nccl.net_dirs.values()) == 0),
        # (receives: a send may skip GDR by design, a receive uses it wherever the node can)
        "gdr_none_on_ib": int(nccl.net_dirs[("receive", False)] > 0
                              and nccl.net_dirs[("send", True)] + nccl.net_dirs[("receive", True)] == 0
                              and nccl.gdr is None and not nccl.of("gdr_distance")),
        "gdr_receive_missing": int(nccl.net_dirs[("receive", False)] > 0
                                   and nccl.net_dirs[("send", True)] + nccl.net_dirs[("receive", True)] > 0
                                   and not nccl.of("gdr_distance")),
        # HCCL collectives that failed on different ranks as different operators, or as one
        # operator minutes apart (a rank that arrived late), and ranks of one logical superpod
        # on different physical ones
        "hccl_task_ops": len({e.detail["op"] for e in nccl.of("hccl_task_failed")}),
        "hccl_task_late": _hccl_task_late(nccl),
        "hccl_superpod_split": _hccl_superpod_split(nccl),
        **{kind: _count(kind, nccl) for kind in EVENT_FACTS},
    }  # fmt: skip


HCCL_LATE_S = 60  # one HCCL task failing this much later on another rank: that rank came late


def _hccl_task_late(nccl: NcclLog) -> int:
    """1 when one HCCL operator's failures are HCCL_LATE_S or more apart (HCCL's execution
    timeout counts from each rank's own arrival, so a late rank fails later)."""
    times: dict[str, list[int]] = {}
    for e in nccl.of("hccl_task_failed"):
        if e.detail["at_s"] is not None:
            times.setdefault(str(e.detail["op"]), []).append(int(e.detail["at_s"]))
    return int(any(max(t) - min(t) >= HCCL_LATE_S for t in times.values()))


def _hccl_superpod_split(nccl: NcclLog) -> int:
    """Logical superpods whose ranks sit on more than one physical superpod."""
    pods: dict[str, set[str]] = {}
    for e in nccl.of("hccl_superpod"):
        pods.setdefault(str(e.detail["logic"]), set()).add(str(e.detail["physical"]))
    return sum(len(p) > 1 for p in pods.values())


def _not_a_host(address: str) -> bool:
    """A netmask, a broadcast or the unspecified address given where a host was meant."""
    ip = address.removeprefix("::ffff:")
    parts = ip.split(".")
    if len(parts) != 4 or not all(p.isdigit() for p in parts):
        return ip in ("::", "")
    octets = [int(p) for p in parts]
    return octets[0] >= 224 or ip == "0.0.0.0"  # 255.x: a netmask; 224+: multicast, reserved


def _nccl_218_before_fix(nccl: NcclLog) -> bool:
    """The log runs NCCL 2.18.1-2.18.5: before 2.18.6 and 2.19.3, which carry the fix for
    NVIDIA/nccl#957 (commit 4365458, 'Fix cudaMemcpyAsync bug')."""
    return any(v.startswith("2.18.") and v.split(".")[2].isdigit() and int(v.split(".")[2]) < 6
               for v in nccl.versions)  # fmt: skip


# PyTorch's ProcessGroupNCCL default (kProcessGroupNCCLDefaultTimeout, ProcessGroupNCCL.hpp) is
# 10 minutes; a limit under 5 minutes was set on purpose and is short for any rank that works alone
SHORT_TIMEOUT_S = 300.0


def _rank0_silent(torch: TorchLog) -> bool:
    """Two or more ranks report the watchdog timeout and rank 0 is not among them: rank 0 is
    the one the others waited for (its own watchdog would have fired too had it been waiting).
    A reporter that is rank 0 of its own process group ("[rank15]: ... [Rank 0]") was waiting
    too, so the premise fails."""
    ranks = {t.rank for t in torch.timeouts}
    return (
        len(ranks) >= 2
        and None not in ranks
        and 0 not in ranks
        and 0 not in torch.last_completed
        and all(t.group_rank != 0 for t in torch.timeouts)
        and 0 not in torch.group_ranks.values()
    )


# events whose words need no logic
EVENT_WORDS = {
    "host_unresolved": "the name {name} does not resolve",
    "collective_desync": "ranks ran different collectives (the line is cut before it names them)",
    "mpirun_env_prefix": "{names} set before mpirun, not passed with -x",
    "ib_async_event": "{device}: {event}",
    "device_ordinal": "invalid device ordinal (CUDA error 101)",
    "no_algorithm": "NCCL has no algorithm and protocol for {function} ({datatype})",
    "algo_forced": "{variable} was set to {value}",
    "nvls_slots_exhausted": "Fabric Manager: every NVSwitch multicast slot is in use",
    "topo_xml_full": "NCCL's topology tree outgrew its buffer ({max_nodes} nodes)",
    "libfabric_error": "libfabric error {code}: {error}",
    "efa_rx_post_failed": "the EFA provider could not post its receive buffers",
    "hip_no_device": "HIP: {error} at {where}",
    "vllm_workers_wait": "vLLM's engine waited a minute for its workers",
    "nvml_missing": "NCCL could not load the driver's NVML library ({library})",
    "mpi_ofi_abort": "Open MPI's libfabric layer (OFI MTL) aborted the job",
    "ucx_error": "UCX: {error}",
    "engine_custom_ar_no_p2p": "the engine's own all-reduce kernel needs GPU peer access, which these GPUs lack",
    "ray_version_mismatch": "Ray refused a process whose Ray version differs from the cluster's",
    "ofi_rails_mismatch": "aws-ofi-nccl: NIC {nic} has {got} rails on the peer, {expected} here",
    "gin_doca_failed": "NCCL's GPU-initiated networking (GIN over DOCA) failed: DOCA failure {code}",
    "chunk_size_set": "NCCL_CHUNK_SIZE={value} on the command line",
    "proxy_op_wait": "a thread spins in ncclLocalOpAppend, waiting for a free proxy op",
    "orted_not_found": "a remote node cannot find Open MPI's orted",
    "orte_unpack_error": "Open MPI's runtime could not decode a peer's message",
    "spawn_no_main_guard": "Python refused to start a process before the main module finished importing",
    "cumem_create_not_permitted": "cuMemCreate was refused (operation not permitted)",
    "tensile_load_failed": "the BLAS library could not load its kernel file",
    "ray_node_request_unmet": "Ray's autoscaler: no node can take the request (a GPU pinned to a node address)",
    "topo_reverse_path": "NCCL's topology search found no path back between two devices",
    "gloo_iface_missing": "Gloo found no interface named {name}",
    "gloo_loopback_fallback": "Gloo: the host name resolves to no local address; it uses the loopback",
    "te_userbuffers_failed": "TransformerEngine's userbuffers (TP communication overlap) setup failed",
    "cumem_host_probe_frame": "a stack frame in ncclCuMemHostEnable (NCCL's cuMem host probe)",
    "verbs_no_provider": "libibverbs: no user-space driver (provider) for {what}",
    "mpi_not_enough_slots": "Open MPI: fewer slots on the hosts than processes asked for",
    "mpi_cq_create_failed": "MPI's InfiniBand channel could not create a completion queue",
    "ras_process_missing": "NCCL RAS: process {pid} on node {node} (GPU {gpu}) does not answer",
    "ras_process_dead": "NCCL RAS: a job process is considered dead (unreachable)",
    "monitored_barrier_missing": "rank(s) {ranks} did not reach the monitored barrier within {timeout_ms} ms",
    "cray_gtl_not_linked": "Cray MPICH: GPU support requested, but the GTL library is not linked",
    "cray_nic_policy_unconfined": "Cray MPICH: NIC policy {policy}, but rank {rank} is not confined to one NUMA node",
    "ompi_no_slurm_pmi": "Open MPI started by srun, without Slurm's PMI support",
    "cxi_eq_overflow": "the Slingshot NIC's event queue overflowed (libfabric cxi)",
    "ompi_libnbc_frame": "a stack frame in Open MPI's non-blocking collectives (libnbc)",
    "ras_mismatch": "NCCL RAS: ranks have launched different numbers of collectives",
    "pmix_gds_ds12": "PMIx's shared-memory data store (gds/ds12) failed",
    "slurm_switch_plugin_missing": "srun could not load Slurm's Slingshot switch plugin",
    "gpu_busy_unavailable": "CUDA: the GPU is busy or unavailable to this process",
    "nvml_unknown_error": "NVML cannot be initialised in the container (Unknown Error)",
    "pmix_server_unreachable": "MPI found no PMIx server, only PMI-1/2",
    "shapes_differ": "a collective's tensors have different shapes on different processes",
    "ucx_signal_handler": "UCX's signal handler caught a crash (ucs_handle_error)",
    "container_driver_timeout": "the container runtime's call to the GPU driver timed out",
    "fabric_state_in_progress": "nvidia-smi: the GPU's NVLink fabric is still 'In Progress'",
    "jax_service_fatal": "JAX's distributed service ended this process: another task failed",
    "jax_task_named": "JAX's coordination service names task {task} as failed",
    "jax_coordinator_lost": "the connection to JAX's coordination service (process 0) closed",
    "jax_task_disconnected": "a JAX collective was cancelled: a participating task is no longer connected",
    "spawn_pickle_error": "a spawned worker's arguments could not be pickled",
    "enroot_dir_denied": "enroot cannot create {path} (Permission denied)",
    "userns_failed": "the container's user namespace was refused: {reason}",
    "pyxis_failed": "pyxis (Slurm's container plugin): {step}",
    "fm_ib_umad_missing": "Fabric Manager: the ib_umad kernel module is not loaded",
    "fm_nothing_to_do": "Fabric Manager found no NVSwitch to set up (NV_WARN_NOTHING_TO_DO)",
    "rxdm_gpus_mismatch": "TCPXO's receive-data-path manager found {detected} of {actual} GPUs",
    "rxdm_no_pci_gpus": "TCPXO's receive-data-path manager found no GPU in the PCI tree",
    "hccl_ifname_missing": "HCCL_SOCKET_IFNAME names {name}, an interface this host (or container) does not have",
    "hccl_tls_mismatch": "HCCL: the ranks' NPU TLS settings differ",
    "hccl_op_mismatch": "HCCL's parameter check: this rank issued {local}, its peer {remote}",
    "hccl_ip_family_mismatch": "HCCL: one rank's device address is {family}, the others' {others}",
    "container_nvml_missing": "the NVIDIA container hook could not load {library}",
    "mpi_ofi_addrinfo": "Intel MPI: OFI addrinfo() failed at MPI_Init",
    "open_files_exhausted": "a process ran out of file descriptors (Too many open files)",
    "hccl_port_bound": "HCCL could not listen on its host port: already bound",
    "hccl_root_unreachable": "HCCL: this rank could not connect to the root at {server}",
    "hccl_ranks_missing": "HCCL's root waited in vain for ranks {ranks}",
    "hccl_device_oom": "HCCL ran out of NPU memory setting up its links (EI0011)",
    "hccl_sdma_error": "an HCCL SDMA copy task failed (EI0012)",
    "hccl_roce_cqe": "an HCCL RoCE completion error (EI0013)",
    "hccl_ranktable_path": "HCCL's rank table path {path} does not exist or cannot be read",
    "hccl_task_failed": "an HCCL {op} task failed",
    "hccl_error_code": "HCCL error {code}: {name}",
    "mpi_ofi_not_connected": "Intel MPI's OFI send failed: Transport endpoint is not connected",
    "mpi_tcp_no_route": "Open MPI's TCP transport: connect() failed with errno 113 (No route to host)",
    "hccl_npu_port_bound": "HCCL could not listen on the NPU's port {port}: already in use",
    "hccl_link_timeout": "HCCL: a link's peer did not set up its end in time (EI0006)",
    "hccl_heartbeat_lost": "HCCL lost the heartbeat of the rank at {where}",
    "hccl_ranktable_ip": "the rank table gives device address {table}, the device has {device}",
    "hccl_superpod": "HCCL: logical superpod {logic} on physical superpod {physical}",
    "device_plugin_nvml": "the Kubernetes device plugin could not load NVML",
    "rccl_iommu_pt_missing": "RCCL: the kernel was booted without iommu=pt",
    "efa_sync_memops": "libfabric's EFA provider could not set CUDA sync memops on a buffer",
    "cloud_quota_exceeded": "the cloud's quota {quota} is used up",
    "ena_allowance_exceeded": "{counter}: {count} packets shaped at the instance's limit",
    "peermem_symbol_mismatch": "the kernel refused {module}: built against another kernel's RDMA symbols",
    "module_symbol_mismatch": "the kernel refused the module {module}: its {symbol} is another kernel's",
    "ofi_mr_no_memory": "libfabric could not register memory with the NIC (Cannot allocate memory)",
    "ib_devices_list_failed": "the verbs library could not list the RDMA devices: {error}",
    "verbs_kernel_abi": "libibverbs: driver {driver} does not support the kernel's RDMA ABI",
    "kernel_headers_unavailable": "the package repositories hold no {package}",
    "no_socket_iface": "NCCL found no interface for its sockets",
    "fm_driver_mismatch": "Fabric Manager {fm_version} against driver {driver_version}",
    "container_file_exists": "the image already holds {file}, which the NVIDIA runtime mounts from the host",
    "containerd_config_unsupported": "the toolkit cannot read containerd's config version {version}",
    "nccl_symbol_missing": "{library} needs {symbol}, which the libnccl.so.2 it loaded lacks",
    "nccl_wheel": "NCCL {version} installed for CUDA {cuda} (nvidia-nccl-cu{cuda})",
    "rdma_port_down": "{device} port {port} ({netdev}) is Down",
    "torch_cuda_oom": "PyTorch could not allocate {tried} more on the GPU",
    "python_exception": "a Python program raised {exception}",
    "rdzv_endpoint_invalid": "the launcher's rendezvous endpoint is '{endpoint}'",
    "master_addr_missing": "the launcher has no master address",
    "plugin_not_found": "NCCL could not find its {plugin} plugin as {names}",
    "ofi_tuner_refused": "aws-ofi-nccl's tuner refused to load: NCCL_ALGO or NCCL_PROTO is set",
    "ofi_sets_algo_proto": "aws-ofi-nccl set NCCL_ALGO/NCCL_PROTO itself",
    "nccl_unknown_result": "an NCCL result code this NCCL has no name for",
    "sanitizer_invalid_access": "compute-sanitizer: invalid {access} of {size} bytes",
    "sanitizer_nccl_frame": "in NCCL's kernel {function}",
    "gpu_memory_unbalanced": "free memory differs between the GPUs",
    "nccl_devcomm_failed": "ncclDevCommCreate failed",
    "fr_not_joined": "flight recorder: not every rank joined collective {collective}",
    "fr_missing_ranks": "flight recorder: ranks {ranks} missing",
    "fr_collective": "flight recorder: the collective is {backend}'s {op}",
    "nvidia_driver_oops": "a kernel oops inside the NVIDIA driver ({module})",
    "duplicate_mac": "cloud-init: {iface_a} and {iface_b} have one MAC",
    "mig_in_use": "the MIG manager could not destroy an instance: in use by another client",
    "host_oom_killed": "the kernel's OOM killer ended process {pid} ({program})",
    "nixl_error": "NIXL reports NIXL_ERR_{code}",
    "ofi_av_insert_failed": "aws-ofi-nccl could not add a peer's EFA address to its address vector",
    "dmabuf_topology_refused": "the NVIDIA driver refused a dma-buf mapping: topology not supported ({mapping})",
    "pl_rank": "global rank {global_rank} starts (member {member} of {world})",
    "pl_slurm_handled": "Lightning: multi-processing is handled by SLURM",
    "nemo_slurm_not_handling": "NeMo: multi-node training without SLURM handling the processes",
    "ucx_vram_as_host": "UCX took GPU memory for host memory: it has no CUDA support loaded",
    "ucx_tls": "UCX_TLS={value}",
    "nvshmem_uar_failed": "NVSHMEM's IBGDA could not allocate a UAR (doorbell page) on the NIC",
    "mooncake_gid_null": "Mooncake found no GID for its RDMA device (MC_GID_INDEX)",
    "ollama_gfx_unsupported": "Ollama's ROCm libraries have no kernels for {gpu_type}",
    "ollama_no_gpu": "Ollama found no GPU it can use: models run on the CPU",
    "llama_ctx_size": "the runner's context is {ctx} tokens (num_ctx)",
    "download_part_failed": "a part of the download failed: {error}",
    "hub_server_error": "the Hugging Face Hub answered {code} (a server error)",
    "hub_unreachable": "no connection to https://huggingface.co and no cached copy",
    "ollama_client_proxy": "a proxy set on Ollama's client command line (ollama run / pull)",
    "ray_start_address": "a Ray node joins the head at '{address}:{port}'",
    "ray_gcs_unreachable": "Ray could not reach the head's GCS at '{address}:{port}'",
    "ray_node_dead": "Ray's GCS marked a node dead: it missed too many heartbeats",
    "http_connect_failed": "a client could not connect to {server}:{port} ({reason})",
    "docker_host_unresolved": "host.docker.internal does not resolve inside the container",
    "connect_unspecified": "a connection to an address that is not valid to connect to (WinError 10049: 0.0.0.0)",
    "http_proxy_answered": "an HTTP proxy answered {code} for the local server",
    "gateway_timeout": "a gateway gave up waiting for the server (504 Gateway Time-out{by})",
    "stream_cut": "the response ended before its end: {words}",
    "client_timeout": "the client's own time limit ran out ({exception})",
    "icmp_policy_unreachable": "Windows' firewall dropped the packet (Source address failed ingress/egress policy)",
    "server_listening": "the server listens on {address}:{port}",
    "rpc_server_start": "llama.cpp's rpc-server starts on {address}:{port}",
    "rpc_server_socket_failed": "llama.cpp's rpc-server could not open its listening socket",
    "dllama_socket_closed": "distributed-llama: the socket to the other node closed (ReadSocketException)",
    "exo_no_peers": "exo's discovery found no other node",
    "host_oom_invoked": "the kernel's out-of-memory report (started by {program})",
    "nvls_register_failed": "NCCL could not register a user buffer for NVLS",
    "nccl_bind_in_use": "NCCL could not bind a listening socket: the address is in use",
    "vllm_custom_ar_error": "vLLM's custom all-reduce: CUDA error '{error}' ({where})",
    "ollama_host_short": "Ollama: the model needs {requested} of host memory, more than the {available} available",
    "ollama_required": "Ollama's estimate: {full} for the whole model, {gpu} of it on the GPUs",
    "ollama_system_memory": "the host's free memory as Ollama reads it: {free}, swap {swap}",
    "llama_runner_killed": "the model runner was killed (SIGKILL)",
    "ggml_host_alloc_failed": "llama.cpp could not allocate the CPU's buffer{size}",
    "llama_no_mmap": "the runner reads the model into RAM whole (--no-mmap)",
    "llama_mlock_failed": "llama.cpp could not lock {size} bytes of the model in RAM (--mlock)",
    "ollama_igpu": "Ollama counts {available_gib} of the integrated GPU's {total_gib} GiB as free ({libdirs})",
    "llama_kv_alloc_failed": "llama.cpp could not allocate its KV cache",
    "vllm_no_kv_memory": "vLLM found no GPU memory left for its KV cache",
    "vllm_kv_short": "vLLM's KV cache holds {kv_tokens} tokens, fewer than one request of max_model_len {max_len}",
    "vllm_gpu_blocks": "vLLM's KV cache: {blocks} blocks",
    "vllm_concurrency": "vLLM's KV cache holds {times}x one request of {tokens} tokens",
    "cudagraph_capture_frame": "the traceback runs through CUDA-graph capture",
    "trt_engine_version": "TensorRT reads serialization version {current}; the engine was written as {engine}",
    "trt_length_over_engine": "a request of {inlen} in / {outlen} out tokens against an engine built for {max_inlen} / {max_outlen}",
    "torch_no_nccl": "this PyTorch build has no NCCL",
    "cuinit_not_found": "cuInit failed with CUDA_ERROR_NOT_FOUND: the driver library the process loaded lacks a symbol",
    "nvml_init_failed": "NVML failed to start (error {code}: {name})",
    "vllm_wsl_no_pin": "vLLM turned pinned host memory off: it runs under WSL",
    "hip_no_kernel": "HIP could not load a kernel: error {code} ({name}): no code object for this GPU",
    "envoy_sidecar": "an Envoy proxy (Istio's sidecar) logs the pod's connections",
    "pg_nccl_aborted": "PyTorch ended the process after an NCCL operation failed or timed out",
    "pod_security_forbidden": "Kubernetes Pod Security ({level}) refused the pod",
    "slurm_gpu_affinity_socket": "slurmd: the GPU's cores {cores} on {node} do not match Slurm's sockets",
    "registry_unauthorized": "the registry {registry} refused the pull of {image} (401)",
    "gloo_full_mesh_failed": "PyTorch's Gloo group could not connect every pair of ranks",
    "net_id_missing": "NCCL's topology search asked for a network device (NET {net_id}) it does not have",
    "nccl_version_mismatch": "rank {rank_a} runs NCCL {version_a}, rank {rank_b} NCCL {version_b}",
    "dnf_releasever_stale": "dnf asked for OS release {releasever}; the running kernel is release {kernel_release}'s",
    "nvml_version_mismatch": "NVML: the driver's kernel module and its libraries are of different releases",
    "apt_nvidia_upgrade": "the package manager upgraded {package}",
}
# What each CUDA error (parse.cuda_errors) says, in a distributed job: the enum's description
# (CUDA Runtime API, cudaError), with the usual reason the rules here give
_LOST = "the process's CUDA context is lost: every later CUDA call fails the same way"
CUDA_HINTS = {
    "cudaErrorInvalidValue": "a call was given an invalid argument",
    "cudaErrorMemoryAllocation": "the GPU's memory is full",
    "cudaErrorInitializationError": "CUDA could not start: the driver, the device files, or a process forked after CUDA started",
    "cudaErrorCudartUnloading": "the process was already shutting down: the first error before it is the cause",
    "cudaErrorInvalidDevicePointer": "an address that is not GPU memory where GPU memory was expected",
    "cudaErrorInsufficientDriver": "the driver is older than this CUDA runtime needs",
    "cudaErrorDevicesUnavailable": "the GPU is in exclusive mode and another process holds it",
    "cudaErrorNoDevice": "the process sees no GPU: the driver not loaded, CUDA_VISIBLE_DEVICES empty, or a container started without GPUs",
    "cudaErrorInvalidDevice": "a GPU index beyond the GPUs this process sees",
    "cudaErrorInvalidDeviceFunction": "no code built for this GPU's architecture (or the kernel is not one of this device's)",
    "cudaErrorNoKernelImageForDevice": "no code built for this GPU's architecture",
    "cudaErrorInvalidPtx": "the driver could not compile the program's PTX for this GPU",
    "cudaErrorUnsupportedPtxVersion": "the program's PTX comes from a CUDA toolkit newer than the driver",
    "cudaErrorSymbolNotFound": "no code built for this GPU's architecture",
    "cudaErrorECCUncorrectable": f"an uncorrectable memory error on the GPU (hardware: an Xid 48, 94 or 95 in dmesg); {_LOST}",
    "cudaErrorPeerAccessUnsupported": "these two GPUs cannot map each other's memory",
    "cudaErrorNvlinkUncorrectable": f"an uncorrectable NVLink error (hardware: an Xid 74 in dmesg); {_LOST}",
    "cudaErrorInvalidResourceHandle": "a stream, event or handle of another context, or one already destroyed",
    "cudaErrorIllegalAddress": f"a kernel read or wrote memory it does not own; {_LOST}",
    "cudaErrorLaunchOutOfResources": "a kernel asked for more registers or shared memory than the GPU has",
    "cudaErrorLaunchTimeout": "a kernel ran too long and was stopped (a GPU that also drives a display, or a hung kernel)",
    "cudaErrorContextIsDestroyed": "the CUDA context was already torn down: the first error before it is the cause",
    "cudaErrorAssert": f"an assertion in a kernel failed (often an index out of range); {_LOST}",
    "cudaErrorHardwareStackError": f"a kernel overran its stack; {_LOST}",
    "cudaErrorIllegalInstruction": f"a kernel ran an illegal instruction; {_LOST}",
    "cudaErrorMisalignedAddress": f"a kernel accessed a misaligned address; {_LOST}",
    "cudaErrorInvalidAddressSpace": f"a kernel used an address of the wrong memory space; {_LOST}",
    "cudaErrorInvalidPc": f"a kernel jumped to an invalid program counter; {_LOST}",
    "cudaErrorLaunchFailure": f"a kernel faulted while running (an invalid address, or the GPU failing: an Xid in dmesg); {_LOST}",
    "cudaErrorNotPermitted": "not permitted here (multi-node NVLink: the IMEX channels)",
    "cudaErrorNotSupported": "not supported by this GPU, driver or platform",
    "cudaErrorSystemNotReady": "the system is not ready (an NVSwitch system: Fabric Manager not running)",
    "cudaErrorSystemDriverMismatch": "the driver's libraries and its kernel module are of different releases",
    "cudaErrorUnknown": "the driver gave no reason: dmesg for an Xid, and nvidia-smi on the node",
}
# The usual reasons, in a distributed job, of the system-call errors another program's line may
# quote (parse.log_patterns.ERRNO_TEXTS), each the next thing to look at
ERRNO_HINTS = {
    "ENOMEM": "memory could not be allocated or locked: ulimit -l, free memory, an RDMA registration beyond the NIC's limits",
    "ENOSYS": "the kernel lacks the call: a module or feature missing (RDMA: ib_uverbs loaded, the openibd / rdma service running)",
    "EPERM": "not permitted: the process's privileges, a container's capabilities (IPC_LOCK, SYS_ADMIN) or --privileged",
    "EACCES": "permission denied: the device file's or directory's mode and the user's groups (/dev/infiniband, /dev/kfd, /dev/shm)",
    "ENODEV": "no such device: the driver not loaded, or the device not passed into the container",
    "ENOSPC": "a file system or /dev/shm full: df -h /dev/shm /tmp",
    "ECONNREFUSED": "nothing listens at the peer's address and port: the peer process not started or dead, or a firewall rejecting",
    "ETIMEDOUT": "no answer from the peer: a firewall dropping packets, the wrong interface or address, or the peer hung",
    "EHOSTUNREACH": "no route to the peer from the chosen interface: its address and the routes",
    "ENETUNREACH": "no route to the peer's network from the chosen interface: its address and the routes",
    "EBUSY": "the device is held by another process, or a GPU is in exclusive mode (nvidia-smi -q -d COMPUTE)",
    "EIO": "the device or file system reported an I/O error: dmesg for the device's errors",
    "EFAULT": "a bad address passed to the kernel: often a GPU buffer where host memory was expected",
    "EAGAIN": "a resource ran out for the moment (threads, locked memory, queue entries): ulimit -a",
    "ECONNRESET": "the peer closed the connection first: its own log holds the cause",
    "EPIPE": "the peer closed the connection first: its own log holds the cause",
}


def describe(event: Event) -> str:
    """One event in words, with where it happened and the line it came from."""
    d = event.detail
    where = " on ".join(
        x for x in (f"GPU {event.dev}" if event.dev is not None else "", event.host or "") if x
    )
    parts: list[str] = []
    if d.get("rank") is not None:
        where = f"rank{d['rank']}" + (f" {where}" if where else "")
    if event.kind == "ib_completion":
        status = int(d["status"] or 0)
        parts.append(f"IB completion error {status} ({WC_STATUS.get(status, 'see ibv_wc_status')})")
        parts += [f"vendor err {d['vendor_err']}"] if d["vendor_err"] is not None else []
        parts += [f"{d['direction']}"] if d["direction"] else []
        parts += [f"from peer {d['peer']}"] if d["peer"] else []
        parts += (
            [f"local GID {d['local_gid']}, remote GID {d['remote_gid']}"] if d["local_gid"] else []
        )
    elif event.kind == "qp_error":
        parts.append(f"ibv_modify_qp failed: {d['text']} (errno {d['errno']})")
        parts += [f"to state {d['next_state']}"] if d["next_state"] else []
        parts += [f"local GID index {d['gid_index']}"] if d["gid_index"] is not None else []
    elif event.kind == "cuda_error":
        meaning = _cuda_meaning(str(d["text"]))
        parts.append(
            "CUDA error" + (f" {d['code']}" if d["code"] is not None else "") + f" '{d['text']}'"
            + (f" in the {str(d['where']).upper()} transport" if d["where"] else "")
            + (f" ({meaning})" if meaning else "")
        )  # fmt: skip
    elif event.kind == "errno_text":
        parts.append(
            f"a system call failed with {d['name']} ({d['text']}): "
            + ERRNO_HINTS.get(str(d["name"]), "see the line")
        )
    elif event.kind == "nvls_bind":
        parts.append(f"NVLS multicast bind failed: CUDA error {d['code']} '{d['error']}'")
    elif event.kind == "socket_type_mismatch":
        parts.append(
            f"a peer connected as {d['peer_type']} where this rank expected {d['expected_type']}"
        )
    elif event.kind == "socket_wrong_magic":
        text = f" (its first 8 bytes read '{d['ascii']}')" if d["ascii"] else ""
        parts.append(
            f"a connection that is not this communicator's: magic {d['got']}{text}, expected {d['expected']}"
        )
    elif event.kind == "gdr_distance":
        parts.append(
            f"GPU Direct RDMA off for GPU {d['gpu']} / HCA {d['hca']}: PCIe distance {d['distance']}, NCCL_NET_GDR_LEVEL {d['level']}"
        )
    elif event.kind == "collective_desync" and d["op_a"]:
        seq = f" (collective #{d['sequence']})" if d["sequence"] is not None else ""
        if d["op_a"] == d["op_b"] and d["shape_a"] != d["shape_b"]:
            parts.append(f"rank {d['rank_a']} ran {d['op_a']} on shape [{d['shape_a']}] where rank "
                         f"{d['rank_b']} ran it on [{d['shape_b']}]{seq}")  # fmt: skip
        else:
            parts.append(
                f"rank {d['rank_a']} ran {d['op_a']} where rank {d['rank_b']} ran {d['op_b']}{seq}"
            )
    elif event.kind == "ofi_error":
        name = f" ({d['name']})" if d["name"] else ""
        parts.append(f"NET/OFI completion error RC {d['rc']}{name}")
    elif event.kind == "ofi_provider_error":
        parts.append(
            f"libfabric {d['provider']} provider: err {d['err']}, prov_err '{d['prov_err']}'"
        )
    elif event.kind == "nccl_config_invalid":
        parts.append("the NCCL loaded rejected PyTorch's communicator configuration")
    elif event.kind == "store_port_in_use":
        port = f"port {d['port']}" if d["port"] is not None else "its port"
        parts.append(f"the rendezvous store's {port} is already in use")
    elif event.kind == "gpu_xid":
        known = xid_catalogue().get(int(str(d["code"])))
        parts.append(
            f"Xid {d['code']}: "
            + (
                str(known["meaning"])
                if known
                else f"{d['message']} (not in the built-in catalogue)"
            )
        )
    elif event.kind == "store_connect_failed":
        parts.append(
            f"the rendezvous store at {d['address']}:{d['port']} did not answer (errno {d['errno']})"
            + (f"; {d['address']} is not a host address" if _not_a_host(str(d["address"])) else "")
        )
    elif event.kind == "process_exit":
        how = (f" on signal {d['signal']}" if d["signal"] else
               f" with status {d['code']}" if d["code"] is not None else "")  # fmt: skip
        code = d["code"]
        if isinstance(code, int) and -code in SIGNALS:  # torchrun's -N: ended by signal N
            how += " (signal {}, {}: {})".format(-code, *SIGNALS[-code])
        node = f" on {d['node']}" if d["node"] else ""
        parts.append(f"the launcher reports rank {d['process_rank']}'s process exited{how}{node}")
    elif event.kind == "nccl_symbol_missing" and not d["library"]:  # a wrapped paste's path
        parts.append(f"a library needs {d['symbol']}, which the libnccl.so.2 it loaded lacks")
    elif event.kind == "ddp_unused_params":
        on = f" on rank {d['on_rank']}" if d["on_rank"] is not None else ""
        names = f": {d['params']}" if d["params"] else ""
        parts.append(f"DDP: parameters without a gradient in the last iteration{on}{names}")
    elif event.kind == "host_buffer_import":
        how = "cuMem (NCCL_CUMEM_HOST_ENABLE)" if d["via"] == "cumem" else "a /dev/shm file (mmap)"
        parts.append(f"a local peer's host buffer imported through {how}")
    elif event.kind == "gpu_offload":
        on = "no layer" if d["gpu_layers"] == 0 else f"{d['gpu_layers']} of {d['layers']} layers"
        kv = f"; its KV cache alone needs {d['kv']}" if d["kv"] else ""
        parts.append(f"{on} on the GPUs, the rest on the CPU{kv}"
                     if int(str(d["gpu_layers"])) < int(str(d["layers"]))
                     else f"all {d['layers']} layers on the GPUs")  # fmt: skip
    elif event.kind == "bf16_unsupported":
        on = f": this {d['gpu']} has compute capability {d['cc']}" if d["gpu"] else ""
        parts.append(f"BF16 needs a GPU of compute capability 8.0 or more{on}")
    elif event.kind == "vllm_max_len":
        size = f", {d['block_size']} tokens a block" if d["block_size"] else ""
        parts.append(f"vLLM's longest request (max_seq_len) is {d['max_len']} tokens{size}")
    elif event.kind == "ggml_gpu_oom":
        size = f" of {d['mib']} MiB on device {d['device']}" if d["mib"] else ""
        parts.append(f"llama.cpp could not allocate a GPU buffer{size}: out of memory")
    elif event.kind == "host_unresolved" and d["name"] is None:  # a message naming no host
        parts.append("a host name does not resolve")
    elif event.kind in EVENT_WORDS:
        parts.append(EVENT_WORDS[event.kind].format(**d))
    elif event.kind == "gid_selected":
        parts.append(
            f"GID index {d['index']} selected: {d['raw']}"
            + (" = fe80 link-local" if d["link_local"] else "")
        )
    else:
        shown = {k: v for k, v in d.items() if v is not None and k not in ("stage", "rank")}
        parts.append(
            event.kind.replace("_", " ")
            + (": " + ", ".join(f"{k} {v}" for k, v in shown.items()) if shown else "")
        )
    if d.get("stage") and event.kind != "ib_completion":
        parts.append(f"during {d['stage']}")
    return f"{'; '.join(parts)}{' (' + where + ')' if where else ''}  <- {event.line}"


def _described(events: list[Event]) -> list[str]:
    """The first five distinct descriptions of ``events``."""
    return list(dict.fromkeys(describe(e) for e in events))[:5]


# the signals that end a rank's process, and what usually sends them (signal(7); torchrun reports
# a process ended by signal N as exit code -N, as Python's subprocess does)
SIGNALS = {
    2: ("SIGINT", "interrupted: Ctrl-C, or the launcher stopping the ranks"),
    6: ("SIGABRT", "native code aborted: a C++ exception nobody caught ('terminate called ...')"),
    7: ("SIGBUS", "a mapped file or shared memory with nothing behind it: /dev/shm full"),
    9: ("SIGKILL", "killed: the kernel's out-of-memory killer, or a scheduler or launcher"),
    11: ("SIGSEGV", "a segmentation fault in native code"),
    15: ("SIGTERM", "stopped: by the launcher after another rank failed, or by the scheduler"),
}

# events that are their own fact: counted by rules, their lines quoted as evidence
EVENT_FACTS = (
    "download_part_failed",
    "hub_server_error",
    "hub_unreachable",
    "ollama_client_proxy",
    "ray_start_address",
    "ray_gcs_unreachable",
    "ray_node_dead",
    "docker_host_unresolved",
    "connect_unspecified",
    "http_proxy_answered",
    "gateway_timeout",
    "stream_cut",
    "client_timeout",
    "icmp_policy_unreachable",
    "server_listening",
    "rpc_server_socket_failed",
    "rpc_server_start",
    "dllama_socket_closed",
    "exo_no_peers",
    "nvls_register_failed",
    "nccl_bind_in_use",
    "vllm_custom_ar_error",
    "ollama_host_short",
    "ollama_required",
    "ollama_system_memory",
    "llama_runner_killed",
    "ggml_host_alloc_failed",
    "llama_no_mmap",
    "llama_mlock_failed",
    "no_socket_iface",
    "fm_driver_mismatch",
    "container_file_exists",
    "containerd_config_unsupported",
    "nccl_symbol_missing",
    "nccl_wheel",
    "rdma_port_down",
    "torch_cuda_oom",
    "python_exception",
    "rdzv_endpoint_invalid",
    "master_addr_missing",
    "ddp_unused_params",
    "plugin_not_found",
    "ofi_tuner_refused",
    "ofi_sets_algo_proto",
    "nccl_unknown_result",
    "sanitizer_invalid_access",
    "sanitizer_nccl_frame",
    "gpu_memory_unbalanced",
    "nccl_devcomm_failed",
    "fr_not_joined",
    "fr_missing_ranks",
    "fr_collective",
    "nvidia_driver_oops",
    "duplicate_mac",
    "mig_in_use",
    "nixl_error",
    "ofi_av_insert_failed",
    "dmabuf_topology_refused",
    "pl_slurm_handled",
    "nemo_slurm_not_handling",
    "ucx_vram_as_host",
    "ucx_tls",
    "nvshmem_uar_failed",
    "mooncake_gid_null",
    "ollama_gfx_unsupported",
    "ollama_no_gpu",
    "llama_ctx_size",
    "ggml_gpu_oom",
    "llama_kv_alloc_failed",
    "bf16_unsupported",
    "vllm_no_kv_memory",
    "vllm_kv_short",
    "vllm_gpu_blocks",
    "vllm_max_len",
    "vllm_concurrency",
    "cudagraph_capture_frame",
    "trt_engine_version",
    "trt_length_over_engine",
    "torch_no_nccl",
    "cuinit_not_found",
    "nvml_init_failed",
    "vllm_wsl_no_pin",
    "envoy_sidecar",
    "pg_nccl_aborted",
    "pod_security_forbidden",
    "slurm_gpu_affinity_socket",
    "registry_unauthorized",
    "gloo_full_mesh_failed",
    "net_id_missing",
    "collective_desync",
    "nccl_config_invalid",
    "store_port_in_use",
    "device_ordinal",
    "process_exit",
    "cuda_not_initialized",
    "ofi_no_provider",
    "sharp_lock_failed",
    "mpirun_env_prefix",
    "nccl_tests_output",
    "kernel_arg_missing",
    "gpu_xid",
    "bus_error",
    "store_no_libuv",
    "store_connect_failed",
    "cuda_driver_old",
    "trtllm_world_size",
    "ucc_error",
    "ib_open_failed",
    "uneven_ranks_per_host",
    "no_algorithm",
    "algo_forced",
    "topo_xml_full",
    "hip_no_device",
    "vllm_workers_wait",
    "nvml_missing",
    "mpi_ofi_abort",
    "ucx_error",
    "engine_custom_ar_no_p2p",
    "ray_version_mismatch",
    "ofi_rails_mismatch",
    "gin_doca_failed",
    "proxy_op_wait",
    "orted_not_found",
    "orte_unpack_error",
    "spawn_no_main_guard",
    "cumem_create_not_permitted",
    "tensile_load_failed",
    "ray_node_request_unmet",
    "topo_reverse_path",
    "gloo_iface_missing",
    "gloo_loopback_fallback",
    "te_userbuffers_failed",
    "cumem_host_probe_frame",
    "verbs_no_provider",
    "mpi_not_enough_slots",
    "mpi_cq_create_failed",
    "ras_process_missing",
    "ras_process_dead",
    "monitored_barrier_missing",
    "cray_gtl_not_linked",
    "cray_nic_policy_unconfined",
    "ompi_no_slurm_pmi",
    "cxi_eq_overflow",
    "ompi_libnbc_frame",
    "ras_mismatch",
    "pmix_gds_ds12",
    "slurm_switch_plugin_missing",
    "gpu_busy_unavailable",
    "nvml_unknown_error",
    "pmix_server_unreachable",
    "shapes_differ",
    "ucx_signal_handler",
    "container_driver_timeout",
    "fabric_state_in_progress",
    "jax_service_fatal",
    "jax_task_named",
    "jax_coordinator_lost",
    "jax_task_disconnected",
    "spawn_pickle_error",
    "enroot_dir_denied",
    "userns_failed",
    "pyxis_failed",
    "fm_ib_umad_missing",
    "fm_nothing_to_do",
    "rxdm_gpus_mismatch",
    "rxdm_no_pci_gpus",
    "hccl_ifname_missing",
    "hccl_tls_mismatch",
    "hccl_op_mismatch",
    "hccl_ip_family_mismatch",
    "container_nvml_missing",
    "mpi_ofi_addrinfo",
    "open_files_exhausted",
    "hccl_port_bound",
    "hccl_root_unreachable",
    "hccl_ranks_missing",
    "hccl_device_oom",
    "hccl_sdma_error",
    "hccl_roce_cqe",
    "hccl_ranktable_path",
    "hccl_task_failed",
    "hccl_error_code",
    "mpi_ofi_not_connected",
    "mpi_tcp_no_route",
    "hccl_npu_port_bound",
    "hccl_link_timeout",
    "hccl_heartbeat_lost",
    "hccl_ranktable_ip",
    "device_plugin_nvml",
    "rccl_iommu_pt_missing",
    "efa_sync_memops",
    "cloud_quota_exceeded",
    "ena_allowance_exceeded",
    "peermem_symbol_mismatch",
    "module_symbol_mismatch",
    "ofi_mr_no_memory",
    "ib_devices_list_failed",
    "verbs_kernel_abi",
    "errno_text",
    "kernel_headers_unavailable",
    "dnf_releasever_stale",
    "nvml_version_mismatch",
    "apt_nvidia_upgrade",
)
EVENT_EVIDENCE: dict[str, tuple[tuple[str, ...], Any]] = {
    "ib_retry": (("ib_completion",), lambda e: e.detail["status"] == 12),
    "ib_local_protection": (("ib_completion",), lambda e: e.detail["status"] == 4),
    "ib_wr_flush": (("ib_completion",), lambda e: e.detail["status"] == 5),
    "qp_error": (("qp_error",), None),
    "gid_selected": (("gid_selected",), None),
    "connect_failed": (CONNECT_FAILURES, None),
    # a client's HTTP connection, by where it went and why it failed
    "http_client_errors": (("http_connect_failed",), None),
    "http_refused": (("http_connect_failed",), lambda e: e.detail["reason"] == "refused"
                     and str(e.detail["server"]) not in DOCKER_HOST_NAMES and e.detail["server"] != "::1"),
    "http_unreachable": (("http_connect_failed",), lambda e: e.detail["reason"] == "unreachable" or (
        e.detail["reason"] == "timeout" and not str(e.detail["server"]).startswith(LOOPBACK_NAMES)
        and str(e.detail["server"]) not in DOCKER_HOST_NAMES)),
    "host_unresolved": (("host_unresolved",), lambda e: not _download_host(e.detail["name"])),
    "download_host_unresolved": (("host_unresolved",), lambda e: _download_host(e.detail["name"])),
    "ray_address_loopback": (("ray_start_address",), lambda e: str(e.detail["address"]).startswith(("127.", "localhost"))),
    "ray_address_empty": (("ray_start_address", "ray_gcs_unreachable"), lambda e: e.detail["address"] == ""),
    "http_refused_gateway": (("http_connect_failed",), lambda e: str(e.detail["server"]) in DOCKER_HOST_NAMES
                             and e.detail["reason"] in ("refused", "timeout")),
    "http_refused_ipv6": (("http_connect_failed",), lambda e: e.detail["server"] == "::1" and e.detail["reason"] == "refused"),
    "http_loopback_timeout": (("http_connect_failed",), lambda e: e.detail["reason"] == "timeout"
                              and str(e.detail["server"]).startswith(LOOPBACK_NAMES)),
    "http_no_local_port": (("http_connect_failed",), lambda e: e.detail["reason"] == "no local port"),
    "host_oom_killed": (("host_oom_killed", "host_oom_invoked"), None),
    "peer_gone": (("peer_reset", "peer_closed", "proxy_failed"), None),
    "bad_address_family": (("bad_address_family",), None),
    "cuda_error": (("cuda_error",), None),
    "topology_sysfs": (("topology_sysfs",), None),
    "max_shared_mem": (("max_shared_mem",), None),
    "ofi_error": (("ofi_error",), None),
    "ofi_unreachable": (("ofi_error",), lambda e: e.detail["rc"] == 113 or e.detail["name"] == "UNDELIVERABLE"),
    "ofi_failed": (("ofi_error", "ofi_provider_error"),
                   lambda e: e.kind == "ofi_provider_error" or not (e.detail["rc"] == 113 or e.detail["name"] == "UNDELIVERABLE")),
    "watchdog_capture": (("watchdog_exception",), lambda e: "capturing" in str(e.detail["error"]).lower()),
    "ib_port_error": (("ib_async_event",), lambda e: str(e.detail["event"]).lower().startswith("port")),
    "ib_gid_change": (("ib_async_event",), lambda e: "gid" in str(e.detail["event"]).lower()),
    "library_loaded": (("library_loaded",), None),
    # the cudaMemcpyAsync bug of NCCL 2.18.1-2.18.5 (NVIDIA/nccl#957); NVLS's own 'invalid
    # argument' (a restarted Fabric Manager) is the nvls rule's
    "nccl_218_invalid_argument": (("cuda_error",), lambda e: e.detail["text"] == "invalid argument" and e.detail["where"] != "nvls"),
    "nccl_error": (("nccl_error", "test_failure"), None),
    "usb_nic": (("usb_nic", "speed_unknown", "socket_dev"), None),
    "nvls": (("nvls_bind", "cuda_error"), lambda e: e.kind == "nvls_bind" or e.detail["where"] == "nvls"),
    "socket_type_mismatch": (("socket_type_mismatch",), None),
    "net_plugin": (("net_plugin",), None),
    "message_truncated": (("message_truncated",), None),
    "collective_mismatch": (("collective_mismatch",), None),
    "shm_failed": (("shm_failed",), lambda e: e.detail["action"] == "create"),
    "shm_attach_failed": (("shm_failed",), lambda e: e.detail["action"] in ("attach", "unlink")),
    # NCCL's own CUDA calls; another program's line quoting the error (PyTorch's `CUDA error: ...`)
    # is that program's kernels
    "cuda_arch_missing": (("cuda_error",), lambda e: e.detail["text"] in ARCH_MISSING and not e.detail.get("by_program")),
    # (cuInit's CUDA_ERROR_NOT_FOUND is a driver library's missing symbol, not a kernel's)
    "program_arch_missing": (("cuda_error", "hip_no_kernel"), lambda e: e.kind == "hip_no_kernel" or (
        e.detail["text"] in ARCH_MISSING and bool(e.detail.get("by_program")) and "cuInit" not in e.line)),
    "ring_mismatch": (("ring_mismatch",), None),
    "ibv_reg_failed": (("ibv_reg_failed",), None),
    "ibv_create_failed": (("ibv_create_failed",), None),
    "duplicate_gpu": (("duplicate_gpu",), None),
    "nccl_version_mismatch": (("nccl_version_mismatch",), None),
    "graph_import_failed": (("graph_import_failed",), None),
    "graph_capture_unsupported": (("graph_capture_unsupported",), None),
    "connect_loopback": (CONNECT_FAILURES,
                         lambda e: str(e.detail["peer"] or "").startswith(("127.", "::1", "localhost"))),
    "topo_xml": (("topo_xml",), None),
    "socket_create_failed": (("socket_create_failed",), None),
    "ofi_register_failed": (("ofi_register_failed",), None),
    "cuda_init_error": (("cuda_error",), lambda e: e.detail["text"] == "initialization error"),
    "cuda_not_supported": (("cuda_error",), lambda e: e.detail["text"] == "operation not supported"),
    "cuda_oom": (("cuda_error",), lambda e: e.detail["text"] in ("out of memory", "invalid resource handle") and not e.detail.get("by_program")),
    # another program's CUDA call out of memory (PyTorch's `CUDA error: out of memory`), not NCCL's
    "program_cuda_oom": (("cuda_error",), lambda e: e.detail["text"] == "out of memory" and bool(e.detail.get("by_program"))),
    "cuda_invalid_handle": (("cuda_error",), lambda e: e.detail["text"] == "invalid resource handle"),
    "ib_async_event": (("ib_async_event",), None),
    "socket_wrong_magic": (("socket_wrong_magic",), None),
    "gdr_distance": (("gdr_distance",), None),
    "roce_connect_failed": (("proxy_failed",), lambda e: e.detail["op"] == "Connect"),
    "ib_gdr_no_module": (("ib_gdr_no_module",), None),
    "nvml_gpu_hidden": (("nvml_gpu_hidden",), None),
    # CUDA error 2 is CUDA_ERROR_OUT_OF_MEMORY: no multicast object left (Fabric Manager's own line
    # says every slot is taken), not the broken fabric the other NVLS errors show
    "nvls_oom": (("nvls_bind", "nvls_slots_exhausted"), lambda e: e.kind == "nvls_slots_exhausted" or e.detail["code"] == 2),
    "shm_permission_denied": (("shm_failed",), lambda e: "permission denied" in str(e.detail["why"] or "").lower()),
    "host_import": (("host_buffer_import",), None),
    "ofi_no_memory": (("libfabric_error", "efa_rx_post_failed"), lambda e: e.kind == "efa_rx_post_failed" or e.detail["code"] == -12),
    "cuda_stub": (("cuda_error",), lambda e: "stub library" in str(e.detail["text"])),
    "cuda_ipc_failed": (("cuda_error",), lambda e: e.detail["where"] == "p2p"),
    # a kernel's fault: the errors that leave the context lost (parse.cuda_errors.STICKY_CODES)
    "cuda_kernel_fault": (("cuda_error",), lambda e: _cuda_code(e) in STICKY_CODES),
    "chunk_size_set": (("chunk_size_set",), None),
    # UCX over EFA: its devices are rdmapNsM; its protocol selection finding no way between ends
    "ucx_efa_error": (("ucx_error",), lambda e: "rdmap" in str(e.detail["error"])),
    "pl_rank": (("pl_rank",), None),
    "ucx_no_protocol": (("ucx_error",), lambda e: "cannot find remote protocol" in str(e.detail["error"])),
    "ucx_tls_no_cuda": (("ucx_tls",), lambda e: not _tls_has_cuda(str(e.detail["value"]))),
    "gpu_offload_partial": (("gpu_offload",), lambda e: e.detail["gpu_layers"] < e.detail["layers"]),
    # llama.cpp's and TensorRT-LLM's own CUDA checks: their fixes are theirs, not NCCL's
    "ggml_p2p_unsupported": (("cuda_error",), lambda e: e.detail["p2p_unsupported"] and "ggml" in e.line),
    "trtllm_oom": (("cuda_error",), lambda e: e.detail["text"] == "out of memory" and "TensorRT-LLM" in e.line),
    # Ollama 0.30's bundled ROCm 7 counts an integrated GPU's free memory as the system's free
    # RAM (MemAvailable): half or less of the shared memory it reports
    "ollama_igpu_undercounted": (("ollama_igpu",), lambda e: "rocm_v7" in str(e.detail["libdirs"])
                                 and e.detail["available_gib"] < 0.5 * e.detail["total_gib"]),
    **{kind: ((kind,), None) for kind in EVENT_FACTS},
}  # fmt: skip


def _pl_rank_facts(nccl: NcclLog) -> dict[str, int]:
    """Lightning's (and NeMo's) rank lines: the distinct global ranks that started, the largest
    world size they name, and the ranks that started more than once."""
    starts = Counter(int(e.detail["global_rank"] or 0) for e in nccl.of("pl_rank"))
    world = max((int(e.detail["world"] or 0) for e in nccl.of("pl_rank")), default=0)
    return {
        "pl_ranks_seen": len(starts),
        "pl_world": world,
        "pl_ranks_duplicated": sum(1 for n in starts.values() if n > 1),
    }


VLLM_BLOCK_TOKENS = 16  # vLLM's default KV-cache block (--block-size 16 on CUDA)


_BYTE_UNITS = {"B": 0, "KB": 1, "KiB": 1, "MB": 2, "MiB": 2, "GB": 3, "GiB": 3, "TB": 4, "TiB": 4}


def _gib(text: object) -> float:
    """Ollama's sizes (format.HumanBytes2: "59.1 GiB", "215.1 MiB", "0 B") in GiB."""
    number, _, unit = str(text).partition(" ")
    try:
        return float(number) / 1024.0 ** (3 - _BYTE_UNITS[unit])
    except (KeyError, ValueError):
        return 0.0


def _ollama_host_share(nccl: NcclLog) -> tuple[float, float, float] | None:
    """Ollama's estimate of the model's part in host memory (the whole model less the GPUs'
    part, as its own check counts it: llm/server.go) and the free RAM and swap it reported."""
    required, system = nccl.of("ollama_required"), nccl.of("ollama_system_memory")
    if not required or not system:
        return None
    host = _gib(required[-1].detail["full"]) - _gib(required[-1].detail["gpu"])
    free, swap = _gib(system[-1].detail["free"]), _gib(system[-1].detail["swap"])
    return (host, free, swap) if host > 0 and free + swap > 0 else None


def _download_host(name: object) -> bool:
    """A host models are downloaded from (DOWNLOAD_HOSTS, or one of their subdomains)."""
    n = str(name or "").lower()
    return any(n == h or n.endswith("." + h) for h in DOWNLOAD_HOSTS)


def _ollama_host_share_pct(nccl: NcclLog) -> int:
    share = _ollama_host_share(nccl)
    return 0 if share is None else round(100 * share[0] / (share[1] + share[2]))


def _vllm_kv_too_small(nccl: NcclLog) -> int:
    """Whether vLLM's KV cache cannot hold one request of its longest length: its own error, its
    V1 concurrency below 1x, or V0's block count x the block size below the config's
    max_seq_len."""
    if nccl.of("vllm_kv_short") or any(
        float(e.detail["times"] or 0) < 1 for e in nccl.of("vllm_concurrency")
    ):
        return 1
    blocks = [int(e.detail["blocks"] or 0) for e in nccl.of("vllm_gpu_blocks")]
    lens = [(int(e.detail["max_len"] or 0), int(e.detail["block_size"] or VLLM_BLOCK_TOKENS))
            for e in nccl.of("vllm_max_len")]  # fmt: skip
    return int(bool(blocks and lens) and min(blocks) * lens[-1][1] < lens[-1][0])


def _tls_has_cuda(value: str) -> bool:
    """Whether a UCX_TLS list leaves UCX its CUDA memory domain: named (cuda, cuda_copy,
    cuda_ipc), all transports (empty, "all"), or an exclusion list (^...) that spares cuda and
    cuda_copy (the copy transport holds the domain; excluding cuda_ipc alone keeps it)."""
    v = value.lower()
    if v.startswith("^"):
        return not {"cuda", "cuda_copy"} & set(v[1:].split(","))
    return "cuda" in v or v in ("", "all")


def _cuda_meaning(text: str) -> str | None:
    """A CUDA error's text in words: its enum name and usual reason (CUDA_HINTS)."""
    named = cuda_error(text)
    return f"{named[2]}: {CUDA_HINTS[named[2]]}" if named and named[2] in CUDA_HINTS else None


def _cuda_code(event: Event) -> int | None:
    """A cuda_error event's code: as the line gave it, else its text's."""
    if event.detail["code"] is not None:
        return int(event.detail["code"])
    known = cuda_error(str(event.detail["text"]))
    return known[1] if known else None


def _matching(name: str, nccl: NcclLog) -> list[Event]:
    """The events EVENT_EVIDENCE[name] names (its kinds, kept by its predicate)."""
    kinds, keep = EVENT_EVIDENCE[name]
    groups = nccl.by_kind()
    if len(kinds) == 1:
        return [e for e in groups.get(kinds[0], ()) if keep is None or keep(e)]
    # several kinds: in log order across them
    return [e for e in nccl.events if e.kind in kinds and (keep is None or keep(e))]


def _count(name: str, nccl: NcclLog) -> int:
    """How many events EVENT_EVIDENCE[name] names: a fact and its evidence share one test."""
    return len(_matching(name, nccl))


def _evidence(name: str, nccl: NcclLog, torch: TorchLog) -> list[str]:
    if name in EVENT_EVIDENCE:
        return _described(_matching(name, nccl))
    if name in nccl.evidence:
        return [nccl.evidence[name]]
    if name.startswith("env:"):
        return [nccl.evidence.get(name, "")] if name in nccl.evidence else []
    if name == "errors":
        return list(dict.fromkeys(nccl.errors))[:5]
    if name == "versions":
        return [f"NCCL {number}  <- {line}" for number, line in sorted(nccl.versions.items())][:5]
    if name == "gid_table" and nccl.gid_table:
        rows = [f"GID[{i}] {g} RoCE v{v}" + (" (link-local: not routed)" if is_link_local(g) else "")
                for i, (g, v) in sorted(nccl.gid_table.items())]  # fmt: skip
        good = [
            i
            for i, (g, v) in sorted(nccl.gid_table.items())
            if v == 2 and g.lower().startswith("::ffff:")
        ]
        return rows + (
            [f"the routable RoCE v2 GID is at GID index {good[0]}: NCCL_IB_GID_INDEX={good[0]}"]
            if good
            else []
        )
    if name == "ollama_host_share" and (share := _ollama_host_share(nccl)) is not None:
        host, free, swap = share
        return [f"Ollama's estimate puts {host:.1f} GiB in host memory, {host / (free + swap):.0%} of "
                f"the {free + swap:.1f} GiB free (RAM {free:.1f} GiB + swap {swap:.1f} GiB)"]  # fmt: skip
    if name == "p2p_slower_than_host":
        return [
            f"{direction} P2P GPU {p[1]} -> GPU {p[2]} at {p[0]:g} GB/s, the slowest copy through "
            f"host memory {pair.host:g} GB/s  <- {p[3]}"
            for direction, pair in sorted(nccl.p2p_slowest.items())
            if pair.slow and (p := pair.p2p) is not None
        ]
    if name == "virtual_ifaces":
        names = [x.split(":")[0] for x in nccl.socket_ifaces]
        out = []
        for n in _virtual_ifaces(nccl):
            used = [
                k
                for k in nccl.net_devs
                if k.startswith("NET/Socket/")
                and n in names
                and k.rsplit("/", 1)[1] == str(names.index(n))
            ]
            out.append(
                f"socket interface {n} ({nccl.ifaces[n]}) is a virtual/tunnel/VPN/USB interface, not the cluster NIC"
                + (f"; channels run over it ({used[0]} = {n})" if used else "")
            )
        return out
    if name == "host_oob":
        shown = [
            f"{host} starts its sockets on {oob}" for host, oob in sorted(nccl.host_oob.items())
        ]
        oob_names = {oob.split(":")[0] for oob in nccl.host_oob.values()}
        if len(oob_names) > 1:
            shown.append(
                f"the hosts use different interfaces for it: {', '.join(sorted(oob_names))}"
            )
        return shown[:6]
    if name == "host_clash":
        return [
            f"lines of {host} start sockets on {pair}: two machines share that host name"
            for host, pair in sorted(nccl.host_clash.items())
        ][:5]
    if name == "link_local_ifaces":
        return [
            f"socket interface {n} has only the link-local address {nccl.ifaces[n]} (not routed between hosts)"
            for n in _link_local_ifaces(nccl)
        ]
    if name == "connect_link_local":
        return [describe(e) for e in _link_local_connects(nccl)][:5]
    if name == "warnings":
        return [_annotated(w) for w in nccl.warnings[:5]]
    if name == "timeout_frames":
        return torch.timeout_frames[:2]
    if name == "completion_errors":
        return [
            f"{line}  [{WC_STATUS.get(s, f'status {s}')}]" for s, line in nccl.completion_errors[:5]
        ]
    if name == "timeouts":
        out = []
        seqs = {t.seq for t in torch.timeouts if t.seq is not None}
        ranks = {t.rank for t in torch.timeouts if t.rank is not None}
        if len(seqs) == 1 and len(ranks) > 1:
            out.append(f"all {len(ranks)} reporting ranks time out on the same collective (SeqNum {seqs.pop()}): "
                       "no rank is behind the others, the collective itself stalled")  # fmt: skip
        for t in torch.timeouts[:5]:
            parts = [f"rank {t.rank}" if t.rank is not None else "rank ?", t.op or "op ?"]
            if t.seq is not None:
                parts.append(f"SeqNum {t.seq}")
            if t.numel is not None:
                parts.append(f"{t.numel:,} elements")
            if t.timeout_s is not None:
                parts.append(f"timeout {t.timeout_s:g} s")
            out.append(", ".join(parts))
        return out
    if name == "stragglers":
        behind = stragglers(torch)
        done = _progress(torch)
        what = "last completed work" if len(torch.last_completed) >= 2 else "timed out at SeqNum"
        lead = max(done.values()) if done else 0
        return [
            f"rank {r}: {what} {done[r]} (others up to {lead}, {lead - done[r]} collectives behind)"
            for r in behind
        ]
    if name == "env":
        return [f"{k}={v}" for k, v in sorted(nccl.env.items())]
    if name == "socket_ifaces" and nccl.socket_ifaces:
        return [f"NET/Socket interfaces: {', '.join(nccl.socket_ifaces)}"]
    return []


def diagnose(nccl: NcclLog, torch: TorchLog) -> list[Finding]:
    """Findings, most severe first."""
    values = facts(nccl, torch)
    found: list[Finding] = []
    for rule in sorted(rules(), key=lambda r: r.fallback):
        if rule.fallback and any(f.severity != "info" for f in found):
            continue
        if holds(rule.when, values):
            evidence = [line for name in rule.evidence for line in _evidence(name, nccl, torch)]
            found.append(
                Finding(
                    rule.id,
                    rule.severity,
                    rule.symptom,
                    rule.cause,
                    rule.check,
                    rule.fix,
                    tuple(evidence),
                    rule.source,
                )
            )
    return sorted(_without_repeated_warnings(found), key=lambda f: SEVERITY_ORDER[f.severity])


# what an NCCL warning's quoted error means, after the warning (see ``_annotated``)
_NOTE = "  [= "


def _annotated(warning: str) -> str:
    """An NCCL warning, followed by what the error it quotes means: a CUDA error's name and
    reason (`Cuda failure '...'`), or a system call's errno and usual reason (strerror's text:
    `Call to ibv_create_qp failed with error Cannot allocate memory`)."""
    cu = CUDA_RE.search(warning) if "Cuda failure" in warning or "CUDA failure" in warning else None
    if cu is not None and (meaning := _cuda_meaning(cu.group("text").strip())) is not None:
        return f"{warning}{_NOTE}{meaning}]"
    if (en := ERRNO_RE.search(warning)) is not None and (name := ERRNO_TEXTS[en.group(0)]) in ERRNO_HINTS:  # fmt: skip
        return f"{warning}{_NOTE}{name}: {ERRNO_HINTS[name]}]"
    return warning


def _without_repeated_warnings(found: list[Finding]) -> list[Finding]:
    """The catch-all "NCCL printed warnings" goes when every warning it quotes is already the
    evidence of a finding that explains it (a line said twice explains nothing more)."""
    others = [line for f in found if f.rule != "nccl-warnings" for line in f.evidence]
    return [
        f
        for f in found
        if f.rule != "nccl-warnings"
        or not all(any(w.split(_NOTE)[0] in line for line in others) for w in f.evidence)
    ]
