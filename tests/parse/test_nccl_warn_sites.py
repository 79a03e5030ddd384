"""Every warning NCCL can print (its WARN call sites in four releases) is read as an NCCL
warning, its message kept as NCCL printed it, and answered by a finding."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import nccl_warns
from fabriclens.diagnose.engine import diagnose
from fabriclens.parse.nccl_log import parse_nccl_log
from fabriclens.parse.torch_log import TorchLog

SITES = nccl_warns.sites()


def test_the_table_holds_each_release_s_sites() -> None:
    assert len(SITES) > 700
    assert {s["release"] for s in SITES} >= {"v2.18.3-1", "v2.21.5-1", "v2.11.4-1"}


@pytest.mark.parametrize("site", SITES, ids=lambda s: f"{s['path']}:{s['line']}")
def test_each_nccl_warning_is_read_as_one(site: dict[str, str]) -> None:
    lines = nccl_warns.as_logged(site)
    log = parse_nccl_log(lines)
    assert log.warnings, lines[0]
    first = lines[0].split(" NCCL WARN ", 1)[1].strip().strip("_`")
    assert log.warnings[0] == first[: len(log.warnings[0])] and len(log.warnings[0]) >= min(
        len(first), 200
    )
    assert diagnose(log, TorchLog()), lines[0]  # at least the catch-all quotes it
