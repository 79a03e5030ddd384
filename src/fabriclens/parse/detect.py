"""Which tool printed a text, judged from its content (never its file name). Pure; never raises.

Each kind names the parser that reads it; "unknown" is text no parser here understands.
"""

from __future__ import annotations

import json
import re

KINDS = {
    "nvidia-smi-topo": "nvidia-smi topo -m",
    "nvidia-smi-q": "nvidia-smi -q",
    "nvidia-smi-query": "nvidia-smi --query-gpu=... --format=csv",
    "ibstatus": "ibstatus",
    "ibstat": "ibstat",
    "ibv_devinfo": "ibv_devinfo",
    "ethtool-S": "ethtool -S IFACE",
    "ethtool": "ethtool IFACE",
    "ethtool-i": "ethtool -i IFACE",
    "lspci": "lspci -vvv",
    "dmesg": "dmesg / journalctl -k",
    "ip-s-link": "ip -s link",
    "ip-j-link": "ip -j link",
    "iperf3-json": "iperf3 -J",
    "iperf3-text": "iperf3",
    "ping": "ping",
    "mtr-json": "mtr --json",
    "nccl-tests": "nccl-tests (all_reduce_perf ...)",
    "nccl-log": "NCCL_DEBUG=INFO log",
    "torch-log": "PyTorch distributed log",
    "sysctl": "sysctl",
    "ip-j-addr": "ip -j addr",
    "ip-j-route": "ip -j route",
    "env": "environment (NCCL_*, UCX_*, FI_*, CUDA_*)",
    "uname": "uname -a / kernel version",
    "empty": "(empty)",
}

_BDF_HEAD = re.compile(r"^(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7] [A-Za-z]", re.M)
_IP_HEAD = re.compile(r"^\d+: [^:\s]+: <[A-Z_,]*> mtu \d+", re.M)
_SYSCTL = re.compile(r"^(?:net|kernel|vm)\.[a-z0-9_.]+ = ", re.M)
_STAT = re.compile(r"^\s*[A-Za-z0-9_.\[\]:-]+:\s*-?\d+\s*$")
_TOPO_ROW = re.compile(r"^GPU0\s+X\b", re.M)
_QUERY_ROW = re.compile(r"^\d+, [^,]+(?:, [^,]*){9,10}$", re.M)


def _json_kind(text: str) -> str | None:
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if isinstance(doc, dict):
        if "end" in doc and ("start" in doc or "intervals" in doc):
            return "iperf3-json"
        if isinstance(doc.get("report"), dict) and "hubs" in doc["report"]:
            return "mtr-json"
    if isinstance(doc, list) and doc and all(isinstance(d, dict) for d in doc):
        if all("ifname" in d for d in doc) and any("addr_info" in d for d in doc):
            return "ip-j-addr"
        if all("ifname" in d for d in doc) and any("mtu" in d for d in doc):
            return "ip-j-link"
        if any("dst" in d for d in doc):
            return "ip-j-route"
    return "unknown"


def detect_kind(text: str) -> str:
    """The kind of tool output ``text`` is (a key of KINDS), or "unknown"."""
    if not text.strip():
        return "empty"
    head = text.lstrip()[:1]
    if head in "{[" and head:
        kind = _json_kind(text)
        if kind:
            return kind
    checks = (
        ("nvidia-smi-q", "==============NVSMI LOG==============" in text),
        ("nvidia-smi-topo", bool(_TOPO_ROW.search(text)) and "GPU0" in text.split("\n", 2)[0] + text),
        ("nvidia-smi-query", bool(_QUERY_ROW.search(text)) and "MiB" not in text),
        ("nccl-tests", "# nThread" in text or ("out-of-place" in text and "busbw" in text)),
        ("ibstatus", "Infiniband device '" in text),
        ("ibstat", bool(re.search(r"^CA '[^']+'", text, re.M)) and "Port 1:" in text),
        ("ibv_devinfo", bool(re.search(r"^hca_id:", text, re.M))),
        ("ethtool-S", text.lstrip().startswith("NIC statistics:")),
        ("ethtool", text.lstrip().startswith("Settings for ")),
        ("ethtool-i", bool(re.search(r"^driver: \S+", text, re.M)) and "bus-info:" in text),
        ("lspci", (bool(_BDF_HEAD.search(text)) and ("Lnk" in text or "Capabilities:" in text or "NUMA node" in text))
                  or bool(re.search(r"^\s*(?:LnkSta|ACSCtl):", text, re.M))),
        ("nccl-log", " NCCL INFO " in text or " NCCL WARN " in text),
        ("torch-log", "ProcessGroupNCCL" in text or "Watchdog caught collective" in text or "torch.distributed" in text),
        ("dmesg", "NVRM:" in text or bool(re.search(r"^\[\s*\d+\.\d+\] ", text, re.M)) or " kernel: " in text),
        ("ip-s-link", bool(_IP_HEAD.search(text))),
        ("iperf3-text", "iperf" in text.lower() and "bits/sec" in text),
        ("ping", "ping statistics ---" in text),
        ("sysctl", bool(_SYSCTL.search(text))),
        ("env", bool(re.search(r"^(?:NCCL|UCX|FI|CUDA)_[A-Z0-9_]+=", text, re.M))),
        ("uname", text.startswith("Linux ") or "Linux version" in text),
    )  # fmt: skip
    stats = [ln for ln in text.splitlines() if ln.strip()]
    if len(stats) >= 3 and all(_STAT.match(ln) for ln in stats):  # a grep of `ethtool -S`
        return "ethtool-S"
    for kind, hit in checks:
        if hit:
            return kind
    return "unknown"
