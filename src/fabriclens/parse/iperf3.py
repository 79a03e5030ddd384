"""`iperf3 -J` output -> the received goodput, retransmits and streams; never raises."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Iperf3Result:
    """What one iperf3 client run reported."""

    ok: bool
    goodput_bits_per_s: float = 0.0  # receiver side
    sent_bits_per_s: float = 0.0
    retransmits: int | None = None
    streams: int = 0
    error: str = ""


def _obj(parent: dict[str, Any], key: str) -> dict[str, Any]:
    value = parent.get(key)
    return value if isinstance(value, dict) else {}


def parse_iperf3_json(text: str) -> Iperf3Result:
    """Parse `iperf3 -c ... -J`; a run that failed or unreadable text gives ok=False."""
    try:
        doc = json.loads(text)
    except (ValueError, TypeError, RecursionError):
        return Iperf3Result(False, error="not iperf3 JSON")
    if not isinstance(doc, dict):
        return Iperf3Result(False, error="not iperf3 JSON")
    if doc.get("error"):
        return Iperf3Result(False, error=str(doc["error"]))
    end = _obj(doc, "end")
    received, sent = _obj(end, "sum_received"), _obj(end, "sum_sent")
    try:
        rx = float(received.get("bits_per_second", 0.0))
        tx = float(sent.get("bits_per_second", 0.0))
    except (TypeError, ValueError):
        return Iperf3Result(False, error="unexpected numbers in iperf3 JSON")
    retr = sent.get("retransmits")
    streams = (
        len(doc.get("start", {}).get("connected", []) or [])
        if isinstance(doc.get("start"), dict)
        else 0
    )
    return Iperf3Result(rx > 0, rx, tx, int(retr) if isinstance(retr, int) else None, streams)
