"""Streamed LLM responses: OpenAI server-sent events (chat and completions) and Ollama JSON lines.

Pure: bytes in, events out. ``BodyLines`` decodes chunked transfer encoding incrementally and
splits the body into lines; ``parse_line`` turns one line into a ``StreamEvent``. Unknown or
malformed lines never raise.
"""

from __future__ import annotations

import json
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
    server_s = {
        name: float(event[key]) * _NS
        for name, key in (("total", "total_duration"), ("load", "load_duration"),
                          ("prefill", "prompt_eval_duration"), ("generation", "eval_duration"))
        if isinstance(event.get(key), int | float) and not isinstance(event.get(key), bool)
    }  # fmt: skip
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
    except ValueError:
        return StreamEvent(malformed=True)
    event = event_from_json(decoded)
    if not sse and event.text and isinstance(decoded, dict) and "choices" in decoded:
        return replace(event, complete=True)
    return event


class BodyLines:
    """Body bytes -> complete lines, decoding chunked transfer encoding incrementally."""

    def __init__(self, chunked: bool) -> None:
        self.chunked = chunked
        self.raw = b""
        self.body = b""
        self.need = -1  # bytes left in the current chunk; -1: expecting a size line
        self.crlf = False  # a chunk's data is complete; its CRLF comes next
        self.finished = False  # the terminating zero-size chunk arrived

    def feed(self, data: bytes) -> list[bytes]:
        """Add received bytes; return the lines completed by them."""
        if not self.chunked:
            self.body += data
        else:
            self.raw += data
            while not self.finished:
                if self.crlf:
                    if len(self.raw) < 2:
                        break
                    self.raw, self.crlf = self.raw[2:], False
                elif self.need < 0:
                    end = self.raw.find(b"\r\n")
                    if end < 0:
                        break
                    size_text = self.raw[:end].split(b";")[0].strip()
                    self.raw = self.raw[end + 2 :]
                    if not size_text:
                        continue
                    try:
                        self.need = int(size_text, 16)
                    except ValueError:
                        self.need = 0
                    if self.need == 0:
                        self.raw = b""
                        self.finished = True
                else:
                    take = self.raw[: self.need]
                    self.body += take
                    self.raw = self.raw[len(take) :]
                    self.need -= len(take)
                    if self.need:
                        break
                    self.need, self.crlf = -1, True
        lines = self.body.split(b"\n")
        self.body = lines.pop()
        return lines

    def rest(self) -> list[bytes]:
        """The last line when the body ends without a newline."""
        tail, self.body = self.body, b""
        return [tail] if tail.strip() else []


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
    body's lines (chunked transfer decoded)."""

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
                return []
            self.status, chunked, _ = header_info(self.head[:end])
            self.body = BodyLines(chunked)
            data, self.head = self.head[end + 4 :], b""
        return self.body.feed(data)
