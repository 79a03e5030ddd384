"""`fabriclens collect`: run the read-only commands of the troubleshooting checklist on this node
and copy the sysfs files the live doctor reads, into a bundle `doctor --from` can diagnose
anywhere. Every command goes through the one runner (argument lists, timeouts); a missing tool
is recorded as unavailable, never an error. The collector never prints (progress is observed)."""

from __future__ import annotations

import contextlib
import glob
import json
import os
import re
import socket
import tarfile
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fabriclens.parse.nvidia_smi import QUERY_COMMAND
from fabriclens.parse.redact import Redactor
from fabriclens.probes._run import CommandResult, run_command
from fabriclens.progress import Progress, no_progress

ENV_PREFIXES = (
    "NCCL_",
    "UCX_",
    "FI_",
    "CUDA_",
    "TORCH_NCCL",
    "TORCH_DISTRIBUTED",
    "GLOO_",
    "MASTER_",
)
ENV_NAMES = (
    "CUDA_VISIBLE_DEVICES",
    "LD_LIBRARY_PATH",
    "WORLD_SIZE",
    "RANK",
    "LOCAL_RANK",
    "OMP_NUM_THREADS",
)
SECRET = re.compile(r"KEY|TOKEN|SECRET|PASS|CRED|AUTH|COOKIE|PRIVATE", re.I)
SYSCTLS = ("net.core.rmem_max", "net.core.wmem_max", "net.core.rmem_default", "net.core.wmem_default",
           "net.core.netdev_max_backlog", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.ipv4.tcp_mem",
           "net.ipv4.tcp_congestion_control", "net.ipv4.tcp_mtu_probing", "net.ipv4.tcp_timestamps",
           "net.ipv4.tcp_sack")  # fmt: skip
DMESG_KEEP = re.compile(r"NVRM|Xid|mlx5|mlx4|bnxt|\bice\b|i40e|irdma|[Ll]ink (?:is )?(?:up|down|UP|DOWN)|"
                        r"Link (?:ACTIVE|INIT|DOWN)|PCIe Bus Error|AER", re.I)  # fmt: skip
DMESG_LINES = 500
NET_FILES = ("speed", "duplex", "mtu", "operstate")
IB_FILES = ("state", "phys_state", "rate", "link_layer")


@dataclass(frozen=True)
class Step:
    """One command of the checklist: a file name in the bundle and the argv to run."""

    file: str
    argv: tuple[str, ...]
    timeout_s: float = 8.0
    subject: str = ""  # the interface or device it is about


def _net_names(root: Path) -> list[str]:
    try:
        return sorted(os.listdir(root / "sys/class/net"))
    except OSError:
        return []


def _physical(root: Path, name: str) -> bool:
    return (root / "sys/class/net" / name / "device").exists()


def checklist(root: Path = Path("/")) -> list[Step]:
    """The commands to run here: the fixed ones, then three ethtool calls per physical NIC."""
    steps = [
        Step("nvidia-smi-q.txt", ("nvidia-smi", "-q")),
        Step("nvidia-smi-topo.txt", ("nvidia-smi", "topo", "-m")),
        Step("nvidia-smi-nvlink.txt", ("nvidia-smi", "nvlink", "-s")),
        Step("nvidia-smi-query.csv", tuple(QUERY_COMMAND)),
        Step("ibstatus.txt", ("ibstatus",)),
        Step("ibstat.txt", ("ibstat",)),
        Step("ibv_devinfo.txt", ("ibv_devinfo", "-v")),
        Step("rdma-link.txt", ("rdma", "link", "show")),
        Step("ip-j-link.json", ("ip", "-j", "-s", "link")),
        Step("ip-j-addr.json", ("ip", "-j", "addr")),
        Step("ip-j-route.json", ("ip", "-j", "route")),
        Step("ip-s-link.txt", ("ip", "-s", "link")),
        Step("lspci-vvv.txt", ("lspci", "-vvv", "-D")),
        Step("sysctl.txt", ("sysctl", *SYSCTLS)),
        Step("ofed_info.txt", ("ofed_info", "-s")),
        Step("uname.txt", ("uname", "-a")),
    ]
    for name in _net_names(root):
        if not _physical(root, name):
            continue
        steps += [Step(f"ethtool/{name}.txt", ("ethtool", name), 5, name),
                  Step(f"ethtool/{name}-S.txt", ("ethtool", "-S", name), 5, name),
                  Step(f"ethtool/{name}-i.txt", ("ethtool", "-i", name), 5, name),
                  Step(f"mlnx_qos/{name}.txt", ("mlnx_qos", "-i", name), 5, name)]  # fmt: skip
    return steps


