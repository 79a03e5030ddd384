"""One HTTP request, timed phase by phase: DNS, TCP connect, TLS, request sent, first byte,
first token (for streamed LLM responses: OpenAI SSE or Ollama JSON lines), total.

Raw sockets rather than an HTTP library, so each phase is measured where it happens. One
deadline bounds the whole request (every connect, send and read gets the time that is left),
and the body is read incrementally (chunked transfer decoded on the fly) to see the first token
when it arrives; reading stops at a body cap.
"""

from __future__ import annotations

import base64
import socket
import ssl
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import SplitResult, unquote, urlsplit

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
    body_capped: bool = False  # reading stopped at the body cap: total_s covers only that part


class Deadline:
    """A whole-operation deadline on the monotonic clock: every socket operation gets the time
    that is left, so that a server sending one byte at a time cannot stretch a request."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self.end = time.monotonic() + timeout_s

    def left(self) -> float:
        """Seconds left; TimeoutError when none are."""
        left = self.end - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"no complete answer within the {self.timeout_s:g} s timeout")
        return left

    def arm(self, sock: socket.socket) -> None:
        """Give ``sock`` the time that is left for its next operation."""
        sock.settimeout(self.left())


def resolve(host: str, port: int, deadline: Deadline) -> tuple[Any, ...]:
    """getaddrinfo under the deadline (it takes no timeout itself: run it in a helper thread)."""
    found: list[Any] = []

    def lookup() -> None:
        try:
            found.append(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0])
        except OSError as exc:
            found.append(exc)

    worker = threading.Thread(target=lookup, daemon=True)
    worker.start()
    worker.join(deadline.left())
    if not found:
        raise TimeoutError(
            f"name resolution of {host} took longer than the {deadline.timeout_s:g} s timeout"
        )
    if isinstance(found[0], OSError):
        raise found[0]
    return tuple(found[0])


def request_head(parts: SplitResult, method: str, path: str, headers: dict[str, str] | None,
                 body: bytes | None) -> bytes:  # fmt: skip
    """The request line and headers: ``Host`` without the URL's userinfo, which goes as
    ``Authorization: Basic`` (unless the caller gave an Authorization header)."""
    check_header_values(headers or {})
    host = parts.netloc.rpartition("@")[2]
    head = [f"{method} {path} HTTP/1.1", f"Host: {host}", "User-Agent: fabriclens", "Connection: close",
            "Accept: */*"]  # fmt: skip
    given = {k.lower() for k in (headers or {})}
    auth = basic_auth(parts)
    if auth and "authorization" not in given:
        head.append(f"Authorization: {auth}")
    for k, v in (headers or {}).items():
        head.append(f"{k}: {v}")
    if body is not None:
        head.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1", "replace")


def basic_auth(parts: SplitResult) -> str | None:
    """``Basic base64(user:password)`` from a URL's userinfo, or None without one."""
    if parts.username is None:
        return None
    pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
    return "Basic " + base64.b64encode(pair.encode()).decode()


def check_header_values(headers: dict[str, str]) -> None:
    """ValueError for a header whose name or value holds CR, LF or NUL (it would inject headers)."""
    for k, v in headers.items():
        if any(c in k + v for c in "\r\n\0"):
            raise ValueError(f"header {k.strip()[:40]!r} holds a line break (CR/LF) or NUL")


def time_request(
    url: str,
    *,
    method: str = "GET",
    headers: dict[str, str] | None = None,
    body: bytes | None = None,
    timeout_s: float = 30.0,
    insecure: bool = False,
    max_body_bytes: int = MAX_BODY_BYTES,
) -> HttpTiming:
    """Make one request and time its phases, all of it within ``timeout_s`` (DNS, connect, TLS,
    sending and reading together); raises ValueError for a bad URL, OSError on failure
    (TimeoutError past the deadline). Reading stops after ``max_body_bytes`` (``body_capped``)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {url!r}")
    host = parts.hostname
    port = parts.port or (443 if parts.scheme == "https" else 80)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    request = request_head(parts, method, path, headers, body) + (body or b"")
    deadline = Deadline(timeout_s)
    t0 = time.perf_counter()
    addr = resolve(host, port, deadline)
    dns = time.perf_counter() - t0
    sock = socket.socket(addr[0], addr[1], addr[2])
    try:
        deadline.arm(sock)
        sock.connect(addr[4])
        connect = time.perf_counter() - t0
        tls = tls_version = None
        conn: socket.socket = sock
        if parts.scheme == "https":
            deadline.arm(sock)
            wrapped = tls_context(insecure).wrap_socket(sock, server_hostname=host)
            tls = time.perf_counter() - t0
            tls_version = wrapped.version()
            conn = wrapped
        deadline.arm(conn)
        conn.sendall(request)
        sent = time.perf_counter() - t0
        ttfb = first_token = None
        response = ResponseLines()
        total_bytes = tokens = 0
        usage = None
        server_s: dict[str, float] = {}
        while total_bytes < max_body_bytes:
            deadline.arm(conn)
            data = conn.recv(min(65536, max_body_bytes - total_bytes))
            now = time.perf_counter() - t0
            if not data:
                break
            if ttfb is None:
                ttfb = now
            total_bytes += len(data)
            try:
                lines = response.feed(data)
            except ValueError as exc:  # a response head that never ends
                raise OSError(str(exc)) from None
            for line in lines:
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
        capped = total_bytes >= max_body_bytes
        total = time.perf_counter() - t0
    finally:
        sock.close()
    return HttpTiming(dns, connect, tls, sent, ttfb, first_token, total, response.status, total_bytes, tokens,
                      usage, tls_version, server_s, capped)  # fmt: skip
