"""URL secrets masked; the stream parser stays linear and bounded on hostile bodies."""

from __future__ import annotations

import time

import pytest

from fabriclens.parse.llm_stream import MAX_LINE_BYTES, BodyLines, parse_line
from fabriclens.redact import redact_text, redact_url


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://user:PW@127.0.0.1:8231/x?api_key=K", "http://***@127.0.0.1:8231/x?api_key=***"),
        ("https://TOKEN@h/v1", "https://***@h/v1"),
        ("http://h/p?a=1&token=T&b=2", "http://h/p?a=1&token=***&b=2"),
        ("http://h/p?X-Amz-Signature=S&X-Amz-Credential=C&X-Amz-Date=D",
         "http://h/p?X-Amz-Signature=***&X-Amz-Credential=***&X-Amz-Date=D"),
        ("http://h/p?github_token=T;Password=P#access_token=A", "http://h/p?github_token=***;Password=***#access_token=***"),
        ("http://h/p?api%5Fkey=K", "http://h/p?api%5Fkey=***"),
        ("http://u:p@w@h/", "http://***@h/"),
        ("http://h:8000/v1/chat/completions", "http://h:8000/v1/chat/completions"),
        ("http://h/a@b", "http://h/a@b"),  # an @ in the path is no userinfo
        ("not a url", "not a url"),
    ],
)  # fmt: skip
def test_redact_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_redact_text_masks_every_url_in_a_line() -> None:
    line = "request to 'http://u:PW@h/x?sig=S' failed; retry http://h/?key=K now"
    assert (
        redact_text(line)
        == "request to 'http://***@h/x?sig=***' failed; retry http://h/?key=*** now"
    )


@pytest.mark.parametrize("chunked", [False, True])
def test_body_lines_linear_and_bounded(chunked: bool) -> None:
    """32 MiB without a newline in 64 KiB reads: well under a second (the old buffer copied the
    whole body on every read, ~8 GiB of copying here), and the overlong line is dropped."""
    body = BodyLines(chunked)
    block = b"x" * 65536
    data = (b"10000\r\n" + block + b"\r\n") if chunked else block
    t0 = time.perf_counter()
    for _ in range(512):
        assert body.feed(data) == []
    assert time.perf_counter() - t0 < 1.0
    assert body.overlong == 1 and body.pending <= MAX_LINE_BYTES
    tail = b'\n{"response": "a"}\n'
    lines = body.feed(
        (f"{len(tail):x}\r\n".encode() + tail + b"\r\n0\r\n\r\n") if chunked else tail
    )
    assert lines == [b'{"response": "a"}'] and (body.finished or not chunked)


def test_chunked_lines_split_across_reads() -> None:
    body = BodyLines(True)
    stream = b"5\r\nab\ncd\r\n3\r\nef\n\r\n0\r\n\r\n"
    out = [line for i in range(len(stream)) for line in body.feed(stream[i : i + 1])]
    assert out == [b"ab", b"cdef"] and body.finished


def test_deeply_nested_json_is_a_malformed_line() -> None:
    event = parse_line(b"data: " + b"[" * 200_000)
    assert event is not None and event.malformed
    assert (
        parse_line(b'{"response": "x", "total_duration": NaN, "eval_duration": 1e999}').server_s
        == {}
    )  # type: ignore[union-attr]
