"""iperf3 -J output captured from iperf 3.12 on this project's lab."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import FIXTURES
from fabriclens.parse.iperf3 import parse_iperf3_json


def test_two_stream_run() -> None:
    """Captured over a lab link capped at 100 Mbit/s: receiver goodput 94.7 Mbit/s."""
    res = parse_iperf3_json((FIXTURES / "iperf3-client-P2.json").read_text())
    assert res.ok and res.streams == 2
    assert res.goodput_bits_per_s == pytest.approx(94.7e6, rel=0.01)
    assert res.retransmits is not None and res.retransmits >= 0


def test_refused_run_is_an_error_not_a_crash() -> None:
    res = parse_iperf3_json((FIXTURES / "iperf3-client-refused.json").read_text())
    assert not res.ok and "Connection refused" in res.error


@given(st.text(max_size=300))
def test_garbage(text: str) -> None:
    assert parse_iperf3_json(text).ok in (True, False)
