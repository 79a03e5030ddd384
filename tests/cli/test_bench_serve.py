"""`fabriclens bench serve` against the reference streaming server on loopback: the configured
TTFT and inter-token latency come back, tokens are counted exactly, injected errors are named.
(The same behind a lab link with an added delay: tests/lab/test_serve_lab.py.)"""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from fabriclens.bench.stream_server import spawn
from fabriclens.cli.app import run

Server = Callable[..., str]
Quietly = Callable[..., tuple[dict, float]]  # type: ignore[type-arg]


@pytest.fixture
def server() -> Iterator[Server]:
    procs = []

    def start(*args: str) -> str:
        proc, url = spawn([*args, "--lifetime", "300"])
        procs.append(proc)
        return url

    yield start
    for p in procs:
        p.kill()
        p.wait(timeout=5)


def _serve(capsys: pytest.CaptureFixture[str], *argv: str, status: int = 0) -> dict:  # type: ignore[type-arg]
    assert run(["bench", "serve", *argv, "--model", "m", "--json"]) == status, (
        capsys.readouterr().err
    )
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


@pytest.mark.parametrize(("concurrency", "tol"), [(1, 0.05), (64, 0.10)])
def test_recovers_configured_ttft_and_itl(server: Server, capsys: pytest.CaptureFixture[str],
                                          quietly: Quietly, concurrency: int,
                                          tol: float) -> None:  # fmt: skip
    """200 ms TTFT, 20 ms per token in chunks of 2: within 5% at c=1, 10% at c=64; exact tokens."""
    url = server("--ttft", "0.2", "--itl", "0.02", "--tokens-per-chunk", "2")
    n = 4 if concurrency == 1 else 128
    want_tpot = 11 * 2 * 0.02 / 23  # (last - first) / (tokens - 1)

    def measure() -> dict:  # type: ignore[type-arg]
        return _serve(capsys, url, "--concurrency", str(concurrency), "--requests", str(n),
                      "--output-tokens", "24")  # fmt: skip

    def on_time(doc: dict) -> bool:  # type: ignore[type-arg]
        r = doc["results"][0]
        return bool(
            abs(r["ttft_s"]["p50"] / 0.2 - 1) <= tol
            and abs(r["itl_s"]["p50"] / 0.02 - 1) <= tol
            and abs(r["itl_s"]["mean"] / 0.02 - 1) <= tol
            and abs(r["tpot_s"]["p50"] / want_tpot - 1) <= tol
        )

    # The server's sleeps and the client share two busy cores: a late wake-up adds to one run,
    # not to the next (measured_quietly); a client that mis-times is off every time and fails.
    doc, _ = quietly(measure, on_time)
    r = doc["results"][0]
    assert r["completed"] == n and r["errors"] == {}
    assert r["ttft_s"]["p50"] == pytest.approx(0.2, rel=tol)
    assert r["itl_s"]["p50"] == pytest.approx(0.02, rel=tol) and r["itl_s"][
        "mean"
    ] == pytest.approx(0.02, rel=tol)
    assert r["tpot_s"]["p50"] == pytest.approx(want_tpot, rel=tol)
    assert r["output_tokens"] == 24 * n and r["token_count"] == "usage"
    assert doc["client_overhead"]["per_chunk_ms"] < 1.0


def test_ollama_and_estimated_counts(server: Server, capsys: pytest.CaptureFixture[str]) -> None:
    """Ollama lines; a server without counts: tokens estimated and labelled so."""
    url = server("--ttft", "0.05", "--itl", "0.005", "--no-usage")
    doc = _serve(
        capsys, url + "/api/chat", "--concurrency", "2", "--requests", "4", "--output-tokens", "10"
    )
    assert doc["api"] == "ollama"
    r = doc["results"][0]
    assert r["completed"] == 4 and r["token_count"] == "estimated"
    assert any("estimated" in a for a in doc["assumptions"])


