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
import re
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fabriclens.errors import InputError
from fabriclens.lab import _state
from fabriclens.lab._ip import LabError, ip, netns_list, netns_pids, tc
from fabriclens.lab._proc import (
    ProcessId,
    cmdline,
    identify,
    in_netns,
    matches,
    netns_inode,
    terminate,
)
from fabriclens.lab._state import STATE_ENV, StateError, is_ours, lstat, state_dir, unlink_ours
from fabriclens.lab.spec import (
    MAX_HOSTS,
    NAME_RE,
    LinkSpec,
    check_host,
    check_name,
    lab_command,
    with_settings,
)
from fabriclens.probes._run import CommandResult, run_command
from fabriclens.progress import Progress, no_progress

PREFIX = "fl-"
STATE_DIR = Path(os.environ.get(STATE_ENV) or _state.DEFAULT_STATE_DIR)
STATE_MARK = "fabriclens lab"  # "written_by" of every state file this tool writes
STATE_VERSION = 2
FORWARDER = "fabriclens.lab.forwarder"
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
                # a veth pair: the lab's own kind of link (the dummy module may be absent)
                ip("link", "add", "d0", "type", "veth", "peer", "name", "d1", netns=scratch, check=False)  # fmt: skip
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
    forwarder: ProcessId | None = None  # the userspace stage, as recorded when it started
    note: str = ""  # set when a change of the link failed and could not be undone

    @property
    def forwarder_pid(self) -> int | None:
        """PID of the host's userspace stage, if it has one."""
        return self.forwarder.pid if self.forwarder else None

    @property
    def switch_port(self) -> str:
        """The host's port on the lab switch."""
        return f"p{self.index}" if self.path == "veth" else f"t{self.index}b"

    def to_json(self) -> dict[str, Any]:
        """Status JSON."""
        return {
            "name": self.name,
            "netns": self.netns,
            "address": self.address,
            "link": self.link.to_json(),
            "path": self.path,
            "forwarder_pid": self.forwarder_pid,
        }


class CorruptState(InputError):
    """A lab's state file cannot be read as one this tool wrote (exit status 2)."""


class NoSuchLab(InputError):
    """No state file for that lab name (exit status 2)."""


