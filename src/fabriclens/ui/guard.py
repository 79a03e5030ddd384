"""Refuse requests that name another host (DNS rebinding) or come from another origin.

A page on any web site can make the browser send requests to 127.0.0.1; its own name,
re-pointed at 127.0.0.1 (DNS rebinding), would carry that name in ``Host``, and a cross-site
request carries the foreign site in ``Origin``. Both are refused with 403 before any route runs."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def allowed_hosts(bind: str, port: int, extra: Iterable[str] = ()) -> frozenset[str]:
    """The ``Host`` values this server answers: its loopback names, the address it is bound to,
    and any the user allowed, each with the port."""
    names = {*LOOPBACK_NAMES, f"[{bind}]" if ":" in bind else bind, *extra}
    names.discard("0.0.0.0")
    names.discard("[::]")
    return frozenset(f"{n.lower()}:{port}" for n in names)


class HostOriginGuard:
    """ASGI middleware: 403 unless ``Host`` is one of ours and ``Origin`` (when sent) is too."""

    def __init__(self, app: ASGIApp, hosts: frozenset[str]) -> None:
        self.app = app
        self.hosts = hosts

    def verdict(self, headers: dict[str, str]) -> str:
        """Why the request is refused ("" when it is not)."""
        host = headers.get("host", "").lower()
        if host not in self.hosts:
            return f"Host {host[:80]!r} is not this server's"
        origin = headers.get("origin")
        if origin is not None and origin.lower() not in {f"http://{h}" for h in self.hosts}:
            return f"Origin {origin[:80]!r} is not this server's"
        return ""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        why = self.verdict(headers)
        if not why:
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        body = f"refused: {why} (fabriclens ui answers only its own address)\n".encode()
        await send({"type": "http.response.start", "status": 403,
                    "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                                (b"content-length", str(len(body)).encode())]})  # fmt: skip
        await send({"type": "http.response.body", "body": body})
