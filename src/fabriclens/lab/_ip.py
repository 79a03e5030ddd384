"""iproute2 and tc, always as argument lists with timeouts; failures raise LabError."""

from __future__ import annotations

from collections.abc import Sequence

from fabriclens.errors import FabricLensError
from fabriclens.probes._run import CommandResult, run_command

TIMEOUT_S = 15.0


class LabError(FabricLensError):
    """A lab operation failed on this host (exit status 3)."""


def ip(*args: str, netns: str | None = None, check: bool = True) -> CommandResult:
    """`ip [-n NETNS] ARGS...`."""
    argv = ["ip", *(["-n", netns] if netns else []), *args]
    return _run(argv, check)


def tc(*args: str, netns: str, check: bool = True) -> CommandResult:
    """`tc -n NETNS ARGS...`."""
    return _run(["tc", "-n", netns, *args], check)


def _run(argv: Sequence[str], check: bool) -> CommandResult:
    result = run_command(argv, timeout_s=TIMEOUT_S)
    if check and not result.ok:
        detail = (result.stderr or result.stdout).strip().splitlines()
        raise LabError(f"`{result.command}` failed: {detail[-1] if detail else result.returncode}")
    return result


def netns_list() -> list[str]:
    """Names of all network namespaces (`ip netns list`)."""
    result = ip("netns", "list", check=False)
    return [line.split()[0] for line in result.stdout.splitlines() if line.strip()]


def netns_pids(netns: str) -> list[int]:
    """Processes running inside a namespace (`ip netns pids`)."""
    result = ip("netns", "pids", netns, check=False)
    return [int(p) for p in result.stdout.split() if p.isdigit()]
