"""End to end: bring labs up, verify each impairment with real traffic, leave nothing behind."""

from __future__ import annotations

import ipaddress
import json
import math
import re
import statistics
import subprocess
import time

import pytest

from fabriclens.cli.app import run
from fabriclens.lab import Lab, LinkSpec, down_all, lab_session, leftovers
from fabriclens.lab.lab import STATE_DIR, down_name

MSS_OVER_FRAME = (
    1448 / 1514
)  # TCP payload per Ethernet frame that tbf counts (1500 MTU, timestamps)


def _root_links() -> set[str]:
    out = subprocess.run(
        ["ip", "-j", "link", "show"], capture_output=True, text=True, timeout=10, check=True
    )
    return {link["ifname"] for link in json.loads(out.stdout)}


def _ping(
    lab: Lab,
    src: str,
    dst: str,
    count: int,
    interval: float = 0.01,
    size: int = 56,
    extra: tuple[str, ...] = (),
):
    """(transmitted, received, median_ms, mdev_ms) of a ping run inside the lab. The median of the
    probes' round trips, not ping's mean: on a shared 2-core VM the host's scheduler now and then
    holds one probe for milliseconds, which moves the mean but says nothing about the lab."""
    argv = [
        "ping",
        "-n",
        "-c",
        str(count),
        "-i",
        str(interval),
        "-s",
        str(size),
        "-W",
        "1",
        *extra,
        lab.host(dst).address,
    ]
    result = lab.run(src, argv, timeout_s=60)
    sent = re.search(r"(\d+) packets transmitted, (\d+) received", result.stdout)
    assert sent, result.stdout + result.stderr
    rtt = re.search(r"= ([\d.]+)/([\d.]+)/([\d.]+)/([\d.]+) ms", result.stdout)
    times = [float(t) for t in re.findall(r"time=([\d.]+) ms", result.stdout)]
    median = statistics.median(times) if times else math.nan
    return int(sent.group(1)), int(sent.group(2)), median, float(rtt.group(4)) if rtt else math.nan


