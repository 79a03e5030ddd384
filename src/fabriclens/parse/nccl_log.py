"""NCCL_DEBUG=INFO/WARN output -> what transport NCCL chose, on which devices, and what went wrong.

Lines look like `host:pid:tid [dev] NCCL INFO <message>` (older NCCL: without `[dev]`), possibly
behind a launcher prefix. Unknown lines are counted, never fatal.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from fabriclens.parse._prefix import strip_launcher

LINE_RE = re.compile(
    r"^(?P<host>[^\s:]+):(?P<pid>\d+):(?P<tid>\d+)\s+(?:\[(?P<dev>\d+)\]\s+)?NCCL\s+(?P<level>INFO|WARN|TRACE|ERROR)\s+(?P<msg>.*)$"
)
IB_USING_RE = re.compile(
    r"NET/IB\s*:\s*Using\s+(?P<devs>(?:\[\d+\]\S+\s*)+)(?:;\s*OOB\s+(?P<oob>\S+))?"
)
IB_DEV_RE = re.compile(r"\[\d+\](\S+)")
SOCKET_USING_RE = re.compile(r"NET/Socket\s*:\s*Using\s+(?P<ifs>(?:\[\d+\]\S+\s*)+)")
ENV_RE = re.compile(r"^(NCCL_\w+) set by environment to (.*)$")
VIA_RE = re.compile(r"\bvia\s+(P2P|SHM|NET/[\w/]+|CollNet\S*)")
COMPLETION_RE = re.compile(r"(?:[Cc]ompletion|work completion).*?(?:status|error)\s*[=:]?\s*(\d+)")

# ibv_wc_status values (libibverbs verbs.h) and what they usually mean on a cluster
WC_STATUS = {
    4: "IBV_WC_LOC_PROT_ERR: local protection error (memory registration)",
    5: "IBV_WC_WR_FLUSH_ERR: work request flushed after an earlier error on the queue pair",
    10: "IBV_WC_REM_ACCESS_ERR: remote access error",
    12: "IBV_WC_RETRY_EXC_ERR: transport retry counter exceeded — the peer stopped answering (link down, peer dead, or heavy loss)",
    13: "IBV_WC_RNR_RETRY_EXC_ERR: receiver-not-ready retries exceeded",
}


@dataclass
class NcclLog:
    """What one or more NCCL logs say."""

    lines: int = 0
    transport: str | None = None  # IB, Socket, or a plugin name
    ib_devices: list[str] = field(default_factory=list)  # e.g. mlx5_0:1/IB, mlx5_1:1/RoCE
    oob: str | None = None
    socket_ifaces: list[str] = field(default_factory=list)
    ib_no_device: bool = False
    libibverbs_failed: bool = False
    env: dict[str, str] = field(default_factory=dict)
    version: str | None = None
    gdr: bool | None = None
    via: Counter[str] = field(default_factory=Counter)
    completion_errors: list[tuple[int, str]] = field(default_factory=list)  # (status, line)
    warnings: list[str] = field(default_factory=list)
    evidence: dict[str, str] = field(default_factory=dict)  # fact -> the line it came from
    unparsed_lines: int = 0


def parse_nccl_log(text: str, log: NcclLog | None = None) -> NcclLog:
    """Parse NCCL debug output (adds to ``log`` when given)."""
    out = log or NcclLog()
    for raw in text.splitlines():
        line = strip_launcher(raw.rstrip())
        m = LINE_RE.match(line.strip())
        if not m:
            if "Failed to open libibverbs" in line:
                out.libibverbs_failed = True
                out.evidence.setdefault("libibverbs_failed", line.strip())
            elif line.strip():
                out.unparsed_lines += 1
            continue
        out.lines += 1
        msg = m.group("msg").strip()
        if m.group("level") in ("WARN", "ERROR"):
            out.warnings.append(msg)
        if msg.startswith("NCCL version"):
            out.version = msg.split()[2] if len(msg.split()) > 2 else None
        elif msg.startswith("Using network"):
            out.transport = msg.split()[-1]
            out.evidence["transport"] = line.strip()
        elif (ib := IB_USING_RE.search(msg)) is not None:
            out.ib_devices = IB_DEV_RE.findall(ib.group("devs"))
            out.oob = ib.group("oob")
            out.evidence["ib_devices"] = line.strip()
        elif "NET/IB" in msg and "No device found" in msg:
            out.ib_no_device = True
            out.evidence["ib_no_device"] = line.strip()
        elif (sock := SOCKET_USING_RE.search(msg)) is not None:
            out.socket_ifaces = IB_DEV_RE.findall(sock.group("ifs"))
            out.evidence.setdefault("socket_ifaces", line.strip())
        elif (env := ENV_RE.match(msg)) is not None:
            out.env[env.group(1)] = env.group(2).strip()
        elif "GPU Direct RDMA Enabled" in msg or "GDRDMA" in msg:
            out.gdr = True
        elif "GPU Direct RDMA Disabled" in msg:
            out.gdr = False if out.gdr is None else out.gdr
        if "Failed to open libibverbs" in msg:
            out.libibverbs_failed = True
            out.evidence.setdefault("libibverbs_failed", line.strip())
        for via in VIA_RE.findall(msg):
            out.via[
                via.split("/")[0] + ("/" + via.split("/")[1] if via.startswith("NET/") else "")
            ] += 1
            if "GDRDMA" in via:
                out.gdr = True
        if (ce := COMPLETION_RE.search(msg)) is not None and (
            "NET/IB" in msg or "ibv" in msg.lower()
        ):
            out.completion_errors.append((int(ce.group(1)), line.strip()))
    return out
