"""Machine and terminal output stay clean: `watch --json` lines are strict JSON, and a name the
user gave is printed without its control characters."""

from __future__ import annotations

import errno
import json
import math
import socket

import pytest

from fabriclens.cli.app import run
from fabriclens.cli.watch_cmd import _json_line


def _strict(text: str) -> object:
    def refuse(name: str) -> float:
        raise ValueError(name)

    return json.loads(text, parse_constant=refuse)


def test_a_watch_sample_with_no_rate_is_null_not_nan() -> None:
    doc = {"t": 1.0, "links": [{"iface": "eth0", "rx_bits_per_s": math.nan, "tx_bits_per_s": math.inf}]}  # fmt: skip
    line = _json_line(doc)
    assert line.endswith("\n") and line.count("\n") == 1
    assert _strict(line) == {"t": 1.0, "links": [{"iface": "eth0", "rx_bits_per_s": None, "tx_bits_per_s": None}]}  # fmt: skip


def test_ui_prints_the_bind_address_without_escapes(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The warning and the error line both name the address, cleaned (the socket's bind is
    stubbed to fail: no name is looked up, nothing listens)."""

    def refuse(self: socket.socket, address: object) -> None:
        raise OSError(errno.EADDRNOTAVAIL, "Cannot assign requested address")

    monkeypatch.setattr(socket.socket, "bind", refuse)
    assert run(["ui", "--bind", "\x1b[31mgpu-node-1", "--port", "8765"]) == 2
    err = capsys.readouterr().err
    assert "listening on gpu-node-1:" in err
    assert "\x1b" not in err and "cannot listen on" in err
