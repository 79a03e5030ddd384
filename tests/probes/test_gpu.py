"""nvidia-smi query and topology output -> GPU findings (formats as nvidia-smi prints them)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import FIXTURES
from fabriclens.diagnose.host import affinity_facts, diagnose_host, gpu_facts, topology_facts
from fabriclens.parse.nvidia_smi import parse_gpu_query, parse_topo
from fabriclens.probes.gpu import open_gpus, sample_gpus
from fabriclens.probes.survey import survey_host
from fake_nvml import FakeNvml

NVLINK_TOPO = """\tGPU0\tGPU1\tCPU Affinity
GPU0\t X \tNV18\t0-55
GPU1\tNV18\t X \t0-55
"""


def test_query_rows_and_na() -> None:
    gpus = parse_gpu_query((FIXTURES / "nvidia-smi-query.csv").read_text())
    assert [g.index for g in gpus] == [0, 1, 2, 3]
    assert gpus[0].power_w == 118.32 and gpus[1].pcie_width == 8 and gpus[3].utilization_pct is None


def test_gpu_findings() -> None:
    gpus = [gpu_facts(g) for g in parse_gpu_query((FIXTURES / "nvidia-smi-query.csv").read_text())]
    found = {(f.rule, f.evidence[0].split(" (")[0]) for f in diagnose_host([], [], gpus, [])}
    assert (
        "gpu-busy-at-low-power",
        "GPU 0",
    ) in found  # 100% at 118 W of 700 W: spinning, not computing
    assert ("gpu-pcie-width-below", "GPU 1") in found  # x8 of x16
    assert ("gpu-pcie-gen-below", "GPU 2") in found  # idle at Gen1: informational
    assert not any(idx == "GPU 3" for _, idx in found)  # N/A everywhere: nothing claimed


def test_topology() -> None:
    pcie = parse_topo((FIXTURES / "nvidia-smi-topo-pcie.txt").read_text())
    assert (
        pcie.gpus == ["GPU0", "GPU1", "GPU2", "GPU3"] and pcie.pairs == 6 and pcie.nvlink_pairs == 0
    )
    assert [f.rule for f in diagnose_host([], [], [], [topology_facts(pcie)])] == [
        "gpus-without-nvlink"
    ]
    nv = parse_topo(NVLINK_TOPO)
    assert nv.nvlink_pairs == 1
    assert diagnose_host([], [], [], [topology_facts(nv)]) == []


@given(st.text(max_size=300))
def test_garbage(text: str) -> None:
    assert parse_gpu_query(text) == [] or all(g.index >= 0 for g in parse_gpu_query(text))
    parse_topo(text)


# `nvidia-smi topo -m` on a two-socket node with NICs, in the newer layout (NIC columns and a
# NIC legend): GPU0/1 share a PCIe switch with NIC0; GPU2 reaches NIC1 through the host bridges of
# its own socket; GPU3 only through the other socket.
TOPO_NICS = """\tGPU0\tGPU1\tGPU2\tGPU3\tNIC0\tNIC1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID
GPU0\t X \tNV18\tNV18\tNV18\tPIX\tSYS\t0-55\t0\t\tN/A
GPU1\tNV18\t X \tNV18\tNV18\tPIX\tSYS\t0-55\t0\t\tN/A
GPU2\tNV18\tNV18\t X \tNV18\tSYS\tNODE\t56-111\t1\t\tN/A
GPU3\tNV18\tNV18\tNV18\t X \tSYS\tSYS\t56-111\t1\t\tN/A
NIC0\tPIX\tPIX\tSYS\tSYS\t X \tSYS
NIC1\tSYS\tSYS\tNODE\tSYS\tSYS\t X

Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PIX  = Connection traversing at most a single PCIe bridge
  NV#  = Connection traversing a bonded set of # NVLinks

NIC Legend:

  NIC0: mlx5_0
  NIC1: mlx5_1
