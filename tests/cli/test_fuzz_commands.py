"""Every planning command, with odd but well-formed input, ends in 0 or a one-line error (2)."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabriclens.cli.app import run

models = st.sampled_from(["llama-3.1-8b", "mixtral-8x7b", "gpt2", "qwen2.5-7b", "nope"])
gpus = st.sampled_from(["h100-sxm", "a100", "rtx-4090", "l40s", "h900"])
counts = st.sampled_from(["-1", "0", "1", "2", "3", "8", "16"])
networks = st.sampled_from(["1gbe", "ndr-ib", "25gbe,100g-roce", "warp"])
sizes = st.sampled_from(["1GB", "0", "-3GB", "1XB", "64MiB", "1e15"])
rates = st.sampled_from(["850mbit", "0", "fast", "10G"])
times = st.sampled_from(["50ms", "0s", "-1ms", "soon", "2s"])

SETTINGS = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _check(capsys: pytest.CaptureFixture[str], argv: list[str], verdict: bool = False) -> None:
    status = run(argv)
    out, err = capsys.readouterr()
    assert status in ((0, 1, 2) if verdict else (0, 2)), err
    if status == 1:  # search: nothing fits
        assert not any(net["top"] for net in json.loads(out)["networks"])
    if status == 2:
        assert err.count("\n") == 1 and err.startswith("fabriclens: error: "), err


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(gpu=gpus, n=counts, net=networks, top=counts)
def test_search(capsys: pytest.CaptureFixture[str], gpu: str, n: str, net: str, top: str) -> None:
    _check(
        capsys,
        [
            "search",
            "llama-3.1-8b",
            "--gpu",
            gpu,
            "--gpus",
            n,
            "--network",
            net,
            "--top",
            top,
            "--json",
        ],
        verdict=True,
    )


@SETTINGS
@given(
    model=models,
    gpu=gpus,
    users=counts,
    tpot=times,
    net=st.one_of(st.none(), networks),
    tp=st.one_of(st.none(), counts),
)
def test_capacity(
    capsys: pytest.CaptureFixture[str],
    model: str,
    gpu: str,
    users: str,
    tpot: str,
    net: str | None,
    tp: str | None,
) -> None:
    argv = [
        "capacity",
        model,
        "--gpu",
        gpu,
        "--users",
        users,
        "--latency-slo",
        f"tpot={tpot}",
        "--json",
    ]
    argv += ["--network", net] if net else []
    argv += ["--tp", tp] if tp else []
    _check(capsys, argv)


@SETTINGS
@given(
    size=sizes,
    net=networks,
    hosts=counts,
    measured=st.one_of(st.none(), rates),
    proto=st.sampled_from(["tcp", "rdma", "udp"]),
)
def test_transfer(
    capsys: pytest.CaptureFixture[str],
    size: str,
    net: str,
    hosts: str,
    measured: str | None,
    proto: str,
) -> None:
    argv = ["transfer", size, "--link", net, "--hosts", hosts, "--protocol", proto, "--json"]
    argv += ["--measured", measured] if measured else []
    _check(capsys, argv)


@SETTINGS
@given(scenario=st.sampled_from(["personal", "small-cluster", "large-cluster", "moon"]), nodes=counts,
       model=st.one_of(st.none(), models), slack=st.sampled_from(["10%", "0", "150%", "x"]))  # fmt: skip
def test_advise(
    capsys: pytest.CaptureFixture[str], scenario: str, nodes: str, model: str | None, slack: str
) -> None:
    argv = [
        "advise",
        "--scenario",
        scenario,
        "--nodes",
        nodes,
        "--slack",
        slack,
        "--gpus",
        "16",
        "--json",
    ]
    argv = argv[:1] + ([model] if model else []) + argv[1:]
    _check(capsys, argv)


@SETTINGS
@given(
    gpu=gpus,
    n=counts,
    net=networks,
    rate=st.sampled_from(["--images-per-s", "--tokens-per-s"]),
    value=counts,
    bw=st.one_of(st.none(), sizes),
)
def test_datapath(
    capsys: pytest.CaptureFixture[str],
    gpu: str,
    n: str,
    net: str,
    rate: str,
    value: str,
    bw: str | None,
) -> None:
    argv = [
        "datapath",
        "--gpu",
        gpu,
        "--gpus",
        n,
        "--storage-network",
        net.split(",")[0],
        rate,
        value,
        "--json",
    ]
    argv += ["--storage-bw", bw] if bw else []
    _check(capsys, argv)


@SETTINGS
@given(op=st.sampled_from(["all_reduce", "alltoall", "broadcast", "send_recv", "gather"]), size=sizes, ranks=counts,
       gpn=st.one_of(st.none(), counts), net=st.one_of(st.none(), networks), algo=st.sampled_from(["auto", "ring", "nvls", "magic"]))  # fmt: skip
def test_collective(
    capsys: pytest.CaptureFixture[str],
    op: str,
    size: str,
    ranks: str,
    gpn: str | None,
    net: str | None,
    algo: str,
) -> None:
    argv = ["collective", op, size, "--ranks", ranks, "--algo", algo, "--json"]
    argv += ["--gpus-per-node", gpn] if gpn else []
    argv += ["--network", net.split(",")[0]] if net else []
    _check(capsys, argv)


TREE = "tests/fixtures/sysfs-roce-degraded"


def _check_diagnostic(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    status = run(argv)
    err = capsys.readouterr().err
    assert status in (0, 1, 2), err
    if status == 2:
        assert err.count("\n") == 1 and err.startswith("fabriclens: error: "), err


@SETTINGS
@given(
    symptom=st.sampled_from(
        ["training-slow", "nccl-timeout", "inference-slow", "weights-slow", "slow", ""]
    ),
    expect=st.one_of(st.none(), rates, networks),
    weights=st.one_of(st.none(), sizes),
    pings=counts,
    url=st.one_of(
        st.none(),
        st.sampled_from(["http://127.0.0.1:9/x", "ftp://x", "http://", "nope", "http://[::1"]),
    ),
    data=st.one_of(st.none(), st.sampled_from(["{}", "@/nonexistent", "@"])),
)
def test_doctor(
    capsys: pytest.CaptureFixture[str],
    symptom: str,
    expect: str | None,
    weights: str | None,
    pings: str,
    url: str | None,
    data: str | None,
) -> None:
    argv = ["doctor", "--sys-root", TREE, "--symptom", symptom, "--pings", pings, "--json"]
    for flag, value in (
        ("--expect", expect),
        ("--weights", weights),
        ("--url", url),
        ("--data", data),
    ):
        if value is not None:
            argv += [flag, value]
    _check_diagnostic(capsys, argv)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    interval=st.sampled_from(["0", "0.05", "-1", "100", "x"]),
    count=st.sampled_from(["1", "2", "-1"]),
    speed=st.one_of(st.none(), rates),
)
def test_watch(
    capsys: pytest.CaptureFixture[str], interval: str, count: str, speed: str | None
) -> None:
    argv = ["watch", "--sys-root", TREE, "--interval", interval, "--count", count, "--json"]
    _check_diagnostic(capsys, argv + (["--link-speed", speed] if speed else []))
