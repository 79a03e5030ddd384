"""`nvidia-smi --query-gpu=... --format=csv,noheader,nounits` and `nvidia-smi topo -m` -> records.

Never raises: `[N/A]`, `[Not Supported]` and unknown rows become None / are skipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

QUERY_FIELDS = (
    "index", "name", "memory.total", "memory.used", "utilization.gpu", "power.draw", "power.limit",
    "pcie.link.gen.current", "pcie.link.gen.max", "pcie.link.width.current", "pcie.link.width.max",
    "clocks_throttle_reasons.active",
)  # fmt: skip
# clock slowdowns that cost speed (NVML's clocks event reason bits): hardware slowdown, software
# and hardware thermal slowdown, hardware power brake. Idle (0x1) and the power cap (0x4) are normal.
SLOWDOWN_BITS = {0x8: "hardware slowdown", 0x20: "software thermal slowdown",
                 0x40: "hardware thermal slowdown", 0x80: "hardware power brake"}  # fmt: skip
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
    throttle_reasons: int | None = None  # NVML clocks event reason bits
    nvlinks_active: int | None = None  # NVLink links up (NVML only)

    @property
    def slowdowns(self) -> list[str]:
        """The clock slowdowns in force that cost speed (thermal, power brake, hardware)."""
        bits = self.throttle_reasons or 0
        return [name for bit, name in SLOWDOWN_BITS.items() if bits & bit]


def _num(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _int(text: str) -> int | None:
    value = _num(text)
    return int(value) if value is not None else None


def _hex(text: str) -> int | None:
    try:
        return int(text, 16)
    except ValueError:
        return None


def parse_gpu_query(text: str) -> list[GpuReading]:
    """Rows of the CSV query above (fields in QUERY_FIELDS order; rows without the last field,
    from the shorter query older releases took, are read too)."""
    out = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) not in (len(QUERY_FIELDS), len(QUERY_FIELDS) - 1) or not cells[0].isdigit():
            continue
        out.append(GpuReading(
            int(cells[0]), cells[1], _num(cells[2]), _num(cells[3]), _num(cells[4]), _num(cells[5]), _num(cells[6]),
            _int(cells[7]), _int(cells[8]), _int(cells[9]), _int(cells[10]),
            _hex(cells[11]) if len(cells) > 11 else None,
        ))  # fmt: skip
    return out


@dataclass
class Topology:
    """The GPU-to-GPU part of `nvidia-smi topo -m`: link kind per pair (NV#, PIX, PXB, PHB, NODE, SYS)."""

    gpus: list[str] = field(default_factory=list)
    links: dict[tuple[str, str], str] = field(default_factory=dict)
    nics: list[str] = field(default_factory=list)  # NIC columns (NIC0, or mlx5_0 on older drivers)
    nic_names: dict[str, str] = field(default_factory=dict)  # NIC0 -> mlx5_0, from the NIC legend

    def nearest_nic(self, gpu: str) -> tuple[str, str] | None:
        """The NIC closest to ``gpu`` on the PCIe tree and the link kind to it (None: no NICs)."""
        kinds = [(LINK_RANK.get(self.links.get((gpu, n), ""), 99), self.links.get((gpu, n), ""), n)
                 for n in self.nics]  # fmt: skip
        known = [k for k in kinds if k[0] < 99]
        if not known:
            return None
        _, kind, nic = min(known)
        return self.nic_names.get(nic, nic), kind

    @property
    def nvlink_pairs(self) -> int:
        """GPU pairs joined by NVLink."""
        return sum(1 for (a, b), kind in self.links.items()
                   if a < b and b in self.gpus and kind.startswith("NV"))  # fmt: skip

    @property
    def pairs(self) -> int:
        """All GPU pairs."""
        return sum(1 for a, b in self.links if a < b and b in self.gpus)


# link kinds from nearest to farthest (nvidia-smi topo -m legend)
LINK_RANK = {"PIX": 1, "PXB": 2, "PHB": 3, "NODE": 4, "SYS": 5}
_GPU = re.compile(r"GPU\d+")
_DEVICE = re.compile(
    r"GPU\d+|NIC\d+|[a-z][a-z0-9_]*\d"
)  # NIC0, or mlx5_0 / bnxt_re0 on older drivers


def parse_topo(text: str) -> Topology:
    """Parse the matrix: GPU rows against GPU and NIC columns, and the NIC legend."""
    topo = Topology()
    header: list[str] = []
    for line in text.splitlines():
        cells = re.split(r"\s+", line.strip())
        if not cells or not cells[0]:
            continue
        legend = re.fullmatch(r"(NIC\d+):\s*(\S+)", line.strip())
        if legend:
            topo.nic_names[legend.group(1)] = legend.group(2)
            continue
        if not header and "GPU0" in cells:
            for c in cells:  # device columns come first, then "CPU Affinity", "NUMA Affinity" ...
                if not _DEVICE.fullmatch(c):
                    break
                header.append(c)
            topo.gpus = [c for c in header if _GPU.fullmatch(c)]
            topo.nics = [c for c in header if not _GPU.fullmatch(c)]
            continue
        if header and _GPU.fullmatch(cells[0]):
            row = cells[0]
            for col, kind in zip(header, cells[1:], strict=False):
                if col != row:
                    topo.links[(row, col)] = kind
    return topo


def _gen_width(value: str) -> int | None:
    m = re.match(r"\s*(\d+)", value)
    return int(m.group(1)) if m else None


def parse_smi_q(text: str) -> list[GpuReading]:
    """`nvidia-smi -q`: per GPU its name, memory, utilisation, power and PCIe generation and
    width (current and max). GPUs are numbered in the order printed, as nvidia-smi does."""
    out: list[GpuReading] = []
    cur: dict[str, str] = {}
    section = ""

    def flush() -> None:
        if cur:

            def num(key: str) -> float | None:
                m = re.match(r"\s*([\d.]+)", cur.get(key, ""))
                return float(m.group(1)) if m else None

            out.append(GpuReading(
                len(out), cur.get("Product Name", "?"), num("fb:Total"), num("fb:Used"), num("util:Gpu"),
                num("Power Draw") or num("Average Power Draw"), num("Current Power Limit") or num("Power Limit"),
                _gen_width(cur.get("gen:Current", "")), _gen_width(cur.get("gen:Max", "")),
                _gen_width(cur.get("width:Current", "")), _gen_width(cur.get("width:Max", "")),
            ))  # fmt: skip

    for line in text.splitlines():
        s = line.strip()
        if re.match(r"^GPU [0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d", s):
            flush()
            cur, section = {}, ""
            continue
        if ":" not in s:
            section = {"PCIe Generation": "gen", "Link Width": "width", "FB Memory Usage": "fb",
                       "Utilization": "util"}.get(s, section if s in ("", "Max", "Current") else "")  # fmt: skip
            continue
        key, value = (x.strip() for x in s.split(":", 1))
        if section and key in ("Max", "Current", "Total", "Used", "Gpu"):
            cur.setdefault(f"{section}:{key}", value)
        else:
            cur.setdefault(key, value)
    flush()
    return out
