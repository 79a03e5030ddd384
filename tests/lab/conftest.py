"""Lab tests need root, iproute2, iperf3 and ping. Outside CI they skip with the reason;
under CI (CI=true) a missing prerequisite is a failure, so a green CI means they really ran."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

from fabriclens.lab import leftovers


def _missing() -> str:
    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    tools = [t for t in ("ip", "tc", "iperf3", "ping") if shutil.which(t) is None]
    if tools:
        return f"needs {', '.join(tools)} (make test installs them when run as root)"
    if not os.path.exists("/dev/net/tun"):
        return "needs /dev/net/tun"
    return ""


@pytest.fixture(autouse=True)
def lab_prerequisites_and_cleanliness() -> Iterator[None]:
    """Skip (or fail under CI) without prerequisites; after each test, nothing of ours is left."""
    missing = _missing()
    if missing:
        if os.environ.get("CI") == "true":
            pytest.fail(f"lab prerequisite missing under CI: {missing}")
        pytest.skip(missing)
    assert leftovers() == [], f"leftovers before the test: {leftovers()}"
    yield
    assert leftovers() == [], f"the test left behind: {leftovers()}"
