"""How the log reader answers each warning NCCL can print.

NCCL's source holds every WARN it prints (tests/fixtures/nccl_warn_sites.tsv: the call sites of
four releases, tools/nccl_warn_sites.py). Each format string is filled in (a number for each
numeric conversion, a word for each string), laid out as NCCL prints it (`host:pid:tid [dev]
file:line NCCL WARN <message>`, a message holding newlines continuing on plain lines) and read
alone by `fabriclens logs`' reader and rules. Printed: how many are read as NCCL warnings (all
must be: exit 1 otherwise), how many a rule names and how many only the catch-all ("NCCL printed
warnings") quotes; by part of NCCL.

    python benchmarks/nccl_warns.py [-v]    # -v: every site the catch-all only quotes

The filled-in values are placeholders, not what a failing system prints (where the format has
`%s` for an error's text, a word stands here, so neither a CUDA error's nor a system call's
meaning can be added), so the share named is a floor for lines of that shape and says nothing of
how often each warning is met.
"""

from __future__ import annotations

import csv
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SITES = ROOT / "tests" / "fixtures" / "nccl_warn_sites.tsv"
CATCH_ALL = {"nccl-warnings", "log-shows-error"}
CONVERSION_RE = re.compile(r"%[-+ #0]*(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|h|ll|l|z|j|t|L)?([diouxXeEfgGcsp%])")  # fmt: skip
VALUES = {"d": "3", "i": "3", "u": "3", "o": "3", "x": "1f", "X": "1F", "e": "1.0", "E": "1.0",
          "f": "1.0", "g": "1", "G": "1", "c": "c", "s": "mlx5_0", "p": "0x7f3a2c000000", "%": "%"}  # fmt: skip
ESCAPES = {"\\n": "\n", '\\"': '"', "\\t": " ", "\\\\": "\\", "\\'": "'"}


def sites() -> list[dict[str, str]]:
    with SITES.open(encoding="utf-8") as f:
        return list(csv.DictReader((ln for ln in f if not ln.startswith("#")), delimiter="\t"))


def filled(fmt: str) -> str:
    """The format string with its escapes undone and each conversion given a value."""
    text = re.sub(r"\\[n\"t\\']", lambda m: ESCAPES[m.group(0)], fmt)
    return CONVERSION_RE.sub(lambda m: VALUES[m.group(1)], text)


def as_logged(site: dict[str, str]) -> list[str]:
    """The lines NCCL prints for the site: its layout on the first, the rest of a message that
    holds newlines on lines of their own."""
    first, *rest = filled(site["format"]).split("\n")
    where = site["path"].removeprefix("src/")
    return [f"node01:1234:1300 [0] {where}:{site['line']} NCCL WARN {first}", *rest]


def answer(site: dict[str, str]) -> str:
    """ "not read" (not read as a warning), "named" (by a rule) or "quoted" (by the catch-all)."""
    from fabriclens.diagnose.engine import diagnose
    from fabriclens.parse.nccl_log import parse_nccl_log
    from fabriclens.parse.torch_log import TorchLog

    log = parse_nccl_log(as_logged(site))
    if not log.warnings:
        return "not read"
    found = diagnose(log, TorchLog())
    return "named" if any(f.rule not in CATCH_ALL for f in found) else "quoted"


def part(path: str) -> str:
    """The part of NCCL a site is in: its directory under src/, or the file at src/'s top."""
    rel = path.removeprefix("src/")
    return rel.split("/")[0] if "/" in rel else rel


def main() -> int:
    sys.path.insert(0, str(ROOT / "src"))
    rows = sites()
    total: Counter[str] = Counter()
    by_part: dict[str, Counter[str]] = {}
    quoted = []
    for site in rows:
        a = answer(site)
        total[a] += 1
        by_part.setdefault(part(site["path"]), Counter())[a] += 1
        if a == "quoted":
            quoted.append(site)
    kinds = ("named", "quoted", "not read")
    print(f"NCCL WARN call sites: {len(rows)} (tests/fixtures/nccl_warn_sites.tsv)")
    print("  " + ", ".join(f"{k}: {total[k]} ({total[k] / len(rows):.0%})" for k in kinds))
    print(f"\n  {'part of NCCL':24s} {'sites':>5s} " + " ".join(f"{k:>8s}" for k in kinds))
    for name, c in sorted(by_part.items(), key=lambda kv: -sum(kv[1].values())):
        print(f"  {name:24s} {sum(c.values()):5d} " + " ".join(f"{c[k]:8d}" for k in kinds))
    if "-v" in sys.argv:
        print("\nquoted only:")
        for site in quoted:
            print(f"  {site['path']}:{site['line']}  {site['format'][:110]}")
    return 1 if total["not read"] else 0


if __name__ == "__main__":
    sys.exit(main())