@dataclass
class Lab:
    """A running lab. Create with :func:`Lab.up`; always end with :meth:`down`."""

    name: str
    subnet: str
    impairment: str
    hosts: list[Host] = field(default_factory=list)
    netns_inodes: dict[str, int] = field(default_factory=dict)  # as created, to verify later
    _children: list[subprocess.Popen[bytes]] = field(default_factory=list, repr=False)
    _made: list[str] = field(default_factory=list, repr=False)  # namespaces this object created

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

    def _params_name(self, host: Host) -> str:
        return f"{self.name}-{host.name}.params.json"

    def _log_name(self, host: Host) -> str:
        return f"{self.name}-{host.name}.log"

    def _params_file(self, host: Host) -> Path:
        return STATE_DIR / self._params_name(host)

    def _netns_names(self) -> list[str]:
        return [h.netns for h in self.hosts] + [self.switch_netns]

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
        """Bring a lab up; on any failure (or Ctrl-C) everything this call created is removed
        (and nothing else: the lab's lock keeps a second `up` of the same name waiting until
        the first is done, and that one then finds the lab up). ``progress`` hears of each host
        as it is created (done of ``hosts``)."""
        require_root()
        check_name(name)
        if not 1 <= hosts <= MAX_HOSTS:
            raise InputError(
                f"--hosts {hosts} is outside 1..{MAX_HOSTS}", f"give 1 to {MAX_HOSTS} hosts"
            )
        base = link or LinkSpec()
        specs = [base] * hosts
        for host_name, settings in (overrides or {}).items():
            i = int(check_host(host_name, hosts)[1:]) - 1
            specs[i] = with_settings(specs[i], settings)
        with locked(name):
            with state_dir(STATE_DIR) as dfd:
                st = lstat(dfd, f"{name}.json")
            if st is not None and not is_ours(st):
                raise StateError(
                    f"{cls.state_file(name)} is not a state file this tool wrote (a link, or "
                    "someone else's): refusing to touch it",
                    "remove it if you did not put it there",
                )
            if st is not None or any(n.startswith(f"{PREFIX}{name}-") for n in netns_list()):
                raise InputError(
                    f"a lab named {name!r} is already up",
                    f"use it, or remove it: {lab_command(name, 'down')}",
                )
            caps = capabilities or detect()
            if any(s.impaired for s in specs) and caps.impairment == "unavailable":
                raise InputError(
                    "this kernel has no netem and /dev/net/tun is missing",
                    "delay, jitter and loss cannot be emulated here",
                )
            lab = cls(name=name, subnet="", impairment=caps.impairment)
            try:
                with _state.dir_lock(STATE_DIR) as dfd:  # two labs never pick the same subnet
                    subnet = _free_subnet(dfd)
                    lab.subnet = str(subnet)
                    addresses = list(subnet.hosts())
                    for i, spec in enumerate(specs, start=1):
                        lab.hosts.append(Host(f"h{i}", i, f"{PREFIX}{name}-h{i}",
                                              str(addresses[i - 1]), spec))  # fmt: skip
                    lab._save()
                lab._add_netns(lab.switch_netns)
                ip("link", "set", "lo", "up", netns=lab.switch_netns)
                ip("link", "add", "br0", "type", "bridge", netns=lab.switch_netns)
                ip("link", "set", "br0", "up", netns=lab.switch_netns)
                for done, host in enumerate(lab.hosts):
                    progress(done, len(lab.hosts), f"{host.name} {host.address}")
                    lab._add_netns(host.netns)
                    ip("link", "set", "lo", "up", netns=host.netns)
                    lab._plumb(host)
                    lab._save()
                progress(len(lab.hosts), len(lab.hosts), "")
            except BaseException:
                lab._rollback()
                raise
        return lab

    def _add_netns(self, netns: str) -> None:
        ip("netns", "add", netns)
        self._made.append(netns)
        inode = netns_inode(netns)
        if inode is not None:
            self.netns_inodes[netns] = inode

    def _rollback(self) -> None:
        """Undo a failed `up`: only the namespaces and processes this object made."""
        for child in self._children:
            terminate(child.pid, lambda c=child: c.poll() is None)
        for host in self.hosts:
            self._stop_forwarder(host)
        for netns in reversed(self._made):
            _remove_netns(netns, self.netns_inodes.get(netns))
        self._remove_files()

    def down(self) -> list[str]:
        """Remove everything this lab created: processes, namespaces, state. Returns what was
        left alone: a namespace of the lab's name that is not the one it created."""
        with locked(self.name):
            for child in self._children:
                terminate(child.pid, lambda c=child: c.poll() is None)
            for host in self.hosts:
                self._stop_forwarder(host)
            left: list[str] = []
            for netns in self._netns_names():
                left += _remove_netns(netns, self.netns_inodes.get(netns))
            self._remove_files()
        return left

    def _remove_files(self) -> None:
        try:
            with state_dir(STATE_DIR, create=False) as dfd:
                for host in self.hosts:
                    unlink_ours(dfd, self._params_name(host))
                    unlink_ours(dfd, self._log_name(host))
                unlink_ours(dfd, f"{self.name}.json")
        except FileNotFoundError:
            pass

    def _forwarder_alive(self, host: Host) -> bool:
        rec = host.forwarder
        return rec is not None and matches(rec, FORWARDER, f"--lab {self.name}-{host.name}")

    def _stop_forwarder(self, host: Host) -> None:
        """End the host's userspace stage, if the recorded PID is still that process."""
        if host.forwarder and self._forwarder_alive(host):
            terminate(host.forwarder.pid, lambda h=host: self._forwarder_alive(h))
        host.forwarder = None

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
            self._write(self._params_name(host), spec.to_json())
            host.forwarder = self._start_forwarder(host)
            tap_a = f"t{host.index}a"
            ip("link", "set", tap_a, "netns", host.netns, netns=sw)
            ip("link", "set", tap_a, "name", "eth0", netns=host.netns)
        else:
            host.path = "veth"
            host.forwarder = None
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

    def _start_forwarder(self, host: Host) -> ProcessId:
        argv = [
            "ip", "netns", "exec", self.switch_netns, sys.executable, "-m", FORWARDER,
            "--tap-a", f"t{host.index}a", "--tap-b", f"t{host.index}b",
            "--params", str(self._params_file(host)), "--lab", f"{self.name}-{host.name}",
        ]  # fmt: skip
        log_name = STATE_DIR / self._log_name(host)
        with state_dir(STATE_DIR) as dfd:
            log = _state.open_append(dfd, STATE_DIR, self._log_name(host))
        try:
            proc = subprocess.Popen(
                argv, stdout=subprocess.PIPE, stderr=log, start_new_session=True
            )
        finally:
            os.close(log)
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
        rec = identify(proc.pid) if b"ready" in buf else None
        if rec is None:
            terminate(proc.pid, lambda: proc.poll() is None)
            raise LabError(
                f"the userspace impairment stage for {host.name} did not start (see {log_name})"
            )
        return rec

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
        """Change a live link: bandwidth, delay, jitter, loss, mtu, state=up|down. If the change
        fails half-way, the link is rebuilt with its old settings; if even that fails, the state
        says so and `lab status` reports the host as drifted."""
        with locked(self.name):
            host = self.host(host_name)
            old = host.link
            new = with_settings(old, settings)
            try:
                self._change(host, old, new)
            except BaseException as exc:
                try:
                    self._rebuild(host, old)
                    host.note = ""
                except Exception as again:  # recorded; the first error is the one raised
                    host.note = (
                        f"a change of its link failed half-way ({exc}) and could not be undone "
                        f"({again}): its real settings are unknown"
                    )
                self._save()
                raise
            host.note = ""
            self._save()
        return host

    def _change(self, host: Host, old: LinkSpec, new: LinkSpec) -> None:
        host.link = new
        if new.impaired and host.path == "veth" and self.impairment == "userspace":
            # no netem: move this link onto the userspace stage, keeping the host's MAC
            mac = self._mac(host)
            ip("link", "del", host.switch_port, netns=self.switch_netns)
            self._plumb(host, mac)
        else:
            if host.path == "tap":
                self._write(self._params_name(host), new.to_json())
                if host.forwarder and self._forwarder_alive(host):
                    os.kill(host.forwarder.pid, signal.SIGHUP)
            if new.mtu != old.mtu:  # only the host's side: a mismatch, as in real life
                ip("link", "set", "eth0", "mtu", str(new.mtu), netns=host.netns)
            if new.up != old.up:
                ip("link", "set", "eth0", "up" if new.up else "down", netns=host.netns)
            self._shape(host)

    def _rebuild(self, host: Host, spec: LinkSpec) -> None:
        """Tear a host's link down and build it again with ``spec`` (undoing a failed change)."""
        mac = self._mac(host)
        self._stop_forwarder(host)
        for port in (f"p{host.index}", f"t{host.index}b"):
            ip("link", "del", port, netns=self.switch_netns, check=False)
        ip("link", "del", "eth0", netns=host.netns, check=False)
        host.link = spec
        self._plumb(host, mac)

    @staticmethod
    def _mac(host: Host) -> str | None:
        shown = ip("-j", "link", "show", "eth0", netns=host.netns, check=False)
        with contextlib.suppress(ValueError, LookupError, TypeError):
            return str(json.loads(shown.stdout)[0]["address"]) if shown.ok else None
        return None

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
    def check(self) -> list[str]:
        """What differs between the state and the host: missing namespaces or links, a
        userspace stage that is not running, a link up/down or shaped unlike the state says.
        One line per difference; empty when the lab is as its state says."""
        from fabriclens.lab._reconcile import drift

        return drift(self)

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

    def _state_json(self) -> dict[str, Any]:
        doc = self.to_json()
        doc["written_by"] = STATE_MARK
        doc["version"] = STATE_VERSION
        doc["netns_inodes"] = dict(self.netns_inodes)
        for h, hdoc in zip(self.hosts, doc["hosts"], strict=True):
            hdoc["forwarder"] = h.forwarder.to_json() if h.forwarder else None
            hdoc["note"] = h.note
        return doc

    def _write(self, name: str, doc: dict[str, Any]) -> None:
        with state_dir(STATE_DIR) as dfd:
            _state.write_file(dfd, STATE_DIR, name, json.dumps(doc, indent=2).encode())

    def _save(self) -> None:
        self._write(f"{self.name}.json", self._state_json())

    @classmethod
    def load(cls, name: str) -> Lab:
        """A lab that is up, from its state file. NoSuchLab when there is none, CorruptState
        when the file is not one this tool wrote, StateError for a link or a stranger's file."""
        check_name(name)
        path = cls.state_file(name)
        try:
            with state_dir(STATE_DIR, create=False) as dfd:
                raw = _state.read_file(dfd, STATE_DIR, f"{name}.json")
        except FileNotFoundError:
            raw = None
        if raw is None:
            up = ", ".join(list_labs()) or "none"
            raise NoSuchLab(
                f"no lab named {name!r} is up (labs up: {up})",
                f"start one: {lab_command(name, 'up', '--hosts', '2')}",
            )
        try:
            return cls._from_state(name, json.loads(raw))
        except (ValueError, LookupError, TypeError, AttributeError) as exc:
            reason = str(exc) or type(exc).__name__
            raise CorruptState(
                f"the state of lab {name!r} ({path}) is corrupt: {reason}",
                f"remove what belongs to the lab by its names: {lab_command(name, 'down')}",
            ) from None

    @classmethod
    def _from_state(cls, name: str, data: Any) -> Lab:
        if not isinstance(data, dict) or data.get("written_by") != STATE_MARK:
            raise ValueError("not a state file written by this version of fabriclens lab")
        if data.get("version") != STATE_VERSION or data["name"] != name:
            raise ValueError(f"version {data.get('version')!r} or name {data['name']!r} differ")
        if data["impairment"] not in ("netem", "userspace", "unavailable"):
            raise ValueError(f"unknown impairment {data['impairment']!r}")
        ipaddress.IPv4Network(data["subnet"])
        lab = cls(name=name, subnet=data["subnet"], impairment=data["impairment"])
        for i, h in enumerate(data["hosts"], start=1):
            # the namespace names are the lab's own, whatever the file says: a state file must
            # never make `down` remove something another lab (or anyone else) owns
            if h["name"] != f"h{i}" or h["netns"] != f"{PREFIX}{name}-h{i}":
                raise ValueError(f"host {i} is named {h['name']!r} in {h['netns']!r}")
            if h["path"] not in ("veth", "tap"):
                raise ValueError(f"unknown path {h['path']!r}")
            fwd = ProcessId.from_json(h["forwarder"]) if h.get("forwarder") else None
            lab.hosts.append(Host(h["name"], i, h["netns"], str(ipaddress.IPv4Address(h["address"])),
                                  LinkSpec.from_json(h["link"]), h["path"], fwd, str(h.get("note", ""))))  # fmt: skip
        if not 1 <= len(lab.hosts) <= MAX_HOSTS:
            raise ValueError(f"{len(lab.hosts)} hosts")
        names = set(lab._netns_names())
        lab.netns_inodes = {k: int(v) for k, v in dict(data["netns_inodes"]).items() if k in names}
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


