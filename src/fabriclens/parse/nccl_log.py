"""NCCL_DEBUG=INFO/WARN output -> what transport NCCL chose, on which devices, and what went wrong.

Lines look like `host:pid:tid [dev] NCCL INFO <message>`; real posts also hold the source
location before the level (`transport/net_ib.cc:1296 NCCL WARN`, `ib_plugin.c:1615`), NCCL 2.2's
lines without the `NCCL` word (`host:1:2 [0] INFO`, `include/socket.h:360 WARN`), mangled or
redacted hosts, any of the prefixes in ``_prefix``, and NCCL's own messages nested inside
PyTorch exceptions (`ncclRemoteError ... Last error: NET/IB : Got completion ...`), sometimes
all on one line. Every line is therefore searched for the messages below whether or not it has
the NCCL layout. Unknown lines are counted, never fatal.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from fabriclens.parse._prefix import strip_prefixes

_LOC = r"(?:(?P<loc>[\w./-]{1,255}\.(?:cc|cu|c|cpp|h|hpp):\d+)\s+)?"
LINE_RE = re.compile(
    r"(?:(?P<host>[^\s:]{0,255})\s?:(?P<pid>\w+):(?P<tid>\d+)\s+)?(?:\[(?P<dev>\d+)\]\s+)?"
    + _LOC
    + r"NCCL\s+(?P<level>INFO|WARN|TRACE|ERROR)\b\s?(?P<msg>.*)$"
)
# NCCL 2.2 and older: no `NCCL` word, so the host:pid:tid [dev] layout must be there
OLD_LINE_RE = re.compile(
    r"(?P<host>[^\s:]{0,255})\s?:(?P<pid>\w+):(?P<tid>\d+)\s+\[(?P<dev>\d+)\]\s+"
    + _LOC
    + r"(?P<level>INFO|WARN|TRACE|ERROR)\b\s?(?P<msg>.*)$"
)
VERSION_RE = re.compile(r"NCCL version:?\s*(\d+\.\d+\.\d+[\w.+-]*)")
IB_USING_RE = re.compile(
    r"NET/IB\s*:\s*Using\s+(?P<devs>(?:\[\d+\]\S+\s*)+)(?:\[RO\])?\s*(?:;\s*OOB\s+(?P<oob>\S+))?"
)
IB_DEV_RE = re.compile(r"\[\d+\](\S+)")
USING_IFACES_RE = re.compile(r"(?:Bootstrap|NET/Socket|NET)\s*:\s*Using\s+(?:interface\s+)?(.*)")
IFACE_RE = re.compile(r"(?:\[\d+\])?([A-Za-z][\w.@-]*):(\S+?)<\d+>")
ENV_RE = re.compile(r"^(NCCL_\w+) set (?:by environment )?to (.*?)\.?\s*$")
VIA_RE = re.compile(
    r"\bvia\s+(P2P(?:/IPC|/CUMEM|/direct)?|SHM|NET/[\w/ ]+?(?=/\d|\s|$)|CollNet\S*)"
)
NET_DEV_RE = re.compile(r"\bvia\s+(NET/[\w ]+/\d+)")
SOCKET_DEV_RE = re.compile(r"NET/Socket\s*:\s*GPU Direct RDMA Disabled for HCA (\d+) '([^']+)'")
RANK_PREFIX_RE = re.compile(r"^\W{0,3}\[?rank(\d+)\]?:", re.I)
PEER_RE = re.compile(r"(?:from|to|peer)\s+(?:peer\s+)?(\S+?)<\d+>")

COMPLETION_RE = re.compile(
    r"Got completion (?:from peer (?P<peer>\S+?)(?:<\d+>)?\s+)?with (?:status=|error\s*)(?P<status>\d+)"
)
VENDOR_RE = re.compile(r"vendor err (\d+)")
DIRECTION_RE = re.compile(r"\((Send|Recv)\)")
GIDS_RE = re.compile(r"localGid\s*(?P<local>\S+)\s+remoteGids?\s*(?P<remote>\S+)")
QP_RE = re.compile(
    r"Call to ibv_modify_qp failed with (?:error\s+)?(?:(?P<errno>\d+)\s+)?(?P<text>[A-Za-z][\w ]*?)(?:[,_.]|$)"
)
QP_GID_RE = re.compile(r"local GID index (\d+)")
QP_STATE_RE = re.compile(r"curr state (\w+), next state (\w+)")
ERRNO = {"connection timed out": 110, "no such device": 19, "network is unreachable": 101,
         "no route to host": 113, "connection refused": 111, "invalid argument": 22}  # fmt: skip
CUDA_RE = re.compile(
    r"(?:failed to open CUDA IPC handle\s*:\s*|Cuda failure\s+'?)(?P<code>\d+)'?\s*'?(?P<text>[^']*)"
)
FAMILY_RE = re.compile(r"family (\d+) is neither AF_INET")
TOPO_RE = re.compile(r"Could not find real path of (\S+)")
SHMEM_RE = re.compile(r"ncclMaxSharedMem (\d+) exceeds device/fn maxSharedMem (\d+)")
OFI_RE = re.compile(
    r"NET/OFI .*?completed with error\.?\s*RC:\s*(\d+)\.?\s*Error:\s*(\d+)\s*\((\w+)\)"
)
PROXY_RE = re.compile(
    r"Proxy Call to rank (\d+) failed \((\w+)\)|Failed to execute operation (\w+) from rank (\d+)"
)
GID_SELECTED_RE = re.compile(r"\bGID (\d+) \(([0-9A-Fa-f]+)/")
GID_TABLE_RE = re.compile(r"GID\[\s*(\d+)\]:\s*([0-9A-Fa-f:.]+),\s*RoCE v(\d)")
SPEED_RE = re.compile(r"Could not get speed from /sys/class/net/([\w.@-]+)/speed")
TRACE_RE = re.compile(r"^(?:[\w.-]+/)*([\w.-]+?)\.(?:cc|cu|c|cpp|h):\d+ -> \d+")
STAGES = ("bootstrap", "net_ib", "net_socket", "ib_plugin", "p2p", "shm", "proxy")
TEST_FAIL_RE = re.compile(r"Test NCCL failure \S+ '([^'/]*)")

SOCKET_ERRORS = (  # (event kind, what the line says), first match wins
    ("connect_abort", re.compile(r"Software caused connection abort", re.I)),
    ("connect_refused", re.compile(r"Connection refused", re.I)),
    ("peer_reset", re.compile(r"Connection reset by peer|Broken pipe", re.I)),
    ("peer_closed", re.compile(r"Connection closed by (?:remote peer|localRank)", re.I)),
    ("connect_timeout", re.compile(r"connect\w*\b.*?(?:failed|returned)\s*:?\s*Connection timed out", re.I)),
    ("unreachable", re.compile(r"(?:connect|recv|send)\w*\b.*?(?:Network is unreachable|No route to host)", re.I)),
)  # fmt: skip
# NCCL result codes as PyTorch and nccl-tests spell them
NCCL_ERRORS = (
    ("ncclUnhandledCudaError", re.compile(r"ncclUnhandledCudaError|unhandled cuda error", re.I)),
    ("ncclSystemError", re.compile(r"ncclSystemError|unhandled system error", re.I)),
    ("ncclRemoteError", re.compile(r"ncclRemoteError|remote process exited or there was a network error", re.I)),
    ("ncclInternalError", re.compile(r"ncclInternalError|NCCL error.*internal error|Test NCCL failure .*internal error", re.I)),
    ("ncclInvalidUsage", re.compile(r"ncclInvalidUsage|invalid usage", re.I)),
)  # fmt: skip
CRASH_RE = re.compile(
    r"DistBackendError|terminate called|NCCL error in:|Test NCCL failure|RuntimeError: NCCL|Segmentation fault|"
    r"ncclCommInitRank failed|NCCL Check failed",
    re.I,
)
# WARN lines that say nothing is wrong (NCCL falls back on its own)
BENIGN_WARN_RE = re.compile(r"Failed to open libibverbs|Could not get speed", re.I)
VIRTUAL_IFACE_RE = re.compile(
    r"^(?:veth|docker|br-|virbr|cni|flannel|cali|ip6tnl|tunl|tun|tap|wg|vxlan|gre|CloudflareWARP|utun|enx|lo$)",
    re.I,
)

# ibv_wc_status values (libibverbs verbs.h) and what they usually mean on a cluster
WC_STATUS = {
    4: "IBV_WC_LOC_PROT_ERR: local protection error — on GPUs usually PCIe ACS/IOMMU breaking GPUDirect RDMA",
    5: "IBV_WC_WR_FLUSH_ERR: work request flushed after an earlier error on the queue pair",
    10: "IBV_WC_REM_ACCESS_ERR: remote access error",
    12: "IBV_WC_RETRY_EXC_ERR: transport retry counter exceeded — the NICs cannot reach each other (GID, routing, lossy link) or the peer died",
    13: "IBV_WC_RNR_RETRY_EXC_ERR: receiver-not-ready retries exceeded",
}


MAX_RECORDS = 10_000  # per list of events, warnings, errors: beyond it only counted


@dataclass(frozen=True)
class Event:
    """One thing that went wrong (or matters), with its details and the line it came from."""

    kind: str
    detail: dict[str, str | int | None]
    line: str
    host: str | None = None
    dev: int | None = None


@dataclass
class NcclLog:
    """What one or more NCCL logs say."""

    lines: int = 0
    transport: str | None = None  # IB, Socket, or a plugin name
    ib_devices: list[str] = field(default_factory=list)  # e.g. mlx5_0:1/IB, mlx5_1:1/RoCE
    oob: str | None = None
    socket_ifaces: list[str] = field(default_factory=list)
    ifaces: dict[str, str] = field(default_factory=dict)  # interface -> address (Bootstrap/Socket)
    ib_no_device: bool = False
    libibverbs_failed: bool = False
    env: dict[str, str] = field(default_factory=dict)
    version: str | None = None
    gdr: bool | None = None
    via: Counter[str] = field(default_factory=Counter)
    net_devs: Counter[str] = field(default_factory=Counter)  # e.g. NET/Socket/1 -> channels
    completion_errors: list[tuple[int, str]] = field(default_factory=list)  # (status, line)
    events: list[Event] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # lines that show a failure
    hosts: list[str] = field(default_factory=list)
    gid_table: dict[int, tuple[str, int]] = field(default_factory=dict)  # index -> (GID, RoCE v)
    evidence: dict[str, str] = field(default_factory=dict)  # fact -> the line it came from
    unparsed_lines: int = 0
    dropped_records: int = 0  # events, warnings and errors past MAX_RECORDS (a huge log)

    def keep(self, records: list[Any], item: Any) -> None:
        """Append to one of the lists above, up to MAX_RECORDS: memory stays bounded."""
        if len(records) < MAX_RECORDS:
            records.append(item)
        else:
            self.dropped_records += 1

    def of(self, kind: str) -> list[Event]:
        """The events of one kind, in log order."""
        return [e for e in self.events if e.kind == kind]


def is_link_local(address: str) -> bool:
    """An IPv6 fe80::/10 or IPv4 169.254/16 address (not routed between hosts)."""
    a = address.lower().split("%")[0]
    return a.startswith(("fe8", "fe9", "fea", "feb", "169.254."))


def _int(text: str | None) -> int | None:
    return int(text) if text is not None and text.isdigit() else None


def _detect(
    msg: str, line: str, host: str | None, dev: int | None, out: NcclLog, rank: int | None = None
) -> None:
    """Search one message for the failures NCCL and its callers print. Each pattern runs only
    where a word it cannot match without is in the message (``in`` is ~50x cheaper than a
    regular expression's search, and most lines of a large log hold none of them)."""

    def add(kind: str, **detail: str | int | None) -> None:
        if rank is not None:
            detail["rank"] = rank
        out.keep(out.events, Event(kind, detail, line, host, dev))

    if "completion" in msg and (c := COMPLETION_RE.search(msg)) is not None:
        status = int(c.group("status"))
        vendor = VENDOR_RE.search(msg)
        direction = DIRECTION_RE.search(msg)
        gids = GIDS_RE.search(msg)
        out.keep(out.completion_errors, (status, line))
        add("ib_completion", status=status, vendor_err=_int(vendor.group(1)) if vendor else None,
            peer=c.group("peer"), direction=direction.group(1) if direction else None,
            local_gid=gids.group("local") if gids else None,
            remote_gid=gids.group("remote") if gids else None)  # fmt: skip
    if "ibv_modify_qp" in msg and (q := QP_RE.search(msg)) is not None:
        text = q.group("text").strip()
        gid = QP_GID_RE.search(msg)
        state = QP_STATE_RE.search(msg)
        add("qp_error", errno=_int(q.group("errno")) or ERRNO.get(text.lower()), text=text,
            gid_index=_int(gid.group(1)) if gid else None,
            next_state=state.group(2) if state else None)  # fmt: skip
    if ("CUDA IPC" in msg or "Cuda failure" in msg) and (cu := CUDA_RE.search(msg)) is not None:
        code = int(cu.group("code"))
        text = cu.group("text").strip()
        where = (
            "shm"
            if "shm" in line.lower()
            else ("p2p" if "p2p" in line.lower() or "IPC" in msg else None)
        )
        add("cuda_error", code=code, text=text, where=where,
            p2p_unsupported=int(code in (217, 64) or "peer access is not supported" in text))  # fmt: skip
    if "family" in msg and (f := FAMILY_RE.search(msg)) is not None:
        add("bad_address_family", family=int(f.group(1)))
    if "real path" in msg and (t := TOPO_RE.search(msg)) is not None:
        add("topology_sysfs", path=t.group(1))
    if "maxSharedMem" in msg and (s := SHMEM_RE.search(msg)) is not None:
        add("max_shared_mem", needed=int(s.group(1)), device=int(s.group(2)))
    if "NET/OFI" in msg and (o := OFI_RE.search(msg)) is not None:
        add("ofi_error", rc=int(o.group(1)), error=int(o.group(2)), name=o.group(3))
    if ("Proxy Call" in msg or "Failed to execute" in msg) and (
        p := PROXY_RE.search(msg)
    ) is not None:
        add("proxy_failed", rank=_int(p.group(1) or p.group(4)), op=p.group(2) or p.group(3))
    if "GID " in msg and (g := GID_SELECTED_RE.search(msg)) is not None:
        raw = g.group(2).upper()
        add("gid_selected", index=int(g.group(1)), raw=raw, link_local=int(raw.startswith("80FE")))
    if "GID[" in msg and (gt := GID_TABLE_RE.search(msg)) is not None:
        out.gid_table[int(gt.group(1))] = (gt.group(2), int(gt.group(3)))
    if "Could not get speed" in msg and (sp := SPEED_RE.search(msg)) is not None:
        add("speed_unknown", iface=sp.group(1))
    if "GPU Direct RDMA Disabled" in msg and (sd := SOCKET_DEV_RE.search(msg)) is not None:
        add("socket_dev", index=int(sd.group(1)), iface=sd.group(2))
    if "is not a PCI device (usb)" in msg:
        add("usb_nic")
    lower = msg.lower()
    socket_words = ("connection" in lower or "broken pipe" in lower or "unreachable" in lower
                    or "no route" in lower)  # fmt: skip
    for kind, pattern in SOCKET_ERRORS if socket_words else ():
        if pattern.search(msg):
            peer = PEER_RE.search(msg)
            closed = re.search(r"remote peer\s+(\S+?)(?:<\d+>|$)", msg)
            add(kind, peer=peer.group(1) if peer else (closed.group(1) if closed else None))
            break
    for name, pattern in NCCL_ERRORS if ("error" in lower or "invalid" in lower) else ():
        if pattern.search(msg):
            add("nccl_error", code=name)
    if "Test NCCL failure" in msg and (tf := TEST_FAIL_RE.search(msg)) is not None:
        add("test_failure", text=tf.group(1).strip())


def parse_nccl_log(lines: str | Iterable[str], log: NcclLog | None = None) -> NcclLog:
    """Parse NCCL debug output: its text, or its lines one by one, as a file streams them
    (adds to ``log`` when given)."""
    out = log or NcclLog()
    for raw in lines.splitlines() if isinstance(lines, str) else lines:
        add_nccl_line(out, raw)
    return out


def add_nccl_line(out: NcclLog, raw: str) -> None:
    """Add one line of NCCL debug output to ``out``."""
    line = strip_prefixes(raw.rstrip()).strip().strip("_`")
    rank_prefix = RANK_PREFIX_RE.match(raw)
    rank = int(rank_prefix.group(1)) if rank_prefix else None
    if not line:
        return
    if out.version is None and "version" in line and (v := VERSION_RE.search(line)) is not None:
        out.version = v.group(1)
    # the layouts need `NCCL <level>` or (NCCL 2.2) a bare level word: test for them first
    m = LINE_RE.search(line) if "NCCL" in line else None
    if m is None and ("INFO" in line or "WARN" in line or "TRACE" in line or "ERROR" in line):
        m = OLD_LINE_RE.search(line)
    if not m:
        if "Failed to open libibverbs" in line:
            out.libibverbs_failed = True
            out.evidence.setdefault("libibverbs_failed", line)
        if CRASH_RE.search(line) or (
            "ncclRemoteError" in line or "ncclSystemError" in line or "ncclInternalError" in line
             or "Last error" in line
        ):  # fmt: skip
            out.keep(out.errors, line)
        before = len(out.events)
        _detect(line, line, None, None, out, rank)
        if len(out.events) == before and "NCCL version" not in line:
            out.unparsed_lines += 1
        return
    out.lines += 1
    msg = m.group("msg").strip().strip("_`")
    host = m.group("host") or None
    dev = _int(m.group("dev"))
    if out.events and " -> " in msg and (tr := TRACE_RE.match(msg)) is not None:
        # NCCL unwinds an error through `file.cc:line -> code` lines: the first known
        # stage names where the failure happened (bootstrap, net_ib, net_socket ...)
        last = out.events[-1]
        stage = tr.group(1)
        if (
            last.host == host
            and stage in STAGES
            and (stage == "bootstrap" or "stage" not in last.detail)
        ):
            last.detail["stage"] = stage
    if host and host not in out.hosts:
        out.hosts.append(host)
    if m.group("level") in ("WARN", "ERROR"):
        out.keep(out.warnings, msg)
        if not BENIGN_WARN_RE.search(msg):
            out.keep(out.errors, line)
    if msg.startswith("Using network") or msg.startswith("Using internal Network"):
        out.transport = msg.split()[-1]
        out.evidence["transport"] = line
    elif "NET/IB" in msg and (ib := IB_USING_RE.search(msg)) is not None:
        out.ib_devices = IB_DEV_RE.findall(ib.group("devs"))
        out.oob = ib.group("oob")
        out.evidence["ib_devices"] = line
    elif "NET/IB" in msg and "No device found" in msg:
        out.ib_no_device = True
        out.evidence["ib_no_device"] = line
    elif msg.startswith("NCCL_") and (env := ENV_RE.match(msg)) is not None:
        out.env[env.group(1)] = env.group(2).strip()
        out.evidence.setdefault(f"env:{env.group(1)}", line)
    elif "GPU Direct RDMA Enabled" in msg or "GDRDMA" in msg:
        out.gdr = True
    elif "GPU Direct RDMA Disabled" in msg and "NET/Socket" not in msg:
        out.gdr = False if out.gdr is None else out.gdr
    if "Using" in msg and (using := USING_IFACES_RE.search(msg)) is not None:
        found = IFACE_RE.findall(using.group(1))
        for name, addr in found:
            out.ifaces.setdefault(name, addr)
        if msg.startswith("NET/Socket") and found:
            out.socket_ifaces = [f"{n}:{a}<0>" for n, a in found]
            out.evidence.setdefault("socket_ifaces", line)
        elif found:
            out.evidence.setdefault("bootstrap", line)
    if "Failed to open libibverbs" in msg:
        out.libibverbs_failed = True
        out.evidence.setdefault("libibverbs_failed", line)
    for via in VIA_RE.findall(msg) if "via" in msg else ():
        parts = via.strip().split("/")
        out.via[parts[0] + ("/" + parts[1] if len(parts) > 1 else "")] += 1
        if "GDRDMA" in msg:
            out.gdr = True
    for net in NET_DEV_RE.findall(msg):
        out.net_devs[net] += 1
    _detect(msg, line, host, dev, out, rank)
