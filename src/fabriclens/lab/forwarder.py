"""Userspace impairment stage: frames between two TAP devices, with delay, jitter and loss.

Used where the kernel has no netem. Started inside the lab's switch namespace; creates two TAP
devices (the lab moves one into the host's namespace), prints ``ready``, then forwards frames
both ways until SIGTERM. SIGHUP re-reads the parameters file (a live `lab impair`). Packets keep
their order (jitter never reorders); loss is an independent drop per packet per direction.
"""

from __future__ import annotations

import argparse
import collections
import errno
import fcntl
import json
import os
import random
import select
import signal
import struct
import sys
import time
from pathlib import Path

TUNSETIFF = 0x400454CA
IFF_TAP = 0x0002
IFF_NO_PI = 0x1000
MAX_FRAME = 65536
BATCH = 256
MAX_QUEUED = 20000  # frames held per direction before tail drop (a bounded queue)
SPIN_S = 200e-6  # closer than this to a release time, spin instead of sleeping in select()
PR_SET_TIMERSLACK = 29


def tighten_timers() -> None:
    """Ask for 1 ns timer slack (default 50 us) so select() wakes when it is told to."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux, or no libc: the default slack still works
        pass


def open_tap(name: str) -> int:
    """Create a TAP device named ``name`` in this process's namespace; returns its fd."""
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TAP | IFF_NO_PI))
    return fd


class Params:
    """Impairment parameters, re-read on SIGHUP."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.delay_s = self.jitter_s = self.loss = 0.0
        self.load()

    def load(self) -> None:
        data = json.loads(self.path.read_text())
        self.delay_s = float(data.get("delay_s", 0.0))
        self.jitter_s = float(data.get("jitter_s", 0.0))
        self.loss = float(data.get("loss", 0.0))


def forward(fd_a: int, fd_b: int, params: Params, rng: random.Random) -> None:
    """Forward until SIGTERM."""
    reload = False
    stop = False

    def on_hup(_sig: int, _frame: object) -> None:
        nonlocal reload
        reload = True

    def on_term(_sig: int, _frame: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGHUP, on_hup)
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    peer = {fd_a: fd_b, fd_b: fd_a}
    queues: dict[int, collections.deque[tuple[float, bytes]]] = {
        fd_a: collections.deque(),
        fd_b: collections.deque(),
    }  # keyed by destination fd
    last_release = {fd_a: 0.0, fd_b: 0.0}
    now = time.monotonic
    while not stop:
        if reload:
            reload = False
            params.load()
        due = [q[0][0] for q in queues.values() if q]
        timeout = max(0.0, min(due) - now()) if due else 1.0
        if timeout < SPIN_S:
            timeout = 0.0  # poll without sleeping: the release is due within the spin window
        else:
            timeout -= SPIN_S / 2
        try:
            readable, _, _ = select.select([fd_a, fd_b], [], [], timeout)
        except InterruptedError:
            continue
        delay, jitter, loss = params.delay_s, params.jitter_s, params.loss
        for src in readable:
            dst = peer[src]
            queue = queues[dst]
            for _ in range(BATCH):
                try:
                    frame = os.read(src, MAX_FRAME)
                except BlockingIOError:
                    break
                except OSError as exc:
                    if exc.errno in (errno.EAGAIN, errno.EBADFD, errno.EIO):
                        break
                    raise
                if loss and rng.random() < loss:
                    continue
                if not delay and not jitter and not queue:
                    _write(dst, frame)
                    continue
                if len(queue) >= MAX_QUEUED:
                    continue
                release = now() + delay + (rng.uniform(-jitter, jitter) if jitter else 0.0)
                release = max(release, last_release[dst])  # keep order
                last_release[dst] = release
                queue.append((release, frame))
        t = now()
        for dst, queue in queues.items():
            while queue and queue[0][0] <= t:
                _write(dst, queue.popleft()[1])


def _write(fd: int, frame: bytes) -> None:
    # try/except rather than contextlib.suppress: this runs once per frame
    try:  # noqa: SIM105
        os.write(fd, frame)
    except OSError:  # device down or queue full: the frame is lost, as on a wire
        pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fabriclens-lab-forwarder")
    parser.add_argument("--tap-a", required=True)
    parser.add_argument("--tap-b", required=True)
    parser.add_argument("--params", required=True, type=Path)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--lab", required=True, help="lab name (for identification in ps)")
    args = parser.parse_args(argv)
    params = Params(args.params)
    tighten_timers()
    fd_a = open_tap(args.tap_a)
    fd_b = open_tap(args.tap_b)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    os.close(1)
    forward(fd_a, fd_b, params, random.Random(args.seed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
