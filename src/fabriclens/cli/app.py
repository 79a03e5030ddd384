"""The `fabriclens` command. Errors map to exit statuses here, and only here."""

import gc
import importlib
import inspect
import os
import sys
from typing import Any

import click
import typer
import typer.core

from fabriclens.cli._params import harden
from fabriclens.errors import ExitStatus, FabricLensError, InputError

# Help is click's plain layout. In that layout typer < 0.21 still escapes "[default: ...]" for
# rich whenever rich is installed: it imports rich (~40 ms) and prints a stray backslash before
# each "[". Telling typer that rich is absent keeps both away.
typer.core.HAS_RICH = False

HELP = "See what the network does to your LLM workloads: plan, measure, diagnose."
# command name -> "module:attribute" in fabriclens.cli; a module is imported only when its command
# is built (start-up is most of a `plan`'s wall time: see benchmarks/speed.py). The command modules
# do without `from __future__ import annotations`: typer would evaluate each string annotation
# twice per run, re-creating every typer.Option (~3 ms of a plan).
COMMANDS: dict[str, str] = {
    "plan": "plan_cmd:plan",
    "collective": "collective_cmd:collective",
    "search": "search_cmd:search",
    "advise": "advise_cmd:advise",
    "capacity": "capacity_cmd:capacity",
    "transfer": "transfer_cmd:transfer",
    "datapath": "datapath_cmd:datapath",
    "doctor": "doctor_cmd:doctor",
    "collect": "collect_cmd:collect",
    "logs": "logs_cmd:logs",
    "watch": "watch_cmd:watch",
    "http": "http_cmd:http",
    "fleet": "fleet_cmd:fleet",
    "catalog": "catalog_cmd:catalog",
    "topo": "topo_cmd:topo",
    "simulate": "simulate_cmd:simulate",
    "ui": "ui_cmd:ui",
}
GROUPS: dict[str, str] = {"bench": "bench_cmd:bench_app", "lab": "lab_cmd:lab_app"}


def _load(target: str) -> Any:
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(f"fabriclens.cli.{module}"), attr)


def build_app(only: str | None = None) -> typer.Typer:
    """The command tree; ``only`` registers just that command, because typer builds every
    command's options at start-up and one command is all a run needs. The whole tree (for
    --help, shell completion and --install-completion) carries the completion options.

    Help is click's plain layout, not typer's rich panels: importing rich for help cost ~40 ms,
    and its tables cut long option names (--no-sequence-parallel) at 80 columns."""
    new = typer.Typer(
        name="fabriclens",
        help=HELP,
        no_args_is_help=True,
        add_completion=only is None,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
        suggest_commands=False,  # click 8.5 suggests the close command names itself
    )

    @new.callback()
    def _group() -> None:
        """See what the network does to your LLM workloads: plan, measure, diagnose.

        Every command takes --catalog FILE: a user catalog (TOML, the built-in tables' schema)
        that adds or replaces GPUs, links, networks, engines and models; without it
        ~/.config/fabriclens/catalog.toml is read when it exists."""

    for name, target in COMMANDS.items():
        if only in (None, name):
            new.command(name)(_load(target))
    for name, target in GROUPS.items():
        if only in (None, name):
            new.add_typer(_load(target), name=name)
    return new


def command_of(name: str) -> click.Command:
    """The click command behind ``fabriclens NAME`` (the dashboard reads its options)."""
    group = typer.main.get_command(build_app(name))
    return group.commands[name] if isinstance(group, click.Group) else group


def _restore_argument_help(command: click.Command, args: list[str]) -> None:
    """Put back the help of the positional arguments of the command that ``args`` ask help for.
    click 8.5 gave every parameter a ``help`` of its own, and typer < 0.21 sets an argument's
    help before calling click's constructor, which resets it to None."""
    for word in args:
        if isinstance(command, click.Group) and word in command.commands:
            command = command.commands[word]
    if command.callback is None or not any(isinstance(p, click.Argument) for p in command.params):
        return
    from typer.utils import get_params_from_function

    declared = get_params_from_function(inspect.unwrap(command.callback))
    for param in command.params:
        meta = declared.get(param.name or "")
        if isinstance(param, click.Argument) and meta is not None and not param.help:
            param.help = getattr(meta.default, "help", None)
    # click 8.5 lists documented arguments itself, and typer's own section already holds them
    command.format_arguments = lambda ctx, formatter: None  # type: ignore[method-assign]


def _fail(message: str, status: ExitStatus) -> int:
    from fabriclens.redact import redact_text
    from fabriclens.safe_text import clean_text

    # one line, no URL's secrets, and nothing a terminal would obey (messages quote user input)
    sys.stderr.write(f"fabriclens: error: {clean_text(redact_text(message))}\n")
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
    first = args[0] if args else None
    chosen = build_app(first if first in COMMANDS or first in GROUPS else None)
    try:
        command = typer.main.get_command(chosen)
        harden(command)
        if "--help" in args:
            _restore_argument_help(command, args)
        # obj: this run's arguments, for commands that hand them on (bench --spawn to its ranks),
        # and the entry point itself for the dashboard, which runs commands (no import cycle)
        obj = {"argv": args, "run": run, "command_of": command_of}
        result = command.main(args=args, standalone_mode=False, prog_name="fabriclens", obj=obj)
    except FabricLensError as exc:
        return _fail(exc.message, exc.exit_status)
    except BrokenPipeError:
        return int(ExitStatus.OK)
    except KeyboardInterrupt:
        return _fail("interrupted", ExitStatus.FAILURE)
    except Exception as exc:
        kind = _kind(exc)
        if kind == "NoArgsIsHelpError":  # a group with no command: its help (plain text)
            sys.stdout.write(exc.format_message() + "\n")  # type: ignore[attr-defined]
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
    status = run()
    # Everything still alive goes with the process: frozen, it is spared the collections the
    # interpreter runs on its way out (~10 ms, a tenth of a whole `plan`).
    gc.freeze()
    sys.exit(status)
