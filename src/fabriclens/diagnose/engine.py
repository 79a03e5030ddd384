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
from fabriclens.diagnose.describe import ERRNO_HINTS, cuda_meaning, describe, described
from fabriclens.diagnose.gpu_support import too_old
from fabriclens.parse.cuda_errors import STICKY_CODES, cuda_error
from fabriclens.parse.log_patterns import (
    CUDA_RE,
    ERRNO_RE,
    ERRNO_TEXTS,
    VIRTUAL_IFACE_RE,
    WC_STATUS,
    benign_warning,
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
    # fires only when no other warning or critical rule did (set-up context aside, below)
    fallback: bool = False
    source: str = ""  # the public thread whose maintainers gave this diagnosis
    # what it names follows from another failure (a peer that went away): listed after the
    # findings of its severity that may be that failure
    consequence: bool = False
    # it describes the set-up (the transport NCCL chose), never what failed: a fallback for an
    # unexplained failure does not give way to it
    context: bool = False


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
                        bool(raw.get("fallback", False)), raw.get("source", ""),
                        bool(raw.get("consequence", False)), bool(raw.get("context", False))))  # fmt: skip
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
        # ...and of them those that say nothing went wrong either (no libibverbs: the sockets)
        "nccl_warnings_not_benign": sum(1 for w in nccl.warnings if not benign_warning(w)),
        "completion_errors": len(nccl.completion_errors),
        "retry_exceeded": sum(1 for s, _ in nccl.completion_errors if s == 12),
        "watchdog_timeouts": len(torch.timeouts),
        "vllm_worker_timeouts": sum(1 for t in torch.timeouts if t.vllm_worker),
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
        "ofi_peer_gone": _count("ofi_peer_gone", nccl),
        "cumem_alloc_unknown": _count("cumem_alloc_unknown", nccl),
        "watchdog_capture": _count("watchdog_capture", nccl),
        "ib_port_error": _count("ib_port_error", nccl),
        "qp_invalid": sum(1 for e in nccl.of("qp_error") if e.detail["errno"] == 22),
        "nccl_218_invalid_argument": _count("nccl_218_invalid_argument", nccl) if _nccl_218_before_fix(nccl) else 0,
        "bootstrap_failed": sum(1 for _, stage in nccl.orphan_traces if stage == "bootstrap"),
        "remote_error": sum(1 for e in nccl.of("nccl_error") if e.detail["code"] == "ncclRemoteError"),
        "system_error": sum(1 for e in nccl.of("nccl_error") if e.detail["code"] == "ncclSystemError"),
        "unhandled_cuda_error": sum(1 for e in nccl.of("nccl_error") if e.detail["code"] == "ncclUnhandledCudaError"),
        "ib_catastrophic": _count("ib_catastrophic", nccl),
        "msccl_xml_invalid": _count("msccl_xml_invalid", nccl),
        "efa_pd_failed": _count("efa_pd_failed", nccl),
        # misc/argcheck.cc's invalid root: a communicator with no ranks (aborted, destroyed or
        # never made), or a rank outside a live one
        "argcheck_no_ranks": _count("argcheck_no_ranks", nccl),
        "argcheck_root": _count("argcheck_root", nccl),
        # NCCL unwound a failure (`file.cc:312 -> 3` lines) and printed no WARN about it
        "error_trace_only": int("error_trace" in nccl.evidence and not nccl.warnings
                                and not nccl.of("nccl_error")),
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
        "ib_client_reregister": _count("ib_client_reregister", nccl),
        "rdma_device_no_pci": _count("rdma_device_no_pci", nccl),
        "bootstrap_rank_twice": _count("bootstrap_rank_twice", nccl),
        "bootstrap_nranks_mismatch": _count("bootstrap_nranks_mismatch", nccl),
        "p2p_unavailable": _count("p2p_unavailable", nccl),
        "invalid_rank": _count("invalid_rank", nccl),
        "nvml_unanswered": _count("nvml_unanswered", nccl),
        "verbs_device_unreadable": _count("verbs_device_unreadable", nccl),
        "shm_register_invalid": _count("shm_register_invalid", nccl),
        "p2p_import_invalid": _count("p2p_import_invalid", nccl),
        # nccl-tests' GPU newer than the NCCL release the log shows (gpu_support.py)
        "gpu_newer_than_nccl": len(_gpus_newer_than_nccl(nccl)),
        "unique_id_wait_failed": _count("unique_id_wait_failed", nccl),
        "ucx_devx_failed": _count("ucx_devx_failed", nccl),
        # a rank's communicator torn down while another rank's collective timed out
        "aborted_peer_before_timeout": _count("aborted_peer_before_timeout", nccl)
        * _aborted_other_rank(nccl, torch),
        "duplicate_gpu": len(nccl.of("duplicate_gpu")),
        "graph_file_set": "NCCL_GRAPH_FILE" in env,
        "graph_import_failed": len(nccl.of("graph_import_failed")),
        "graph_capture_unsupported": len(nccl.of("graph_capture_unsupported")),
        "connect_loopback": _count("connect_loopback", nccl),
        # NCCL uses the loopback interface for its sockets in a job of several hosts (an exclusion
        # list without lo lets it): no other node reaches 127.x
        "socket_iface_loopback": len(nccl.hosts) >= 2
        and any(n == "lo" or a.startswith("127.") for n, a in nccl.ifaces.items()),
        "topo_xml_invalid": len(nccl.of("topo_xml")),
        "socket_create_failed": len(nccl.of("socket_create_failed")),
        "ofi_register_failed": len(nccl.of("ofi_register_failed")),
        "cuda_init_error": _count("cuda_init_error", nccl),
        "cuda_too_many_peers": _count("cuda_too_many_peers", nccl),
        "desync_behind": _count("desync_behind", nccl),
        "torchrun_sigabrt": _count("torchrun_sigabrt", nccl),
        "ras_client_garbled": _ras_client_garbled(nccl),
        "ranks_on_one_gpu": len(_ranks_on_one_gpu(nccl)),
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
        "net_plugin_split": _net_plugin_split(nccl),
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


