"""Everything `doctor` reads from this host and the paths to its peers, as facts for the rules.

Each probe is bounded (timeouts), and one that cannot run adds a "not checked" finding with the
command to run by hand instead of failing the survey.
"""

from __future__ import annotations

import shutil
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fabriclens.diagnose.engine import Finding
from fabriclens.diagnose.host import (
    affinity_facts,
    gpu_facts,
    limits_facts,
    nic_facts,
    nvswitch_facts,
    peer_facts,
    rdma_facts,
    service_facts,
    topology_facts,
)
from fabriclens.parse.ethtool import (
    EthtoolInfo,
    congestion_counters,
    parse_ethtool,
    parse_ethtool_stats,
)
from fabriclens.parse.netdev import NetInterface, RdmaPort
from fabriclens.parse.nvidia_smi import GpuReading
from fabriclens.probes._run import run_command
from fabriclens.probes.gpu import GpuSource, open_gpus, read_topology, sample_gpus
from fabriclens.probes.sysfs_net import read_interfaces, read_listeners, read_rdma_ports
from fabriclens.progress import Progress, no_progress

PEER_TEST_S = 2.0  # seconds of TCP throughput test per peer
PEER_TEST_STREAMS = 4
PEER_PROBES_AT_ONCE = 8  # peers whose paths (pings, connects, path MTU, route) are probed at once


def not_checked(rule: str, what: str, why: str, *commands: str) -> Finding:
    """A probe that could not run: an info finding with the manual command."""
    return Finding(rule, "info", what, why, commands, "", ())


@dataclass
class Survey:
    """Facts per subject (the rule scopes), and what could not be checked."""

    nics: list[dict[str, Any]] = field(default_factory=list)
    ports: list[dict[str, Any]] = field(default_factory=list)
    gpus: list[dict[str, Any]] = field(default_factory=list)
    topology: list[dict[str, Any]] = field(default_factory=list)
    affinity: list[dict[str, Any]] = field(default_factory=list)
    services: list[dict[str, Any]] = field(default_factory=list)
    peers: list[dict[str, Any]] = field(default_factory=list)
    limits: list[dict[str, Any]] = field(default_factory=list)  # this process's, live hosts only
    nvswitch: list[dict[str, Any]] = field(default_factory=list)  # live hosts with NVSwitches
    not_checked: list[Finding] = field(default_factory=list)
    gpu_source: str = "none"


@dataclass(frozen=True)
class PeerOptions:
    """What to test toward each peer."""

    hosts: tuple[str, ...] = ()
    tcp_port: int = 22
    pings: int = 20
    test_port: int | None = None  # throughput server's port (None: iperf3 5201, built-in 5299)
    throughput: bool = True
    expect: tuple[float | None, str] = (None, "")  # expected goodput and how it was derived
    weights_bytes: float | None = None


def _congestion(name: str) -> dict[str, int] | None:
    res = run_command(["ethtool", "-S", name], timeout_s=5)
    stats = parse_ethtool_stats(res.stdout) if res.ok else {}
    return congestion_counters(stats) if stats else None


def _wait(seconds: float, gpus: GpuSource) -> tuple[float, list[list[GpuReading]]]:
    """Wait ``seconds`` between two counter readings, sampling GPU utilisation meanwhile."""
    started = time.monotonic()
    series: list[list[GpuReading]] = []
    if gpus.read:
        series = sample_gpus(gpus.read, seconds)
    else:
        time.sleep(seconds)
    return time.monotonic() - started, series


def _gpu_rows(gpus: GpuSource, series: list[list[GpuReading]], out: Survey) -> None:
    if gpus.read is None:
        out.not_checked.append(not_checked("not-checked-gpu", f"GPUs not checked: {gpus.problem}",
                                           "no NVIDIA driver answered (a machine without NVIDIA GPUs needs nothing here)",
                                           *gpus.manual))  # fmt: skip
        return
    try:
        now = series[-1] if series else gpus.read()
    except Exception as exc:
        out.not_checked.append(
            not_checked("not-checked-gpu", f"GPUs not checked: {exc}", "", *gpus.manual)
        )
        return
    for g in now:
        window = [r for readings in series for r in readings if r.index == g.index]
        out.gpus.append(gpu_facts(g, window if len(window) > 1 else None))


