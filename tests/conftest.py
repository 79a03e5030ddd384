"""Shared test set-up: the benchmarks' reference loaders and the README example runner
(tools/) are importable from tests."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tools"))
FIXTURES = Path(__file__).resolve().parent / "fixtures"
