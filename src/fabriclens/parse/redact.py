"""Consistent redaction of host names, IPv4/IPv6 and MAC addresses, serial numbers and GUIDs:
the same input always becomes the same token across every file of a bundle. Pure."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_MAC = re.compile(r"\b(?:[0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}\b")
_GUID = re.compile(
    r"(?<![0-9a-fA-F:.])(?:[0-9a-fA-F]{4}:){3}[0-9a-fA-F]{4}(?![0-9a-fA-F:.])|\b0x[0-9a-fA-F]{16}\b"
)
_IPV4 = re.compile(
    r"(?<![\d.])(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)(?![\d.])"
)
_IPV6 = re.compile(r"(?<![0-9A-Za-z:.])(?:[0-9a-fA-F]{1,4}:){2,7}[0-9a-fA-F]{1,4}(?![0-9A-Za-z:.])|"
                   r"(?<![0-9A-Za-z:.])(?:[0-9a-fA-F]{1,4}:){1,6}:(?:[0-9a-fA-F]{1,4}(?::[0-9a-fA-F]{1,4}){0,5})?(?![0-9A-Za-z:.])")  # fmt: skip
_SERIAL = re.compile(r"(?im)^(\s*(?:Serial Number|Board Serial|Serial|serial_number|UUID|GPU UUID|"
                     r"Board Part Number|\[SN\] Serial number|Device Serial Number)\s*[:=]\s*)(\S.*?)\s*$")  # fmt: skip
_PCI_LIKE = re.compile(r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}$")  # never an address: a PCI domain:bus


@dataclass
class Redactor:
    """Replaces identifying strings with stable tokens (host1, ip4-1, mac-1, ...)."""

    hostnames: tuple[str, ...] = ()
    seen: dict[str, str] = field(default_factory=dict)

    def _token(self, kind: str, value: str) -> str:
        key = f"{kind}:{value.lower()}"
        if key not in self.seen:
            n = sum(1 for k in self.seen if k.startswith(f"{kind}:")) + 1
            self.seen[key] = f"{kind}-{n}"
        return self.seen[key]

    def redact(self, text: str) -> str:
        """``text`` with every identifying string replaced (the same one by the same token)."""
        text = _SERIAL.sub(lambda m: m.group(1) + self._token("serial", m.group(2)), text)
        text = _MAC.sub(lambda m: self._token("mac", m.group(0)), text)
        text = _GUID.sub(lambda m: self._token("guid", m.group(0)), text)

        def ip4(m: re.Match[str]) -> str:
            v = m.group(0)
            return v if v in ("127.0.0.1", "0.0.0.0") else self._token("ip4", v)

        text = _IPV4.sub(ip4, text)

        def ip6(m: re.Match[str]) -> str:
            v = m.group(0)
            if (
                _PCI_LIKE.match(v)
                or v in ("::1", "::")
                or (re.fullmatch(r"[\d:]+", v) and v.count(":") <= 2)
            ):
                return v  # PCI addresses, times (12:30:45), loopback
            return self._token("ip6", v)

        text = _IPV6.sub(ip6, text)
        for name in sorted({h for h in self.hostnames if len(h) >= 2}, key=len, reverse=True):
            token = self._token("host", name)
            text = re.sub(rf"(?<![\w-]){re.escape(name)}(?![\w-])", token, text)
        return text