def survey_host(
    sys_root: Path,
    exclude_rdma: tuple[str, ...] = (),
    sample: float = 0.0,
    peers: PeerOptions | None = None,
    gpus: GpuSource | None = None,
    progress: Progress = no_progress,
) -> Survey:
    """Read this host (and test the paths to ``peers``); ``sample`` > 0 reads the counters twice
    that many seconds apart, sampling GPU utilisation in between. ``progress`` hears of each step
    of the peer tests, the slow part (``peer_steps`` of them)."""
    live = sys_root.resolve() == Path("/")
    out = Survey()
    gpus = gpus or open_gpus(live=live)
    out.gpu_source = gpus.name
    have_ethtool = live and shutil.which("ethtool") is not None
    earlier: dict[str, NetInterface] = {}
    earlier_ports: dict[tuple[str, int], RdmaPort] = {}
    earlier_cong: dict[str, dict[str, int] | None] = {}
    series: list[list[GpuReading]] = []
    if sample > 0:
        earlier = {n.name: n for n in read_interfaces(sys_root)}
        earlier_ports = {(p.device, p.port): p for p in read_rdma_ports(sys_root, exclude_rdma)}
        if have_ethtool:
            earlier_cong = {n.name: _congestion(n.name) for n in earlier.values() if n.physical}
        sample, series = _wait(sample, gpus)
    nics = read_interfaces(sys_root)
    for nic in nics:
        info: EthtoolInfo | None = None
        cong = None
        if have_ethtool and nic.physical:
            res = run_command(["ethtool", nic.name], timeout_s=5)
            info = parse_ethtool(res.stdout) if res.ok else None
            cong = _congestion(nic.name)
        out.nics.append(
            nic_facts(nic, info, earlier.get(nic.name), sample, cong, earlier_cong.get(nic.name))
        )
    if live and not have_ethtool:
        out.not_checked.append(not_checked("not-checked-ethtool", "supported NIC speeds and pause/discard counters not checked: ethtool is not installed",
                                           "", "apt-get install ethtool; ethtool <iface>; ethtool -S <iface>"))  # fmt: skip
    ports = read_rdma_ports(sys_root, exclude_rdma)
    out.ports = [rdma_facts(p, earlier_ports.get((p.device, p.port)), sample) for p in ports]
    if not ports:
        out.not_checked.append(not_checked("no-rdma", "no RDMA devices: multi-node NCCL traffic will use TCP sockets",
                                           "no /sys/class/infiniband entries", "ls /sys/class/infiniband", "ibstatus"))  # fmt: skip
    _gpu_rows(gpus, series, out)
    if gpus.read is not None:
        topo = read_topology(live)
        if topo is not None and topo.gpus:
            out.topology = [topology_facts(topo)]
            out.affinity = affinity_facts(topo)
    out.services = service_facts(read_listeners(sys_root))
    if live:
        memlock, shm = read_limits()
        out.limits = [limits_facts(memlock, shm, len(ports), len(out.gpus))]
        _fabric_manager(Path("/dev"), out)
    if peers and peers.hosts:
        _peer_rows(peers, nics, out, progress)
    return out


def _fabric_manager(dev: Path, out: Survey) -> None:
    """On a node with NVSwitches (/dev/nvidia-nvswitch*), the state of the Fabric Manager
    service, which NVLink between the GPUs and NVLS need."""
    switches = [p for p in dev.glob("nvidia-nvswitch*") if p.name != "nvidia-nvswitchctl"]
    if not switches:
        return
    res = run_command(["systemctl", "is-active", "nvidia-fabricmanager"], timeout_s=5)
    state = res.stdout.strip().splitlines()[0] if res.stdout.strip() else ""
    if res.returncode in (-1, -2) or not state:
        out.not_checked.append(not_checked(
            "not-checked-fabric-manager", f"{len(switches)} NVSwitch device(s): Fabric Manager not checked",
            res.stderr.strip() or "systemctl gave no state (a container?)",
            "systemctl status nvidia-fabricmanager", "nvidia-smi -q | grep -i -A2 fabric"))  # fmt: skip
        return
    out.nvswitch = [nvswitch_facts(len(switches), state)]


