"""NVIDIA Xid codes: meaning, action and severity (diagnose/data/xid.toml), for the host rules
(dmesg in a collect bundle) and the log rules (kernel lines pasted into a log) alike."""

from __future__ import annotations

import functools
import tomllib
from importlib import resources
from typing import Any


@functools.cache
def xid_catalogue() -> dict[int, dict[str, Any]]:
    """Xid code -> meaning, action, severity, source (diagnose/data/xid.toml)."""
    text = resources.files("fabriclens.diagnose").joinpath("data", "xid.toml").read_text("utf-8")
    return {int(x["code"]): x for x in tomllib.loads(text)["xid"]}