"""


def test_nearest_nic_per_gpu() -> None:
    topo = parse_topo(TOPO_NICS)
    assert topo.gpus == ["GPU0", "GPU1", "GPU2", "GPU3"] and topo.nics == ["NIC0", "NIC1"]
    assert topo.pairs == 6 and topo.nvlink_pairs == 6  # NIC columns are not GPU pairs
    rows = {a["gpu"]: (a["nic"], a["link"]) for a in affinity_facts(topo)}
    assert rows == {"GPU0": ("mlx5_0", "PIX"), "GPU1": ("mlx5_0", "PIX"), "GPU2": ("mlx5_1", "NODE"),
                    "GPU3": ("mlx5_0", "SYS")}  # fmt: skip
    found = {
        (f.rule, f.evidence[0])
        for f in diagnose_host([], [], [], [], affinity=affinity_facts(topo))
    }
    assert found == {("gpu-nic-cross-socket", "GPU3: nearest NIC mlx5_0 via SYS"),
                     ("gpu-nic-other-bridge", "GPU2: nearest NIC mlx5_1 via NODE")}  # fmt: skip
    # the older layout names NICs by device (mlx5_0) and has no legend; a matrix without NICs
    # gives no placement at all
    old = parse_topo("\tGPU0\tmlx5_0\tCPU Affinity\nGPU0\t X \tSYS\t0-31\nmlx5_0\tSYS\t X \n")
    assert old.nearest_nic("GPU0") == ("mlx5_0", "SYS")
    assert affinity_facts(parse_topo(NVLINK_TOPO)) == []


def test_nvml_source_and_the_window() -> None:
    source = open_gpus(FakeNvml())  # type: ignore[arg-type]
    assert source.name == "nvml" and source.read is not None
    now = source.read()
    assert (
        now[0].name == "NVIDIA H100 80GB HBM3"
        and now[0].power_w == 650.0
        and now[0].power_limit_w == 700.0
    )
    assert (
        now[0].memory_total_mib == 80 * 1024
        and now[0].nvlinks_active == 4
        and now[1].nvlinks_active is None
    )
    assert now[1].slowdowns == ["hardware thermal slowdown"] and now[0].slowdowns == []
    series = sample_gpus(source.read, 0.3, interval=0.02)
    assert len(series) >= 5
    facts = [gpu_facts(series[-1][i], [s[i] for s in series]) for i in (0, 1)]
    assert facts[0]["util_swinging"] and not facts[1]["util_swinging"]
    ids = {(f.rule, f.evidence[0].split(" ")[1]) for f in diagnose_host([], [], facts, [])}
    assert ids == {("gpu-utilisation-swinging", "0"), ("gpu-clocks-slowed", "1")}


def test_no_gpu_source_is_not_checked_not_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("shutil.which", lambda name: None)
    source = open_gpus(FakeNvml(fail_init=True))  # type: ignore[arg-type]
    assert source.name == "none" and source.read is None
    assert "Driver Not Loaded" in source.problem and "no nvidia-smi" in source.problem
    assert open_gpus(live=False).read is None


def test_survey_uses_the_gpu_source_and_samples_it(tmp_path: Path) -> None:
    (tmp_path / "sys" / "class" / "net").mkdir(parents=True)
    s = survey_host(tmp_path, sample=0.3, gpus=open_gpus(FakeNvml()))  # type: ignore[arg-type]
    assert s.gpu_source == "nvml" and [g["index"] for g in s.gpus] == [0, 1]
    assert s.gpus[0]["util_samples"] >= 2
    assert not any(f.rule == "not-checked-gpu" for f in s.not_checked)


def test_nvidia_smi_fallback_reads_without_repeating_the_first_query(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """NVML will not start, nvidia-smi answers: its first query opens the source and serves the
    first reading; later readings query again."""
    from fabriclens.probes import gpu
    from fabriclens.probes._run import CommandResult

    csv = (FIXTURES / "nvidia-smi-query.csv").read_text()
    calls: list[tuple[str, ...]] = []

    def fake_run(argv: list[str], timeout_s: float = 10) -> CommandResult:
        calls.append(tuple(argv))
        return CommandResult(tuple(argv), 0, csv, "")

    monkeypatch.setattr(gpu.shutil, "which", lambda name: "/usr/bin/nvidia-smi")
    monkeypatch.setattr(gpu, "run_command", fake_run)
    source = open_gpus(FakeNvml(fail_init=True))  # type: ignore[arg-type]
    assert source.name == "nvidia-smi" and source.read is not None and len(calls) == 1
    assert [g.index for g in source.read()] == [0, 1, 2, 3] and len(calls) == 1
    assert len(source.read()) == 4 and len(calls) == 2
