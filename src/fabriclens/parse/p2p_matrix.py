"""CUDA's p2pBandwidthLatencyTest output pasted into a log: is GPU peer-to-peer slower than a copy
through host memory?

The sample (NVIDIA/cuda-samples, Samples/5_Domain_Specific/p2pBandwidthLatencyTest) prints each
measurement as a matrix, a header naming it and one row per GPU::

    Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)
       D\\D     0      1      2
         0 673.20  13.15  13.15
         1  12.99 673.20  22.20
    Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)
       D\\D     0      1      2
         0 673.49   2.60   1.58

With P2P disabled, a copy between two GPUs goes through host memory; enabled, one GPU writes into
the other's memory over NVLink or PCIe, which is never slower on a healthy machine. The slowest
pair with P2P well below the slowest copy through the host is P2P broken on the way: an IOMMU
translating (or faulting) every peer access, PCIe ACS sending it up to the root complex, a BIOS
or a virtual machine that does not pass peer traffic (stas00/ml-engineering#1: AMD's IOMMU, 1.6-2.6 GB/s with
P2P against 13-22 GB/s without; NCCL's troubleshooting guide, "PCI Access Control Services").

Pure: the caller hands over the text of a batch of lines.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

HEADER_RE = re.compile(
    r"(Unidirectional|Bidirectional) P2P=(Enabled|Disabled) Bandwidth[^\n]{0,40}?Matrix \(GB/s\)"
)
ROW_RE = re.compile(r"[ \t]*(\d{1,3})((?:[ \t]+\d{1,6}(?:\.\d{1,4})?){1,64})[ \t]*\r?")
MAX_MATRICES = 16  # per batch: a hostile paste of many headers stays cheap
MAX_ROWS = 64  # GPUs per matrix read
SLOW_SHARE = 0.5  # P2P below half the slowest through-host rate: broken, not a slow link


@dataclass(frozen=True)
class P2pMatrix:
    """One bandwidth matrix: the off-diagonal rates (GB/s) by (from, to)."""

    direction: str  # unidirectional | bidirectional
    p2p: bool  # P2P enabled
    rates: dict[tuple[int, int], float]
    header: str


def _lines_after(text: str, at: int, count: int) -> Iterator[str]:
    """Up to ``count`` lines after the one holding position ``at`` (no copy of the rest)."""
    start = text.find("\n", at)
    while start >= 0 and count > 0:
        end = text.find("\n", start + 1)
        yield text[start + 1 : end if end >= 0 else len(text)]
        start, count = end, count - 1


def _headers(text: str) -> Iterator[re.Match[str]]:
    """The matrix headers, looked for only around each "P2P=" (a batch of long lines that holds
    a few is not scanned whole)."""
    at, seen = text.find("P2P="), 0
    while at >= 0 and seen < 4 * MAX_MATRICES:
        seen += 1
        header = HEADER_RE.search(text, max(0, at - 16), at + 80)
        if header is not None:
            yield header
        at = text.find("P2P=", at + 4)


def read_matrices(text: str) -> list[P2pMatrix]:
    """The bandwidth matrices ``text`` holds, each with the rows that follow its header (the
    column-number line skipped) up to the first line that is not a row."""
    out: list[P2pMatrix] = []
    for header in _headers(text):
        if len(out) >= MAX_MATRICES:
            break
        rates: dict[tuple[int, int], float] = {}
        for n, line in enumerate(_lines_after(text, header.end(), MAX_ROWS + 1)):
            if n == 0 and ("D\\D" in line or "GPU" in line):
                continue  # the column numbers
            row = ROW_RE.fullmatch(line)
            if row is None:
                break
            src = int(row.group(1))
            for dst, value in enumerate(row.group(2).split()):
                if dst != src:
                    rates[(src, dst)] = float(value)
        if rates:
            out.append(
                P2pMatrix(
                    header.group(1).lower(), header.group(2) == "Enabled", rates, header.group(0)
                )
            )
    return out


# A matrix is read whole where its header and rows share a batch of lines; where a batch (or a
# part of a log read by another process) ends inside one, the lines from its header on are
# carried into the next batch's text, or joined to the next part's first lines. Noting a cut
# matrix and then the whole one gives the same minima as the whole one alone, so a matrix read
# twice, or in pieces, changes nothing.
CARRY_LINES = MAX_ROWS + 2  # a header within this many lines of a batch's end is carried


@dataclass(frozen=True)
class SlowestPair:
    """The slowest pair of one direction: with P2P (GB/s, from, to, the matrix's header) and
    through host memory (GB/s); minima over every matrix read, so they merge in any order."""

    p2p: tuple[float, int, int, str] | None = None
    host: float | None = None

    def noted(self, matrix: P2pMatrix) -> SlowestPair:
        if matrix.p2p:
            (src, dst), rate = min(matrix.rates.items(), key=lambda kv: (kv[1], kv[0]))
            mine = (rate, src, dst, matrix.header)
            return SlowestPair(mine if self.p2p is None else min(self.p2p, mine), self.host)
        rate = min(matrix.rates.values())
        return SlowestPair(self.p2p, rate if self.host is None else min(self.host, rate))

    def merged(self, other: SlowestPair) -> SlowestPair:
        p2p = [x for x in (self.p2p, other.p2p) if x is not None]
        host = [x for x in (self.host, other.host) if x is not None]
        return SlowestPair(min(p2p) if p2p else None, min(host) if host else None)

    @property
    def slow(self) -> bool:
        """P2P below SLOW_SHARE of the slowest copy through host memory."""
        return (
            self.p2p is not None and self.host is not None and self.host > 0
            and self.p2p[0] < SLOW_SHARE * self.host
        )  # fmt: skip


def note(slowest: dict[str, SlowestPair], text: str) -> None:
    """Fold the matrices ``text`` holds into ``slowest`` (by direction)."""
    for matrix in read_matrices(text):
        slowest[matrix.direction] = slowest.get(matrix.direction, SlowestPair()).noted(matrix)


def carry(text: str) -> str:
    """The lines of ``text`` from its last matrix header on, when that header is within
    CARRY_LINES of the end (its rows may go on in the next lines), else ""."""
    at = text.rfind("P2P=")
    if at < 0 or text.count("\n", at) > CARRY_LINES:
        return ""
    start = text.rfind("\n", 0, at) + 1
    return text[start:] if HEADER_RE.search(text, start, at + 80) is not None else ""


def lead(text: str) -> tuple[str, bool]:
    """The first lines of ``text`` that may continue a matrix cut before them (a column line,
    then rows), up to CARRY_LINES; and whether they are the whole of ``text``."""
    taken = 0
    for n, line in enumerate(_lines_after("\n" + text, 0, CARRY_LINES)):
        if not (ROW_RE.fullmatch(line) or (n == 0 and ("D\\D" in line or "GPU" in line))):
            break
        taken += len(line) + 1
    return text[:taken].rstrip("\n"), taken >= len(text)
