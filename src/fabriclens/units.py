"""Human quantities: one parser each for sizes, rates, times and fractions, and formatters.

Conventions (DESIGN.md): GB = 1e9 bytes, GiB = 2**30 bytes; link rates are bits per second;
bandwidths are bytes per second. A bare suffix on a size (``64M``) is decimal, like ``64MB``.
In a rate the case of B says bytes (``GB/s``) or bits (``Gb/s``); a bare suffix is bits
(``100G``), as links are named.
"""

from __future__ import annotations

import math
import re

from fabriclens.errors import InputError

# a number, with thousands separated by commas as the tool prints them ("1,130 GB")
_NUM = r"(?P<num>(?:[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]+)?|[0-9]*\.?[0-9]+)(?:[eE][+-]?[0-9]+)?)"

_SIZE_UNITS: dict[str, float] = {
    "": 1,
    "b": 1,
    "k": 1e3,
    "kb": 1e3,
    "m": 1e6,
    "mb": 1e6,
    "g": 1e9,
    "gb": 1e9,
    "t": 1e12,
    "tb": 1e12,
    "p": 1e15,
    "pb": 1e15,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
    "pib": 2**50,
}

_RATE_PREFIXES = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}
_PER_SECOND = ("/second", "/sec", "/s", "ps")
_RATE_UNIT = re.compile(r"(?P<prefix>[kKmMgGtT]?)(?P<binary>i?)(?P<what>[a-zA-Z]*)")
RATE_EXAMPLE = "1Gbit/s, 100G or 400Gbps (bits) or 2GB/s (bytes)"


def _bits_per_rate_unit(raw: str, num: str, unit: str) -> float:
    """Bits per second in one ``unit`` of a rate: upper-case B is bytes, lower-case b (or
    ``bit``) bits, a bare prefix bits (``100G``, as links are named). A unit whose case cannot
    tell bits from bytes (``gb``, ``gb/s``, ``MBPS``) is refused rather than guessed."""
    unknown = InputError(f"cannot read {raw!r} as a rate", f"write it like {RATE_EXAMPLE}")
    if unit.lower() == "gbe":  # a link named by its rate: 25GbE
        return 1e9
    rest, per = unit, ""
    for suffix in _PER_SECOND:
        if rest.lower().endswith(suffix):
            rest, per = rest[: -len(suffix)], rest[-len(suffix) :]
            break
    match = _RATE_UNIT.fullmatch(rest)
    if match is None:
        raise unknown
    prefix, binary, what = match.group("prefix", "binary", "what")
    if binary and not prefix:
        raise unknown
    shown = ("k" if prefix == "k" and not binary else prefix.upper()) + binary
    ambiguous = InputError(
        f"{raw!r} could mean bits or bytes per second",
        f"write {num}{shown}bit/s for bits or {num}{shown}B/s for bytes",
    )
    if what.lower() in ("bit", "bits"):
        bits = 1.0
    elif what.lower() in ("byte", "bytes") or what == "B":
        bits = 8.0
        if what == "B" and per == "PS":  # GBPS: in capitals the case says nothing
            raise ambiguous
    elif what == "b":
        bits = 1.0
        if prefix == prefix.lower() and per.lower() != "ps":  # gb, gb/s: a lower-cased GB?
            raise ambiguous
    elif what == "" and not per and not binary:
        bits = 1.0
    else:
        raise unknown
    if bits == 8.0 and not per:
        raise InputError(
            f"{raw!r} is a size, not a rate", f"write {num}{prefix}{binary}B/s for bytes per second"
        )
    scale = (
        2.0 ** (10 * "_kmgt".index(prefix.lower())) if binary else _RATE_PREFIXES[prefix.lower()]
    )
    return scale * bits


_TIME_UNITS: dict[str, float] = {
    "": 1,
    "s": 1,
    "sec": 1,
    "ms": 1e-3,
    "us": 1e-6,
    "µs": 1e-6,
    "ns": 1e-9,
    "min": 60,
    "m": 60,
    "h": 3600,
}


