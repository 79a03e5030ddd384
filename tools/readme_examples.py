"""The README's example commands, run as a user would run them, beside the output it shows.

Every ```` ``` ```` block of README.md whose lines start with ``$ fabriclens`` (or ``$ make demo``)
is an example: the command, then the output it printed. The offline ones — planning commands and
commands that read the files under examples/ — must print exactly what the README shows
(trailing spaces aside): their output depends on the repository alone. Commands that probe this
host, start servers, need root or a network (doctor, watch, http, bench net/serve/collective/p2p,
lab) are listed as host-dependent and not run.

    python tools/readme_examples.py           # check; exit 1 on any difference
    python tools/readme_examples.py --write   # rewrite the README's outputs from the commands

``--root DIR`` runs the examples in another copy of the repository (its src/ first on the path).
"""

from __future__ import annotations

import argparse
import difflib
import glob
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# subcommands whose output depends on the repository alone (bench import, fleet and logs read
# files under examples/); the tuple is (first word, second word or "")
OFFLINE = {
    ("plan", ""), ("collective", ""), ("catalog", ""), ("search", ""), ("advise", ""),
    ("datapath", ""), ("capacity", ""), ("transfer", ""), ("fleet", ""), ("logs", ""),
    ("bench", "import"), ("topo", ""), ("simulate", ""), ("doctor", "--from"),
}  # fmt: skip


# figures measured while the command runs (its own run time), masked before comparing
MEASURED = [re.compile(r"(?<=evaluated in )[0-9.]+ s")]


def masked(lines: list[str]) -> list[str]:
    """Lines with their measured figures replaced by ``<measured>``."""
    out = []
    for ln in lines:
        for pattern in MEASURED:
            ln = pattern.sub("<measured>", ln)
        out.append(ln)
    return out


def expand(words: list[str], root: Path) -> list[str]:
    """Shell-style wildcards expanded in ``root`` (sorted, as a shell does); no shell is run."""
    out: list[str] = []
    for w in words:
        hits = sorted(glob.glob(w, root_dir=root)) if any(c in w for c in "*?[") else []
        out += hits or [w]
    return out


@dataclass
class Example:
    """One ``$ command`` of the README and the output lines it shows under it."""

    line: int  # 0-based index of the ``$`` line in README.md
    end: int  # index one past its last output line
    command: str
    shown: list[str]

    @property
    def argv(self) -> list[str]:
        """The fabriclens arguments (after ``fabriclens``)."""
        words = shlex.split(self.command)
        if words[:2] == ["make", "demo"]:
            return demo_argv()
        return words[1:]

    @property
    def offline(self) -> bool:
        """True when the output depends on the repository alone."""
        words = shlex.split(self.command)
        if words[:2] == ["make", "demo"]:
            return True
        if words[0] != "fabriclens" or any(w in ("|", ">", "&", "&&") for w in words):
            return False
        first, second = words[1], words[2] if len(words) > 2 else ""
        return (first, "") in OFFLINE or (first, second) in OFFLINE


def demo_argv() -> list[str]:
    """The `make demo` target's fabriclens arguments, read from the Makefile."""
    text = (REPO / "Makefile").read_text(encoding="utf-8").replace("\\\n", " ")
    m = re.search(r"^demo:.*\n\t\$\(BIN\)/fabriclens (.+)$", text, re.M)
    if m is None:
        raise SystemExit("Makefile: no `demo:` target running $(BIN)/fabriclens")
    return shlex.split(m.group(1))


def examples(readme: list[str]) -> list[Example]:
    """Every ``$ fabriclens`` / ``$ make demo`` line inside a fenced block, with its output."""
    out: list[Example] = []
    in_block = False
    i = 0
    while i < len(readme):
        line = readme[i]
        if line.startswith("```"):
            in_block = not in_block
            i += 1
            continue
        if in_block and (line.startswith("$ fabriclens ") or line.strip() == "$ make demo"):
            start = i
            command = line[2:]
            while command.endswith("\\"):  # a command continued on the next line
                i += 1
                command = command[:-1] + " " + readme[i].strip()
            i += 1
            shown_from = i
            while i < len(readme) and not readme[i].startswith(("```", "$ ")):
                i += 1
            out.append(Example(start, i, command.strip(), readme[shown_from:i]))
            continue
        i += 1
    return out


