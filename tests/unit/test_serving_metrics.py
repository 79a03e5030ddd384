"""Serving metrics: tokens per chunk, ITL over tokens, TPOT, sources of token counts, goodput."""

from __future__ import annotations

import pytest

from fabriclens.errors import InputError
from fabriclens.measure.serving import (
    RequestRecord,
    aggregate,
    allocate,
    parse_slo,
    request_metrics,
)


def test_allocate_is_proportional_and_exact() -> None:
    assert allocate(12, [4, 4, 4]) == [4, 4, 4]
    assert allocate(10, [8, 4, 4, 4]) == [4, 2, 2, 2]
    assert sum(allocate(7, [3, 1, 9])) == 7 and min(allocate(7, [3, 1, 9])) >= 1
    assert allocate(2, [1, 1, 1]) in ([1, 1, 0], [1, 0, 1], [0, 1, 1])
    assert allocate(5, []) == []


def _stream(ttft: float, gap: float, chunks: int, chars: int) -> tuple[tuple[float, int], ...]:
    return tuple((ttft + i * gap, chars) for i in range(chunks))


def test_chunks_of_several_tokens_give_per_token_gaps() -> None:
    """8 chunks of 3 tokens every 60 ms: ITL 20 ms per token (not 60 ms per chunk); 24 tokens."""
    rec = RequestRecord(0.0, 0.7, _stream(0.2, 0.06, 8, 12), connect_s=0.001, usage_tokens=24)
    m = request_metrics(rec)
    assert m is not None and m.output_tokens == 24 and m.token_source == "usage"
    assert m.ttft_s == 0.2 and all(x == pytest.approx(0.02) for x in m.itl_s)
    assert sum(w for w in m.itl_weights) == 21  # the first chunk's 3 tokens have no gap
    assert m.tpot_s == pytest.approx(7 * 0.06 / 23)
    assert m.ttft_server_s == pytest.approx(0.198)


def test_token_count_sources() -> None:
    chunks = _stream(0.1, 0.01, 5, 8)
    assert (
        request_metrics(RequestRecord(0, 1, chunks, counted_tokens=9)).token_source == "tokenizer"
    )  # type: ignore[union-attr]
    est = request_metrics(RequestRecord(0, 1, chunks))
    assert est is not None and est.token_source == "estimated" and est.output_tokens == 10
    assert request_metrics(RequestRecord(0, 1, chunks, error="disconnect")) is None
    assert request_metrics(RequestRecord(0, 1, ())) is None


def test_aggregate_counts_errors_and_goodput() -> None:
    ok_fast = RequestRecord(0.0, 0.5, _stream(0.1, 0.02, 10, 4), usage_tokens=10)
    ok_slow = RequestRecord(0.1, 1.5, _stream(0.9, 0.02, 10, 4), usage_tokens=10)
    failed = [RequestRecord(0.2, 0.1, error="http 500"), RequestRecord(0.3, 0.1, error="http 500"),
              RequestRecord(0.4, 2.0, error="timeout"), RequestRecord(0.5, 0.2)]  # fmt: skip
    doc = aggregate([ok_fast, ok_slow, *failed], wall_s=2.0, slo={"ttft": 0.5})
    assert doc["requests"] == 6 and doc["completed"] == 2
    assert doc["errors"] == {"http 500": 2, "no text in the response": 1, "timeout": 1}
    assert doc["output_tokens"] == 20 and doc["output_tokens_per_s"] == 10.0
    assert doc["goodput"]["requests_met"] == 1 and doc["goodput"]["fraction"] == pytest.approx(
        1 / 6
    )
    assert doc["itl_s"]["p50"] == pytest.approx(0.02) and doc["token_count"] == "usage"
    empty = aggregate([], wall_s=1.0)
    assert empty["ttft_s"] is None and empty["goodput"]["fraction"] == 0.0


def test_parse_slo() -> None:
    assert parse_slo("ttft=500ms,tpot=50ms") == {"ttft": 0.5, "tpot": 0.05}
    for bad in ("latency=1s", "ttft", "ttft=-1s", "ttft=fast"):
        with pytest.raises(InputError):
            parse_slo(bad)
