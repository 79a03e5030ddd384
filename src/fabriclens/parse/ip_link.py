"""`ip -s link` text and `ip -j link` JSON -> interface records. Never raises."""

from __future__ import annotations

import json
import re

from fabriclens.parse.netdev import NetInterface

_HEAD = re.compile(r"^\d+:\s+([^:@\s]+)(?:@\S+)?:\s+<([^>]*)>.*?\bmtu (\d+)(?:.*?\bstate (\S+))?")
_VIRTUAL = re.compile(
    r"^(lo|veth|docker|br-|virbr|cni|flannel|cali|tun|tap|wg|tailscale|zt|vxlan|bond|ifb|dummy)"
)
_NAMES = {"bytes": "bytes", "errors": "errors", "dropped": "dropped"}


def _physical(name: str, link: str) -> bool:
    return link == "ether" and not _VIRTUAL.match(name)


def parse_ip_s_link(text: str) -> list[NetInterface]:
    """Interfaces with MTU, state and the RX/TX byte, error and drop counters."""
    out: list[NetInterface] = []
    name, mtu, state, link = "", 0, None, ""
    stats: dict[str, int] = {}
    lines = text.splitlines()

    def flush() -> None:
        if name:
            out.append(
                NetInterface(name, state, None, None, mtu, None, _physical(name, link), dict(stats))
            )

    for i, line in enumerate(lines):
        if m := _HEAD.match(line):
            flush()
            name, mtu, link, stats = m.group(1), int(m.group(3)), "", {}
            state = (m.group(4) or "").lower() or None
            continue
        s = line.strip()
        if s.startswith("link/"):
            link = s.split()[0].split("/", 1)[1]
        elif (s.startswith(("RX:", "TX:"))) and i + 1 < len(lines):
            side = s[:2].lower()
            heads = s[3:].split()
            values = lines[i + 1].split()
            for h, v in zip(heads, values, strict=False):
                if h in _NAMES and v.isdigit():
                    stats[f"{side}_{_NAMES[h]}"] = int(v)
    flush()
    return out


def parse_ip_j_link(text: str) -> list[NetInterface]:
    """`ip -j [-s] link` JSON (stats from `stats64` where `-s` was given)."""
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        return []
    out = []
    for d in doc if isinstance(doc, list) else []:
        if not isinstance(d, dict) or "ifname" not in d:
            continue
        st = d.get("stats64") or d.get("stats") or {}
        stats = {f"{side}_{k}": int(v) for side in ("rx", "tx") for k, v in (st.get(side) or {}).items()
                 if k in _NAMES and isinstance(v, int)}  # fmt: skip
        state = str(d.get("operstate", "")).lower() or None
        out.append(NetInterface(str(d["ifname"]), state, None, None, d.get("mtu") if isinstance(d.get("mtu"), int) else None,
                                None, _physical(str(d["ifname"]), str(d.get("link_type", ""))), stats))  # fmt: skip
    return out
