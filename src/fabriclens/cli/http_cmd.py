"""`fabriclens http URL`: where the time of an HTTP (LLM) request goes, phase by phase."""

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
    timeout: Annotated[
        float,
        typer.Option(help="Seconds for each whole request: connect, send and the full answer"),
    ] = 30.0,
    baseline: Annotated[
        Path | None,
        typer.Option(
            help="`fabriclens http --json` output from the same request made on the server"
        ),
    ] = None,
    baseline_url: Annotated[
        str | None,
        typer.Option(
            help="Also time this URL (the server's own address, e.g. http://localhost:8000/...) as the baseline"
        ),
    ] = None,
    insecure: Annotated[
        bool,
        typer.Option("--insecure", "-k", help="Accept any TLS certificate (self-signed servers)"),
    ] = False,
    json_out: Annotated[bool, typer.Option("--json", help="JSON output")] = False,
) -> None:
    """Time DNS, connect, TLS, first byte, first token and total for a request; say where the time goes."""
    from fabriclens.cli._output import emit, parse_headers
    from fabriclens.errors import InputError
    from fabriclens.measure.attribution import attribute
    from fabriclens.redact import redact_url

    if not 1 <= n <= 1000:
        raise InputError(f"-n {n} is outside 1..1000", "give -n between 1 and 1000")
    if not 0 < timeout <= 600:  # NaN fails this too
        raise InputError(f"--timeout {timeout:g} is outside (0, 600] s", "give --timeout 30")
    body = read_body(data)
    headers = {"Content-Type": "application/json"} if body is not None else {}
    headers.update(parse_headers(header))
    if baseline is not None and baseline_url is not None:
        raise InputError("--baseline and --baseline-url were both given", "choose one baseline")
    base_phases = _read_baseline(baseline) if baseline is not None else None
    verb = (method or ("POST" if body is not None else "GET")).upper()
    runs = time_many(url, n, verb, headers, body, timeout, insecure)
    doc = summarise_runs(url, verb, runs)
    if baseline_url is not None:
        base_doc = summarise_runs(
            baseline_url, verb, time_many(baseline_url, n, verb, headers, body, timeout, insecure)
        )
        base_phases = {p: base_doc["phases_s"][p]["p50"] for p in PHASES}
        doc["baseline"] = {"url": redact_url(baseline_url), "phases_s": base_doc["phases_s"]}
    elif baseline is not None:
        doc["baseline"] = {"file": str(baseline), "phases_s": base_phases}
    doc["attribution"] = attribute(
        {p: doc["phases_s"][p]["p50"] for p in PHASES}, base_phases,
        tls_version=runs[-1].tls_version, server_s=runs[-1].server_s,
    )  # fmt: skip
    emit(doc, json_out, "serving_text.http_renderables")


def _read_baseline(path: Path) -> dict[str, float]:
    import math

    from fabriclens.errors import InputError
    from fabriclens.inputs import read_json

    fix = "run `fabriclens http URL --json > base.json` on the server and give that file"
    doc = read_json(path, "--baseline", fix)
    try:
        phases = {p: float(doc["phases_s"][p]["p50"]) for p in PHASES}
        if not all(math.isfinite(v) and v >= 0 for v in phases.values()):
            raise ValueError
        return phases
    except (ValueError, KeyError, TypeError):
        raise InputError(
            f"{path} is not the output of `fabriclens http --json`",
            "run `fabriclens http URL --json > base.json` on the server and give that file",
        ) from None


def read_body(data: str | None) -> bytes | None:
    """--data: the body itself, or @FILE."""
    from fabriclens.inputs import read_bytes

    if data is None or not data.startswith("@"):
        return None if data is None else data.encode()
    return read_bytes(data[1:], "--data file")


def time_many(url: str, n: int, verb: str, headers: dict[str, str], body: bytes | None,
               timeout: float, insecure: bool) -> list[Any]:  # fmt: skip
    import ssl

    from fabriclens.bench.http_timing import time_request
    from fabriclens.errors import InputError
    from fabriclens.redact import redact_text, redact_url

    shown = redact_url(url)
    runs = []
    for _ in range(n):
        try:
            runs.append(
                time_request(
                    url,
                    method=verb,
                    headers=headers,
                    body=body,
                    timeout_s=timeout,
                    insecure=insecure,
                )
            )
        except ValueError as exc:
            raise InputError(
                redact_text(str(exc)), "give a URL like http://localhost:11434/api/generate"
            ) from None
        except TimeoutError:
            raise InputError(
                f"request to {shown} failed: no complete answer within the {timeout:g} s timeout",
                "check that the server answers, or give a longer --timeout (it bounds the whole request)",
            ) from None
        except ssl.SSLError as exc:
            raise InputError(
                f"TLS with {shown} failed: {redact_text(_tls_reason(exc))}",
                "for a self-signed or private certificate add -k (--insecure); otherwise check the "
                "host name and the server's certificate chain",
            ) from None
        except OSError as exc:
            raise InputError(
                f"request to {shown} failed: {redact_text(str(exc.strerror or exc))}",
                "check the address, the port and that the server runs",
            ) from None
    return runs


