"""A serving engine's own report of its speculative decoding (parse/speculation.py), in the
shapes SGLang's /server_info and vLLM's /metrics publish."""

from __future__ import annotations

import math

from fabriclens.bench.server_state import split_response
from fabriclens.parse.speculation import from_sglang_server_info, from_vllm_metrics

# SGLang's /server_info: the server arguments at the top level, the scheduler's states below
# (the keys as sglang's http_server and the benchmarks that read it use them)
SGLANG = {
    "model_path": "deepseek-ai/DeepSeek-V3.2-Exp", "tp_size": 8,
    "speculative_algorithm": "EAGLE", "speculative_num_steps": 3, "speculative_eagle_topk": 1,
    "speculative_num_draft_tokens": 4, "disable_overlap_schedule": True,
    "internal_states": [{"last_gen_throughput": 95.6, "avg_spec_accept_length": 2.46}],
}  # fmt: skip
# vLLM V1's counters, one label set per engine (summed), with a comment and other metrics beside
VLLM = """# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.
# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total{engine="0",model_name="zai-org/GLM-5-FP8"} 19982.0
vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="zai-org/GLM-5-FP8"} 59946.0
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="zai-org/GLM-5-FP8"} 12784.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",position="0"} 7311.0
vllm:generation_tokens_total{engine="0",model_name="zai-org/GLM-5-FP8"} 32768.0
"""


def test_sglangs_server_info() -> None:
    found = from_sglang_server_info(SGLANG)
    assert found is not None
    assert (found.algorithm, found.spec_tokens, found.topk) == ("EAGLE", 3, 1)
    assert found.draft_tokens == 4
    # a tree of drafts: SGLang's EAGLE defaults (5 steps, top-4, 8 positions verified)
    tree = {**SGLANG, "speculative_num_steps": 5, "speculative_eagle_topk": 4,
            "speculative_num_draft_tokens": 8}  # fmt: skip
    grown = from_sglang_server_info(tree)
    assert grown is not None and (grown.spec_tokens, grown.topk, grown.draft_tokens) == (5, 4, 8)
    # more positions than 5 passes of top-4 propose is not a tree SGLang runs: unknown
    assert from_sglang_server_info({**tree, "speculative_num_draft_tokens": 99}).draft_tokens == 0  # type: ignore[union-attr]
    assert found.accept_length == 2.46 and found.source == "SGLang /server_info"
    # a router's list of servers, and a server before any step was verified
    assert from_sglang_server_info([SGLANG]) == found
    fresh = {**SGLANG, "internal_states": [{"avg_spec_accept_length": None}]}
    assert from_sglang_server_info(fresh).accept_length is None  # type: ignore[union-attr]


def test_a_server_without_speculation_or_with_nonsense_reports_none() -> None:
    assert from_sglang_server_info({**SGLANG, "speculative_algorithm": None}) is None
    assert from_sglang_server_info({"tp_size": 8}) is None
    assert from_sglang_server_info("not a document") is None
    assert from_sglang_server_info({**SGLANG, "speculative_num_steps": 1e9}) is None
    odd = {**SGLANG, "internal_states": [{"avg_spec_accept_length": math.nan}, "x"]}
    assert from_sglang_server_info(odd).accept_length is None  # type: ignore[union-attr]
    too_high = {**SGLANG, "internal_states": [{"avg_spec_accept_length": 9.0}]}
    assert from_sglang_server_info(too_high).accept_length is None  # type: ignore[union-attr]


def test_vllms_counters() -> None:
    """vLLM's GLM-5 recipe run (reference/inference_more.csv im628) printed 'Drafts: 19982',
    'Draft tokens: 59946', 'Accepted tokens: 12784' and 'Acceptance length: 1.64' for three
    MTP tokens: the counters give the same."""
    found = from_vllm_metrics(VLLM)
    assert found is not None and found.spec_tokens == 3
    assert found.accept_length == 1 + 12784 / 19982 and round(found.accept_length, 2) == 1.64
    two = VLLM + VLLM.replace('engine="0"', 'engine="1"')  # two engines: summed
    assert from_vllm_metrics(two) == found
    assert from_vllm_metrics("vllm:generation_tokens_total 5\n") is None
    assert from_vllm_metrics("vllm:spec_decode_num_drafts_total 0\n") is None
    assert from_vllm_metrics("vllm:spec_decode_num_drafts_total nan\n") is None


def test_an_http_response_is_split_chunked_or_not() -> None:
    body = b'{"a": 1}'
    plain = b"HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\n" + body
    chunked = (
        b'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{"a\r\n5\r\n": 1}\r\n0\r\n\r\n'
    )
    assert split_response(plain) == (200, body) == split_response(chunked)
    assert split_response(b"garbage") == (None, b"")
    assert split_response(b"SSH-2.0\r\n\r\n") == (None, b"")