def _free_subnet(dfd: int) -> ipaddress.IPv4Network:
    """A /24 of 198.18.0.0/15 that no other lab and nothing on the host uses (called with the
    state directory's lock held, so two labs coming up together never pick the same one)."""
    used: set[str] = set()
    for entry in os.listdir(dfd):
        if entry.endswith(".json") and not entry.endswith(".params.json"):
            with contextlib.suppress(ValueError, LookupError, TypeError, OSError, StateError):
                used.add(json.loads(_state.read_file(dfd, STATE_DIR, entry) or b"")["subnet"])
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


def _remove_netns(netns: str, inode: int | None) -> list[str]:
    """Kill what runs inside one of a lab's namespaces, then delete it. ``inode``: the one the
    lab recorded when it created it; a namespace of that name with another inode is not the
    lab's and is left alone (returned as a note)."""
    if not netns.startswith(PREFIX):
        return []
    now = netns_inode(netns)
    if now is None:
        if netns in netns_list():  # listed but not statable: let ip decide
            ip("netns", "del", netns, check=False)
        return []
    if inode is not None and now != inode:
        return [f"namespace {netns}: not the one the lab created (left alone)"]
    for pid in netns_pids(netns):
        terminate(pid, lambda p=pid: in_netns(p, now))
    ip("netns", "del", netns, check=False)
    return []