def _ranks_on_one_gpu(nccl: NcclLog) -> list[tuple[str, str, list[int]]]:
    """(host, bus id, ranks) for each GPU that two or more ranks of one communicator name in their
    set-up lines (`rank 0 ... busId 100000 commId 0x..` and `rank 1 ... busId 100000` with the
    same commId on one host): what NCCL refuses as 'Duplicate GPU detected', read from the lines
    each rank prints before it."""
    seen: dict[tuple[str, str, str], set[int]] = {}
    for e in nccl.of("comm_init_rank"):
        if not e.host:  # (lines whose host the paste cut may come from two machines)
            continue
        key = (e.host, str(e.detail["comm_id"]), str(e.detail["bus"]))
        seen.setdefault(key, set()).add(int(str(e.detail["comm_rank"])))
    return [(host, bus, sorted(ranks)) for (host, _, bus), ranks in seen.items() if len(ranks) > 1]


def _ras_client_garbled(nccl: NcclLog) -> int:
    """The number of communicators an ncclras client of NCCL 2.24-2.29.1 reports as missing ranks
    when there are two or more: that client did not skip a communicator's list of missing ranks,
    so what it prints after the first is read from the wrong place (NVIDIA/nccl#1762, fixed in
    2.29.2); 0 otherwise."""
    missing = nccl.of("ras_missing_data")
    affected = any(_version_in(v, (2, 24, 0), (2, 29, 1)) for v in nccl.versions)
    return len(missing) if affected and len(missing) >= 2 else 0


def _version_in(version: str, low: tuple[int, int, int], high: tuple[int, int, int]) -> bool:
    """``version`` ('2.27.3') within ``low``..``high``, both included."""
    parts = version.split(".")[:3]
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        return False
    return low <= (int(parts[0]), int(parts[1]), int(parts[2])) <= high


def _nccl_218_before_fix(nccl: NcclLog) -> bool:
    """The log runs NCCL 2.18.1-2.18.5: before 2.18.6 and 2.19.3, which carry the fix for
    NVIDIA/nccl#957 (commit 4365458, 'Fix cudaMemcpyAsync bug')."""
    return any(_version_in(v, (2, 18, 0), (2, 18, 5)) for v in nccl.versions)


# PyTorch's ProcessGroupNCCL default (kProcessGroupNCCLDefaultTimeout, ProcessGroupNCCL.hpp) is
# 10 minutes; a limit under 5 minutes was set on purpose and is short for any rank that works alone
SHORT_TIMEOUT_S = 300.0


def _rank0_silent(torch: TorchLog) -> bool:
    """Two or more ranks report the watchdog timeout and rank 0 is not among them: rank 0 is
    the one the others waited for (its own watchdog would have fired too had it been waiting).
    A reporter that is rank 0 of its own process group ("[rank15]: ... [Rank 0]") was waiting
    too, so the premise fails; and every rank from 1 to the highest reporting one (in its
    group, where the lines say) must report:
    a paste of a few ranks' lines with gaps between them (1, 5, 7) shows too little to say that
    rank 0's is missing."""
    ranks = {t.rank for t in torch.timeouts}
    return (
        len(ranks) >= 2
        and None not in ranks
        and 0 not in ranks
        and _contiguous_from_1(
            {t.rank if t.group_rank is None else t.group_rank for t in torch.timeouts}
        )
        and 0 not in torch.last_completed
        and all(t.group_rank != 0 for t in torch.timeouts)
        and 0 not in torch.group_ranks.values()
    )


