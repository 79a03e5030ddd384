"""Readings a batch of real logs (tests/fixtures/real/logs 442-466, SOURCES.md) showed missing:
each one here on a line or two of the kind that thread pasted."""

from __future__ import annotations

from fabriclens.diagnose.engine import diagnose, facts
from fabriclens.parse._prefix import unlink_markdown
from fabriclens.parse.nccl_log import parse_nccl_log
from fabriclens.parse.torch_log import TorchLog, add_torch_lines, parse_torch_log


def _rules(text: str) -> list[str]:
    return [f.rule for f in diagnose(parse_nccl_log(text), TorchLog())]


def test_a_plugin_name_of_two_words_is_read_whole() -> None:
    log = parse_nccl_log(
        "n1:1:2 [0] NCCL INFO Channel 05/0 : 0[0] -> 1[1] [receive] via NET/AWS Libfabric/1/GDRDMA\n"
        "n1:1:2 [0] NCCL INFO Channel 00/0 : 8[0] -> 0[0] [send] via NET/Socket/0\n"
        "n1:1:2 [0] NCCL INFO Channel 01/0 : 8[0] -> 0[0] [send] via NET/IB/0(1)/GDRDMA\n"
    )
    assert dict(log.via) == {"NET/AWS Libfabric": 1, "NET/Socket": 1, "NET/IB": 1}
    named = parse_nccl_log("n1:1:2 [0] NCCL INFO Using network AWS Libfabric\n")
    assert named.transport == "AWS Libfabric"
    internal = parse_nccl_log("n1:1:2 [0] NCCL INFO Using internal Network Socket\n")
    assert internal.transport == "Socket"


def test_the_transport_falls_back_to_the_channels() -> None:
    log = parse_nccl_log(
        "n1:1:2 [0] NCCL INFO Channel 00/0 : 8[0] -> 0[0] [send] via NET/Socket/0\n" * 3
        + "n1:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n" * 5
    )
    assert log.transport is None  # no `Using network` line: the rules see none
    assert log.net_transport() == "Socket"
    assert parse_nccl_log("n1:1:2 [0] NCCL INFO Using network IB\n").net_transport() == "IB"


def test_github_autolinks_are_read_as_their_text() -> None:
    line = "> node2:12:13 [0] transport/[net_ib.cc:101](http://net_ib.cc:101/) NCCL WARN NET/IB : x"
    assert unlink_markdown([line]) == [
        "> node2:12:13 [0] transport/net_ib.cc:101 NCCL WARN NET/IB : x"
    ]
    assert unlink_markdown(["[a b](http://x)"]) == ["[a b](http://x)"]  # a space: not an auto-link


def test_ras_mismatch_in_26_wording() -> None:
    for op in ("collective", "AllGather"):
        text = f"  Communicator ranks have different {op} operation counts\n"
        assert facts(parse_nccl_log(text), TorchLog())["ras_mismatch"] == 1


def test_a_failure_unwound_without_a_warn() -> None:
    text = "h:1:2 [2] NCCL INFO graph/paths.cc:312 -> 3\nh:1:2 [2] NCCL INFO init.cc:778 -> 3\n"
    found = diagnose(parse_nccl_log(text), TorchLog())
    assert [f.rule for f in found] == ["nccl-error-trace-only"]
    assert found[0].evidence[0].endswith("[3: ncclInternalError]")
    assert "paths.cc:312" in found[0].evidence[0]  # the first trace line: where it was returned
    # with a WARN the failure is that WARN's, not the bare trace's
    warned = "h:1:2 [2] misc/socket.cc:1 NCCL WARN Net : Connection closed by remote peer h2<1>\n"
    assert "nccl-error-trace-only" not in _rules(warned + text)


def test_argument_check_names_the_communicator() -> None:
    one_rank = "h:1:2 [1] misc/argcheck.cc:39 NCCL WARN Send : invalid root 3 (root should be in the 0..0 range)\n"
    aborted = "h:1:2 [0] misc/argcheck.cc:39 NCCL WARN AllGather : invalid root 0 (root should be in the 0..-1 range)\n"
    assert "nccl-argcheck-root" in _rules(one_rank)
    assert "nccl-argcheck-no-ranks" not in _rules(one_rank)
    assert "nccl-argcheck-no-ranks" in _rules(aborted)
    assert "nccl-argcheck-root" not in _rules(aborted)


