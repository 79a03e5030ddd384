"""Collective and pairwise benchmarks over torch.distributed (NCCL on GPUs, gloo on CPUs).

Runs in every rank: under ``torchrun`` / ``srun`` (rendezvous from the environment, as torchrun
sets it) or as one of ``--spawn N`` local processes. Rank 0 gathers every rank's timings and
returns the report. Each rank records its progress in the rendezvous store, so when an
operation times out rank 0 can name the ranks that never got there.

torch is imported here only: ``pip install 'fabriclens[bench]'``.
"""

from __future__ import annotations

import datetime
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from fabriclens.measure.collective import iteration_stats, pair_rounds
from fabriclens.progress import Progress, no_progress

DTYPES = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int32": 4, "int8": 1}


@dataclass(frozen=True)
class RunConfig:
    op: str
    sizes: tuple[int, ...]
    iters: int
    warmup: int
    dtype: str
    backend: str  # nccl | gloo | auto
    timeout_s: float
    check: bool


class StuckRanks(Exception):
    """An operation did not finish on every rank within the timeout."""

    def __init__(self, step: str, behind: list[int], detail: str) -> None:
        self.step, self.behind, self.detail = step, behind, detail
        super().__init__(f"{step}: ranks {behind} did not get there ({detail})")


def env_rendezvous() -> tuple[int, int] | None:
    """(rank, world size) when launched by torchrun, srun or --spawn; None otherwise."""
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        return int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    if (
        "SLURM_PROCID" in os.environ
        and "SLURM_NTASKS" in os.environ
        and "MASTER_ADDR" in os.environ
    ):
        return int(os.environ["SLURM_PROCID"]), int(os.environ["SLURM_NTASKS"])
    return None


def _init(backend: str, timeout_s: float) -> tuple[Any, Any, int, int, Any]:
    import torch
    import torch.distributed as dist

    rank, world = env_rendezvous() or (0, 1)
    os.environ.setdefault("RANK", str(rank))
    os.environ.setdefault("WORLD_SIZE", str(world))
    if backend == "auto":
        backend = "nccl" if torch.cuda.is_available() else "gloo"
    device = torch.device("cpu")
    if backend == "nccl":
        local = int(os.environ.get("LOCAL_RANK", os.environ.get("SLURM_LOCALID", "0")))
        torch.cuda.set_device(local)
        device = torch.device("cuda", local)
    try:
        store = _loopback_store(dist, rank, world, timeout_s)
        if store is not None:
            dist.init_process_group(backend, store=store, rank=rank, world_size=world,
                                    timeout=datetime.timedelta(seconds=timeout_s))  # fmt: skip
        else:
            dist.init_process_group(backend, init_method="env://", rank=rank, world_size=world,
                                    timeout=datetime.timedelta(seconds=timeout_s))  # fmt: skip
    except (RuntimeError, ValueError) as exc:  # DistStoreError and friends derive from RuntimeError
        where = f"{os.environ.get('MASTER_ADDR', '?')}:{os.environ.get('MASTER_PORT', '?')}"
        raise StuckRanks(f"rendezvous at {where}", [], str(exc).splitlines()[0][:200]) from None
    return torch, dist, rank, world, device


STORE_FD_ENV = (
    "FABRICLENS_STORE_FD"  # --spawn: rank 0's listening socket for the store ("client": the others)
)


def _loopback_store(dist: Any, rank: int, world: int, timeout_s: float) -> Any:
    """Under --spawn, rank 0 serves the rendezvous store on the socket its parent bound to
    127.0.0.1 (torch's own store listens on every interface) and every rank uses that store
    explicitly; None otherwise (env:// as torchrun and srun set it up)."""
    fd = os.environ.pop(STORE_FD_ENV, None)
    if fd is None:
        return None
    port = int(os.environ["MASTER_PORT"])
    wait = datetime.timedelta(seconds=timeout_s)
    if fd == "client":
        return dist.TCPStore("127.0.0.1", port, world, False, wait)
    return dist.TCPStore("127.0.0.1", port, world, True, wait, master_listen_fd=int(fd),
                         use_libuv=False)  # fmt: skip


