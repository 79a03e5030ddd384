"""doctor's checks of what NCCL needs from the node: the locked-memory limit, /dev/shm, and
Fabric Manager on NVSwitch systems (the causes the log rules name for ibv_reg_mr ENOMEM,
posix_fallocate ENOSPC and NVLS failures)."""

from __future__ import annotations

import resource
from pathlib import Path

import pytest

from fabriclens.diagnose.host import diagnose_host, limits_facts
from fabriclens.probes import survey
from fabriclens.probes._run import CommandResult


def test_read_limits_reads_this_process() -> None:
    memlock, shm = survey.read_limits()
    soft, _ = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    assert memlock == (None if soft == resource.RLIM_INFINITY else soft)
    assert shm is None or shm > 0


@pytest.mark.parametrize(
    ("memlock", "shm", "ports", "gpus", "fired"),
    [
        (64 << 10, 1 << 34, 2, 8, {"memlock-limited"}),  # 64 kB memlock beside RDMA ports
        (64 << 10, 1 << 34, 0, 8, set()),  # no RDMA port: nothing registers memory with a NIC
        (None, 64 << 20, 2, 8, {"shm-small"}),  # Docker's default 64 MB /dev/shm
        (None, 64 << 20, 2, 1, set()),  # one GPU: no SHM transport between local ranks
        (None, 1 << 30, 2, 8, set()),
    ],
)
def test_limit_rules(memlock: int | None, shm: int, ports: int, gpus: int, fired: set[str]) -> None:
    found = diagnose_host([], [], extra={"limits": [limits_facts(memlock, shm, ports, gpus)]})
    assert {f.rule for f in found} == fired


@pytest.mark.parametrize(
    ("result", "rules", "not_checked"),
    [
        (CommandResult(("systemctl",), 0, "active\n", ""), set(), False),
        (CommandResult(("systemctl",), 3, "failed\n", ""), {"fabric-manager-not-running"}, False),
        (CommandResult(("systemctl",), -1, "", "systemctl: not found"), set(), True),
    ],
)
def test_fabric_manager_is_checked_where_there_are_nvswitches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, result: CommandResult, rules: set[str],
    not_checked: bool,
) -> None:  # fmt: skip
    for name in ("nvidia-nvswitchctl", "nvidia-nvswitch0", "nvidia-nvswitch1"):
        (tmp_path / name).touch()
    calls = []

    def fake(argv: list[str], timeout_s: float = 5) -> CommandResult:
        calls.append(list(argv))
        return result

    monkeypatch.setattr(survey, "run_command", fake)
    out = survey.Survey()
    survey._fabric_manager(tmp_path, out)
    assert calls == [["systemctl", "is-active", "nvidia-fabricmanager"]]
    found = diagnose_host([], [], extra={"nvswitch": out.nvswitch})
    assert {f.rule for f in found} == rules
    if rules:
        assert "2 NVSwitch device(s)" in found[0].evidence[0]
    assert bool(out.not_checked) is not_checked


def test_no_nvswitch_no_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(survey, "run_command", pytest.fail)
    out = survey.Survey()
    survey._fabric_manager(tmp_path, out)
    assert out.nvswitch == [] and out.not_checked == []