def _iperf3(lab: Lab, client: str, server: str, seconds: int = 3) -> float:
    srv = lab.popen(
        server, ["iperf3", "-s", "-1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        for _ in range(50):  # wait for the server socket
            if lab.run(server, ["ss", "-ltn", "sport", "= :5201"]).stdout.count("LISTEN"):
                break
            time.sleep(0.05)
        res = lab.run(client, ["iperf3", "-c", lab.host(server).address, "-t", str(seconds), "-O", "1", "-J"],
                      timeout_s=seconds + 30)  # fmt: skip
        assert res.ok, res.stderr
        return float(json.loads(res.stdout)["end"]["sum_received"]["bits_per_second"])
    finally:
        srv.wait(timeout=10)


def test_up_status_down_touches_nothing_else() -> None:
    before = _root_links()
    lab = Lab.up("t", hosts=3)
    try:
        doc = lab.to_json()
        assert [h["name"] for h in doc["hosts"]] == ["h1", "h2", "h3"]
        for h in doc["hosts"]:
            assert ipaddress.ip_address(h["address"]) in ipaddress.ip_network("198.18.0.0/15")
            assert h["netns"].startswith("fl-t-")
        assert doc["impairment"] in ("netem", "userspace")
        assert _root_links() == before  # nothing was added to the host's own namespace
        assert Lab.load("t").to_json() == doc
        sent, got, _, _ = _ping(lab, "h1", "h3", 5)
        assert got == sent == 5
    finally:
        lab.down()
    assert _root_links() == before


def test_bandwidth_cap_measured_with_iperf3(quietly) -> None:  # type: ignore[no-untyped-def]
    """100 Mbit/s: TCP goodput within 5% of what a real wire gives (rate x 1448/1538)."""
    with lab_session("bw", hosts=2, link=LinkSpec(bandwidth_bits_per_s=100e6)) as lab:
        expected = 100e6 * MSS_OVER_FRAME
        got, stolen = quietly(
            lambda: _iperf3(lab, "h1", "h2"), lambda g: abs(g / expected - 1) <= 0.05
        )
    # a host that steals CPU can slow the sender by that share; it cannot make a cap leak
    assert 1 - 0.05 - stolen <= got / expected <= 1.05, (
        f"{got / 1e6:.1f} Mbit/s vs {expected / 1e6:.1f}"
    )


def test_delay_measured_with_ping(quietly) -> None:  # type: ignore[no-untyped-def]
    """5 ms on h2's link (each direction) -> RTT h1<->h2 = 10 ms, within 0.3 ms + 5%."""
    with lab_session("dly", hosts=2, overrides={"h2": {"delay": "5ms"}}) as lab:
        _ping(lab, "h1", "h2", 2)  # ARP and warm-up
        (sent, got, rtt, _), _ = quietly(lambda: _ping(lab, "h1", "h2", 50),
                                             lambda r: abs(r[2] - 10.0) <= 0.3 + 0.05 * 10.0)  # fmt: skip
    assert got == sent
    assert abs(rtt - 10.0) <= 0.3 + 0.05 * 10.0, rtt


def test_loss_measured_with_ping() -> None:
    """10% per direction on h2's link -> an echo is lost with 1 - 0.9^2 = 19%; 2,000 probes
    must land inside the binomial 99.99% interval (the benchmark reports the 99% one; a test
    that fails 1 run in 100 by chance would make CI flaky)."""
    p_link = 0.10
    p = 1 - (1 - p_link) ** 2
    n = 2000
    with lab_session("loss", hosts=2, overrides={"h2": {"loss": f"{p_link * 100}%"}}) as lab:
        _ping(lab, "h1", "h2", 3)
        sent, got, _, _ = _ping(lab, "h1", "h2", n, interval=0.002)
    lost = sent - got
    half_width = 3.891 * math.sqrt(n * p * (1 - p))
    assert abs(lost - n * p) <= half_width, (
        f"lost {lost} of {n}, expected {n * p:.0f} ± {half_width:.0f}"
    )


def test_jitter_spreads_rtt_but_keeps_order(quietly) -> None:  # type: ignore[no-untyped-def]
    with lab_session("jit", hosts=2, overrides={"h2": {"delay": "5ms", "jitter": "2ms"}}) as lab:
        _ping(lab, "h1", "h2", 2)
        # a lost echo is measured again too: one CI run lost 1 probe of 100 once (cause not
        # found; the stage shares two cores with the test run), and a stage that drops probes
        # drops them in every try
        (_, got, rtt, mdev), _ = quietly(
            lambda: _ping(lab, "h1", "h2", 100), lambda r: r[1] == 100 and abs(r[2] - 10.0) <= 1.0
        )
    assert got == 100
    assert mdev > 0.5  # uniform +/-2 ms on two traversals: sd ~1.6 ms
    assert abs(rtt - 10.0) <= 1.0


def test_link_down_and_up() -> None:
    with lab_session("dn", hosts=2) as lab:
        lab.impair("h2", {"state": "down"})
        _, got, _, _ = _ping(lab, "h1", "h2", 3, interval=0.2)
        assert got == 0
        lab.impair("h2", {"state": "up"})
        for _ in range(20):  # the link needs a moment to carry traffic again
            if _ping(lab, "h1", "h2", 1)[1] == 1:
                break
        _, got, _, _ = _ping(lab, "h1", "h2", 3, interval=0.2)
        assert got == 3


def test_mtu_mismatch_drops_big_frames_only() -> None:
    with lab_session("mtu", hosts=2) as lab:
        lab.impair("h2", {"mtu": "9000"})  # the host believes in jumbo frames, the switch does not
        _, small, _, _ = _ping(lab, "h2", "h1", 3, interval=0.2)
        _, big, _, _ = _ping(lab, "h2", "h1", 3, interval=0.2, size=8000, extra=("-M", "do"))
    assert small == 3 and big == 0


def test_live_impairment_on_a_kernel_link(quietly) -> None:  # type: ignore[no-untyped-def]
    with lab_session("live", hosts=2) as lab:
        _, _, before, _ = _ping(lab, "h1", "h2", 10)
        lab.impair("h2", {"delay": "3ms"})
        _ping(lab, "h1", "h2", 2)
        (_, got, after, _), _ = quietly(lambda: _ping(lab, "h1", "h2", 20),
                                            lambda r: abs(r[2] - (before + 6.0)) <= 0.3 + 0.05 * 6.0)  # fmt: skip
        assert got == 20
        assert abs(after - (before + 6.0)) <= 0.3 + 0.05 * 6.0
        if lab.impairment == "userspace":
            assert lab.host("h2").path == "tap"


def test_cleanup_after_an_exception() -> None:
    with (
        pytest.raises(RuntimeError),
        lab_session("boom", hosts=2, overrides={"h1": {"delay": "1ms"}}),
    ):
        raise RuntimeError("the test failed half-way")
    assert leftovers() == []


def test_down_all_removes_leftovers_of_a_crashed_run() -> None:
    Lab.up("crash", hosts=2, overrides={"h2": {"loss": "1%"}})  # and the process "dies" here
    assert any(n.startswith("fl-crash") for n in leftovers())
    assert down_all().removed == ["crash"]  # its state file says what it made
    assert leftovers() == []


def test_namespaces_without_a_state_are_left_to_down_name() -> None:
    """No state file (written before a namespace is made, so only someone removing it gets
    here): `down --all` cannot tell whose the namespaces are and only reports them;
    `down --name crash` removes what the name says is the lab's."""
    Lab.up("crash", hosts=2, overrides={"h2": {"loss": "1%"}})
    (STATE_DIR / "crash.json").unlink()
    result = down_all()
    assert result.removed == []
    assert any("fl-crash-sw" in line for line in result.left_alone)
    assert "fl-crash-sw" in down_name("crash").removed
    assert leftovers() == []


def test_cli_lab_round_trip(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["lab", "up", "--name", "cli", "--hosts", "2", "--bandwidth", "1gbit",
                "--link", "h2:delay=1ms,loss=0.5%", "--json"]) == 0  # fmt: skip
    try:
        doc = json.loads(capsys.readouterr().out)
        assert doc["hosts"][1]["link"]["delay_s"] == pytest.approx(0.001)
        assert run(["lab", "status", "--name", "cli", "--json"]) == 0
        assert (
            json.loads(capsys.readouterr().out)["hosts"][0]["link"]["bandwidth_bits_per_s"] == 1e9
        )
        assert (
            run(
                [
                    "lab",
                    "exec",
                    "h1",
                    "--name",
                    "cli",
                    "--",
                    "ping",  # h2 drops 0.5%: three tries, one reply is enough
                    "-c",
                    "3",
                    "-i",
                    "0.2",
                    "-q",
                    doc["hosts"][1]["address"],
                ]
            )
            == 0
        )
        assert (
            run(["lab", "impair", "h1", "--name", "cli", "--bandwidth", "100mbit", "--json"]) == 0
        )
        assert (
            json.loads(capsys.readouterr().out)["hosts"][0]["link"]["bandwidth_bits_per_s"] == 1e8
        )
        assert run(["lab", "up", "--name", "cli"]) == 2
        assert "already up" in capsys.readouterr().err
    finally:
        assert run(["lab", "down", "--name", "cli"]) == 0
    assert run(["lab", "status", "--name", "cli"]) == 2


def test_ctrl_c_during_lab_up_removes_what_was_made(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C (KeyboardInterrupt) half-way through `lab up`: nothing is left behind."""
    real = Lab._plumb
    calls = {"n": 0}

    def interrupted(self: Lab, host, mac=None):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return real(self, host, mac)

    monkeypatch.setattr(Lab, "_plumb", interrupted)
    with pytest.raises(KeyboardInterrupt):
        Lab.up("intr", hosts=3, overrides={"h1": {"delay": "1ms"}})
    assert calls["n"] == 2
    assert leftovers() == []
