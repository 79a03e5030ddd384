"""Hostile HTTP servers for the network hardening tests: small threaded socket servers bound
to 127.0.0.1, each bounded in time (the listener and every connection end on their own)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator

Behaviour = Callable[[socket.socket, bytes], None]  # (connection, request head) -> None


def read_head(conn: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data and len(data) < 65536:
        part = conn.recv(4096)
        if not part:
            break
        data += part
    return data


@contextlib.contextmanager
def hostile(behaviour: Behaviour, lifetime_s: float = 15.0) -> Iterator[tuple[int, list[bytes]]]:
    """Serve ``behaviour`` on a free loopback port for at most ``lifetime_s``; yields the port
    and the request heads received."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.1)
    port = listener.getsockname()[1]
    heads: list[bytes] = []
    end = time.monotonic() + lifetime_s
    stop = threading.Event()

    def handle(conn: socket.socket) -> None:
        with contextlib.suppress(OSError), conn:
            conn.settimeout(max(0.1, end - time.monotonic()))
            head = read_head(conn)
            heads.append(head)
            behaviour(conn, head)

    def accept() -> None:
        while not stop.is_set() and time.monotonic() < end:
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            threading.Thread(target=handle, args=(conn,), daemon=True).start()
        listener.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield port, heads
    finally:
        stop.set()
        thread.join(2)


def until(seconds: float) -> Callable[[], bool]:
    """A clock for a behaviour's loop: true while ``seconds`` have not passed."""
    end = time.monotonic() + seconds
    return lambda: time.monotonic() < end


def byte_at_a_time(conn: socket.socket, _head: bytes) -> None:
    """A valid-looking response, one byte every 50 ms, without end (up to 12 s)."""
    more = until(12)
    payload = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n" + b"x" * 10_000
    for i in range(len(payload)):
        if not more():
            return
        conn.sendall(payload[i : i + 1])
        time.sleep(0.05)


def endless_stream(conn: socket.socket, _head: bytes) -> None:
    """Server-sent events that never end (up to 12 s)."""
    more = until(12)
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n")
    line = b'data: {"choices": [{"delta": {"content": "tok "}}]}\n\n'
    while more():
        conn.sendall(line)
        time.sleep(0.01)


def huge_body(size_bytes: int) -> Behaviour:
    """``size_bytes`` of body without a newline, as fast as the client reads."""

    def behaviour(conn: socket.socket, _head: bytes) -> None:
        conn.sendall(f"HTTP/1.1 200 OK\r\nContent-Length: {size_bytes}\r\n\r\n".encode())
        block = b"x" * (1 << 20)
        for _ in range(size_bytes >> 20):
            conn.sendall(block)

    return behaviour


def answer(body: bytes, content_type: str = "application/json") -> Behaviour:
    """One whole answer, then close."""

    def behaviour(conn: socket.socket, _head: bytes) -> None:
        conn.sendall(f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
                     "Connection: close\r\n\r\n".encode() + body)  # fmt: skip

    return behaviour
