"""A log read in parts (by several processes) says what one pass over it says.

The parts are joined with ``NcclLog.extend`` / ``TorchLog.extend``; a cut may fall anywhere
between lines: between an error and the trace lines that name its stage, before the first
`Using network` line, inside a watchdog's output. Checked on the real corpus
(tests/fixtures/real/logs) cut at random, and through the CLI's reader on a file cut into parts
by forked workers.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import FIXTURES
from fabriclens.cli import _findings
from fabriclens.cli._findings import read_logs
from fabriclens.inputs import line_starts
from fabriclens.parse.nccl_log import NcclLog, parse_nccl_log
from fabriclens.parse.torch_log import TorchLog, parse_torch_log

CORPUS = [
    line
    for f in sorted((FIXTURES / "real" / "logs").glob("*.log"))
    for line in f.read_text(errors="replace").splitlines()
]


def _doc(nccl: NcclLog, torch: TorchLog) -> dict[str, Any]:
    doc = dataclasses.asdict(nccl) | {"torch": dataclasses.asdict(torch)}
    for key in ("first_line", "open_end", "open_raw"):
        doc["torch"].pop(key)  # the lines kept for joining a wrapped watchdog line, not a finding
    doc.pop("orphan_traces")  # bookkeeping for joining, not a finding
    doc.pop("seen_hosts")  # ``hosts`` as a set
    for key in ("p2p_carry", "p2p_lead", "p2p_lead_whole", "p2p_read"):
        doc.pop(key)  # the matrix lines kept for joining, not a finding
    return doc


def _whole(lines: list[str]) -> dict[str, Any]:
    return _doc(parse_nccl_log(lines), parse_torch_log(lines))


def _joined(lines: list[str], cuts: list[int]) -> dict[str, Any]:
    nccl, torch = NcclLog(), TorchLog()
    for a, b in zip([0, *cuts], [*cuts, len(lines)], strict=True):
        nccl.extend(parse_nccl_log(lines[a:b]))
        torch.extend(parse_torch_log(lines[a:b]))
    return _doc(nccl, torch)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, len(CORPUS)), max_size=6).map(sorted))
def test_parts_joined_equal_one_pass(cuts: list[int]) -> None:
    assert _joined(CORPUS, cuts) == _whole(CORPUS)


# (lines whose reading depends on the next one, cut between them, and what one pass reads there):
# an error and the trace line that names its stage; a watchdog line wrapped at the terminal's
# width (tests/fixtures/real/logs/091), read whole with its limit
CUT_PAIRS = [
    (["node1:11:12 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.2<5000> with status=12",
      "node1:11:12 [0] NCCL INFO transport/net_ib.cc:1296 -> 6"],
     lambda doc: doc["events"][0]["detail"]["stage"], "net_ib"),
    (["[rank2]:[E ProcessGroupNCCL.cpp:563] [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=15037, OpT",
      "ype=_ALLGATHER_BASE, NumelIn=131072512, NumelOut=524290048, Timeout(ms)=600000) ran for 600086 milliseconds before timing out."],
     lambda doc: doc["torch"]["timeouts"][0]["timeout_s"], 600.0),
]  # fmt: skip


@pytest.mark.parametrize(
    ("lines", "read", "want"), CUT_PAIRS, ids=["error-then-trace", "wrapped-watchdog"]
)
def test_a_cut_between_two_lines_read_together_keeps_what_one_pass_reads(
    lines: list[str], read: Any, want: object
) -> None:
    joined = _joined(lines, [1])
    assert joined == _whole(lines)
    assert read(joined) == want


def test_the_cli_reader_in_parts_equals_one_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """read_logs over its threshold cuts the file at line starts into one part per CPU (three
    here, whatever this machine has), reads the first itself and the others in forked workers,
    and joins the results in order."""
    log = tmp_path / "big.log"
    log.write_text("\n".join(CORPUS * 20) + "\n")
    assert len(line_starts(log, 3)) == 4
    monkeypatch.setattr(_findings, "_cpus", lambda: 3)
    in_parts = read_logs([log], parallel_min_bytes=1)
    one_pass = read_logs([log], parallel_min_bytes=log.stat().st_size + 1)
    assert _doc(*in_parts) == _doc(*one_pass)
    assert in_parts[0].lines > 0 and in_parts[0].events


def test_a_process_with_other_threads_reads_in_one_pass() -> None:
    """Forking beside other threads (the dashboard runs commands in threads) is not safe."""
    import threading

    gate = threading.Event()
    other = threading.Thread(target=gate.wait, daemon=True)
    other.start()
    try:
        assert _findings._cpus() == 1
    finally:
        gate.set()
        other.join(timeout=5)


class _NoMemory(dict):  # type: ignore[type-arg]
    """A shape memory that remembers nothing: every line is read in full."""

    def __setitem__(self, key: object, value: object) -> None:
        pass


_SYNTHETIC = [
    "gpu-node01:1001:2001 [1] NCCL INFO AllReduce: opCount 1a2b sendbuff 0x7f1230 count 1048576 datatype 7",
    "node1:11:12 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC",
    "node1:11:12 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P3P/IPC",
    "node1:11:12 [0] NCCL INFO Channel 01/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA",
]  # fmt: skip


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 10**6), st.integers(0, 2**32)), min_size=50, max_size=400))  # fmt: skip
def test_lines_read_by_their_shape_read_as_in_full(
    picks: list[tuple[bool, int, int]],
) -> None:
    """A line whose digits alone differ from an earlier plain line's is counted without being
    read, and a line whose prefix alone differs from an earlier one's (a timestamp on every
    line) is not read again: the result is what reading every line in full gives (digits changed
    at random in real and synthetic lines, `P2P` beside `P3P` included, timestamp and rank
    prefixes added at random)."""
    import random

    from fabriclens.parse import nccl_log

    lines = []
    for synthetic, index, seed in picks:
        rng = random.Random(seed)
        base = _SYNTHETIC[index % len(_SYNTHETIC)] if synthetic else CORPUS[index % len(CORPUS)]
        line = "".join(str(rng.randrange(10)) if c.isdigit() and rng.random() < 0.5 else c
                       for c in base)  # fmt: skip
        prefix = rng.choice(["", f"[2024-03-13 00:00:{rng.randrange(60):02d}.{seed % 10**6:06d}] ",
                             f"[rank{rng.randrange(8)}]: "])  # fmt: skip
        lines.append(prefix + line)
    memories = ("_PLAIN_SHAPES", "_RAW_LINES", "_LINES")
    for name in memories:
        getattr(nccl_log, name).clear()
    by_shape = _whole(lines)
    saved = [getattr(nccl_log, name) for name in memories]
    for name in memories:
        setattr(nccl_log, name, _NoMemory())
    try:
        assert _whole(lines) == by_shape
    finally:
        for name, memory in zip(memories, saved, strict=True):
            setattr(nccl_log, name, memory)


@pytest.mark.parametrize("max_records", [5, 10_000])
def test_simple_lines_added_in_the_batch_loop_as_in_full(monkeypatch: pytest.MonkeyPatch, max_records: int) -> None:  # fmt: skip
    """A simple line (``Line.simple``: its layout, a warning or error, events) is added by the
    batch loop without ``_add_read``'s look at every other field: the result is what
    ``_add_read`` gives for each line of the real corpus, also once the kept records are full
    (5 records: only counted) as a large log fills them."""
    from fabriclens.parse import nccl_log

    monkeypatch.setattr(nccl_log, "MAX_RECORDS", max_records)
    read = [nccl_log._read.__wrapped__(line, None) for line in map(nccl_log._stripped, CORPUS) if line]  # fmt: skip
    assert sum(r.simple for r in read) > len(read) // 2  # the corpus has many of each kind
    assert sum(not r.simple for r in read) > 100
    batch, in_full = NcclLog(), NcclLog()
    nccl_log._add_known(batch, read)
    for r in read:
        if r.plain:
            nccl_log._add_known(in_full, [r.line[slice(*r.host_span)]])
        else:
            nccl_log._add_read(in_full, r._replace(simple=False))
    assert batch == in_full and batch.dropped_records == in_full.dropped_records


def test_the_memory_of_raw_lines_resumes_after_a_run_of_stamped_lines() -> None:
    """Lines each with its own time stamp never repeat as they are: the reader stops keeping
    them (only every few batches), and remembers again once lines come back as they were."""
    from fabriclens.parse import nccl_log

    nccl_log._RAW_MISSES.batches = 0
    stamped = [f"[2024-03-13 00:{i // 60 % 60:02d}:{i % 60:02d}.{i:06d}] {CORPUS[i % len(CORPUS)]}" for i in range(40 * 256)]  # fmt: skip
    for at in range(0, len(stamped), 256):
        nccl_log.add_nccl_lines(NcclLog(), stamped[at : at + 256])
    assert nccl_log._RAW_MISSES.batches >= 40 - 1  # no raw line came back
    kept = len(nccl_log._RAW_LINES)
    repeated = CORPUS[:256] * 20
    for at in range(0, len(repeated), 256):
        nccl_log.add_nccl_lines(NcclLog(), repeated[at : at + 256])
    assert nccl_log._RAW_MISSES.batches == 0 and len(nccl_log._RAW_LINES) > kept


def test_past_the_event_cap_a_trace_names_no_kept_event_s_stage(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past MAX_RECORDS events the next one is counted, not kept: the trace lines after it name
    its stage, and must not give it to the last kept event, read in one pass or in parts."""
    from fabriclens.parse import nccl_log

    monkeypatch.setattr(nccl_log, "MAX_RECORDS", 3)
    warn = (
        "node1:11:12 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.{}<5000> with status=12"
    )
    lines = [*(warn.format(i) for i in range(4)), "node1:11:12 [0] NCCL INFO transport/net_ib.cc:1296 -> 6"]  # fmt: skip
    whole = _whole(lines)
    assert len(whole["events"]) == 3 and whole["dropped_records"] >= 1
    assert all("stage" not in e["detail"] for e in whole["events"])
    for cut in range(len(lines) + 1):
        assert _joined(lines, [cut]) == whole, cut
