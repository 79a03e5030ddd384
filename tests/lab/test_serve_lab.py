"""Inference endpoints behind a lab link with a known delay: `http` attributes the delay to the
network and the server's TTFT to the server; `bench serve` recovers the server's TTFT and
inter-token latency (5% at concurrency 1, 10% at 64) and counts tokens exactly."""

from __future__ import annotations

import json
import re
import statistics
import sys
from pathlib import Path
from typing import Any

from fabriclens.bench.stream_server import spawn
from fabriclens.lab import Lab, lab_session

DELAY_S = 0.010  # on h2's link, each direction: RTT h1 <-> h2 = 20 ms
RTT_S = 2 * DELAY_S
TTFT_S, ITL_S, PER_CHUNK, TOKENS = 0.2, 0.02, 2, 24
BODY = json.dumps(
    {"model": "m", "max_tokens": TOKENS, "stream": True, "stream_options": {"include_usage": True}}
)
FL = [sys.executable, "-m", "fabriclens"]


def _measure(lab: Lab, port: str, tmp_path: Path) -> dict[str, Any]:
    path = "/v1/chat/completions"
    remote = f"http://{lab.host('h2').address}:{port}{path}"
    probes = lab.run("h1", ["ping", "-n", "-c", "30", "-i", "0.05", lab.host("h2").address]).stdout
    base = lab.run(
        "h2", [*FL, "http", f"http://127.0.0.1:{port}{path}", "--data", BODY, "-n", "10", "--json"]
    )
    assert base.returncode == 0, base.stderr
    base_file = tmp_path / "base.json"
    base_file.write_text(base.stdout)
    client = lab.run(
        "h1",
        [*FL, "http", remote, "--data", BODY, "-n", "10", "--baseline", str(base_file), "--json"],
    )
    assert client.returncode == 0, client.stderr
    serve = {}
    for c, n in ((1, 6), (64, 128)):
        res = lab.run(
            "h1",
            [
                *FL,
                "bench",
                "serve",
                remote,
                "--model",
                "m",
                "--concurrency",
                str(c),
                "--requests",
                str(n),
                "--output-tokens",
                str(TOKENS),
                "--json",
            ],
            timeout_s=120,
        )
        assert res.returncode == 0, res.stderr
        serve[c] = json.loads(res.stdout)["results"][0]
    return {
        "path_rtt": statistics.median(float(t) / 1e3 for t in re.findall(r"time=([\d.]+) ms", probes)),
        "attribution": json.loads(client.stdout)["attribution"],
        "serve": serve,
    }  # fmt: skip


def _misses(m: dict[str, Any]) -> list[str]:
    """What is outside its tolerance (empty when everything holds)."""
    out = []

    def near(name: str, got: float, want: float, tol: float) -> None:
        if abs(got - want) > tol:
            out.append(f"{name}: {got:.4f} vs {want:.4f} ± {tol:.4f}")

    rtt = m[
        "path_rtt"
    ]  # 20 ms configured, plus what the lab's userspace stage adds (ping sees both)
    near("path RTT (ping)", rtt, RTT_S, 0.003)
    att = m["attribution"]  # two round trips (connect, request/response): 10% or 2 ms
    near("network path", att["network_s"], 2 * rtt, max(0.002, 0.1 * 2 * rtt))
    near("server", att["server_s"], TTFT_S, 0.1 * TTFT_S)
    if not att["verdict"].startswith("server"):
        out.append(f"verdict: {att['verdict']}")
    for c, tol in ((1, 0.05), (64, 0.10)):
        r = m["serve"][c]
        if r["errors"] or r["output_tokens"] != TOKENS * r["requests"]:
            out.append(f"c={c}: errors {r['errors']}, {r['output_tokens']} tokens")
        near(f"c={c} server TTFT", r["ttft_server_s"]["p50"], TTFT_S, tol * TTFT_S)
        near(f"c={c} TTFT", r["ttft_s"]["p50"], TTFT_S + 2 * RTT_S, tol * (TTFT_S + 2 * RTT_S))
        near(f"c={c} ITL p50", r["itl_s"]["p50"], ITL_S, tol * ITL_S)
        near(f"c={c} ITL mean", r["itl_s"]["mean"], ITL_S, tol * ITL_S)
    return out


def test_http_and_bench_serve_behind_a_delayed_link(tmp_path: Path, quietly) -> None:  # type: ignore[no-untyped-def]
    with lab_session("sv", hosts=2, overrides={"h2": {"delay": f"{DELAY_S * 1e3:g}ms"}}) as lab:
        _, url = spawn(
            [
                "--bind",
                "0.0.0.0",
                "--ttft",
                str(TTFT_S),
                "--itl",
                str(ITL_S),
                "--tokens-per-chunk",
                str(PER_CHUNK),
                "--lifetime",
                "300",
            ],
            launch=lambda argv, **kw: lab.popen("h2", argv, **kw),
        )
        port = url.rsplit(":", 1)[1]
        measured, _ = quietly(lambda: _measure(lab, port, tmp_path), lambda m: not _misses(m))
    assert _misses(measured) == []
