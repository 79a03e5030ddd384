"""A small streaming test server speaking OpenAI SSE and Ollama JSON lines (loopback only)."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TTFT_S = 0.15
GAP_S = 0.02
TOKENS = 5


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:  # keep test output quiet
        return

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def do_GET(self) -> None:
        body = b"hello"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        self.rfile.read(length)
        self.send_response(200)
        self.send_header("Transfer-Encoding", "chunked")
        openai = self.path.startswith("/v1/")
        self.send_header("Content-Type", "text/event-stream" if openai else "application/x-ndjson")
        self.end_headers()
        self.wfile.flush()
        time.sleep(TTFT_S)
        for i in range(TOKENS):
            if openai:
                event = {"choices": [{"delta": {"content": f"t{i}"}}]}
                self._chunk(f"data: {json.dumps(event)}\n\n".encode())
            else:
                self._chunk((json.dumps({"response": f"t{i}", "done": False}) + "\n").encode())
            time.sleep(GAP_S)
        if openai:
            self._chunk(
                b'data: {"choices": [{"delta": {}}], "usage": {"completion_tokens": 5}}\n\ndata: [DONE]\n\n'
            )
        else:
            self._chunk(b'{"done": true, "eval_count": 5}\n')
        self._chunk(b"")


def start() -> tuple[ThreadingHTTPServer, str]:
    """Start on an ephemeral loopback port; returns the server and its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"
