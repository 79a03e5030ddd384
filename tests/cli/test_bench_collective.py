"""`bench collective` and `bench p2p` as local gloo ranks (--spawn): every op's values checked,
nccl-tests' bus factors, the report's keys, stuck and missing ranks named, bad input one line.
(Against a lab network and a bare timing loop: tests/lab/test_bench_collective_lab.py.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

if os.environ.get("CI") != "true":
    pytest.importorskip("torch", reason="needs torch (make test installs torch==2.13.0)")

from fabriclens.bench.collective import free_port
from fabriclens.cli.app import run
from fabriclens.cli.collective_bench_cmd import BENCH_OPS, _ops
from fabriclens.errors import InputError

FACTOR = {"all_reduce": 2 * 2 / 3, "all_gather": 2 / 3, "reduce_scatter": 2 / 3, "all_to_all": 2 / 3,
          "broadcast": 1.0, "send_recv": 1.0, "reduce": 1.0, "gather": 2 / 3, "scatter": 2 / 3}  # fmt: skip


def test_every_op_on_three_local_ranks_in_one_launch(capsys: pytest.CaptureFixture[str]) -> None:
    """--op all times the nine ops one after another in one process group (one start-up, as
    nccl-tests' binaries run in turn): each op's sizes, bus factor and check as alone."""
    argv = ["bench", "collective", "--spawn", "3", "--op", "all", "--min-bytes", "96KB", "--max-bytes", "384KB",
            "--iters", "2", "--warmup", "1", "--check", "--json"]  # fmt: skip
    assert run(argv) == 0, capsys.readouterr().err
    out = json.loads(capsys.readouterr().out)
    assert [d["op"] for d in out["ops"]] == list(BENCH_OPS) and out["level"] == "unjudged"
    assert sorted(BENCH_OPS) == sorted(FACTOR)
    for doc in out["ops"]:
        op = doc["op"]
        assert doc["ranks"] == 3 and doc["backend"] == "gloo", op
        assert [r["size_bytes"] for r in doc["sizes"]] == [96000, 192000, 384000], op
        for r in doc["sizes"]:
            assert r["wrong"] == 0 and r["time_us"] > 0, op
            assert r["busbw_GBps"] == pytest.approx(r["algbw_GBps"] * FACTOR[op]), op
            assert r["algbw_GBps"] == pytest.approx(r["size_bytes"] / r["time_us"] / 1e3), op
        assert doc["plateau_busbw_GBps"] > 0 and doc["expected_busbw_GBps"] is None, op
        assert doc["level"] == "unjudged", op


def test_ops_are_one_several_or_all() -> None:
    assert _ops("all") == list(BENCH_OPS)
    assert _ops("allreduce, all_gather,all_reduce") == ["all_reduce", "all_gather"]  # one each
    with pytest.raises(InputError, match="unknown --op 'bogus'"):
        _ops("all_reduce,bogus")


def test_one_plot_per_launch(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """--plot draws one op's curve: asked with several, it says so before any rank starts."""
    assert (
        run(
            [
                "bench",
                "collective",
                "--spawn",
                "2",
                "--op",
                "all",
                "--plot",
                str(tmp_path / "p.png"),
            ]
        )
        == 2
    )
    assert "--plot draws one op" in capsys.readouterr().err


def test_text_table_and_plot(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    png = tmp_path / "c.png"
    assert run(["bench", "collective", "--spawn", "2", "--min-bytes", "1MB", "--max-bytes", "2MB", "--iters", "2",
                "--plot", str(png)]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "busbw GB/s" in out and "Plateau busbw" in out and "give --network" in out
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_p2p_matrix_in_rounds(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["bench", "p2p", "--spawn", "4", "--size", "1MB", "--iters", "2", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ranks"] == 4 and doc["rounds"] == 3
    m = doc["matrix_GBps"]
    assert all(m[i][i] is None for i in range(4))
    assert all(m[i][j] == m[j][i] and m[i][j] > 0 for i in range(4) for j in range(4) if i != j)
    assert doc["suspect_nodes"] == []  # one host: no node to suspect
    lat = doc["latency_matrix_us"]
    assert all(
        lat[i][j] == lat[j][i] and lat[i][j] > 0 for i in range(4) for j in range(4) if i != j
    )
    assert (
        doc["latency_bytes"] == 8
        and doc["median_latency_us"] > 0
        and doc["latency_suspect_nodes"] == []
    )


def _rank(rank: int, port: int, *args: str) -> subprocess.Popen[str]:
    env = dict(os.environ, RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
               GLOO_SOCKET_IFNAME="lo")  # fmt: skip
    return subprocess.Popen([sys.executable, "-m", "fabriclens", "bench", "collective", "--timeout", "8", *args],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip


def test_a_rank_that_stops_early_is_named() -> None:
    """Rank 1 runs one size and leaves; rank 0 waits at the second size and names rank 1."""
    port = free_port()
    r1 = _rank(1, port, "--min-bytes", "1MB", "--max-bytes", "1MB")
    r0 = _rank(0, port, "--min-bytes", "1MB", "--max-bytes", "4MB")
    out, _ = r0.communicate(timeout=120)
    r1.communicate(timeout=60)
    assert r0.returncode == 1
    assert "at 2,000,000 bytes did not finish" in out and "ranks [1] never got there" in out


def test_a_rank_that_never_comes_is_reported() -> None:
    r0 = _rank(0, free_port(), "--timeout", "3")
    out, err = r0.communicate(timeout=60)
    assert r0.returncode == 1 and "rendezvous" in out and "not every rank arrived" in out, err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["bench", "collective", "--op", "all_sum"], "unknown --op"),
        (["bench", "collective"], "torchrun"),
        (["bench", "collective", "--spawn", "0"], "--spawn 0"),
        (
            ["bench", "collective", "--min-bytes", "8MB", "--max-bytes", "1MB", "--spawn", "2"],
            "sweep",
        ),
        (["bench", "collective", "--backend", "mpi", "--spawn", "2"], "--backend"),
        (["bench", "p2p", "--size", "1B", "--spawn", "2"], "--size"),
    ],
)
def test_bad_input_is_one_line(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert run(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


STORE_CHECK = """
import os, sys
from fabriclens.bench import collective
listener = collective.loopback_listener()
port = listener.getsockname()[1]
os.set_inheritable(listener.fileno(), True)
os.environ.update(RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                  GLOO_SOCKET_IFNAME="lo", FABRICLENS_STORE_FD=str(listener.fileno()))
torch, dist, *_ = collective._init("gloo", 10)
found = []
for table in ("/proc/net/tcp", "/proc/net/tcp6"):
    for line in open(table).read().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        if state == "0A" and int(local.split(":")[1], 16) == port:
            found.append(local.split(":")[0])
print(",".join(found))
dist.destroy_process_group()
"""


def test_spawn_store_listens_on_loopback_only() -> None:
    """--spawn's rendezvous store listens on 127.0.0.1 (torch's env:// store listens on every
    interface: anyone on the network could join or poison the rendezvous)."""
    done = subprocess.run([sys.executable, "-c", STORE_CHECK], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (
        done.stdout.strip() == "0100007F"
    )  # 127.0.0.1 in /proc/net/tcp's byte order, and nothing else