def test_injected_errors_are_counted_by_kind(
    server: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    url = server("--ttft", "0.01", "--itl", "0.002", "--error-every", "5", "--disconnect-every", "7",
                 "--malformed-every", "11")  # fmt: skip
    doc = _serve(
        capsys, url, "--concurrency", "4", "--requests", "40", "--output-tokens", "8", status=1
    )
    want: dict[str, int] = {}
    for i in range(1, 41):
        kind = (
            "http 500"
            if i % 5 == 0
            else "disconnect"
            if i % 7 == 0
            else "malformed stream"
            if i % 11 == 0
            else None
        )
        if kind:
            want[kind] = want.get(kind, 0) + 1
    r = doc["results"][0]
    assert r["errors"] == want and r["completed"] == 40 - sum(want.values())


def test_open_loop_slo_and_plot(
    server: Server, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    url = server("--ttft", "0.05", "--itl", "0.01")
    png = tmp_path / "serve.png"
    doc = _serve(capsys, url, "--rate", "20,40", "--requests", "10", "--output-tokens", "5",
                 "--slo", "ttft=30ms", "--plot", str(png))  # fmt: skip
    assert doc["mode"] == "open loop" and [r["rate"] for r in doc["results"]] == [20.0, 40.0]
    assert all(r["completed"] == 10 for r in doc["results"])
    assert all(r["goodput"]["requests_met"] == 0 for r in doc["results"])  # 50 ms TTFT misses 30 ms
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_timeout_refused_and_not_streamed(
    server: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    url = server("--ttft", "2")
    r = _serve(capsys, url, "--concurrency", "1", "--requests", "1", "--timeout", "0.3", status=1)[
        "results"
    ][0]
    assert r["errors"] == {"timeout": 1}
    doc = _serve(
        capsys,
        "http://127.0.0.1:9/v1/completions",
        "--concurrency",
        "1,2",
        "--requests",
        "1",
        status=1,
    )
    assert len(doc["results"]) == 1 and doc["results"][0]["errors"] == {"connection refused": 1}


@pytest.mark.parametrize("path", ["", "/v1/completions"])
def test_a_server_that_does_not_stream(
    server: Server, capsys: pytest.CaptureFixture[str], path: str
) -> None:
    """A whole chat.completion, and a whole text_completion (whose choices look like a streamed
    chunk's): both are "not streamed", not a disconnect."""
    url = server("--ttft", "0.01", "--itl", "0.001", "--never-stream") + path
    doc = _serve(
        capsys, url, "--concurrency", "1", "--requests", "3", "--output-tokens", "4", status=1
    )
    (kind,) = doc["results"][0]["errors"]
    assert kind.startswith("not streamed") and doc["results"][0]["errors"][kind] == 3


def test_tls_certificate_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A TLS server with a self-signed certificate: the error names TLS and the sweep stops;
    http gives one line."""
    key, cert = tmp_path / "k.pem", tmp_path / "c.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", "/CN=localhost"], check=True, capture_output=True, timeout=60)  # fmt: skip
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    port = listener.getsockname()[1]
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            conn.settimeout(5)
            with contextlib.suppress(OSError):
                ctx.wrap_socket(conn, server_side=True).close()
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        doc = _serve(capsys, f"https://127.0.0.1:{port}/", "--concurrency", "1,2", "--requests", "1",
                     "--timeout", "10", status=1)  # fmt: skip
        (kind,) = doc["results"][0]["errors"]
        assert kind.startswith("tls") and "CERTIFICATE" in kind.upper() and len(doc["results"]) == 1
        assert run(["http", f"https://127.0.0.1:{port}/v1/completions", "--timeout", "10"]) == 2
        err = capsys.readouterr().err
        assert "certificate" in err.lower() and err.count("\n") == 1
        # -k accepts it: the handshake completes (TLS 1.3 here), then this server hangs up
        assert run(["http", f"https://127.0.0.1:{port}/", "-k", "--timeout", "10", "--json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        assert doc["tls_version"] == "TLSv1.3" and doc["phases_s"]["tls"]["p50"] > 0
        assert doc["attribution"]["parts"][2]["part"] == "TLS handshake work"
        k = _serve(
            capsys,
            f"https://127.0.0.1:{port}/",
            "-k",
            "--concurrency",
            "1",
            "--requests",
            "1",
            status=1,
        )
        assert k["results"][0]["errors"] == {"disconnect": 1}
    finally:
        stop.set()
        thread.join(timeout=5)
        listener.close()


def test_duration_instead_of_a_count(server: Server, capsys: pytest.CaptureFixture[str]) -> None:
    url = server("--ttft", "0.01", "--itl", "0.001")
    r = _serve(capsys, url, "--concurrency", "2", "--duration", "0.5", "--output-tokens", "4")[
        "results"
    ][0]
    assert r["completed"] >= 4 and r["errors"] == {} and r["duration_s"] >= 0.5


def test_planner_comparison(server: Server, capsys: pytest.CaptureFixture[str]) -> None:
    url = server("--ttft", "0.01", "--itl", "0.001")
    doc = _serve(capsys, url, "--concurrency", "1", "--requests", "2", "--output-tokens", "4",
                 "--plan-gpu", "h100-sxm", "--plan-model", "llama-3.1-8b")  # fmt: skip
    exp = doc["results"][0]["expected"]
    assert exp["gpu"] == "h100-sxm" and exp["output_tokens_per_s"] > 0 and exp["tpot_s"] > 0
    assert exp["engine"] == "vllm"  # an OpenAI-compatible server: vLLM unless --plan-engine


def test_planner_comparison_for_ollama_takes_ollama_s_defaults(
    server: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    """Against the Ollama API the expectation is Ollama's: its 4-bit default weights decode
    faster than vLLM's BF16, and OLLAMA_NUM_PARALLEL=1 runs one of four requests at a time."""
    url = server("--ttft", "0.01", "--itl", "0.001")
    args = ("--concurrency", "4", "--requests", "4", "--output-tokens", "4",
            "--plan-gpu", "rtx-4090", "--plan-model", "llama-3.1-8b")  # fmt: skip
    ollama = _serve(capsys, url + "/api/chat", *args)["results"][0]["expected"]
    vllm = _serve(capsys, url + "/api/chat", *args, "--plan-engine", "vllm")["results"][0][
        "expected"
    ]
    assert ollama["engine"] == "ollama" and vllm["engine"] == "vllm"
    assert ollama["batch"] == 1 and "runs 1 of 4 requests at once" in ollama["note"]
    assert ollama["tpot_s"] < vllm["tpot_s"] / 2  # 4.89-bit weights against 16-bit, batch 1 vs 4


def test_the_served_model_name_reaches_the_planner(
    server: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--model llama3.1:8b` (the Ollama tag the server is asked for, as this command's help
    shows) is the planner's model too, with the weights the tag names: Q8_0 reads twice the bytes
    per token of the default Q4_K_M."""
    url = server("--ttft", "0.01", "--itl", "0.001") + "/api/chat"

    def expected(model: str) -> dict:  # type: ignore[type-arg]
        argv = ["bench", "serve", url, "--model", model, "--concurrency", "1", "--requests", "1",
                "--output-tokens", "4", "--plan-gpu", "rtx-4090", "--json"]  # fmt: skip
        assert run(argv) == 0, capsys.readouterr().err
        return json.loads(capsys.readouterr().out)["results"][0]["expected"]  # type: ignore[no-any-return]

    q4, q8 = expected("llama3.1:8b"), expected("llama3.1:8b-instruct-q8_0")
    assert q4["model"] == q8["model"] == "llama-3.1-8b" and q4["engine"] == "ollama"
    assert 1.4 < q8["tpot_s"] / q4["tpot_s"] < 1.8  # 8.5 vs 4.89 bits per weight, + fixed costs


def test_text_output(server: Server, capsys: pytest.CaptureFixture[str]) -> None:
    url = server("--ttft", "0.02", "--itl", "0.002")
    assert (
        run(
            [
                "bench",
                "serve",
                url,
                "--model",
                "m",
                "--concurrency",
                "2",
                "--requests",
                "4",
                "--output-tokens",
                "6",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "TTFT p50" in out and "Client overhead" in out and "at the server" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["ftp://x", "--model", "m"], "not an http(s) URL"),
        (["http://127.0.0.1:9/"], "no --model"),
        (["http://127.0.0.1:9/", "--model", "m", "--api", "grpc"], "unknown --api"),
        (["http://127.0.0.1:9/", "--model", "m", "--concurrency", "0"], "--concurrency"),
        (["http://127.0.0.1:9/", "--model", "m", "--rate", "fast"], "--rate"),
        (
            ["http://127.0.0.1:9/", "--model", "m", "--rate", "1", "--concurrency", "1"],
            "both given",
        ),
        (["http://127.0.0.1:9/", "--model", "m", "--slo", "speed=1"], "--slo"),
        (["http://127.0.0.1:9/", "--model", "m", "--prompts", "/nonexistent"], "cannot read"),
        (["http://127.0.0.1:9/", "--model", "m", "--plan-gpu", "h100-sxm"], "model"),
        (
            [
                "http://127.0.0.1:9/",
                "--model",
                "llama-3.1-8b",
                "--plan-gpu",
                "h100-sxm",
                "--plan-engine",
                "nginx",
            ],
            "engine",
        ),
        (["http://127.0.0.1:9/", "--model", "m", "--header", "x"], "Name: value"),
    ],
)
def test_bad_input_is_one_line(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert run(["bench", "serve", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_prompts_file(server: Server, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    url = server("--ttft", "0.01", "--itl", "0.001")
    good = tmp_path / "p.jsonl"
    good.write_text('{"prompt": "hello there", "output_tokens": 3}\n\n{"prompt": "again"}\n')
    r = _serve(
        capsys,
        url,
        "--prompts",
        str(good),
        "--concurrency",
        "1",
        "--requests",
        "2",
        "--output-tokens",
        "5",
    )
    assert r["results"][0]["output_tokens"] == 8
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "ok"}\n[1, 2]\n')
    assert run(["bench", "serve", url, "--model", "m", "--prompts", str(bad)]) == 2
    assert "line 2" in capsys.readouterr().err


def test_a_huge_prompt_file_is_read_up_to_max_prompts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """63 MB of one-character prompts (1.9 million) had needed 226 MB: the first MAX_PROMPTS
    are kept (requests take them in turn) and a note says so."""
    from fabriclens.cli.serve_cmd import MAX_PROMPTS, _prompts

    path = tmp_path / "p.jsonl"
    path.write_text('{"prompt": "a", "output_tokens": 1}\n' * (MAX_PROMPTS + 10))
    assert len(_prompts(path, 8, 8, 0)) == MAX_PROMPTS
    assert f"first {MAX_PROMPTS:,} prompts" in capsys.readouterr().err


def test_planner_comparison_with_speculative_decoding(
    server: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    """A server that decodes speculatively is compared with the plan of the same: three MTP
    drafts accepted 2.5 a step plan DeepSeek-V3 on 8 H200s under SGLang faster a token than plain
    decode; a planner option without --plan-gpu is refused, not ignored."""
    url = server("--ttft", "0.01", "--itl", "0.001")
    args = ("--concurrency", "1", "--requests", "1", "--output-tokens", "4", "--plan-gpu", "h200",
            "--plan-gpus", "8", "--plan-model", "deepseek-v3", "--plan-engine", "sglang")  # fmt: skip
    plain = _serve(capsys, url, *args)["results"][0]["expected"]
    spec = _serve(capsys, url, *args, "--plan-spec-tokens", "3", "--plan-accept-length", "2.5")[
        "results"
    ][0]["expected"]
    assert spec["tpot_s"] < plain["tpot_s"] / 1.5
    assert run(["bench", "serve", url, "--model", "m", "--plan-spec-tokens", "3"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "needs --plan-gpu" in err
    assert run(["bench", "serve", url, "--model", "m", *args, "--plan-spec-tokens", "3"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "needs --plan-accept-length" in err


def test_the_servers_own_speculation_is_read_and_planned(
    server: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    """After the load test bench serve asks the server what it ran (SGLang's /server_info, vLLM's
    /metrics): a speculative server's draft length and accept length are reported and, with
    --plan-gpu, planned; a plain server reports none, and says what was asked."""
    args = ("--concurrency", "1", "--requests", "2", "--output-tokens", "4", "--plan-gpu", "h200",
            "--plan-gpus", "8", "--plan-model", "deepseek-v3", "--plan-engine", "sglang")  # fmt: skip
    plain_url = server("--ttft", "0.01", "--itl", "0.001")
    plain = _serve(capsys, plain_url, *args)
    assert plain["server_speculation"]["reported"] is False
    assert "/server_info: 200" in plain["server_speculation"]["why"]  # answered, no speculation
    spec_url = server("--ttft", "0.01", "--itl", "0.001", "--spec-tokens", "3",
                      "--accept-length", "2.5")  # fmt: skip
    doc = _serve(capsys, spec_url, *args)
    told = doc["server_speculation"]
    assert told["reported"] and (told["spec_tokens"], told["accept_length"]) == (3, 2.5)
    assert told["source"] == "SGLang /server_info"
    expected = doc["results"][0]["expected"]
    assert expected["speculation"] == "as the server reports it"
    assert expected["tpot_s"] < plain["results"][0]["expected"]["tpot_s"] / 1.5
    # what the user gives wins over what the server says
    given = _serve(
        capsys, spec_url, *args, "--plan-spec-tokens", "3", "--plan-accept-length", "1.5"
    )
    assert "speculation" not in given["results"][0]["expected"]
    assert given["results"][0]["expected"]["tpot_s"] > expected["tpot_s"]
    # a tree of drafts (top-4, 8 positions verified) is planned as the server reports it too
    tree_url = server("--ttft", "0.01", "--itl", "0.001", "--spec-tokens", "3", "--accept-length",
                      "2.5", "--draft-topk", "4", "--draft-tokens", "8")  # fmt: skip
    tree = _serve(capsys, tree_url, *args)
    told = tree["server_speculation"]
    assert told["plannable"] and (told["topk"], told["draft_tokens"]) == (4, 8)
    assert tree["results"][0]["expected"]["speculation"] == "as the server reports it"
