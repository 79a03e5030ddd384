"""Listening TCP sockets from /proc/net/tcp and /proc/net/tcp6 (what `ss -ltn` reads)."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

LISTEN = "0A"


@dataclass(frozen=True, slots=True)
class Listener:
    address: str  # "127.0.0.1", "0.0.0.0", "::1", "::"
    port: int

    @property
    def loopback(self) -> bool:
        return ipaddress.ip_address(self.address).is_loopback


def _address(hex_addr: str) -> str:
    raw = bytes.fromhex(hex_addr)
    if len(raw) == 4:  # one little-endian 32-bit word
        return str(ipaddress.IPv4Address(raw[::-1]))
    # four little-endian 32-bit words
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))
    addr = ipaddress.IPv6Address(words)
    return str(addr.ipv4_mapped or addr)


def parse_listeners(text: str) -> list[Listener]:
    """The listening sockets in one /proc/net/tcp or tcp6 file; malformed lines are skipped."""
    out = []
    for line in text.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 4 or fields[3] != LISTEN or ":" not in fields[1]:
            continue
        hex_addr, _, hex_port = fields[1].rpartition(":")
        try:
            out.append(Listener(_address(hex_addr), int(hex_port, 16)))
        except ValueError:
            continue
    return out
