"""The serving load generator: streamed requests to an OpenAI-compatible or Ollama endpoint,
closed loop (N requests in flight) or open loop (Poisson arrivals), each timed chunk by chunk.

asyncio on raw sockets: one connection per request (its connect time is the path's RTT plus
accept), every read under the request's deadline, the body decoded incrementally. The client's
own cost is measured: CPU time spent handling each chunk, and how late the event loop wakes
(a lag that would delay every timestamp it takes).
"""

from __future__ import annotations

import asyncio
import json
import random
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from fabriclens.bench.http_timing import basic_auth, check_header_values, tls_context
from fabriclens.measure.order_stats import nearest_rank
from fabriclens.measure.serving import RequestRecord
from fabriclens.parse.llm_stream import ResponseLines, parse_line
from fabriclens.redact import redact_url

DEFAULT_PATHS = {"openai": "/v1/chat/completions", "ollama": "/api/generate"}
_WORDS = ["the", "network", "carries", "gradients", "between", "nodes", "while", "every", "GPU", "waits", "for", "its", "peers", "to", "finish", "sending", "their", "share", "of", "the", "model"]  # fmt: skip


@dataclass(frozen=True)
class Target:
    host: str
    port: int
    path: str
    tls: bool
    netloc: str  # host[:port] for the Host header, without the URL's userinfo
    insecure: bool = False  # accept any TLS certificate
    auth: str | None = None  # "Basic ..." from the URL's user:password@

    @classmethod
    def parse(cls, url: str, api: str) -> Target:
        """The endpoint to load; ValueError with the reason for a bad URL."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {redact_url(url)!r}")
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            raise ValueError(f"bad port in {redact_url(url)!r}") from None
        path = parts.path if parts.path not in ("", "/") else DEFAULT_PATHS[api]
        if parts.query:
            path += "?" + parts.query
        return cls(parts.hostname, port, path, parts.scheme == "https", parts.netloc.rpartition("@")[2],
                   auth=basic_auth(parts))  # fmt: skip


@dataclass(frozen=True)
class Prompt:
    text: str
    output_tokens: int


def synthetic_prompts(
    count: int, prompt_tokens: int, output_tokens: int, seed: int = 0
) -> list[Prompt]:
    """Prompts of about ``prompt_tokens`` words (a word is about one token), each different so
    that a prefix cache does not answer them all from the first."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        words = [f"request {i}:"] + [rng.choice(_WORDS) for _ in range(max(0, prompt_tokens - 2))]
        out.append(Prompt(" ".join(words), output_tokens))
    return out


def request_body(api: str, path: str, model: str, prompt: Prompt, ignore_eos: bool) -> bytes:
    """The JSON body that asks for a streamed answer of ``prompt.output_tokens`` tokens."""
    body: dict[str, Any]
    if api == "openai":
        body = {"model": model, "stream": True, "max_tokens": prompt.output_tokens,
                "stream_options": {"include_usage": True}}  # fmt: skip
        if path.split("?")[0].endswith("/completions") and "chat" not in path:
            body["prompt"] = prompt.text
        else:
            body["messages"] = [{"role": "user", "content": prompt.text}]
        if ignore_eos:
            body["ignore_eos"] = True
    else:
        body = {"model": model, "stream": True, "options": {"num_predict": prompt.output_tokens}}
        if path.startswith("/api/chat"):
            body["messages"] = [{"role": "user", "content": prompt.text}]
        else:
            body["prompt"] = prompt.text
    return json.dumps(body).encode()


@dataclass
class ClientCost:
    """What the client itself spent: per-chunk handling time and event-loop lateness."""

    chunk_s: float = 0.0
    chunks: int = 0
    lag_s: list[float] = field(default_factory=list)

    @classmethod
    def merged(cls, costs: list[ClientCost]) -> ClientCost:
        """The cost of several levels together."""
        return cls(
            sum(c.chunk_s for c in costs),
            sum(c.chunks for c in costs),
            [x for c in costs for x in c.lag_s],
        )

    def summary(self) -> dict[str, float | int | None]:
        lags = sorted(self.lag_s)
        return {
            "chunks": self.chunks,
            "per_chunk_ms": 1e3 * self.chunk_s / self.chunks if self.chunks else None,
            "loop_lag_p50_ms": 1e3 * nearest_rank(lags, 0.5) if lags else None,
            "loop_lag_p99_ms": 1e3 * nearest_rank(lags, 0.99) if lags else None,
        }