def _status(res: CommandResult) -> str:
    if res.returncode == -1:
        return "denied" if "permission" in res.stderr else "unavailable"
    if res.timed_out:
        return "timeout"
    if res.ok:
        return "ok"
    if re.search(r"permission|not permitted|denied", res.stderr, re.I):
        return "denied"
    return "error"


def _env() -> str:
    lines = []
    for k in sorted(os.environ):
        if k.startswith(ENV_PREFIXES) or k in ENV_NAMES:
            v = "<redacted>" if SECRET.search(k) else os.environ[k]
            lines.append(f"{k}={v}")
    return "\n".join(lines) + ("\n" if lines else "")


def _copy(src: Path, dst: Path) -> bool:
    try:
        text = src.read_text(errors="replace")
    except OSError:  # absent, or the kernel refuses (speed of a down link)
        return False
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text(text)
    return True


def copy_sysfs(root: Path, out: Path, exclude_rdma: tuple[str, ...] = ()) -> int:
    """Copy what `doctor` reads from sysfs and /proc under ``root`` to ``out`` (same layout);
    a NIC's device link becomes a directory holding its driver link and NUMA node. Returns
    the number of files copied."""
    n = 0
    net = root / "sys/class/net"
    for name in _net_names(root):
        d, o = net / name, out / "sys/class/net" / name
        for f in NET_FILES:
            n += _copy(d / f, o / f)
        try:
            for s in os.listdir(d / "statistics"):
                n += _copy(d / "statistics" / s, o / "statistics" / s)
        except OSError:
            pass
        if (d / "device").exists():
            (o / "device").mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(OSError):
                os.symlink(os.readlink(d / "device" / "driver"), o / "device" / "driver")
            n += _copy(d / "device" / "numa_node", o / "device" / "numa_node")
    ib = root / "sys/class/infiniband"
    try:
        devices = sorted(os.listdir(ib))
    except OSError:
        devices = []
    for dev in devices:
        if dev in exclude_rdma:
            continue
        try:
            ports = os.listdir(ib / dev / "ports")
        except OSError:
            continue
        for port in ports:
            p, o = ib / dev / "ports" / port, out / "sys/class/infiniband" / dev / "ports" / port
            o.mkdir(parents=True, exist_ok=True)
            for f in IB_FILES:
                n += _copy(p / f, o / f)
            for kind in ("counters", "hw_counters"):
                try:
                    names = os.listdir(p / kind)
                except OSError:
                    continue
                for c in names:
                    n += _copy(p / kind / c, o / kind / c)
    for f in ("tcp", "tcp6"):
        n += _copy(root / "proc/net" / f, out / "proc/net" / f)
    return n


def _nccl_versions() -> str:
    found = []
    for pattern in ("/usr/lib/x86_64-linux-gnu/libnccl.so.*", "/usr/lib64/libnccl.so.*", "/usr/local/cuda*/lib64/libnccl.so.*",
                    "/usr/local/lib/python3*/dist-packages/nvidia/nccl/lib/libnccl.so.*",
                    "/usr/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.*"):  # fmt: skip
        found += glob.glob(pattern)
    return "".join(f"{p}\n" for p in sorted(set(found)))