def loopback_listener() -> socket.socket:
    """A listening socket on 127.0.0.1 and a free port, for the store of --spawn's ranks."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    return listener


def _progress(dist: Any, rank: int, step: int) -> None:
    """Record that this rank reached ``step`` (entered it)."""
    store = dist.distributed_c10d._get_default_store()
    store.set(f"fabriclens/progress/{rank}", str(step))


def _behind(dist: Any, world: int, step: int) -> list[int]:
    """Ranks that never reached ``step`` (dead, or stuck in an earlier one)."""
    store = dist.distributed_c10d._get_default_store()
    store.set_timeout(datetime.timedelta(seconds=5))
    out = []
    for r in range(world):
        key = f"fabriclens/progress/{r}"
        try:
            got = int(store.get(key)) if store.check([key]) else -1
        except Exception:  # the store itself may be gone with a dead rank
            got = -1
        if got < step:
            out.append(r)
    return out


def _tensors(
    torch: Any, op: str, size: int, world: int, dtype: Any, esize: int, device: Any, rank: int
) -> tuple[Callable[[], Any], Callable[[], None]]:
    """The operation on buffers of nccl-tests' size, as a callable returning the result (timed
    as it is: in place, no refill, as nccl-tests does), and one that refills the inputs with
    rank + 1 before a checked run."""
    import torch.distributed as dist

    count = max(1, size // esize)
    if op in ("all_gather", "reduce_scatter", "all_to_all", "gather", "scatter"):
        count = max(world, count - count % world)
    part = count // world
    fill = float(rank + 1)
    x = torch.full((part if op in ("all_gather", "gather") else count,), fill, dtype=dtype, device=device)  # fmt: skip

    def reset() -> None:
        x.fill_(fill)

    if op == "all_reduce":
        return (lambda: (dist.all_reduce(x), x)[1]), reset
    if op == "broadcast":
        return (lambda: (dist.broadcast(x, src=0), x)[1]), reset
    if op == "reduce":  # the sum lands on rank 0 (nccl-tests' root)
        return (lambda: (dist.reduce(x, dst=0), x)[1]), reset
    if op in ("gather", "scatter"):  # rank 0 holds the whole array (nccl-tests' size)
        return _rooted(torch, dist, op, x, part, world, rank), reset
    out = torch.empty((part if op == "reduce_scatter" else count,), dtype=dtype, device=device)
    if op == "all_gather":
        return (lambda: (dist.all_gather_into_tensor(out, x), out)[1]), reset
    if op == "reduce_scatter":
        return (lambda: (dist.reduce_scatter_tensor(out, x), out)[1]), reset
    if op == "all_to_all":
        return (lambda: (dist.all_to_all_single(out, x), out)[1]), reset
    # send_recv: every rank sends to the next and receives from the previous

    def sendrecv() -> Any:
        ops = [
            dist.P2POp(dist.isend, x, (rank + 1) % world),
            dist.P2POp(dist.irecv, out, (rank - 1) % world),
        ]
        for w in dist.batch_isend_irecv(ops):
            w.wait()
        return out

    return sendrecv, reset


def _rooted(torch: Any, dist: Any, op: str, x: Any, part: int, world: int, rank: int) -> Any:
    """gather: every rank's ``part`` elements to rank 0, chunk k from rank k; scatter: rank 0's
    array in ``part``-element chunks, chunk k (filled k + 1) to rank k. Only the root holds the
    chunks; the timed call is the collective alone."""
    chunks = (
        [torch.full((part,), float(k + 1), dtype=x.dtype, device=x.device) for k in range(world)]
        if rank == 0
        else None
    )
    mine = torch.empty(part, dtype=x.dtype, device=x.device)

    def gather() -> Any:
        dist.gather(x, chunks, dst=0)
        return chunks

    def scatter() -> Any:
        dist.scatter(mine, chunks, src=0)
        return mine

    return gather if op == "gather" else scatter


def _wrong(torch: Any, op: str, result: Any, rank: int, world: int) -> int:
    """Elements that differ from what the operation must produce (every rank fills rank + 1)."""
    total = world * (world + 1) / 2
    if op in ("reduce", "gather") and rank != 0:
        return 0  # only the root holds a result
    if op == "gather":
        result = torch.cat(result)
    if op in ("all_gather", "all_to_all", "gather"):  # chunk k came from rank k
        part = result.numel() // world
        want = torch.arange(
            1, world + 1, dtype=result.dtype, device=result.device
        ).repeat_interleave(part)
        return int((result != want).sum().item())
    value = {
        "all_reduce": total,
        "broadcast": 1.0,
        "reduce_scatter": total,
        "send_recv": float((rank - 1) % world + 1),
        "reduce": total,
        "scatter": float(rank + 1),
    }[op]
    return int((result != value).sum().item())


def node_name() -> str:
    """This rank's node: FABRICLENS_NODE where hosts share a name (containers, lab namespaces)."""
    return os.environ.get("FABRICLENS_NODE") or socket.gethostname()


