"""A built-in TCP throughput and latency test, for hosts without iperf3.

The server is safe by default: it binds 127.0.0.1 unless told otherwise, serves at most
MAX_CONNECTIONS at once, ends each test after MAX_TEST_S, and exits on its own after its
timeout. Protocol: the client sends one mode byte. b"S": it streams data until it closes its
side; the server answers with the byte count it received (8 bytes, big-endian). b"E": it sends
one-byte messages the server echoes, for round-trip time.
"""

from __future__ import annotations

import errno
import socket
import statistics
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

DEFAULT_PORT = 5299
MAX_CONNECTIONS = 32
MAX_TEST_S = 60.0
CHUNK = 1 << 20
SOCKET_TIMEOUT_S = 10.0
RTT_BUDGET_S = 10.0  # the whole round-trip test, however slowly the server echoes


def _left(end: float) -> float:
    """Seconds left before ``end`` (monotonic clock); TimeoutError when none are."""
    left = end - time.monotonic()
    if left <= 0:
        raise TimeoutError("the test server did not answer in time")
    return left


def _listener(bind: str, port: int) -> socket.socket:
    """A listening socket on ``bind``: an IPv6 address over IPv6, "" on every address of both
    versions (IPv4 alone where this host has no IPv6)."""
    if bind == "":
        if socket.has_dualstack_ipv6():
            try:
                return socket.create_server(
                    ("::", port), family=socket.AF_INET6, dualstack_ipv6=True
                )
            except OSError as exc:
                if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                    raise
        bind = "0.0.0.0"
    family = socket.AF_INET6 if ":" in bind else socket.AF_INET
    return socket.create_server((bind.strip("[]"), port), family=family)


def serve(
    bind: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    timeout_s: float = 60.0,
    ready: Callable[[int], None] | None = None,
) -> int:
    """Serve tests until ``timeout_s`` passes; returns the number of tests served."""
    served = 0
    slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
    deadline = time.monotonic() + timeout_s
    with _listener(bind, port) as srv:
        srv.settimeout(0.2)
        if ready:
            ready(srv.getsockname()[1])
        while time.monotonic() < deadline:
            try:
                conn, _ = srv.accept()
            except TimeoutError:
                continue
            if not slots.acquire(blocking=False):
                conn.close()
                continue
            served += 1
            threading.Thread(target=_handle, args=(conn, slots), daemon=True).start()
    return served


def _handle(conn: socket.socket, slots: threading.BoundedSemaphore) -> None:
    try:
        conn.settimeout(SOCKET_TIMEOUT_S)
        mode = conn.recv(1)
        end = time.monotonic() + MAX_TEST_S
        if mode == b"S":
            total = 0
            buf = bytearray(CHUNK)
            while time.monotonic() < end:
                n = conn.recv_into(buf)
                if n == 0:
                    break
                total += n
            conn.sendall(struct.pack(">Q", total))
        elif mode == b"E":
            while time.monotonic() < end:
                b = conn.recv(1)
                if not b:
                    break
                conn.sendall(b)
    except OSError:
        pass
    finally:
        conn.close()
        slots.release()


@dataclass(frozen=True)
class Throughput:
    """One throughput run."""

    streams: int
    duration_s: float
    bytes_received: int

    @property
    def goodput_bits_per_s(self) -> float:
        """Payload bits per second the server received."""
        return self.bytes_received * 8 / self.duration_s