def collect(out_dir: Path, redact: bool = False, root: Path = Path("/"),
            progress: Progress = no_progress, runner: Callable[..., CommandResult] = run_command) -> dict[str, Any]:  # fmt: skip
    """Run the checklist into ``out_dir`` (commands in parallel, each with its timeout) and write
    manifest.json; returns the manifest. ``redact`` replaces host names, addresses, MACs and
    serial numbers in every file with stable tokens."""
    started = time.monotonic()
    steps = checklist(root)
    records: list[dict[str, Any]] = []
    done = [0]
    total = len(steps) + 3

    def run(step: Step) -> tuple[Step, CommandResult, float]:
        t0 = time.monotonic()
        res = runner(list(step.argv), timeout_s=step.timeout_s)
        done[0] += 1
        progress(done[0], total, step.file)
        return step, res, time.monotonic() - t0

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(run, steps))
        dmesg = pool.submit(runner, ["dmesg", "-T"], timeout_s=8)
        files = copy_sysfs(root, out_dir)
        dres = dmesg.result()
    for step, res, dt in results:
        status = _status(res)
        path = out_dir / step.file
        if status == "ok" or res.stdout:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(res.stdout)
        records.append({"command": res.command, "status": status, "returncode": res.returncode,
                        "duration_s": round(dt, 3), "file": step.file if path.exists() else None,
                        "subject": step.subject, "error": res.stderr.strip()[:200] if status != "ok" else ""})  # fmt: skip
    kept = [ln for ln in dres.stdout.splitlines() if DMESG_KEEP.search(ln)][-DMESG_LINES:]
    status = _status(dres)
    if status == "ok":
        (out_dir / "dmesg.txt").write_text("\n".join(kept) + "\n")
    records.append({"command": "dmesg -T (lines with Xid, NVRM, mlx5, bnxt, ice, link, AER; last 500)",
                    "status": status, "returncode": dres.returncode, "duration_s": None,
                    "file": "dmesg.txt" if status == "ok" else None, "subject": "",
                    "error": dres.stderr.strip()[:200] if status != "ok" else ""})  # fmt: skip
    (out_dir / "env.txt").write_text(_env())
    (out_dir / "versions.txt").write_text(_versions(root) + _nccl_versions())
    records += [{"command": "environment: NCCL_*, UCX_*, FI_*, CUDA_* ... (secret-looking names redacted)",
                 "status": "ok", "returncode": 0, "duration_s": None, "file": "env.txt", "subject": "", "error": ""},
                {"command": "versions: kernel, NVIDIA driver, libnccl found", "status": "ok", "returncode": 0,
                 "duration_s": None, "file": "versions.txt", "subject": "", "error": ""}]  # fmt: skip
    host = socket.gethostname()
    manifest: dict[str, Any] = {
        "fabriclens_collect": 1,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "host": host,
        "redacted": redact,
        "sysfs_files": files,
        "commands": records,
    }
    if redact:
        _redact_tree(out_dir, Redactor((host, socket.getfqdn())))
        manifest["host"] = "host-1"
    manifest["elapsed_s"] = round(time.monotonic() - started, 2)
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    progress(total, total, "")
    return manifest


def _versions(root: Path) -> str:
    out = []
    for f in ("proc/version", "proc/driver/nvidia/version"):
        with contextlib.suppress(OSError):
            out.append((root / f).read_text(errors="replace").strip())
    return "".join(f"{x}\n" for x in out)


def _redact_tree(out_dir: Path, r: Redactor) -> None:
    for path in sorted(out_dir.rglob("*")):
        if path.is_file() and not path.is_symlink():
            path.write_text(r.redact(path.read_text(errors="replace")))


def write_bundle(out_dir: Path, target: Path) -> None:
    """Pack ``out_dir`` into the tar.gz ``target`` (one top folder named after it)."""
    with tarfile.open(target, "w:gz") as tar:
        tar.add(out_dir, arcname=target.name.removesuffix(".tar.gz"))


def collect_bundle(
    target: Path, redact: bool = False, progress: Progress = no_progress
) -> dict[str, Any]:
    """Collect into a temporary folder and pack it as ``target``; the manifest is returned."""
    with tempfile.TemporaryDirectory(prefix="fabriclens-collect-") as tmp:
        manifest = collect(Path(tmp), redact, progress=progress)
        write_bundle(Path(tmp), target)
    return manifest
