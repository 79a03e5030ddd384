"""`bench net`'s judgement: a share of the expected goodput only where the test crossed that link."""

from __future__ import annotations

import json
import threading
import time

import pytest

from fabriclens.bench.tcp import is_loopback, serve
from fabriclens.cli.app import run
from fabriclens.measure.goodput import judge_goodput


def test_loopback_has_no_link_to_judge_against() -> None:
    v = judge_goodput(4e9, 941e6, loopback=True)
    assert v.efficiency is None and v.level == "ok"
    assert "no physical link to judge against" in v.verdict and "%" not in v.verdict


def test_far_above_the_expectation_is_not_a_percentage_of_the_link() -> None:
    v = judge_goodput(4e9, 941e6, loopback=False)
    assert v.level == "warning" and "%" not in v.verdict
    assert "did not cross that link" in v.verdict and "4.3x" in v.verdict


@pytest.mark.parametrize(
    ("best", "level"),
    [
        (1.05 * 941e6, "ok"),
        (0.92 * 941e6, "ok"),
        (0.7 * 941e6, "warning"),
        (0.3 * 941e6, "critical"),
    ],
)
def test_within_the_link_the_share_decides(best: float, level: str) -> None:
    v = judge_goodput(best, 941e6, loopback=False)
    assert v.level == level and f"{100 * best / 941e6:.0f}% of the 941 Mbit/s" in v.verdict


def test_without_an_expectation_nothing_is_judged() -> None:
    v = judge_goodput(5e8, None, loopback=False)
    assert (v.efficiency, v.level) == (None, "ok") and "give --expect" in v.verdict


def test_loopback_addresses_are_recognised() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("127.3.2.1")
    assert not is_loopback("192.0.2.10") and not is_loopback("no such host.invalid")


def test_bench_net_against_the_builtin_server_on_loopback(
    capsys: pytest.CaptureFixture[str],
) -> None:
    ports: list[int] = []
    server = threading.Thread(
        target=lambda: serve("127.0.0.1", 0, 4.0, ready=ports.append), daemon=True
    )
    server.start()
    for _ in range(100):
        if ports:
            break
        time.sleep(0.02)
    assert ports, "the server did not start"
    argv = ["bench", "net", "127.0.0.1", "--port", str(ports[0]), "--tool", "builtin",
            "--streams", "1", "--duration", "0.3", "--expect", "100mbit", "--json"]  # fmt: skip
    assert run(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    server.join(10)
    assert doc["efficiency"] is None and doc["level"] == "ok"
    assert "over loopback" in doc["verdict"] and "%" not in doc["verdict"]
