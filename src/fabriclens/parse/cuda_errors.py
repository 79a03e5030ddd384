"""CUDA's error texts, as ``cudaGetErrorString`` / ``cuGetErrorString`` print them, with their
codes and enum names: what NCCL's `Cuda failure '...'`, nccl-tests' `Test CUDA failure` and
PyTorch's `CUDA error: ...` lines quote.

Source: the CUDA Runtime API's ``cudaError`` enum (``driver_types.h``) and the Driver API's
``CUresult`` (``cuda.h``), whose codes agree for these errors; the driver's text of 717 differs
from the runtime's and both are listed. Kept to the errors a distributed job meets.
"""

from __future__ import annotations

# text (lower case) -> (code, runtime enum name)
CUDA_ERRORS: dict[str, tuple[int, str]] = {
    "invalid argument": (1, "cudaErrorInvalidValue"),
    "out of memory": (2, "cudaErrorMemoryAllocation"),
    "initialization error": (3, "cudaErrorInitializationError"),
    "driver shutting down": (4, "cudaErrorCudartUnloading"),
    "invalid device pointer": (17, "cudaErrorInvalidDevicePointer"),
    "cuda driver version is insufficient for cuda runtime version": (35, "cudaErrorInsufficientDriver"),
    "api call is not supported in the installed cuda driver": (36, "cudaErrorCallRequiresNewerDriver"),
    "cuda-capable device(s) is/are busy or unavailable": (46, "cudaErrorDevicesUnavailable"),
    "no cuda-capable device is detected": (100, "cudaErrorNoDevice"),
    "invalid device function": (98, "cudaErrorInvalidDeviceFunction"),
    "invalid device ordinal": (101, "cudaErrorInvalidDevice"),
    "no kernel image is available for execution on the device": (209, "cudaErrorNoKernelImageForDevice"),
    "uncorrectable ecc error encountered": (214, "cudaErrorECCUncorrectable"),
    "peer access is not supported between these two devices": (217, "cudaErrorPeerAccessUnsupported"),
    "a ptx jit compilation failed": (218, "cudaErrorInvalidPtx"),
    "uncorrectable nvlink error detected during the execution": (220, "cudaErrorNvlinkUncorrectable"),
    "the provided ptx was compiled with an unsupported toolchain": (222, "cudaErrorUnsupportedPtxVersion"),
    "invalid resource handle": (400, "cudaErrorInvalidResourceHandle"),
    "named symbol not found": (500, "cudaErrorSymbolNotFound"),
    "an illegal memory access was encountered": (700, "cudaErrorIllegalAddress"),
    "too many resources requested for launch": (701, "cudaErrorLaunchOutOfResources"),
    "the launch timed out and was terminated": (702, "cudaErrorLaunchTimeout"),
    "context is destroyed": (709, "cudaErrorContextIsDestroyed"),
    "peer mapping resources exhausted": (711, "cudaErrorTooManyPeers"),
    "device-side assert triggered": (710, "cudaErrorAssert"),
    "hardware stack error": (714, "cudaErrorHardwareStackError"),
    "an illegal instruction was encountered": (715, "cudaErrorIllegalInstruction"),
    "misaligned address": (716, "cudaErrorMisalignedAddress"),
    "operation not supported on global/shared address space": (717, "cudaErrorInvalidAddressSpace"),
    "invalid address space": (717, "cudaErrorInvalidAddressSpace"),
    "invalid program counter": (718, "cudaErrorInvalidPc"),
    "unspecified launch failure": (719, "cudaErrorLaunchFailure"),
    "operation not permitted": (800, "cudaErrorNotPermitted"),
    "operation not supported": (801, "cudaErrorNotSupported"),
    "system not yet initialized": (802, "cudaErrorSystemNotReady"),
    "system has unsupported display driver / cuda driver combination": (803, "cudaErrorSystemDriverMismatch"),
    "unknown error": (999, "cudaErrorUnknown"),
}  # fmt: skip

# The errors a kernel's fault leaves behind: the enum's own words for each, "This leaves the
# process in an inconsistent state and any further CUDA work will return the same error"
STICKY_CODES = frozenset({214, 220, 700, 710, 714, 715, 716, 717, 718, 719})
# the longest first, so that a text is matched by the error it is and not by one it starts with
_BY_LENGTH = sorted(CUDA_ERRORS, key=len, reverse=True)


def cuda_error(text: str) -> tuple[str, int, str] | None:
    """The CUDA error ``text`` starts with (case aside): (its text as listed, code, name). The
    error's text must end there (the end, a quote, a bracket, a stop), not run on into a
    sentence of other words (`misaligned address handling is off`; a capital may follow:
    PyTorch runs `CUDA kernel errors might be ...` on after it)."""
    lower = text.lower()
    for known in _BY_LENGTH:
        if lower.startswith(known):
            after = text[len(known) : len(known) + 2]
            if after[:1].isalnum() or (after[:1] == " " and after[1:].islower()):
                continue
            return (known, *CUDA_ERRORS[known])
    return None