def run_example(example: Example, root: Path) -> tuple[int, list[str]]:
    """Run one example in ``root``; its exit status and output lines (stdout, then stderr)."""
    env = dict(os.environ, PYTHONPATH=str(root / "src"), COLUMNS="150", NO_COLOR="1")
    env.pop("FORCE_COLOR", None)
    proc = subprocess.run(
        [sys.executable, "-m", "fabriclens", *expand(example.argv, root)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    text = proc.stdout + proc.stderr
    lines = [ln.rstrip() for ln in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return proc.returncode, lines


def normalised(lines: list[str]) -> list[str]:
    """Lines without trailing spaces or trailing blank lines."""
    out = [ln.rstrip() for ln in lines]
    while out and not out[-1]:
        out.pop()
    return out


def check(root: Path) -> list[str]:
    """Problems found: one string per example that failed or printed something else."""
    readme = (root / "README.md").read_text(encoding="utf-8").splitlines()
    problems: list[str] = []
    for ex in (e for e in examples(readme) if e.offline):
        status, printed = run_example(ex, root)
        if status not in (0, 1, 2):
            problems.append(f"README line {ex.line + 1}: `{ex.command}` exited {status}")
            continue
        if masked(printed) != masked(normalised(ex.shown)):
            diff = "\n".join(
                difflib.unified_diff(
                    normalised(ex.shown), printed, "README", "printed", lineterm=""
                )
            )
            problems.append(f"README line {ex.line + 1}: `{ex.command}` prints otherwise:\n{diff}")
    return problems


ACCURACY = re.compile(r"(<!-- accuracy:start[^\n]*-->\n)(.*?)(<!-- accuracy:end -->)", re.S)


def accuracy_block(root: Path) -> str:
    """The README's accuracy block as benchmarks/accuracy.py prints it for ``root``."""
    env = dict(os.environ, PYTHONPATH=str(root / "src"))
    proc = subprocess.run(
        [sys.executable, str(root / "benchmarks" / "accuracy.py"), "--readme"],
        cwd=root, env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    if proc.returncode:
        raise SystemExit(f"benchmarks/accuracy.py --readme failed: {proc.stderr[-2000:]}")
    return proc.stdout


def check_accuracy(root: Path) -> list[str]:
    """A problem when the README's accuracy block is not what the benchmark prints now."""
    text = (root / "README.md").read_text(encoding="utf-8")
    m = ACCURACY.search(text)
    if m is None:
        return ["README: no <!-- accuracy:start --> ... <!-- accuracy:end --> block"]
    if m.group(2) != accuracy_block(root):
        return ["README: the accuracy tables differ from benchmarks/accuracy.py --readme"]
    return []


def write(root: Path) -> int:
    """Rewrite each offline example's output in README.md; the number of examples changed."""
    path = root / "README.md"
    readme = path.read_text(encoding="utf-8").splitlines()
    changed = 0
    for ex in reversed([e for e in examples(readme) if e.offline]):
        _, printed = run_example(ex, root)
        if masked(printed) != masked(normalised(ex.shown)):
            shown_from = ex.end - len(ex.shown)
            readme[shown_from : ex.end] = printed
            changed += 1
    text = "\n".join(readme) + "\n"
    block = accuracy_block(root)
    m = ACCURACY.search(text)
    if m is not None and m.group(2) != block:
        text = text[: m.start(2)] + block + text[m.end(2) :]
        changed += 1
    path.write_text(text, encoding="utf-8")
    return changed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="rewrite the README's outputs")
    parser.add_argument("--root", type=Path, default=REPO, help="the repository copy to run in")
    args = parser.parse_args()
    if args.write:
        print(f"{write(args.root)} example output(s) rewritten")
        return 0
    problems = check(args.root) + check_accuracy(args.root)
    for p in problems:
        print(p, end="\n\n")
    readme = (args.root / "README.md").read_text(encoding="utf-8").splitlines()
    offline = sum(e.offline for e in examples(readme))
    print(f"{offline - len(problems)} of {offline} offline README examples print what it shows")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
