"""An emulated cluster on one Linux machine: hosts in network namespaces on one bridge.

Layout of lab NAME with N hosts:
  namespace fl-NAME-sw   the switch: bridge br0 and one port per host (pI, or tIb for the
                         userspace stage)
  namespace fl-NAME-hI   host I: eth0 with 198.18.K.I/24 (RFC 2544 benchmarking range)
Only objects with the `fl-` prefix are created; the host's own interfaces, routes and firewall
are never touched, and nothing is attached to the root namespace, so traffic stays inside.

Bandwidth: tbf on both ends of a link. Delay, jitter, loss: netem where the kernel has it,
otherwise the userspace stage (`fabriclens.lab.forwarder`) between two TAP devices.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fabriclens.errors import InputError
from fabriclens.lab._ip import LabError, ip, netns_list, netns_pids, tc
from fabriclens.lab.spec import (
    MAX_HOSTS,
    LinkSpec,
    check_host,
    check_name,
    lab_command,
    with_settings,
)
from fabriclens.probes._run import CommandResult, run_command
from fabriclens.progress import Progress, no_progress

PREFIX = "fl-"
STATE_DIR = Path(os.environ.get("FABRICLENS_LAB_STATE", "/run/fabriclens/labs"))
LAB_NET = ipaddress.IPv4Network("198.18.0.0/15")  # RFC 2544: reserved for benchmarking
FORWARDER_READY_S = 10.0


@dataclass(frozen=True)
class Capabilities:
    """What this host offers the lab."""

    root: bool
    iproute2: bool
    tun: bool
    netem: bool

    @property
    def impairment(self) -> str:
        """How delay, jitter and loss are applied."""
        return "netem" if self.netem else ("userspace" if self.tun else "unavailable")


def require_root() -> None:
    """The lab needs root (namespaces, links, qdiscs): one clear line otherwise."""
    if os.geteuid() != 0:
        raise InputError(
            "fabriclens lab needs root to create network namespaces",
            "run it as root, e.g. sudo fabriclens lab up --hosts 2",
        )
    if shutil.which("ip") is None or shutil.which("tc") is None:
        raise InputError(
            "iproute2 (ip, tc) is not installed", "install it: apt-get install iproute2"
        )


def detect() -> Capabilities:
    """Probe the kernel: is there netem? (Tried in a scratch namespace, then removed.)"""
    root = os.geteuid() == 0
    have_ip = shutil.which("ip") is not None and shutil.which("tc") is not None
    tun = Path("/dev/net/tun").exists()
    netem = False
    if root and have_ip and not os.environ.get("FABRICLENS_LAB_NO_NETEM"):
        scratch = f"{PREFIX}probe{os.getpid()}"
        if ip("netns", "add", scratch, check=False).ok:
            try:
                ip("link", "add", "d0", "type", "dummy", netns=scratch, check=False)
                netem = tc(
                    "qdisc",
                    "add",
                    "dev",
                    "d0",
                    "root",
                    "netem",
                    "delay",
                    "1ms",
                    netns=scratch,
                    check=False,
                ).ok
            finally:
                ip("netns", "del", scratch, check=False)
    return Capabilities(root, have_ip, tun, netem)


@dataclass
class Host:
    """One emulated host."""

    name: str
    index: int
    netns: str
    address: str
    link: LinkSpec
    path: str = "veth"  # veth (kernel) or tap (userspace stage)
    forwarder_pid: int | None = None

    @property
    def switch_port(self) -> str:
        """The host's port on the lab switch."""
        return f"p{self.index}" if self.path == "veth" else f"t{self.index}b"

    def to_json(self) -> dict[str, Any]:
        """State and status JSON."""
        return {
            "name": self.name,
            "netns": self.netns,
            "address": self.address,
            "link": self.link.to_json(),
            "path": self.path,
            "forwarder_pid": self.forwarder_pid,
        }


