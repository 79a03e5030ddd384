"""Where the time to first token goes: network path, TLS/gateway, server (queueing + prefill).

The method engineers use with ``curl -w``, made exact. A TCP connect takes one round trip, so the
connect phase measures the path's RTT; the request and the first response bytes take one more,
and a TLS 1.3 handshake one more (TLS 1.2: two). Without a baseline, the server's share is the
time from request sent to first token less one RTT. With a baseline — the same request made on
the server itself (``fabriclens http --json`` run there) — the server's share is what the server
side measured, the path RTT is the client's connect less the baseline's, and whatever remains is
the gateway or proxy between the two. Ollama's own durations (model load, prompt evaluation)
split the server's share further when the response carries them.

Pure: phase medians in, a breakdown out.
"""

from __future__ import annotations

from typing import Any

PHASE_KEYS = ("dns", "connect", "tls", "request", "wait", "first_token", "transfer")


def tls_round_trips(version: str | None) -> int:
    """Round trips of a full handshake: TLS 1.3 one, older versions two, no TLS none."""
    if not version:
        return 0
    return 1 if version.endswith("1.3") else 2


def attribute(client: dict[str, float], baseline: dict[str, float] | None = None, *,
              tls_version: str | None = None, server_s: dict[str, float] | None = None) -> dict[str, Any]:  # fmt: skip
    """Break the median time to first token into named parts (seconds) that sum to it."""
    c = {k: float(client.get(k, 0.0)) for k in PHASE_KEYS}
    ttft = sum(c[k] for k in PHASE_KEYS[:-1])
    rtt_client = c["connect"]
    trips = 2 + tls_round_trips(tls_version)
    tls_work = max(0.0, c["tls"] - (trips - 2) * rtt_client)
    parts: list[dict[str, Any]] = [
        {"part": "name resolution", "seconds": c["dns"], "how": "DNS lookup"}
    ]
    if baseline is None:
        rtt = rtt_client
        server = c["request"] + c["wait"] + c["first_token"] - rtt
        method = "client only: the TCP connect time is taken as the path's round-trip time"
    else:
        b = {k: float(baseline.get(k, 0.0)) for k in PHASE_KEYS}
        rtt = max(0.0, rtt_client - b["connect"])
        server = b["request"] + b["wait"] + b["first_token"]
        method = ("baseline: the server-side request gives the server's share; the path's round trip is "
                  "the client's connect less the server-side connect")  # fmt: skip
    names = ["TCP connect", *(["TLS"] * (trips - 2)), "request/response"]
    parts.append({"part": "network path", "seconds": trips * rtt,
                  "how": f"{trips} round trips x {1e3 * rtt:.2f} ms ({', '.join(names)})"})  # fmt: skip
    if tls_version:
        parts.append({"part": "TLS handshake work", "seconds": tls_work,
                      "how": f"{tls_version}: handshake time beyond its round trips"})  # fmt: skip
    parts += _server_parts(server, server_s or {})
    if baseline is not None:
        parts.append({"part": "gateway / proxy / other", "seconds": ttft - sum(p["seconds"] for p in parts),
                      "how": "time to first token not explained by the path or the server-side request"})  # fmt: skip
    parts.append({"part": "generation (after the first token)", "seconds": c["transfer"],
                  "how": "the rest of the response: decode speed, not counted in the time to first token"})  # fmt: skip
    first = [p for p in parts if p["part"] != "generation (after the first token)"]
    biggest = max(first, key=lambda p: p["seconds"])
    share = biggest["seconds"] / ttft if ttft > 0 else 0.0
    return {
        "method": method,
        "rtt_s": rtt,
        "network_s": trips * rtt,
        "server_s": server,
        "time_to_first_token_s": ttft,
        "parts": parts,
        "verdict": f"{biggest['part']} takes {100 * share:.0f}% of the {1e3 * ttft:.1f} ms to the first token",
    }


def _server_parts(server: float, reported: dict[str, float]) -> list[dict[str, Any]]:
    load, prefill = reported.get("load"), reported.get("prefill")
    if load is None and prefill is None:
        return [{"part": "server (queueing + prefill)", "seconds": server,
                 "how": "request sent to first token, less the network's round trip"}]  # fmt: skip
    load, prefill = load or 0.0, prefill or 0.0
    return [
        {"part": "server: model load", "seconds": load, "how": "the server's load_duration"},
        {"part": "server: prefill", "seconds": prefill, "how": "the server's prompt_eval_duration"},
        {"part": "server: queueing and the rest", "seconds": server - load - prefill,
         "how": "the server's share less what it reported for load and prefill"},
    ]  # fmt: skip
