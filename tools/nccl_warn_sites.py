"""Every WARN call site of NCCL's sources, as a table the log reader is tested against.

NCCL prints its warnings through one macro, ``WARN(fmt, ...)`` (src/include/debug.h), as
``host:pid:tid [dev] file:line NCCL WARN <message>``; its source therefore holds every warning
it can print. This reads the given releases of a clone of github.com/NVIDIA/nccl (``git
archive``, newest first) and writes each distinct call site (its path and format string) once,
with the first of those releases that has it and its line there, to
tests/fixtures/nccl_warn_sites.tsv: adjacent string literals joined, a ``PRIu64``-style macro
written as ``%s``.

    python tools/nccl_warn_sites.py PATH_TO_NCCL_CLONE REF [REF ...]
"""

from __future__ import annotations

import io
import re
import subprocess
import sys
import tarfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "tests" / "fixtures" / "nccl_warn_sites.tsv"
CALL_RE = re.compile(r'\bWARN\(\s*((?:"(?:[^"\\]|\\.)*"\s*(?:[A-Z_][A-Z0-9_]*\s*)?)+)', re.S)
PIECE_RE = re.compile(r'"((?:[^"\\]|\\.)*)"|([A-Z_][A-Z0-9_]*)')
SOURCES = (".cc", ".cu", ".h", ".c", ".cpp")


def sites(clone: Path, ref: str) -> list[tuple[str, int, str]]:
    """(path under src/ or plugins/, line, format) of every WARN call of ``ref``, in path order."""
    tar = subprocess.run(["git", "-C", str(clone), "archive", ref, "src"], capture_output=True,
                         check=True, timeout=300).stdout  # fmt: skip
    found = []
    with tarfile.open(fileobj=io.BytesIO(tar)) as archive:
        for member in sorted(archive.getmembers(), key=lambda m: m.name):
            if not member.isfile() or not member.name.endswith(SOURCES):
                continue
            data = archive.extractfile(member)
            text = data.read().decode("utf-8", "replace") if data else ""
            for m in CALL_RE.finditer(text):
                fmt = "".join(lit if lit else "%s" for lit, _ in PIECE_RE.findall(m.group(1)))
                found.append((member.name, text.count("\n", 0, m.start()) + 1, fmt))
    return found


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    clone, refs = Path(argv[0]), argv[1:]
    rows: dict[tuple[str, str], tuple[str, int]] = {}
    for ref in refs:
        for rel, line, fmt in sites(clone, ref):
            rows.setdefault((rel, fmt), (ref, line))
    with OUT.open("w", encoding="utf-8") as f:
        f.write(
            "# NCCL's WARN call sites (tools/nccl_warn_sites.py), from github.com/NVIDIA/nccl at\n"
        )
        f.write(
            f"# {', '.join(refs)}: each distinct one once, with the first of those that has it.\n"
        )
        f.write("# Tab-separated; the format string as written in the source (escapes kept).\n")
        f.write("release\tpath\tline\tformat\n")
        for (rel, fmt), (ref, line) in sorted(rows.items(), key=lambda kv: (kv[0][0], kv[1][1])):
            f.write(f"{ref}\t{rel}\t{line}\t{fmt}\n")
    print(f"{len(rows)} WARN call sites -> {OUT.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