def locked(name: str, timeout_s: float | None = None) -> contextlib.AbstractContextManager[None]:
    """Hold lab ``name``'s lock (LabBusy after ``timeout_s``, default 60 s): what every command
    that reads or changes a lab does, so two of them never work on it at once."""
    check_name(name)
    return _state.lab_lock(STATE_DIR, name, timeout_s)


def list_labs() -> list[str]:
    """Names of labs with a state file."""
    try:
        with state_dir(STATE_DIR, create=False) as dfd:
            entries = os.listdir(dfd)
    except FileNotFoundError:
        return []
    names = (e[: -len(".json")] for e in entries if e.endswith(".json"))
    return sorted(n for n in names if NAME_RE.fullmatch(n))


@dataclass
class Removal:
    """What a `down` removed, and what it found but left alone (with the reason)."""

    removed: list[str] = field(default_factory=list)
    left_alone: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, list[str]]:
        """`lab down --json`."""
        return {"removed": self.removed, "left_alone": self.left_alone, "notes": self.notes}


def _own_files_re(name: str) -> re.Pattern[str]:
    return re.compile(rf"{name}(\.json|\.lock|-h[0-9]{{1,3}}\.(params\.json|log))")


def _remove_by_name(name: str) -> list[str]:
    """A lab whose state is corrupt or gone: remove what its names say is its own (namespaces
    fl-NAME-sw and fl-NAME-hI with whatever runs inside, its regular files in the state
    directory). Called with the lab's lock held."""
    removed: list[str] = []
    own_ns = re.compile(rf"{PREFIX}{name}-(sw|h[0-9]{{1,3}})")
    for netns in netns_list():
        if own_ns.fullmatch(netns):
            _remove_netns(netns, None)
            removed.append(netns)
    own_files = _own_files_re(name)
    try:
        with state_dir(STATE_DIR, create=False) as dfd:
            for entry in sorted(os.listdir(dfd)):
                keep = not own_files.fullmatch(entry) or entry.endswith(".lock")
                if not keep and unlink_ours(dfd, entry):
                    removed.append(str(STATE_DIR / entry))
    except FileNotFoundError:
        pass
    return removed