def _contiguous_from_1(ranks: set[int | None]) -> bool:
    """The ranks are 1, 2, ... up to the highest of them, none missing."""
    known = {r for r in ranks if r is not None}
    return bool(known) and known == set(range(1, max(known) + 1))


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
    "horovod_missing_ranks",
    "horovod_stall",
    "gloo_store_timeout",
    "native_crash",
    "nccl_native_frame",
    "fastsocket_steering_fallback",
    "net_connected",
    "socket_timeout",
    "jax_barrier_timeout",
    "ras_missing_data",
    "symmetric_space_exhausted",
    "comm_not_ready",
    "ds_ssh_check_failed",
    "ssh_connect_failed",
    "desync_stuck_in",
    "fr_culprit",
    "torch_heartbeat_timeout",
    "torch_watchdog_stuck",
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
    "sharp_init_failed",
    "collnet_fallback",
    "comm_destroyed_twice",
    "nccl_list_prefix_misplaced",
    "topo_search_crash",
    "nvls_setup",
    "dev_shm_small",
    "net_plugin_internal",
    "launch_invalid_argument",
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
    "nvshmem_qp_failed",
    "nvshmem_not_mlx5",
    "rdzv_store_failed",
    "ofi_av_open_failed",
    "ofi_cq_open_failed",
    "ofi_init_failed",
    "ofi_plugin",
    "cxi_no_vni",
    "ofi_protocol_error",
    "hip_ipc_failed",
)


def _invalid_argument_in(where: str, e: Event) -> bool:
    """A CUDA 'invalid argument' in one of NCCL's transports (a cuda_error event's ``where``)."""
    return e.detail["where"] == where and "invalid argument" in str(e.detail["text"])