def measure_throughput(
    host: str, port: int, streams: int = 1, duration_s: float = 3.0
) -> Throughput:
    """Stream to the server on ``streams`` connections for ``duration_s``; raises OSError.
    The whole test ends within ``duration_s`` plus two ``SOCKET_TIMEOUT_S`` (connects, and the
    server's count at the end), however slowly the server reads or answers."""
    hard_end = time.monotonic() + duration_s + 2 * SOCKET_TIMEOUT_S
    connect_end = time.monotonic() + SOCKET_TIMEOUT_S
    conns: list[socket.socket] = []
    try:
        for _ in range(streams):
            conns.append(socket.create_connection((host, port), timeout=_left(connect_end)))
    except OSError:
        for c in conns:
            c.close()
        raise
    payload = bytes(CHUNK)
    received = [0] * streams
    errors: list[BaseException] = []

    def run(i: int, conn: socket.socket) -> None:
        try:
            conn.settimeout(_left(hard_end))
            conn.sendall(b"S")
            end = time.monotonic() + duration_s
            while time.monotonic() < end:
                # a send may block on a slow reader: never past the end of the test
                conn.settimeout(
                    max(0.001, min(end + SOCKET_TIMEOUT_S, hard_end) - time.monotonic())
                )
                conn.sendall(payload)
            conn.shutdown(socket.SHUT_WR)
            reply = b""
            while len(reply) < 8:
                conn.settimeout(_left(hard_end))
                part = conn.recv(8 - len(reply))
                if not part:
                    break
                reply += part
            received[i] = struct.unpack(">Q", reply)[0] if len(reply) == 8 else 0
        except OSError as exc:
            errors.append(exc)
        finally:
            conn.close()

    start = time.monotonic()
    threads = [threading.Thread(target=run, args=(i, c), daemon=True) for i, c in enumerate(conns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(max(0.0, hard_end - time.monotonic()) + 1.0)
    elapsed = time.monotonic() - start
    if errors and not any(received):
        raise errors[0]
    return Throughput(streams, elapsed, sum(received))


def measure_rtt(
    host: str, port: int, count: int = 200, budget_s: float = RTT_BUDGET_S
) -> list[float]:
    """Round-trip times (seconds) of up to ``count`` one-byte messages over one TCP connection,
    all within ``budget_s``: a slow echo ends the test early with the round trips it has
    (TimeoutError when it has none)."""
    end = time.monotonic() + budget_s
    rtts: list[float] = []
    with socket.create_connection((host, port), timeout=min(SOCKET_TIMEOUT_S, budget_s)) as conn:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            conn.settimeout(_left(end))
            conn.sendall(b"E")
            for _ in range(count):
                t0 = time.perf_counter()
                conn.settimeout(_left(end))
                conn.sendall(b"x")
                conn.settimeout(_left(end))
                if not conn.recv(1):
                    break
                rtts.append(time.perf_counter() - t0)
        except TimeoutError:
            if not rtts:
                raise
    return rtts


def summarise_rtt(rtts: list[float]) -> dict[str, float]:
    """Mean, p50, p99 and spread of round-trip times, seconds."""
    if not rtts:
        return {}
    ordered = sorted(rtts)
    return {
        "mean_s": statistics.fmean(rtts),
        "p50_s": ordered[len(ordered) // 2],
        "p99_s": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))],
        "stdev_s": statistics.pstdev(rtts),
    }


def is_loopback(host: str) -> bool:
    """Whether ``host`` resolves only to loopback addresses (127.0.0.0/8, ::1): a test to it
    crosses no link. False when it does not resolve."""
    import ipaddress

    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return False
    addresses = {str(info[4][0]).split("%")[0] for info in infos}
    return bool(addresses) and all(ipaddress.ip_address(a).is_loopback for a in addresses)


def measure_link(
    host: str,
    port: int | None,
    counts: list[int],
    duration: float,
    tool: str = "auto",
    rtt: bool = True,
) -> dict[str, Any]:
    """Goodput with each number of parallel streams in ``counts``: iperf3 where it is installed
    and the host runs its server (``tool`` auto or iperf3), the built-in test otherwise, and the
    built-in test's round-trip times when ``rtt``. Raises InputError when no server answers."""
    import shutil

    from fabriclens.errors import InputError
    from fabriclens.parse.iperf3 import parse_iperf3_json
    from fabriclens.probes._run import run_command

    runs: list[dict[str, Any]] = []
    used = "builtin"
    if tool in ("auto", "iperf3") and shutil.which("iperf3"):
        for n in counts:
            argv = [
                "iperf3",
                "-c",
                host,
                "-p",
                str(port or 5201),
                "-t",
                f"{duration:g}",
                "-P",
                str(n),
                "-J",
            ]
            res = run_command(argv, timeout_s=duration + 15)
            parsed = parse_iperf3_json(res.stdout)
            if not parsed.ok:
                runs = []
                break
            runs.append({"streams": n, "goodput_bits_per_s": parsed.goodput_bits_per_s, "retransmits": parsed.retransmits,
                         "command": res.command})  # fmt: skip
        if runs:
            used = "iperf3"
        elif tool == "iperf3":
            raise InputError(
                f"iperf3 could not test {host}", "start `iperf3 -s` there, or use --tool builtin"
            )
    times: dict[str, float] = {}
    if not runs:
        p = port or DEFAULT_PORT
        try:
            for n in counts:
                r = measure_throughput(host, p, n, duration)
                runs.append({"streams": n, "goodput_bits_per_s": r.goodput_bits_per_s, "retransmits": None,
                             "command": f"fabriclens bench net {host} --port {p} --streams {n}"})  # fmt: skip
            times = summarise_rtt(measure_rtt(host, p)) if rtt else {}
        except OSError as exc:
            raise InputError(f"cannot reach a test server at {host}:{p}: {exc.strerror or exc}",
                             "run `fabriclens bench net --serve --bind 0.0.0.0` there (or iperf3 -s)") from None  # fmt: skip
    return {"host": host, "tool": used, "duration_s": duration, "runs": runs, "rtt": times}
