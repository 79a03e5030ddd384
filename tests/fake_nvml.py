"""A stand-in for the pynvml module: the calls the GPU probe makes, answered for two GPUs."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any


class FakeNvml:
    """The pynvml calls the probe makes, for a node of two GPUs: GPU 0 swings between idle and
    busy (as when it waits on the network), GPU 1 is thermally slowed and has no NVLink."""

    NVML_NVLINK_MAX_LINKS = 4

    class NVMLError(Exception):
        pass

    def __init__(self, fail_init: bool = False) -> None:
        self.fail_init, self.tick = fail_init, 0

    def nvmlInit(self) -> None:
        if self.fail_init:
            raise self.NVMLError("Driver Not Loaded")

    def nvmlDeviceGetCount(self) -> int:
        self.tick += 1
        return 2

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        return i

    def nvmlDeviceGetName(self, h: int) -> bytes:
        return b"NVIDIA H100 80GB HBM3"  # older pynvml returns bytes

    def nvmlDeviceGetMemoryInfo(self, h: int) -> Any:
        return SimpleNamespace(total=80 * 2**30, used=70 * 2**30)

    def nvmlDeviceGetUtilizationRates(self, h: int) -> Any:
        return SimpleNamespace(gpu=(100 if self.tick % 2 else 0) if h == 0 else 97)

    def nvmlDeviceGetPowerUsage(self, h: int) -> int:
        return 650_000 if h == 0 else 500_000  # milliwatts

    def nvmlDeviceGetEnforcedPowerLimit(self, h: int) -> int:
        return 700_000

    def nvmlDeviceGetCurrPcieLinkGeneration(self, h: int) -> int:
        return 5

    def nvmlDeviceGetMaxPcieLinkGeneration(self, h: int) -> int:
        return 5

    def nvmlDeviceGetCurrPcieLinkWidth(self, h: int) -> int:
        return 16

    def nvmlDeviceGetMaxPcieLinkWidth(self, h: int) -> int:
        return 16

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: int) -> int:
        return 0x1 if h == 0 else 0x40 | 0x4  # idle; hardware thermal slowdown + power cap

    def nvmlDeviceGetNvLinkState(self, h: int, link: int) -> int:
        if h == 1:
            raise self.NVMLError("Not Supported")
        return 1
