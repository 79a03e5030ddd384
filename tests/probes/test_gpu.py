"""nvidia-smi query and topology output -> GPU findings (formats as nvidia-smi prints them)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from conftest import FIXTURES
from fabriclens.diagnose.host import diagnose_host, gpu_facts, topology_facts
from fabriclens.parse.nvidia_smi import parse_gpu_query, parse_topo

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
