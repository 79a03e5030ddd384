"""Shared test set-up: the benchmarks' reference loaders and the README example runner
(tools/) are importable from tests. Under CI (CI=true) property tests draw the same examples on
every run, so a result does not depend on the draw; elsewhere each run draws afresh and keeps
looking for counterexamples (each found one becomes an @example)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
    settings.load_profile("ci")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tools"))
FIXTURES = Path(__file__).resolve().parent / "fixtures"
