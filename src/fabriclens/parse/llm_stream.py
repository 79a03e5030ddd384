"""Streamed LLM responses: OpenAI server-sent events (chat and completions) and Ollama JSON lines.

Pure: bytes in, events out. ``BodyLines`` decodes chunked transfer encoding incrementally and
splits the body into lines; ``parse_line`` turns one line into a ``StreamEvent``. Unknown or
malformed lines never raise.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from typing import Any

_NS = 1e-9


@dataclass(frozen=True)
class StreamEvent:
    """One event of a streamed response."""

    text: str = ""  # generated text this event carries ("" for bookkeeping events)
    completion_tokens: int | None = None  # the server's count (OpenAI usage, Ollama eval_count)
    prompt_tokens: int | None = None
    done: bool = False  # [DONE], Ollama "done": true
    error: str | None = None  # an error the server put in the stream
    malformed: bool = False  # a data line that is not JSON
    complete: bool = False  # a whole answer in one object: the server did not stream
    server_s: dict[str, float] = field(default_factory=dict)  # Ollama's own durations, seconds


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
        message = choices[0].get("message")
        if isinstance(message, dict) and isinstance(message.get("content"), str):
            return str(message["content"])
    if isinstance(event.get("response"), str):
        return str(event["response"])
    message = event.get("message")
    if isinstance(message, dict) and isinstance(message.get("content"), str):
        return str(message["content"])
    return ""


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


def _finite(value: Any) -> float | None:
    """A JSON number as a finite float; None for anything else (NaN, Infinity, 1e999, strings)."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer too large for a float
        return None
    return number if math.isfinite(number) else None


def event_from_json(event: Any) -> StreamEvent:
    """A decoded JSON object (one SSE data line or one Ollama line) as a ``StreamEvent``."""
    if not isinstance(event, dict):
        return StreamEvent()
    completion = prompt = None
    usage = event.get("usage")
    if isinstance(usage, dict):
        completion = _int(usage.get("completion_tokens"))
        prompt = _int(usage.get("prompt_tokens"))
    if completion is None:
        completion = _int(event.get("eval_count"))  # Ollama's final object
    if prompt is None:
        prompt = _int(event.get("prompt_eval_count"))
    error = event.get("error")
    if isinstance(error, dict):
        error = error.get("message") or json.dumps(error)
    durations = {name: _finite(event.get(key)) for name, key in (
        ("total", "total_duration"), ("load", "load_duration"), ("prefill", "prompt_eval_duration"),
        ("generation", "eval_duration"))}  # fmt: skip
    server_s = {name: ns * _NS for name, ns in durations.items() if ns is not None}
    text = token_text(event)
    choices = event.get("choices")
    whole = (
        isinstance(choices, list)
        and bool(choices)
        and isinstance(choices[0], dict)
        and "message" in choices[0]
    )
    return StreamEvent(
        text=text,
        complete=bool(text) and (whole or event.get("done") is True),
        completion_tokens=completion,
        prompt_tokens=prompt,
        done=event.get("done") is True,
        error=str(error) if error else None,
        server_s=server_s,
    )


def parse_line(line: bytes) -> StreamEvent | None:
    """One body line -> an event, or None for blank lines, SSE comments and ``event:``/``id:``
    fields. ``data: [DONE]`` is a done event; a data line that is not JSON is ``malformed``.
    An OpenAI object with ``choices`` outside an SSE ``data:`` line is a whole answer (``complete``):
    OpenAI servers stream only as server-sent events, and a whole ``text_completion`` looks like
    a streamed one otherwise."""
    text = line.strip()
    if not text or text.startswith(b":"):
        return None
    sse = text.startswith(b"data:")
    if sse:
        text = text[5:].strip()
        if text == b"[DONE]":
            return StreamEvent(done=True)
    elif text.startswith((b"event:", b"id:", b"retry:")):
        return None
    try:
        decoded = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: JSON nested too deeply to decode
        return StreamEvent(malformed=True)
    event = event_from_json(decoded)
    if not sse and event.text and isinstance(decoded, dict) and "choices" in decoded:
        return replace(event, complete=True)
    return event


MAX_LINE_BYTES = 1 << 20  # a longer line is dropped and counted in ``overlong``
MAX_HEAD_BYTES = 64 << 10  # a response head that does not end within this is refused


