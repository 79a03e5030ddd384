"""`nvidia-smi --query-gpu=... --format=csv,noheader,nounits` and `nvidia-smi topo -m` -> records.

Never raises: `[N/A]`, `[Not Supported]` and unknown rows become None / are skipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

QUERY_FIELDS = (
    "index", "name", "memory.total", "memory.used", "utilization.gpu", "power.draw", "power.limit",
    "pcie.link.gen.current", "pcie.link.gen.max", "pcie.link.width.current", "pcie.link.width.max",
)  # fmt: skip
QUERY_COMMAND = [
    "nvidia-smi",
    f"--query-gpu={','.join(QUERY_FIELDS)}",
    "--format=csv,noheader,nounits",
]


@dataclass(frozen=True)
class GpuReading:
    """One GPU as nvidia-smi reports it (MiB, %, W)."""

    index: int
    name: str
    memory_total_mib: float | None
    memory_used_mib: float | None
    utilization_pct: float | None
    power_w: float | None
    power_limit_w: float | None
    pcie_gen: int | None
    pcie_gen_max: int | None
    pcie_width: int | None
    pcie_width_max: int | None


def _num(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _int(text: str) -> int | None:
    value = _num(text)
    return int(value) if value is not None else None


def parse_gpu_query(text: str) -> list[GpuReading]:
    """Rows of the CSV query above (fields in QUERY_FIELDS order)."""
    out = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != len(QUERY_FIELDS) or not cells[0].isdigit():
            continue
        out.append(GpuReading(
            int(cells[0]), cells[1], _num(cells[2]), _num(cells[3]), _num(cells[4]), _num(cells[5]), _num(cells[6]),
            _int(cells[7]), _int(cells[8]), _int(cells[9]), _int(cells[10]),
        ))  # fmt: skip
    return out


@dataclass
class Topology:
    """The GPU-to-GPU part of `nvidia-smi topo -m`: link kind per pair (NV#, PIX, PXB, PHB, NODE, SYS)."""

    gpus: list[str] = field(default_factory=list)
    links: dict[tuple[str, str], str] = field(default_factory=dict)

    @property
    def nvlink_pairs(self) -> int:
        """GPU pairs joined by NVLink."""
        return sum(1 for (a, b), kind in self.links.items() if a < b and kind.startswith("NV"))

    @property
    def pairs(self) -> int:
        """All GPU pairs."""
        return sum(1 for a, b in self.links if a < b)


def parse_topo(text: str) -> Topology:
    """Parse the matrix; rows and columns named GPU<n>."""
    topo = Topology()
    header: list[str] = []
    for line in text.splitlines():
        cells = re.split(r"\s+", line.strip())
        if not cells or not cells[0]:
            continue
        if not header and "GPU0" in cells:
            header = cells
            topo.gpus = [c for c in cells if re.fullmatch(r"GPU\d+", c)]
            continue
        if header and re.fullmatch(r"GPU\d+", cells[0]):
            row = cells[0]
            for col, kind in zip(header, cells[1:], strict=False):
                if re.fullmatch(r"GPU\d+", col) and col != row:
                    topo.links[(row, col)] = kind
    return topo
