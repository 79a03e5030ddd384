"""`mtr --json` -> the hops of a path. Never raises: anything else gives None."""

from __future__ import annotations

import json
from typing import Any


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def parse_mtr_json(text: str) -> list[dict[str, Any]] | None:
    """Each hop's host ("???" where no reply came), loss %, and average / best / worst RTT (ms)."""
    try:
        hubs = json.loads(text)["report"]["hubs"]
    except (ValueError, KeyError, TypeError, RecursionError):
        return None
    if not isinstance(hubs, list):
        return None
    return [{"host": str(h.get("host", "???")), "loss_pct": _num(h.get("Loss%")), "avg_ms": _num(h.get("Avg")),
             "best_ms": _num(h.get("Best")), "worst_ms": _num(h.get("Wrst"))}
            for h in hubs if isinstance(h, dict)]  # fmt: skip