def down_name(name: str) -> Removal:
    """`lab down --name NAME`: the lab its state describes; with a corrupt state (or none, but
    namespaces of that name), what its names say belongs to it. NoSuchLab when there is nothing."""
    out = Removal()
    with locked(name):
        try:
            lab = Lab.load(name)
        except (CorruptState, NoSuchLab) as exc:
            out.removed = _remove_by_name(name)
            if not out.removed:
                raise
            if isinstance(exc, CorruptState):
                out.notes.append(f"{exc.problem}: removed what its names say belongs to it")
            return out
        out.left_alone = lab.down()
        out.removed.append(name)
    return out


def down_all() -> Removal:
    """Remove every lab this tool brought up: those with a state file it wrote, and only the
    namespaces and processes those files record (verified before anything is removed). What
    else it finds (other files, links or directories in the state directory, namespaces named
    fl-* that no state records, processes that look like a forwarder) is left alone and
    reported."""
    out = Removal()
    try:
        with _state.dir_lock(STATE_DIR) as dfd:
            entries = {e: lstat(dfd, e) for e in os.listdir(dfd)}
    except FileNotFoundError:
        entries = {}
    labs = sorted(
        e[: -len(".json")]
        for e, st in entries.items()
        if e.endswith(".json") and NAME_RE.fullmatch(e[: -len(".json")]) and is_ours(st)
    )
    for name in labs:
        try:
            with locked(name):
                lab = Lab.load(name)
                out.left_alone += lab.down()
                out.removed.append(name)
        except NoSuchLab:  # went away meanwhile
            pass
        except (CorruptState, StateError) as exc:
            out.left_alone.append(f"{exc.problem} (not removed; {exc.fix})")
    try:
        with state_dir(STATE_DIR, create=False) as dfd:
            remaining = sorted(os.listdir(dfd))
            for entry in remaining:
                st = lstat(dfd, entry)
                ours = any(_own_files_re(n).fullmatch(entry) for n in labs) and is_ours(st)
                if st is None or (entry.endswith(".lock") and is_ours(st)) or ours:
                    continue
                kind = (
                    "a symbolic link"
                    if stat.S_ISLNK(st.st_mode)
                    else "a directory"
                    if stat.S_ISDIR(st.st_mode)
                    else "a file"
                )
                out.left_alone.append(f"{STATE_DIR / entry}: {kind} no lab state accounts for")
    except FileNotFoundError:
        pass
    scratch = re.compile(rf"{PREFIX}probe[0-9]+")  # detect()'s, there for a moment
    for netns in netns_list():
        if netns.startswith(PREFIX) and not scratch.fullmatch(netns):
            out.left_alone.append(f"namespace {netns}: no lab state records it")
    for pid in _forwarder_like_pids():
        out.left_alone.append(f"process {pid} ({FORWARDER}): no lab state records it")
    return out


def _forwarder_like_pids() -> list[int]:
    return [
        int(d.name)
        for d in Path("/proc").iterdir()
        if d.name.isdigit() and FORWARDER in cmdline(int(d.name))
    ]


def leftovers() -> list[str]:
    """Anything of ours still present: namespaces, forwarder processes, state files (what the
    lab tests check after each test)."""
    found = [n for n in netns_list() if n.startswith(PREFIX)]
    found += [f"process {pid}" for pid in _forwarder_like_pids()]
    if STATE_DIR.is_dir():
        found += [str(p) for p in STATE_DIR.iterdir()]
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
