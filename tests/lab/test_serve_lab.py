"""Inference endpoints behind a lab link with a known delay: `http` attributes the delay to the
network and the server's TTFT to the server; `bench serve` recovers the server's TTFT and
inter-token latency (5% at concurrency 1, 10% at 64) and counts tokens exactly."""

from __future__ import annotations

import json
import re
import statistics
import sys
from pathlib import Path

import pytest

from fabriclens.bench.stream_server import spawn
from fabriclens.lab import lab_session

DELAY_S = 0.010  # on h2's link, each direction: RTT h1 <-> h2 = 20 ms
RTT_S = 2 * DELAY_S
TTFT_S, ITL_S, PER_CHUNK, TOKENS = 0.2, 0.02, 2, 24
BODY = json.dumps({"model": "m", "max_tokens": TOKENS, "stream_options": {"include_usage": True}})
FL = [sys.executable, "-m", "fabriclens"]


def test_http_and_bench_serve_behind_a_delayed_link(tmp_path: Path) -> None:
    with lab_session("sv", hosts=2, overrides={"h2": {"delay": f"{DELAY_S * 1e3:g}ms"}}) as lab:
        _, url = spawn(["--bind", "0.0.0.0", "--ttft", str(TTFT_S), "--itl", str(ITL_S), "--tokens-per-chunk",
                        str(PER_CHUNK), "--lifetime", "300"], launch=lambda argv, **kw: lab.popen("h2", argv, **kw))  # fmt: skip
        port = url.rsplit(":", 1)[1]
        probes = lab.run(
            "h1", ["ping", "-n", "-c", "30", "-i", "0.05", lab.host("h2").address]
        ).stdout
        path_rtt = statistics.median(
            float(t) / 1e3 for t in re.findall(r"time=([\d.]+) ms", probes)
        )
        path = "/v1/chat/completions"
        remote = f"http://{lab.host('h2').address}:{port}{path}"
        base = lab.run(
            "h2",
            [*FL, "http", f"http://127.0.0.1:{port}{path}", "--data", BODY, "-n", "10", "--json"],
        )
        assert base.returncode == 0, base.stderr
        base_file = tmp_path / "base.json"
        base_file.write_text(base.stdout)
        client = lab.run(
            "h1",
            [
                *FL,
                "http",
                remote,
                "--data",
                BODY,
                "-n",
                "10",
                "--baseline",
                str(base_file),
                "--json",
            ],
        )
        assert client.returncode == 0, client.stderr
        serve = {
            c: lab.run("h1", [*FL, "bench", "serve", remote, "--model", "m", "--concurrency", str(c),
                              "--requests", str(n), "--output-tokens", str(TOKENS), "--json"], timeout_s=120)
            for c, n in ((1, 6), (64, 128))
        }  # fmt: skip
    att = json.loads(client.stdout)["attribution"]
    # the path: 20 ms configured, plus what the lab's userspace stage adds (ping measures both);
    # two round trips (connect, request/response): within 10% or 2 ms of what ping measured
    assert path_rtt == pytest.approx(RTT_S, abs=0.003)
    assert att["network_s"] == pytest.approx(2 * path_rtt, abs=max(0.002, 0.1 * 2 * path_rtt))
    assert att["server_s"] == pytest.approx(TTFT_S, rel=0.10)
    assert att["verdict"].startswith("server")
    for c, tol in ((1, 0.05), (64, 0.10)):
        assert serve[c].returncode == 0, serve[c].stderr
        r = json.loads(serve[c].stdout)["results"][0]
        assert r["errors"] == {} and r["output_tokens"] == TOKENS * r["requests"]
        assert r["ttft_server_s"]["p50"] == pytest.approx(TTFT_S, rel=tol)
        assert r["ttft_s"]["p50"] == pytest.approx(TTFT_S + 2 * RTT_S, rel=tol)
        assert r["itl_s"]["p50"] == pytest.approx(ITL_S, rel=tol)
        assert r["itl_s"]["mean"] == pytest.approx(ITL_S, rel=tol)