def test_a_consequence_is_listed_after_its_cause() -> None:
    text = (
        "h:1:2 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer h-ib<51159>\n"
        "h:1:3 [3] include/alloc.h:178 NCCL WARN Cuda failure 'out of memory'\n"
    )
    rules = _rules(text)
    assert rules.index("cuda-out-of-memory") < rules.index("socket-peer-gone")


def test_ofi_and_slingshot_failures() -> None:
    assert "ofi-av-open-failed" in _rules(
        "WARN: Function: create_nccl_ofi_component Line: 459: NET/OFI Couldn't open AV. RC: -22, ERROR: Invalid argument\n"
        "[ 1632.4] infiniband efa_0: Failed to process command ALLOC_PD (opcode 14) comp_status 1 err -12\n"
    )
    assert "cxi-no-vni" in _rules(
        "libfabric:1:2::cxi:fabric:cxip_nic_get_rgroup_vni():253<warn> : Failed to find valid default rgroup and vni for cxi0\n"
    )
    assert "ofi-protocol-error" in _rules(
        "get_req_from_imm_data:1411 NCCL WARN NET/OFI Unexpected status (0) for message 246\n"
    )
    assert "ofi-completion-error" in _rules(
        "h:1:2 [0] process_err_completion:1723 NCCL WARN NET/OFI Operation with NULL context completed with error\n"
    )
    assert "rccl-ipc-handle-failed" in _rules(
        "h:1:2 [2] p2p.cc:256 NCCL WARN hipIpcGetMemHandle failed : invalid argument\n"
    )


def test_a_watchdog_line_wrapped_inside_a_word_is_joined() -> None:
    lines = [
        "[rank3]:[E424 01:11:21.16 ProcessGroupNCCL.cpp:629] [Rank 3] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=4, OpTy",
        "pe=BROADCAST, NumelIn=112, NumelOut=112, Timeout(ms)=1800000) ran for 1800011 milliseconds",
        "[rank2]:[E424 01:11:21.16 ProcessGroupNCCL.cpp:629] [Rank 2] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=4, OpType=BROADCAST, NumelIn=112, NumelOut=112, "
        "Timeout(ms)=1800000) ran for 1800010 milliseconds before timing out.",
    ]
    log = TorchLog()
    add_torch_lines(log, lines)
    want = [(3, "BROADCAST", 4, 1800.0), (2, "BROADCAST", 4, 1800.0)]
    assert [(t.rank, t.op, t.seq, t.timeout_s) for t in log.timeouts] == want
    # the text reader (`doctor --from`'s) reads it alike
    text = parse_torch_log("\n".join(lines))
    assert [(t.rank, t.op, t.seq, t.timeout_s) for t in text.timeouts] == want


def test_every_text_reader_reads_links_as_their_text() -> None:
    line = "> node2:12:13 [0] transport/[net_ib.cc:101](http://net_ib.cc:101/) NCCL WARN NET/IB : x"
    assert parse_nccl_log(line + "\n").hosts == ["node2"]


def test_a_second_batch_of_readings() -> None:
    """From the seventy-third batch (467-488): each on the line its thread pasted."""
    flap = (
        "n48:1:2 [0] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : port error\n"
        "n51:3:4 [4] transport/net_ib.cc:1238 NCCL WARN NET/IB : Got completion from peer "
        "n48<37948> with error 12, opcode 2, len 1, vendor err 129\n"
    )
    rules = _rules(flap)
    assert rules.index("ib-port-flap") < rules.index("ib-retry-exceeded")  # the cause first
    assert "ib-hca-catastrophic" in _rules(
        "c:815:864 [0] transport/net_ib.cu:80 NCCL WARN NET/IB : Got async event : local catastrophic error\n"
    )
    msccl = "h:1:2 [7] include/msccl/msccl_parser.h:70 NCCL WARN Attribute minBytes of node algo not found\n"
    assert "msccl-xml-invalid" in _rules(msccl)
    assert "topology-xml-invalid" not in _rules(msccl)
    for line in (
        "/x/src/modules/transport/ibrc/ibrc.cpp:418: non-zero status: 110 ibv_modify_qp failed\n",
        "/x/ibgda.cpp:3005: non-zero status: 7 ibgda_rc_init2rtr failed on RC #0.\n",
        "/x/ibgda.cpp:2234: NULL value Unable to create ah.\n",
    ):
        assert "nvshmem-ib-connect-failed" in _rules(line), line
    assert "nvshmem-ibgda-not-mlx5" in _rules(
        "WARN: device erdma_0 is not enumerated as an mlx5 device. Skipping...\n"
    )
    for line in (
        "RendezvousConnectionError: The connection to the C10d store has failed. See inner exception\n",
        '  File "/x/torch/distributed/elastic/rendezvous/c10d_rendezvous_backend.py", line 155, in _create_tcp_store\n',
    ):
        assert "rendezvous-store-unreachable" in _rules(line), line
    # a communicator's teardown: a local rank leaving its proxy, not a peer gone
    teardown = "g:1:2 [2] NCCL INFO [Service thread] Connection closed by localRank 2\n"
    assert "socket-peer-gone" not in _rules(teardown)