EVENT_EVIDENCE: dict[str, tuple[tuple[str, ...], Any]] = {
    "ib_retry": (("ib_completion",), lambda e: e.detail["status"] == 12),
    "ib_local_protection": (("ib_completion",), lambda e: e.detail["status"] == 4),
    "ib_wr_flush": (("ib_completion",), lambda e: e.detail["status"] == 5),
    "qp_error": (("qp_error",), None),
    "ib_catastrophic": (("ib_async_event",), lambda e: "catastrophic" in str(e.detail["event"]).lower()),
    "msccl_xml_invalid": (("msccl_xml",), None),
    "efa_pd_failed": (("efa_admin_failed",), lambda e: e.detail["command"] == "ALLOC_PD"),
    "argcheck_no_ranks": (("argcheck_invalid",), lambda e: e.detail["top"] == -1),
    "argcheck_root": (("argcheck_invalid",), lambda e: e.detail["top"] != -1),
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
    "rdma_device_no_pci": (("rdma_device_no_pci",), None),
    "bootstrap_rank_twice": (("bootstrap_rank_twice",), None),
    "bootstrap_nranks_mismatch": (("bootstrap_nranks_mismatch",), None),
    "p2p_unavailable": (("p2p_unavailable",), None),
    "invalid_rank": (("invalid_rank",), None),
    "nvml_unanswered": (("nvml_unanswered",), None),
    "verbs_device_unreadable": (("verbs_device_unreadable",), None),
    # CUDA's 'invalid argument' registering the SHM segment, or mapping a local peer's buffer
    "shm_register_invalid": (("cuda_error",), functools.partial(_invalid_argument_in, "shm")),
    "p2p_import_invalid": (("cuda_error",), functools.partial(_invalid_argument_in, "p2p")),
    "unique_id_wait_failed": (("unique_id_wait_failed",), None),
    "ucx_devx_failed": (("ucx_error",), lambda e: "devx_obj_create" in str(e.detail["error"])),
    "aborted_peer_before_timeout": (("comm_abort",), None),
    "max_shared_mem": (("max_shared_mem",), None),
    "ofi_error": (("ofi_error",), None),
    "ofi_unreachable": (("ofi_error",), lambda e: e.detail["rc"] == 113 or e.detail["name"] == "UNDELIVERABLE"),
    "ofi_failed": (("ofi_error", "ofi_provider_error"),
                   lambda e: e.kind == "ofi_provider_error" or not (e.detail["rc"] == 113 or e.detail["name"] == "UNDELIVERABLE")),
    # CUDA's "unknown error" from NCCL's own allocation (include/alloc.h: cuMem)
    "cumem_alloc_unknown": (("cuda_error",), lambda e: e.detail["code"] == 999 and "alloc.h" in e.line),
    # EFA's "Invalid receiver queue pair number": the peer's endpoint no longer exists
    "ofi_peer_gone": (("ofi_error",), lambda e: "invalid receiver queue pair" in str(e.detail["name"]).lower()),
    "watchdog_capture": (("watchdog_exception",), lambda e: "capturing" in str(e.detail["error"]).lower()),
    "ib_port_error": (("ib_async_event",), lambda e: str(e.detail["event"]).lower().startswith("port")),
    "ib_gid_change": (("ib_async_event",), lambda e: "gid" in str(e.detail["event"]).lower()),
    "ib_client_reregister": (("ib_async_event",), lambda e: "reregist" in str(e.detail["event"]).lower()),
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
    "cuda_too_many_peers": (("cuda_error",), lambda e: e.detail["text"] == "peer mapping resources exhausted"),
    # the ranks a desync report names as behind: out of step, or never in a collective at all
    "desync_behind": (("desync_behind", "desync_never_joined"), None),
    # ranks torchrun's failure summary lists as ended by SIGABRT (exit code -6)
    "torchrun_sigabrt": (("torchrun_child_exit",), lambda e: e.detail["code"] == -6),
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


def _net_plugin_split(nccl: NcclLog) -> int:
    """Hosts that run NCCL's own network transport while another host of the same log loads a
    network plugin (HPC-X's SHARP plugin, aws-ofi-nccl): the two sides cannot talk."""
    loaded = {e.host for e in nccl.of("net_plugin") if e.host}
    internal = {e.host for e in nccl.of("net_plugin_internal") if e.host} - loaded
    return len(internal) if loaded else 0


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


def _gpus_newer_than_nccl(nccl: NcclLog) -> list[str]:
    gpus = [str(e.detail["name"]) for e in nccl.of("tests_gpu")]
    return too_old(gpus, list(nccl.versions)) if gpus else []


def _aborted_other_rank(nccl: NcclLog, torch: TorchLog) -> bool:
    """A communicator aborted on a rank none of the watchdog's timeouts came from: that rank left
    (or failed) while the others waited."""
    waiting = {t.rank for t in torch.timeouts} | {t.group_rank for t in torch.timeouts}
    return bool(torch.timeouts) and any(
        e.detail["comm_rank"] not in waiting for e in nccl.of("comm_abort")
    )


def _count(name: str, nccl: NcclLog) -> int:
    """How many events EVENT_EVIDENCE[name] names: a fact and its evidence share one test."""
    return len(_matching(name, nccl))


def _evidence(name: str, nccl: NcclLog, torch: TorchLog) -> list[str]:
    if name in EVENT_EVIDENCE:
        return described(_matching(name, nccl))
    if name in nccl.evidence:
        return [nccl.evidence[name]]
    if name.startswith("env:"):
        return [nccl.evidence.get(name, "")] if name in nccl.evidence else []
    if name == "errors":
        return list(dict.fromkeys(nccl.errors))[:5]
    if name == "gpu_newer_than_nccl":
        return _gpus_newer_than_nccl(nccl)
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
    if name == "ranks_on_one_gpu":
        return [f"ranks {', '.join(map(str, ranks))} of one communicator on the GPU at bus {bus} of {host}"
                for host, bus, ranks in _ranks_on_one_gpu(nccl)][:5]  # fmt: skip
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
    context = {r.id for r in rules() if r.context}
    # fallbacks last, the most severe of them first: an unexplained failure before "no failure"
    order = sorted(rules(), key=lambda r: (r.fallback, r.fallback and SEVERITY_ORDER[r.severity]))
    for rule in order:
        # (for an informational fallback, the catch-all for warnings counts only where it quotes
        # a warning nothing else explains)
        if rule.fallback:
            shown = _without_repeated_warnings(found) if rule.severity == "info" else found
            if any(f.severity != "info" and f.rule not in context for f in shown):
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
    after = {rule.id for rule in rules() if rule.consequence}
    # at one severity: what went wrong, then what followed from it, then the set-up around it
    return sorted(
        _without_repeated_warnings(found),
        key=lambda f: (SEVERITY_ORDER[f.severity], f.rule in after, f.rule in context),
    )


# what an NCCL warning's quoted error means, after the warning (see ``_annotated``)
_NOTE = "  [= "


def _annotated(warning: str) -> str:
    """An NCCL warning, followed by what the error it quotes means: a CUDA error's name and
    reason (`Cuda failure '...'`), or a system call's errno and usual reason (strerror's text:
    `Call to ibv_create_qp failed with error Cannot allocate memory`)."""
    cu = CUDA_RE.search(warning) if "Cuda failure" in warning or "CUDA failure" in warning else None
    if cu is not None and (meaning := cuda_meaning(cu.group("text").strip())) is not None:
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
