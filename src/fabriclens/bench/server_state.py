"""Ask a serving engine what it ran: its speculative decoding, read after a load test from
SGLang's ``/server_info`` (``/get_server_info``) or vLLM's ``/metrics``
(parse/speculation.py). Every request is one GET under one deadline and a size cap; a server
that answers neither is "not checked", never an error of the load test.
"""

from __future__ import annotations

import asyncio
import json
import time

from fabriclens.bench.http_timing import tls_context
from fabriclens.bench.serve_load import Target, request_head
from fabriclens.parse.speculation import Speculation, from_sglang_server_info, from_vllm_metrics

MAX_BYTES = 4 << 20  # a /metrics page of a busy vLLM is ~100 kB; more is not one
PATHS = (("/server_info", "json"), ("/get_server_info", "json"), ("/metrics", "prometheus"))


def _dechunk(body: bytes) -> bytes:
    """A chunked transfer-encoded body, decoded (what arrived of it)."""
    out, rest = [], body
    while rest:
        size_line, sep, rest = rest.partition(b"\r\n")
        if not sep:
            break
        try:
            size = int(size_line.split(b";")[0].strip() or b"0", 16)
        except ValueError:
            break
        if size <= 0:
            break
        out.append(rest[:size])
        rest = rest[size + 2 :]
    return b"".join(out)


def split_response(raw: bytes) -> tuple[int | None, bytes]:
    """(status, body) of a whole HTTP/1.1 response; (None, b"") when it is not one."""
    head, sep, body = raw.partition(b"\r\n\r\n")
    if not sep:
        return None, b""
    lines = head.decode("latin-1", "replace").split("\r\n")
    parts = lines[0].split()
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        return None, b""
    chunked = any(
        h.lower().startswith("transfer-encoding:") and "chunked" in h.lower() for h in lines[1:]
    )
    return int(parts[1]), _dechunk(body) if chunked else body


async def get(target: Target, path: str, headers: dict[str, str], timeout_s: float) -> tuple[int | None, bytes]:  # fmt: skip
    """GET ``path`` on the target's host: (status, body), all of it within ``timeout_s`` and
    MAX_BYTES; (None, b"") when nothing usable came back."""
    writer = None
    try:
        async with asyncio.timeout(timeout_s):
            ctx = tls_context(target.insecure) if target.tls else None
            reader, writer = await asyncio.open_connection(target.host, target.port, ssl=ctx,
                                                           server_hostname=target.host if ctx else None)  # fmt: skip
            writer.write(request_head(target, f"GET {path}", headers, []))
            await writer.drain()
            raw = bytearray()
            while len(raw) <= MAX_BYTES:
                data = await reader.read(65536)
                if not data:
                    break
                raw += data
            if len(raw) > MAX_BYTES:
                return None, b""
            return split_response(bytes(raw))
    except (TimeoutError, OSError, ValueError, asyncio.IncompleteReadError):
        return None, b""
    finally:
        if writer is not None:
            writer.close()


def read_speculation(target: Target, headers: dict[str, str], timeout_s: float = 3.0) -> tuple[Speculation | None, str]:  # fmt: skip
    """The server's speculative decoding as it reports it, and what was asked: (None, why)
    when no endpoint describes any (a server without speculation, or one that exposes neither
    SGLang's server information nor vLLM's metrics). At most 3 GETs of ``timeout_s`` each."""

    async def ask() -> tuple[Speculation | None, str]:
        tried = []
        t0 = time.monotonic()
        for path, kind in PATHS:
            status, body = await get(target, path, headers, timeout_s)
            tried.append(f"{path}: {status or 'no answer'}")
            if status != 200:
                continue
            if kind == "json":
                try:
                    found = from_sglang_server_info(json.loads(body))
                except (ValueError, RecursionError):
                    continue
            else:
                found = from_vllm_metrics(body.decode("utf-8", "replace"))
            if found is not None:
                return found, f"{found.source} ({time.monotonic() - t0:.1f} s)"
        return None, "no speculative decoding reported (" + ", ".join(tried) + ")"

    return asyncio.run(ask())
