"""`lspci -vvv` text -> PCIe devices: class, NUMA node, link capability vs status, ACS control,
and for bridges the bus range below them. Never raises; unreadable blocks are skipped."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_HEAD = re.compile(
    r"^(?:([0-9a-fA-F]{4}):)?([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])\s+(.+?):\s+(.*)$"
)
_LINK = re.compile(r"Speed\s+([\d.]+)GT/s[^,]*,\s*Width\s+x(\d+)")
_BUS = re.compile(
    r"Bus:\s*primary=([0-9a-fA-F]+),\s*secondary=([0-9a-fA-F]+),\s*subordinate=([0-9a-fA-F]+)"
)
_NIC_CLASSES = ("Ethernet controller", "Infiniband controller", "Network controller")
# ACS controls that, when on in a bridge, send peer-to-peer requests up to the root complex
# (NCCL troubleshooting guide, "PCI Access Control Services (ACS)")
ACS_REDIRECTS = ("SrcValid", "ReqRedir", "CmpltRedir", "UpstreamFwd", "EgressCtrl", "DirectTrans")


@dataclass
class PciDevice:
    """One `lspci -vvv` block (link speeds in GT/s, widths in lanes; None where not shown)."""

    address: str  # domain:bus:dev.fn
    cls: str  # "3D controller", "Ethernet controller", "PCI bridge" ...
    name: str
    numa_node: int | None = None
    cap_speed_gts: float | None = None
    cap_width: int | None = None
    sta_speed_gts: float | None = None
    sta_width: int | None = None
    marked_speed_down: bool = False  # lspci itself printed "(downgraded)" after the speed
    marked_width_down: bool = False
    acs_on: list[str] = field(default_factory=list)  # ACSCtl controls shown with "+"
    acs_shown: bool = False
    bus_range: tuple[int, int] | None = None  # bridges: secondary..subordinate bus numbers
    driver: str = ""

    @property
    def domain(self) -> str:
        return self.address.split(":")[0]

    @property
    def bus(self) -> int:
        return int(self.address.split(":")[1], 16)

    @property
    def kind(self) -> str:
        """gpu, nic, bridge or other."""
        if "NVIDIA" in self.name and ("3D controller" in self.cls or "VGA" in self.cls):
            return "gpu"
        if self.cls.startswith(_NIC_CLASSES):
            return "nic"
        if "bridge" in self.cls.lower() and self.bus_range is not None:
            return "bridge"
        return "unnamed" if self.address == "?" else "other"


def parse_lspci(text: str) -> list[PciDevice]:
    """Every device block in `lspci -vvv` (or `-vv`) output."""
    out: list[PciDevice] = []
    dev: PciDevice | None = None
    for line in text.splitlines():
        head = _HEAD.match(line)
        if head:
            domain = head.group(1) or "0000"
            addr = f"{domain}:{head.group(2)}:{head.group(3)}.{head.group(4)}".lower()
            dev = PciDevice(addr, head.group(5), head.group(6).strip())
            out.append(dev)
            continue
        s = line.strip()
        if dev is None:
            if not s.startswith(("LnkCap:", "LnkSta:", "ACSCtl:")):
                continue
            # a `lspci -vvv | grep ...` paste: the lines of devices not named
            dev = PciDevice("?", "?", "(device line not in the paste)")
            out.append(dev)
        elif dev.address == "?" and (
            (s.startswith("LnkCap:") and dev.cap_width)
            or (s.startswith("ACSCtl:") and dev.acs_shown)
        ):
            dev = PciDevice("?", "?", "(device line not in the paste)")
            out.append(dev)
        if s.startswith("NUMA node:"):
            n = s.split(":", 1)[1].strip()
            dev.numa_node = int(n) if n.lstrip("-").isdigit() else None
        elif s.startswith("LnkCap:") and (m := _LINK.search(s)):
            dev.cap_speed_gts, dev.cap_width = float(m.group(1)), int(m.group(2))
        elif s.startswith("LnkSta:") and (m := _LINK.search(s)):
            dev.sta_speed_gts, dev.sta_width = float(m.group(1)), int(m.group(2))
            dev.marked_speed_down = bool(re.search(r"GT/s[^,]*\(downgraded\)", s))
            dev.marked_width_down = bool(re.search(r"Width x\d+\s*\(downgraded\)", s))
        elif s.startswith("ACSCtl:"):
            dev.acs_shown = True
            dev.acs_on = [c for c in ACS_REDIRECTS if f"{c}+" in s]
        elif m := _BUS.search(s):
            dev.bus_range = (int(m.group(2), 16), int(m.group(3), 16))
        elif s.startswith("Kernel driver in use:"):
            dev.driver = s.split(":", 1)[1].strip()
    return out


def below(bridge: PciDevice, devices: list[PciDevice]) -> list[PciDevice]:
    """The devices on the buses behind ``bridge`` (same PCI domain)."""
    if bridge.bus_range is None:
        return []
    lo, hi = bridge.bus_range
    return [
        d for d in devices if d is not bridge and d.domain == bridge.domain and lo <= d.bus <= hi
    ]
