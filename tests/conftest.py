"""Shared test set-up: the benchmarks' reference loaders and the README example runner
(tools/) are importable from tests. Under CI (CI=true) property tests draw the same examples on
every run, so a result does not depend on the draw; elsewhere each run draws afresh and keeps
looking for counterexamples (each found one becomes an @example)."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

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


T = TypeVar("T")


def _steal_s() -> float:
    """CPU time the hypervisor took from this VM, all CPUs together (/proc/stat 'steal')."""
    with open("/proc/stat", encoding="ascii") as f:
        fields = f.readline().split()
    return int(fields[8]) / os.sysconf("SC_CLK_TCK") if len(fields) > 8 else 0.0


def measured_quietly(
    measure: Callable[[], T], good: Callable[[T], bool], tries: int = 5
) -> tuple[T, float]:
    """Run a timing-sensitive measurement; return its result and the share of CPU time the VM's
    host stole while it ran. A result that is off is measured again, up to ``tries`` times: a
    server on loopback, or the lab's userspace impairment stage, shares two cores with the test
    run, and a moment when it is not scheduled adds to one measurement, not to the next. A tool
    that is wrong is wrong every time and still fails; each try prints what it measured and the
    CPU the host stole meanwhile."""
    for _ in range(tries):
        s0, t0 = _steal_s(), time.monotonic()
        value = measure()
        stolen = (_steal_s() - s0) / max(1e-9, (time.monotonic() - t0) * (os.cpu_count() or 1))
        print(f"measured {value!r:.200} with {100 * stolen:.1f}% of the CPU stolen by the host")
        if good(value):
            break
    return value, stolen


@pytest.fixture
def quietly() -> Callable[..., object]:
    """The :func:`measured_quietly` helper, for tests."""
    return measured_quietly