def read_limits() -> tuple[int | None, int | None]:
    """This process's soft locked-memory limit in bytes (None: unlimited) and the size of
    /dev/shm in bytes (None when it cannot be read)."""
    import os
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    memlock = None if soft == resource.RLIM_INFINITY else soft
    try:
        st = os.statvfs("/dev/shm")
        shm: int | None = st.f_blocks * st.f_frsize
    except OSError:
        shm = None
    return memlock, shm


def peer_steps(opts: PeerOptions) -> int:
    """Steps of the peer tests: ping, TCP connect, path MTU and route per peer, and throughput."""
    from fabriclens.probes.peer import PEER_STEPS

    return len(opts.hosts) * (len(PEER_STEPS) + opts.throughput)


def _expected_from_nic(device: str | None, nics: list[NetInterface]) -> tuple[float | None, str]:
    """What a physical NIC's negotiated speed should give in TCP goodput (virtual devices report
    made-up speeds, so they give no expectation)."""
    from fabriclens.plan.transfer import wire_goodput

    nic = next((n for n in nics if n.name == device), None)
    if nic is None or not nic.physical or not nic.speed_mbps:
        return None, ""
    goodput, note = wire_goodput(nic.speed_mbps * 1e6)
    return goodput, f"{device} negotiated: {note}"


def _peer_rows(
    opts: PeerOptions, nics: list[NetInterface], out: Survey, progress: Progress = no_progress
) -> None:
    if shutil.which("ping") is None:
        out.not_checked.append(not_checked("not-checked-peer", "the path to the peer not checked: ping is not installed",
                                           "", "apt-get install iputils-ping"))  # fmt: skip
        return
    from fabriclens.bench.tcp import measure_link
    from fabriclens.errors import InputError
    from fabriclens.probes.peer import PEER_STEPS, probe_peer

    mtus = {n.name: n.mtu for n in nics if n.mtu}
    total = peer_steps(opts)
    lock = threading.Lock()
    started = 0  # steps begun (or skipped) so far, over every peer

    def begin(what: str, steps: int = 1) -> None:
        nonlocal started
        with lock:
            if what:
                progress(started, total, what)
            started += steps

    def probe(host: str) -> dict[str, Any]:
        told: list[str] = []

        def step(_i: int, name: str) -> None:
            told.append(name)
            begin(f"{host} {name}")

        result = probe_peer(host, opts.tcp_port, mtus, opts.pings, step)
        begin("", len(PEER_STEPS) - len(told))  # the steps an unreachable peer skips
        return result

    # the paths to the peers are probed at once (pings, connects and routes wait on the network,
    # not on this host); throughput one peer at a time, as each test fills this host's link
    with ThreadPoolExecutor(min(PEER_PROBES_AT_ONCE, len(opts.hosts))) as pool:
        paths = list(pool.map(probe, opts.hosts))
    for host, path in zip(opts.hosts, paths, strict=True):
        goodput = None
        expected, note = (
            opts.expect if opts.expect[0] else _expected_from_nic(path.get("device"), nics)
        )
        if path["reachable"] and opts.throughput:
            begin(f"{host} TCP throughput, {PEER_TEST_S:g} s")
            try:
                link = measure_link(
                    host, opts.test_port, [PEER_TEST_STREAMS], PEER_TEST_S, "auto", rtt=False
                )
                goodput = max(r["goodput_bits_per_s"] for r in link["runs"])
                path["throughput_test"] = link["runs"][0]["command"]
            except InputError:
                out.not_checked.append(not_checked(
                    "not-checked-throughput", f"throughput to {host} not checked: no test server answered there",
                    "the peer runs neither `fabriclens doctor --serve` nor iperf3 -s",
                    f"on {host}: fabriclens doctor --serve (or iperf3 -s); then again here"))  # fmt: skip
        elif opts.throughput:
            begin("")
        path["expected_note"] = note
        out.peers.append(peer_facts(path, goodput, expected, opts.weights_bytes))
    progress(total, total, "")
