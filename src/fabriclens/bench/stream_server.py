"""A reference LLM streaming server with known timings, to check the clients against the truth.

Speaks the OpenAI API as its clients expect it (``/v1/chat/completions``, ``/v1/completions``,
streamed as server-sent events or whole, and ``GET /v1/models``) and Ollama JSON lines
(``/api/generate``, ``/api/chat``). The first chunk leaves ``--ttft`` after the request
arrived; then a chunk of ``--tokens-per-chunk`` tokens every ``tokens-per-chunk x --itl``, each
scheduled on an absolute deadline so that a late wake-up never shifts the ones after it. Errors
can be injected: an HTTP 500, a connection dropped mid-stream, a line that is not JSON.

    python -m fabriclens.bench.stream_server --port 8000 --ttft 0.2 --itl 0.02

It prints ``listening on http://HOST:PORT`` once ready and binds 127.0.0.1 unless told otherwise;
it refuses request bodies over ``--max-body`` (413) and connections over ``--max-connections``
(503), and gives each connection at most 600 s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import selectors
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

TOKEN = "tok "  # every token the same text, so a client can split a chunk's tokens exactly


def _error(message: str, kind: str) -> bytes:
    """An error body in OpenAI's shape, which Ollama's clients read too (``error.message``)."""
    return json.dumps({"error": {"message": message, "type": kind, "code": None}}).encode()


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
    model: str = (
        "fabriclens-reference"  # the model /v1/models lists, and answers name when asked none
    )
    max_body_bytes: int = 1 << 20  # a longer request body is refused with 413
    max_connections: int = 1024  # connections served at once; more are answered 503
    # a speculative server: draft tokens a step and the accept length it reports, as SGLang's
    # GET /server_info and vLLM's GET /metrics do (0: plain decode, neither served)
    spec_tokens: int = 0
    accept_length: float = 1.0
    # a tree of drafts: candidates kept a pass and positions verified a step (SGLang's
    # speculative_eagle_topk and speculative_num_draft_tokens); 1 and 0: a chain
    draft_topk: int = 1
    draft_tokens: int = 0


class StreamServer:
    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.requests = 0
        self.open = 0  # connections being served
        self.started = int(time.time())
        self.tokens_out = 0  # output tokens streamed, for the speculative counters

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.open += 1
        try:
            if self.open > self.config.max_connections:
                await asyncio.wait_for(self._plain(writer, 503, _error(
                    "too many connections", "server_error")), timeout=5)  # fmt: skip
                return
            await asyncio.wait_for(self._serve(reader, writer), timeout=600)
        except (OSError, TimeoutError, asyncio.IncompleteReadError, ValueError):
            pass
        finally:
            self.open -= 1
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
        if not 0 <= length <= self.config.max_body_bytes:
            message = f"request body of {length} bytes is over the {self.config.max_body_bytes}-byte limit"
            await self._plain(writer, 413, _error(message, "invalid_request_error"))
            return
        body = await reader.readexactly(length) if length else b""
        route = path.split("?")[0]
        if method == "GET" and route in ("/v1/models", "/models"):
            models = {"object": "list", "data": [{"id": self.config.model, "object": "model",
                      "created": self.started, "owned_by": "fabriclens"}]}  # fmt: skip
            await self._plain(writer, 200, json.dumps(models).encode())
            return
        if method == "GET" and self.config.spec_tokens and route in ("/server_info", "/metrics"):
            await self._speculation(writer, route)
            return
        if method != "POST":
            await self._plain(writer, 200, b"fabriclens stream server\n", "text/plain")
            return
        if route not in ("/v1/chat/completions", "/v1/completions", "/api/generate", "/api/chat"):
            await self._plain(writer, 404, _error(f"no route {route}", "not_found_error"))
            return
        try:
            req = json.loads(body or b"{}")
        except ValueError:
            req = None
        if not isinstance(req, dict):
            await self._plain(writer, 400, _error("body is not a JSON object", "invalid_request_error"))  # fmt: skip
            return
        self.requests += 1
        n = self.requests
        c = self.config
        if c.error_every and n % c.error_every == 0:
            await self._plain(writer, 500, _error("injected server error", "server_error"))
            return
        await self._stream(writer, route, req, arrived, n)

    async def _speculation(self, writer: asyncio.StreamWriter, route: str) -> None:
        """SGLang's server information or vLLM's counters for the speculation configured: a step
        emits accept_length tokens, so drafts = tokens / accept_length steps."""
        c = self.config
        drafts = self.tokens_out / c.accept_length
        if route == "/server_info":
            info = {"model_path": c.model, "speculative_algorithm": "EAGLE",
                    "speculative_num_steps": c.spec_tokens, "speculative_eagle_topk": c.draft_topk,
                    "speculative_num_draft_tokens": c.draft_tokens or c.spec_tokens + 1,
                    "internal_states": [{"avg_spec_accept_length": c.accept_length,
                                         "last_gen_throughput": 0.0}]}  # fmt: skip
            await self._plain(writer, 200, json.dumps(info).encode())
            return
        label = f'{{engine="0",model_name="{c.model}"}}'
        lines = [f"vllm:spec_decode_num_drafts_total{label} {drafts:.1f}",
                 f"vllm:spec_decode_num_draft_tokens_total{label} {drafts * c.spec_tokens:.1f}",
                 f"vllm:spec_decode_num_accepted_tokens_total{label} {drafts * (c.accept_length - 1):.1f}"]  # fmt: skip
        await self._plain(writer, 200, ("\n".join(lines) + "\n").encode(), "text/plain")

    async def _plain(self, writer: asyncio.StreamWriter, status: int, body: bytes,
                     kind: str = "application/json") -> None:  # fmt: skip
        reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 413: "Content Too Large",
                  500: "Internal Server Error", 503: "Service Unavailable"}  # fmt: skip
        writer.write(f"HTTP/1.1 {status} {reason[status]}\r\nContent-Type: {kind}\r\n"
                     f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)  # fmt: skip
        await writer.drain()

    async def _stream(self, writer: asyncio.StreamWriter, route: str, req: dict[str, Any],
                      arrived: float, n: int) -> None:  # fmt: skip
        c = self.config
        openai = route.startswith("/v1/")
        chat = route.endswith("chat/completions")
        raw_options = req.get("options")
        options = raw_options if isinstance(raw_options, dict) else {}
        want = (
            req.get("max_tokens") or req.get("max_completion_tokens") or options.get("num_predict")
        )
        capped = isinstance(want, int) and 0 < want <= 100_000
        tokens: int = want if isinstance(want, int) and capped else c.tokens
        self.tokens_out += tokens
        # "length": the answer stopped at the client's max_tokens; "stop": the server chose its end
        finish = "length" if capped else "stop"
        prompt = req.get("prompt") or json.dumps(req.get("messages", ""))
        prompt_tokens = max(1, len(str(prompt).split()))
        raw_stream = req.get("stream_options")
        stream_opts = raw_stream if isinstance(raw_stream, dict) else {}
        include_usage = c.usage and (not openai or stream_opts.get("include_usage") is True)
        asked_model = req.get("model")
        model = asked_model if isinstance(asked_model, str) and asked_model else c.model
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": tokens,
                 "total_tokens": prompt_tokens + tokens}  # fmt: skip
        # OpenAI answers whole unless asked to stream; Ollama streams unless asked not to
        streamed = req.get("stream") is True if openai else req.get("stream") is not False
        whole = not streamed or c.never_stream
        kind = (
            ("chat.completion" if whole else "chat.completion.chunk") if chat else "text_completion"
        )
        head = {"id": f"{'chatcmpl' if chat else 'cmpl'}-{n}", "object": kind,
                "created": int(time.time()), "model": model}  # fmt: skip
        if whole:  # a complete answer at once, as servers do when asked
            await asyncio.sleep(max(0.0, arrived + c.ttft_s + tokens * c.itl_s - time.monotonic()))
            text = TOKEN * tokens
            answer: dict[str, Any]
            if openai:
                content = (
                    {"message": {"role": "assistant", "content": text}} if chat else {"text": text}
                )
                answer = {**head, "choices": [{"index": 0, **content, "logprobs": None,
                                               "finish_reason": finish}]}  # fmt: skip
                if c.usage:
                    answer["usage"] = usage
            else:
                answer = {"model": model, "response": text, "done": True, "done_reason": finish}
                if c.usage:
                    answer.update(eval_count=tokens, prompt_eval_count=prompt_tokens)
            await self._plain(writer, 200, json.dumps(answer).encode())
            return
        content_type = "text/event-stream" if openai else "application/x-ndjson"
        writer.write(f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nTransfer-Encoding: chunked\r\n"
                     "Cache-Control: no-cache\r\nConnection: close\r\n\r\n".encode())  # fmt: skip
        await writer.drain()
        # OpenAI: with include_usage every chunk but the last carries "usage": null
        no_usage: dict[str, Any] = {"usage": None} if include_usage else {}
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
                delta = {"role": "assistant", "content": text} if j == 0 else {"content": text}
                piece = {"delta": delta} if chat else {"text": text}
                event = {**head, "choices": [{"index": 0, **piece, "logprobs": None,
                                              "finish_reason": None}], **no_usage}  # fmt: skip
                line = b"data: " + json.dumps(event).encode() + b"\n\n"
            else:
                field = (
                    {"message": {"role": "assistant", "content": text}}
                    if route == "/api/chat"
                    else {"response": text}
                )
                line = json.dumps({"model": model, **field, "done": False}).encode() + b"\n"
            if c.malformed_every and n % c.malformed_every == 0 and j == chunks // 2:
                line = b"data: {not json\n\n" if openai else b"{not json\n"
            self._chunk(writer, line)
            await writer.drain()
        if openai:
            empty: dict[str, Any] = {"delta": {}} if chat else {"text": ""}
            last = {**head, "choices": [{"index": 0, **empty, "logprobs": None,
                                         "finish_reason": finish}], **no_usage}  # fmt: skip
            tail = b"data: " + json.dumps(last).encode() + b"\n\n"
            if include_usage:
                counted = {**head, "choices": [], "usage": usage}
                tail += b"data: " + json.dumps(counted).encode() + b"\n\n"
            tail += b"data: [DONE]\n\n"
        else:
            spent = time.monotonic() - arrived
            final: dict[str, Any] = {"model": model, "done": True, "done_reason": finish,
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
    host = f"[{host}]" if ":" in host else host  # an IPv6 address in a URL
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


class _HelpFormatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """The module's description as written, and every option's default after its help."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        """Bad input is one line on stderr and exit status 2, as everywhere in fabriclens."""
        self.exit(2, f"error: {message} (see --help)\n")


def _number(
    kind: type[int] | type[float], low: float, high: float | None = None
) -> Callable[[str], Any]:
    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not {'an integer' if kind is int else 'a number'}"
            ) from None
        if not math.isfinite(value) or value < low or (high is not None and value > high):
            span = f"from {low:g} to {high:g}" if high is not None else f">= {low:g}"
            raise argparse.ArgumentTypeError(f"{text} is out of range: use {span}")
        return value

    return parse


def parser() -> argparse.ArgumentParser:
    """The command line of ``python -m fabriclens.bench.stream_server``."""
    p = _Parser(prog="python -m fabriclens.bench.stream_server", description=__doc__.replace("``", ""),
                formatter_class=_HelpFormatter)  # fmt: skip
    count = _number(int, 0)
    seconds = _number(float, 0)
    add = p.add_argument
    add(
        "--bind",
        default="127.0.0.1",
        metavar="ADDR",
        help="address to listen on (0.0.0.0: every interface)",
    )
    add("--port", type=_number(int, 0, 65535), default=8000, help="TCP port; 0 picks a free one")
    add(
        "--model",
        default=ServerConfig.model,
        help="model name /v1/models lists and answers carry when the request names none",
    )
    add(
        "--ttft",
        type=seconds,
        default=ServerConfig.ttft_s,
        metavar="SECONDS",
        help="time from request to first chunk",
    )
    add(
        "--itl",
        type=seconds,
        default=ServerConfig.itl_s,
        metavar="SECONDS",
        help="time between tokens",
    )
    add(
        "--tokens-per-chunk",
        type=_number(int, 1),
        default=ServerConfig.tokens_per_chunk,
        metavar="N",
        help="tokens in each streamed chunk",
    )
    add(
        "--tokens",
        type=_number(int, 1),
        default=ServerConfig.tokens,
        metavar="N",
        help="output tokens when the request gives no max_tokens / num_predict",
    )
    add(
        "--no-usage",
        action="store_true",
        help="never report token counts (OpenAI usage, Ollama eval_count)",
    )
    add(
        "--error-every",
        type=count,
        default=0,
        metavar="N",
        help="every Nth request answers HTTP 500; 0 turns it off",
    )
    add(
        "--disconnect-every",
        type=count,
        default=0,
        metavar="N",
        help="every Nth stream is cut off halfway; 0 turns it off",
    )
    add(
        "--malformed-every",
        type=count,
        default=0,
        metavar="N",
        help="every Nth stream carries a line that is not JSON; 0 turns it off",
    )
    add("--never-stream", action="store_true", help='answer whole, ignoring "stream": true')
    add(
        "--max-body",
        type=_number(int, 0),
        default=ServerConfig.max_body_bytes,
        metavar="BYTES",
        help="longest request body accepted; a longer one is answered 413",
    )
    add(
        "--max-connections",
        type=_number(int, 1, 100_000),
        default=ServerConfig.max_connections,
        metavar="N",
        help="connections served at once; more are answered 503",
    )
    add(
        "--spec-tokens",
        type=_number(int, 0, 64),
        default=0,
        metavar="N",
        help="act as a speculative server with N draft tokens a step: GET /server_info (SGLang's) "
        "and /metrics (vLLM's counters) report it; 0 turns it off",
    )
    add(
        "--accept-length",
        type=_number(float, 1),
        default=ServerConfig.accept_length,
        metavar="A",
        help="with --spec-tokens: the accept length those endpoints report (1 to N + 1)",
    )
    add(
        "--draft-topk",
        type=_number(int, 1, 64),
        default=1,
        metavar="K",
        help="with --spec-tokens: a tree of drafts keeping K candidates a pass (SGLang's "
        "speculative_eagle_topk, as /server_info reports it); 1: a chain",
    )
    add(
        "--draft-tokens",
        type=_number(int, 0, 4096),
        default=0,
        metavar="N",
        help="with --draft-topk: the positions a sequence verified a step that /server_info "
        "reports (speculative_num_draft_tokens); 0: the chain's, --spec-tokens + 1",
    )
    add(
        "--lifetime",
        type=seconds,
        default=0.0,
        metavar="SECONDS",
        help="exit after this long (0: run until interrupted)",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    a = parser().parse_args(argv)
    config = ServerConfig(a.ttft, a.itl, a.tokens_per_chunk, a.tokens, not a.no_usage, a.error_every,
                          a.disconnect_every, a.malformed_every, a.never_stream, a.model, a.max_body,
                          a.max_connections, a.spec_tokens, a.accept_length, a.draft_topk,
                          a.draft_tokens)  # fmt: skip
    if a.spec_tokens and a.accept_length > a.spec_tokens + 1:
        parser().error(
            f"--accept-length {a.accept_length:g} is above --spec-tokens + 1 ({a.spec_tokens + 1})"
        )
    try:
        asyncio.run(serve(config, a.bind, a.port, a.lifetime))
    except KeyboardInterrupt:
        return 0
    except OSError as exc:
        print(f"error: cannot listen on {a.bind}:{a.port}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
