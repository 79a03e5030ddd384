"""Lines read in blocks (``inputs.iter_lines``) are the lines the file holds, as a reader of one
line at a time gives them: cut at the length cap, carriage returns before the line end dropped,
invalid UTF-8 replaced, refused past the byte cap, and in a range the lines that begin in it.
Checked against a plain statement of those rules, over random bytes cut into random blocks."""

from __future__ import annotations

import io
import itertools
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fabriclens import inputs
from fabriclens.errors import InputError


def _rules(data: bytes, max_bytes: int, max_line: int, stop: int | None) -> tuple[list[str], bool]:
    """The lines that begin before ``stop``, each cut at ``max_line`` bytes; True when a line
    ends past ``max_bytes`` (the lines before it are given, then the file is refused)."""
    lines, at = [], 0
    pieces = data.split(b"\n")
    for i, piece in enumerate(pieces):
        last = i == len(pieces) - 1
        if (last and not piece) or (stop is not None and at >= stop):
            break
        at += len(piece) + (not last)
        if at > max_bytes:
            return lines, True
        lines.append(piece[:max_line].decode("utf-8", "replace").rstrip("\r"))
    return lines, False


def _read(data: bytes, sizes: list[int], max_bytes: int, max_line: int, stop: int | None) -> tuple[list[str], bool]:  # fmt: skip
    """``inputs._lines`` over ``data`` given in blocks of the sizes drawn (cycled), its lists
    of lines joined."""
    fh, n = io.BytesIO(data), 0

    def block() -> bytes:
        nonlocal n
        n += 1
        return fh.read(sizes[n % len(sizes)])

    out: list[str] = []
    try:
        for lines in inputs._lines(
            block, max_bytes, max_line, stop, lambda: InputError("over", "")
        ):
            out += lines
    except InputError:
        return out, True
    return out, False


# pieces that make line ends, carriage returns, characters of 1 to 4 bytes, cut characters
_PIECES = [b"a", b"bc", b"\n", b"\r", b"\r\n", b"\xe2\x82\xac", b"\xe2\x82", b"\xff",
           b"\xf0\x9f\x98\x80", b"NCCL WARN x", b" ", b"\xc3"]  # fmt: skip
_BYTES = st.lists(st.sampled_from(_PIECES), max_size=80).map(b"".join)


@settings(max_examples=400, deadline=None)
@given(_BYTES, st.lists(st.integers(1, 40), min_size=1, max_size=5), st.integers(1, 30),
       st.one_of(st.none(), st.integers(0, 120)))  # fmt: skip
def test_block_reader_gives_the_lines_the_rules_give(
    data: bytes, sizes: list[int], max_line: int, stop: int | None
) -> None:
    assert _read(data, sizes, 10**6, max_line, stop) == _rules(data, 10**6, max_line, stop)


@settings(max_examples=300, deadline=None)
@given(_BYTES, st.lists(st.integers(1, 40), min_size=1, max_size=5), st.integers(1, 30),
       st.integers(0, 100))  # fmt: skip
def test_past_the_byte_cap_the_file_is_refused_after_the_lines_within_it(
    data: bytes, sizes: list[int], max_line: int, max_bytes: int
) -> None:
    got, refused = _read(data, sizes, max_bytes, max_line, None)
    want, over = _rules(data, max_bytes, max_line, None)
    assert refused == over
    # a cut line is given before the rest of it is skipped, so it may come before the refusal
    assert got[: len(want)] == want and len(got) - len(want) <= (1 if over else 0)


def test_a_regular_file_in_ranges_gives_each_line_once(tmp_path: Path) -> None:
    lines = [f"line {i} " + "x" * (i % 300) + ("\r" if i % 7 == 0 else "") for i in range(5000)]
    lines[1234] = "y" * 20_000  # over the 8 kB cap
    path = tmp_path / "big.log"
    path.write_bytes("\n".join(lines).encode() + b"\n")
    cuts = inputs.line_starts(path, 3)
    parts = [list(inputs.iter_lines(path, "log", start=a, stop=b)) for a, b in itertools.pairwise(cuts)]  # fmt: skip
    want = [line.rstrip("\r") for line in lines]
    want[1234] = "y" * inputs.MAX_LINE_BYTES
    assert [line for part in parts for line in part] == want
    assert list(inputs.iter_lines(path, "log")) == want


def test_a_file_over_the_cap_is_refused_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "a.log"
    path.write_bytes(b"x\n" * 100)
    with pytest.raises(InputError, match="over"):
        next(inputs.iter_lines(path, "log", max_bytes=50))
