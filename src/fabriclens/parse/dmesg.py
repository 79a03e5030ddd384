"""Kernel log lines (`dmesg`, `journalctl -k`) -> NVIDIA Xid events and NIC link / health events.
Never raises; lines that match nothing are ignored."""

from __future__ import annotations

import re
from dataclasses import dataclass

XID_RE = re.compile(r"NVRM: Xid \((?:PCI:)?([^)]*)\):\s*(\d+)\s*,?\s*(.*)")
_OFF_BUS = re.compile(r"NVRM: (?:The NVIDIA )?GPU (?:at )?(?:PCI:)?([0-9a-fA-F:.]+)\s.*fallen off the bus|"
                      r"NVRM: GPU at (?:PCI:)?([0-9a-fA-F:.]+) has fallen off the bus")  # fmt: skip
_NIC = re.compile(
    r"\b(mlx5_core|mlx4_core|bnxt_en|ice|i40e|ixgbe|irdma|bnxt_re|mlx5_ib)\s+([0-9a-fA-F:.]+)\s*(\S*?):?\s(.*)"
)
_LINK_DOWN = re.compile(
    r"Link (?:is )?down|Link DOWN|link down|port_module_event.*unplugged|Port: \d+ Link DOWN", re.I
)
_HEALTH = re.compile(r"health|Fatal|fw_fatal|internal error|firmware error|cmd_work_handler.*timeout|"
                     r"syndrome|assert_var|crdump|PCI channel state", re.I)  # fmt: skip


@dataclass(frozen=True)
class XidEvent:
    """One `NVRM: Xid (PCI:...): CODE, ...` line."""

    device: str
    code: int
    text: str
    line: str


@dataclass(frozen=True)
class NicEvent:
    """A NIC driver's link-down or health line."""

    driver: str
    device: str
    kind: str  # "link_down" or "health"
    line: str


def parse_dmesg(text: str) -> tuple[list[XidEvent], list[NicEvent]]:
    """Xid events (a "fallen off the bus" line without an Xid counts as Xid 79, as NVIDIA's
    catalogue files it) and NIC link-down / health events, in log order."""
    xids: list[XidEvent] = []
    nics: list[NicEvent] = []
    last_gpu = "?"  # newer drivers name the GPU on one line and say "fallen off the bus" two later
    for raw in text.splitlines():
        line = raw.strip()
        if g := re.search(r"NVRM: The NVIDIA GPU ([0-9a-fA-F:.]+)", line):
            last_gpu = g.group(1)
        if "fallen off the bus" in line and not _OFF_BUS.search(line) and not XID_RE.search(line):
            if not any(x.code == 79 and x.device == last_gpu for x in xids):
                xids.append(XidEvent(last_gpu, 79, "GPU has fallen off the bus", line))
            continue
        if m := XID_RE.search(line):
            xids.append(XidEvent(m.group(1).strip(), int(m.group(2)), m.group(3).strip(), line))
        elif m := _OFF_BUS.search(line):
            dev = m.group(1) or m.group(2) or "?"
            if not any(x.code == 79 and x.device.endswith(dev.split(":", 1)[-1][:5]) for x in xids):
                xids.append(XidEvent(dev, 79, "GPU has fallen off the bus", line))
        elif m := _NIC.search(line):
            rest = m.group(4)
            if _LINK_DOWN.search(rest):
                nics.append(NicEvent(m.group(1), m.group(2), "link_down", line))
            elif _HEALTH.search(rest):
                nics.append(NicEvent(m.group(1), m.group(2), "health", line))
    return xids, nics
