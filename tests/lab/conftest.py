"""Lab tests need root, iproute2, iperf3 and ping. Outside CI they skip with the reason;
under CI (CI=true) a missing prerequisite is a failure, so a green CI means they really ran."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

from fabriclens.lab import down_all, leftovers


def _missing() -> str:
    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    tools = [t for t in ("ip", "tc", "iperf3", "ping") if shutil.which(t) is None]
    if tools:
        return f"needs {', '.join(tools)} (make test installs them when run as root)"
    if not os.path.exists("/dev/net/tun"):
        return "needs /dev/net/tun"
    return ""


@pytest.fixture(scope="session", autouse=True)
def no_lab_from_an_interrupted_run() -> None:
    """A run killed mid-test (a machine restarted, a timeout) leaves its lab behind; the next run
    removes it with ``lab down --all`` (only labs whose state file this tool wrote) and says so,
    then starts clean or fails naming what is still there. Each test's own clean-up is still
    checked, after the test, by the fixture below."""
    if _missing() or not leftovers():
        return
    removal = down_all()
    print(f"removed labs left by an earlier, interrupted run: {removal.removed}")
    assert leftovers() == [], (
        f"left by an earlier run and not removable by 'lab down --all': {leftovers()} "
        f"({removal.left_alone})"
    )


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