def run_collective(cfg: RunConfig, progress: Progress = no_progress) -> dict[str, Any] | None:
    """Time ``cfg.op`` at every size on this rank; rank 0 returns every rank's statistics.
    ``progress`` hears of each size as it starts (done of ``len(cfg.sizes)``)."""
    runs = run_collectives(cfg, (cfg.op,), progress)
    return None if runs is None else runs[0]


def run_collectives(
    cfg: RunConfig, ops: Sequence[str], progress: Progress = no_progress
) -> list[dict[str, Any]] | None:
    """Time each of ``ops`` at every size of ``cfg`` in one process group (one start-up for
    all, as nccl-tests' binaries run one after another); rank 0 returns, per op, every rank's
    statistics. ``progress`` hears of each op's sizes as they start."""
    torch, dist, rank, world, device = _init(cfg.backend, cfg.timeout_s)
    backend = dist.get_backend()
    dtype = getattr(torch, cfg.dtype)
    esize = DTYPES[cfg.dtype]
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    total = len(cfg.sizes) * len(ops)
    out: list[dict[str, Any]] = []
    step, name, size = 0, ops[0], cfg.sizes[0]
    try:
        for name in ops:
            per_size: list[dict[str, float]] = []
            wrong: list[int] = []
            for size in cfg.sizes:
                _progress(dist, rank, step + 1)  # about to enter this step
                progress(
                    step, total, f"{name} {size:,} bytes" if len(ops) > 1 else f"{size:,} bytes"
                )
                op, reset = _tensors(torch, name, size, world, dtype, esize, device, rank)
                for _ in range(cfg.warmup):
                    op()
                sync()
                dist.barrier()
                times = []
                for _ in range(cfg.iters):
                    t0 = time.perf_counter()
                    op()
                    sync()
                    times.append(time.perf_counter() - t0)
                bad = 0
                if cfg.check:  # one more run, untimed, on fresh inputs
                    reset()
                    result = op()
                    sync()
                    bad = _wrong(torch, name, result, rank, world)
                per_size.append(iteration_stats(times))
                wrong.append(bad)
                step += 1
            gathered: list[Any] = [None] * world
            dist.all_gather_object(
                gathered, {"host": node_name(), "stats": per_size, "wrong": wrong}
            )
            out.append({"op": name, "backend": backend, "world": world, "device": str(device.type),
                        "ranks": gathered})  # fmt: skip
        progress(step, total, "")
    except RuntimeError as exc:  # a collective timed out or a peer died; rank 0 names who is behind
        behind = _behind(dist, world, step + 1) if rank == 0 else []
        raise StuckRanks(
            f"{name} at {size:,} bytes", behind, str(exc).splitlines()[0][:200]
        ) from None
    finally:
        _shutdown(dist)
    return out if rank == 0 else None


LATENCY_BYTES = 8  # the small message of the latency test (two float32)


def _exchanges(
    dist: Any, sync: Any, out: Any, into: Any, peer: int, n: int, first: bool, alternate: bool
) -> list[float]:
    """Seconds of each of ``n`` timed exchanges with ``peer`` (one untimed before): this rank
    sends ``out`` then receives ``into`` when it goes ``first`` (every other time with
    ``alternate``), else receives first and answers."""
    times = []
    for i in range(n + 1):
        t0 = time.perf_counter()
        if first == (not alternate or i % 2 == 0):
            dist.send(out, peer)
            dist.recv(into, peer)
        else:
            dist.recv(into, peer)
            dist.send(out, peer)
        sync()
        if i:
            times.append(time.perf_counter() - t0)
    return times