@dataclass
class Lab:
    """A running lab. Create with :func:`Lab.up`; always end with :meth:`down`."""

    name: str
    subnet: str
    impairment: str
    hosts: list[Host] = field(default_factory=list)
    _children: list[subprocess.Popen[bytes]] = field(default_factory=list, repr=False)

    # ---- naming -------------------------------------------------------------------------
    @property
    def switch_netns(self) -> str:
        """The switch's namespace."""
        return f"{PREFIX}{self.name}-sw"

    def host(self, name: str) -> Host:
        """Look a host up by name (h1..hN)."""
        check_host(name, len(self.hosts))
        return self.hosts[int(name[1:]) - 1]

    @staticmethod
    def state_file(name: str) -> Path:
        """Where a lab's state lives."""
        return STATE_DIR / f"{name}.json"

    def _params_file(self, host: Host) -> Path:
        return STATE_DIR / f"{self.name}-{host.name}.params.json"

    # ---- lifecycle ----------------------------------------------------------------------
    @classmethod
    def up(
        cls,
        name: str = "lab",
        hosts: int = 2,
        link: LinkSpec | None = None,
        overrides: dict[str, dict[str, str]] | None = None,
        capabilities: Capabilities | None = None,
        progress: Progress = no_progress,
    ) -> Lab:
        """Bring a lab up; on any failure (or Ctrl-C) everything created is removed.
        ``progress`` hears of each host as it is created (done of ``hosts``)."""
        require_root()
        check_name(name)
        if not 1 <= hosts <= MAX_HOSTS:
            raise InputError(
                f"--hosts {hosts} is outside 1..{MAX_HOSTS}", f"give 1 to {MAX_HOSTS} hosts"
            )
        if cls.state_file(name).exists() or any(
            n.startswith(f"{PREFIX}{name}-") for n in netns_list()
        ):
            raise InputError(
                f"a lab named {name!r} is already up",
                f"use it, or remove it: fabriclens lab down --name {name}",
            )
        caps = capabilities or detect()
        base = link or LinkSpec()
        specs = [base] * hosts
        for host_name, settings in (overrides or {}).items():
            i = int(check_host(host_name, hosts)[1:]) - 1
            specs[i] = with_settings(specs[i], settings)
        if any(s.impaired for s in specs) and caps.impairment == "unavailable":
            raise InputError(
                "this kernel has no netem and /dev/net/tun is missing",
                "delay, jitter and loss cannot be emulated here",
            )
        subnet = _free_subnet()
        lab = cls(name=name, subnet=str(subnet), impairment=caps.impairment)
        addresses = list(subnet.hosts())
        for i, spec in enumerate(specs, start=1):
            lab.hosts.append(Host(f"h{i}", i, f"{PREFIX}{name}-h{i}", str(addresses[i - 1]), spec))
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        try:
            lab._save()
            ip("netns", "add", lab.switch_netns)
            ip("link", "set", "lo", "up", netns=lab.switch_netns)
            ip("link", "add", "br0", "type", "bridge", netns=lab.switch_netns)
            ip("link", "set", "br0", "up", netns=lab.switch_netns)
            for done, host in enumerate(lab.hosts):
                progress(done, len(lab.hosts), f"{host.name} {host.address}")
                ip("netns", "add", host.netns)
                ip("link", "set", "lo", "up", netns=host.netns)
                lab._plumb(host)
                lab._save()
            progress(len(lab.hosts), len(lab.hosts), "")
        except BaseException:
            lab.down()
            raise
        return lab

    def down(self) -> None:
        """Remove everything this lab created: processes, namespaces, state."""
        for child in self._children:
            _terminate(child.pid)
        for host in self.hosts:
            if host.forwarder_pid:
                _terminate(host.forwarder_pid, must_contain="fabriclens.lab.forwarder")
        for netns in [h.netns for h in self.hosts] + [self.switch_netns]:
            _remove_netns(netns)
        for host in self.hosts:
            self._params_file(host).unlink(missing_ok=True)
            (STATE_DIR / f"{self.name}-{host.name}.log").unlink(missing_ok=True)
        self.state_file(self.name).unlink(missing_ok=True)

    def __enter__(self) -> Lab:
        return self

    def __exit__(self, *exc: object) -> None:
        self.down()

    # ---- links --------------------------------------------------------------------------
    def _plumb(self, host: Host, mac: str | None = None) -> None:
        spec = host.link
        sw = self.switch_netns
        use_tap = spec.impaired and self.impairment == "userspace"
        if use_tap:
            host.path = "tap"
            self._params_file(host).write_text(json.dumps(spec.to_json()))
            host.forwarder_pid = self._start_forwarder(host)
            tap_a = f"t{host.index}a"
            ip("link", "set", tap_a, "netns", host.netns, netns=sw)
            ip("link", "set", tap_a, "name", "eth0", netns=host.netns)
        else:
            host.path = "veth"
            host.forwarder_pid = None
            ip(
                "link",
                "add",
                host.switch_port,
                "type",
                "veth",
                "peer",
                "name",
                "eth0",
                "netns",
                host.netns,
                netns=sw,
            )
        prefix = ipaddress.ip_network(self.subnet).prefixlen
        ip("link", "set", host.switch_port, "mtu", str(spec.mtu), "master", "br0", "up", netns=sw)
        ip("link", "set", "eth0", "mtu", str(spec.mtu), netns=host.netns)
        if mac:  # keep the host's MAC so its peers' ARP caches stay right
            ip("link", "set", "eth0", "address", mac, netns=host.netns)
        ip("addr", "add", f"{host.address}/{prefix}", "dev", "eth0", netns=host.netns)
        ip("link", "set", "eth0", "up" if spec.up else "down", netns=host.netns)
        self._shape(host)

    def _start_forwarder(self, host: Host) -> int:
        argv = [
            "ip", "netns", "exec", self.switch_netns, sys.executable, "-m", "fabriclens.lab.forwarder",
            "--tap-a", f"t{host.index}a", "--tap-b", f"t{host.index}b",
            "--params", str(self._params_file(host)), "--lab", f"{self.name}-{host.name}",
        ]  # fmt: skip
        log = (STATE_DIR / f"{self.name}-{host.name}.log").open("ab")
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, start_new_session=True)
        log.close()
        assert proc.stdout is not None
        deadline = time.monotonic() + FORWARDER_READY_S
        os.set_blocking(proc.stdout.fileno(), False)
        buf = b""
        while time.monotonic() < deadline and b"ready" not in buf:
            with contextlib.suppress(BlockingIOError, TypeError):
                buf += proc.stdout.read() or b""
            if proc.poll() is not None and b"ready" not in buf:
                break
            time.sleep(0.01)
        proc.stdout.close()
        if b"ready" not in buf:
            _terminate(proc.pid)
            raise LabError(
                f"the userspace impairment stage for {host.name} did not start (see {log.name})"
            )
        return proc.pid

    def _shape(self, host: Host) -> None:
        """(Re)apply bandwidth (tbf) and, with netem, delay/jitter/loss, on both link ends."""
        spec = host.link
        for netns, dev in ((host.netns, "eth0"), (self.switch_netns, host.switch_port)):
            tc("qdisc", "del", "dev", dev, "root", netns=netns, check=False)
            parent = ["root"]
            if spec.impaired and host.path == "veth":  # netem in the kernel
                args = ["delay", f"{spec.delay_s * 1e6:.0f}us"]
                if spec.jitter_s:
                    args.append(f"{spec.jitter_s * 1e6:.0f}us")
                if spec.loss:
                    args += ["loss", f"{spec.loss * 100:.6g}%"]
                tc("qdisc", "add", "dev", dev, "root", "handle", "1:", "netem", *args, netns=netns)
                parent = ["parent", "1:1"]
            if spec.bandwidth_bits_per_s:
                tc(
                    "qdisc",
                    "add",
                    "dev",
                    dev,
                    *parent,
                    "handle",
                    "10:",
                    "tbf",
                    *_tbf_args(spec, gso=host.path == "veth"),
                    netns=netns,
                )

    def impair(self, host_name: str, settings: dict[str, str]) -> Host:
        """Change a live link: bandwidth, delay, jitter, loss, mtu, state=up|down."""
        host = self.host(host_name)
        old = host.link
        new = with_settings(old, settings)
        host.link = new
        if new.impaired and host.path == "veth" and self.impairment == "userspace":
            # no netem: move this link onto the userspace stage, keeping the host's MAC
            shown = ip("-j", "link", "show", "eth0", netns=host.netns, check=False)
            mac = json.loads(shown.stdout)[0]["address"] if shown.ok else None
            ip("link", "del", host.switch_port, netns=self.switch_netns)
            self._plumb(host, mac)
        else:
            if host.path == "tap":
                self._params_file(host).write_text(json.dumps(new.to_json()))
                if host.forwarder_pid:
                    _signal(host.forwarder_pid, signal.SIGHUP, "fabriclens.lab.forwarder")
            if new.mtu != old.mtu:  # only the host's side: a mismatch, as in real life
                ip("link", "set", "eth0", "mtu", str(new.mtu), netns=host.netns)
            if new.up != old.up:
                ip("link", "set", "eth0", "up" if new.up else "down", netns=host.netns)
            self._shape(host)
        self._save()
        return host

    # ---- running things inside ----------------------------------------------------------
    def exec_argv(self, host_name: str, argv: Sequence[str]) -> list[str]:
        """The argument list that runs ``argv`` inside a host."""
        return ["ip", "netns", "exec", self.host(host_name).netns, *argv]

    def run(self, host_name: str, argv: Sequence[str], timeout_s: float = 60.0) -> CommandResult:
        """Run a command inside a host and wait (with a timeout)."""
        return run_command(self.exec_argv(host_name, argv), timeout_s=timeout_s)

    def wait_listening(self, host_name: str, port: int, timeout_s: float = 15.0) -> None:
        """Wait until a TCP server listens on ``port`` inside a host; OSError after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if f":{port} " in self.run(host_name, ["ss", "-ltnH"], timeout_s=5).stdout:
                return
            time.sleep(0.1)
        raise OSError(f"nothing listens on port {port} in {host_name} after {timeout_s:g} s")

    def popen(self, host_name: str, argv: Sequence[str], **kwargs: Any) -> subprocess.Popen[bytes]:
        """Start a long-running command (a server) inside a host; ended by :meth:`down`."""
        proc: subprocess.Popen[bytes] = subprocess.Popen(self.exec_argv(host_name, argv), **kwargs)
        self._children.append(proc)
        return proc

    # ---- state --------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """Status JSON: hosts (name, address, link settings) and the mechanism in use."""
        return {
            "name": self.name,
            "subnet": self.subnet,
            "switch_netns": self.switch_netns,
            "impairment": self.impairment,
            "bandwidth": "tbf",
            "hosts": [h.to_json() for h in self.hosts],
        }

    def _save(self) -> None:
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        tmp = self.state_file(self.name).with_suffix(".tmp")
        tmp.write_text(json.dumps(self.to_json(), indent=2))
        tmp.replace(self.state_file(self.name))

    @classmethod
    def load(cls, name: str) -> Lab:
        """A lab that is up, from its state file."""
        check_name(name)
        path = cls.state_file(name)
        if not path.exists():
            up = ", ".join(list_labs()) or "none"
            raise InputError(
                f"no lab named {name!r} is up (labs up: {up})",
                f"start one: {lab_command(name, 'up', '--hosts', '2')}",
            )
        data = json.loads(path.read_text())
        lab = cls(name=data["name"], subnet=data["subnet"], impairment=data["impairment"])
        for i, h in enumerate(data["hosts"], start=1):
            lab.hosts.append(Host(h["name"], i, h["netns"], h["address"], LinkSpec.from_json(h["link"]),
                                  h["path"], h["forwarder_pid"]))  # fmt: skip
        return lab


# A real Ethernet wire also carries preamble + start delimiter (8), FCS (4) and the inter-frame
# gap (12) for every frame: counting them makes "1gbit" give the 941 Mbit/s of TCP goodput a
# real 1GbE NIC gives, instead of 956.
WIRE_OVERHEAD_BYTES = 24
# tbf only charges the overhead per packet it sees; a burst smaller than a GSO super-packet
# makes it split those into wire-sized frames first, so every frame pays its overhead.
MAX_BURST_BYTES = 30000


def _tbf_args(spec: LinkSpec, gso: bool) -> list[str]:
    """tbf for one link end; ``gso``: the device hands tbf super-packets (veth does, TAP not)."""
    rate_bytes = spec.bandwidth_bits_per_s / 8
    frame = spec.mtu + 14 + WIRE_OVERHEAD_BYTES
    burst = max(4 * frame, int(rate_bytes * 0.002))  # 2 ms of traffic
    if gso:
        burst = max(4 * frame, min(burst, MAX_BURST_BYTES))
    limit = max(64 * frame, int(rate_bytes * 0.05))  # queue: 50 ms or 64 frames
    return [
        "rate", f"{spec.bandwidth_bits_per_s:.0f}bit", "burst", str(burst), "limit", str(limit),
        "overhead", str(WIRE_OVERHEAD_BYTES),
    ]  # fmt: skip


def _free_subnet() -> ipaddress.IPv4Network:
    """A /24 of 198.18.0.0/15 that no other lab and nothing on the host uses."""
    used: set[str] = set()
    if STATE_DIR.exists():
        for path in STATE_DIR.glob("*.json"):
            with contextlib.suppress(ValueError, KeyError, OSError):
                used.add(json.loads(path.read_text())["subnet"])
    host_nets: list[ipaddress.IPv4Network] = []
    result = ip("-j", "-4", "addr", "show", check=False)
    with contextlib.suppress(ValueError):
        for iface in json.loads(result.stdout or "[]"):
            for a in iface.get("addr_info", []):
                host_nets.append(
                    ipaddress.IPv4Network(f"{a['local']}/{a['prefixlen']}", strict=False)
                )
    routes = ip("-j", "-4", "route", "show", "table", "all", check=False)
    with contextlib.suppress(ValueError):
        for r in json.loads(routes.stdout or "[]"):
            dst = r.get("dst", "")
            if dst and dst != "default":
                with contextlib.suppress(ValueError):
                    host_nets.append(ipaddress.IPv4Network(dst, strict=False))
    for net in LAB_NET.subnets(new_prefix=24):
        if str(net) in used or any(net.overlaps(h) for h in host_nets):
            continue
        return net
    raise LabError("no free /24 left in 198.18.0.0/15 for a lab")


def _cmdline(pid: int) -> str:
    try:
        return (
            Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        )
    except OSError:
        return ""


def _signal(pid: int, sig: int, must_contain: str = "") -> bool:
    """Signal a process we started, after checking it is still ours."""
    if must_contain and must_contain not in _cmdline(pid):
        return False
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return False
    return True


def _terminate(pid: int, must_contain: str = "") -> None:
    """SIGTERM, wait up to 2 s, then SIGKILL: only the given process, by its id."""
    if not _signal(pid, signal.SIGTERM, must_contain):
        return
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done:
                return
        if not Path(f"/proc/{pid}").exists():
            return
        time.sleep(0.02)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


def _remove_netns(netns: str) -> None:
    """Kill what runs inside one of our namespaces, then delete it."""
    if not netns.startswith(PREFIX) or netns not in netns_list():
        return
    for pid in netns_pids(netns):
        _terminate(pid)
    ip("netns", "del", netns, check=False)


def list_labs() -> list[str]:
    """Names of labs with a state file."""
    if not STATE_DIR.exists():
        return []
    return sorted(p.stem for p in STATE_DIR.glob("*.json") if not p.name.endswith(".params.json"))


def down_all() -> list[str]:
    """Remove every lab, and leftovers of crashed runs (anything with the fl- prefix)."""
    removed: list[str] = []
    for name in list_labs():
        with contextlib.suppress(InputError, ValueError, KeyError, OSError):
            Lab.load(name).down()
            removed.append(name)
        Lab.state_file(name).unlink(missing_ok=True)
    for pid_dir in Path("/proc").iterdir():
        if pid_dir.name.isdigit() and "fabriclens.lab.forwarder" in _cmdline(int(pid_dir.name)):
            _terminate(int(pid_dir.name), must_contain="fabriclens.lab.forwarder")
    for netns in netns_list():
        if netns.startswith(PREFIX):
            _remove_netns(netns)
            removed.append(netns)
    if STATE_DIR.exists():
        for leftover in STATE_DIR.glob("*"):
            leftover.unlink(missing_ok=True)
    return removed


def leftovers() -> list[str]:
    """Anything of ours still present: namespaces, forwarder processes, state files."""
    found = [n for n in netns_list() if n.startswith(PREFIX)]
    for pid_dir in Path("/proc").iterdir():
        if pid_dir.name.isdigit() and "fabriclens.lab.forwarder" in _cmdline(int(pid_dir.name)):
            found.append(f"process {pid_dir.name}")
    if STATE_DIR.exists():
        found += [str(p) for p in STATE_DIR.glob("*")]
    return found


@contextlib.contextmanager
def lab_session(
    name: str = "lab",
    hosts: int = 2,
    link: LinkSpec | None = None,
    overrides: dict[str, dict[str, str]] | None = None,
) -> Iterator[Lab]:
    """A lab for the length of a ``with`` block; always torn down."""
    lab = Lab.up(name=name, hosts=hosts, link=link, overrides=overrides)
    try:
        yield lab
    finally:
        lab.down()
