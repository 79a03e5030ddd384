"""Reading the files users name: the one place that opens them, with the same limits everywhere.

Only regular files are read (a FIFO, a device such as /dev/zero, a directory or a socket is
refused with one line naming the file), unless the name is ``-``: standard input. Files are
opened with O_NONBLOCK, so naming a FIFO never blocks; the total bytes and each line's length are
capped. Logs are streamed a block of lines at a time, so memory stays flat however large the file.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import stat
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from fabriclens.errors import InputError

STDIN = "-"
MAX_LOG_BYTES = 4 * 10**9  # logs, nccl-tests output: streamed, so memory does not grow with it
MAX_LINE_BYTES = 8 * 1024  # a longer log line is cut there (NCCL and PyTorch lines are shorter)
MAX_FILE_BYTES = 64 * 10**6  # a file read whole: JSON documents, request bodies, prompt sets
MAX_JSON_DIGITS = 400  # an integer in JSON with more digits is refused (floats top out at 309)
_CHUNK = 1 << 20
_KINDS = [
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
]


def _size(limit: int) -> str:
    return f"{limit / 1e9:g} GB" if limit >= 10**9 else f"{limit / 1e6:g} MB"


def too_large(path: str | Path, what: str, max_bytes: int, fix: str) -> InputError:
    """The error for a file over its size limit."""
    return InputError(f"{what} {path} is over {_size(max_bytes)}", fix)


def open_input(path: str | Path, what: str = "file") -> IO[bytes]:
    """Open a user's file for reading in binary, or standard input for ``-``. Refuses anything
    but a regular file; never blocks on a FIFO."""
    name = str(path)
    if name == STDIN:
        return sys.stdin.buffer
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InputError(
            f"cannot read {what} {name}: {exc.strerror or exc}", "check the path"
        ) from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = next((k for test, k in _KINDS if test(mode)), "not a regular file")
        raise InputError(
            f"{what} {name} is {kind}, not a regular file",
            f"give a regular file, or pipe it in and name it - (... < {name})",
        )
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def is_directory(path: str | Path) -> bool:
    """``Path.is_dir()``, False (not an error) for a name the system refuses (too long, NUL)."""
    try:
        return Path(path).is_dir()
    except (OSError, ValueError):
        return False


def read_bytes(path: str | Path, what: str = "file", max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """A user's whole file, up to ``max_bytes``; larger is refused."""
    with open_input(path, what) as fh:
        try:
            data = fh.read(max_bytes + 1)
        except OSError as exc:
            raise InputError(f"cannot read {what} {path}: {exc.strerror or exc}", "check the path") from None  # fmt: skip
    if len(data) > max_bytes:
        raise InputError(
            f"{what} {path} is over {_size(max_bytes)}", "give a smaller file (or raise the limit)"
        )
    return data


def iter_lines(
    path: str | Path,
    what: str = "file",
    max_bytes: int = MAX_LOG_BYTES,
    max_line_bytes: int = MAX_LINE_BYTES,
    too_big: str = "give a smaller file",
    start: int = 0,
    stop: int | None = None,
) -> Iterator[str]:
    """A user's file as lines of text (no line ends, and no carriage returns before them;
    invalid UTF-8 replaced), streamed. A line longer than ``max_line_bytes`` is cut there; more
    than ``max_bytes`` in all is refused, with ``too_big`` as the fix. ``start``/``stop`` (a
    regular file only): the lines that begin at byte offsets from ``start`` (a line's first
    byte) up to ``stop``."""
    blocks = iter_line_blocks(path, what, max_bytes, max_line_bytes, too_big, start, stop)
    return itertools.chain.from_iterable(blocks)


def iter_line_blocks(
    path: str | Path,
    what: str = "file",
    max_bytes: int = MAX_LOG_BYTES,
    max_line_bytes: int = MAX_LINE_BYTES,
    too_big: str = "give a smaller file",
    start: int = 0,
    stop: int | None = None,
) -> Iterator[list[str]]:
    """``iter_lines``'s lines, as the lists they are read in (for a reader that takes them
    in batches: no call per line)."""
    size = regular_file_size(path)
    if size is not None and size - start > max_bytes and stop is None:
        raise too_large(path, what, max_bytes, too_big)  # at once, before reading any of it
    with open_input(path, what) as fh:
        if start:
            fh.seek(start)
        # a pipe gives what it holds now (read1) instead of waiting for a whole block
        read = fh.read if size is not None else getattr(fh, "read1", fh.read)

        def block() -> bytes:
            try:
                return read(_BLOCK)
            except OSError as exc:
                raise InputError(f"cannot read {what} {path}: {exc.strerror or exc}", "check the path") from None  # fmt: skip

        def over() -> InputError:
            return too_large(path, what, max_bytes, too_big)

        yield from _lines(block, max_bytes, max_line_bytes, None if stop is None else stop - start, over)  # fmt: skip


# Bytes read at a time. A block's whole lines are decoded and split in one call each; a line
# is looked at on its own only in a block with a line over the length cap, or one that reaches
# the byte cap or ``stop``
_BLOCK = 1 << 18