def _parse(text: str, units: dict[str, float], what: str, example: str) -> float:
    raw = str(text).strip()
    match = re.fullmatch(_NUM + r"\s*(?P<unit>[a-zA-Zµ/]*)", raw)
    unit = match.group("unit").lower() if match else ""
    if match is None or unit not in units:
        raise InputError(f"cannot read {raw!r} as a {what}", f"write it like {example}")
    value = float(match.group("num").replace(",", "")) * units[unit]
    if not math.isfinite(value):
        raise InputError(f"{raw!r} is not a finite {what}", f"write it like {example}")
    return value


MAX_SIZE_BYTES = 10**21  # 1 ZB: far beyond any model, dataset or transfer; keeps sums finite


def parse_size(text: str | int | float) -> int:
    """Parse a size such as ``140GB``, ``1GiB``, ``64M`` or ``4096``; returns bytes."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        if text < 0:
            raise InputError(f"size {text} is negative", "give a size of zero or more")
        value = float(text)
    else:
        value = _parse(str(text), _SIZE_UNITS, "size", "140GB, 1GiB or 64M")
    if value > MAX_SIZE_BYTES:
        raise InputError(f"size {text} is over 1 ZB (10^21 bytes)", "give a smaller size")
    return round(value)


def parse_rate(text: str | int | float) -> float:
    """Parse a rate; returns bits per second. Bits: ``1gbit``, ``100G``, ``400Gbps``, ``10Gb/s``,
    ``25GbE``; bytes (x8): ``2GB/s``, ``2GBps``, ``500MiB/s``. Ambiguous units (``1gb``), sizes
    (``1GB``) and a number without a unit (but 0) are refused with the two spellings to choose
    from."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        return float(text)
    raw = str(text).strip()
    match = re.fullmatch(_NUM + r"\s*(?P<unit>[a-zA-Z/]*)", raw)
    if match is None:
        raise InputError(f"cannot read {raw!r} as a rate", f"write it like {RATE_EXAMPLE}")
    num, number = match.group("num"), float(match.group("num").replace(",", ""))
    if not match.group("unit") and number != 0:  # 1 Gbit/s or 1 GB/s?
        raise InputError(
            f"{raw!r} has no unit", f"write {num}Gbit/s for bits or {num}GB/s for bytes per second"
        )
    value = number * _bits_per_rate_unit(raw, num, match.group("unit"))
    if not math.isfinite(value):
        raise InputError(f"{raw!r} is not a finite rate", f"write it like {RATE_EXAMPLE}")
    return value


def parse_bandwidth(text: str | int | float) -> float:
    """Parse a rate as :func:`parse_rate` does (``2GB/s``, ``16Gbit/s``); returns bytes per
    second (a number given as a number, not as text, is bytes per second)."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        return float(text)
    return parse_rate(text) / 8.0


def parse_time(text: str | int | float) -> float:
    """Parse a duration such as ``5ms``, ``1.5s``, ``200us``; returns seconds."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        return float(text)
    return _parse(str(text), _TIME_UNITS, "duration", "5ms, 200us or 1.5s")


_PER_TIME_UNITS: dict[str, float] = {
    "s": 1, "sec": 1, "second": 1, "m": 60, "min": 60, "minute": 60, "h": 3600, "hr": 3600,
    "hour": 3600, "d": 86400, "day": 86400,
}  # fmt: skip


def parse_per_time(text: str | int | float) -> float:
    """Parse a frequency such as ``20/h``, ``2/min`` or ``0.5/s``; returns events per second."""
    raw = str(text).strip()
    num, slash, unit = raw.lower().replace(" per ", "/").partition("/")
    unit = unit.strip().removesuffix("s") if unit.strip() not in ("s", "hrs") else unit.strip()
    unit = {"hrs": "hr"}.get(unit, unit)
    try:
        value = float(num)
    except ValueError:
        value = math.nan
    if not slash or unit not in _PER_TIME_UNITS or not math.isfinite(value) or value < 0:
        raise InputError(
            f"cannot read {raw!r} as a rate per unit of time", "write it like 20/h or 2/min"
        )
    return value / _PER_TIME_UNITS[unit]


