"""NCCL and PyTorch logs: the sample formats, launcher prefixes, older formats, garbage; rules."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import FIXTURES
from fabriclens.diagnose.engine import diagnose, facts, rules, stragglers
from fabriclens.parse.nccl_log import SCREEN_LOWER, SCREEN_WORDS, NcclLog, parse_nccl_log
from fabriclens.parse.torch_log import TorchLog, parse_torch_log

SAMPLES = FIXTURES / "samples"


def _ids(nccl: NcclLog, torch: TorchLog) -> set[str]:
    return {f.rule for f in diagnose(nccl, torch)}


def test_ib_sample() -> None:
    log = parse_nccl_log((SAMPLES / "nccl-debug-ib.log").read_text())
    assert log.transport == "IB"
    assert log.ib_devices == ["mlx5_1:1/IB", "mlx5_3:1/IB", "mlx5_0:1/IB", "mlx5_2:1/IB"]
    assert log.oob == "enP5p1s0f0:192.168.64.206<0>"
    assert _ids(log, TorchLog()) == {"nccl-ib-in-use"}


def test_socket_fallback_sample() -> None:
    log = parse_nccl_log((SAMPLES / "nccl-debug-socket-fallback.log").read_text())
    assert log.transport == "Socket" and log.ib_no_device
    assert log.socket_ifaces == ["eth0:10.106.68.39<0>"]
    assert log.via["NET/Socket"] == 1
    found = diagnose(log, TorchLog())
    assert found[0].rule == "nccl-socket-no-ib" and found[0].severity == "warning"
    assert any("No device found" in e for e in found[0].evidence)


def test_watchdog_sample() -> None:
    torch = parse_torch_log((SAMPLES / "pytorch-watchdog-timeout.log").read_text())
    (t,) = torch.timeouts
    assert (t.rank, t.op, t.seq, t.numel, t.timeout_s, t.ran_s) == (
        1,
        "ALLREDUCE",
        808,
        9801523,
        600.0,
        600.02,
    )
    assert torch.last_completed == {1: 807} and torch.last_enqueued == {1: 811}
    assert "nccl-timeout" in _ids(NcclLog(), torch)


def test_older_watchdog_format_and_launcher_prefix() -> None:
    text = ("[1,3]<stderr>:[E ProcessGroupNCCL.cpp:475] [Rank 3] Watchdog caught collective operation timeout: "
            "WorkNCCL(OpType=BROADCAST, Timeout(ms)=1800000) ran for 1800453 milliseconds before timing out.")  # fmt: skip
    (t,) = parse_torch_log(text).timeouts
    assert (t.rank, t.op, t.seq, t.timeout_s) == (3, "BROADCAST", None, 1800.0)


def test_straggler_across_ranks() -> None:
    torch = TorchLog()
    for rank, done in ((0, 807), (1, 807), (2, 806), (3, 807)):
        parse_torch_log(f"[rank{rank}]:[E] [PG 0 Rank {rank}] Exception (either an error or timeout) detected by watchdog "
                        f"at work: 808, last enqueued NCCL work: 811, last completed NCCL work: {done}.", torch)  # fmt: skip
    assert stragglers(torch) == [2]
    found = {f.rule: f for f in diagnose(NcclLog(), torch)}
    assert "straggler-rank" in found and "rank 2" in found["straggler-rank"].evidence[0]


def _watchdog(rank: int, group_rank: int, op: str, seq: int) -> str:
    return (f"[rank{rank}]:[E218 04:54:22.864467604 ProcessGroupNCCL.cpp:616] [Rank {group_rank}] Watchdog caught "
            f"collective operation timeout: WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn=32, NumelOut=32, "
            "Timeout(ms)=600000) ran for 600045 milliseconds before timing out.")  # fmt: skip


def _progress(rank: int, guid: int, group_rank: int, done: int) -> str:
    return (f"[rank{rank}]:[E218 04:54:22.864535778 ProcessGroupNCCL.cpp:1795] [PG ID 11 PG GUID {guid} Rank "
            f"{group_rank}] Exception (either an error or timeout) detected by watchdog at work: {done + 1}, "
            f"last enqueued NCCL work: {done + 1}, last completed NCCL work: {done}.")  # fmt: skip


def test_the_rank_inside_a_process_group_is_read_beside_the_global_rank() -> None:
    """PyTorch 2.2+ prints "[rankN]:" (global) before "[Rank n]" / "[PG ... Rank n]" (in the
    group): NVIDIA/nccl#1610's rank 15 is rank 0 of its group, so rank 0 was waiting too."""
    torch = parse_torch_log("\n".join([_watchdog(13, 1, "ALLTOALL_BASE", 216), _progress(13, 119, 1, 215),
                                        _watchdog(15, 1, "ALLREDUCE", 57), _progress(15, 112, 0, 56)]))  # fmt: skip
    assert [t.rank for t in torch.timeouts] == [13, 15]
    assert torch.groups == {13: "119", 15: "112"} and torch.group_ranks == {13: 1, 15: 0}
    assert facts(NcclLog(), torch)["watchdog_rank0_silent"] is False
    # work counts of different groups are not compared: no straggler
    assert stragglers(torch) == []
    # ranks 1-3 of one group, not its rank 0: rank 0 is silent, rank 15 is behind
    same = parse_torch_log("\n".join([_watchdog(13, 1, "ALLREDUCE", 57), _progress(13, 7, 1, 57),
                                       _watchdog(14, 2, "ALLREDUCE", 57), _progress(14, 7, 2, 57),
                                       _watchdog(15, 3, "ALLREDUCE", 57), _progress(15, 7, 3, 56)]))  # fmt: skip
    assert facts(NcclLog(), same)["watchdog_rank0_silent"] is True
    assert stragglers(same) == [15]
    # a paste of group ranks 1 and 3 only (diffusers#12422 showed three of eight): too little
    # to say rank 0's report is the one missing
    gap = parse_torch_log(
        "\n".join([_watchdog(13, 1, "ALLREDUCE", 57), _watchdog(15, 3, "ALLREDUCE", 57)])
    )
    assert facts(NcclLog(), gap)["watchdog_rank0_silent"] is False


