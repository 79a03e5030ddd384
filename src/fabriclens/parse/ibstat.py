"""`ibstatus`, `ibstat` and `ibv_devinfo` text -> RDMA port records (what sysfs holds, as these
tools print it). Never raises; ports without a state are skipped."""

from __future__ import annotations

import re

from fabriclens.parse.netdev import RdmaPort


def _port(device: str, port: int, f: dict[str, str]) -> RdmaPort | None:
    state = f.get("state")
    if not state:
        return None
    rate = f.get("rate")
    if rate and re.fullmatch(r"[\d.]+", rate):  # ibstat prints the rate as a bare number of Gb/s
        rate = f"{rate} Gb/sec"
    return RdmaPort(device, port, state.upper() if "ACTIVE" in state.upper() else state,
                    f.get("phys_state"), rate, f.get("link_layer"),
                    active_mtu=_mtu(f.get("active_mtu")), max_mtu=_mtu(f.get("max_mtu")))  # fmt: skip


def _mtu(text: str | None) -> int | None:
    m = re.match(r"\s*(\d+)", text or "")
    return int(m.group(1)) if m else None


_KEYS = {"state": "state", "phys state": "phys_state", "physical state": "phys_state", "rate": "rate",
         "link_layer": "link_layer", "link layer": "link_layer", "active_mtu": "active_mtu",
         "max_mtu": "max_mtu", "phys_state": "phys_state"}  # fmt: skip


def parse_ib_ports(text: str) -> list[RdmaPort]:
    """Ports from any of the three tools' output (several devices and ports per text)."""
    out: list[RdmaPort] = []
    device, port, fields = "", 0, {}  # type: ignore[var-annotated]

    def flush() -> None:
        if device and port:
            p = _port(device, port, fields)
            if p:
                out.append(p)

    for line in text.splitlines():
        s = line.strip()
        if m := re.match(r"Infiniband device '([^']+)' port (\d+)", s):  # ibstatus
            flush()
            device, port, fields = m.group(1), int(m.group(2)), {}
        elif (m := re.match(r"CA '([^']+)'", s)) or (
            m := re.match(r"hca_id:\s*(\S+)", s)
        ):  # ibstat
            flush()
            device, port, fields = m.group(1), 0, {}
        elif m := re.match(r"(?:Port (\d+):|port:\s*(\d+))$", s):
            flush()
            port, fields = int(m.group(1) or m.group(2)), {}
        elif ":" in s and port:
            key, value = (x.strip() for x in s.split(":", 1))
            if key.lower() in _KEYS:
                fields[_KEYS[key.lower()]] = value
    flush()
    return out
