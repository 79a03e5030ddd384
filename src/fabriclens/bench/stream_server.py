"""A reference LLM streaming server with known timings, to check the clients against the truth.

Speaks OpenAI server-sent events (``/v1/chat/completions``, ``/v1/completions``) and Ollama JSON
lines (``/api/generate``, ``/api/chat``). The first chunk leaves ``--ttft`` after the request
arrived; then a chunk of ``--tokens-per-chunk`` tokens every ``tokens-per-chunk x --itl``, each
scheduled on an absolute deadline so that a late wake-up never shifts the ones after it. Errors
can be injected: an HTTP 500, a connection dropped mid-stream, a line that is not JSON.

    python -m fabriclens.bench.stream_server --port 8000 --ttft 0.2 --itl 0.02

It prints ``listening on http://HOST:PORT`` once ready and binds 127.0.0.1 unless told otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import selectors
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

TOKEN = "tok "  # every token the same text, so a client can split a chunk's tokens exactly


@dataclass(frozen=True)
class ServerConfig:
    ttft_s: float = 0.2
    itl_s: float = 0.02
    tokens_per_chunk: int = 1
    tokens: int = 32  # output tokens when the request does not ask for a number
    usage: bool = True  # report token counts (OpenAI usage on request, Ollama eval_count)
    error_every: int = 0  # every Nth request answers HTTP 500
    disconnect_every: int = 0  # every Nth request is cut off halfway through the stream
    malformed_every: int = 0  # every Nth request carries one line that is not JSON
    never_stream: bool = False  # answer every request whole, as a server that ignores "stream"


class StreamServer:
    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.requests = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await asyncio.wait_for(self._serve(reader, writer), timeout=600)
        except (OSError, TimeoutError, asyncio.IncompleteReadError, ValueError):
            pass
        finally:
            writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        arrived = time.monotonic()
        request_line, *header_lines = head.decode("latin-1").split("\r\n")
        method, path = [*request_line.split(), "", ""][:2]
        length = 0
        for h in header_lines:
            name, _, value = h.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip() or "0")
        body = await reader.readexactly(length) if length else b""
        if method != "POST":
            await self._plain(writer, 200, b"fabriclens stream server\n")
            return
        route = path.split("?")[0]
        if route not in ("/v1/chat/completions", "/v1/completions", "/api/generate", "/api/chat"):
            await self._plain(writer, 404, b'{"error": "not found"}\n')
            return
        try:
            req = json.loads(body or b"{}")
        except ValueError:
            req = None
        if not isinstance(req, dict):
            await self._plain(writer, 400, b'{"error": "body is not a JSON object"}\n')
            return
        self.requests += 1
        n = self.requests
        c = self.config
        if c.error_every and n % c.error_every == 0:
            await self._plain(writer, 500, b'{"error": {"message": "injected server error"}}\n')
            return
        await self._stream(writer, route, req, arrived, n)

    async def _plain(self, writer: asyncio.StreamWriter, status: int, body: bytes) -> None:
        reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 500: "Internal Server Error"}
        writer.write(f"HTTP/1.1 {status} {reason[status]}\r\nContent-Type: application/json\r\n"
                     f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)  # fmt: skip
        await writer.drain()

    async def _stream(self, writer: asyncio.StreamWriter, route: str, req: dict[str, Any],
                      arrived: float, n: int) -> None:  # fmt: skip
        c = self.config
        openai = route.startswith("/v1/")
        raw_options = req.get("options")
        options = raw_options if isinstance(raw_options, dict) else {}
        want = (
            req.get("max_tokens") or req.get("max_completion_tokens") or options.get("num_predict")
        )
        tokens = want if isinstance(want, int) and 0 < want <= 100_000 else c.tokens
        prompt = req.get("prompt") or json.dumps(req.get("messages", ""))
        prompt_tokens = max(1, len(str(prompt).split()))
        raw_stream = req.get("stream_options")
        stream_opts = raw_stream if isinstance(raw_stream, dict) else {}
        include_usage = c.usage and (not openai or stream_opts.get("include_usage") is True)
        if (
            req.get("stream") is False or c.never_stream
        ):  # a complete answer at once, as servers do when asked
            await asyncio.sleep(max(0.0, arrived + c.ttft_s + tokens * c.itl_s - time.monotonic()))
            text = TOKEN * tokens
            answer = ({"choices": [{"message": {"role": "assistant", "content": text}}],
                       "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": tokens}}
                      if openai else {"response": text, "done": True, "eval_count": tokens})  # fmt: skip
            await self._plain(writer, 200, json.dumps(answer).encode())
            return
        kind = "text/event-stream" if openai else "application/x-ndjson"
        writer.write(f"HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nTransfer-Encoding: chunked\r\n"
                     "Cache-Control: no-cache\r\nConnection: close\r\n\r\n".encode())  # fmt: skip
        await writer.drain()
        chunks = -(-tokens // c.tokens_per_chunk)
        for j in range(chunks):
            if c.disconnect_every and n % c.disconnect_every == 0 and j == chunks // 2:
                writer.transport.abort()
                return
            delay = arrived + c.ttft_s + j * c.tokens_per_chunk * c.itl_s - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            k = min(c.tokens_per_chunk, tokens - j * c.tokens_per_chunk)
            text = TOKEN * k
            if openai:
                key = (
                    {"delta": {"content": text}}
                    if route.endswith("chat/completions")
                    else {"text": text}
                )
                line = b"data: " + json.dumps({"object": "chunk", "choices": [{"index": 0, **key}]}).encode() + b"\n\n"  # fmt: skip
            else:
                field = (
                    {"message": {"role": "assistant", "content": text}}
                    if route == "/api/chat"
                    else {"response": text}
                )
                line = json.dumps({"model": req.get("model", ""), **field, "done": False}).encode() + b"\n"  # fmt: skip
            if c.malformed_every and n % c.malformed_every == 0 and j == chunks // 2:
                line = b"data: {not json\n\n" if openai else b"{not json\n"
            self._chunk(writer, line)
            await writer.drain()
        if openai:
            tail = b'data: {"object": "chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]}\n\n'
            if include_usage:
                usage = {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": tokens,
                    "total_tokens": prompt_tokens + tokens,
                }
                tail += b"data: " + json.dumps({"choices": [], "usage": usage}).encode() + b"\n\n"
            tail += b"data: [DONE]\n\n"
        else:
            spent = time.monotonic() - arrived
            final: dict[str, Any] = {"model": req.get("model", ""), "done": True, "done_reason": "length",
                                     "total_duration": int(spent * 1e9), "load_duration": 0,
                                     "prompt_eval_duration": int(c.ttft_s * 1e9),
                                     "eval_duration": int(max(0.0, spent - c.ttft_s) * 1e9)}  # fmt: skip
            if include_usage:
                final.update(eval_count=tokens, prompt_eval_count=prompt_tokens)
            tail = json.dumps(final).encode() + b"\n"
        self._chunk(writer, tail)
        writer.write(b"0\r\n\r\n")
        await writer.drain()

    @staticmethod
    def _chunk(writer: asyncio.StreamWriter, data: bytes) -> None:
        writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")


async def serve(config: ServerConfig, bind: str, port: int, lifetime_s: float) -> None:
    server = StreamServer(config)
    listener = await asyncio.start_server(server.handle, bind, port, backlog=1024)
    host, real_port = listener.sockets[0].getsockname()[:2]
    print(f"listening on http://{host}:{real_port}", flush=True)
    async with listener:
        if lifetime_s > 0:
            await asyncio.sleep(lifetime_s)
        else:
            await listener.serve_forever()


def spawn(args: Sequence[str] = (), launch: Callable[..., subprocess.Popen[bytes]] = subprocess.Popen,
          timeout_s: float = 15.0) -> tuple[subprocess.Popen[bytes], str]:  # fmt: skip
    """Start the server in its own process (``launch`` may run it elsewhere, e.g. in a lab host)
    and wait until it listens; returns the process (the caller ends it) and its base URL."""
    argv = [sys.executable, "-m", "fabriclens.bench.stream_server", "--port", "0", *args]
    proc = launch(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        if sel.select(timeout_s):
            line = proc.stdout.readline().decode()
            if line.startswith("listening on "):
                return proc, line.split()[-1]
    proc.kill()
    proc.wait(timeout=5)
    raise OSError(f"the stream server did not start within {timeout_s:g} s")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m fabriclens.bench.stream_server", description=__doc__.splitlines()[0]
    )
    p.add_argument("--bind", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    p.add_argument("--ttft", type=float, default=0.2, help="seconds from request to first chunk")
    p.add_argument("--itl", type=float, default=0.02, help="seconds between tokens")
    p.add_argument("--tokens-per-chunk", type=int, default=1)
    p.add_argument(
        "--tokens", type=int, default=32, help="output tokens when the request does not say"
    )
    p.add_argument("--no-usage", action="store_true", help="never report token counts")
    p.add_argument("--error-every", type=int, default=0, help="every Nth request answers HTTP 500")
    p.add_argument("--disconnect-every", type=int, default=0, help="every Nth stream is cut off")
    p.add_argument("--malformed-every", type=int, default=0, help="every Nth stream has a bad line")
    p.add_argument(
        "--never-stream", action="store_true", help='answer whole, ignoring "stream": true'
    )
    p.add_argument(
        "--lifetime", type=float, default=0.0, help="exit after this many seconds (0: never)"
    )
    a = p.parse_args(argv)
    if a.ttft < 0 or a.itl < 0 or a.tokens_per_chunk < 1 or a.tokens < 1:
        p.error("--ttft and --itl must be >= 0, --tokens-per-chunk and --tokens >= 1")
    config = ServerConfig(a.ttft, a.itl, a.tokens_per_chunk, a.tokens, not a.no_usage,
                          a.error_every, a.disconnect_every, a.malformed_every, a.never_stream)  # fmt: skip
    try:
        asyncio.run(serve(config, a.bind, a.port, a.lifetime))
    except KeyboardInterrupt:
        return 0
    except OSError as exc:
        print(f"error: cannot listen on {a.bind}:{a.port}: {exc.strerror}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
