"""Raw readers of /sys/class/net and /sys/class/infiniband (injectable root). Never raise:
a missing directory or an unreadable file is simply absent from the result."""

from __future__ import annotations

import os
from pathlib import Path

from fabriclens.parse.netdev import NetInterface, RdmaPort
from fabriclens.parse.proc_net import Listener, parse_listeners

NET_STATS = (
    "rx_errors",
    "tx_errors",
    "rx_dropped",
    "tx_dropped",
    "rx_bytes",
    "tx_bytes",
    "rx_crc_errors",
)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace").strip()
    except OSError:  # absent, or the kernel refuses (speed of a down link raises EINVAL)
        return None


def _int(path: Path) -> int | None:
    text = _read(path)
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def read_interfaces(root: Path = Path("/")) -> list[NetInterface]:
    """Every interface under ``root``/sys/class/net (`ip -s link` shows the same)."""
    base = root / "sys" / "class" / "net"
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return []
    out = []
    for name in names:
        d = base / name
        speed = _int(d / "speed")
        driver_link = d / "device" / "driver"
        try:
            driver = os.path.basename(os.readlink(driver_link))
        except OSError:
            driver = None
        stats = {s: v for s in NET_STATS if (v := _int(d / "statistics" / s)) is not None}
        out.append(NetInterface(
            name=name, operstate=_read(d / "operstate"), speed_mbps=speed if speed and speed > 0 else None,
            duplex=_read(d / "duplex"), mtu=_int(d / "mtu"), driver=driver,
            physical=(d / "device").exists(), stats=stats,
        ))  # fmt: skip
    return out


def read_rdma_ports(root: Path = Path("/"), exclude: tuple[str, ...] = ()) -> list[RdmaPort]:
    """Ports under ``root``/sys/class/infiniband; ``exclude`` skips devices whose counters must not
    be read (some restricted functions flood the kernel log with ACCESS_REG errors)."""
    base = root / "sys" / "class" / "infiniband"
    try:
        devices = sorted(os.listdir(base))
    except OSError:
        return []
    out = []
    for dev in devices:
        if dev in exclude:
            continue
        try:
            ports = sorted(
                os.listdir(base / dev / "ports"), key=lambda p: int(p) if p.isdigit() else 0
            )
        except OSError:
            continue
        for port in ports:
            p = base / dev / "ports" / port
            counters = {}
            for kind in ("counters", "hw_counters"):
                values: dict[str, int] = {}
                try:
                    for name in sorted(os.listdir(p / kind)):
                        if (v := _int(p / kind / name)) is not None:
                            values[name] = v
                except OSError:
                    pass
                counters[kind] = values
            out.append(RdmaPort(
                device=dev, port=int(port) if port.isdigit() else 0, state=_read(p / "state"),
                phys_state=_read(p / "phys_state"), rate=_read(p / "rate"), link_layer=_read(p / "link_layer"),
                counters=counters["counters"], hw_counters=counters["hw_counters"],
            ))  # fmt: skip
    return out


def read_listeners(root: Path) -> list[Listener]:
    """Listening TCP sockets from ``root``/proc/net/tcp and tcp6 (this network namespace's)."""
    out: list[Listener] = []
    for name in ("tcp", "tcp6"):
        try:
            out += parse_listeners(
                (root / "proc" / "net" / name).read_text(encoding="ascii", errors="replace")
            )
        except OSError:
            continue
    return out