def _tls_reason(exc: Exception) -> str:
    """An ssl error in a few words: its reason and, for a refused certificate, why."""
    reason = str(getattr(exc, "reason", None) or exc)
    why = getattr(exc, "verify_message", None)
    return f"{reason} ({why})" if why else reason


def summarise_runs(url: str, verb: str, runs: list[Any]) -> dict[str, Any]:
    """Per-phase statistics of several timed requests, and where the time goes."""
    from fabriclens.measure.serving import summarize

    def phases(t: Any) -> dict[str, float]:
        tls_end = t.tls_s if t.tls_s is not None else t.connect_s
        first_byte = t.ttfb_s if t.ttfb_s is not None else t.total_s
        token = t.first_token_s if t.first_token_s is not None else first_byte
        return {"dns": t.dns_s, "connect": t.connect_s - t.dns_s, "tls": tls_end - t.connect_s, "request": t.sent_s - tls_end,
                "wait": first_byte - t.sent_s, "first_token": token - first_byte, "transfer": t.total_s - token}  # fmt: skip

    def stats(values: list[float]) -> dict[str, float]:
        return summarize(values) or {"mean": 0.0, "p50": 0.0, "p90": 0.0, "p99": 0.0}

    per = [phases(t) for t in runs]
    summary = {p: stats([x[p] for x in per]) for p in PHASES}
    ttfts = [t.first_token_s for t in runs if t.first_token_s is not None]
    biggest = max(PHASES, key=lambda p: summary[p]["p50"])
    from fabriclens.redact import redact_url

    capped = [t.body_bytes for t in runs if t.body_capped]
    return {
        "url": redact_url(url),
        "method": verb,
        "requests": len(runs),
        "status": [t.status for t in runs],
        "phases_s": summary,
        "ttfb_s": stats([t.ttfb_s for t in runs if t.ttfb_s is not None]),
        "ttft_s": stats(ttfts) if ttfts else None,
        "total_s": stats([t.total_s for t in runs]),
        "tokens_seen": runs[-1].tokens_seen,
        "usage_tokens": runs[-1].usage_tokens,
        "tls_version": runs[-1].tls_version,
        "server_reported_s": runs[-1].server_s,
        "biggest_phase": biggest,
        "where": _where(biggest, summary),
        "body_capped": (
            f"stopped reading after {capped[0]:,} bytes (the body cap): the transfer time covers that part"
            if capped
            else None
        ),
    }


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


def check_url(url: str) -> None:
    """A usage error unless ``url`` is http(s)://host..."""
    from urllib.parse import urlsplit

    from fabriclens.errors import InputError

    try:
        parts = urlsplit(url)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:
        ok = False
    if not ok:
        from fabriclens.redact import redact_url

        raise InputError(
            f"--url {redact_url(url)!r} is not an http(s) URL",
            "give --url http://host:11434/api/generate",
        )


ENDPOINT_TIMEOUT_S = 30.0  # doctor --url: each whole request


def check_endpoint(
    url: str, body: bytes | None, n: int = 5, timeout: float | None = None
) -> tuple[dict[str, Any] | None, str]:
    """For doctor: ``n`` timed requests to ``url`` (each within ``timeout``, the first failure
    ends them) and the attribution of the time to first token, or (None, why) when the server
    does not answer. A malformed URL is a usage error."""
    from fabriclens.errors import InputError
    from fabriclens.measure.attribution import attribute

    check_url(url)
    verb = "POST" if body is not None else "GET"
    headers = {"Content-Type": "application/json"} if body is not None else {}
    try:
        runs = time_many(url, n, verb, headers, body, timeout or ENDPOINT_TIMEOUT_S, insecure=False)
    except InputError as exc:
        return None, exc.problem
    doc = summarise_runs(url, verb, runs)
    doc["attribution"] = attribute({p: doc["phases_s"][p]["p50"] for p in PHASES}, None,
                                   tls_version=runs[-1].tls_version, server_s=runs[-1].server_s)  # fmt: skip
    return doc, ""
