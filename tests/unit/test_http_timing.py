"""HTTP phase timing against a streaming test server on loopback with a known TTFT."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from fabriclens.bench.http_timing import time_request
from fabriclens.bench.stream_server import spawn
from fabriclens.cli.app import run

TTFT_S, GAP_S, TOKENS = 0.15, 0.02, 5
STREAM = '{"stream": true}'  # an OpenAI server answers whole unless asked to stream
BODY = b'{"stream": true, "stream_options": {"include_usage": true}}'


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    proc, url = spawn(
        ["--ttft", str(TTFT_S), "--itl", str(GAP_S), "--tokens", str(TOKENS), "--lifetime", "300"]
    )
    yield url
    proc.kill()
    proc.wait(timeout=5)


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/api/generate"])
def test_first_token_and_token_count(base_url: str, path: str) -> None:
    """Headers come at once, the first token after the server's 150 ms TTFT."""
    t = time_request(
        base_url + path, method="POST", headers={"Content-Type": "application/json"}, body=BODY
    )
    assert t.status == 200
    assert t.ttfb_s is not None and t.ttfb_s < TTFT_S
    assert t.first_token_s is not None and TTFT_S <= t.first_token_s < TTFT_S + 0.1
    assert t.tokens_seen == TOKENS and t.usage_tokens == TOKENS
    assert t.total_s >= TTFT_S + (TOKENS - 1) * GAP_S
    assert t.dns_s <= t.connect_s <= t.sent_s <= t.ttfb_s <= t.first_token_s <= t.total_s


def test_plain_response_has_no_first_token(base_url: str) -> None:
    t = time_request(base_url + "/plain")
    assert t.status == 200 and t.first_token_s is None and t.tokens_seen == 0 and t.body_bytes > 0


def test_cli_http(base_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        run(["http", base_url + "/v1/chat/completions", "-n", "3", "--data", STREAM, "--json"]) == 0
    )
    doc = json.loads(capsys.readouterr().out)
    assert doc["requests"] == 3 and doc["status"] == [200, 200, 200]
    assert TTFT_S <= doc["ttft_s"]["p50"] < TTFT_S + 0.1
    assert doc["biggest_phase"] in ("first_token", "wait")
    assert run(["http", base_url + "/v1/chat/completions", "--data", STREAM]) == 0
    assert "time to first token" in capsys.readouterr().out


def test_cli_http_baselines(base_url: str, tmp_path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    """On loopback the path is ~0 and the server's 150 ms is the server's, with either baseline."""
    url = base_url + "/api/generate"
    assert run(["http", url, "--data", "{}", "-n", "2", "--json"]) == 0
    base = tmp_path / "base.json"
    base.write_text(capsys.readouterr().out)
    for extra in (["--baseline", str(base)], ["--baseline-url", url]):
        assert run(["http", url, "--data", "{}", "-n", "2", "--json", *extra]) == 0
        att = json.loads(capsys.readouterr().out)["attribution"]
        assert att["method"].startswith("baseline") and att["network_s"] < 0.005
        assert att["server_s"] == pytest.approx(TTFT_S, abs=0.03)
        assert "prefill" in att["verdict"]  # Ollama reports prompt_eval_duration: the prefill part
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert run(["http", url, "--baseline", str(bad)]) == 2
    assert "not the output of" in capsys.readouterr().err


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
