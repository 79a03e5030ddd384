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


STAT_RE = re.compile(r"^\s*([A-Za-z0-9_.\[\]:-]+):\s*(-?\d+)\s*$")
OTHER_PAUSE_RE = re.compile(
    r"^(?:[rt]x_pause_frames|link_xoff_[rt]x|[rt]x_priority_\d_xoff|priority_xoff_[rt]x|[rt]x_pfc_frames)$"
)
PRIO_RE = re.compile(r"^[rt]x_prio(\d)_(pause|discards|marked|buf_discard|cong_discard)$")


def parse_ethtool_stats(text: str) -> dict[str, int]:
    """`ethtool -S IFACE`: counter name -> value (the "NIC statistics:" header and lines that are
    not `name: integer` are skipped)."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        m = STAT_RE.match(line)
        if m:
            out[m.group(1)] = int(m.group(2))
    return out


def congestion_counters(stats: dict[str, int]) -> dict[str, int]:
    """The counters that tell of congestion and loss on a lossless (RoCE) link, summed over
    priorities (mlx5 names: Documentation/networking/device_drivers/ethernet/mellanox/mlx5/counters.rst).
    Keys are absent-safe: a driver without a counter gives 0."""
    pause = stats.get("rx_pause_ctrl_phy", 0) + stats.get("tx_pause_ctrl_phy", 0)
    # bnxt_en and most drivers: rx/tx_pause_frames; ice: link_xon/xoff and priority_N_xoff
    pause += sum(v for k, v in stats.items() if OTHER_PAUSE_RE.match(k))
    discards = stats.get("rx_discards_phy", 0) + stats.get("tx_discards_phy", 0)
    marked = 0
    for name, value in stats.items():
        m = PRIO_RE.match(name)
        if not m:
            continue
        kind = m.group(2)
        if kind == "pause":
            pause += value
        elif kind == "marked":
            marked += value
        else:
            discards += value
    return {
        "pause_frames": pause,
        "pause_storms": stats.get("tx_pause_storm_warning_events", 0)
        + stats.get("tx_pause_storm_error_events", 0),
        "discards": discards,
        "ecn_marked": marked,
        "out_of_buffer": stats.get("rx_out_of_buffer", 0),
    }
