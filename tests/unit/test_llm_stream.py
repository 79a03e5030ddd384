"""Streamed LLM bodies: events from OpenAI SSE and Ollama lines; chunked decoding split anywhere."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from fabriclens.parse.llm_stream import (
    BodyLines,
    ResponseLines,
    header_info,
    parse_line,
    token_text,
)


def test_token_text_formats() -> None:
    assert token_text({"choices": [{"delta": {"content": "a"}}]}) == "a"
    assert token_text({"choices": [{"text": "b"}]}) == "b"
    assert token_text({"response": "c"}) == "c"
    assert token_text({"message": {"content": "d"}}) == "d"
    assert token_text({"choices": [{"message": {"content": "e"}}]}) == "e"
    assert token_text({"choices": [{"delta": {}}]}) == "" and token_text([1]) == ""


def test_parse_line_kinds() -> None:
    assert parse_line(b"") is None and parse_line(b": keep-alive") is None
    assert parse_line(b"event: message") is None
    assert parse_line(b"data: [DONE]").done  # type: ignore[union-attr]
    bad = parse_line(b"data: {not json")
    assert bad is not None and bad.malformed
    usage = parse_line(
        b'data: {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 9}}'
    )
    assert usage is not None and (usage.completion_tokens, usage.prompt_tokens, usage.text) == (
        9,
        3,
        "",
    )
    final = parse_line(
        b'{"done": true, "eval_count": 7, "prompt_eval_duration": 250000000, "load_duration": 0}'
    )
    assert final is not None and final.done and final.completion_tokens == 7
    assert final.server_s == {"load": 0.0, "prefill": 0.25}
    err = parse_line(b'data: {"error": {"message": "overloaded"}}')
    assert err is not None and err.error == "overloaded"
    whole = parse_line(b'{"choices": [{"message": {"content": "all of it"}}]}')
    assert whole is not None and whole.complete
    streamed = parse_line(b'data: {"choices": [{"delta": {"content": "x"}}]}')
    assert streamed is not None and not streamed.complete and streamed.text == "x"
    # a text_completion is the same object whole or streamed: only the SSE framing tells them apart
    completion = b'{"object": "text_completion", "choices": [{"index": 0, "text": "all"}]}'
    whole_text = parse_line(completion)
    assert whole_text is not None and whole_text.complete and whole_text.text == "all"
    chunk = parse_line(b"data: " + completion)
    assert chunk is not None and not chunk.complete and chunk.text == "all"


def test_header_info() -> None:
    head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 12"
    assert header_info(head) == (200, True, 12)
    assert header_info(b"garbage") == (None, False, None)


def _chunked(parts: list[bytes]) -> bytes:
    return b"".join(f"{len(p):x}\r\n".encode() + p + b"\r\n" for p in parts) + b"0\r\n\r\n"


@given(
    st.lists(
        st.binary(min_size=1, max_size=40).filter(lambda b: b"\n" not in b), min_size=1, max_size=8
    ),
    st.lists(st.integers(min_value=1, max_value=60), min_size=1, max_size=20),
)
def test_chunked_lines_survive_any_split(lines: list[bytes], cuts: list[int]) -> None:
    """However the network splits the bytes, the same lines come out and the end is seen."""
    body = b"".join(line + b"\n" for line in lines)
    third = max(1, len(body) // 3)
    wire = _chunked([body[:third], body[third:]] if len(body) > third else [body])
    decoder, got, pos = BodyLines(chunked=True), [], 0
    for cut in cuts * 50:
        if pos >= len(wire):
            break
        got += decoder.feed(wire[pos : pos + cut])
        pos += cut
    got += decoder.feed(wire[pos:])
    assert got == lines and decoder.finished


def test_plain_body_lines_and_rest() -> None:
    decoder = BodyLines(chunked=False)
    assert decoder.feed(b'{"a": 1}\n{"b"') == [b'{"a": 1}']
    assert decoder.feed(b": 2}") == [] and decoder.rest() == [b'{"b": 2}']


def test_response_lines_head_split_anywhere() -> None:
    wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + _chunked(
        [b'data: {"a": 1}\n\n', b"data: [DONE]\n\n"]
    )
    for cut in range(1, len(wire)):
        r = ResponseLines()
        lines = r.feed(wire[:cut]) + r.feed(wire[cut:])
        assert r.status == 200 and r.body is not None and r.body.finished
        assert [line for line in lines if line] == [b'data: {"a": 1}', b"data: [DONE]"]
