"""Hostile input: every command and option given values and files meant to break it.

The cases are generated from the click command tree (tests/cli/test_hostile_inputs.py runs them):
every option of every command gets each of HOSTILE_VALUES, every command that reads a file gets
each of the hostile files. A case passes when it ends in exit 0/1 with valid output (JSON where
--json was asked) or exit 2 with exactly one line on stderr, within DEADLINE_S, never exit 3.

Run: python benchmarks/hostile.py          (every case, then the 1 GB NCCL log)
     python benchmarks/hostile.py --cases  (only the cases)
     python benchmarks/hostile.py --big    (only the 1 GB logs: time and peak memory of `logs`)
Targets (issue): no case exits 3 or passes its deadline; `fabriclens logs` on a 1 GB NCCL log in
< 20 s and < 200 MB peak RSS.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import os
import random
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
SYSFS = FIXTURES / "sysfs-roce-degraded"
NCCL_LOG = FIXTURES / "samples" / "nccl-debug-ib.log"
NCCL_TESTS = FIXTURES / "nccl-tests-h200-8gpu.txt"
REAL_LOGS = FIXTURES / "real" / "logs"
CLOSED = "http://127.0.0.1:9/v1"  # the discard port: nothing listens there, refused at once
DEADLINE_S = 10.0
MEMORY_HEADROOM_BYTES = 2 << 30  # address space a case may add before MemoryError

HOSTILE_VALUES = [
    "0",
    "-1",
    "1e308",
    "9" * 5000,
    "nan",
    "inf",
    "-inf",
    "",
    "text",
    "ünï©ødé ✓ [/x]",
]

# A runnable form of each command: the arguments it needs, bounded (closed ports, one sample,
# short timeouts, sysfs from a fixture). {tmp} is the cases' directory.
BASE: dict[str, list[str]] = {
    "plan": ["plan", "llama-3.1-8b", "--gpus", "16", "--json"],
    "collective": ["collective", "all_reduce", "1GB", "--ranks", "16", "--json"],
    "search": ["search", "llama-3.1-8b", "--gpus", "16", "--json"],
    "advise": ["advise", "llama-3.1-8b", "--json"],
    "capacity": ["capacity", "llama-3.1-8b", "--json"],
    "transfer": ["transfer", "140GB", "--json"],
    "datapath": ["datapath", "llama-3.1-8b", "--json"],
    "doctor": ["doctor", "--sys-root", str(SYSFS), "--json"],
    "logs": ["logs", str(NCCL_LOG), "--json"],
    "watch": ["watch", "--count", "1", "--interval", "0.05", "--sys-root", str(SYSFS), "--json"],
    "http": ["http", CLOSED, "-n", "1", "--timeout", "0.5", "--json"],
    "fleet": ["fleet", "{tmp}/node1.json", "{tmp}/node2.json", "{tmp}/node3.json", "--json"],
    "catalog": ["catalog", "gpus", "--json"],
    "bench serve": ["bench", "serve", CLOSED, "--model", "m", "--requests", "1", "--timeout",
                    "0.5", "--json"],
    "bench collective": ["bench", "collective", "--json"],
    "bench p2p": ["bench", "p2p", "--json"],
    "bench import": ["bench", "import", str(NCCL_TESTS), "--json"],
    "bench net": ["bench", "net", "127.0.0.1", "--port", "9", "--timeout", "0.5", "--duration",
                  "0.2", "--json"],
    "topo": ["topo", "--servers", "16", "--json"],
    "simulate": ["simulate", "all_reduce", "1GB", "--gpus", "64", "--no-effects", "--json"],
    "collect": ["collect", "-o", "{tmp}/bundle.tar.gz", "--json"],
}  # fmt: skip

# What is not fuzzed, and why.
SKIPPED_COMMANDS = {
    "lab": "needs root and creates network namespaces (tests/lab exercises it)",
    "ui": "starts a web server (tests/ui exercises it, its bad options included)",
}
SKIPPED_OPTIONS = {
    ("doctor", "--peer"): "a hostile value is a host name: it would be looked up and probed",
    ("doctor", "--url"): "a hostile value would be a URL to fetch",
    ("doctor", "--serve"): "starts a server",
    ("doctor", "--serve-for"): "only with --serve, which starts a server",
    ("http", "url"): "a hostile value would be a URL to fetch",
    ("http", "--baseline-url"): "a hostile value would be a URL to fetch",
    ("bench serve", "url"): "a hostile value would be a URL to fetch",
    ("bench serve", "--tokenizer"): "a name is fetched from the Hugging Face hub",
    ("bench net", "host"): "a hostile value is a host name: it would be looked up",
    ("bench net", "--serve"): "starts a server",
    ("bench net", "--bind"): "only with --serve, which starts a server",
    ("collect", "--output"): "a hostile value is a path it would write",
    ("topo", "--plot"): "a hostile value is a path it would write",
    ("simulate", "--heatmap"): "a hostile value is a path it would write",
}
SKIPPED_VALUES = {
    ("watch", "--count", "0"): "0 means until Ctrl-C, by design",
}

# Commands that read a user file, with the file's place in their arguments ({file}).
FILE_SLOTS: dict[str, list[str]] = {
    "logs": ["logs", "{file}", "--json"],
    "bench import": ["bench", "import", "{file}", "--json"],
    "fleet": ["fleet", "{file}", "{tmp}/node1.json", "{tmp}/node2.json", "--json"],
    "http --baseline": ["http", CLOSED, "-n", "1", "--timeout", "0.5", "--baseline", "{file}",
                        "--json"],
    "http --data": ["http", CLOSED, "-n", "1", "--timeout", "0.5", "--data", "@{file}", "--json"],
    "bench serve --prompts": ["bench", "serve", CLOSED, "--model", "m", "--requests", "1",
                              "--timeout", "0.5", "--prompts", "{file}", "--json"],
    "doctor --logs": ["doctor", "--sys-root", str(SYSFS), "--logs", "{file}", "--json"],
    "plan config.json": ["plan", "{file}", "--json"],
    "--catalog": ["--catalog", "{file}", "catalog", "gpus", "--json"],
    "doctor --from": ["doctor", "--from", "{file}", "--json"],
    "plan --fabric": ["plan", "llama-3.1-8b", "--gpus", "16", "--fabric", "{file}", "--json"],
    "simulate --fabric": ["simulate", "all_reduce", "1GB", "--fabric", "{file}", "--no-effects",
                          "--json"],
    "simulate --plan": ["simulate", "--plan", "{file}", "--json"],
}  # fmt: skip

HOSTILE_FILES = [
    "empty", "binary", "invalid-utf8", "dev-zero", "fifo", "directory", "nested-json",
    "nan-huge-json", "wrong-shape-json", "backtracking-log",
]  # fmt: skip
# NCCL messages the log reader matches, each followed by what makes a careless pattern backtrack
# (a run of spaces before the end, or before a closing bracket, an interface list that never
# closes; each line under the 8 KiB at which the reader cuts it): every line must still read in
# linear time
BACKTRACKING_PREFIXES = (
    "Call to ibv_reg_mr failed with error ", "NET/Plugin: Loaded net plugin ",
    "Socket creation failed : ", "NET/OFI Unable to register memory (type = 2) for device 4. RC: -22, Error: ",
    "Error while creating shared memory segment x (size 1), error: ",
    "unlink shared memory x failed, error: ", "socketFinalizeAccept ", "Cuda failure ",
    "Message truncated : received ", "collective mismatch error, local size ",
    "node01:1:2 [0] NCCL WARN Attribute ", "XML Import Channel : dev ", "ring 0 does not loop back ",
    "Duplicate GPU detected : rank ", "Failed to bind NVLink SHARP (NVLS) Multicast memory of size ",
    # the heads of the launcher, container and HCCL patterns
    "[1] TopoExchangeAgent: connect server[", "set ifname to [", "by HCCL_SOCKET_IFNAME ",
    "CMD information tag check fail. local[", "Failed to connect agent[", "is not a valid real path ",
    "Task run failed, base information is ", "btl_tcp_endpoint.c:572:", "errno=113 (EI ",
    "pyxis: enroot mkdir: cannot create directory '", "failed to create user namespace: ",
    "UCX  ERROR ibv_create_cq ", "Number of GPUs detected ", "device ip family[",
    "listen on ip[ specific port[", "ib_umad ", "load library failed: ",
    "(ofi_impl.h:1:x:Transport endpoint is not connected ",
    "Heartbeat Lost Cluster Exception Location[IP/ID]:[", "in the ranktable is inconsistent the IP address(",
    "logicSuperPodId[", "socket type[0], listen on ip[", "[ERROR] HCCL(1,",
    "Task run failed, base information HCCL(1,x):",
    "exceeded Quota '", "bw_in_allowance_exceeded: ",
    "nv_peer_mem: Unknown symbol ib_register_peer_memory_client", "Unable to register MR: Cannot allocate memory ",
    "Failed to get IB devices list: ", "libibverbs: Warning: Driver ", "No ROCm-capable device is detected ",
    "Transport retry count exceeded ", "Unable to find a match: kernel-headers-",
    "--releasever=8.2 install kernel-devel-", "Upgrade: nvidia-", "Cannot allocate memory ",
    "mlx5_ib: disagrees about version of symbol ", "a-a-a-a-a-a-a-a-a-a-a-a-a-a-a-a: Unknown symbol ",
    "CUDA error: ", "CUDA_ERROR_ILLEGAL_ADDRESS: ", "no device found matching ", "No interface found ",
    "fabric manager NVIDIA GPU driver interface version 5", "nvidia-container-cli: mount error: file creation failed: /",
    "unable to load config: unsupported config version: ", "x: undefined symbol: nccl", "[pip3] nvidia-nccl-cu12==2",
    "mlx5_0 port 1 ==> ", "Mismatched NCCL version detected : rank 0 version ",
    "The client socket has timed out after 1s while trying to connect to (", "CUDA out of memory. Tried to allocate 1",
    "torch.distributed.RuntimeError: ", "a.b.c.d.e.f.g.h.i.j.k.l.m.n.ValueError",
    "The port number of the rendezvous endpoint '", "Parameters which did not receive grad for rank 1: ",
    "deepspeed --master_addr=", "Using IP address of ", "node1:1:2 [0] NCCL INFO NET/Plugin: Could not find: ",
    "========= Invalid __global__ write of size 1", "=========     at nccl",
    "Not all ranks joining collective 1", "missing ranks: {1, ",
    "[ 1.0] RIP: 0010:", "[ 1.0] IP: [<ffffffffc0740f8f>] ", "duplicate mac found! both '",
    'violates PodSecurity "', "gres/gpu GRES autodetected core affinity 0-7 on node ", "URL https://registry-1.docker.io/v2/", "Could not find NET with id 1",
    "Out of memory: Killed process 1 (", "Memory cgroup out of memory: Killed process 1 (", "debug\tenvoy connection\t",
    "Some NCCL operations have failed or timed out", "NIXL_ERR_", "UCX_TLS=", "VRAM memory is detected as host",
    "ibgda_alloc_and_map_qp_uar failed", "GID is NULL, please check your GID index by specifying MC_GID_INDEX",
    "initializing ddp: GLOBAL_RANK: 1", "Initializing distributed: GLOBAL_RANK: 1, MEMBER: 1",
    "Number of GPUs detected in the PCI tree 1", "dma-buf attach failed: topology not supported",
    "amdgpu is not supported (supported types:[", "offloaded 1/", "layers.model=1 layers.offload=",
    'memory.required.kv="', "--ctx-size ", "allocating 1 MiB on device ", 'type=iGPU total="',
    "libdirs=", "n_ctx = ", "Your ", "The model's max seq len (", "# GPU blocks: ", "max_seq_len=",
    "block_size=", "Maximum concurrency for 1", "ValueError] ", "CUDA error 1 at ",
    "CUDA runtime error in ", "Current Version: 1, Serialized Engine Version: ", "check inlen(1) <= max_inlen(",
    "nvml vram init failure: ", "Cannot retrieve Static function, error: ",
    "ValueError: host not found: ", "cannot be retrieved (gai error: -2 addresses of (", "connect [",
    'memory.required.full="1 GiB" memory.required.partial="', 'free="1 GiB" free_swap="',
    'model request too large for system requested="1 GiB" ', "requires more system memory (1 GiB) than is available (",
    "ggml_aligned_malloc: insufficient memory (attempted to allocate ", "failed to mlock ",
    "Cuda error custom_all_reduce.cuh:1 '", "curl: (7) Failed to connect to ", "dial tcp [", "dial tcp: lookup ",
    "HTTPConnectionPool(host='", "Cannot connect to host [", "NewConnectionError [Errno 111] ",
    "Proxy request sent, awaiting response... ", 'HTTP Request: POST http://127.0.0.1:', "Listening on [",
    "server is listening on http://", "upstream timed out (110: ", "Starting RPC server on [", "x invoked oom-killer: ",
    "Failed to resolve '", "part 1 attempt 1 failed: ", "HfHubHTTPError: 5", "HTTPS_PROXY=", "ray start --address=",
    "Failed to connect to GCS at address ", "Could not establish connection to redis ",
)  # fmt: skip


def make_files(tmp: Path) -> dict[str, Path]:
    """The hostile files (named *.json so that `plan` takes them as config.json files), and three
    good fleet inputs (node1..3.json)."""
    rng = random.Random(1)
    files = {name: tmp / f"{name}.json" for name in HOSTILE_FILES}
    files["empty"].write_bytes(b"")
    files["binary"].write_bytes(bytes(rng.randrange(256) for _ in range(4096)))
    files["invalid-utf8"].write_bytes(b'{"a": "\xff\xfe\xc3\x28"}\n\x80\x81 NCCL INFO \xff\n')
    files["dev-zero"].symlink_to("/dev/zero")
    os.mkfifo(files["fifo"])
    files["directory"].mkdir()
    files["nested-json"].write_text("[" * 100_000 + "]" * 100_000 + "\n")
    files["backtracking-log"].write_text(
        "".join(
            f"{p}{pad}\n"
            for p in BACKTRACKING_PREFIXES
            for pad in (" " * 8000 + "x", " " * 8000 + "]", "\t " * 4000)
        )
        + "[0]a:b<0>" * 900
        + "X\n"
    )
    huge = "1" + "0" * 5000
    files["nan-huge-json"].write_text(
        '{"phases_s": {"connect": {"p50": NaN}}, "hidden_size": Infinity, "num_hidden_layers": '
        f'{huge}, "vocab_size": 1e999, "node": "n", "best_goodput_bits_per_s": NaN, '
        f'"prompt": "x", "output_tokens": {huge}}}\n'
    )
    files["wrong-shape-json"].write_text(
        '{"node": {"a": [1]}, "phases_s": [1, 2], "interfaces": "eth0", "rdma_ports": 7, '
        '"node_median_GBps": {"n1": "fast", "n2": null}, "hidden_size": "big", "gpus": [{}], '
        '"prompt": ["x"], "rtt": 3, "best_goodput_bits_per_s": {"x": 1}}\n'
    )
    for n, mbit in enumerate((941, 940, 939), 1):
        (tmp / f"node{n}.json").write_text(
            json.dumps({"host": "peer", "best_goodput_bits_per_s": mbit * 1e6})
        )
    return files


@dataclass(frozen=True)
class Case:
    name: str
    argv: list[str] = field(hash=False)


def _commands() -> Iterator[tuple[str, object]]:
    import click
    import typer

    from fabriclens.cli.app import build_app

    def walk(cmd: click.Command, path: list[str]) -> Iterator[tuple[str, click.Command]]:
        if isinstance(cmd, click.Group):
            for name, sub in sorted(cmd.commands.items()):
                yield from walk(sub, [*path, name])
        else:
            yield " ".join(path), cmd

    yield from walk(typer.main.get_command(build_app()), [])


def option_cases(tmp: Path) -> list[Case]:
    """Every option (and positional argument) of every command, with each hostile value."""
    import click

    cases = []
    for name, cmd in _commands():
        if name.split()[0] in SKIPPED_COMMANDS:
            continue
        if name not in BASE:
            raise AssertionError(f"no runnable form for `{name}`: add it to BASE or SKIPPED")
        base = [a.replace("{tmp}", str(tmp)) for a in BASE[name]]
        for param in cmd.params:  # type: ignore[attr-defined]
            if isinstance(param, click.Option) and (param.is_flag or param.name == "help"):
                continue
            key = param.opts[0] if isinstance(param, click.Option) else param.name
            if (name, key) in SKIPPED_OPTIONS:
                continue
            for value in HOSTILE_VALUES:
                if (name, key, value) in SKIPPED_VALUES:
                    continue
                if isinstance(param, click.Option):
                    argv = [*base, key, value]
                else:  # positional: replace the base's value (or add one)
                    argv = _with_argument(cmd, base, param, value)
                cases.append(Case(f"{name} {key}={value[:8]!r}", argv))
    return cases


def _with_argument(cmd: object, base: list[str], param: object, value: str) -> list[str]:
    """``base`` with the positional ``param`` set to ``value`` (BASE lists positionals first)."""
    import click

    depth = 2 if base[0] == "bench" else 1
    first_option = next(i for i, a in enumerate(base) if a.startswith("-"))
    positional = base[depth:first_option]
    if getattr(param, "nargs", 1) == -1:  # several files: just this one
        positional = [value]
    else:
        index = [p for p in cmd.params if isinstance(p, click.Argument)].index(param)  # type: ignore[attr-defined,arg-type]
        positional = positional + [""] * (index + 1 - len(positional))
        positional[index] = value
    return [*base[:depth], *positional, *base[first_option:]]


def file_cases(tmp: Path, files: dict[str, Path]) -> list[Case]:
    out = []
    for slot, form in FILE_SLOTS.items():
        for kind, path in files.items():
            if kind not in HOSTILE_FILES:
                continue
            argv = [a.replace("{file}", str(path)).replace("{tmp}", str(tmp)) for a in form]
            out.append(Case(f"{slot} <{kind}>", argv))
    return out


class Deadline(BaseException):
    """Raised in a case that runs past its deadline (a BaseException: the CLI catches Exception)."""


@dataclass
class Outcome:
    status: int | None
    out: str
    err: str
    time_s: float
    problem: str | None


def warm_imports() -> None:
    """Import the heavy optional libraries the commands load (torch for `bench collective` and
    `bench p2p`) before any deadline runs. A case's deadline is the command's: the first import of
    torch from a cold disk takes seconds, and a deadline that fires inside an import leaves the
    module half-initialised in this process, so that every later case fails on it."""
    for name in ("torch", "numpy"):
        with contextlib.suppress(ImportError):
            importlib.import_module(name)


def run_case(case: Case, deadline_s: float = DEADLINE_S) -> Outcome:
    """Run one case in-process with a deadline (SIGALRM) and an address-space cap."""
    from fabriclens.cli.app import run

    def expire(signum: int, frame: object) -> None:
        raise Deadline

    old = signal.signal(signal.SIGALRM, expire)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (_address_space() + MEMORY_HEADROOM_BYTES, hard))
    out, err = io.StringIO(), io.StringIO()
    t0 = time.perf_counter()
    status: int | None = None
    problem = None
    try:
        signal.setitimer(signal.ITIMER_REAL, deadline_s)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = run(case.argv)
    except Deadline:
        problem = f"still running after {deadline_s:g} s"
    except MemoryError:
        problem = "MemoryError"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    elapsed = time.perf_counter() - t0
    o = Outcome(status, out.getvalue(), err.getvalue(), elapsed, problem)
    o.problem = o.problem or judge(case, o)
    return o


def judge(case: Case, o: Outcome) -> str | None:
    """What is wrong with an outcome, or None."""
    if o.status in (0, 1):
        if "--json" in case.argv and "--help" not in case.argv:
            try:
                json.loads(o.out)
            except ValueError:
                return f"exit {o.status} but stdout is not JSON: {o.out[:200]!r}"
        return None
    if o.status == 2:
        lines = o.err.splitlines()
        if len(lines) != 1 or not lines[0].startswith("fabriclens: error: "):
            return f"exit 2 with {len(lines)} stderr lines: {o.err[:300]!r}"
        return None
    return f"exit {o.status}: {o.err.strip()[:300]}"


def _address_space() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[0]) * resource.getpagesize()


def all_cases(tmp: Path) -> list[Case]:
    files = make_files(tmp)
    return option_cases(tmp) + file_cases(tmp, files)


def report_cases() -> int:
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        os.chdir(tmp)  # --record text, --plot text: written here
        try:
            cases = all_cases(tmp)
            warm_imports()
            counts: dict[str, int] = {}
            bad = []
            slowest = (0.0, "")
            per_command: dict[str, float] = {}
            for case in cases:
                o = run_case(case)
                key = f"exit {o.status}" if o.status is not None else "no exit"
                counts[key] = counts.get(key, 0) + 1
                slowest = max(slowest, (o.time_s, case.name))
                head = case.name.split(" -")[0].split(" <")[0]
                per_command[head] = per_command.get(head, 0.0) + o.time_s
                if o.problem:
                    bad.append((case, o))
        finally:
            os.chdir(cwd)
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"hostile cases: {len(cases)}; " + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items()))
    )
    print(f"slowest case: {slowest[0]:.2f} s ({slowest[1]}); peak RSS of the run: {rss_mb:.0f} MB")
    if "-v" in sys.argv:
        for head, spent in sorted(per_command.items(), key=lambda kv: -kv[1]):
            print(f"  {head}: {spent:.1f} s")
    for case, o in bad:
        print(f"FAIL {case.name}: {o.problem[:300]}")
    print(f"failures: {len(bad)}")
    return 1 if bad else 0


def make_wide_log(path: Path, size_bytes: int, width: int = 8000) -> int:
    """Write ``size_bytes`` (about) of hostile NCCL log: every line a distinct ``width``-byte
    error from a distinct host (nothing repeats, every line is kept as evidence); returns bytes."""
    written, n = 0, 0
    with path.open("wb") as fh:
        while written < size_bytes:
            head = b"gpu%06d:1:2 [0] NCCL WARN NET/IB : Got completion from peer 10.0.%d.%d<5000> with status=12 " % (n % 999_999, n % 250, n % 200)  # fmt: skip
            line = head.ljust(width - 12, b"x") + b" %010d\n" % n
            fh.write(line)
            written, n = written + len(line), n + 1
    return written


def make_coll_log(path: Path, size_bytes: int, ranks: int = 16) -> int:
    """Write ``size_bytes`` (about) of what NCCL_DEBUG_SUBSYS=COLL prints, one line per
    collective call of every rank (opCount, buffers, counts: every line distinct); returns bytes.
    Layout as in NCCL's enqueue.cc INFO line (`%s: opCount %lx sendbuff %p recvbuff %p count %zu
    datatype %d op %d root %d comm %p [nranks=%d] stream %p`)."""
    written, n = 0, 0
    with path.open("w") as fh:
        while written < size_bytes:
            r = n % ranks
            line = (f"gpu-node{r // 8:02d}:{1000 + r}:{2000 + r} [{r % 8}] NCCL INFO AllReduce: opCount {n // ranks:x} "
                    f"sendbuff 0x7f{(n * 7919) % 0xFFFFFF:06x}000 recvbuff 0x7f{(n * 104729) % 0xFFFFFF:06x}000 "
                    f"count {1 << (10 + n % 12)} datatype 7 op 0 root 0 comm 0x55d{(r * 31337) % 0xFFFFF:05x}0 "
                    f"[nranks={ranks}] stream 0x55e{(r * 7) % 0xFFFFF:05x}0\n")  # fmt: skip
            fh.write(line)
            written, n = written + len(line), n + 1
    return written


def make_big_log(path: Path, size_bytes: int, unique: bool = False) -> int:
    """Write ``size_bytes`` (about) of NCCL log made of the real corpus's lines; returns bytes.
    ``unique``: each line gets its own timestamp prefix, so no line repeats (the parser reads
    each distinct line once; this is its cost per line without that help)."""
    lines = []
    for f in sorted(REAL_LOGS.glob("*.log")):
        lines += f.read_bytes().splitlines(keepends=True)
    block = b"".join(lines)
    written, n = 0, 0
    with path.open("wb") as fh:
        while written < size_bytes:
            if unique:
                stamped = []
                for line in lines:
                    seconds, micros = divmod(n, 1_000_000)
                    stamped.append(b"[2024-03-13 %02d:%02d:%02d.%06d] " % (
                        seconds // 3600 % 24, seconds // 60 % 60, seconds % 60, micros) + line)  # fmt: skip
                    n += 1
                block = b"".join(stamped)
            fh.write(block)
            written += len(block)
    return written


def _tree_rss_mb(pid: int) -> float:
    """Resident memory of a process and all its descendants, summed (shared pages counted in
    each, so an upper bound), from /proc; 0 when it is gone."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
    return total / 1024


def _run_measured(argv: list[str], env: dict[str, str], timeout_s: float) -> tuple[int, float, float, float, bytes]:  # fmt: skip
    """Run one child: (exit status, wall s, CPU s of it and its workers, peak resident MB of it
    and its workers together (sampled every 20 ms), stderr)."""
    with tempfile.TemporaryFile() as err, open(os.devnull, "wb") as null:
        t0 = time.perf_counter()
        child = subprocess.Popen(argv, env=env, stdout=null, stderr=err)
        peak_mb = 0.0
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - t0 > timeout_s:
                child.kill()
                pid, status, usage = os.wait4(child.pid, 0)
                break
            peak_mb = max(peak_mb, _tree_rss_mb(child.pid))
            time.sleep(0.02)
        wall_s = time.perf_counter() - t0
        child.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        # the child's own rusage covers the workers it waited for (CPU summed, RSS the largest)
        return (child.returncode, wall_s, usage.ru_utime + usage.ru_stime,
                max(peak_mb, usage.ru_maxrss / 1024), err.read())  # fmt: skip


def report_big(size_bytes: int = 1 << 30) -> int:
    """`fabriclens logs --json` on four generated logs (the corpus repeated, the same with no
    line repeated, a COLL trace of distinct lines, and hostile 8 kB error lines): wall time and
    peak resident memory."""
    status = 0
    kinds = (("lines repeated", lambda p: make_big_log(p, size_bytes)),
             ("every line distinct", lambda p: make_big_log(p, size_bytes, unique=True)),
             ("NCCL_DEBUG_SUBSYS=COLL, every line distinct", lambda p: make_coll_log(p, size_bytes)),
             ("hostile: 8 kB error lines, every host distinct", lambda p: make_wide_log(p, size_bytes)))  # fmt: skip
    for what, make in kinds:
        with tempfile.TemporaryDirectory() as d:
            log = Path(d) / "big.log"
            written = make(log)
            env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
            argv = [sys.executable, "-m", "fabriclens", "logs", str(log), "--json", "--max-input", "2GB"]  # fmt: skip
            code, wall_s, cpu_s, rss_mb, stderr = _run_measured(argv, env, 3600)
        print(f"logs on a {written / 1e9:.2f} GB NCCL log ({what}): exit {code}, {wall_s:.1f} s "
              f"wall ({cpu_s:.1f} s CPU), peak RSS {rss_mb:.0f} MB, workers included "
              "(targets: < 20 s, < 200 MB)")  # fmt: skip
        if code not in (0, 1):
            print(stderr.decode(errors="replace")[-500:])
        status |= 0 if code in (0, 1) and wall_s < 20 and rss_mb < 200 else 1
    print(f"a line never seen before costs {_unseen_line_us():.1f} µs to read (the corpus's "
          "lines, each read afresh); a repeated one only its bookkeeping")  # fmt: skip
    print(f"another program's distinct line (a training log's iteration line) costs "
          f"{_other_line_us():.1f} µs through the whole reader")  # fmt: skip
    return status


def _unseen_line_us(rounds: int = 20) -> float:
    """Mean cost of reading one corpus line with the parser's memory of lines bypassed."""
    sys.path.insert(0, str(ROOT / "src"))
    from fabriclens.parse import nccl_log

    lines = [ln for f in sorted(REAL_LOGS.glob("*.log")) for ln in f.read_text(errors="replace").splitlines()]  # fmt: skip
    read, stripped = nccl_log._read.__wrapped__, nccl_log._stripped
    t0 = time.perf_counter()
    for _ in range(rounds):
        for raw in lines:
            if line := stripped(raw):
                read(line, None)
    return (time.perf_counter() - t0) / (rounds * len(lines)) * 1e6


def _other_line_us(lines: int = 200_000) -> float:
    """Mean cost of a distinct line of another program (a training log's iteration line, no
    word any rule reads) through the whole reader."""
    sys.path.insert(0, str(ROOT / "src"))
    from fabriclens.parse.nccl_log import parse_nccl_log

    text = [f"[rank0]: iteration {i:7d}/ 500000 | consumed samples: {i * 512:10d} | elapsed time per "
            f"iteration (ms): {900 + i % 200}.{i % 10} | lm loss: {1.5 + (i % 997) / 1000:.6E} | "
            f"loss scale: 1.0 | grad norm: {(i % 89) / 50:.3f} |" for i in range(lines)]  # fmt: skip
    t0 = time.perf_counter()
    parse_nccl_log(text)
    return (time.perf_counter() - t0) / lines * 1e6


if __name__ == "__main__":
    only_cases, only_big = "--cases" in sys.argv, "--big" in sys.argv
    status = 0
    # the large logs first: a child forked from this process starts with its resident size as
    # ru_maxrss, and the cases, run in this process, grow it to ~300 MB
    if not only_cases:
        status |= report_big()
    if not only_big:
        status |= report_cases()
    sys.exit(status)