def test_aws_ofi_nccl_failing_falls_back_to_sockets_and_needs_no_ib() -> None:
    """aws/aws-ofi-nccl#715 (corpus 565): the CQ not opened, the plugin failed as a whole, NCCL
    on sockets; NCCL_IB_DISABLE=1 is what EFA jobs set, so it is no finding there."""
    plugin = "h:1:2 [5] NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.11.0-aws\n"
    failed = (
        "h:1:2 [5] nccl_ofi_ofiutils_init_connection:274 NCCL WARN NET/OFI Couldn't open CQ. RC: -22, ERROR: Invalid argument\n"
        "h:1:2 [5] nccl_net_ofi_create_plugin:259 NCCL WARN NET/OFI aws-ofi-nccl initialization failed\n"
        "h:1:2 [5] NCCL INFO NCCL_IB_DISABLE set by environment to 1.\n"
        "h:1:2 [5] NCCL INFO Using network Socket\n"
    )
    rules = _rules(plugin + failed)
    assert rules[:2] == ["ofi-cq-open-failed", "ofi-init-failed-fallback"]
    assert "ib-disabled-by-env" not in rules
    assert "ib-disabled-by-env" in _rules(failed.splitlines(keepends=True)[2])  # no plugin


def test_a_client_reregistration_event_is_the_subnet_manager() -> None:
    """deepspeedai/DeepSpeedExamples#310 (corpus 570)."""
    rules = _rules(
        "gpu1:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 8 cudaDev 0 busId 4f000 - Init COMPLETE\n"
        "gpu1:1:3 [0] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : client reregistration\n"
    )
    assert rules[0] == "ib-client-reregister"
    assert "nccl-warnings" not in rules


def test_an_unexplained_failure_is_not_hidden_by_the_transport_it_set_up() -> None:
    """NVIDIA/nccl#1647 (corpus 572): trace lines unwinding a CUDA error, no WARN, NCCL on
    sockets: the failure is said (the set-up warnings describe, they do not explain), and "no
    failure" is not."""
    rules = _rules(
        "h:1:1 [0] NCCL INFO Failed to open libibverbs.so[.1]\n"
        "h:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n"
        "h:1:1 [0] NCCL INFO Using network Socket\n"
        "h:1:1 [0] NCCL INFO ncclCommInitRank comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1901000 - Init START\n"
        "h:1:92 [0] NCCL INFO transport/p2p.cc:352 -> 1\n"
        "h:1:92 [0] NCCL INFO transport.cc:197 -> 1\n"
    )
    assert rules[0] == "nccl-error-trace-only"
    assert {"nccl-socket", "libibverbs-missing"} <= set(rules)
    assert "setup-stalled-no-failure" not in rules


def test_rccls_mscclpp_notice_is_no_warning() -> None:
    """ROCm/rccl-tests#163 (corpus 566): a healthy MI50 init."""
    rules = _rules(
        "z:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 4 cudaDev 0 busId 3000 - Init START\n"
        "z:1:2 [0] NCCL WARN MSCCL++: Cannot enable MSCCL++; environment is not MSCCL compatible\n"
        "z:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 4 cudaDev 0 busId 3000 - Init COMPLETE\n"
    )
    assert "nccl-warnings" not in rules
    assert "setup-done-no-failure" in rules
