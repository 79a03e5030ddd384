"""One HTTP request, timed phase by phase: DNS, TCP connect, TLS, request sent, first byte,
first token (for streamed LLM responses: OpenAI SSE or Ollama JSON lines), total.

Raw sockets rather than an HTTP library, so each phase is measured where it happens; every
socket has a timeout, and the body is read incrementally (chunked transfer decoded on the fly)
to see the first token when it arrives.
"""

from __future__ import annotations

import json
import socket
import ssl
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

MAX_BODY_BYTES = 64 << 20


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


def token_text(event: Any) -> str:
    """Text a streamed event carries: OpenAI chat/completions delta, or Ollama generate/chat."""
    if not isinstance(event, dict):
        return ""
    choices = event.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        delta = choices[0].get("delta")
        if isinstance(delta, dict) and isinstance(delta.get("content"), str):
            return str(delta["content"])
        if isinstance(choices[0].get("text"), str):
            return str(choices[0]["text"])
    if isinstance(event.get("response"), str):
        return str(event["response"])
    message = event.get("message")
    if isinstance(message, dict) and isinstance(message.get("content"), str):
        return str(message["content"])
    return ""


def _usage(event: Any) -> int | None:
    if isinstance(event, dict):
        usage = event.get("usage")
        if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
            return int(usage["completion_tokens"])
        if isinstance(event.get("eval_count"), int):  # Ollama's final object
            return int(event["eval_count"])
    return None


class _Lines:
    """Body bytes -> complete lines, decoding chunked transfer encoding incrementally."""

    def __init__(self, chunked: bool) -> None:
        self.chunked = chunked
        self.raw = b""
        self.body = b""
        self.need = -1  # bytes left in the current chunk; -1: expecting a size line

    def feed(self, data: bytes) -> list[bytes]:
        if not self.chunked:
            self.body += data
        else:
            self.raw += data
            while True:
                if self.need < 0:
                    end = self.raw.find(b"\r\n")
                    if end < 0:
                        break
                    size_text = self.raw[:end].split(b";")[0].strip()
                    self.raw = self.raw[end + 2 :]
                    try:
                        self.need = int(size_text or b"0", 16)
                    except ValueError:
                        self.need = 0
                    if self.need == 0:
                        self.raw = b""
                        break
                else:
                    take = self.raw[: self.need]
                    self.body += take
                    self.raw = self.raw[len(take) :]
                    self.need -= len(take)
                    if self.need:
                        break
                    if self.raw.startswith(b"\r\n"):
                        self.raw = self.raw[2:]
                        self.need = -1
                    elif len(self.raw) < 2:
                        self.need = -1
                        break
        lines = self.body.split(b"\n")
        self.body = lines.pop()
        return lines


def time_request(
    url: str,
    *,
    method: str = "GET",
    headers: dict[str, str] | None = None,
    body: bytes | None = None,
    timeout_s: float = 30.0,
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
        tls = None
        conn: socket.socket = sock
        if parts.scheme == "https":
            conn = ssl.create_default_context().wrap_socket(sock, server_hostname=host)
            tls = time.perf_counter() - t0
        head = [f"{method} {path} HTTP/1.1", f"Host: {parts.netloc}", "User-Agent: fabriclens", "Connection: close",
                "Accept: */*"]  # fmt: skip
        for k, v in (headers or {}).items():
            head.append(f"{k}: {v}")
        if body is not None:
            head.append(f"Content-Length: {len(body)}")
        conn.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + (body or b""))
        sent = time.perf_counter() - t0
        ttfb = first_token = None
        status = None
        buf = b""
        lines: _Lines | None = None
        total_bytes = tokens = 0
        usage = None
        while total_bytes < MAX_BODY_BYTES:
            data = conn.recv(65536)
            now = time.perf_counter() - t0
            if not data:
                break
            if ttfb is None:
                ttfb = now
            total_bytes += len(data)
            if lines is None:
                buf += data
                end = buf.find(b"\r\n\r\n")
                if end < 0:
                    continue
                header_text = buf[:end].decode("latin-1")
                status_line, *header_lines = header_text.split("\r\n")
                try:
                    status = int(status_line.split()[1])
                except (IndexError, ValueError):
                    status = None
                chunked = any(
                    h.lower().startswith("transfer-encoding:") and "chunked" in h.lower()
                    for h in header_lines
                )
                lines = _Lines(chunked)
                data = buf[end + 4 :]
            for line in lines.feed(data):
                text = line.strip()
                if text.startswith(b"data:"):
                    text = text[5:].strip()
                if not text or text == b"[DONE]" or not text.startswith(b"{"):
                    continue
                try:
                    event = json.loads(text)
                except ValueError:
                    continue
                if token_text(event):
                    tokens += 1
                    if first_token is None:
                        first_token = now
                usage = _usage(event) or usage
        total = time.perf_counter() - t0
    finally:
        sock.close()
    return HttpTiming(
        dns, connect, tls, sent, ttfb, first_token, total, status, total_bytes, tokens, usage
    )
