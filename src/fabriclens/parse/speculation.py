"""What a serving engine says about its own speculative decoding: the draft tokens it proposes a
step and the accept length it measured, from SGLang's server information or vLLM's Prometheus
counters. Pure: the caller fetches the text.

SGLang's ``GET /server_info`` (``/get_server_info`` before it) returns its server arguments
(``speculative_algorithm``, ``speculative_num_steps``, ``speculative_eagle_topk``,
``speculative_num_draft_tokens``) and ``internal_states``, whose ``avg_spec_accept_length`` is
the mean tokens a verification step emitted. vLLM's ``GET /metrics`` counts
``vllm:spec_decode_num_drafts_total`` (verification steps), ``..._num_draft_tokens_total`` and
``..._num_accepted_tokens_total``: draft tokens a step = draft tokens / drafts, accept length =
1 + accepted / drafts (the model's own token besides the accepted drafts).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

MAX_SPEC_TOKENS = 64  # beyond any draft length an engine runs: a larger figure is not one


@dataclass(frozen=True, slots=True)
class Speculation:
    """A server's speculative decoding as it reports it."""

    source: str  # where it was read: "SGLang /server_info", "vLLM /metrics"
    algorithm: str  # EAGLE, EAGLE3, NEXTN, mtp ... ("" where the source does not say)
    spec_tokens: int  # draft tokens a step (SGLang: speculative_num_steps)
    accept_length: float | None  # mean tokens a step emitted; None before any was verified
    topk: int = 1  # SGLang's speculative_eagle_topk: 1 is a chain, more a tree of drafts
    # SGLang's speculative_num_draft_tokens: positions a sequence verified a step (0: unknown)
    draft_tokens: int = 0


def _count(value: Any, low: int = 1, high: int = MAX_SPEC_TOKENS) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return int(value) if value == int(value) and low <= value <= high else None


def from_sglang_server_info(doc: Any) -> Speculation | None:
    """The speculation an SGLang server's ``/server_info`` JSON describes, or None (no
    speculative algorithm, or not that document)."""
    if isinstance(doc, list) and doc and isinstance(doc[0], dict):  # a router's list of servers
        doc = doc[0]
    if not isinstance(doc, dict):
        return None
    algorithm = doc.get("speculative_algorithm")
    if not isinstance(algorithm, str) or not algorithm or algorithm.upper() == "NONE":
        return None
    steps = _count(doc.get("speculative_num_steps"))
    if steps is None:
        return None
    topk = _count(doc.get("speculative_eagle_topk"), 1, 1024) or 1
    draft_tokens = _count(doc.get("speculative_num_draft_tokens"), 2, 1 + topk * steps) or 0
    accept = None
    states = doc.get("internal_states")
    for state in states if isinstance(states, list) else []:
        value = state.get("avg_spec_accept_length") if isinstance(state, dict) else None
        if (not isinstance(value, bool) and isinstance(value, (int, float))
                and math.isfinite(value) and 1.0 <= value <= steps + 1):  # fmt: skip
            accept = float(value)
            break
    return Speculation("SGLang /server_info", algorithm[:40], steps, accept, topk, draft_tokens)


_VLLM_COUNTERS = {
    "vllm:spec_decode_num_drafts_total": "drafts",
    "vllm:spec_decode_num_draft_tokens_total": "draft_tokens",
    "vllm:spec_decode_num_accepted_tokens_total": "accepted",
}


def from_vllm_metrics(text: str) -> Speculation | None:
    """The speculation vLLM's ``/metrics`` counters show (summed over their label sets), or None
    (no counters, or no step verified yet)."""
    sums = dict.fromkeys(_VLLM_COUNTERS.values(), 0.0)
    seen = False
    for line in text.splitlines():
        if not line.startswith("vllm:spec_decode_num_"):
            continue
        name_labels, _, value = line.rpartition(" ")
        key = _VLLM_COUNTERS.get(name_labels.split("{", 1)[0])
        try:
            number = float(value)
        except ValueError:
            continue
        if key is not None and math.isfinite(number) and number >= 0:
            sums[key] += number
            seen = True
    drafts = sums["drafts"]
    if not seen or drafts <= 0:
        return None
    steps = _count(round(sums["draft_tokens"] / drafts))
    if steps is None:
        return None
    accept = 1.0 + sums["accepted"] / drafts
    return Speculation("vLLM /metrics", "", steps, accept if accept <= steps + 1 else None)