def test_past_max_timeouts_the_watchdog_lines_still_give_progress(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A huge log keeps its first MAX_TIMEOUTS timeouts and stops reading the rest (bounded
    memory and time), while every rank's last progress line is still kept."""
    import fabriclens.parse.torch_log as torch_log

    monkeypatch.setattr(torch_log, "MAX_TIMEOUTS", 2)
    lines = [_watchdog(r, r, "ALLREDUCE", 50 + r) for r in range(4)] + [_progress(3, 7, 3, 52)]
    log = parse_torch_log("\n".join(lines))
    assert [t.rank for t in log.timeouts] == [0, 1]
    assert log.last_completed[3] == 52


def test_a_wrapped_watchdog_line_still_names_the_collective() -> None:
    """meta-pytorch/torchtune#1165 as pasted: the line breaks inside "Timeout(ms)"."""
    text = ("[rank3]:[E ProcessGroupNCCL.cpp:563] [Rank 3] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=15037, OpType=_ALLGATHER_BASE, NumelIn=131072512, NumelOut=524290048, Timeo\n"
            "ut(ms)=600000) ran for 600055 milliseconds before timing out.")  # fmt: skip
    (t,) = parse_torch_log(text).timeouts
    assert (t.rank, t.op, t.seq, t.numel) == (3, "_ALLGATHER_BASE", 15037, 131072512)


def test_the_watchdog_stack_alone_is_read_as_a_timeout() -> None:
    """jpata/particleflow#390: only the C++ frames of the watchdog's exception were pasted."""
    frame = ("frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, "
             "std::ratio<1l, 1000l> > >) + 0x1d2 (0x1554e9e0f8f2 in /x/torch/lib/libtorch_cuda.so)")  # fmt: skip
    torch = parse_torch_log(frame)
    assert facts(NcclLog(), torch)["watchdog_stack_only"] == 1
    found = {f.rule: f for f in diagnose(NcclLog(), torch)}
    assert list(found) == ["watchdog-timeout-stack-only"]
    assert "checkTimeout" in found["watchdog-timeout-stack-only"].evidence[0]
    # beside the watchdog's own line the frames add nothing: the timeout is read from the line
    both = parse_torch_log(_watchdog(1, 1, "ALLREDUCE", 5) + "\n" + frame)
    assert facts(NcclLog(), both)["watchdog_stack_only"] == 0


def test_a_harmless_warning_is_not_a_failure() -> None:
    """NVIDIA/nccl-tests#115: NCCL_CUDA_PATH without libcuda.so is a WARN NCCL goes on past."""
    nccl = parse_nccl_log("host:1:1 [0] misc/cudawrap.cc:90 NCCL WARN Failed to find CUDA library in "
                          "/usr/local/cuda-11.7 (NCCL_CUDA_PATH=/usr/local/cuda-11.7)\n"
                          "host:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>")  # fmt: skip
    f = facts(nccl, TorchLog())
    assert nccl.warnings and f["nccl_warnings"] == 0 and f["error_lines"] == 0
    assert "setup-stalled-no-failure" in {x.rule for x in diagnose(nccl, TorchLog())}


def test_completion_errors_env_overrides_and_gdr() -> None:
    text = "\n".join([
        "node1:100:200 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1",
        "node1:100:200 [0] NCCL INFO NCCL_P2P_DISABLE set by environment to 1",
        "node1:100:200 [0] NCCL INFO Using network IB",
        "node1:100:200 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA",
        "node1:100:201 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.2<12345> with status=12 opcode=0 len=0 vendor err 129",
        "0: node1:100:200 [0] NCCL INFO NET/IB : Failed to open libibverbs.so[.1]",
    ])  # fmt: skip
    log = parse_nccl_log(text)
    assert log.env == {"NCCL_IB_DISABLE": "1", "NCCL_P2P_DISABLE": "1"}
    assert log.gdr is True and log.completion_errors[0][0] == 12 and log.libibverbs_failed
    ids = _ids(log, TorchLog())
    assert {"ib-completion-error", "ib-retry-exceeded", "ib-disabled-by-env",
            "p2p-disabled-by-env", "libibverbs-missing"} <= ids  # fmt: skip
    assert "gdr-off" not in ids
    assert "nccl-warnings" not in ids  # its one WARN is the completion error's evidence


@given(st.text(max_size=500))
def test_garbage_never_crashes(text: str) -> None:
    nccl, torch = parse_nccl_log(text), parse_torch_log(text)
    assert facts(nccl, torch)["logs_read"] >= 0
    diagnose(nccl, torch)


def test_every_rule_is_reachable_and_well_formed() -> None:
    ids = [r.id for r in rules()]
    assert len(ids) == len(set(ids))
    assert all(r.symptom and r.cause for r in rules())
    assert all(r.check for r in rules() if r.severity != "info")
    assert _ids(NcclLog(), TorchLog()) == {"nothing-to-read"}


@pytest.mark.parametrize(
    "name", ["nccl-debug-ib.log", "nccl-debug-socket-fallback.log", "pytorch-watchdog-timeout.log"]
)
def test_cli_logs_json(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from fabriclens.cli.app import run

    status = run(["logs", str(SAMPLES / name), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) >= {"nccl", "timeouts", "findings", "facts"}
    assert status == (0 if name == "nccl-debug-ib.log" else 1)


def test_cli_logs_says_when_the_nccl_version_is_not_in_the_log(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from fabriclens.cli.app import run

    run(["logs", str(SAMPLES / "nccl-debug-ib.log")])
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("NCCL version not found in the log · transport IB")
    assert "?" not in first
    log = tmp_path / "with-version.log"
    log.write_text(
        (SAMPLES / "nccl-debug-ib.log").read_text()
        + "lassen206:23224:23224 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
    )
    run(["logs", str(log)])
    assert capsys.readouterr().out.startswith("NCCL 2.21.5+cuda12.4 · transport IB")
    # a log without one NCCL line (Ollama's server log) opens with what was read, not NCCL's
    ollama = tmp_path / "ollama.log"
    ollama.write_text("llm_load_tensors: offloaded 31/33 layers to GPU\n")
    run(["logs", str(ollama)])
    assert capsys.readouterr().out.startswith("read 0 NCCL lines from 0 hosts, 1 other line")


# NCCL unwinding a failure: the WARN names the error, the trace lines after it name the stage
_FAILED = (
    "node1:11:12 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.2<5000> with status=12 opcode=0 len=0 vendor err 129 (Recv)\n"
    "node1:11:12 [0] NCCL INFO transport/net_ib.cc:1296 -> 6\n"
)  # fmt: skip


def test_a_repeated_line_is_read_once_but_counted_each_time() -> None:
    """Each distinct line is parsed once (memoised); every occurrence still counts, and the
    details of one occurrence's event are its own: a trace line after the first copy gives
    its stage to that event only, and a later log reading the same line starts clean."""
    first = parse_nccl_log(_FAILED + _FAILED.splitlines()[0])
    assert first.lines == 3 and len(first.of("ib_completion")) == 2
    assert len(first.completion_errors) == 2 and len(first.errors) == 2
    staged, unstaged = first.of("ib_completion")
    assert staged.detail.get("stage") == "net_ib" and "stage" not in unstaged.detail
    again = parse_nccl_log(_FAILED.splitlines()[0])
    assert "stage" not in again.of("ib_completion")[0].detail
    thrice = parse_nccl_log(_FAILED * 3)
    assert thrice.lines == 6 and [e.detail.get("stage") for e in thrice.events] == ["net_ib"] * 3


def test_the_level_word_is_found_before_the_head() -> None:
    """The layout is matched from the level word backwards (host:pid:tid [dev] source:line),
    in both NCCL's layout and the older one without the `NCCL` word; a line without the layout
    is searched for failures only."""
    log = parse_nccl_log(
        "gpu-a100-7:4182:4290 [3] transport/net_ib.cc:1296 NCCL WARN NET/IB : Got completion from peer 10.1.1.2<5001> with status=12\n"
        "[rank3]: some banner text NCCL INFO Using network IB\n"
        "ip-10-0-0-7:81:95 [1] include/socket.h:360 WARN Net : Connect to 10.0.0.8<49152> failed : Connection refused\n"
        "nothing here but the word INFO\n"
    )  # fmt: skip
    assert log.hosts == ["gpu-a100-7", "ip-10-0-0-7"] and log.lines == 3
    assert log.transport == "IB" and log.unparsed_lines == 1
    assert [e.kind for e in log.events] == ["ib_completion", "connect_refused"]
    assert [e.dev for e in log.events] == [3, 1]


def test_a_log_of_endless_distinct_names_stays_bounded() -> None:
    """Hosts, interfaces, variables and channel paths are kept up to MAX_KEYS distinct names
    each; past that they are counted as dropped, so a hostile log cannot grow memory (or the
    time to look a host up) without end."""
    from fabriclens.parse.nccl_log import MAX_KEYS

    n = MAX_KEYS + 500
    lines = [
        f"h{i}:1:2 [0] NCCL INFO NCCL_X{i} set by environment to {i}\n"
        f"h{i}:1:2 [0] NCCL INFO Bootstrap : Using eth{i}:10.0.{i % 250}.1<0>\n"
        f"h{i}:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via NET/IB/{i}"
        for i in range(n)
    ]  # fmt: skip
    log = parse_nccl_log("\n".join(lines))
    assert log.lines == 3 * n
    assert len(log.hosts) == len(log.env) == len(log.ifaces) == MAX_KEYS
    assert len(log.net_devs) == MAX_KEYS and log.dropped_records >= 4 * 500
    assert log.hosts[:2] == ["h0", "h1"] and log.env["NCCL_X0"] == "0"


def test_records_keep_at_most_max_kept_chars_of_a_line() -> None:
    """A 6,000-character WARN line is still read whole (its failure found), but the records
    keep its first MAX_KEPT_CHARS characters, marked where cut: 10,000 such records stay small
    however long the lines."""
    from fabriclens.parse.nccl_log import MAX_KEPT_CHARS

    line = "n1:1:2 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.2<5000> with status=12 " + "x" * 6000  # fmt: skip
    log = parse_nccl_log(line)
    (event,) = log.of("ib_completion")
    assert event.detail["status"] == 12
    assert len(event.line) == MAX_KEPT_CHARS and event.line.endswith("…")
    assert len(log.warnings[0]) == MAX_KEPT_CHARS and len(log.errors[0]) == MAX_KEPT_CHARS


# gates nested inside another gate (they run only where an outer gate's word is), and "gdr",
# a key of the reader's own fields, not a word of the line: not needed in the screen
_NESTED_GATES = {"nvls", "shm", "p2p", "IPC", "peer access is not supported", "No device found",
                 "NET/Socket", "GPU Direct RDMA Enabled", "GPU Direct RDMA Disabled", "80FE",
                 "gdr", "multicast", "operation not permitted", "userbuffers", "without libuv",
                 "TensileLibrary", "GPU", "ctx", "alloc", "cache", "graph", "library=ROCm", "cuInit", "memory",
                 "onnect", "complete", "closed", "Timeout", "ollama ", "enqueue.cc",
                 "nccl", "fastsocket", "ssh:"}  # fmt: skip


def test_every_gate_of_the_reader_holds_a_screen_word() -> None:
    """A batch with no screen word is only matched against the layout (add_nccl_lines): every
    word ``_read``, ``log_detect.detect``, ``_detect_outside`` and its helpers test a line for must
    hold a screen word (case-sensitive) or a lower-cased one, else a gate added later would be
    skipped in such batches. Read from their source, so the list cannot drift."""
    import ast
    import inspect

    from fabriclens.parse import log_detect, log_patterns, nccl_log

    words: set[str] = set()
    for fn in (nccl_log._read, log_detect.detect, log_detect._detect_outside, log_detect._detect_hccl,
               log_detect._detect_llama_cpp, log_detect._detect_serving, log_detect._detect_clients):  # fmt: skip
        tree = ast.parse(inspect.getsource(inspect.unwrap(fn)))
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.In | ast.NotIn):
                if isinstance(node.left, ast.Constant) and isinstance(node.left.value, str):
                    words.add(node.left.value)
                for right in node.comparators:
                    if isinstance(right, ast.Tuple):
                        words |= {e.value for e in right.elts
                                  if isinstance(e, ast.Constant) and isinstance(e.value, str)}  # fmt: skip
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "startswith":
                words |= {a.value for a in node.args if isinstance(a, ast.Constant)}
    words -= _NESTED_GATES | {"INFO", "TRACE"}  # levels that leave a line plain
    assert len(words) > 25  # the walk found the gates
    # a crash word marks another program's line as an error: it must screen its batch too
    words |= set(log_patterns.CRASH_WORDS)
    unscreened = {
        w for w in words
        if not any(s in w for s in nccl_log.SCREEN_WORDS)
        and not any(s in w.lower() for s in nccl_log.SCREEN_LOWER)
    }  # fmt: skip
    assert not unscreened


def test_batches_without_screen_words_read_as_line_by_line() -> None:
    """A COLL trace (no screen word) read in batches gives what reading it line by line gives,
    mixed with real lines that send their batch the long way."""
    from fabriclens.parse.nccl_log import add_nccl_line

    coll = [
        f"gpu-node{r // 8:02d}:{1000 + r}:{2000 + r} [{r % 8}] NCCL INFO AllReduce: opCount {n:x} sendbuff 0x7f{n:06x} count {1 << (n % 20)} datatype 7 op 0 root 0"
        for n in range(600) for r in (n % 16,)
    ]  # fmt: skip
    real = (SAMPLES / "nccl-debug-ib.log").read_text().splitlines()
    lines = [*coll[:300], "", "garbage without layout", *real, *coll[300:]]
    one_by_one = NcclLog()
    for raw in lines:
        add_nccl_line(one_by_one, raw)
    batched = parse_nccl_log(lines)
    assert batched == one_by_one
    assert batched.lines == 600 + parse_nccl_log(real).lines and len(batched.hosts) >= 2


COLL_LINE = ("gpu-node{r:02d}:{pid}:{tid} [{d}] NCCL INFO AllReduce: opCount {op:x} sendbuff "
             "0x7f{a:06x}000 count {c} datatype 7 op 0 root 0 comm 0x55d{b:05x}0 [nranks=16]")  # fmt: skip


@given(
    st.lists(
        st.tuples(st.integers(0, 99), st.integers(0, 2**20), st.integers(0, 2**24)),
        min_size=1, max_size=40,
    ),
    st.lists(st.tuples(st.integers(0, 39), st.integers(0, 200), st.sampled_from(
        [*SCREEN_WORDS, *(w.upper() for w in SCREEN_LOWER), "Error", "0xdeadbeef", "é", "\u212a"]
    )), max_size=3),
)  # fmt: skip
def test_the_folded_screen_says_what_the_word_by_word_screen_says(
    ranks: list[tuple[int, int, int]], inserts: list[tuple[int, int, str]]
) -> None:
    """The batch screen folds case and number characters and searches the distinct line
    shapes: it must pass exactly the batches that hold a screen word (case-sensitive) or a
    lower-case one in any case, inserted anywhere in a COLL trace."""
    from fabriclens.parse.nccl_log import _screened

    lines = [COLL_LINE.format(r=r % 4, pid=1000 + r, tid=2000 + r, d=r % 8, op=n, a=a, c=1 << (n % 20),
                              b=a % 99999) for r, n, a in ranks]  # fmt: skip
    for at, pos, word in inserts:
        i = at % len(lines)
        lines[i] = lines[i][:pos] + word + lines[i][pos:]
    text = "\n".join(lines)
    exact = any(w in text for w in SCREEN_WORDS) or any(w in text.lower() for w in SCREEN_LOWER)
    assert _screened(text) == exact


def test_the_folded_screen_passes_every_screen_word() -> None:
    """Each screen word (a lower-case one in upper case too), put into a COLL line, passes the
    folded screen; the COLL line alone does not."""
    from fabriclens.parse.nccl_log import _screened

    line = COLL_LINE.format(r=1, pid=1001, tid=2001, d=1, op=7, a=99, c=4096, b=12345)
    assert not _screened(line)
    for word in (*SCREEN_WORDS, *SCREEN_LOWER, *(w.upper() for w in SCREEN_LOWER)):
        assert _screened(f"{line}\n{line[:30]}{word}{line[30:]}"), word


def test_a_coll_trace_is_turned_away_by_its_folded_shape_alone() -> None:
    """The folded screen is what keeps a 1 GB COLL trace fast: no screen word may fold into
    the shape of the trace's own hex addresses and counts (``exceeded`` folds to 0x000000 and
    made the 1 GB trace four times slower), so the word-by-word search never runs on it."""
    from fabriclens.parse.nccl_log import _FOLD, _SCREEN_FOLDED

    lines = [COLL_LINE.format(r=r, pid=1000 + r, tid=2000 + r, d=r % 8, op=n, a=0xFEDCBA - n,
                              c=1 << (n % 28), b=0xABCDE ^ n) for r in range(4) for n in range(64)]  # fmt: skip
    shapes = "\n".join(lines).translate(_FOLD)
    assert [w for w in _SCREEN_FOLDED if w in shapes] == []


def test_cli_logs_says_how_much_it_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A log with nothing to report (a COLL trace) still says what was read: lines with NCCL's
    layout, hosts and the other lines, in text and JSON."""
    import json

    from fabriclens.cli.app import run

    coll = tmp_path / "coll.log"
    coll.write_text("".join(
        f"gpu-node{r // 8:02d}:{1000 + r}:{2000 + r} [{r % 8}] NCCL INFO AllReduce: opCount {n:x} count 1024 datatype 7\n"
        for n in range(1200) for r in (n % 16,)) + "a line of something else\n")  # fmt: skip
    assert run(["logs", str(coll)]) == 0
    assert "read 1,200 NCCL lines from 2 hosts, 1 other line" in capsys.readouterr().out
    assert run(["logs", str(coll), "--json"]) == 0
    nccl = json.loads(capsys.readouterr().out)["nccl"]
    assert (nccl["lines"], nccl["other_lines"], nccl["records_not_kept"]) == (1200, 1, 0)
    assert nccl["hosts"] == ["gpu-node00", "gpu-node01"] and nccl["other_lines_read"] == 0
    # another program's line in which a rule found something is read, and counted as such
    with coll.open("a") as fh:
        fh.write("open /dev/infiniband/uverbs0: Permission denied\n")
    assert run(["logs", str(coll)]) == 1
    assert "2 other lines (1 with something it reads)" in capsys.readouterr().out
    assert run(["logs", str(coll), "--json"]) == 1
    nccl = json.loads(capsys.readouterr().out)["nccl"]
    assert (nccl["other_lines"], nccl["other_lines_read"]) == (1, 1)


@pytest.mark.parametrize(
    ("line", "rule"),
    [
        # NCCL user guide, troubleshooting, "Shared memory": the two messages it quotes
        ("node01:1:2 [0] misc/shmutils.cc:71 NCCL WARN Error: failed to extend "
         "/dev/shm/nccl-03v824 to 4194660 bytes", "shm-too-small"),
        ("node01:1:2 [0] misc/shmutils.cc:95 NCCL WARN unlink shared memory "
         "/dev/shm/nccl-d5rTd0 failed, error: No such file or directory", "shm-attach-failed"),
        # CUDA runtime errors (CUDACHECK prints the name alone), the NVLS ones by their file
        ("node01:1:2 [0] enqueue.cc:58 NCCL WARN Cuda failure 'no kernel image is available for "
         "execution on the device'", "nccl-arch-missing"),
        ("node01:1:2 [0] transport/nvls.cc:165 NCCL WARN Cuda failure 'invalid argument'",
         "nvls-fabric-manager"),
    ],
)  # fmt: skip
def test_the_documented_messages_name_their_cause(line: str, rule: str) -> None:
    fired = {f.rule for f in diagnose(parse_nccl_log(line), TorchLog())}
    assert rule in fired


PREFIXES = ("[2024-03-13 22:26:02] ", "10.0.0.1: ", "node01: ", "[rank3]: ", "rank3: ", "> ",
            "(pid=12) ", "[1,0]<stdout>: ", " 0: ", "\x1b[0m", "[0m ", "[80746] ", "12: ",
            "2024-03-13T22:26:02.123Z ", "[trainer0|0]: ", "  ")  # fmt: skip


@given(
    st.lists(st.sampled_from(PREFIXES), max_size=12),
    st.sampled_from(("node01:984:1357 [4] NCCL INFO x", "", " x", "NCCL WARN y", "12")),
)
def test_stacked_prefixes_go_in_one_match_as_one_by_one(prefixes: list[str], rest: str) -> None:
    """strip_prefixes takes up to eight stacked prefixes in one match: what taking them one at
    a time (at most eight) leaves."""
    from fabriclens.parse._prefix import PREFIX_RE, strip_prefixes

    line = "".join(prefixes) + rest
    expected = line
    for _ in range(8):
        m = PREFIX_RE.match(expected)
        if m is None:
            break
        expected = expected[m.end() :]
    assert strip_prefixes(line) == expected


@given(
    st.lists(
        st.tuples(
            st.lists(st.sampled_from(PREFIXES), max_size=10),
            st.sampled_from(("node01:984:1357 [4] NCCL INFO x", "", " x", "NCCL WARN y", "12",
                             "node01: node01:1:2 ", "a:1:2 \t", " \r")),
            st.text(alphabet=" \t\r\x0b\x85\u2028:[]()<>0123456789rankpid.-_|=", max_size=12),
        ),
        max_size=40,
    )
)  # fmt: skip
def test_a_batch_loses_its_prefixes_as_each_line_does(
    lines: list[tuple[list[str], str, str]],
) -> None:
    """The batch reader strips every line's prefixes in one pass (strip_prefixes_all): the
    result is each line's ``strip_prefixes(line.rstrip())``, whitespace that is not a newline
    at either end included."""
    from fabriclens.parse._prefix import strip_prefixes, strip_prefixes_all

    batch = ["".join(prefixes) + rest + tail for prefixes, rest, tail in lines]
    assert strip_prefixes_all(batch) == [strip_prefixes(line.rstrip()) for line in batch]
    # a caller's line that holds a newline does not shift the others
    joined = [*batch, "[rank3]: a\n[rank4]: b", *batch]
    assert strip_prefixes_all(joined) == [strip_prefixes(line.rstrip()) for line in joined]


def _rules_of(text: str) -> set[str]:
    return {f.rule for f in diagnose(parse_nccl_log(text), parse_torch_log(text))}


def test_failures_outside_nccl_s_own_lines_are_named() -> None:
    """Real failures a job prints before or beside NCCL (tests/fixtures/real/logs 099-105), each
    also in a second wording users paste, and the look-alikes that must not fire them."""
    old_desync = ("RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running "
                  "inconsistent collective: CollectiveFingerPrint(OpType=ALLGATHER, TensorShape=[4]) "
                  "but Rank 1 is running inconsistent collective: CollectiveFingerPrint("
                  "OpType=BARRIER)")  # fmt: skip
    log = parse_nccl_log(old_desync)
    (ev,) = log.of("collective_desync")
    assert (ev.detail["rank_a"], ev.detail["op_a"], ev.detail["op_b"]) == (
        0,
        "ALLGATHER",
        "BARRIER",
    )
    assert "collectives-differ-between-ranks" in _rules_of(old_desync)
    assert "device-ordinal-invalid" in _rules_of(
        "torch.AcceleratorError: CUDA error: invalid device ordinal"
    )
    store = ("torch.distributed.DistNetworkError: The server socket has failed to bind to "
             "0.0.0.0:29501 (errno: 98 - Address already in use).")  # fmt: skip
    (port,) = parse_nccl_log(store).of("store_port_in_use")
    assert port.detail["port"] == 29501
    # NCCL's own sockets: the same errno is not the rendezvous store's port
    nccl_bind = (
        "node1:1:1 [0] misc/socket.cc:1 NCCL WARN socket bind failed: Address already in use"
    )
    assert "master-port-in-use" not in _rules_of(nccl_bind)
    # an OFI error with libfabric's name for it stays the undeliverable rule's
    named = "[rank3]: NET/OFI Request 0x1 completed with error. RC: 113. Error: 2 (UNDELIVERABLE)."
    assert {"ofi-undeliverable"} <= _rules_of(named)
    assert "ofi-completion-error" not in _rules_of(named)


def test_the_nccl_2_18_invalid_argument_bug_is_named_for_its_releases_only() -> None:
    """NVIDIA/nccl#957's fix is in 2.18.6 and 2.19.3: 2.18.1-2.18.5 name it, later releases and
    NVLS's own 'invalid argument' (a restarted Fabric Manager) do not."""
    lines = "NCCL version {v}+cuda12.1\nnode1:1:1 [0] init.cc:1 NCCL WARN Cuda failure 'invalid argument'"
    assert "nccl-2.18-invalid-argument" in _rules_of(lines.format(v="2.18.3"))
    assert "nccl-2.18-invalid-argument" not in _rules_of(lines.format(v="2.18.6"))
    assert "nccl-2.18-invalid-argument" not in _rules_of(lines.format(v="2.19.3"))
    nvls = "NCCL version 2.18.5+cuda12.2\ntransport/nvls.cc:165 NCCL WARN Cuda failure 'invalid argument'"
    assert "nccl-2.18-invalid-argument" not in _rules_of(nvls)


def test_a_failure_unwinding_through_the_bootstrap_is_a_failure() -> None:
    """`bootstrap.cc:270 -> 2` with no event before it: NCCL's start-up sockets failed (nccl#1000),
    not a log that 'stops before set-up with no failure'; each host's socket interface is quoted."""
    text = (
        "a:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ibp75s0:192.168.0.103<0>\n"
        "b:2:2 [0] NCCL INFO Bootstrap : Using ibp12s0:192.168.4.102<0>\n"
        "a:1:1 [0] NCCL INFO misc/socket.cc:567 -> 2\n"
        "a:1:1 [0] NCCL INFO bootstrap.cc:270 -> 2\n"
    )
    found = {f.rule: f for f in diagnose(parse_nccl_log(text), TorchLog())}
    assert "bootstrap-failed" in found and "setup-stalled-no-failure" not in found
    evidence = " ".join(found["bootstrap-failed"].evidence)
    assert "ibp75s0:192.168.0.103" in evidence and "ibp12s0:192.168.4.102" in evidence
    assert "different interfaces" in evidence


def test_a_launcher_s_report_of_a_dead_rank_is_a_failure() -> None:
    """mpirun and torchrun say when a rank's process ended; with no NCCL failure before it the
    cause is that rank's own output (nccl#241's rank 8 exited after start-up). A failure NCCL
    did report keeps its own rule and the exit adds nothing."""
    lines = {
        "Process name: [[11192,1],8]\nExit code:    3": (8, None, None),
        "mpirun noticed that process rank 3 with PID 0 on node n1 exited on signal 9 (Killed).": (3, None, "9 (Killed)"),
        "[ERROR] failed (exitcode: -9) local_rank: 2 (pid: 77) of binary: /usr/bin/python3": (2, -9, None),
    }  # fmt: skip
    for text, (rank, code, signal) in lines.items():
        (ev,) = parse_nccl_log(text).of("process_exit")
        assert (ev.detail["process_rank"], ev.detail["code"], ev.detail["signal"]) == (
            rank,
            code,
            signal,
        )
        assert "rank-process-exited" in _rules_of(text)
    with_cause = "node1:1:1 [0] NCCL WARN Cuda failure 'out of memory'\nProcess name: [[1,1],0]"
    assert "rank-process-exited" not in _rules_of(with_cause)


# Causes of tests/fixtures/real/logs 107-128 in other wordings users paste (NCCL's own lines,
# other tools, other releases): each must fire the rule its real log fires.
OTHER_WORDINGS = {
    # RxDM's first wording; the address-vector line under NCCL's own prefix
    "Number of GPUs detected 6 is not equal to the actual number of GPUs 8": "tcpxo-rxdm-gpu-count",
    "h1:1:2 [0] NCCL WARN NET/OFI Unable to insert remote address into address vector for device 0. RC: -22": "efa-address-vector-insert-failed",
    "[ 12.3] NVRM: dma-buf attach failed: topology not supported": "driver-dmabuf-topology-refused",
    # Lightning's newer wording, two nodes each starting ranks 0-1
    "0: Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/4\n0: Initializing distributed: GLOBAL_RANK: 1, MEMBER: 2/4\n1: Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/4": "slurm-global-ranks-duplicated",
    # older releases' wordings: the errno after the text, NCCL 2.3's socket transport
    "h1:1:2 [0] misc/ibvwrap.cc:206 NCCL WARN Call to ibv_modify_qp failed with error Connection timed out errno 110": "ibv-modify-qp-timeout",
    "h1:1:2 [0] transport/net_socket.cu:39 NCCL WARN NET/Socket : no interface found": "socket-no-interface",
    # an environment dump with another list without CUDA, UCX's own warning alone
    "UCX_TLS=rc,tcp,self\nW ucx_utils.cpp:631] 8 NVIDIA GPU(s) were detected, but UCX CUDA support was not found!": "ucx-tls-excludes-cuda",
    "E nixl_agent.cpp:1] VRAM memory is detected as host by UCX.": "ucx-cuda-support-missing",
    "[1.0] [h:1:0] rc_mlx5_ep.c:1 UCX  ERROR cannot find remote protocol for: ucp_context_0 inter-node cfg#0 | put(multi) from cuda/GPU1 to cuda/GPU1": "ucx-no-protocol-for-gpu-memory",
    "nvshmem/src/modules/transport/ibgda/ibgda.cpp:1951: non-zero status: 12 ibgda_alloc_and_map_qp_uar failed": "nvshmem-ibgda-uar-exhausted",
    "E20260101 transfer_engine.cpp:1] GID is NULL, please check your GID index by specifying MC_GID_INDEX": "mooncake-gid-not-found",
    "nixl._bindings.nixlBackendError: NIXL_ERR_BACKEND": "nixl-transfer-failed-unexplained",
    # a container's limit, and the kernel's older wording without the memory figures
    "[12.3] Memory cgroup out of memory: Killed process 7781 (pt_main_thread) total-vm:1kB, anon-rss:1kB": "host-oom-killer-ended-rank",
    "Out of memory: Killed process 4242 (torchrun)": "host-oom-killer-ended-rank",
    "2024-05-01T10:00:00.000000Z\twarning\tenvoy config\tStreamAggregatedResources gRPC config stream closed": "service-mesh-sidecar-in-job",
    "[E ProcessGroupNCCL.cpp:1207] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels": "nccl-operation-failed-no-cause",
    "node1:1:1 [0] init.cc:1 NCCL WARN Cuda failure 'system not yet initialized'": "cuda-system-not-initialized",
    "node1:1:1 [0] NCCL WARN NET/OFI OFI fi_getinfo() call failed: No such device": "ofi-no-provider",
    "node1:1:1 [0] NCCL WARN NET/IB : mlx5_0:1 Got async event : port error": "ib-port-flap",
    # before NCCL 2.19 the async event names no device
    "node1:1:1 [0] transport/net_ib.cc:73 NCCL WARN NET/IB : Got async event : GID table change": "roce-gid-table-change",
    "node1:1:1 [0] misc/ibvwrap.cc:280 NCCL WARN Call to ibv_create_qp failed": "ib-queue-create-failed",
    'node1:1:1 [0] init.cc:127 NCCL WARN Missing "iommu=pt" from kernel command line which can lead to system instablity or hang!': "rccl-iommu-not-passthrough",
    "export NCCL_DEBUG=INFO; NCCL_IB_HCA=mlx5_0 /opt/ompi/bin/mpirun -np 16 ./all_reduce_perf": "mpirun-env-not-exported",
    "pdsh@n1: n7: ssh: Could not resolve hostname gpu-07: Temporary failure in name resolution": "hostname-unresolvable",
    "[Mon Jun  2 10:00:00 2025] NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.": "gpu-xid-in-log",
    "Bus error (core dumped)": "process-bus-error",
    "[W socket.cpp:697] [c10d] The client socket has failed to connect to [gpu-node-1]:29500 (errno: 111 - Connection refused).": "store-unreachable",
    "node1:1:1 [0] misc/ibvwrap.cc:1 NCCL WARN Call to ibv_modify_qp failed with error Invalid argument": "ibv-modify-qp-invalid",
    "test: Test CUDA failure common.cu:941 'CUDA driver version is insufficient for CUDA runtime version'": "cuda-driver-too-old",
    "[TensorRT-LLM][ERROR] Assertion failed: mpiSize == tp * pp (worldConfig.cpp:91)": "trtllm-world-size-mismatch",
    "[1700000000.1] [n1:99 :0] tl_cuda_team.c:100 TL_CUDA ERROR failed to open ipc handle": "mpi-collective-layer-error",
    "n1:1:1 [0] NCCL WARN NET/IB : Unable to open device mlx5_3": "ib-device-unopenable",
    # batch 32: node and container set-up, in other wordings than the corpus's
    "May 02 09:14:01 gpu-7 nv-fabricmanager[2211]: fabric manager NVIDIA GPU driver interface version 535.161.08 don't match with driver version 535.154.05. Please update with matching NVIDIA driver package.": "fabric-manager-driver-mismatch",
    "Error: failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: error during container init: error running hook #0: error running hook: exit status 1, stdout: , stderr: nvidia-container-cli: mount error: file creation failed: /run/containerd/io.containerd.runtime.v2.task/k8s.io/abc/rootfs/usr/bin/nvidia-smi: file exists: unknown": "container-image-ships-driver-files",
    'level=error msg="Error: unable to load config: unsupported config version: 3"': "container-toolkit-containerd-config-unsupported",
    "OSError: /opt/conda/lib/python3.11/site-packages/torch/lib/libtorch_cuda.so: undefined symbol: ncclCommRegister": "nccl-library-older-than-build",
    "mlx5_0 port 1 ==> ib0 (Down)": "rdma-port-down-in-log",
    # NCCL's result without its WARN line (NCCL_DEBUG unset)
    "ncclUnhandledCudaError: Call to CUDA function failed.": "nccl-cuda-error-unexplained",
    # PyTorch's allocator out of memory (2.x and 1.x wordings), its store timing out (2.x)
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.21 GiB is free.": "torch-cuda-out-of-memory",
    "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.78 GiB total capacity; 14.56 GiB already allocated; 3.44 MiB free; 14.63 GiB reserved in total by PyTorch)": "torch-cuda-out-of-memory",
    "[E108 20:04:34.467642512 socket.cpp:957] [c10d] The client socket has timed out after 900s while trying to connect to (10.1.2.3, 29500).": "store-unreachable",
    "torch.distributed.DistNetworkError: The client socket has timed out after 600000ms while trying to connect to (172.17.0.9, 46229).": "store-unreachable",
    # NCCL's own checks of the ranks' versions and GPUs (the latter's wording since 2.23)
    "node01:1:2 [0] init.cc:1043 NCCL WARN Mismatched NCCL version detected : rank 0 version 22105 rank 8 version 21803": "nccl-version-mismatch",
    "node01:1:2 [1] init.cc:1057 NCCL WARN Multiple Ranks are using the same GPU/Partition. Set NCCL_MULTI_RANK_GPU_ENABLE=1 to enable this configuration": "duplicate-gpu",
    # no interface for NCCL's sockets, in the wordings of its releases
    "node01:1234:1300 [0] bootstrap.cc:126 NCCL WARN Bootstrap : no socket interface found": "socket-no-interface",
    "node01:1234:1300 [0] misc/socket.cc:420 NCCL WARN NET/Socket : No usable listening interface found": "socket-no-interface",
    "node01:1234:1300 [0] bootstrap.cc:577 (bootstrapNetInit) NCCL WARN no device found matching =eth9, verify NCCL_OOB_NET_IFNAME": "socket-no-interface",
    "node01:1234:1300 [0] misc/socket.cc:238 NCCL WARN Net : No interface found in the same subnet as remote address 10.0.0.2<1234>": "socket-no-interface",
    # a kernel's fault, in NCCL's, nccl-tests', PyTorch's and the driver API's wordings
    "Test CUDA failure common.cu:516 'an illegal memory access was encountered'": "cuda-kernel-fault",
    "node01:1234:1300 [0] enqueue.cc:1612 NCCL WARN Cuda failure 'unspecified launch failure'": "cuda-kernel-fault",
    "node01:1234:1300 [3] proxy.cc:1093 NCCL WARN Cuda failure 719 'unspecified launch failure'": "cuda-kernel-fault",
    "RuntimeError: CUDA error: device-side assert triggered": "cuda-kernel-fault",
    "RuntimeError: CUDA error: an illegal memory access was encountered CUDA kernel errors might be asynchronously reported at some other API call": "cuda-kernel-fault",
    "torch.AcceleratorError: CUDA error: uncorrectable ECC error encountered": "cuda-kernel-fault",
    "E cuda_event.cc:48] Error polling for event status: failed to query event: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered": "cuda-kernel-fault",
    # NCCL 2.19-2.27's wording, on one WARN line with the variable
    "n1:1:1 [0] enqueue.cc:1 NCCL WARN No algorithm/protocol available for function AllGather with datatype ncclFloat32. NCCL_ALGO was set to NVLS.": "nccl-no-algorithm-forced",
    "n1:1:1 [0] misc/shmutils.cc:1 NCCL WARN Call to shm_open failed : Permission denied": "shm-permission-denied",
    "n1:1:1 [3] transport/nvls.cc:1 NCCL WARN Cuda failure 2 'out of memory'\n"
    "n1:1:1 [3] NCCL WARN Failed to bind NVLink SHARP (NVLS) Multicast memory of size 4194304 : CUDA error 2 'out of memory'": "nvls-multicast-exhausted",
    "a1: Test HIP failure common.cu:1 'hipErrorNoDevice'": "rocm-no-device",
    "[1,0]<stderr>:Libfabric error: (-12) Cannot allocate memory": "efa-memlock-limit",
    "(EngineCore_DP0 pid=1) INFO 01-01 00:00:00 [shm_broadcast.py:1] No available shared memory broadcast block found in 60 seconds.": "vllm-workers-stalled",
    "all_reduce_perf: Test CUDA failure common.cu:892 'CUDA driver is a stub library'": "cuda-driver-stub",
    "n1:1:1 [0] misc/nvmlwrap.cc:1 NCCL WARN Failed to open libnvidia-ml.so.1": "nvml-missing",
    "[1730000000.1] [n1:1:0] ucp_worker.c:1 UCX  ERROR   no active messages transport to <no debug data>: self/memory - Destination is unreachable": "mpi-ucx-error",
    "(RayWorkerWrapper pid=1) ERROR: Cuda error /vllm/csrc/custom_all_reduce.cuh:1 'peer access is not supported between these two devices'": "engine-custom-allreduce-no-p2p",
    "Exception: Version mismatch: The cluster was started with:": "ray-version-mismatch",
    "n1:1:1 [0] NCCL INFO NCCL_CHUNK_SIZE set by environment to 524288.": "nccl-chunk-size-set",
    "bash: line 1: orted: command not found": "mpi-orted-not-found",
    "RuntimeError: An attempt has been made to start a new process before the current process has finished its bootstrapping phase.": "python-spawn-no-main-guard",
    "n1:1:1 [0] NCCL WARN NET/OFI Unexpected number of remote rails for dev 3. Expected 4 but got 2": "ofi-rails-mismatch",
    "RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:83] ifa != nullptr. Unable to find address for: eth9": "gloo-iface-missing",
    "[W socket.cpp:1] [c10d] Warning: Unable to resolve hostname to a (local) address. Using the loopback address as fallback.": "gloo-loopback-fallback",
    "libibverbs: Warning: couldn't load driver 'rxe': librxe-rdmav2.so: cannot open shared object file: No such file or directory": "verbs-no-provider",
    "There are not enough slots available in the system to satisfy the 16": "mpi-not-enough-slots",
    "[n1:mpi_rank_3][rdma_iba_hca_init] cannot create cq": "mpi-ib-cq-failed",
    "  Process 4242 on node gpu-a17 managing GPU 0": "nccl-ras-process-unresponsive",
    "RuntimeError: Ranks 1, 3 failed to pass monitoredBarrier in 30000 ms": "monitored-barrier-rank-missing",
    "MPICH ERROR [Rank 3] - Abort(-1): MPIDI_CRAY_init: GPU_SUPPORT_ENABLED is requested, but GTL library is not linked": "cray-mpich-gtl-not-linked",
    "MPICH ERROR: Unable to use a NIC_POLICY of 'NUMA'. Rank 12 is not confined to a single NUMA node.": "cray-mpich-nic-policy-numa",
    "but OMPI was not built with SLURM's PMI support and therefore cannot": "ompi-no-slurm-pmi",
    "libfabric:9:1::cxi:core:cxip_cq_eq_progress():531<warn> x1000c0s0b0n0: Cassini Event Queue overflow detected.": "cxi-event-queue-overflow",
    "[n2:7] [ 3] /opt/ompi/lib/libmpi.so.40(NBC_Progress+0x164)[0x4000]\n[n2:7] Signal: Segmentation fault (11)": "ompi-libnbc-gpu-buffers",
    "[n1:00001] PMIX ERROR: ERROR in file gds_ds12_lock_pthread.c at line 168": "pmix-gds-ds12",
    "srun: fatal: Can't find plugin for switch/hpe_slingshot": "slurm-switch-plugin-in-container",
    "n1:1:1 [3] init.cc:1 NCCL WARN Cuda failure 'all CUDA-capable devices are busy or unavailable'": "gpu-busy-exclusive-process",
    "n1:1:1 [0] transport/p2p.cc:274 NCCL WARN Cuda failure 800 'operation not permitted'": "cumem-fabric-not-permitted",
    "$ fi_info -p efa\nfi_getinfo: -61 (No data available)": "ofi-no-provider",
    "root@pod:/# nvidia-smi\nFailed to initialize NVML: Unknown Error": "container-lost-gpu-access",
    "[n1:00007] No PMIx server was reachable, but a PMI1/2 was detected.": "slurm-mpi-not-pmix",
    "Cannot apply desired operation due to shape mismatches. All shapes across devices must be valid.": "shapes-differ-between-ranks",
    "[n1:9:0:9] 0  /usr/lib/libucs.so.0(ucs_handle_error+0x2cc) [0x40]": "ucx-signal-handler-hides-crash",
    "stderr: nvidia-container-cli: initialization error: driver rpc error: timed out: unknown": "container-driver-timeout",
    "I0101 00:00:00.1  1 health.go:185] XidCriticalError: Xid=48 on Device=GPU-1234; marking device as unhealthy.": "gpu-xid-in-log",
    "Fabric\n    State          : In Progress\n    Status         : N/A": "nvswitch-fabric-not-ready",
    "F0101 00:00:00.1 7 client.h:77] Terminating process because the JAX distributed service detected fatal errors.": "jax-peer-task-died",
    "Additional GRPC error information from remote target coordination_service while calling /tensorflow.CoordinationService/Heartbeat:": "jax-coordinator-died",
    "jaxlib.xla_extension.XlaRuntimeError: FAILED_PRECONDITION: Task with incarnation id 42 is not connected": "jax-collective-peer-gone",
    "AttributeError: Can't pickle local object 'main.<locals>.collate'": "spawn-pickle-error",
    "but OMPI was not built with SLURM support. This usually happens": "ompi-no-slurm-pmi",
    "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1, unhandled system error, NCCL version 2.10.3": "nccl-system-error-unexplained",
    "[n1:1] pml_ucx.c:175 Error: Failed to receive UCX worker address: Not found (-13)": "mpi-ucx-error",
    "RuntimeError: DNS resolution failed: [Errno -2] Name or service not known.": "hostname-unresolvable",
    # UCX 1.14's own words for a low locked-memory limit (openucx/ucx#7930, #8746)
    "[1.0] [n1:7:0] ib_md.c:1 UCX  ERROR mlx5_0: ibv_create_cq() failed: Cannot allocate memory. Please set max locked memory (ulimit -l) to 'unlimited' (current: 64 kbytes)": "mpi-ib-cq-failed",
    "[1.0] [n1:7:0] ib_md.c:1 UCX  WARN  RDMA transports are disabled because max locked memory limit (64 kbytes) is too low. Please set max locked memory (ulimit -l) to 'unlimited'": "mpi-ib-cq-failed",
    "slurmstepd: error: pyxis:     mkdir: cannot create directory '/run/enroot/user-1000': Permission denied": "enroot-dir-not-writable",
    "enroot-nsenter: failed to create user namespace: Permission denied": "enroot-user-namespace-refused",
    "slurmstepd: error: pyxis: couldn't start container": "pyxis-container-failed",
    # NVLSM's own check (siderolabs/docs#581)
    "10.0.0.101: nvlsm: ibwarn: [15] umad_init: can't read ABI version from /sys/class/infiniband_mad/abi_version (No such file or directory): is ib_umad module loaded?": "fabric-manager-ib-umad-missing",
    "nv-fabricmanager: request to query NVSwitch device information from NVSwitch driver failed with error:WARNING Nothing to do [NV_WARN_NOTHING_TO_DO]": "fabric-manager-no-nvswitch",
    "I0101 00:00:00 rxdm.cc:1] Number of GPUs detected 6 is not equal to the actual number of GPUs 8": "tcpxo-rxdm-gpu-count",
    "[ERROR] HCCL(1,python):2025-01-01-00:00:00.000.001 [sal.cc:501] [1][InitGroupStage][EnvConfig]set ifname to [eth9] by HCCL_SOCKET_IFNAME, but not found in the environment": "hccl-socket-ifname-missing",
    "[ERROR] HCCL(7,python):2025-01-01 [rank_consistentcy_checker.cc:429] [7][InitChannelStage][ParameterConflict]CMD information tag check fail. local[Broadcast_10.0.0.1%eth0_60000_0_1], remote[AllReduce_10.0.0.1%eth0_60000_0_1]": "hccl-collectives-differ",
    "[ERROR] HCCL(7,python):2025-01-01 [config.cc:413] [7][InitGroupStage][RanktableCheck]rank[3] device ip family[10] is not same as others[2].": "hccl-ip-family-mismatch",
    "nvidia-container-cli: initialization error: load library failed: libnvidia-ml.so.1: cannot open shared object file: no such file or directory: unknown": "container-nvml-library-missing",
    "OSError: [Errno 24] Too many open files: '/dev/shm/torch_1234_0'": "too-many-open-files",
    "[ERROR] HCCL(9,python):2025-01-01 [hccl_socket.cc:110] [9][InitChannelStage][RanktableDetect] socket type[2], listen on ip[10.0.0.1%eth0] and specific port[60002] fail. Please check the port status": "hccl-port-in-use",
    "[ERROR] HCCL(9,python):2025-01-01 [topoinfo_exchange_agent.cc:41] [9][TopoInfoExchangeAgent][Setup]TopoExchangeAgent: connect server[10.0.0.1 : 60000] failed": "hccl-root-unreachable",
    "[PID: 9] 2025-01-01-00:00:00.000.001 Execution Error ROCE CQE(EI0013): An error CQE occurred during operator execution.": "hccl-roce-cqe",
    "[ERROR] HCCL(9,python):2025-01-01 [param_check.cc:66] [9][InitGroupStage][RanktableConfig]errNo[0x0000000005010001] path /data/rank_table_8p.json is not a valid real path": "hccl-ranktable-path",
    "[PID: 9] 2025-01-01-00:00:00.000.001 Communication_Error_Socket_Connect_Timeout(EI0006): Failed to set up the link within the timeout.": "hccl-error-code",
    "[ERROR] HCCL(9,python):2025-01-01 [task_exception_handler.cc:908] [9][TaskExecStage][Timeout][Host]Task run failed, base information is streamID:[2], taskID[7], tag[Broadcast_10.0.0.1%eth0_60000_0_1], AlgType(level 0-1-2):[fullmesh-ring-NHR].": "hccl-task-failed",
    "(ofi_impl.h:704:MPIDI_OFI_send_handler:Transport endpoint is not connected)": "impi-ofi-iface-unreachable",
    # Open MPI 4's wording
    "[n2][[1,1],3][btl_tcp_endpoint.c:803:mca_btl_tcp_endpoint_complete_connect] connect() to 10.0.0.2 failed: No route to host (113)": "ompi-tcp-no-route",
    "[ERROR] HCCL(9,python):2025-01-01 [hccl_socket.cc:110] [9][InitGroupStage][RanktableDetect] socket type[1], listen on ip[10.1.0.3] and specific port[16667] fail.": "hccl-npu-port-in-use",
    "[ERROR] HCCL(9,python):2025-01-01-00:00:00.000.001 [hccl_socket_manager.cc:797] [9][Wait][LinkEstablish]wait socket establish timeout, role[0] rank[3] timeout[120 s]": "hccl-link-timeout",
    "[ERROR] HCCL(9,python):2025-01-01 [task_exception_handler.cc:610][9][TaskExecStage][HeartbeatAbnormal]Cluster Exception Location[IP/ID]:[10.0.0.7/3], Arrival Time:[Thu Jan 1 00:00:00 2025], Discoverer:[10.0.0.1/0], ExceptionType:[Heartbeat Lost Occurred], Possible Reason:1. Process has exited": "hccl-heartbeat-lost",
    "[ERROR] HCCP(9,x):2025-01-01 [ra_host.c:480]tid:9,ra_rdev_init_check_ip(480) : [check][ip]fail, ret(129) the IP address(10.1.0.9) in the ranktable is inconsistent with the IP address(10.1.0.8) of the network adapter": "hccl-ranktable-ip-mismatch",
    "I0101 00:00:00.000000       1 main.go:1] Failed to start nvml with error:  could not load NVML library": "k8s-device-plugin-no-nvml",
    'node01:5646:5646 [0] /src/init.cc:136 NCCL WARN Missing "iommu=pt" from kernel command line which can lead to system instablity or hang!': "rccl-iommu-not-passthrough",
    "libfabric:1:1::efa:mr:efa_mr_hmem_setup():254<warn> unable to set memops for cuda ptr": "efa-cuda-sync-memops",
    "    pps_allowance_exceeded: 42": "ena-allowance-exceeded",
    "[   12.345678] nvidia_peermem: Unknown symbol ib_register_peer_memory_client (err -2)": "gdr-peer-module-symbol-mismatch",
    "OFI error: fi_mr_reg(domain, buf, len, FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL): Cannot allocate memory": "ofi-mr-registration-no-memory",
    " Failed to get IB devices list: Function not implemented": "ib-kernel-stack-down",
    # the shape rdma-core prints (a Broadcom NIC beside the inbox libraries)
    "libibverbs: Warning: Driver bnxt_re does not support the kernel ABI of 6 (supports 1 to 1) for device /sys/class/infiniband/bnxt_re0": "verbs-kernel-abi-mismatch",
    " Couldn't initialize ROCm device": "rocm-no-device",
    # UCX's own wording of the verbs error 12
    "[1700000000.123456] [node1:1234:0]   ib_mlx5_log.c:171  Transport retry count exceeded on mlx5_0:1/IB (synd 0x15 vend 0x81 hw_synd 0/0)": "ib-retry-exceeded",
    # another program's system-call error that no rule names: its errno and the usual reason
    "worker-3: open /dev/infiniband/uverbs0: Permission denied": "system-call-error-unexplained",
    "mount: /dev/shm: cannot write: No space left on device": "system-call-error-unexplained",
    "+ dnf -q -y --releasever=9.2 install kernel-headers-5.14.0-362.8.1.el9_3.x86_64": "driver-container-os-version-stale",
    "Error: Unable to find a match: kernel-devel-5.14.0-427.13.1.el9_4.x86_64": "driver-container-kernel-headers-missing",
    "NVML library version: 550.54\nFailed to initialize NVML: Driver/library version mismatch": "nvml-driver-library-mismatch",
    "[  812.118321] mlx5_ib: disagrees about version of symbol ib_register_device": "kernel-module-symbol-mismatch",
    "[   14.006231] nvidia_peermem: disagrees about version of symbol ib_register_peer_memory_client": "gdr-peer-module-symbol-mismatch",
    # torchrun's exit code -7: the process ended on SIGBUS
    "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -7) local_rank: 1 (pid: 2292) of binary: /usr/bin/python3": "process-bus-error",
    # DDP's reducer without TORCH_DISTRIBUTED_DEBUG (indices), and its message alone
    "[rank1]: Parameter indices which did not receive grad for rank 1: 290 291": "ddp-unused-parameters",
    "RuntimeError: Expected to have finished reduction in the prior iteration before starting a new one. This error indicates that your module has parameters that were not used in producing loss.": "ddp-unused-parameters",
    # env:// start-up without a launcher, and torchrun's newer spelling of an empty address
    "ValueError: Error initializing torch.distributed using env:// rendezvous: environment variable MASTER_ADDR expected, but not set": "master-address-empty",
    "+ torchrun --nnodes=2 --node-rank=1 --master-addr= --master-port=29500 train.py": "master-address-empty",
    "ValueError: The port number of the rendezvous endpoint 'node1:abc' must be an integer between 0 and 65536.": "rendezvous-endpoint-unset",
    # a network plugin given by a short name (NCCL tries the name, then libnccl-net-<name>.so), a tuner by path
    "node1:1:2 [0] NCCL INFO NET/Plugin: Could not find: ofi libnccl-net-ofi.so. Using internal net plugin.": "nccl-plugin-not-found",
    "node1:1:2 [0] NCCL INFO TUNER/Plugin: Could not find: /opt/tuner/libnccl-tuner-custom.so.": "nccl-plugin-not-found",
    "node2:1:2 [3] NCCL WARN NET/OFI The tuner plugin can not be loaded when explicitly choosing an algorithm or protocol with NCCL_ALGO/NCCL_PROTO": "ofi-tuner-refused-algo-proto",
    "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unknown result code, NCCL version 2.18.6": "nccl-unknown-result-code",
    # compute-sanitizer in an older NCCL's kernel, and in the application's own
    "========= Invalid __global__ read of size 8 bytes\n=========     at ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclDevComm *, unsigned long, ncclWork *)+0x1c30": "nccl-kernel-invalid-access",
    "========= Invalid __global__ read of size 4 bytes\n=========     at my_kernel(float *)+0x80": "sanitizer-invalid-access",
    "[2024-09-28 10:00:00 TP3] ValueError: The memory capacity is unbalanced. Some GPUs may be occupied by other processes.": "gpu-memory-unbalanced",
    "RuntimeError: ncclDevCommCreate failed: invalid usage (run with NCCL_DEBUG=WARN for details)": "nccl-devcomm-requirements",
    # Open MPI's signal handler: a process crashed
    "[node3:12345] *** Process received signal ***": "log-shows-error",
    "double free or corruption (!prev)\nAborted (core dumped)": "log-shows-error",
    # PyTorch's wording of an internal error with no WARN line, and NCCL's CUDA call with another GPU's stream
    "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, internal error - please report this issue to the NCCL developers, NCCL version 2.18.1": "nccl-internal-error-unexplained",
    "gpu7:1:2 [1] NCCL WARN Cuda failure 'invalid resource handle'": "nccl-cuda-invalid-handle",
    # TensorRT-LLM's wording of its custom all-reduce without peer access
    "[TensorRT-LLM][ERROR] CUDA runtime error in cudaDeviceEnablePeerAccess(peer, 0): peer access is not supported between these two devices": "engine-custom-allreduce-no-p2p",
    # the flight recorder's analyser with several missing ranks; a flash-attn build without this GPU
    "Not all ranks joining collective 12 at entry 11\ngroup info: 0:default_pg\ncollective: nccl:broadcast\nmissing ranks: {2, 3}": "flight-recorder-ranks-missing",
    # Horovod's stall inspector from 0.20 (google/automl#563: a list per missing rank, '!' when the
    # stall shutdown will end it), and Gloo's own rendezvous store timing out (not Horovod's)
    "[1,0]<stderr>:[2020-07-04 19:23:57.817885: W horovod/common/stall_inspector.cc:105] One or more tensors were submitted to be reduced, gathered or broadcasted by subset of ranks and are waiting for remainder of ranks for more than 60 seconds. This may indicate that different ranks are trying to submit different tensors or that only subset of ranks is submitting tensors, which will cause deadlock. \n[1,0]<stderr>:Stalled ranks:\n[1,0]<stderr>:0: [HorovodBroadcast_box_net_box_0_bias_0, HorovodBroadcast_box_net_box_0_bias_Momentum_0 ...]": "horovod-stalled-ranks",
    "Missing ranks:\n1!: [DistributedSGD_Allreduce/cond/HorovodAllreduce_grads_0]": "horovod-stalled-ranks",
    # a crash with NCCL on its stack in gdb's words (horovod/horovod#2944's frame), and in UCX's
    "Caught signal 11 (Segmentation fault: address not mapped to object at address 0x8)\n#11 0x00007f0118d91075 in ncclBarrierEnq () from /usr/local/cuda/lib64/libnccl.so.2": "nccl-native-crash",
    "[node01:1234:0:1240] Caught signal 11 (Segmentation fault: address not mapped to object at address (nil))\n==== backtrace (tid:   1240) ====\n 0 0x0000000000042520 __sigaction()  ???:0\n 1 0x00000000000a1b2c _ZL16ncclProxyServicePv()  proxy.cc:0": "nccl-native-crash",
    "terminate called after throwing an instance of 'gloo::IoException'\n  what():  [/opt/gloo/gloo/rendezvous/file_store.cc:132] Wait timeout for key(s): [1]": "gloo-rendezvous-timeout",
    "[rank0]: RuntimeError: CUDA error: no kernel image is available for execution on the device": "program-kernels-missing-for-gpu",
    # a newer kernel's oops in the driver's UVM module; the GPU Operator's pods under restricted
    "[ 1203.4] RIP: 0010:uvm_va_block_make_resident+0x1c/0x3a0 [nvidia_uvm]": "nvidia-driver-kernel-oops",
    'Error creating: pods "nvidia-driver-daemonset-x" is forbidden: violates PodSecurity "restricted:latest": privileged (container "nvidia-driver-ctr" must not set securityContext.privileged=true)': "k8s-pod-security-forbids-driver-pods",
    # slurmd's check on another node's topology
    "[2026-01-01T10:00:00.000] error: _check_core_range_matches_sock: gres/gpu GRES autodetected core affinity 16-31 on node gpu-a17 doesn't match socket boundaries. (Socket 0 is cores 0-7)": "slurm-gpu-affinity-not-socket-aligned",
    # Gloo's full mesh on one line, a private registry's refusal
    "[rank3]: RuntimeError: Gloo connectFullMesh failed with [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:144] no error": "gloo-full-mesh-failed",
    "[ERROR] URL https://nvcr.io/v2/nvidia/pytorch/manifests/24.05-py3 returned error code: 401 Unauthorized": "container-registry-unauthorized",
    # NCCL's topology bug with its usual prefix
    "node3:12:34 [5] graph/topo.h:230 NCCL WARN Could not find NET with id 0": "nccl-net-id-not-found",
    # a Python traceback's last line that no rule names: the exception is quoted as the failure
    "[rank1]: Traceback (most recent call last):\n[rank1]:   File \"train.py\", line 88, in <module>\n[rank1]: ValueError: Expected input batch_size (8) to match target batch_size (4).": "python-exception-unexplained",
    "mscclpp._mscclpp.CuError: (700) an illegal memory access happened somewhere": "python-exception-unexplained",
    # Ollama and llama.cpp in other releases' words: newer llama.cpp's loader, Ollama's older
    # offload line, a ROCm card of RDNA3 rejected, a driver too old on Linux
    "load_tensors: offloaded 20/81 layers to GPU": "llm-partial-offload",
    'time=2024-06-01T10:00:00.000Z level=INFO source=memory.go:309 msg="offload to cuda" layers.requested=-1 layers.model=33 layers.offload=28 layers.split="" memory.available="[7.6 GiB]"': "llm-partial-offload",
    'level=WARN source=amd_linux.go:1 msg="amdgpu is not supported (supported types:[gfx1030 gfx1100])" gpu_type=gfx1103 gpu=0 library=/usr/lib/ollama': "ollama-rocm-gfx-unsupported",
    'level=INFO source=gpu.go:1 msg="no compatible GPUs were discovered"': "ollama-no-gpu",
    "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 11200.00 MiB on device 1: cudaMalloc failed: out of memory": "llama-cpp-gpu-out-of-memory",
    "llama_context: n_ctx         = 131072\nllama_kv_cache_init: failed to allocate buffer for kv cache": "llama-cpp-kv-cache-allocation-failed",
    # vLLM's newer wordings: the explicit refusal, V1's concurrency below one request, Docker's
    # service prefix before the logger's
    "ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be stored in KV cache (21056). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.": "vllm-kv-cache-shorter-than-max-len",
    "INFO 05-01 10:00:00 [kv_cache_utils.py:1] Maximum concurrency for 131,072 tokens per request: 0.47x": "vllm-kv-cache-shorter-than-max-len",
    "vllm-1  | ERROR 11-18 18:07:28 engine.py:366] ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla V100-SXM2-32GB GPU has compute capability 7.0.": "bf16-on-gpu-before-ampere",
    "(VllmWorker rank=0 pid=1) ERROR 01-01 00:00:00 [core.py:1] RuntimeError: CUDA error: out of memory": "program-cuda-out-of-memory",
    # NCCL's InfiniBand receives without GPUDirect RDMA; its socket transport alone
    "n1:1:1 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0\nn1:1:1 [0] NCCL INFO Channel 01/0 : 1[0] -> 0[0] [receive] via NET/IB/1": "ib-without-gdr",
    "n1:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0> [1]eth1:10.0.1.1<0>": "nccl-socket-transport-set-up",
    # TensorRT-LLM's newer releases and the C++ runtime's wording; llama.cpp's newer CUDA check
    "[TensorRT-LLM][ERROR] 1: [stdArchiveReader.cpp::stdArchiveReaderInitCommon::47] Error Code 1: Serialization (Serialization assertion stdVersionRead == kSERIALIZATION_VERSION failed.Version tag does not match. Note: Current Version: 237, Serialized Engine Version: 239)": "trt-engine-from-another-tensorrt",
    "[TensorRT-LLM][ERROR] CUDA runtime error in ::cudaMalloc(ptr, n): out of memory (/src/tensorrt_llm/cpp/tensorrt_llm/runtime/tllmBuffers.h:125)": "trtllm-out-of-memory-loading-engine",
    "[WARNING] check inlen(2048) <= max_inlen(1024) and outlen(128) <= max_outlen(1024) failed, skipping.": "trtllm-request-longer-than-engine",
    "CUDA error: the provided PTX was compiled with an unsupported toolchain.\n  current device: 0, in function ggml_cuda_compute_forward at ggml-cuda.cu:1": "cuda-driver-too-old",
    "CUDA error: invalid device function\n  current device: 0, in function ggml_cuda_op_mul_mat at ggml/src/ggml-cuda/ggml-cuda.cu:1": "program-kernels-missing-for-gpu",
    "CUDA error 217 at ggml-cuda.cu:6292: peer access is not supported between these two devices": "llama-cpp-peer-access-unsupported",
    # PyTorch's macOS wheel; the driver API's own name for cuInit's failure; another NVML error
    "  File \"train.py\", line 9\nRuntimeError: Distributed package doesn't have NCCL built in": "torch-without-nccl",
    "E0101 cuda_driver.cc:1] failed call to cuInit: CUDA_ERROR_NOT_FOUND: named symbol not found": "cuinit-driver-library-mismatch",
    "2024/02/01 10:00:00 gpu.go:88: CUDA not detected: nvml vram init failure: 18": "ollama-nvml-not-started",
    "WARNING 01-01 00:00:00 [cache_engine.py:1] Using 'pin_memory=False' as WSL is detected. This may slow down the performance.": "vllm-wsl-no-pinned-memory",
    ":1:hip_platform.cpp:110 : 1 us: Cannot retrieve Static function, error: 209": "program-kernels-missing-for-gpu",
    # c10d's store client given the loopback name; the other spellings of a name that does not resolve
    "[W socket.cpp:1] [c10d] The client socket has failed to connect to [127.0.1.1]:29500 (errno: 111 - Connection refused).": "connect-loopback",
    "ValueError: host not found: Temporary failure in name resolution": "hostname-unresolvable",
    "[W socket.cpp:1] [c10d] The IPv4 network addresses of (worker-1.svc, 29400) cannot be retrieved (gai error: -2 - Name or service not known).": "hostname-unresolvable",
    # Ollama's client-side error; llama.cpp's newer host buffer wording; the runner under its
    # older name; NCCL's registration of a receive buffer; SGLang's copy of the kernel
    "Error: model requires more system memory (15.3 GiB) than is available (11.2 GiB)": "ollama-host-memory-too-small",
    "llama_model_load: error loading model: unable to allocate CPU buffer": "llama-cpp-host-buffer-alloc-failed",
    'level=ERROR source=sched.go:1 msg="error loading llama server" error="llama runner process has terminated: signal: killed"': "ollama-runner-killed",
    "warning: failed to mlock 4096000-byte buffer (after previously locking 0 bytes): Resource temporarily unavailable": "llama-cpp-mlock-limit",
    "n1:1:2 [0] transport/nvls.cc:1 NCCL WARN rank 3 failed to NVLS register recvbuff 0x7f sendbuffSize 0 recvbuff 0x7f recvbuffSize 1048576": "nvls-buffer-registration-failed",
    "n1:1:2 [0] misc/socket.cc:1 NCCL WARN Call to bind failed: Address already in use": "nccl-bind-address-in-use",
    "Failed: Cuda error /sgl-workspace/sgl-kernel/csrc/allreduce/custom_all_reduce.cuh:120 'invalid resource handle'": "vllm-custom-allreduce-cuda-error",
    # the same failures in other clients' words: requests', aiohttp's, Go's, curl's
    "requests.exceptions.ConnectionError: HTTPConnectionPool(host='localhost', port=11434): Max retries exceeded with url: /api/chat (Caused by NewConnectionError('<urllib3.connection.HTTPConnection object at 0x7f>: Failed to establish a new connection: [Errno 111] Connection refused'))": "http-connect-refused",
    "aiohttp.client_exceptions.ClientConnectorError: Cannot connect to host host.docker.internal:8000 ssl:default [Connect call failed ('172.17.0.1', 8000)] [Errno 111] Connect call failed": "http-server-listens-on-loopback",
    'Error: Post "http://[::1]:11434/api/generate": dial tcp [::1]:11434: connect: connection refused': "http-ipv6-loopback-refused",
    "curl: (7) Failed to connect to 172.17.0.1 port 8080 after 1 ms: Couldn't connect to server": "http-server-listens-on-loopback",
    "aiohttp.client_exceptions.ClientConnectorError: Cannot connect to host localhost:8000 ssl:default [Errno 99] Cannot assign requested address": "client-local-ports-exhausted",
    "aiohttp.client_exceptions.ClientPayloadError: Response payload is not completed": "response-cut-mid-stream",
    "curl: (18) transfer closed with outstanding read data remaining": "response-cut-mid-stream",
    "httpx.ReadTimeout: timed out": "client-request-timeout",
    "<html><head><title>504 Gateway Time-out</title></head>": "gateway-timed-out",
    "[   12.3] python3 invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0": "host-oom-killer-ended-rank",
    "terminate called after throwing an instance of 'WriteSocketException'": "distributed-llama-peer-disconnected",
    # downloads in other tools' words; Ray's GCS in its older and newer wordings
    "requests.exceptions.ConnectionError: (MaxRetryError(\"HTTPSConnectionPool(host='huggingface.co', port=443): Max retries exceeded (Caused by NameResolutionError(\"<urllib3.connection.HTTPSConnection object>: Failed to resolve 'huggingface.co' ([Errno -3] Temporary failure in name resolution)\"))\"))": "model-download-dns-failed",
    'Error: pull model manifest: Get "https://registry.ollama.ai/v2/library/llama3/manifests/latest": dial tcp: lookup registry.ollama.ai on 127.0.0.53:53: read udp 127.0.0.1:41234->127.0.0.53:53: i/o timeout': "model-download-dns-failed",
    'Error: pull model manifest: Get "https://registry.ollama.ai/v2/": dial tcp 104.21.75.227:443: i/o timeout': "http-host-unreachable",
    'time=2025-01-01T00:00:00.000Z level=INFO source=download.go:370 msg="b5a2 part 3 attempt 2 failed: unexpected EOF, retrying in 4s"': "model-download-connection-cut",
    "huggingface_hub.errors.HfHubHTTPError: 503 Server Error: Service Unavailable for url: https://huggingface.co/api/models/x": "model-hub-server-error",
    "$ https_proxy=http://10.0.0.1:3128 ollama pull llama3": "ollama-proxy-set-on-client",
    "[2025-01-01 00:00:00,000 W 1 1] gcs_rpc_client.h:1: Failed to connect to GCS at address 10.0.0.1:6379 within 5 seconds.": "ray-gcs-unreachable",
    "ray start --address='localhost:6379' --num-gpus 8": "ray-worker-joins-loopback",
    "(raylet) The node with node id: abc and address: 10.0.0.2 and node name: 10.0.0.2 has been marked dead because the detector has missed too many heartbeats from it.": "ray-node-marked-dead",
}  # fmt: skip


@pytest.mark.parametrize(("text", "rule"), OTHER_WORDINGS.items())
def test_a_cause_in_another_wording_fires_its_rule(text: str, rule: str) -> None:
    found = _rules_of(text)
    assert rule in found and "nothing-to-read" not in found, (rule, found)


def test_a_line_whose_digits_decide_is_not_read_by_its_shape() -> None:
    """NCCL 2.31 prints contiguousRanksPerHost as a count, or INT_MAX when the nodes hold uneven
    rank counts (tests/fixtures/real/logs/127): a plain line of the same shape read first (here
    a number one above INT_MAX, as the corpus fuzzer made it) must not hide the second."""
    plain = (
        "n9:1:1 [0] NCCL INFO cuMemEnable 0, contiguousRanksPerHost 2147483648, crossNicSupport 1"
    )
    uneven = (
        "n9:1:1 [0] NCCL INFO cuMemEnable 0, contiguousRanksPerHost 2147483647, crossNicSupport 1"
    )
    assert parse_nccl_log(plain).of("uneven_ranks_per_host") == []
    assert len(parse_nccl_log(uneven).of("uneven_ranks_per_host")) == 1


def test_other_programs_lines_without_a_screen_word_are_only_counted() -> None:
    """A training log's iteration lines hold nothing a rule reads: a batch of them is counted
    as other lines, unread (about 8x faster), while a crash among them is still read."""
    steps = [
        f"[rank0]: iteration {i} | lm loss: {i * 0.001:.4f} | grad norm: 1.0" for i in range(600)
    ]
    log = parse_nccl_log(steps)
    assert log.unparsed_lines == 600 and log.errors == []
    crashed = parse_nccl_log([*steps[:300], "Segmentation fault (core dumped)", *steps[300:]])
    # (the crash is read: an error, and a crash report the rules see, not an unread line)
    assert crashed.unparsed_lines == 600 and len(crashed.errors) == 1
    assert [e.detail["signal"] for e in crashed.of("native_crash")] == ["Segmentation fault"]


def test_text_nccl_could_not_have_printed_is_not_searched() -> None:
    """NCCL prints a line through a 1,024-byte buffer (src/debug.cc): past twice that, a line
    with NCCL's layout holds someone else's text (the hostile benchmark's 8 kB lines), unless
    another NCCL line was joined to it, whose words are still read."""
    from fabriclens.parse.nccl_log import NCCL_LINE_BYTES

    qp = "Call to ibv_modify_qp failed with error Connection timed out"
    padded = "n1:1:1 [0] misc/ibvwrap.cc:1 NCCL WARN padding " + "x" * NCCL_LINE_BYTES + " " + qp
    assert parse_nccl_log(padded).of("qp_error") == []
    joined = ("n1:1:1 [0] NCCL INFO padding " + "y" * NCCL_LINE_BYTES
              + " n1:1:1 [0] misc/ibvwrap.cc:1 NCCL WARN " + qp)  # fmt: skip
    assert len(parse_nccl_log(joined).of("qp_error")) == 1
    assert len(parse_nccl_log("n1:1:1 [0] misc/ibvwrap.cc:1 NCCL WARN " + qp).of("qp_error")) == 1


def test_a_rank_ended_by_a_signal_is_told_which_and_what_usually_sends_it() -> None:
    """torchrun reports a worker ended by signal N as exit code -N (signal(7)): the evidence
    names the signal; a plain exit status is left as it is."""
    line = "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: {}) local_rank: 1 (pid: 7) of binary: python"
    (killed,) = [f for f in diagnose(parse_nccl_log(line.format(-9)), TorchLog()) if f.rule == "rank-process-exited"]  # fmt: skip
    assert "signal 9, SIGKILL: killed: the kernel's out-of-memory killer" in killed.evidence[0]
    (plain,) = [f for f in diagnose(parse_nccl_log(line.format(1)), TorchLog()) if f.rule == "rank-process-exited"]  # fmt: skip
    assert "with status 1  <-" in plain.evidence[0]


def test_a_python_exception_is_read_from_a_traceback_s_last_line_only() -> None:
    """The exception's class opens the line and a colon or the line's end follows it: code that
    raises, a sentence naming an exception, a counter and someone's Ctrl-C are not one; and an
    exception beside an NCCL failure leaves the failure to its own finding."""
    for text in ("    raise RuntimeError(msg)", "I caught a RuntimeError: earlier, retrying",
                 "RuntimeErrorCount: 3", "KeyboardInterrupt", "WARNING: UserWarning: foo",
                 "2024-05-01 12:00:00 ERROR something failed"):  # fmt: skip
        assert parse_nccl_log(text).of("python_exception") == [], text
    (event,) = parse_nccl_log("torch.distributed.elastic.rendezvous.api.RendezvousClosedError").of(
        "python_exception"
    )
    assert event.detail["exception"].endswith("RendezvousClosedError")
    beside = "node1:1:2 [0] NCCL WARN Call to connect returned Connection refused\nRuntimeError: NCCL error in: x"
    assert "python-exception-unexplained" not in _rules_of(beside)


def test_look_alikes_of_those_causes_do_not_fire_them() -> None:
    """Variables passed with -x, a watchdog stopped for another reason, a store reached by name
    (not a netmask), a counter of PCIe bus errors: none is the cause next to it."""
    passed = "mpirun -x NCCL_DEBUG=INFO -x NCCL_IB_HCA=mlx5_0 -np 16 ./all_reduce_perf"
    assert "mpirun-env-not-exported" not in _rules_of(passed)
    assert "mpirun-env-not-exported" not in _rules_of(
        "NCCL_DEBUG=INFO mpirun -x NCCL_DEBUG -np 2 ./t"
    )
    other = ("[rank0]:[E1030 15:32:32.9 ProcessGroupNCCL.cpp:2055] [PG ID 0 PG GUID 0 Rank 0] "
             "Process group watchdog thread terminated with exception: CUDA error: an illegal memory access was encountered")  # fmt: skip
    assert "watchdog-graph-capture" not in _rules_of(other)
    # a launcher given its address and port, and DDP with every gradient
    for text in ("deepspeed --master_addr=10.0.0.1 --master_port=29500 train.py",
                 "[runner.py:417:main] Using IP address of 10.0.0.1 for node node1",
                 "rdzv_endpoint    : node1:29400", "all parameters received grad on rank 3",
                 "MASTER_ADDR=10.0.0.1 expected by the launcher"):  # fmt: skip
        found = _rules_of(text)
        assert not found & {"master-address-empty", "rendezvous-endpoint-unset",
                            "ddp-unused-parameters"}, (text, found)  # fmt: skip
    # another program's kernels missing for the GPU are not NCCL's, and NCCL's own are
    assert "nccl-arch-missing" not in _rules_of(
        "RuntimeError: CUDA error: no kernel image is available for execution on the device"
    )
    assert "program-kernels-missing-for-gpu" not in _rules_of(
        "node1:1:2 [0] enqueue.cc:58 NCCL WARN Cuda failure 'no kernel image is available for execution on the device'"
    )
    # an oops in another module, an IP line of another program, a MIG layout applied
    for text in ("[ 12.3] RIP: 0010:ext4_map_blocks+0x1c/0x3a0 [ext4]", "Bootstrap IP: 10.0.0.1 [nvidia]",
                 "Updating MIG config: map[2g.10gb:3]"):  # fmt: skip
        found = _rules_of(text)
        assert not found & {"nvidia-driver-kernel-oops", "mig-reconfigure-gpu-in-use"}, (
            text,
            found,
        )
    # UCX_TLS lists that keep CUDA, and UCX's errors in an MPI job without NIXL
    for text in ("UCX_TLS=cuda_copy,cuda_ipc,rc\nVRAM memory is detected as host by UCX.",
                 "UCX_TLS=^cuda_ipc\nVRAM memory is detected as host by UCX.", "UCX_TLS=all\nVRAM memory is detected as host by UCX."):  # fmt: skip
        found = _rules_of(text)
        assert "ucx-tls-excludes-cuda" not in found and "ucx-cuda-support-missing" in found, (
            text,
            found,
        )
    assert "ucx-tls-excludes-cuda" in _rules_of(
        "UCX_TLS=^cuda\nVRAM memory is detected as host by UCX."
    )
    mpi = "[1.0] [n1:1:0] ib_iface.c:1 UCX  ERROR send completion with error on mlx5_0: Work Request Flushed Error"
    assert "mpi-ucx-error" in _rules_of(mpi) and "nixl-ucx-on-efa-flushed" not in _rules_of(mpi)
    # RxDM finding no GPU in the PCI tree is its own rule, not a count mismatch
    assert "tcpxo-rxdm-gpu-count" not in _rules_of(
        "Number of GPUs detected in the PCI tree 0 is not equal to the actual number of GPUs reported by CUDA 8"
    )
    # every rank starting once, under SLURM: no finding
    healthy = "\n".join(["Multi-processing is handled by Slurm."] + [
        f"Initializing distributed: GLOBAL_RANK: {r}, MEMBER: {r + 1}/4" for r in range(4)])  # fmt: skip
    assert not _rules_of(healthy) & {
        "slurm-global-ranks-duplicated",
        "slurm-tasks-not-started-by-srun",
    }
    # a rank's own out-of-memory, a word "envoy" in prose, the teardown beside its named cause
    for text, rule in (("torch.OutOfMemoryError: CUDA out of memory. Killed process? no", "host-oom-killer-ended-rank"),
                       ("we sent an envoy upstream to ask the maintainers", "service-mesh-sidecar-in-job")):  # fmt: skip
        assert rule not in _rules_of(text), (text, rule)
    named = ("[E ProcessGroupNCCL.cpp:475] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2, "
             "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800328 milliseconds before timing out.\n"
             "[E ProcessGroupNCCL.cpp:455] Some NCCL operations have failed or timed out.")  # fmt: skip
    assert "nccl-operation-failed-no-cause" not in _rules_of(named)
    # an invalid handle after the GPU's memory ran out is the out-of-memory's, not a device mix-up
    after_oom = "n1:1:2 [0] NCCL WARN Cuda failure 'out of memory'\nn1:1:2 [0] NCCL WARN Cuda failure 'invalid resource handle'"
    assert "nccl-cuda-invalid-handle" not in _rules_of(after_oom)
    # the plugins NCCL looks for when none is asked for, a result code in another tool, a kernel
    # frame without a fault, a balanced check
    for text in ("node1:1:2 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal net plugin.",
                 "node1:1:2 [0] NCCL INFO PROFILER/Plugin: Could not find: libnccl-profiler.so.",
                 "node1:1:2 [0] NCCL INFO TUNER/Plugin: Could not find: libnccl-tuner.so. Using internal tuner plugin.",
                 "Error: unknown result code from the tool", "=========     at ncclKernel_AllReduce(ncclWork *)+0x10",
                 "the memory capacity is balanced across GPUs"):  # fmt: skip
        found = _rules_of(text)
        assert not found & {"nccl-plugin-not-found", "nccl-unknown-result-code",
                            "nccl-kernel-invalid-access", "gpu-memory-unbalanced"}, (text, found)  # fmt: skip
    # a CUDA failure that names itself is explained by its own rule, not by the fallback
    named = "node01:1:2 [0] enqueue.cc:1 NCCL WARN Cuda failure 'out of memory'\nncclUnhandledCudaError: Call to CUDA function failed."
    assert "nccl-cuda-error-unexplained" not in _rules_of(named)
    # advice about memory, and a server socket that times out and retries, are not those failures
    for text in ("Reduce the batch size if you see CUDA out of memory errors",
                 "[W416 15:12:21.131066630 socket.cpp:933] [c10d] The server socket on [::ffff:10.0.0.1]:38405 has timed out, will retry."):  # fmt: skip
        assert not _rules_of(text) & {"torch-cuda-out-of-memory", "store-unreachable"}, text
    # an interface Up, a container file that does exist on purpose, a symbol of another library
    for text in ("mlx5_0 port 1 ==> ib0 (Up)", "the link went (Down) on ==> then came back",
                 "undefined symbol: cudaGetDriverEntryPoint", "containerd config version = 3",
                 "fabric manager version 550.127.05 matches driver version 550.127.05"):  # fmt: skip
        found = _rules_of(text)
        assert not found & {"rdma-port-down-in-log", "nccl-library-older-than-build",
                            "container-toolkit-containerd-config-unsupported",
                            "fabric-manager-driver-mismatch"}, (text, found)  # fmt: skip
    # an interface found, and InfiniBand's own "No device found", are not a missing socket interface
    for text in ("node01:1:2 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>",
                 "node01:1:2 [0] NCCL INFO NET/IB : No device found.",
                 "node01:1:2 [0] NCCL INFO NCCL_OOB_NET_IFNAME set by environment to eth0"):  # fmt: skip
        assert "socket-no-interface" not in _rules_of(text), text
    # CUDA errors that are not a kernel's fault, and a text that only starts like one
    assert "nccl-2.18-invalid-argument" not in _rules_of(
        "NCCL version 2.18.1+cuda12.1\nRuntimeError: CUDA error: invalid argument"
    )  # another program's invalid argument is not NCCL 2.18's
    for text in ("RuntimeError: CUDA error: out of memory", "Cuda failure 'invalid argument'",
                 "CUDA error: invalid device ordinal", "CUDA error: misaligned address handling is off",
                 "print('CUDA error: ' + str(err))"):  # fmt: skip
        assert "cuda-kernel-fault" not in _rules_of(text), text
    (xid,) = parse_nccl_log(next(k for k in OTHER_WORDINGS if "Xid" in k)).of("gpu_xid")
    assert xid.detail["code"] == 79
    found = diagnose(
        parse_nccl_log(next(k for k in OTHER_WORDINGS if "gpu-node-1" in k)), TorchLog()
    )
    store = next(f for f in found if f.rule == "store-unreachable")
    assert "not a host address" not in " ".join(store.evidence)  # a name, not a netmask
    assert parse_nccl_log("the PCIe bus errors counter is 0").of("bus_error") == []
    # a verbs provider that loaded, and ibv_devinfo finding no device at all, are not a missing
    # provider; a host with slots to spare is no slot shortage
    assert parse_nccl_log("libibverbs: Warning: couldn't open config directory '/etc/libibverbs.d'.").of("verbs_no_provider") == []  # fmt: skip
    assert parse_nccl_log("No IB devices found").of("verbs_no_provider") == []
    assert parse_nccl_log("node01 slots=8 max_slots=8").of("mpi_not_enough_slots") == []
    # GPU support asked for and linked; a libnbc frame without a crash; PyTorch's IPv6 attempt
    # before it falls back to IPv4 (harmless, OLCF's Frontier guide)
    assert "cray-mpich-gtl-not-linked" not in _rules_of("export MPICH_GPU_SUPPORT_ENABLED=1")
    assert "ompi-libnbc-gpu-buffers" not in _rules_of(
        "[n2:7] [ 3] libmpi.so.40(NBC_Progress+0x164)"
    )
    ipv6 = ("[W socket.cpp:697] [c10d] The client socket cannot be initialized to connect to "
            "[node01]:3442 (errno: 97 - Address family not supported by protocol).")  # fmt: skip
    assert _rules_of(ipv6) <= {"nothing-to-read"}
    # a system error whose WARN names the call is that call's rule, not the unexplained one
    named = ("n1:1:1 [0] include/shm.h:1 NCCL WARN Error: failed to extend /dev/shm/nccl-x to 9637892 bytes\n"
             "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1, unhandled system error, NCCL version 2.10.3")  # fmt: skip
    assert "nccl-system-error-unexplained" not in _rules_of(named)
    # TensorFlow's device names are not a failed JAX task
    assert parse_nccl_log("/job:localhost/replica:0/task:0/device:GPU:0").of("jax_task_named") == []
    # a finished fabric, a step "In Progress" in someone else's words
    assert "nvswitch-fabric-not-ready" not in _rules_of(
        "Fabric\n    State : Completed\n    Status : Success"
    )
    assert "nvswitch-fabric-not-ready" not in _rules_of(
        "Checkpoint save: State In Progress (step 200)"
    )
    # CUDA's 'operation not permitted' outside NCCL's P2P transport is not an IMEX channel
    assert "cumem-fabric-not-permitted" not in _rules_of(
        "n1:1:1 [0] enqueue.cc:1 NCCL WARN Cuda failure 800 'operation not permitted'"
    )
    # an NVLS bind that fails for another reason is the fabric's state, not exhausted slots
    broken = ("n1:1:1 [0] NCCL WARN Failed to bind NVLink SHARP (NVLS) Multicast memory of size "
              "2097152 : CUDA error 401 'the operation cannot be performed in the present state'")  # fmt: skip
    assert {"nvls-fabric-manager"} <= _rules_of(
        broken
    ) and "nvls-multicast-exhausted" not in _rules_of(broken)
    # UCX's other errors are the UCX rule's, and its INFO lines nothing (the UCX FAQ's example);
    # a mkdir refused outside a container runtime's log, pyxis at work, ib_umad loaded
    assert "mpi-ib-cq-failed" not in _rules_of(
        "[1.0] [n1:7:0] ib_iface.c:1 UCX  ERROR ibv_create_cq(cqe=4096) failed: Invalid argument"
    )
    assert _rules_of("[1.0] [host1:42:0] ucp_worker.c:1877 UCX  INFO  ep_cfg[2]: tag(rc_mlx5/mlx5_0:1)") <= {"nothing-to-read"}  # fmt: skip
    assert parse_nccl_log("mkdir: cannot create directory '/data/run1': Permission denied").of("enroot_dir_denied") == []  # fmt: skip
    assert _rules_of("pyxis: creating container filesystem ...\npyxis: starting container ...") <= {"nothing-to-read"}  # fmt: skip
    assert parse_nccl_log("modprobe: ib_umad loaded").of("fm_ib_umad_missing") == []
    # GPUs found in the PCI tree; HCCL_SOCKET_IFNAME found; another library the hook could not
    # load; a limit that is only printed
    assert parse_nccl_log("Number of GPUs detected in the PCI tree 8").of("rxdm_no_pci_gpus") == []  # fmt: skip
    assert parse_nccl_log("HCCL_SOCKET_IFNAME set to [eth0], found").of("hccl_ifname_missing") == []  # fmt: skip
    assert parse_nccl_log("nvidia-container-cli: initialization error: load library failed: libcuda.so.1").of("container_nvml_missing") == []  # fmt: skip
    assert parse_nccl_log("open files (-n) 1048576").of("open_files_exhausted") == []
    # one operator on every rank is no divergence; a port that listens; a socket's own
    # 'not connected' outside libfabric; another errno of Open MPI's TCP transport
    same = "\n".join(next(k for k in OTHER_WORDINGS if "tag[Broadcast" in k).replace("Broadcast", op) for op in ("AllReduce", "AllReduce"))  # fmt: skip
    assert "hccl-task-ops-differ" not in _rules_of(same)
    assert parse_nccl_log("listen on ip[10.0.0.1%eth0] and specific port[60000] success").of("hccl_port_bound") == []  # fmt: skip
    assert parse_nccl_log("OSError: [Errno 107] Transport endpoint is not connected").of("mpi_ofi_not_connected") == []  # fmt: skip
    assert parse_nccl_log("btl_tcp_endpoint.c:572:mca_btl_tcp_endpoint_complete_connect: connect() failed with errno=111").of("mpi_tcp_no_route") == []  # fmt: skip
    # the host's port (socket type 2) is the root's; one logical superpod on one physical one;
    # one operator failing on two ranks within seconds is no late rank
    # ENA counters at zero are no shaping; a quota line that is only a setting
    assert parse_nccl_log("  bw_in_allowance_exceeded: 0").of("ena_allowance_exceeded") == []
    assert parse_nccl_log("Quota 'C2_CPUS' limit: 300").of("cloud_quota_exceeded") == []
    # a kernel symbol listed, not refused; memory short outside a registration; the receiver-
    # not-ready retries (error 13) are not the transport's (12)
    assert parse_nccl_log("ffffffffc0a1b2c0 T ib_register_peer_memory_client [ib_core]").of("peermem_symbol_mismatch") == []  # fmt: skip
    assert parse_nccl_log("python: Unknown symbol table format").of("module_symbol_mismatch") == []  # fmt: skip
    assert parse_nccl_log("RuntimeError: [enforce fail] Cannot allocate memory").of("ofi_mr_no_memory") == []  # fmt: skip
    assert parse_nccl_log("send completion with error: RNR retry counter exceeded").completion_errors == []  # fmt: skip
    # NCCL's own lines are read by its rules, not as another program's errno; a named cause
    # keeps the errno fallback quiet
    nccl_line = "node1:1:2 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.0.0.2<3456> failed : Connection refused"  # fmt: skip
    assert parse_nccl_log(nccl_line).of("errno_text") == []
    # dnf asking for the kernel's own release; an upgrade of another package
    assert parse_nccl_log("+ dnf -q -y --releasever=8.3 install kernel-headers-4.18.0-240.23.2.el8_3.x86_64").of("dnf_releasever_stale") == []  # fmt: skip
    assert parse_nccl_log("Upgrade: libssl3:amd64 (3.0.2-0ubuntu1.10, 3.0.2-0ubuntu1.12)").of("apt_nvidia_upgrade") == []  # fmt: skip
    assert "system-call-error-unexplained" not in _rules_of(nccl_line + "\nssh: connect to host n2 port 22: Connection refused")  # fmt: skip
    host_port = "socket type[2], listen on ip[10.0.0.1%eth0] and specific port[60000] fail"
    assert parse_nccl_log(host_port).of("hccl_npu_port_bound") == [] and parse_nccl_log(host_port).of("hccl_port_bound")  # fmt: skip
    one_pod = "\n".join(f"[ERROR] HCCL(1,x):2026-01-01 local rank information: nicType[VNIC_TYPE], logicSuperPodId[logic_1], phySuperPodId[0]. r{i}" for i in range(2))  # fmt: skip
    assert "hccl-superpod-split" not in _rules_of(one_pod)
    task = next(k for k in OTHER_WORDINGS if "tag[Broadcast" in k).replace("2025-01-01", "2025-01-01-00:00:0{}.000.001")  # fmt: skip
    assert "hccl-task-rank-late" not in _rules_of(task.format(1) + "\n" + task.format(9))
    assert "hccl-task-rank-late" in _rules_of(task.format(1) + "\n" + task.format(1).replace("00:00:01", "00:05:01"))  # fmt: skip
    # a forced algorithm alone is no failure; one host-buffer path alone is no divergence
    assert "nccl-no-algorithm-forced" not in _rules_of(
        "n1:1:1 [0] NCCL INFO NCCL_ALGO was set to ring."
    )
    attach = ("n1:1:1 [1] misc/shmutils.cc:1 NCCL WARN Error while attaching to shared memory segment "
              "/dev/shm/nccl-x (size 0), error: No such file or directory (2)\n"
              "n1:1:1 [1] NCCL INFO MMAP imported shareable host buffer /dev/shm/nccl-y size 1 ptr 0x1")  # fmt: skip
    found = _rules_of(attach)
    assert "shm-attach-failed" in found and "shm-cumem-host-mixed" not in found
    # one machine on two interfaces is not two machines of one name; one interface at two
    # addresses under one name is (tests/fixtures/real/logs/144)
    two_ifaces = ("n1:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
                  "n1:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.1.0.1<0>")  # fmt: skip
    assert parse_nccl_log(two_ifaces).host_clash == {}
    two_hosts = ("n1:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
                 "n1:2:2 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>")  # fmt: skip
    assert parse_nccl_log(two_hosts).host_clash == {"n1": "eth0:10.0.0.1 and eth0:10.0.0.2"}
    # sends may skip GPUDirect RDMA by design (GDR read off): receives with it are healthy
    healthy = ("n1:1:1 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0/GDRDMA\n"
               "n1:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0")  # fmt: skip
    assert "gdr-one-sided" not in _rules_of(healthy)
    one_sided = (
        healthy + "\nn2:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [receive] via NET/IB/0"
    )
    assert "gdr-one-sided" in _rules_of(one_sided)
    # every layer on the GPU; an integrated GPU's count that is not half off; a KV cache that
    # holds more than one request; a CUDA-graph frame without running out of memory
    assert "llm-partial-offload" not in _rules_of("llm_load_tensors: offloaded 33/33 layers to GPU")
    igpu = ('msg="inference compute" library=ROCm compute=gfx1150 libdirs=ollama,rocm_v7_2 '
            'type=iGPU total="24.0 GiB" available="{}"')  # fmt: skip
    assert "ollama-rocm-igpu-memory-undercounted" not in _rules_of(igpu.format("20.1 GiB"))
    assert "ollama-rocm-igpu-memory-undercounted" in _rules_of(igpu.format("5.6 GiB"))
    enough = ("INFO 01-11 15:51:02 llm_engine.py:70] ... max_seq_len=4096, download_dir=None\n"
              "INFO 01-11 15:51:18 llm_engine.py:275] # GPU blocks: 2290, # CPU blocks: 512")  # fmt: skip
    assert "vllm-kv-cache-shorter-than-max-len" not in _rules_of(enough)
    assert "vllm-kv-cache-shorter-than-max-len" in _rules_of(enough.replace("2290", "229"))
    assert "vllm-kv-cache-shorter-than-max-len" not in _rules_of(
        "Maximum concurrency for 4,096 tokens per request: 12.50x"
    )
    assert "cuda-graph-capture-out-of-memory" not in _rules_of(
        '  File "graphs.py", line 84, in capture_end\n    super().capture_end()'
    )
    # NCCL's own out-of-memory stays NCCL's; sockets beside InfiniBand are not sockets alone
    nccl_oom = "n1:1:1 [0] include/alloc.h:1 NCCL WARN Cuda failure 'out of memory'"
    assert {"cuda-out-of-memory"} <= _rules_of(
        nccl_oom
    ) and "program-cuda-out-of-memory" not in _rules_of(nccl_oom)
    both = ("n1:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>\n"
            "n1:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>")  # fmt: skip
    assert "nccl-socket-transport-set-up" not in _rules_of(both)
    # an engine of the same release; requests within the engine's limits; PyTorch's peer error
    assert "trt-engine-from-another-tensorrt" not in _rules_of("Note: Current Version: 226")
    assert "trtllm-request-longer-than-engine" not in _rules_of(
        "[INFO] check inlen(128) <= max_inlen(512) and outlen(128) <= max_outlen(200) passed"
    )
    torch_p2p = (
        "[rank0]: RuntimeError: CUDA error: peer access is not supported between these two devices"
    )
    assert "llama-cpp-peer-access-unsupported" not in _rules_of(torch_p2p)
    # a HIP error of another kind; cuInit failing otherwise
    assert "program-kernels-missing-for-gpu" not in _rules_of(
        "Cannot retrieve Static function, error: 100"
    )
    assert "cuinit-driver-library-mismatch" not in _rules_of(
        "failed call to cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected"
    )
    # a peer refused at a routable address; an address family c10d cannot use (gai -9), a page
    # not found, a bracketed address in prose
    # Ollama's estimate with room to spare; a runner ended by its own exit; NVLS set up without
    # registration; a store's port in use (the store's rule), the kernel without a location
    roomy = ('msg=offload memory.required.full="20.0 GiB" memory.required.partial="10.0 GiB"\n'
             'msg="system memory" total="62.6 GiB" free="40.0 GiB" free_swap="8.0 GiB"')  # fmt: skip
    exited = "llama runner process has terminated: exit status 2"
    nvls = "n1:1:2 [0] NCCL INFO NVLS multicast support is available on dev 0"
    store = "The server socket has failed to bind to 0.0.0.0:29500 (errno: 98 - Address already in use)."
    kernel = "vLLM's custom_all_reduce is disabled: Cuda error not checked"
    for text, rule in ((roomy, "ollama-host-memory-nearly-full"), (exited, "ollama-runner-killed"),
                       (nvls, "nvls-buffer-registration-failed"), (store, "nccl-bind-address-in-use"),
                       (kernel, "vllm-custom-allreduce-cuda-error")):  # fmt: skip
        assert rule not in _rules_of(text), (text, rule)
    assert "ollama-host-memory-nearly-full" in _rules_of(
        roomy.replace('free="40.0 GiB"', 'free="2.5 GiB"')
    )
    # a training job's own refused store connection is not an HTTP client's; a 200 from a local
    # URL, a proxy's 502 for a remote server, a listen line, a timeout that is torch's store's
    for text, rule in (("ConnectionRefusedError: [Errno 111] Connection refused", "http-connect-refused"),
                       ('HTTP Request: POST http://127.0.0.1:11434/v1/chat/completions "HTTP/1.1 200 OK"', "http-proxy-answers-for-local-server"),
                       ('HTTP Request: POST http://api.example.com/v1/chat "HTTP/1.1 502 Bad Gateway"', "http-proxy-answers-for-local-server"),
                       ("Listening on 127.0.0.1:11434 (version 0.5.7)", "http-connect-refused"),
                       ("torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients", "client-request-timeout"),
                       ('dial tcp 10.0.0.5:11434: connect: connection refused', "http-server-listens-on-loopback")):  # fmt: skip
        assert rule not in _rules_of(text), (text, rule)
    # a launcher's name is not a download's; a head's own start; a download that went through
    for text, rule in (("ssh: Could not resolve hostname gpu-07: Name or service not known", "model-download-dns-failed"),
                       ("ray start --head --port=6379", "ray-worker-joins-loopback"),
                       ("ray start --address=10.0.0.1:6379", "ray-gcs-address-empty"),
                       ('msg="downloading 60e05f210007 in 16 292 MB part(s)"', "model-download-connection-cut"),
                       ("HfHubHTTPError: 404 Client Error: Not Found for url: https://huggingface.co/x", "model-hub-server-error"),
                       ("HTTPS_PROXY=http://p:3128 ollama serve", "ollama-proxy-set-on-client")):  # fmt: skip
        assert rule not in _rules_of(text), (text, rule)
    assert "hostname-unresolvable" not in _rules_of(
        "dial tcp: lookup registry.ollama.ai: no such host"
    )
    refused = "gloo/transport/tcp/pair.cc:1] connect [10.0.0.2]:3210: Connection refused"
    found = _rules_of(refused)
    assert "socket-connect-failed" in found and "connect-loopback" not in found
    for text in ("[c10d] The IPv6 network addresses of (node1, 29500) cannot be retrieved (gai error: -9 - Address family for hostname not supported).",
                 "404: host not found on this server", "we connect [127.0.1.1]:80 in the docs"):  # fmt: skip
        found = _rules_of(text)
        assert not found & {"hostname-unresolvable", "connect-loopback"}, (text, found)


def test_warnings_already_explained_are_not_quoted_again() -> None:
    """ "NCCL printed warnings" repeats nothing a finding already explains (a real EFA log,
    tests/fixtures/real/logs 108, showed its one WARN line twice); an unexplained WARN keeps it."""
    explained = "n1:1:1 [0] NCCL WARN NET/OFI OFI fi_getinfo() call failed: No data available"
    assert _rules_of(explained) == {"ofi-no-provider"}
    extra = explained + "\nn1:1:1 [0] NCCL WARN some other warning nobody explains"
    assert {"ofi-no-provider", "nccl-warnings"} <= _rules_of(extra)


def test_nccl_warnings_say_what_the_error_they_quote_means() -> None:
    """The catch-all finding follows each warning with its quoted error's meaning (a system
    call's errno, a CUDA error's name), and still goes when another finding quotes the line."""
    log = ("node01:1234:1300 [0] misc/ibvwrap.cc:100 NCCL WARN Call to ibv_create_qp failed with error Cannot allocate memory\n"
           "node01:1234:1300 [0] init.cc:100 NCCL WARN Cuda failure 999 'unknown error'")  # fmt: skip
    found = {f.rule: f for f in diagnose(parse_nccl_log(log), TorchLog())}
    evidence = found["nccl-warnings"].evidence
    assert evidence[0].startswith("Call to ibv_create_qp failed") and "[= ENOMEM:" in evidence[0]
    assert "[= cudaErrorUnknown:" in evidence[1]
    explained = (
        "node01:1234:1300 [0] enqueue.cc:1 NCCL WARN Cuda failure 'unspecified launch failure'"
    )
    rules = {f.rule for f in diagnose(parse_nccl_log(explained), TorchLog())}
    assert rules == {"cuda-kernel-fault"}  # the warning is that finding's evidence: said once


def test_nccl_version_codes_read_as_releases() -> None:
    """NCCL_VERSION_CODE in NCCL's own mismatch warning: major*10000 + minor*100 + patch since
    2.9, major*1000 + minor*100 + patch before."""
    log = parse_nccl_log("node01:1:2 [0] init.cc:1043 NCCL WARN Mismatched NCCL version detected : rank 0 version 22105 rank 8 version 2804")  # fmt: skip
    (e,) = log.of("nccl_version_mismatch")
    assert (e.detail["version_a"], e.detail["version_b"]) == ("2.21.5", "2.8.4")


@pytest.mark.parametrize("words", ["Could not find any optimal provider",
                                   "Couldn't find any optimal provider"])  # fmt: skip
def test_ofi_without_a_provider_is_the_cause_and_libibverbs_its_consequence(words: str) -> None:
    """aws-ofi-nccl's WARN when libfabric offers no provider (both spellings it has used). NCCL
    then tries its own IB transport, whose `Failed to open libibverbs` follows: on its own that
    line is named (a slim image); after the OFI line it is the consequence (nccl#229)."""
    ofi = f"node01:1:1 [0] get_ofi_provider:312 NCCL WARN NET/OFI {words}\n"
    ibv = "node01:1:1 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]\n"
    assert _rules_of(ofi + ibv) == {"ofi-no-provider"}
    assert "libibverbs-missing" in _rules_of(ibv)


def test_collnet_fallback_is_information_and_replaces_the_catch_all() -> None:
    """SHARP unavailable: NCCL says it falls back to the point-to-point network (nccl#1050); the
    finding is info, and its WARN lines are not repeated as 'NCCL printed warnings'."""
    text = ("node01:1:2 [7] sharp_plugin.c:320 NCCL WARN NET/IB : SHARP coll init error: "
            "Cannot create SHARP job(-11)\n"
            "node01:1:2 [0] transport.cc:323 NCCL WARN Cannot initialize CollNet, using "
            "point-to-point network instead\n")  # fmt: skip
    found = diagnose(parse_nccl_log(text), TorchLog())
    assert [(f.rule, f.severity) for f in found] == [("collnet-unavailable", "info")]


def test_a_topology_search_frame_is_a_crash_but_a_trace_line_is_not() -> None:
    """A stack frame in ncclTopoCompute / ncclTopoSearch* is NCCL crashing in its topology
    search (nccl#1363); NCCL_DEBUG=TRACE names the same function as `ncclTopoCompute:987` on every
    healthy run, which must not read as one."""
    crash = "24 0x0000000000081f9a ncclTopoCompute()  /opt/nccl/src/graph/search.cc:992\n"
    gdb = "#3  0x00007f in ncclTopoSearchRec (graph=0x1) at graph/search.cc:1010\n"
    trace = "node01:1:2 [0] 1234.5 ncclTopoCompute:987 NCCL TRACE Pattern 4, crossNic 0\n"
    for text in (crash, gdb):
        assert "topo-search-crash" in _rules_of(text)
    assert "topo-search-crash" not in _rules_of(trace)


def test_an_nccl_device_list_that_repeats_its_prefix_is_named() -> None:
    """'^' and '=' prefix the whole NCCL_IB_HCA / NCCL_SOCKET_IFNAME list, once (nccl-tests#150):
    a repeat after the first entry is named; the right spellings are not."""
    bad = "NCCL_IB_HCA='^=mlx5_8,^=mlx5_14' srun all_reduce_perf -g 1\n"
    also = "export NCCL_SOCKET_IFNAME=^docker0,^lo\n"
    good = "NCCL_IB_HCA=^=mlx5_8,mlx5_14 NCCL_SOCKET_IFNAME==eth0 srun all_reduce_perf\n"
    for text in (bad, also):
        assert "nccl-list-prefix-misplaced" in _rules_of(text)
    assert "nccl-list-prefix-misplaced" not in _rules_of(good)


def test_a_vllm_workers_watchdog_timeout_names_vllms_own_hangs() -> None:
    """A watchdog timeout printed by a vLLM worker (Ray's or vLLM's own process prefix) is read
    as vLLM's known hangs (its custom all-reduce, CUDA-graph-captured NCCL calls: vllm#4653,
    vllm#2770), not a broken network or one job's stragglers; the same line from another
    program stays a generic timeout."""
    body = ("[E ProcessGroupNCCL.cpp:523] [Rank 1] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=50404, OpType=GATHER, NumelIn=8000, NumelOut=0, Timeout(ms)=600000) "
            "ran for 600327 milliseconds before timing out.\n")  # fmt: skip
    for prefix in ("(RayWorkerWrapper pid=2376582) [rank1]:", "(VllmWorkerProcess pid=77) "):
        fired = _rules_of(prefix + body)
        assert "vllm-worker-collective-hang" in fired and "nccl-timeout" not in fired
    two_runs = ("(RayWorkerVllm pid=5085) " + body.replace("50404", "20518").replace("Rank 1", "Rank 4")
                + "(RayWorkerVllm pid=4775) " + body.replace("50404", "369526"))  # fmt: skip
    fired = _rules_of(two_runs)
    assert "vllm-worker-collective-hang" in fired and "straggler-rank" not in fired
    plain = _rules_of("(pid=12) " + body)
    assert "vllm-worker-collective-hang" not in plain and "nccl-timeout" in plain


def test_hosts_on_different_network_plugins_are_named() -> None:
    """One host loading a network plugin (HPC-X's SHARP plugin) while another falls back to
    NCCL's internal transport (nccl#1634); every host on the same side is not."""
    internal = "hgx-11:18226:18274 [5] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.\n"  # fmt: skip
    loaded = "hgx-04:589474:589541 [0] NCCL INFO Plugin Path : /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so\n"  # fmt: skip
    assert "net-plugin-differs" in _rules_of(internal + loaded)
    assert "net-plugin-differs" not in _rules_of(internal + internal.replace("hgx-11", "hgx-12"))
    # one host that tried the default name, then loaded a plugin: one side only
    assert "net-plugin-differs" not in _rules_of(internal + loaded.replace("hgx-04", "hgx-11"))
    older = "hgx-12:1:1 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation\n"  # fmt: skip
    assert "net-plugin-differs" in _rules_of(older + loaded)


def test_a_log_that_stops_in_nvls_setup_is_named() -> None:
    """Every rank's last line an NVLS buffer bind, no failure and no 'Init COMPLETE'
    (nccl-tests#216): set-up stuck in NVLink SHARP; the same line in a set-up that completed,
    or beside a failure, is not."""
    bind = "c2ce:1023:1032 [0] NCCL INFO NVLS Bind mem 0xac0000000 UC handle 0x7f33 MC handle 0x7f34 size 1073741824\n"  # fmt: skip
    assert "nvls-setup-stalled" in _rules_of(bind)
    done = "c2ce:1023:1032 [0] NCCL INFO comm 0x5611 rank 0 nranks 4 cudaDev 0 busId 18000 - Init COMPLETE\n"  # fmt: skip
    assert "nvls-setup-stalled" not in _rules_of(bind + done)
    warn = "c2ce:1023:1032 [0] transport/nvls.cc:151 NCCL WARN Cuda failure 'invalid argument'\n"
    assert "nvls-setup-stalled" not in _rules_of(bind + warn)


def test_rays_warning_of_a_small_dev_shm_is_named() -> None:
    """Ray's start-up warning that /dev/shm has only 64 MB (Docker's default), before vLLM's
    tensor-parallel workers crash in ncclShmOpen (vllm#1710); NCCL's own shared-memory failure,
    where the log has it, is the critical finding instead."""
    ray = ("2023-11-18 03:39:16,283 WARNING services.py:1996 -- WARNING: The object store is using "
           "/tmp instead of /dev/shm because /dev/shm has only 67108864 bytes available. This will "
           "harm performance!\n")  # fmt: skip
    assert "dev-shm-small" in _rules_of(ray)
    assert "dev-shm-small" not in _rules_of(ray.replace("has only", "has"))