def _lines(
    block: Callable[[], bytes],
    max_bytes: int,
    max_line_bytes: int,
    stop: int | None,
    over: Callable[[], InputError],
) -> Iterator[list[str]]:
    """``iter_line_blocks`` over the blocks ``block`` returns (b"" at the end); ``stop`` counts
    from the first byte."""
    total = 0  # bytes of the lines given (or cut and skipped) so far: where the next one starts
    held: list[bytes] = []  # the start of a line whose end is not read yet, in pieces
    held_bytes = 0
    skipping = False  # within the rest of a line already cut and given
    while stop is None or total < stop or skipping:
        data = block()
        if skipping:  # to the end of the cut line, counting what is skipped
            end = data.find(b"\n")
            total += len(data) if end < 0 else end + 1
            if total > max_bytes:
                raise over()
            if end < 0:
                if not data:
                    return
                continue
            skipping, data = False, data[end + 1 :]
            if not data:
                continue
        if not data:  # the end: what is held is the last line, without a line end
            if held and (stop is None or total < stop):
                total += held_bytes
                if total > max_bytes:
                    raise over()
                yield [_text(b"".join(held)[:max_line_bytes])]
            return
        cut = data.rfind(b"\n") + 1
        if cut:
            whole = b"".join([*held, data[:cut]]) if held else data[:cut]
            lines, refused = _whole_lines(whole, total, max_bytes, max_line_bytes, stop)
            if lines:
                yield lines
            if refused:
                raise over()
            total += len(whole)
            if stop is not None and total >= stop:
                return
            held, held_bytes = [], 0
        if cut < len(data):
            held.append(data[cut:])
            held_bytes += len(data) - cut
        if held_bytes > max_line_bytes:  # a line over the cap: give its start, skip the rest
            if stop is not None and total >= stop:
                return
            total += held_bytes
            if total > max_bytes:
                raise over()
            yield [_text(b"".join(held)[:max_line_bytes])]
            held, held_bytes, skipping = [], 0, True


def _whole_lines(
    whole: bytes, total: int, max_bytes: int, max_line_bytes: int, stop: int | None
) -> tuple[list[str], bool]:
    """The lines of ``whole`` (lines, each with its line end), which starts ``total`` bytes in,
    and whether one ends past ``max_bytes`` (the lines before it given). Decoded and split in
    one call each, unless a line is over the cap or the block reaches ``max_bytes`` or
    ``stop``; then one at a time."""
    end = total + len(whole)
    if end <= max_bytes and (stop is None or end <= stop):
        text = whole.decode("utf-8", "replace")
        lines = text.split("\n")
        lines.pop()  # the empty text after the last line end
        longest = max(map(len, lines))
        # a character takes at most 4 bytes (an invalid byte's replacement stands for 1 to 3)
        if longest <= max_line_bytes if text.isascii() else longest * 4 <= max_line_bytes:
            return ([line.rstrip("\r") for line in lines] if "\r" in text else lines), False
    lines = []
    for piece in whole.split(b"\n")[:-1]:
        if stop is not None and total >= stop:
            break
        total += len(piece) + 1
        if total > max_bytes:
            return lines, True
        lines.append(_text(piece[:max_line_bytes]))
    return lines, False


def _text(line: bytes) -> str:
    """One line's bytes as text, carriage returns at its end dropped."""
    return line.decode("utf-8", "replace").rstrip("\r")


def regular_file_size(path: str | Path) -> int | None:
    """The size of a regular file, None for anything else (standard input, a FIFO...)."""
    if str(path) == STDIN:
        return None
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    return info.st_size if stat.S_ISREG(info.st_mode) else None


def line_starts(path: str | Path, parts: int, what: str = "file") -> list[int]:
    """Offsets that cut a regular file into ``parts`` ranges of about equal size, each at the
    start of a line (fewer when its lines are long): [0, ..., size]."""
    size = regular_file_size(path) or 0
    cuts = [0]
    with open_input(path, what) as fh:
        for k in range(1, parts):
            fh.seek(max(cuts[-1], size * k // parts))
            while (rest := fh.readline(_CHUNK)) and not rest.endswith(b"\n"):
                pass  # to the end of the line the cut fell in, in bounded reads
            at = fh.tell()
            if cuts[-1] < at < size:
                cuts.append(at)
    return [*cuts, size]


def read_text(path: str | Path, what: str = "file", max_bytes: int = MAX_FILE_BYTES) -> str:
    """A user's whole file as text (strict UTF-8)."""
    data = read_bytes(path, what, max_bytes)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{what} {path} is not UTF-8 text (byte {exc.start})", "give a text file"
        ) from None


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_JSON_DIGITS:
        raise ValueError(f"an integer of {len(text)} digits")
    return int(text)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:20]} overflows a float")
    return value


def _constant(name: str) -> float:
    return float(name)  # NaN, Infinity, -Infinity as Python's json module writes them


def loads_json(text: str | bytes, constants: bool = False) -> Any:
    """Strict JSON: no NaN or Infinity (unless ``constants``: files Python's json module wrote,
    as transformers writes config.json, may hold them), no number too large for a float or with
    hundreds of digits, bounded nesting. ValueError (with the reason) for anything else."""
    try:
        return json.loads(
            text,
            parse_constant=_constant if constants else _no_constant,
            parse_int=_bounded_int,
            parse_float=_finite_float,
        )
    except RecursionError:
        raise ValueError("nested too deeply") from None


def read_json(
    path: str | Path,
    what: str = "file",
    fix: str = "",
    max_bytes: int = MAX_FILE_BYTES,
    constants: bool = False,
) -> Any:
    """A user's JSON file, strictly parsed (see :func:`loads_json`); InputError otherwise."""
    text = read_text(path, what, max_bytes)
    try:
        return loads_json(text, constants)
    except ValueError as exc:
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        raise InputError(f"{what} {path} is not valid JSON ({reason})", fix or None) from None
