"""One HTTP request, timed phase by phase: DNS, TCP connect, TLS, request sent, first byte,
first token (for streamed LLM responses: OpenAI SSE or Ollama JSON lines), total.

Raw sockets rather than an HTTP library, so each phase is measured where it happens; every
socket has a timeout, and the body is read incrementally (chunked transfer decoded on the fly)
to see the first token when it arrives.
"""

from __future__ import annotations

import socket
import ssl
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from fabriclens.parse.llm_stream import ResponseLines, parse_line

MAX_BODY_BYTES = 64 << 20


def tls_context(insecure: bool = False) -> ssl.SSLContext:
    """The system's trust store; ``insecure`` accepts any certificate (a self-signed test server)."""
    ctx = ssl.create_default_context()
    if insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    return ctx


@dataclass(frozen=True)
class HttpTiming:
    """Seconds from the start of the request to the end of each phase (cumulative), or None."""

    dns_s: float
    connect_s: float
    tls_s: float | None
    sent_s: float
    ttfb_s: float | None
    first_token_s: float | None
    total_s: float
    status: int | None
    body_bytes: int
    tokens_seen: int  # streamed events that carried text
    usage_tokens: int | None  # completion tokens the server reported, where it did
    tls_version: str | None = None
    server_s: dict[str, float] = field(default_factory=dict)  # what the server said it spent


def time_request(
    url: str,
    *,
    method: str = "GET",
    headers: dict[str, str] | None = None,
    body: bytes | None = None,
    timeout_s: float = 30.0,
    insecure: bool = False,
) -> HttpTiming:
    """Make one request and time its phases; raises ValueError for a bad URL, OSError on failure."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {url!r}")
    host = parts.hostname
    port = parts.port or (443 if parts.scheme == "https" else 80)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    t0 = time.perf_counter()
    addr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    dns = time.perf_counter() - t0
    sock = socket.socket(addr[0], addr[1], addr[2])
    sock.settimeout(timeout_s)
    try:
        sock.connect(addr[4])
        connect = time.perf_counter() - t0
        tls = tls_version = None
        conn: socket.socket = sock
        if parts.scheme == "https":
            wrapped = tls_context(insecure).wrap_socket(sock, server_hostname=host)
            tls = time.perf_counter() - t0
            tls_version = wrapped.version()
            conn = wrapped
        head = [f"{method} {path} HTTP/1.1", f"Host: {parts.netloc}", "User-Agent: fabriclens", "Connection: close",
                "Accept: */*"]  # fmt: skip
        for k, v in (headers or {}).items():
            head.append(f"{k}: {v}")
        if body is not None:
            head.append(f"Content-Length: {len(body)}")
        conn.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + (body or b""))
        sent = time.perf_counter() - t0
        ttfb = first_token = None
        response = ResponseLines()
        total_bytes = tokens = 0
        usage = None
        server_s: dict[str, float] = {}
        while total_bytes < MAX_BODY_BYTES:
            data = conn.recv(65536)
            now = time.perf_counter() - t0
            if not data:
                break
            if ttfb is None:
                ttfb = now
            total_bytes += len(data)
            for line in response.feed(data):
                event = parse_line(line)
                if event is None:
                    continue
                if event.text:
                    tokens += 1
                    if first_token is None:
                        first_token = now
                usage = event.completion_tokens or usage
                server_s = event.server_s or server_s
            if response.body is not None and response.body.finished:
                break
        total = time.perf_counter() - t0
    finally:
        sock.close()
    return HttpTiming(dns, connect, tls, sent, ttfb, first_token, total, response.status, total_bytes, tokens,
                      usage, tls_version, server_s)  # fmt: skip
