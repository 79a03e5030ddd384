"""How many real posts (tests/fixtures/real) fabriclens reads right, and how fast the parsers are.

Run: python benchmarks/corpus.py
Target (issue): >= 90% of the files name the maintainers' diagnosis or the decisive fact; the
rest are listed as known gaps in tests/fixtures/real/expected.toml and the README.
Then 100,000 mutated corpus lines go through every parser (none may raise) and the time is printed.
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT / "tests" / "fixtures" / "real"
sys.path.insert(0, str(ROOT / "src"))

from fabriclens.cli.app import run  # noqa: E402
from fabriclens.diagnose.engine import diagnose  # noqa: E402
from fabriclens.parse.nccl_log import parse_nccl_log  # noqa: E402
from fabriclens.parse.nccl_tests import parse_nccl_tests  # noqa: E402
from fabriclens.parse.torch_log import parse_torch_log  # noqa: E402


def expectations() -> dict[str, list[dict[str, Any]]]:
    """The [[log]] and [[bench]] entries of expected.toml."""
    with (REAL / "expected.toml").open("rb") as fh:
        return tomllib.load(fh)


def _run(argv: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = run(argv)
    return status, out.getvalue()


def _must(doc_text: str, must: list[str]) -> list[str]:
    low = doc_text.lower()
    return [f"missing {m!r}" for m in must if m.lower() not in low]


def check_log(entry: dict[str, Any]) -> list[str]:
    """What `fabriclens logs FILE --json` got wrong for this entry (empty: read right)."""
    status, text = _run(["logs", "--json", str(REAL / entry["file"])])
    if status == 2 or not text:
        return [f"exit {status}, no JSON"]
    doc = json.loads(text)
    problems = []
    if status != entry["exit"]:
        problems.append(f"exit {status}, want {entry['exit']}")
    fired = {f["rule"] for f in doc["findings"]}
    problems += [f"rule {r} did not fire" for r in entry["rules"] if r not in fired]
    problems += [f"rule {r} fired" for r in entry.get("not_rules", []) if r in fired]
    if "version" in entry and doc["nccl"]["version"] != entry["version"]:
        problems.append(f"version {doc['nccl']['version']}, want {entry['version']}")
    if "event" in entry:
        want = entry["event"]
        if not any(all(e.get(k) == v for k, v in want.items()) for e in doc["nccl"]["events"]):
            problems.append(f"no event {want}")
    return problems + _must(text, entry.get("must_contain", []))


def check_bench(entry: dict[str, Any]) -> list[str]:
    """What `fabriclens bench import FILE --json` got wrong for this entry."""
    status, text = _run(["bench", "import", "--json", str(REAL / entry["file"])])
    problems = [] if status == entry["exit"] else [f"exit {status}, want {entry['exit']}"]
    if status == 2 or not text:
        return problems
    doc = json.loads(text)
    ids = {f["id"] for f in doc["flags"]}
    problems += [f"flag {f} missing" for f in entry.get("flags", []) if f not in ids]
    for key, field in (("op", "op"), ("ranks", "ranks"), ("version", "version")):
        if key in entry and doc[field] != entry[key]:
            problems.append(f"{key} {doc[field]!r}, want {entry[key]!r}")
    for key, field in (("plateau", "plateau_busbw_GBps"), ("largest", "largest_busbw_GBps")):
        if key in entry and (doc[field] is None or abs(doc[field] - entry[key]) > 0.01):
            problems.append(f"{key} busbw {doc[field]}, want {entry[key]}")
    if (
        "wrong" in entry
        and max(max(r["wrong"] or 0, r["inplace_wrong"] or 0) for r in doc["sizes"])
        != entry["wrong"]
    ):
        problems.append(f"#wrong not {entry['wrong']}")
    if "rows" in entry and len(doc["sizes"]) != entry["rows"]:
        problems.append(f"{len(doc['sizes'])} rows, want {entry['rows']}")
    return problems + _must(text, entry.get("must_contain", []))


def results() -> list[tuple[str, list[str], str | None]]:
    """(file, problems, known gap) for every corpus file."""
    exp = expectations()
    out = [(e["file"], check_log(e), e.get("known_gap")) for e in exp["log"]]
    return out + [(e["file"], check_bench(e), e.get("known_gap")) for e in exp["bench"]]


def corpus_lines() -> list[str]:
    """Every line of every corpus file."""
    files = sorted((REAL / "logs").glob("*")) + sorted((REAL / "nccl-tests").glob("*"))
    return [
        line for f in files for line in f.read_text(encoding="utf-8").splitlines() if line.strip()
    ]


def mutate(line: str, rng: random.Random) -> str:
    """One random edit of the kind real pastes suffer: cut, duplicated, deleted or swapped
    characters, a foreign prefix, joined lines, digits replaced."""
    ops = rng.randrange(7)
    i = rng.randrange(len(line) + 1)
    if ops == 0:
        return line[:i]
    if ops == 1:
        return line[:i] + line[i:][rng.randrange(len(line) - i + 1) :]
    if ops == 2:
        return (
            line[:i]
            + rng.choice(
                [
                    "(pid=1) ",
                    "[1,0]<stdout>:",
                    "> ",
                    "[rank0]:",
                    "\x1b[0m",
                    "...",
                    "N/A",
                    "-1",
                    "1e+99",
                    "nan",
                ]
            )
            + line[i:]
        )
    if ops == 3:
        return line + " " + line
    if ops == 4:
        return "".join(rng.choice("0123456789") if c.isdigit() else c for c in line)
    if ops == 5:
        return "".join(rng.choice([c, c.upper(), "", c + c]) for c in line)
    return line.replace(" ", rng.choice(["", "  ", "\t", ":"]))


def parse_all(text: str) -> None:
    """Every parser and the rules over one text (raises on a parser bug)."""
    nccl, torch = parse_nccl_log(text), parse_torch_log(text)
    diagnose(nccl, torch)
    parse_nccl_tests(text)


def main() -> int:
    rows = results()
    ok = 0
    for file, problems, gap in rows:
        mark = "PASS" if not problems and not gap else ("GAP " if gap else "FAIL")
        ok += mark == "PASS"
        print(
            f"{mark} {file}"
            + (f"  — {'; '.join(problems)}" if problems else "")
            + (f"  [known gap: {gap}]" if gap else "")
        )
    share = ok / len(rows)
    print(f"\nread right: {ok} of {len(rows)} ({100 * share:.0f}%), target >= 90%")
    lines, rng = corpus_lines(), random.Random(7)
    start = time.perf_counter()
    for _ in range(100_000):
        parse_all(mutate(rng.choice(lines), rng))
    print(
        f"fuzz: 100,000 mutated corpus lines through every parser in {time.perf_counter() - start:.1f} s, no exception"
    )
    return 0 if share >= 0.9 else 1


if __name__ == "__main__":
    raise SystemExit(main())
