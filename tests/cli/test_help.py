"""`--help` of every command and group: readable at 80 columns, and it says what to type."""

from __future__ import annotations

import re
from collections.abc import Iterator

import click
import pytest
import typer

from fabriclens.cli.app import build_app, run


def _paths(
    cmd: click.Command, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    yield path, cmd
    if isinstance(cmd, click.Group):
        for name, sub in cmd.commands.items():
            yield from _paths(sub, (*path, name))


COMMANDS = dict(_paths(typer.main.get_command(build_app())))


@pytest.mark.parametrize("path", list(COMMANDS), ids=lambda p: " ".join(p) or "fabriclens")
def test_help_at_80_columns_shows_every_option_name_whole(
    path: tuple[str, ...], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert run([*path, "--help"]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80
    names = [n for p in COMMANDS[path].params if isinstance(p, click.Option) and not p.hidden
             for n in (*p.opts, *p.secondary_opts)] + ["--help"]  # fmt: skip
    for name in names:
        assert re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", out), f"{name} cut or missing"


def test_catalog_help_lists_the_kinds(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["catalog", "--help"]) == 0
    out = capsys.readouterr().out
    for kind in ("gpus", "links", "networks", "models", "engines", "switches"):
        assert re.search(rf"\b{kind}\b", out), f"{kind} missing from catalog --help"


def test_top_level_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["--help"]) == 0
    out = capsys.readouterr().out
    for name in COMMANDS[()].commands:  # type: ignore[attr-defined]
        assert re.search(rf"^[\s│]*{name}\s", out, re.M), f"{name} missing"


def test_help_explains_positional_arguments_once(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["plan", "--help"]) == 0
    out = capsys.readouterr().out
    assert out.count("Catalog model name, or a path to a Hugging Face config.json") == 1
    assert run(["bench", "import", "--help"]) == 0
    assert capsys.readouterr().out.count("(all_reduce_perf ... > FILE)") == 1


@pytest.mark.parametrize("group", [[], ["bench"], ["lab"]], ids=lambda g: " ".join(g) or "none")
def test_a_group_without_a_command_prints_its_help(
    group: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(group) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"Usage: fabriclens {' '.join(group)}".rstrip() + " [OPTIONS] COMMAND")
    for name in COMMANDS[tuple(group)].commands:  # type: ignore[attr-defined]
        assert re.search(rf"^\s+{name}\s", out, re.M), f"{name} missing"


def test_a_mistyped_command_gets_one_suggestion(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["plna"]) == 2
    err = capsys.readouterr().err
    assert err.count("Did you mean 'plan'?") == 1 and err.count("\n") == 1