class BodyLines:
    """Body bytes -> complete lines, decoding chunked transfer encoding incrementally.

    Linear in the bytes fed: received data is searched once, the unfinished line is kept as a
    list of parts, and a line longer than ``MAX_LINE_BYTES`` is dropped (``overlong`` counts
    them) instead of growing without end."""

    def __init__(self, chunked: bool) -> None:
        self.chunked = chunked
        self.raw = bytearray()  # chunked framing not yet decoded
        self.parts: list[bytes] = []  # the unfinished line
        self.pending = 0  # its length
        self.skipping = False  # inside an overlong line: drop bytes up to its newline
        self.overlong = 0
        self.need = -1  # bytes left in the current chunk; -1: expecting a size line
        self.crlf = False  # a chunk's data is complete; its CRLF comes next
        self.finished = False  # the terminating zero-size chunk arrived

    def feed(self, data: bytes) -> list[bytes]:
        """Add received bytes; return the lines completed by them."""
        if not self.chunked:
            return self._lines(data)
        self.raw += data
        lines: list[bytes] = []
        pos = 0
        raw = self.raw
        while not self.finished:
            if self.crlf:
                if len(raw) - pos < 2:
                    break
                pos, self.crlf = pos + 2, False
            elif self.need < 0:
                end = raw.find(b"\r\n", pos)
                if end < 0:
                    if len(raw) - pos > 1024:  # a size line is a few hex digits
                        self.need, pos = 0, len(raw)
                        self.finished = True
                    break
                size_text = bytes(raw[pos:end]).split(b";")[0].strip()
                pos = end + 2
                if not size_text:
                    continue
                try:
                    self.need = int(size_text, 16)
                except ValueError:
                    self.need = 0
                if self.need <= 0:
                    pos = len(raw)
                    self.finished = True
            else:
                take = bytes(raw[pos : pos + self.need])
                pos += len(take)
                self.need -= len(take)
                lines += self._lines(take)
                if self.need:
                    break
                self.need, self.crlf = -1, True
        del raw[:pos]
        return lines

    def _lines(self, data: bytes) -> list[bytes]:
        out: list[bytes] = []
        start = 0
        while True:
            end = data.find(b"\n", start)
            if end < 0:
                break
            if self.skipping:
                self.skipping = False
            else:
                out.append(b"".join([*self.parts, data[start:end]]))
            self.parts, self.pending = [], 0
            start = end + 1
        if start < len(data) and not self.skipping:
            self.parts.append(data[start:])
            self.pending += len(data) - start
            if self.pending > MAX_LINE_BYTES:
                self.parts, self.pending = [], 0
                self.skipping = True
                self.overlong += 1
        return out

    def rest(self) -> list[bytes]:
        """The last line when the body ends without a newline."""
        tail = b"".join(self.parts)
        self.parts, self.pending = [], 0
        return [tail] if tail.strip() and not self.skipping else []


def header_info(head: bytes) -> tuple[int | None, bool, int | None]:
    """Status, chunked?, Content-Length from an HTTP response head (without the blank line)."""
    status_line, *lines = head.decode("latin-1").split("\r\n")
    try:
        status: int | None = int(status_line.split()[1])
    except (IndexError, ValueError):
        status = None
    chunked = False
    length = None
    for h in lines:
        name, _, value = h.partition(":")
        name = name.strip().lower()
        if name == "transfer-encoding" and "chunked" in value.lower():
            chunked = True
        elif name == "content-length":
            try:
                length = int(value.strip())
            except ValueError:
                length = None
    return status, chunked, length


class ResponseLines:
    """A raw HTTP response, fed as it arrives: the status once the head is complete, then the
    body's lines (chunked transfer decoded). ``feed`` raises ValueError for a head longer than
    ``MAX_HEAD_BYTES``."""

    def __init__(self) -> None:
        self.head = b""
        self.status: int | None = None
        self.body: BodyLines | None = None  # None until the head is complete

    def feed(self, data: bytes) -> list[bytes]:
        """Add received bytes; return the body lines completed by them."""
        if self.body is None:
            self.head += data
            end = self.head.find(b"\r\n\r\n")
            if end < 0:
                if len(self.head) > MAX_HEAD_BYTES:
                    raise ValueError(
                        f"the response head passed {MAX_HEAD_BYTES >> 10} KiB without ending"
                    )
                return []
            self.status, chunked, _ = header_info(self.head[:end])
            self.body = BodyLines(chunked)
            data, self.head = self.head[end + 4 :], b""
        return self.body.feed(data)
