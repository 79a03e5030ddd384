"""nccl-tests output: the shared sample, real variants, garbage; and the judgement."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import FIXTURES
from fabriclens.errors import InputError
from fabriclens.parse.nccl_tests import NcclTestsRun, parse_nccl_tests
from fabriclens.plan.expect import flags, gpu_from_name, judge, plateau

SAMPLE = FIXTURES / "samples" / "nccl-tests-allreduce.txt"


def test_shared_sample() -> None:
    run = parse_nccl_tests(SAMPLE.read_text())
    assert run.op == "all_reduce"
    assert len(run.rows) == 1
    row = run.rows[0]
    assert (row.size_bytes, row.count, row.dtype) == (133169160, 33292290, "float")
    assert (row.busbw_GBps, row.inplace_busbw_GBps, row.wrong) == (95.74, 95.94, 0)
    assert run.avg_busbw_GBps == pytest.approx(84.8558)


def test_rank_lines_give_world_hosts_and_gpu() -> None:
    run = parse_nccl_tests((FIXTURES / "nccl-tests-h200-8gpu.txt").read_text())
    assert run.world_size == 8 and run.hosts == ["gpu49"] and run.gpu_names == ["NVIDIA H200"]
    assert len(run.rows) == 5
    assert plateau(run) == (4294967296, pytest.approx(475.39))


VARIANTS = {
    "mpirun --tag-output": "[1,0]<stdout>:   8388608       2097152     float     sum      -1    120.5   69.61  121.82      0    119.8   70.02  122.54      0",
    "srun -l": "0:   8388608       2097152     float     sum      -1    120.5   69.61  121.82      0    119.8   70.02  122.54      0",
    "old layout, no redop/root": "     8388608       2097152     float    120.5   69.61  121.82  0e+00    119.8   70.02  122.54  0e+00",
    "N/A in #wrong": "     8388608       2097152     float     sum      -1    120.5   69.61  121.82    N/A    119.8   70.02  122.54    N/A",
    "all_gather (none, root)": "     8388608        262144     float    none      -1    120.5   69.61   60.91      0    119.8   70.02   61.27      0",
    "out-of-place only": "     8388608       2097152     float     sum      -1    120.5   69.61  121.82      0",
}


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_real_variants(name: str) -> None:
    run = parse_nccl_tests(VARIANTS[name])
    assert len(run.rows) == 1, name
    row = run.rows[0]
    assert row.size_bytes == 8388608 and row.time_us == pytest.approx(120.5)
    assert row.algbw_GBps == pytest.approx(69.61)
    if name == "N/A in #wrong":
        assert row.wrong is None
    if name == "out-of-place only":
        assert row.inplace_busbw_GBps is None


@given(st.text(max_size=400))
def test_garbage_never_crashes(text: str) -> None:
    run = parse_nccl_tests(text)
    assert run.unparsed_lines >= 0


def test_op_inferred_from_the_bus_factor() -> None:
    from fabriclens.plan.expect import infer_op

    run = parse_nccl_tests((FIXTURES / "nccl-tests-h200-8gpu.txt").read_text())
    assert run.op is None and infer_op(run, 8) == "all_reduce"
    # all_gather and alltoall print alike rows (`none -1`, the same count and factor): neither is
    # guessed (tests/fixtures/real/nccl-tests/044, an alltoall, was called all_gather)
    gather = parse_nccl_tests(VARIANTS["all_gather (none, root)"])
    assert infer_op(gather, 8) is None
    with pytest.raises(InputError, match="all_gather and alltoall print alike rows"):
        judge(gather, gpu="h100-sxm", ranks=8)
    assert judge(gather, gpu="h100-sxm", ranks=8, op="alltoall").op == "all_to_all"


def _rows(redop: str, root: int, factor: float, ranks_text: str = "") -> NcclTestsRun:
    """A headerless sweep to 1 GiB whose rows print ``redop root`` and busbw = algbw x factor."""
    lines = [
        f"{s:>12} {s // 4:>12} float {redop} {root} 1000.0 {s / 1e6:.2f} {s / 1e6 * factor:.2f} 0"
        f" 1000.0 {s / 1e6:.2f} {s / 1e6 * factor:.2f} 0"
        for s in (1 << 28, 1 << 29, 1 << 30)
    ]
    return parse_nccl_tests(ranks_text + "\n".join(lines) + "\n")


def test_rooted_ops_and_sendrecv_are_told_by_the_root_column() -> None:
    """nccl-tests prints a root rank for broadcast, reduce, gather and scatter and -1 for the
    rest; reduce also names its reduction. sendrecv prints `sum -1` with busbw = algbw
    (tests/fixtures/real/nccl-tests/050, which was not judged for want of its op)."""
    from fabriclens.plan.expect import infer_op

    assert infer_op(_rows("sum", 0, 1.0), 0) == "reduce"  # whatever the rank count
    assert infer_op(_rows("none", 0, 1.0), 8) == "broadcast"
    assert infer_op(_rows("sum", -1, 1.0), 8) == "send_recv"
    assert infer_op(_rows("sum", -1, 1.0), 2) == "all_reduce"  # 2(n-1)/n is 1 on two ranks
    assert infer_op(_rows("sum", -1, 7 / 8), 8) == "reduce_scatter"
    gathered = _rows("none", 0, 7 / 8)
    assert infer_op(gathered, 8) is None
    with pytest.raises(InputError, match="gather and scatter print alike rows"):
        judge(gathered, gpu="h100-sxm", ranks=8)
    verdict = judge(gathered, gpu="h100-sxm", ranks=8, op="gather")
    assert verdict.op == "gather" and verdict.expected_busbw_GBps > 0


@pytest.mark.parametrize("line,op", [
    ("#AllReduce RCCL Test", "all_reduce"),  # rccl-tests' banner (real/nccl-tests/055)
    ("# Collective test starting: reduce_scatter_perf", "reduce_scatter"),
    ("#AllGather test", "all_gather"),
    ("# Reducing maxBytes to 11453246122 due to memory limitation", None),
])  # fmt: skip
def test_op_words_are_whole_words_in_every_spelling(line: str, op: str | None) -> None:
    assert parse_nccl_tests(line + "\n").op == op


def test_gpu_names() -> None:
    assert gpu_from_name("NVIDIA H200").name == "h200"  # type: ignore[union-attr]
    assert gpu_from_name("NVIDIA A100-SXM4-80GB").name == "a100-sxm-80gb"  # type: ignore[union-attr]
    assert gpu_from_name("NVIDIA H100 80GB HBM3").name == "h100-sxm"  # type: ignore[union-attr]
    assert gpu_from_name("Tesla V100") is None


def test_judge_nvls_run_is_ok() -> None:
    verdict = judge(parse_nccl_tests((FIXTURES / "nccl-tests-h200-8gpu.txt").read_text()))
    assert verdict.level == "ok" and verdict.efficiency == pytest.approx(
        475.39 / verdict.expected_busbw_GBps
    )


def test_judge_flags_a_slow_multi_node_run_with_next_checks() -> None:
    """3 nodes x 8 A100, 4 HDR NICs: the published 95.9 GB/s is fine; a third of it is not."""
    slow = SAMPLE.read_text().replace("95.74", "31.00").replace("95.94", "31.50")
    verdict = judge(
        parse_nccl_tests(slow),
        ranks=24,
        gpu="a100-sxm-40gb",
        gpus_per_node=8,
        network="hdr-ib",
        nics_per_node=4,
    )
    assert verdict.level == "critical"
    assert any("NET/Socket" in c for c in verdict.next_checks)


def test_judge_needs_what_the_log_lacks(tmp_path: Path) -> None:
    run = parse_nccl_tests(SAMPLE.read_text())
    with pytest.raises(InputError, match="which GPU"):
        judge(run)
    # no rank list: busbw/algbw = 2(n-1)/n gives the rank count (3 nodes x 8 GPUs in the source)
    verdict = judge(run, gpu="a100-sxm-80gb", gpus_per_node=8)
    assert verdict.ranks == 24 and any("2(n-1)/n" in a for a in verdict.assumptions)
    with pytest.raises(InputError, match="no result rows"):
        judge(parse_nccl_tests("# all_reduce_perf\nnothing here"), ranks=8, gpu="h100-sxm")


def test_a_file_of_endless_runs_keeps_max_rows_and_counts_the_rest() -> None:
    """Thousands of runs pasted into one file: the first MAX_ROWS result rows are kept, the
    rest counted and flagged, so memory stays bounded (a 200 MB file had needed 2.5 GB)."""
    from fabriclens.parse.nccl_tests import MAX_ROWS
    from fabriclens.plan.expect import flags

    one = (FIXTURES / "nccl-tests-h200-8gpu.txt").read_text()
    runs = MAX_ROWS // max(1, len(parse_nccl_tests(one).rows)) + 2
    run = parse_nccl_tests(one * runs)
    assert len(run.rows) == MAX_ROWS and run.dropped_rows > 0
    assert "rows-not-read" in [f[0] for f in flags(run)]


def test_two_nvls_nodes_are_judged_against_the_ring_bound() -> None:
    """2 x 8 H100 over 8 x NDR: NCCL's default there is NVLSTree, beyond the network bound, but a
    run forced to the ring (as NCCL's staff advise for measuring the network, nccl-tests#290)
    reaches the ring's ~340 GB/s and is healthy; the verdict says what NVLSTree would reach. A
    NVLSTree run (~480 GB/s) reads above 100% with the two-node explanation."""
    kw = {
        "ranks": 16,
        "gpu": "h100-sxm",
        "gpus_per_node": 8,
        "network": "ndr-ib",
        "nics_per_node": 8,
    }
    ring = SAMPLE.read_text().replace("95.74", "340.10").replace("95.94", "341.00")
    verdict = judge(parse_nccl_tests(ring), **kw)  # type: ignore[arg-type]
    assert verdict.level == "ok", verdict
    assert any("NVLSTree" in a for a in verdict.assumptions)
    tree = SAMPLE.read_text().replace("95.74", "480.10").replace("95.94", "481.00")
    verdict = judge(parse_nccl_tests(tree), **kw)  # type: ignore[arg-type]
    assert verdict.level == "ok" and "NCCL's tree" in verdict.verdict


def test_rank_tags_inside_rows_and_diff_markers_are_read() -> None:
    """A launcher's `[0]` tag before every chunk of output, so also inside a row (nccl#1453), and
    a diff's `+` before each row (a table pasted from a README change)."""
    from fabriclens.parse.nccl_tests import parse_nccl_tests

    tagged = parse_nccl_tests(
        "[0]     33554432       8388608     float     sum      -1[0]    2180.1   15.39   29.50      0"
        "[0]    2285.2   14.68   28.14      0\n"
    )
    assert [(r.size_bytes, r.busbw_GBps, r.inplace_busbw_GBps) for r in tagged.rows] == [
        (33554432, 29.5, 28.14)
    ]
    diff = parse_nccl_tests(
        "+  2147483648     536870912     float     sum      -1    45662   47.03   88.18    N/A"
        "   45522   47.17   88.45    N/A\n"
    )
    assert [(r.size_bytes, r.busbw_GBps) for r in diff.rows] == [(2147483648, 88.18)]


def _sweep(busbws: list[float], first: int, redop: str) -> NcclTestsRun:
    """A doubling sweep from ``first`` bytes whose rows carry these busbw figures."""
    rows = "".join(
        f"{first << i:>12} {(first << i) // 4:>12} float {redop} -1 100.0 1.0 {b:.2f} 0"
        f" 100.0 1.0 {b:.2f} 0\n"
        for i, b in enumerate(busbws)
    )
    return parse_nccl_tests(rows)


def test_a_busbw_collapse_is_flagged_and_a_single_slow_row_is_not() -> None:
    from fabriclens.plan.expect import busbw_collapse

    def run(busbws: list[float]) -> NcclTestsRun:
        return _sweep(busbws, 1 << 20, "sum")

    assert busbw_collapse(run([10, 20, 30, 5, 5, 5])) == ((4 << 20, 30.0), (8 << 20, 5.0))
    assert busbw_collapse(run([10, 20, 30, 31, 5, 31])) is None  # one slow row: an outlier
    assert busbw_collapse(run([10, 20, 30, 29, 30, 31])) is None  # a healthy plateau


def test_a_mid_sweep_dip_that_recovers_is_flagged() -> None:
    """busbw that falls to a fraction at some middle sizes and climbs back (ROCm/rccl#1490: 0.03
    GB/s at 2-8 MiB between 1.26 below and 92 above) is a stall of those sizes; one slow row and
    a fall that never recovers (busbw_collapse's) are not dips."""
    from fabriclens.plan.expect import busbw_dip, flags

    def run(busbws: list[float]) -> NcclTestsRun:
        return _sweep(busbws, 1 << 16, "none")

    dipped = run([0.6, 1.2, 0.7, 0.03, 0.06, 15.0, 27.0, 92.0])
    assert busbw_dip(dipped) == ((1 << 19, 1 << 20, 0.03), 1.2, 92.0)
    assert "busbw-dip" in {f[0] for f in flags(dipped)}
    assert busbw_dip(run([0.6, 1.2, 0.05, 2.0, 15.0])) is None  # one slow row
    assert busbw_dip(run([10, 20, 30, 2, 2, 2])) is None  # never recovers: a collapse
    assert busbw_dip(run([1, 2, 4, 8, 16])) is None


def test_one_gpu_twice_needs_the_same_device_not_only_the_same_bus_number() -> None:
    """nccl-tests prints the PCI bus number alone: p4d's GPUs come in pairs on one bus
    (devices 0 and 1 both [0x10]), which is two GPUs; the same device and bus twice is one."""
    from fabriclens.plan.expect import flags

    head = "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20\n"
    pair = (head + "#  Rank  0 Group  0 Pid 1 on n1 device  0 [0x10] A100\n"
            "#  Rank  1 Group  0 Pid 2 on n1 device  1 [0x10] A100\n" + ROWS)  # fmt: skip
    same = (head + "#  Rank  0 Group  0 Pid 1 on n1 device  0 [0x10] A100\n"
            "#  Rank  1 Group  0 Pid 2 on n1 device  0 [0x10] A100\n" + ROWS)  # fmt: skip
    assert "same-device-twice" not in {f[0] for f in flags(parse_nccl_tests(pair))}
    assert "same-device-twice" in {f[0] for f in flags(parse_nccl_tests(same))}


ROWS = """#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
  1073741824     268435456     float     sum      -1   5000.0  214.75  426.49      0   5000.0  214.75  426.49      0
  2147483648     536870912     float     sum      -1  10000.0  214.75  426.49      0  10000.0  214.75  426.49      0
"""


def test_a_partial_rank_list_counts_the_ranks_its_numbers_imply() -> None:
    """coreweave/nccl-tests' GB200 paste keeps only `#  Rank 143 ...`: 144 ranks ran, and the one
    host listed is not the run's hosts, so GPUs per node are not read from it."""
    run = parse_nccl_tests(
        "#  Rank 143 Group  0 Pid  14840 on slurm-gb200-207-171 device  3 [0x01] NVIDIA H100 80GB HBM3\n"
        + ROWS
    )
    assert run.world_size == 144 and not run.header_complete
    verdict = judge(run)
    assert verdict.ranks == 144 and verdict.gpus_per_node == 8  # the GPU's usual node, not 144
    assert any("lists 1 of its 144 ranks" in a for a in verdict.assumptions)
    full = parse_nccl_tests(
        "".join(
            f"#  Rank {r} Group  0 Pid  1 on host{r // 8} device  {r % 8} [0x01] NVIDIA H100 80GB HBM3\n"
            for r in range(16)
        )
        + ROWS
    )
    assert full.world_size == 16 and full.header_complete and full.hosts == ["host0", "host1"]


def test_rccl_version_and_the_pasted_network_are_read() -> None:
    """rccl-tests print `RCCL version : 2.22.3-HEAD:...`; a paste with NCCL's INFO lines names its
    network plugin, and EFA (aws-ofi-nccl) is not judged against the default InfiniBand."""
    assert (
        parse_nccl_tests("RCCL version : 2.22.3-HEAD:7d8d67c\n" + ROWS).version
        == "RCCL 2.22.3-HEAD:7d8d67c"
    )
    efa = parse_nccl_tests(
        "#  Rank  0 Group  0 Pid     21 on w0 device  0 [0x35] Tesla T4\n"
        "#  Rank  1 Group  0 Pid     21 on w1 device  0 [0xf5] Tesla T4\n"
        "w0:21:21 [0] NCCL INFO Using network AWS Libfabric\n" + ROWS
    )
    assert efa.transport == "AWS Libfabric"
    with pytest.raises(InputError, match="AWS EFA"):
        judge(efa)
    assert (
        judge(efa, network="aws-efa-p4d", nics_per_node=1, ranks=2).network == "aws-efa-p4d"
    )  # given: judged
    sock = parse_nccl_tests(
        ROWS.replace("#       size", "h:1:1 [0] NCCL INFO Using network Socket\n#       size")
    )
    verdict = judge(sock, ranks=16, gpu="h100-sxm", gpus_per_node=8)
    assert any("NET/Socket" in a for a in verdict.assumptions)


def test_the_rank_count_the_bus_factor_implies() -> None:
    """A complete-looking rank list that the bus factor contradicts was cut (nccl-tests#322 kept
    ranks 0-99 of 1,024): not judged, and said so; without a rank list an all_gather's (n-1)/n
    gives n; NCCL's tuning table (`Broadcast | ...`) does not name the op."""
    from fabriclens.plan.expect import factor_disagrees, ranks_from_factor

    head = "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20\n"
    ranks = "".join(
        f"#  Rank {r:3d} Group  0 Pid {r} on n{r // 8} device {r % 8} [0x{r:02x}] H100\n"
        for r in range(100)
    )
    row = "  17179869184  4294967296  float  sum  -1  93460  183.83  367.29  0  93500  183.74  367.12  0\n"
    cut = parse_nccl_tests(head + ranks + ROWS.splitlines()[0] + "\n" + row)
    assert factor_disagrees(cut, "all_reduce", 100) is not None
    with pytest.raises(InputError, match="the list was cut"):
        judge(cut, gpu="h100-sxm")
    two = "  1073741824  268435456  float  sum  -1  5000.0  214.75  214.75  0  5000.0  214.75  214.75  0\n"
    assert factor_disagrees(parse_nccl_tests(two), "all_reduce", 2) is None
    assert factor_disagrees(parse_nccl_tests(two), "all_reduce", 8) is None  # fewer, not cut
    gather = parse_nccl_tests(
        "  1073741824  33554432  float  none  -1  5000.0  214.75  187.91  0  5000.0  214.75  187.91  0\n"
    )
    assert ranks_from_factor(gather, "all_gather") == 8
    assert judge(gather, gpu="h100-sxm", op="all_gather").ranks == 8
    tuning = (
        "    Broadcast |        1         2         1   |             0              1\n" + ROWS
    )
    assert parse_nccl_tests(tuning).op is None


def test_a_paste_judged_once_it_is_told_what_it_does_not_say() -> None:
    """tests/fixtures/real/nccl-tests/073: eight RTX PRO 6000 Blackwell on one 100G EFA each
    (the author: 12.37 GB/s is about 100% of EFA's 12.5). The paste names its GPU but not which
    EFA; told, it is judged healthy."""
    paste = Path(__file__).parents[1] / "fixtures/real/nccl-tests"
    run = parse_nccl_tests(next(paste.glob("073-*.txt")).read_text())
    verdict = judge(run, network="aws-efa-p4d", nics_per_node=1)
    assert verdict.gpu == "rtx-pro-6000-blackwell" and verdict.level == "ok"
    assert 0.9 <= verdict.efficiency <= 1.25


def test_slingshot_pastes_judged_once_told_the_network() -> None:
    """tests/fixtures/real/nccl-tests/074-075: two GH200 nodes on HPE Slingshot 11 (CSCS Alps).
    The pastes name no network; told, the healthy run is healthy and the run without the
    container's network hook (NCCL over sockets) critical, as CSCS's page says."""
    paste = Path(__file__).parents[1] / "fixtures/real/nccl-tests"
    good, bad = (
        parse_nccl_tests(next(paste.glob(f"{n}-*.txt")).read_text()) for n in ("074", "075")
    )
    assert judge(good, network="slingshot-11").level == "ok"
    assert judge(bad, network="slingshot-11").level == "critical"


def test_rows_no_run_prints_are_left_out_and_flagged() -> None:
    """A negative time or bandwidth, or a bus bandwidth of 100 TB/s or more, is an edited or
    corrupted table: the row is counted and left out, never judged as the plateau."""
    good = "  1073741824 268435456 float sum -1 5000.0 214.75 375.81 0 5001.0 214.71 375.74 0"
    text = "\n".join(
        [
            "   536870912 134217728 float sum -1 -5.00 -1.00 -1.00 0 2600.0 206.5 361.3 0",
            good,
            "  2147483648 536870912 float sum -1 1e-300 1e300 1e300 0 1e-300 1e300 1e300 0",
        ]
    )
    run = parse_nccl_tests(text)
    assert [r.size_bytes for r in run.rows] == [1 << 30] and run.implausible_rows == 2
    assert "implausible-rows" in {flag_id for flag_id, _, _ in flags(run)}
    verdict = judge(
        run, gpu="h100-sxm", ranks=16, gpus_per_node=8, network="ndr-ib", op="all_reduce"
    )
    assert verdict.plateau_busbw_GBps == pytest.approx(375.81)


def test_one_ranks_in_place_no_op_is_kept() -> None:
    """One rank's in-place call is a no-op that real runs print at millions of GB/s algbw (an
    EKS A10G run, tests/fixtures/real/nccl-tests/056): every row stays."""
    path = (
        FIXTURES
        / "real"
        / "nccl-tests"
        / "056-a10g-g5-eks-kubeflow-tag-output-efa-single-rank-nccl-info.txt"
    )
    run = parse_nccl_tests(path.read_text())
    assert len(run.rows) == 32 and run.implausible_rows == 0