def run_p2p(
    size: int, iters: int, backend: str, timeout_s: float, latency_iters: int = 20,
    progress: Progress = no_progress,
) -> dict[str, Any] | None:  # fmt: skip
    """Bandwidth and small-message latency of every pair, in rounds of disjoint pairs; rank 0
    returns both matrices. ``progress`` hears of each round as it starts."""
    torch, dist, rank, world, device = _init(backend, timeout_s)
    name = dist.get_backend()
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    x = torch.ones(max(1, size // 4), dtype=torch.float32, device=device)
    y = torch.empty_like(x)
    small, small_in = (
        torch.ones(LATENCY_BYTES // 4, device=device),
        torch.empty(LATENCY_BYTES // 4, device=device),
    )
    mine: dict[str, float] = {}
    mine_lat: dict[str, float] = {}
    step = 0
    try:
        rounds = pair_rounds(world)
        for pairs in rounds:
            _progress(dist, rank, step + 1)
            progress(step, len(rounds), f"{len(pairs)} pair{'s' if len(pairs) > 1 else ''} at once")
            dist.barrier()
            pair = next(((a, b) for a, b in pairs if rank in (a, b)), None)
            if pair is not None:
                a, b = pair
                peer = b if rank == a else a
                # the first exchange warms the connection up; directions alternate
                times = _exchanges(dist, sync, x, y, peer, iters, rank == a, alternate=True)
                # one exchange moves the buffer there and back: 2 x size bytes on the pair's path
                mine[f"{a},{b}"] = 2 * x.numel() * 4 / min(times) / 1e9 if rank == a else 0.0
            dist.barrier()  # latency only once every pair's bulk transfer is over
            if pair is not None:
                # ping-pong: a sends, b answers
                trips = _exchanges(
                    dist, sync, small, small_in, peer, latency_iters, rank == a, alternate=False
                )
                if rank == a:  # one way = half the median round trip
                    mine_lat[f"{a},{b}"] = statistics.median(trips) / 2 * 1e6
            step += 1
        progress(step, len(rounds), "")
        gathered: list[Any] = [None] * world
        dist.all_gather_object(
            gathered,
            {"host": node_name(), "pairs": mine, "latency_us": mine_lat, "cores": os.cpu_count()},
        )
    except RuntimeError as exc:
        behind = _behind(dist, world, step + 1) if rank == 0 else []
        raise StuckRanks(f"p2p round {step + 1}", behind, str(exc).splitlines()[0][:200]) from None
    finally:
        _shutdown(dist)
    if rank != 0:
        return None
    return {
        "backend": name,
        "world": world,
        "size_bytes": x.numel() * 4,
        "ranks": gathered,
    }


def _shutdown(dist: Any) -> None:
    try:
        if dist.is_initialized():
            dist.destroy_process_group()
    except Exception:  # a group broken by a timeout cannot always be torn down cleanly
        pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def spawn(
    argv: list[str], n: int, timeout_s: float, rank0_stderr: bool = False
) -> tuple[int, str, str]:
    """Run ``fabriclens`` ``argv`` as ``n`` local ranks (rendezvous on 127.0.0.1); returns rank
    0's exit status, stdout and the other ranks' last error lines. Every child ends within
    ``timeout_s`` or is killed. ``rank0_stderr``: rank 0 writes to this process's stderr as it
    goes (a terminal, where it draws its progress) instead of through a pipe."""
    listener = loopback_listener()  # the store listens on loopback only, not on every interface
    port = listener.getsockname()[1]
    procs = []
    for rank in range(n):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(n), LOCAL_RANK=str(rank), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), GLOO_SOCKET_IFNAME=os.environ.get("GLOO_SOCKET_IFNAME", "lo"))  # fmt: skip
        fds: tuple[int, ...] = ()
        env[STORE_FD_ENV] = "client"
        if rank == 0:
            env[STORE_FD_ENV], fds = str(listener.fileno()), (listener.fileno(),)
        errors_to = None if rank == 0 and rank0_stderr else subprocess.PIPE
        procs.append(subprocess.Popen([sys.executable, "-m", "fabriclens", *argv], env=env, stdout=subprocess.PIPE,
                                      stderr=errors_to, text=True, pass_fds=fds))  # fmt: skip
    listener.close()  # rank 0 holds it now
    deadline = time.monotonic() + timeout_s
    outputs = []
    for p in procs:
        try:
            out, err = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
        outputs.append((p.returncode, out, err))
    errors = "; ".join(f"rank {i}: {e.strip().splitlines()[-1]}" for i, (rc, _, e) in enumerate(outputs[1:], 1)
                       if rc not in (0, None) and e.strip())  # fmt: skip
    code, out, err = outputs[0]
    if code != 0 and err and err.strip():
        sys.stderr.write(err if err.endswith("\n") else err + "\n")
    return code, out, errors
