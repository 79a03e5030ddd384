"""The `fabriclens` command. Errors map to exit statuses here, and only here."""

from __future__ import annotations

import os
import sys
from typing import Any

import typer

from fabriclens.cli.advise_cmd import advise
from fabriclens.cli.bench_cmd import bench_app
from fabriclens.cli.capacity_cmd import capacity
from fabriclens.cli.catalog_cmd import catalog
from fabriclens.cli.collective_cmd import collective
from fabriclens.cli.datapath_cmd import datapath
from fabriclens.cli.doctor_cmd import doctor
from fabriclens.cli.fleet_cmd import fleet
from fabriclens.cli.http_cmd import http
from fabriclens.cli.lab_cmd import lab_app
from fabriclens.cli.logs_cmd import logs
from fabriclens.cli.plan_cmd import plan
from fabriclens.cli.search_cmd import search
from fabriclens.cli.transfer_cmd import transfer
from fabriclens.cli.watch_cmd import watch
from fabriclens.errors import ExitStatus, FabricLensError, InputError

COMMANDS: dict[str, Any] = {
    "plan": plan,
    "collective": collective,
    "search": search,
    "advise": advise,
    "capacity": capacity,
    "transfer": transfer,
    "datapath": datapath,
    "doctor": doctor,
    "logs": logs,
    "watch": watch,
    "http": http,
    "fleet": fleet,
    "catalog": catalog,
}
GROUPS: dict[str, typer.Typer] = {"bench": bench_app, "lab": lab_app}
CURRENT_ARGV: list[str] = []  # this run's arguments (bench --spawn hands them to its ranks)


def build_app(only: str | None = None) -> typer.Typer:
    """The command tree; ``only`` registers just that command, because typer builds every
    command's options at start-up and one command is all a run needs."""
    new = typer.Typer(
        name="fabriclens",
        help="See what the network does to your LLM workloads: plan, measure, diagnose.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )

    @new.callback()
    def _group() -> None:
        """See what the network does to your LLM workloads: plan, measure, diagnose.

        Every command takes --catalog FILE: a user catalog (TOML, the built-in tables' schema)
        that adds or replaces GPUs, links, networks, engines and models; without it
        ~/.config/fabriclens/catalog.toml is read when it exists."""

    for name, func in COMMANDS.items():
        if only in (None, name):
            new.command(name)(func)
    for name, group in GROUPS.items():
        if only in (None, name):
            new.add_typer(group, name=name)
    return new


app = build_app()


def _fail(message: str, status: ExitStatus) -> int:
    sys.stderr.write(f"fabriclens: error: {message}\n")
    return int(status)


def _kind(exc: BaseException) -> str:
    """Classify click/typer exceptions by class name: typer vendors its own click."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    for name in ("NoArgsIsHelpError", "UsageError", "Abort", "Exit", "ClickException"):
        if name in names:
            return name
    return ""


def _take_catalog_option(args: list[str]) -> tuple[list[str], str | None]:
    """Remove ``--catalog FILE`` / ``--catalog=FILE`` (any command, before ``--``) from the
    arguments; the file names a user catalog (catalog/load.py)."""
    out: list[str] = []
    found: str | None = None
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            out += args[i:]
            break
        if a == "--catalog":
            if i + 1 >= len(args):
                raise InputError("--catalog needs a file", "give --catalog FILE (a catalog TOML)")
            found = args[i + 1]
            i += 2
            continue
        if a.startswith("--catalog="):
            found = a.split("=", 1)[1]
        else:
            out.append(a)
        i += 1
    return out, found


def run(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit status instead of exiting (for tests)."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        args, catalog_file = _take_catalog_option(args)
    except FabricLensError as exc:
        return _fail(exc.message, exc.exit_status)
    if catalog_file is None:
        return _run(args)
    from fabriclens.catalog.load import USER_CATALOG_ENV, reset_caches

    before = os.environ.get(USER_CATALOG_ENV)
    os.environ[USER_CATALOG_ENV] = catalog_file  # ranks that --spawn starts inherit it
    reset_caches()
    try:
        return _run(args)
    finally:
        if before is None:
            os.environ.pop(USER_CATALOG_ENV, None)
        else:
            os.environ[USER_CATALOG_ENV] = before
        reset_caches()


def _run(args: list[str]) -> int:
    CURRENT_ARGV[:] = args
    first = args[0] if args else None
    chosen = build_app(first) if first in COMMANDS or first in GROUPS else app
    try:
        result = chosen(args=args, standalone_mode=False, prog_name="fabriclens")
    except FabricLensError as exc:
        return _fail(exc.message, exc.exit_status)
    except BrokenPipeError:
        return int(ExitStatus.OK)
    except KeyboardInterrupt:
        return _fail("interrupted", ExitStatus.FAILURE)
    except Exception as exc:
        kind = _kind(exc)
        if kind == "NoArgsIsHelpError":
            return int(ExitStatus.OK)
        if kind == "Exit":
            return int(getattr(exc, "exit_code", 0))
        if kind == "UsageError":
            ctx = getattr(exc, "ctx", None)
            cmd = ctx.command_path if ctx is not None else "fabriclens"
            return _fail(f"{exc.format_message()} — see `{cmd} --help`", ExitStatus.USAGE)  # type: ignore[attr-defined]
        if kind == "Abort":
            return _fail("interrupted", ExitStatus.FAILURE)
        if kind == "ClickException":
            return _fail(exc.format_message(), ExitStatus.USAGE)  # type: ignore[attr-defined]
        if os.environ.get("FABRICLENS_DEBUG"):
            raise
        return _fail(
            f"internal error: {type(exc).__name__}: {exc} (set FABRICLENS_DEBUG=1 for a traceback)",
            ExitStatus.FAILURE,
        )
    return int(result) if isinstance(result, int) else int(ExitStatus.OK)


def main() -> None:
    """Console-script entry point."""
    sys.exit(run())
