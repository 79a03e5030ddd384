"""What a lab link looks like, and parsing of `--link h2:bandwidth=100mbit,loss=2%`."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from fabriclens.errors import InputError
from fabriclens.units import format_rate, parse_fraction, parse_rate, parse_time

NAME_RE = re.compile(r"[a-z][a-z0-9]{0,7}")
DEFAULT_NAME = "lab"
MAX_HOSTS = 64
MIN_MTU, MAX_MTU = 576, 9000


@dataclass(frozen=True, slots=True)
class LinkSpec:
    """One host's link to the lab switch. Delay, jitter and loss apply in each direction."""

    bandwidth_bits_per_s: float = 0.0  # wire rate, Ethernet framing counted; 0 = unshaped
    delay_s: float = 0.0  # one way, each direction
    jitter_s: float = 0.0  # uniform +/- jitter, packets stay in order
    loss: float = 0.0  # drop probability per packet per direction
    mtu: int = 1500
    up: bool = True

    @property
    def impaired(self) -> bool:
        """True when the link needs delay, jitter or loss (netem or the userspace stage)."""
        return self.delay_s > 0 or self.jitter_s > 0 or self.loss > 0

    def describe(self) -> str:
        """One line for people."""
        parts = [
            format_rate(self.bandwidth_bits_per_s) if self.bandwidth_bits_per_s else "unshaped"
        ]
        if self.delay_s:
            parts.append(f"delay {self.delay_s * 1e3:g} ms")
        if self.jitter_s:
            parts.append(f"jitter ±{self.jitter_s * 1e3:g} ms")
        if self.loss:
            parts.append(f"loss {self.loss * 100:g}%")
        parts.append(f"mtu {self.mtu}")
        if not self.up:
            parts.append("DOWN")
        return ", ".join(parts)

    def to_json(self) -> dict[str, Any]:
        """Stable JSON keys (SI units in the names)."""
        return {
            "bandwidth_bits_per_s": self.bandwidth_bits_per_s,
            "delay_s": self.delay_s,
            "jitter_s": self.jitter_s,
            "loss": self.loss,
            "mtu": self.mtu,
            "up": self.up,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LinkSpec:
        """Inverse of :meth:`to_json`."""
        return cls(
            bandwidth_bits_per_s=float(data["bandwidth_bits_per_s"]),
            delay_s=float(data["delay_s"]),
            jitter_s=float(data["jitter_s"]),
            loss=float(data["loss"]),
            mtu=int(data["mtu"]),
            up=bool(data["up"]),
        )


def lab_command(name: str, subcommand: str, *args: str) -> str:
    """A `fabriclens lab` command line to print as a hint, naming the lab when it is not the
    default one: a hint after `lab up --name x` must work when pasted."""
    flag = [] if name == DEFAULT_NAME else ["--name", name]
    return " ".join(["fabriclens", "lab", subcommand, *flag, *args])


def lab_hints(name: str, addresses: list[str]) -> list[str]:
    """What to run next on a lab that is up (hosts h1.. at ``addresses``), as printed after it."""
    target = addresses[-1] if addresses else "198.18.0.2"
    return [
        f"run commands inside: {lab_command(name, 'exec', 'h1', '--', 'ping', target)}",
        f"slow a link down: {lab_command(name, 'impair', 'h2' if len(addresses) > 1 else 'h1', '--delay', '5ms')}",
        f"remove it: {lab_command(name, 'down')}",
    ]


def check_name(name: str) -> str:
    """Lab names become part of namespace names: short, lower-case, no punctuation."""
    if not NAME_RE.fullmatch(name):
        raise InputError(
            f"lab name {name!r} is not allowed",
            "use 1-8 lower-case letters and digits, starting with a letter",
        )
    return name


def with_settings(base: LinkSpec, settings: dict[str, str]) -> LinkSpec:
    """Apply key=value settings (bandwidth, delay, jitter, loss, mtu, state) to a link."""
    spec = base
    for key, raw in settings.items():
        key = key.strip().lower()
        if key in ("bandwidth", "rate", "bw"):
            rate = parse_rate(raw) if raw not in ("0", "none", "unlimited") else 0.0
            if rate < 0 or (0 < rate < 8_000):
                raise InputError(
                    f"bandwidth {raw!r} is too low", "use at least 8kbit, or 0 for unshaped"
                )
            spec = replace(spec, bandwidth_bits_per_s=rate)
        elif key == "delay":
            spec = replace(spec, delay_s=_bounded_time(raw, "delay"))
        elif key == "jitter":
            spec = replace(spec, jitter_s=_bounded_time(raw, "jitter"))
        elif key == "loss":
            spec = replace(spec, loss=parse_fraction(raw))
        elif key == "mtu":
            spec = replace(spec, mtu=_mtu(raw))
        elif key in ("state", "link"):
            if raw not in ("up", "down"):
                raise InputError(
                    f"link state {raw!r} is not up or down", "use state=up or state=down"
                )
            spec = replace(spec, up=raw == "up")
        else:
            raise InputError(
                f"unknown link setting {key!r}", "use bandwidth, delay, jitter, loss, mtu or state"
            )
    if spec.jitter_s > spec.delay_s and spec.jitter_s > 0:
        raise InputError(
            f"jitter {spec.jitter_s * 1e3:g} ms exceeds delay {spec.delay_s * 1e3:g} ms",
            "give a delay at least as large as the jitter",
        )
    return spec


def _bounded_time(raw: str, what: str) -> float:
    value = parse_time(raw)
    if not 0 <= value <= 10:
        raise InputError(f"{what} {raw!r} is outside 0..10 s", f"give a {what} like 2ms")
    return value


def _mtu(raw: str) -> int:
    try:
        mtu = int(raw)
    except ValueError:
        raise InputError(f"MTU {raw!r} is not a number", "give an MTU like 1500 or 9000") from None
    if not MIN_MTU <= mtu <= MAX_MTU:
        raise InputError(f"MTU {mtu} is outside {MIN_MTU}..{MAX_MTU}", "give an MTU like 1500")
    return mtu


def parse_link_override(text: str, hosts: int) -> tuple[str, dict[str, str]]:
    """``h2:bandwidth=100mbit,loss=2%`` -> ("h2", {"bandwidth": "100mbit", "loss": "2%"})."""
    host, sep, rest = text.partition(":")
    if not sep or not rest:
        raise InputError(
            f"--link {text!r} has no settings", "write it like h2:bandwidth=100mbit,loss=2%"
        )
    host = check_host(host.strip(), hosts)
    settings: dict[str, str] = {}
    for item in rest.split(","):
        key, eq, value = item.partition("=")
        if not eq or not key.strip() or not value.strip():
            raise InputError(f"--link setting {item!r} is not key=value", "write it like loss=2%")
        settings[key.strip()] = value.strip()
    return host, settings


def check_host(host: str, hosts: int) -> str:
    """Host names are h1..hN."""
    match = re.fullmatch(r"h([0-9]{1,3})", host)
    if not match or not 1 <= int(match.group(1)) <= hosts:
        raise InputError(f"no host {host!r} in this lab", f"hosts are h1..h{hosts}")
    return host
