"""`ping` summaries (iputils): probes sent and received, round-trip min/avg/max/mdev."""

from __future__ import annotations

import re
from dataclasses import dataclass

_COUNT = re.compile(r"(\d+) packets transmitted, (\d+) (?:packets )?received")
_RTT = re.compile(r"= ([\d.]+)/([\d.]+)/([\d.]+)/([\d.]+) ms")
_TIME = re.compile(r"time=([\d.]+) ms")


@dataclass(frozen=True, slots=True)
class PingSummary:
    sent: int
    received: int
    min_ms: float | None
    avg_ms: float | None
    max_ms: float | None
    mdev_ms: float | None
    times_ms: tuple[float, ...]  # per probe, where ping printed them

    @property
    def loss(self) -> float:
        return 1 - self.received / self.sent if self.sent else 1.0


def parse_ping(text: str) -> PingSummary | None:
    """The summary of one ping run; None when the output has none (ping could not run)."""
    count = _COUNT.search(text)
    if not count:
        return None
    rtt = _RTT.search(text)
    mn, avg, mx, mdev = (float(x) for x in rtt.groups()) if rtt else (None, None, None, None)
    times = tuple(float(t) for t in _TIME.findall(text))
    return PingSummary(int(count.group(1)), int(count.group(2)), mn, avg, mx, mdev, times)
