"""HTTP phase timing against a streaming test server on loopback with a known TTFT."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

import streaming_server as ss
from fabriclens.bench.http_timing import time_request, token_text
from fabriclens.cli.app import run


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    server, url = ss.start()
    yield url
    server.shutdown()


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/api/generate"])
def test_first_token_and_token_count(base_url: str, path: str) -> None:
    """Headers come at once, the first token after the server's 150 ms TTFT."""
    t = time_request(
        base_url + path, method="POST", headers={"Content-Type": "application/json"}, body=b"{}"
    )
    assert t.status == 200
    assert t.ttfb_s is not None and t.ttfb_s < ss.TTFT_S
    assert t.first_token_s is not None and ss.TTFT_S <= t.first_token_s < ss.TTFT_S + 0.1
    assert t.tokens_seen == ss.TOKENS and t.usage_tokens == 5
    assert t.total_s >= ss.TTFT_S + (ss.TOKENS - 1) * ss.GAP_S
    assert t.dns_s <= t.connect_s <= t.sent_s <= t.ttfb_s <= t.first_token_s <= t.total_s


def test_plain_response_has_no_first_token(base_url: str) -> None:
    t = time_request(base_url + "/plain")
    assert t.status == 200 and t.first_token_s is None and t.tokens_seen == 0 and t.body_bytes > 0


def test_token_text_formats() -> None:
    assert token_text({"choices": [{"delta": {"content": "a"}}]}) == "a"
    assert token_text({"choices": [{"text": "b"}]}) == "b"
    assert token_text({"response": "c"}) == "c"
    assert token_text({"message": {"content": "d"}}) == "d"
    assert token_text({"choices": [{"delta": {}}]}) == "" and token_text([1]) == ""


def test_cli_http(base_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        run(["http", base_url + "/v1/chat/completions", "-n", "3", "--data", "{}", "--json"]) == 0
    )
    doc = json.loads(capsys.readouterr().out)
    assert doc["requests"] == 3 and doc["status"] == [200, 200, 200]
    assert ss.TTFT_S <= doc["ttft_s"]["p50"] < ss.TTFT_S + 0.1
    assert doc["biggest_phase"] in ("first_token", "wait")
    assert run(["http", base_url + "/v1/chat/completions", "--data", "{}"]) == 0
    assert "time to first token" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["http", "ftp://example"], "not an http(s) URL"),
        (["http", "http://127.0.0.1:9/"], "failed"),
        (["http", "http://127.0.0.1:9/", "-n", "0"], "-n 0"),
        (["http", "http://127.0.0.1:9/", "--header", "broken"], "Name: value"),
        (["http", "http://127.0.0.1:9/", "--data", "@/nonexistent/file"], "cannot read"),
    ],
)
def test_cli_http_errors(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    assert run(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
