"""Listening sockets from /proc/net/tcp{,6}: an inference server bound to localhost is a finding."""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path

import pytest

from fabriclens.cli.app import run
from fabriclens.parse.proc_net import Listener, parse_listeners

TCP = """  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:2CAA 00000000:0000 0A 00000000:00000000 00:00000000 00000000   999        0 23456 1 0000000000000000 100 0 0 10 0
   1: 00000000:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 23457 1 0000000000000000 100 0 0 10 0
   2: 0100007F:1F40 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 23458 1 0000000000000000 20 4 30 10 -1
   3: garbage
"""
TCP6 = """  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:7530 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0
   1: 00000000000000000000000000000000:0016 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2 1 0 100 0 0 10 0
"""
FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "sysfs-roce-degraded"


def test_parse_listeners() -> None:
    assert parse_listeners(TCP) == [
        Listener("127.0.0.1", 11434),
        Listener("0.0.0.0", 8000),
    ]  # the 01 is a connection
    six = parse_listeners(TCP6)
    assert (
        six == [Listener("::1", 30000), Listener("::", 22)]
        and six[0].loopback
        and not six[1].loopback
    )


def test_doctor_names_a_server_bound_to_localhost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "root"
    shutil.copytree(FIXTURE, root, symlinks=True)
    (root / "proc" / "net").mkdir(parents=True)
    (root / "proc" / "net" / "tcp").write_text(TCP)
    (root / "proc" / "net" / "tcp6").write_text(TCP6)
    run(["doctor", "--sys-root", str(root), "--json"])
    doc = json.loads(capsys.readouterr().out)
    by_port = {s["port"]: s for s in doc["services"]}
    assert (
        by_port[11434]["loopback_only"]
        and not by_port[8000]["loopback_only"]
        and by_port[30000]["loopback_only"]
    )
    found = [f for f in doc["findings"] if f["rule"] == "inference-server-localhost"]
    assert sorted(e for f in found for e in f["evidence"]) == [
        "Ollama listens on 127.0.0.1 port 11434 only",
        "SGLang listens on ::1 port 30000 only",
    ]
    assert any("OLLAMA_HOST=0.0.0.0" in f["fix"] for f in found)
    run(["doctor", "--sys-root", str(root), "--markdown"])
    md = capsys.readouterr().out
    assert "## Inference servers listening" in md and "| Ollama | 11434 | 127.0.0.1 | yes |" in md
    assert "| vLLM (OpenAI-compatible server) | 8000 | 0.0.0.0 | no |" in md


def test_live_listener_in_this_namespace(capsys: pytest.CaptureFixture[str]) -> None:
    """A real socket on 127.0.0.1:1234 (LM Studio's port), read back through /proc."""
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", 1234))
        except OSError:
            pytest.skip("port 1234 is in use here")
        s.listen()
        run(["doctor", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert {
        "service": "LM Studio",
        "port": 1234,
        "addresses": "127.0.0.1",
        "loopback_only": True,
    }.items() <= next(x for x in doc["services"] if x["port"] == 1234).items()
