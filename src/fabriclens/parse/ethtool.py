"""`ethtool IFACE` text -> negotiated and supported speeds. Never raises."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

MODE_RE = re.compile(r"\b(\d+)base[A-Za-z0-9]*/(?:Full|Half)\b")
SPEED_RE = re.compile(r"^\s*Speed:\s*(\d+)\s*Mb/s", re.M)


@dataclass(frozen=True)
class EthtoolInfo:
    """Speeds in Mbit/s; empty/None when ethtool did not report them."""

    supported_mbps: list[int] = field(default_factory=list)
    speed_mbps: int | None = None
    link_detected: bool | None = None

    @property
    def max_supported_mbps(self) -> int | None:
        """The fastest supported link mode."""
        return max(self.supported_mbps) if self.supported_mbps else None


def parse_ethtool(text: str) -> EthtoolInfo:
    """Parse the `Supported link modes`, `Speed` and `Link detected` lines."""
    supported: list[int] = []
    in_modes = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("Supported link modes:"):
            in_modes = True
            stripped = stripped.split(":", 1)[1]
        elif ":" in stripped:
            in_modes = False
        if in_modes:
            supported += [int(m) for m in MODE_RE.findall(stripped)]
    speed = SPEED_RE.search(text)
    link = re.search(r"Link detected:\s*(yes|no)", text)
    return EthtoolInfo(sorted(set(supported)), int(speed.group(1)) if speed else None,
                       (link.group(1) == "yes") if link else None)  # fmt: skip
