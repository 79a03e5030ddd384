"""GPU readings: NVML (the nvidia-ml-py package) first, `nvidia-smi` CSV queries where NVML is
not importable or will not start, and "not checked" with the manual command where neither works.

A source is a callable returning the current readings, so doctor and watch can sample it over a
window. Every NVML call that a GPU does not support yields None for that field, never an error.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from fabriclens.parse.nvidia_smi import (
    QUERY_COMMAND,
    GpuReading,
    Topology,
    parse_gpu_query,
    parse_topo,
)
from fabriclens.probes._run import run_command

Reader = Callable[[], list[GpuReading]]


@dataclass(frozen=True)
class GpuSource:
    """Where GPU readings come from; ``read`` is None when no source works (``problem`` says why)."""

    name: str  # "nvml", "nvidia-smi" or "none"
    read: Reader | None
    problem: str = ""
    manual: tuple[str, ...] = ("nvidia-smi", "nvidia-smi topo -m")


def _call(fn: Callable[..., Any], *args: Any) -> Any:
    """One NVML query; None where the GPU or driver does not support it."""
    try:
        return fn(*args)
    except Exception:
        return None


def _nvml_reader(nvml: ModuleType) -> Reader:
    max_links = int(getattr(nvml, "NVML_NVLINK_MAX_LINKS", 18))
    reasons = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(
        nvml, "nvmlDeviceGetCurrentClocksThrottleReasons", None
    )

    def milli(value: Any) -> float | None:
        return value / 1000 if isinstance(value, int | float) else None

    def read() -> list[GpuReading]:
        out = []
        for i in range(int(nvml.nvmlDeviceGetCount())):
            h = nvml.nvmlDeviceGetHandleByIndex(i)
            name = _call(nvml.nvmlDeviceGetName, h) or "?"
            mem = _call(nvml.nvmlDeviceGetMemoryInfo, h)
            util = _call(nvml.nvmlDeviceGetUtilizationRates, h)
            links = [_call(nvml.nvmlDeviceGetNvLinkState, h, link) for link in range(max_links)]
            out.append(GpuReading(
                i, name.decode() if isinstance(name, bytes) else str(name),
                mem.total / 2**20 if mem else None, mem.used / 2**20 if mem else None,
                float(util.gpu) if util else None,
                milli(_call(nvml.nvmlDeviceGetPowerUsage, h)), milli(_call(nvml.nvmlDeviceGetEnforcedPowerLimit, h)),
                _call(nvml.nvmlDeviceGetCurrPcieLinkGeneration, h), _call(nvml.nvmlDeviceGetMaxPcieLinkGeneration, h),
                _call(nvml.nvmlDeviceGetCurrPcieLinkWidth, h), _call(nvml.nvmlDeviceGetMaxPcieLinkWidth, h),
                _call(reasons, h) if reasons else None,
                sum(1 for state in links if state) if any(s is not None for s in links) else None,
            ))  # fmt: skip
        return out

    return read


def _smi_reader(first: str) -> Reader:
    """Readings from `nvidia-smi`; the first call uses the query ``open_gpus`` already ran."""
    pending = [first]

    def read() -> list[GpuReading]:
        if pending:
            return parse_gpu_query(pending.pop())
        res = run_command(QUERY_COMMAND, timeout_s=10)
        return parse_gpu_query(res.stdout) if res.ok else []

    return read


def open_gpus(nvml: ModuleType | None = None, live: bool = True) -> GpuSource:
    """The best GPU source here: NVML, else nvidia-smi, else none. ``nvml`` replaces the
    pynvml module (tests); ``live`` False (a copied sysfs tree) reads no GPU at all."""
    if not live:
        return GpuSource("none", None, "not read from a copied tree")
    problem = ""
    if nvml is None:
        try:
            import importlib

            nvml = importlib.import_module("pynvml")  # nvidia-ml-py, the [gpu] extra
        except ImportError:
            problem = "nvidia-ml-py is not installed"
    if nvml is not None:
        try:
            nvml.nvmlInit()
            return GpuSource("nvml", _nvml_reader(nvml))
        except Exception as exc:
            problem = f"NVML did not start ({exc})"
    if shutil.which("nvidia-smi") is None:
        return GpuSource(
            "none", None, f"{problem}; no nvidia-smi either" if problem else "no nvidia-smi"
        )
    res = run_command(QUERY_COMMAND, timeout_s=10)
    if not res.ok:
        return GpuSource(
            "none", None, f"{res.command} failed: {res.stderr.strip()[:160]}", (res.command,)
        )
    return GpuSource("nvidia-smi", _smi_reader(res.stdout))


def read_topology(live: bool = True) -> Topology | None:
    """`nvidia-smi topo -m` (GPU-GPU and GPU-NIC links); None where it cannot run."""
    if not live or shutil.which("nvidia-smi") is None:
        return None
    res = run_command(["nvidia-smi", "topo", "-m"], timeout_s=10)
    return parse_topo(res.stdout) if res.ok else None


def sample_gpus(read: Reader, seconds: float, interval: float = 0.2) -> list[list[GpuReading]]:
    """Readings every ``interval`` seconds for ``seconds`` (at least two); a reading that fails
    midway ends the window early rather than raising."""
    series: list[list[GpuReading]] = []
    deadline = time.monotonic() + seconds
    while True:
        try:
            series.append(read())
        except Exception:
            break
        if time.monotonic() >= deadline:
            break
        time.sleep(min(interval, max(0.0, deadline - time.monotonic())))
    return series
