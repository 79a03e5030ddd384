"""Shared test set-up: the benchmarks' reference loaders and the README example runner
(tools/) are importable from tests. Under CI (CI=true) property tests draw the same examples on
every run, so a result does not depend on the draw; elsewhere each run draws afresh and keeps
looking for counterexamples (each found one becomes an @example)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
    settings.load_profile("ci")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tools"))
FIXTURES = Path(__file__).resolve().parent / "fixtures"

# Tests that time something real (servers on loopback, the lab's links, a browser following a
# live feed) or share the host's lab state: `make test` runs them on their own, after the rest
# has run on every CPU (pytest-xdist), so that no other test's load skews what they time.
SERIAL_PATHS = (
    "lab/",
    "probes/test_sysfs_net.py",
    "cli/test_bench_serve.py",
    "cli/test_stream_server.py",
    "cli/test_hostile_servers.py",
    "cli/test_bench_collective.py",
    "cli/test_doctor_from.py",
    "unit/test_http_timing.py",
    "unit/test_bench_tcp.py",
    "unit/test_goodput_verdict.py",
    "unit/test_progress.py",
    "unit/test_redact.py",
    "ui/test_browser.py::test_the_live_page_follows_the_sampler",
    "ui/test_prometheus.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the tests of SERIAL_PATHS (a folder, a module or one test) `serial`."""
    tests = Path(__file__).resolve().parent
    for item in items:
        where = item.path.resolve().relative_to(tests).as_posix()
        if f"{where}::{item.name}".startswith(SERIAL_PATHS):
            item.add_marker(pytest.mark.serial)
