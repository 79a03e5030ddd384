"""Start-up cost, checked by what a run imports (deterministic), never by timing: a single
`plan` pays for neither numpy, rich nor the other commands; `--help` for neither rich nor the
model. benchmarks/speed.py times the whole process."""

from __future__ import annotations

import subprocess
import sys


def _imported_by(argv: list[str], prefixes: tuple[str, ...]) -> list[str]:
    """The modules under ``prefixes`` that a fresh interpreter has imported after ``run(argv)``."""
    code = (
        "import io, sys, contextlib\n"
        "from fabriclens.cli.app import run\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert run({argv!r}) == 0\n"
        f"prefixes = {prefixes!r}\n"
        "print(','.join(sorted(m for m in sys.modules\n"
        "                      if any(m == p or m.startswith(p + '.') for p in prefixes))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    return [m for m in out.stdout.strip().split(",") if m]


def test_plan_json_imports_neither_numpy_nor_rich() -> None:
    argv = ["plan", "llama-3.1-8b", "--gpus", "16", "--network", "ndr-ib", "--json"]
    assert _imported_by(argv, ("numpy", "rich")) == []


def test_plan_json_imports_no_other_command() -> None:
    argv = ["plan", "llama-3.1-8b", "--gpus", "16", "--network", "100g-roce", "--json"]
    cli = _imported_by(argv, ("fabriclens.cli", "fabriclens.bench", "fabriclens.measure"))
    assert set(cli) <= {"fabriclens.cli", "fabriclens.cli.app", "fabriclens.cli.plan_cmd",
                        "fabriclens.cli._output", "fabriclens.cli._model_arg", "fabriclens.cli._params"}, cli  # fmt: skip


def test_plan_json_leaves_the_config_json_reader_alone() -> None:
    argv = ["plan", "llama-3.1-8b", "--gpus", "16", "--json"]
    assert _imported_by(argv, ("fabriclens.catalog.hf_config",)) == []


def test_help_imports_neither_rich_nor_the_model() -> None:
    heavy = ("rich", "typer.rich_utils", "numpy", "fabriclens.model", "fabriclens.catalog",
             "fabriclens.measure", "fabriclens.bench", "fabriclens.plan")  # fmt: skip
    assert _imported_by(["--help"], heavy) == []
    assert _imported_by(["plan", "--help"], heavy) == []


def test_the_process_exits_without_collecting_what_it_leaves() -> None:
    # the interpreter's collections at exit cost ~10 ms of a plan; main() freezes the heap first
    code = (
        "import atexit, gc, sys\n"
        "atexit.register(lambda: sys.stderr.write(f'frozen={gc.get_freeze_count()}'))\n"
        "from fabriclens.cli.app import main\n"
        "sys.argv = ['fabriclens', 'plan', 'llama-3.1-8b', '--gpus', '16', '--json']\n"
        "main()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0
    assert int(out.stderr.rpartition("frozen=")[2]) > 10_000


def test_command_signatures_are_objects_not_strings() -> None:
    # typer evaluates string annotations (`from __future__ import annotations`) twice on every
    # run, re-creating each typer.Option: ~3 ms of a plan's start-up
    import inspect

    import click
    import typer

    from fabriclens.cli.app import build_app

    def walk(cmd: click.Command) -> list[click.Command]:
        subs = cmd.commands.values() if isinstance(cmd, click.Group) else []
        return [cmd, *(c for sub in subs for c in walk(sub))]

    commands = [c for c in walk(typer.main.get_command(build_app())) if c.callback is not None]
    assert len(commands) > 20
    stringly = {c.name: name for c in commands
                for name, a in inspect.get_annotations(inspect.unwrap(c.callback)).items()  # type: ignore[arg-type]
                if isinstance(a, str)}  # fmt: skip
    assert stringly == {}
