"""`http`, `bench serve`, `bench net` and `doctor --url` against hostile servers on loopback:
one byte at a time, an endless stream, a huge body, JSON nested past decoding, NaN in the
numbers, secrets in the URL. Every command must end within its --timeout, print strict JSON
and never show a URL's secrets."""

from __future__ import annotations

import base64
import json
import socket
import time
from typing import Any

import pytest

from fabriclens.cli.app import run
from hostile_servers import answer, byte_at_a_time, endless_stream, hostile, huge_body, until

TREE = str(__import__("conftest").FIXTURES / "sysfs-roce-degraded")


def strict(text: str) -> Any:
    """JSON as a strict parser reads it: NaN and Infinity are errors."""

    def refuse(name: str) -> None:
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


def timed(argv: list[str]) -> tuple[int, float]:
    t0 = time.monotonic()
    code = run(argv)
    return code, time.monotonic() - t0


@pytest.mark.parametrize("behaviour", [byte_at_a_time, endless_stream])
def test_http_timeout_bounds_the_whole_request(
    behaviour: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """A server trickling bytes (each read well inside the timeout) is cut off at --timeout 2:
    before, every read had its own timeout and the request ran as long as the server did (12 s)."""
    with hostile(behaviour) as (port, _):
        code, elapsed = timed(["http", f"http://127.0.0.1:{port}/", "--timeout", "2"])
    err = capsys.readouterr().err
    assert code == 2 and elapsed < 5, (code, elapsed)
    assert "2 s timeout" in err and err.count("\n") == 1


def test_http_huge_body_is_linear_and_capped(capsys: pytest.CaptureFixture[str]) -> None:
    """80 MiB of body without a newline: read to the 64 MiB cap in seconds (quadratic line
    buffering took ~24 s for 64 MiB), and the output says the body was capped."""
    with hostile(huge_body(80 << 20)) as (port, _):
        code, elapsed = timed(["http", f"http://127.0.0.1:{port}/", "--timeout", "60", "--json"])
    assert code == 0 and elapsed < 10, elapsed
    doc = strict(capsys.readouterr().out)
    assert "64 MiB" not in doc["body_capped"] and "67,108,864 bytes" in doc["body_capped"]


def test_http_nan_in_the_answer_stays_strict_json(capsys: pytest.CaptureFixture[str]) -> None:
    """Ollama durations given as NaN / Infinity / 1e999 must not reach the --json output."""
    body = b'{"response": "hi", "done": true, "eval_count": 3, "total_duration": NaN, "eval_duration": Infinity, "load_duration": 1e999}\n'
    with hostile(answer(body, "application/x-ndjson")) as (port, _):
        assert run(["http", f"http://127.0.0.1:{port}/api/generate", "--json"]) == 0
    out = capsys.readouterr().out
    doc = strict(out)
    assert doc["usage_tokens"] == 3 and "NaN" not in out and "Infinity" not in out


def test_print_json_turns_non_finite_numbers_into_null(capsys: pytest.CaptureFixture[str]) -> None:
    from fabriclens.cli._output import print_json

    print_json({"a": float("nan"), "b": [float("inf"), -float("inf"), 1.5], "c": (2.0,)})
    assert strict(capsys.readouterr().out) == {"a": None, "b": [None, None, 1.5], "c": [2.0]}


def test_http_secrets_in_url_are_sent_as_basic_auth_and_never_shown(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with hostile(answer(b"{}")) as (port, heads):
        url = f"http://user:PW123@127.0.0.1:{port}/x?api_key=K456&n=1&X-Amz-Signature=S789"
        assert run(["http", url, "--json"]) == 0
        out = capsys.readouterr().out
        assert run(["http", url]) == 0
        text = capsys.readouterr().out
    for shown in (out, text):
        assert not any(s in shown for s in ("PW123", "K456", "S789", "user:"))
    assert (
        strict(out)["url"] == f"http://***@127.0.0.1:{port}/x?api_key=***&n=1&X-Amz-Signature=***"
    )
    head = heads[0].decode()
    assert f"\r\nHost: 127.0.0.1:{port}\r\n" in head
    assert f"\r\nAuthorization: Basic {base64.b64encode(b'user:PW123').decode()}\r\n" in head


def test_secrets_stay_out_of_errors(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://user:PW123@127.0.0.1:{port}/v1/chat/completions?token=T456"
    assert run(["http", url, "-H", "Authorization: Bearer HDR789"]) == 2
    assert run(["http", url.replace("http", "ftp")]) == 2
    assert run(["http", url, "-H", "Authorization Bearer HDR789"]) == 2
    assert (
        run(
            [
                "bench",
                "serve",
                url,
                "--model",
                "m",
                "--requests",
                "1",
                "--concurrency",
                "1",
                "--json",
            ]
        )
        == 1
    )
    err_out = capsys.readouterr()
    assert run(["doctor", "--sys-root", TREE, "--url", url, "--json"]) in (0, 1)
    doctor = capsys.readouterr()
    for text in (err_out.err, err_out.out, doctor.out, doctor.err):
        assert not any(s in text for s in ("PW123", "T456", "HDR789")), text
    assert strict(doctor.out)["endpoints"][0]["url"].startswith("http://***@127.0.0.1")


@pytest.mark.parametrize("value", ["a\r\nX-Injected: 1", "a\nb", "a\rb"])
def test_header_with_line_break_is_refused(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with hostile(answer(b"{}"), lifetime_s=3) as (port, heads):
        code = run(["http", f"http://127.0.0.1:{port}/", "--header", f"X-Test: {value}"])
        serve = run(
            [
                "bench",
                "serve",
                f"http://127.0.0.1:{port}/",
                "--model",
                "m",
                "--header",
                f"X: {value}",
            ]
        )
    err = capsys.readouterr().err
    assert code == serve == 2 and "line break" in err and not heads


def _nested_stream(conn: socket.socket, _head: bytes) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n")
    conn.sendall(b'data: {"choices": [{"delta": {"content": "a"}}]}\n\n')
    conn.sendall(b"data: " + b"[" * 200_000 + b"\n\n")
    conn.sendall(b"data: [DONE]\n\n")


def test_bench_serve_counts_deeply_nested_json_as_malformed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """JSON nested past the decoder's recursion limit used to raise RecursionError and end the
    whole run; now it is one malformed response each."""
    with hostile(_nested_stream) as (port, _):
        code = run(["bench", "serve", f"http://127.0.0.1:{port}/", "--model", "m", "--concurrency", "1",
                    "--requests", "3", "--json"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 1
    assert strict(out)["results"][0]["errors"] == {"malformed stream": 3}


def test_bench_serve_timeout_and_huge_body(capsys: pytest.CaptureFixture[str]) -> None:
    """Each request ends at --timeout however the server trickles; a 48 MiB line is read in
    linear time and counted as a malformed stream."""
    with hostile(byte_at_a_time) as (port, _):
        code, elapsed = timed(["bench", "serve", f"http://127.0.0.1:{port}/", "--model", "m", "--concurrency",
                               "2", "--requests", "2", "--timeout", "2", "--json"])  # fmt: skip
    assert code == 1 and elapsed < 6
    assert strict(capsys.readouterr().out)["results"][0]["errors"] == {"timeout": 2}
    with hostile(huge_body(48 << 20)) as (port, _):
        code, elapsed = timed(["bench", "serve", f"http://127.0.0.1:{port}/", "--model", "m", "--concurrency",
                               "1", "--requests", "1", "--timeout", "60", "--json"])  # fmt: skip
    assert code == 1 and elapsed < 8, elapsed
    assert strict(capsys.readouterr().out)["results"][0]["errors"] == {"malformed stream": 1}


def _slow_echo(conn: socket.socket, head: bytes) -> None:
    """The built-in test's protocol: counts streamed bytes at once, echoes only every 0.3 s."""
    more = until(12)
    if head.startswith(b"S"):
        total = len(head) - 1
        while more() and (part := conn.recv(1 << 20)):
            total += len(part)
        conn.sendall(total.to_bytes(8, "big"))
    else:
        while more() and conn.recv(1):
            time.sleep(0.3)
            conn.sendall(b"x")


def _protocol_head(conn: socket.socket) -> bytes:
    return conn.recv(1)


def test_bench_net_builtin_round_trips_are_bounded(monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    """A server that echoes every 0.3 s kept the 200 round trips going for a minute; the test
    now ends at its budget (2 s here) with the round trips it has."""
    import hostile_servers as h
    from fabriclens.bench import tcp

    monkeypatch.setattr(h, "read_head", _protocol_head)
    monkeypatch.setattr(tcp, "RTT_BUDGET_S", 2.0, raising=False)
    measure_rtt = tcp.measure_rtt
    monkeypatch.setattr(tcp, "measure_rtt", lambda host, port: measure_rtt(host, port, 200, 2.0))
    with hostile(_slow_echo) as (port, _):
        code, elapsed = timed(["bench", "net", "127.0.0.1", "--port", str(port), "--tool", "builtin",
                               "--duration", "0.5", "--json"])  # fmt: skip
    out = capsys.readouterr().out
    assert elapsed < 6, elapsed
    assert code in (0, 1) and 0.29 < strict(out)["rtt"]["p50_s"] < 0.5


def test_doctor_url_ends_at_its_timeout(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from fabriclens.cli import http_cmd

    monkeypatch.setattr(http_cmd, "ENDPOINT_TIMEOUT_S", 1.5, raising=False)
    with hostile(byte_at_a_time) as (port, _):
        t0 = time.monotonic()
        run(["doctor", "--sys-root", TREE, "--url", f"http://127.0.0.1:{port}/", "--json"])
        elapsed = time.monotonic() - t0
    (endpoint,) = strict(capsys.readouterr().out)["endpoints"]
    assert elapsed < 8 and not endpoint["reachable"] and "timeout" in endpoint["error"]


def test_tls_failure_points_to_k(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A server that answers plain HTTP at once: the handshake fails, the error says TLS and the
    hint names -k (it used to say only "check the address, the port and that the server runs")."""
    import hostile_servers as h

    monkeypatch.setattr(h, "read_head", lambda conn: b"")
    with hostile(answer(b"{}")) as (port, _):
        assert run(["http", f"https://127.0.0.1:{port}/", "--timeout", "5"]) == 2
    err = capsys.readouterr().err
    assert "TLS" in err and "-k" in err and err.count("\n") == 1