def request_head(target: Target, line: str, headers: dict[str, str], extra: list[str]) -> bytes:
    """An HTTP/1.1 request's head: ``line`` (method and path), the target's Host and credentials,
    one connection per request, ``extra`` and the user's ``headers`` (ValueError for one that
    would inject a header)."""
    head = [f"{line} HTTP/1.1", f"Host: {target.netloc}", "User-Agent: fabriclens", "Accept: */*",
            "Connection: close", *extra]  # fmt: skip
    check_header_values(headers)
    if target.auth and "authorization" not in {k.lower() for k in headers}:
        head.append(f"Authorization: {target.auth}")
    head += [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1", "replace")


async def one_request(target: Target, body: bytes, headers: dict[str, str], timeout_s: float,
                      level_t0: float, cost: ClientCost,
                      count_tokens: Callable[[str], int] | None = None) -> RequestRecord:  # fmt: skip
    """Make one streamed request, all of it (connect, send, every read) within ``timeout_s``;
    never raises (a failure is the record's ``error``)."""
    t0 = time.perf_counter()
    chunks: list[tuple[float, int]] = []
    text_parts: list[str] = []
    connect = usage = None
    error: str | None = None
    writer: asyncio.StreamWriter | None = None

    def record(err: str | None) -> RequestRecord:
        counted = count_tokens("".join(text_parts)) if count_tokens and err is None else None
        return RequestRecord(
            t0 - level_t0, time.perf_counter() - t0, tuple(chunks), connect, usage, counted, err
        )

    try:
        async with asyncio.timeout(timeout_s):  # one deadline; no task per read
            ctx = tls_context(target.insecure) if target.tls else None
            reader, opened = await asyncio.open_connection(target.host, target.port, ssl=ctx,
                                                           server_hostname=target.host if ctx else None)  # fmt: skip
            writer = opened
            connect = time.perf_counter() - t0
            head = request_head(target, f"POST {target.path}", headers,
                                ["Content-Type: application/json", f"Content-Length: {len(body)}"])  # fmt: skip
            opened.write(head + body)
            await opened.drain()
            response = ResponseLines()
            done = malformed = whole = False
            while True:
                data = await reader.read(65536)
                now = time.perf_counter()
                if not data:
                    break
                lines = response.feed(data)
                if response.body is None:
                    continue
                if response.status != 200:
                    return record(f"http {response.status}")
                chars = 0
                for line in lines:
                    event = parse_line(line)
                    if event is None:
                        continue
                    malformed |= event.malformed
                    whole |= event.complete
                    if event.error:
                        error = "error in the stream"
                    if event.text:
                        chars += len(event.text)
                        if count_tokens:
                            text_parts.append(event.text)
                    usage = (
                        event.completion_tokens if event.completion_tokens is not None else usage
                    )
                    done |= event.done
                malformed |= response.body.overlong > 0
                if chars:
                    chunks.append((now - t0, chars))
                cost.chunk_s += time.perf_counter() - now
                cost.chunks += 1
                if response.body.finished or (done and not response.body.chunked) or whole:
                    break
            if response.body is None:
                return record("disconnect")
            for line in response.body.rest():
                event = parse_line(line)
                if event is not None:
                    done |= event.done
                    malformed |= event.malformed
                    whole |= event.complete
            if error is None and whole:
                error = "not streamed (the server sent the whole answer at once)"
            if error is None and malformed:
                error = "malformed stream"
            if error is None and not done:
                error = "disconnect"
            return record(error)
    except TimeoutError:
        return record("timeout")
    except ConnectionRefusedError:
        return record("connection refused")
    except ssl.SSLError as exc:  # before ValueError: a refused certificate is both
        return record(f"tls: {exc.reason or exc}")
    except (ValueError, RecursionError):  # a head that never ends, JSON nested past decoding
        return record("malformed response")
    except (ConnectionResetError, asyncio.IncompleteReadError, BrokenPipeError):
        return record("disconnect")
    except OSError as exc:
        return record(f"connect: {exc.strerror or exc}")
    finally:
        if writer is not None:
            writer.close()


@dataclass(frozen=True)
class Level:
    concurrency: int | None = None  # closed loop: this many requests in flight
    rate: float | None = None  # open loop: requests per second (Poisson, or gamma with burstiness)
    burstiness: float = 1.0
    ramp_s: float = 0.0  # closed loop: start the workers evenly over this time, not all at once


async def _lag_probe(cost: ClientCost, stop: asyncio.Event) -> None:
    while not stop.is_set():
        t = time.perf_counter()
        await asyncio.sleep(0.01)
        cost.lag_s.append(max(0.0, time.perf_counter() - t - 0.01))


async def run_level(target: Target, make_body: Callable[[int], bytes], level: Level, *,
                    requests: int | None, headers: dict[str, str],
                    timeout_s: float, duration_s: float | None = None, seed: int = 0,
                    count_tokens: Callable[[str], int] | None = None,
                    on_done: Callable[[RequestRecord], None] | None = None,
                    ) -> tuple[list[RequestRecord], float, ClientCost]:  # fmt: skip
    """Send ``requests`` requests (the i-th with ``make_body(i)``), or keep sending until
    ``duration_s`` has passed; return the records, the wall time from the first request to the
    last answer, and the client's cost."""
    cost = ClientCost()
    records: list[RequestRecord] = []
    stop = asyncio.Event()
    probe = asyncio.create_task(_lag_probe(cost, stop))
    t0 = time.perf_counter()
    end = t0 + duration_s if duration_s else None
    issued = 0
    limit = requests if requests is not None else 10**9

    async def send(body: bytes) -> None:
        rec = await one_request(target, body, headers, timeout_s, t0, cost, count_tokens)
        records.append(rec)
        if on_done:
            on_done(rec)

    if level.rate is None:

        async def worker(k: int) -> None:  # fmt: skip
            nonlocal issued
            await asyncio.sleep(k * level.ramp_s / (level.concurrency or 1))
            while issued < limit and (end is None or time.perf_counter() < end):
                issued += 1
                await send(make_body(issued - 1))

        await asyncio.gather(*(worker(k) for k in range(level.concurrency or 1)))
    else:
        rng = random.Random(seed)
        shape = level.burstiness
        tasks = []
        at = t0
        for i in range(limit):
            at += rng.gammavariate(shape, 1.0 / (level.rate * shape))
            if end is not None and at >= end:
                break
            await asyncio.sleep(max(0.0, at - time.perf_counter()))
            tasks.append(asyncio.create_task(send(make_body(i))))
        await asyncio.gather(*tasks)
    wall = time.perf_counter() - t0
    stop.set()
    await probe
    return records, wall, cost