def parse_fraction(text: str | int | float) -> float:
    """Parse ``0.5%`` or ``0.005``; returns a fraction in [0, 1]."""
    raw = str(text).strip()
    try:
        value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        raise InputError(
            f"cannot read {raw!r} as a fraction", "write it like 0.5% or 0.005"
        ) from None
    if not 0.0 <= value <= 1.0:
        raise InputError(f"fraction {raw!r} is outside 0..100%", "give a value between 0% and 100%")
    return value


def format_number(value: float, digits: int = 3) -> str:
    """Render a number to ``digits`` significant figures in plain digits, never as ``1e+03``.

    Thousands are separated by commas (``3,200``), small values keep their zeros
    (``0.000012``), trailing zeros after the point are dropped (``1.5``), as ``:g`` does.
    """
    if not math.isfinite(value):
        return str(value)
    if value == 0:
        return "0"
    rounded = float(f"{value:.{digits}g}")
    magnitude = math.floor(math.log10(abs(rounded)))
    decimals = max(0, digits - 1 - magnitude)
    text = f"{rounded:,.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def _scaled(value: float, steps: list[tuple[float, str]], digits: int) -> str:
    for scale, suffix in steps:
        if abs(value) >= scale:
            return f"{format_number(value / scale, digits)} {suffix}".rstrip()
    scale, suffix = steps[-1]
    return f"{format_number(value / scale, digits)} {suffix}".rstrip()


def format_bytes(size_bytes: float, digits: int = 3) -> str:
    """Render bytes with binary units (GiB) — memory is reported the way nvidia-smi does."""
    steps = [(2.0**40, "TiB"), (2.0**30, "GiB"), (2.0**20, "MiB"), (2.0**10, "KiB"), (1.0, "B")]
    return _scaled(size_bytes, steps, digits)


def format_decimal_bytes(size_bytes: float, digits: int = 3) -> str:
    """Render bytes with decimal units (GB = 1e9), as message sizes and transfers are."""
    steps = [(1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB"), (1.0, "B")]
    return _scaled(size_bytes, steps, digits)


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun``, the noun plural unless ``n`` is one: ``1 replica``, ``4 replicas``."""
    return f"{n} {noun if n == 1 else (plural or noun + 's')}"


def format_time(time_s: float, digits: int = 3) -> str:
    """Render seconds as days, h, min, s, ms, µs or ns; a long time in minutes, hours or days.

    A larger unit takes over at twice its size (120 s is ``2 min``, 7,200 s is ``2 h``), so a
    number is never below 2 of its unit unless it is below 2 of the next unit down.
    """
    if time_s == 0:
        return "0 s"
    long_steps = [(86400.0, "days"), (3600.0, "h"), (60.0, "min")]
    for scale, suffix in long_steps:
        if abs(time_s) >= 2 * scale:
            return f"{format_number(time_s / scale, digits)} {suffix}"
    steps = [(1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")]
    return _scaled(time_s, steps, digits)


def format_rate(rate_bits_per_s: float, digits: int = 3) -> str:
    """Render a link rate in bit/s units (Gbit/s)."""
    steps = [(1e12, "Tbit/s"), (1e9, "Gbit/s"), (1e6, "Mbit/s"), (1e3, "kbit/s"), (1.0, "bit/s")]
    return _scaled(rate_bits_per_s, steps, digits)


def format_bw(bw_bytes_per_s: float, digits: int = 3) -> str:
    """Render a bandwidth in GB/s (1e9 bytes per second, as nccl-tests does)."""
    return f"{format_number(bw_bytes_per_s / 1e9, digits)} GB/s"
