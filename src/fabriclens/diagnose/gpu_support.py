"""The first NCCL release that runs on a GPU architecture, for the GPUs a log names.

An NCCL older than the GPU it runs on has no kernels (or no limits) for that architecture: its
collectives fail to launch or run wrong, and nothing in NCCL's own lines says why. nccl-tests'
device lines name each rank's GPU (``tests_gpu`` events); the log's ``NCCL version`` line names
the release. Only architectures whose first supporting release a public source states are listed.
"""

from __future__ import annotations

import re

# (fragments of the GPU's name, its architecture, the first NCCL release for it, the source)
FIRST_RELEASE: tuple[tuple[tuple[str, ...], str, tuple[int, int, int], str], ...] = (
    (
        ("RTX 50", "RTX PRO 6000 Blackwell", "RTX PRO 5000 Blackwell", "RTX PRO 4500 Blackwell",
         "RTX PRO 4000 Blackwell"),
        "sm_120",
        (2, 26, 2),
        "NVIDIA/nccl-tests#291 (an RTX 5090 under NCCL 2.25.1; the maintainers: 'NCCL 2.26.2 has "
        "been released -- could you let us know if it works better on 5090s', the reporter: 'yes, "
        "it work fine now')",
    ),
    (
        ("B200", "B100"),  # GB200 too
        "sm_100",
        (2, 25, 1),
        "NCCL 2.25.1-1's release notes: 'Add Blackwell/SM100 support: Add compilation for sm100' "
        "(as ROCm/rccl#1662 quotes them)",
    ),
)  # fmt: skip

_VERSION = re.compile(r"(\d{1,3})\.(\d{1,3})\.(\d{1,4})")


def release(text: str) -> tuple[int, int, int] | None:
    """The (major, minor, patch) of an NCCL version string such as ``2.25.1+cuda12.4``."""
    m = _VERSION.match(text.strip())
    return (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else None


def first_release(gpu: str) -> tuple[str, tuple[int, int, int], str] | None:
    """The architecture, first NCCL release and source for a GPU's name, where listed."""
    for fragments, arch, first, source in FIRST_RELEASE:
        if any(f.lower() in gpu.lower() for f in fragments):
            return arch, first, source
    return None


def too_old(gpus: list[str], versions: list[str]) -> list[str]:
    """One line per GPU model the log names whose architecture is newer than every NCCL release
    the log shows (none when the log shows no release)."""
    found = [r for r in (release(v) for v in versions) if r is not None]
    if not found:
        return []
    newest = max(found)
    lines = []
    for gpu in dict.fromkeys(gpus):
        known = first_release(gpu)
        if known and newest < known[1]:
            arch, first, _ = known
            lines.append(
                f"{gpu} ({arch}) under NCCL {'.'.join(map(str, newest))}: supported from "
                f"{'.'.join(map(str, first))}"
            )
    return lines
