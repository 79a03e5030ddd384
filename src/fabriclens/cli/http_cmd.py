"""`fabriclens http URL`: where the time of an HTTP (LLM) request goes, phase by phase."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from fabriclens.report.phases import PHASES


def http(
    url: Annotated[str, typer.Argument(help="http:// or https:// URL (OpenAI, Ollama or any)")],
    n: Annotated[int, typer.Option("-n", help="Requests to make, one after another")] = 1,
    data: Annotated[str | None, typer.Option(help="Request body, or @FILE")] = None,
    header: Annotated[
        list[str] | None, typer.Option(help="Extra header 'Name: value' (repeatable)")
    ] = None,
    method: Annotated[
        str | None, typer.Option(help="[default: POST with --data, else GET]")
    ] = None,
    timeout: Annotated[float, typer.Option(help="Seconds per request")] = 30.0,
    json_out: Annotated[bool, typer.Option("--json", help="JSON output")] = False,
) -> None:
    """Time DNS, connect, TLS, first byte, first token and total for a request; say where the time goes."""
    import statistics

    from fabriclens.bench.http_timing import time_request
    from fabriclens.cli._output import emit
    from fabriclens.errors import InputError

    if not 1 <= n <= 1000:
        raise InputError(f"-n {n} is outside 1..1000", "give -n between 1 and 1000")
    if not 0 < timeout <= 600:
        raise InputError(f"--timeout {timeout:g} is outside (0, 600] s", "give --timeout 30")
    body = None
    if data is not None:
        if data.startswith("@"):
            try:
                body = Path(data[1:]).read_bytes()
            except OSError as exc:
                raise InputError(
                    f"cannot read {data[1:]}: {exc.strerror}", "check the path after @"
                ) from None
        else:
            body = data.encode()
    headers = {"Content-Type": "application/json"} if body is not None else {}
    for item in header or []:
        name, sep, value = item.partition(":")
        if not sep or not name.strip():
            raise InputError(
                f"--header {item!r} is not 'Name: value'",
                "write it like --header 'Authorization: Bearer X'",
            )
        headers[name.strip()] = value.strip()
    verb = (method or ("POST" if body is not None else "GET")).upper()
    runs = []
    for _ in range(n):
        try:
            runs.append(
                time_request(url, method=verb, headers=headers, body=body, timeout_s=timeout)
            )
        except ValueError as exc:
            raise InputError(
                str(exc), "give a URL like http://localhost:11434/api/generate"
            ) from None
        except OSError as exc:
            raise InputError(
                f"request to {url} failed: {exc.strerror or exc}",
                "check the address, the port and that the server runs",
            ) from None

    def phases(t: Any) -> dict[str, float]:
        tls_end = t.tls_s if t.tls_s is not None else t.connect_s
        first_byte = t.ttfb_s if t.ttfb_s is not None else t.total_s
        token = t.first_token_s if t.first_token_s is not None else first_byte
        return {"dns": t.dns_s, "connect": t.connect_s - t.dns_s, "tls": tls_end - t.connect_s, "request": t.sent_s - tls_end,
                "wait": first_byte - t.sent_s, "first_token": token - first_byte, "transfer": t.total_s - token}  # fmt: skip

    def stats(values: list[float]) -> dict[str, float]:
        ordered = sorted(values)

        def pick(q: float) -> float:
            return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

        return {
            "mean": statistics.fmean(values),
            "p50": pick(0.5),
            "p90": pick(0.9),
            "p99": pick(0.99),
        }

    per = [phases(t) for t in runs]
    summary = {p: stats([x[p] for x in per]) for p in PHASES}
    ttfts = [t.first_token_s for t in runs if t.first_token_s is not None]
    biggest = max(PHASES, key=lambda p: summary[p]["p50"])
    doc = {
        "url": url,
        "method": verb,
        "requests": n,
        "status": [t.status for t in runs],
        "phases_s": summary,
        "ttfb_s": stats([t.ttfb_s for t in runs if t.ttfb_s is not None] or [0.0]),
        "ttft_s": stats(ttfts) if ttfts else None,
        "total_s": stats([t.total_s for t in runs]),
        "tokens_seen": runs[-1].tokens_seen,
        "usage_tokens": runs[-1].usage_tokens,
        "biggest_phase": biggest,
        "where": _where(biggest, summary),
    }
    emit(doc, json_out, "http_renderables")


def _where(biggest: str, summary: dict[str, dict[str, float]]) -> str:
    total = sum(v["p50"] for v in summary.values()) or 1.0
    share = f"{100 * summary[biggest]['p50'] / total:.0f}% of the median request"
    return {
        "dns": f"name resolution ({share}): check the resolver",
        "connect": f"the network path ({share}): TCP connect is slow — compare with ping to the host",
        "tls": f"TLS / gateway ({share}): the handshake dominates — reuse connections or look at the proxy",
        "request": f"sending the request ({share}): a large body over a slow uplink",
        "wait": f"the server before it answers ({share}): queueing or prefill — compare with a request made on the server itself",
        "first_token": f"the model's prefill after the headers ({share}): the server streams headers, then computes",
        "transfer": f"generation and transfer of the body ({share}): decode speed, or a slow link for large bodies",
    }[biggest]
