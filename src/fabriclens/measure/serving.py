"""Serving metrics from timed streamed requests: TTFT, inter-token latency, TPOT, end-to-end,
tokens per second, errors by kind, goodput under latency targets.

Pure: the load generator (``fabriclens.bench.serve_load``) records when each chunk of text
arrived; this module turns the records into the figures. Two traps of popular load testers are
avoided on purpose:

* a chunk is not a token. A server may send several tokens in one event, and several events may
  arrive in one read. The request's token count comes from the server's ``usage`` where it gave
  one (else a tokenizer, else an estimate, labelled as such) and is split over the chunks in
  proportion to their text; a chunk of k tokens that arrived g seconds after the previous one
  contributes k inter-token latencies of g/k each.
* inter-token gaps are averaged, never summed: TPOT is (last token - first token) / (tokens - 1)
  per request, and the ITL distribution is over tokens. Tokens that arrive in the first chunk
  have no gap to measure and are left out of the ITL sample.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fabriclens.errors import InputError
from fabriclens.units import parse_time

CHARS_PER_TOKEN = 4.0  # the usual rule of thumb for English text with BPE vocabularies
SLO_KEYS = ("ttft", "tpot", "itl", "e2e")


@dataclass(frozen=True)
class RequestRecord:
    """One request as the client saw it; times in seconds since the request started."""

    start_s: float  # when it started, since the run (level) started
    end_s: float  # response complete (or failed)
    chunks: tuple[tuple[float, int], ...] = ()  # (arrival, characters of text) per read with text
    connect_s: float | None = None  # TCP (and TLS) connect
    usage_tokens: int | None = None  # completion tokens the server reported
    counted_tokens: int | None = None  # a tokenizer's count of the text, when one was given
    error: str | None = None  # kind: "http 500", "timeout", "disconnect", "malformed", ...
    tls: bool = False  # the connect time includes a TLS handshake


@dataclass(frozen=True)
class RequestMetrics:
    output_tokens: int
    token_source: str  # usage | tokenizer | estimated
    ttft_s: float
    tpot_s: float | None  # None for one-token answers
    e2e_s: float
    itl_s: tuple[float, ...]
    itl_weights: tuple[int, ...] = field(default=())
    ttft_server_s: float | None = None  # TTFT less two round trips (connect, request/response)


def allocate(total: int, chars: list[int]) -> list[int]:
    """Split ``total`` tokens over chunks in proportion to their text (largest remainder), giving
    every chunk at least one token while there are enough to go round."""
    n = len(chars)
    if n == 0:
        return []
    base = [1] * n if total >= n else [0] * n
    left = total - sum(base)
    weight = sum(chars) or n
    shares = [left * (c if sum(chars) else 1) / weight for c in chars]
    out = [b + int(s) for b, s in zip(base, shares, strict=True)]
    order = sorted(range(n), key=lambda i: shares[i] - int(shares[i]), reverse=True)
    for i in order[: total - sum(out)]:
        out[i] += 1
    return out


def request_metrics(rec: RequestRecord) -> RequestMetrics | None:
    """Metrics of one successful request with text; None when it failed or carried no text."""
    if rec.error is not None or not rec.chunks:
        return None
    chars = [c for _, c in rec.chunks]
    if rec.usage_tokens is not None:
        total, source = rec.usage_tokens, "usage"
    elif rec.counted_tokens is not None:
        total, source = rec.counted_tokens, "tokenizer"
    else:
        total = max(len(chars), round(sum(chars) / CHARS_PER_TOKEN))
        source = "estimated"
    tokens = allocate(total, chars)
    ttft = rec.chunks[0][0]
    itl: list[float] = []
    weights: list[int] = []
    for (prev_t, _), (t, _), k in zip(rec.chunks, rec.chunks[1:], tokens[1:], strict=False):
        if k > 0:
            itl.append((t - prev_t) / k)
            weights.append(k)
    last = rec.chunks[-1][0]
    tpot = (last - ttft) / (total - 1) if total > 1 else None
    server = ttft - 2 * rec.connect_s if rec.connect_s is not None and not rec.tls else None
    return RequestMetrics(total, source, ttft, tpot, rec.end_s, tuple(itl), tuple(weights), server)


def summarize(values: list[float], weights: list[int] | None = None) -> dict[str, float] | None:
    """Mean, p50, p90, p99 (weights: how many samples each value stands for); None when empty."""
    if not values:
        return None
    v = np.asarray(values, dtype=float)
    if weights is not None:
        v = np.repeat(v, np.asarray(weights, dtype=int))
    p50, p90, p99 = np.percentile(v, [50, 90, 99])
    return {"mean": float(v.mean()), "p50": float(p50), "p90": float(p90), "p99": float(p99)}


def parse_slo(text: str, allowed: tuple[str, ...] = SLO_KEYS, flag: str = "--slo",
              example: str = "ttft=500ms,tpot=50ms") -> dict[str, float]:  # fmt: skip
    """``ttft=500ms,tpot=50ms`` -> {"ttft": 0.5, "tpot": 0.05}; one clear error otherwise."""
    slo: dict[str, float] = {}
    for item in text.split(","):
        key, eq, value = item.partition("=")
        key = key.strip().lower()
        if not eq or key not in allowed:
            raise InputError(
                f"{flag} item {item.strip()!r} is not one of {', '.join(k + '=...' for k in allowed)}",
                f"write it like {flag} {example}",
            )
        slo[key] = parse_time(value)
        if slo[key] <= 0:
            raise InputError(f"{flag} {key} must be positive", f"write it like {flag} {example}")
    return slo


def _meets(m: RequestMetrics, slo: dict[str, float]) -> bool:
    checks = {"ttft": m.ttft_s, "tpot": m.tpot_s, "e2e": m.e2e_s,
              "itl": max(m.itl_s) if m.itl_s else None}  # fmt: skip
    return all(checks[k] is None or checks[k] <= bound for k, bound in slo.items())  # type: ignore[operator]


def aggregate(
    records: list[RequestRecord], wall_s: float, slo: dict[str, float] | None = None
) -> dict[str, Any]:
    """One load level's figures (the ``results`` entries of ``bench serve --json``)."""
    metrics = [m for m in (request_metrics(r) for r in records) if m is not None]
    errors = Counter(r.error for r in records if r.error is not None)
    empty = sum(1 for r in records if r.error is None and not r.chunks)
    if empty:
        errors["no text in the response"] += empty
    wall = max(wall_s, 1e-9)
    out_tokens = sum(m.output_tokens for m in metrics)
    sources = sorted({m.token_source for m in metrics})
    met = sum(1 for m in metrics if _meets(m, slo or {}))
    itl = [x for m in metrics for x in m.itl_s]
    itl_w = [w for m in metrics for w in m.itl_weights]
    return {
        "requests": len(records),
        "completed": len(metrics),
        "errors": dict(sorted(errors.items())),
        "duration_s": wall_s,
        "ttft_s": summarize([m.ttft_s for m in metrics]),
        "ttft_server_s": summarize([m.ttft_server_s for m in metrics if m.ttft_server_s is not None]),
        "itl_s": summarize(itl, itl_w),
        "tpot_s": summarize([m.tpot_s for m in metrics if m.tpot_s is not None]),
        "e2e_s": summarize([m.e2e_s for m in metrics]),
        "connect_s": summarize([r.connect_s for r in records if r.connect_s is not None]),
        "output_tokens": out_tokens,
        "token_count": "+".join(sources) if sources else None,
        "output_tokens_per_s": out_tokens / wall,
        "output_tokens_per_s_per_request": summarize([m.output_tokens / m.e2e_s for m in metrics if m.e2e_s > 0]),
        "requests_per_s": len(metrics) / wall,
        "goodput": {
            "slo_s": dict(slo or {}),
            "requests_met": met,
            "fraction": met / len(records) if records else 0.0,
            "requests_per_s": met / wall,
        },
    }  # fmt: skip
