"""The repository is the product: a copy of it alone, in an empty folder with nothing beside it,
collects every test and runs every offline example of the README exactly as the README shows."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from readme_examples import check, check_accuracy, examples

REPO = Path(__file__).resolve().parent.parent
IGNORED = {".venv", ".git", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache",
           ".hypothesis", "out", "dist", "build"}  # fmt: skip


def _files() -> list[Path]:
    """What a clone holds: tracked and not-ignored files (git), else the tree less build folders."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=REPO, capture_output=True, timeout=30, check=True,
        )  # fmt: skip
        return [Path(p) for p in out.stdout.decode().split("\0") if p and (REPO / p).is_file()]
    except (OSError, subprocess.SubprocessError):
        return [
            p.relative_to(REPO)
            for p in REPO.rglob("*")
            if p.is_file() and not IGNORED & set(p.relative_to(REPO).parts)
        ]


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repository's files alone, in a fresh empty folder: nothing stands beside the copy."""
    root = tmp_path_factory.mktemp("clone") / "fabriclens"
    for rel in _files():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, root / rel)
    assert [p.name for p in root.parent.iterdir()] == [root.name]
    return root


def test_the_copy_collects_every_test(copy: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(copy / "src"))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-o", "addopts=", "-p", "no:cacheprovider"],
        cwd=copy, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    m = re.search(r"(\d+) tests? collected", proc.stdout)
    assert m and int(m.group(1)) > 100, proc.stdout[-2000:]
    assert "error" not in proc.stdout.lower().split("collected")[-1], proc.stdout[-2000:]


def test_the_readme_examples_run_as_shown_in_the_copy(copy: Path) -> None:
    """Source of truth: the README itself. Tolerance: exact, apart from trailing spaces and the
    figures a command measures while it runs (tools/readme_examples.py MEASURED)."""
    readme = (copy / "README.md").read_text(encoding="utf-8").splitlines()
    offline = [e for e in examples(readme) if e.offline]
    assert len(offline) >= 15  # plan, collective, catalog, search, advise, ... bench import, logs
    problems = check(copy) + check_accuracy(copy)
    assert problems == [], "\n\n".join(problems) + "\n(python tools/readme_examples.py --write)"


def test_the_readme_names_only_files_the_repository_has() -> None:
    """Every example file an offline README example reads exists in the repository."""
    readme = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    for ex in (e for e in examples(readme) if e.offline):
        for word in ex.argv:
            if "/" in word and not word.startswith("-") and "*" not in word:
                assert (REPO / word).exists(), f"README line {ex.line + 1} reads {word}"


def test_nothing_reads_outside_the_repository() -> None:
    """No source, test, benchmark, tool, Makefile or CI line reaches for the data folder the
    development machines keep beside the checkout, or above the repository."""
    pattern = re.compile(r"\.\./shared|[\"']shared[\"']\s*/|parent\.parent\.parent\.parent")
    here = Path(__file__).resolve()
    offenders = []
    for top in ("src", "tests", "benchmarks", "tools", "examples", ".ci", "Makefile"):
        base = REPO / top
        paths = [base] if base.is_file() else [p for p in base.rglob("*") if p.is_file()]
        for p in paths:
            if p.resolve() == here or p.suffix not in ("", ".py", ".toml", ".sh", ".cfg"):
                continue
            for n, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines()):
                if pattern.search(line):
                    offenders.append(f"{p.relative_to(REPO)}:{n + 1}: {line.strip()}")
    assert offenders == []
