"""The commands the dashboard offers, their form fields (read from the CLI's own options), and
the translation of a query string into the CLI's arguments.

Only planning commands are offered (nothing here touches the host), and never an option that
names a file: the only file a page can hand to a command is one the user uploaded."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

# command -> (page title, the fields shown first; the rest sit under "more options")
PAGES: dict[str, tuple[str, tuple[str, ...]]] = {
    "plan": (
        "Plan",
        ("model", "workload", "gpu", "gpus", "network", "nics-per-node", "tp", "pp", "dp", "zero"),
    ),
    "search": ("Search", ("model", "workload", "gpu", "gpus", "network")),
    "capacity": ("Capacity", ("model", "users", "gpu", "prompt-tokens", "output-tokens")),
    "transfer": ("Transfer", ("size", "link", "protocol", "hosts")),
    "datapath": ("Datapath", ("model", "gpu", "gpus", "storage-network", "storage-bw")),
    "topo": ("Topo", ("gpus", "network", "topology", "oversubscription")),
    "simulate": ("Simulate", ("op", "size", "gpus", "network", "placement", "routing")),
}
# options a page never passes: output formats and anything that writes or reads a file
NEVER = {"json", "json_out", "explain", "markdown", "plot", "help", "fabric", "catalog"}
# a model named in a form: a catalog name or an uploaded config.json ("upload:<token>")
# a catalog name or an Ollama tag (llama3.1:8b); no "/": a page names no path, so Hugging Face ids
# (owner/name) are refused here and a config.json is uploaded instead
MODEL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+:-]{0,99}$")
UPLOAD = re.compile(r"^upload:([0-9a-f]{32})$")
MODEL_PARAMS = {"model", "plan_model"}


class FormError(ValueError):
    """A query the dashboard refuses before running anything (one line for the page)."""


@dataclass(frozen=True)
class Field:
    """One form field: a CLI option or argument."""

    key: str  # the query key: the long option without dashes, or the argument's name
    label: str
    help: str
    kind: str  # text | int | float | bool | flag | choice
    default: str  # as the CLI shows it ("" when none)
    multiple: bool
    argument: bool
    choices: tuple[str, ...]
    opt: str  # "--gpus" (empty for an argument)
    off_opt: str  # "--no-sequence-parallel" for a --x/--no-x switch


def _kind(param: click.Parameter) -> str:
    t = param.type
    if isinstance(param, click.Option) and param.is_flag and not param.secondary_opts:
        return "flag"
    if isinstance(t, click.types.BoolParamType):
        return "bool"
    if isinstance(t, click.Choice):
        return "choice"
    if isinstance(t, click.types.IntParamType):
        return "int"
    if isinstance(t, click.types.FloatParamType):
        return "float"
    return "text"


def fields_of(command: click.Command) -> list[Field]:
    """The form fields of a CLI command: its options and arguments, less files and formats."""
    out: list[Field] = []
    for p in command.params:
        if p.name in NEVER or isinstance(p.type, click.Path | click.File):
            continue
        if isinstance(p, click.Option) and p.hidden:
            continue
        argument = isinstance(p, click.Argument)
        longs = [o for o in p.opts if o.startswith("--")]
        key = (p.name or "") if argument else (longs[0][2:] if longs else p.opts[0].lstrip("-"))
        default = p.default
        shown = "" if default is None or callable(default) or default == () else str(default)
        if isinstance(default, bool):
            shown = "on" if default else "off"
        out.append(Field(
            key=key.replace("_", "-") if argument else key,
            label=key.replace("-", " ").replace("_", " "),
            help=(getattr(p, "help", None) or "").strip(),
            kind=_kind(p),
            default=shown,
            multiple=bool(getattr(p, "multiple", False)),
            argument=argument,
            choices=tuple(getattr(p.type, "choices", ()) or ()),
            opt="" if argument else (longs[0] if longs else p.opts[0]),
            off_opt=next((o for o in getattr(p, "secondary_opts", []) if o.startswith("--")), ""),
        ))  # fmt: skip
    return out


Query = Mapping[str, Sequence[str]]


def build_argv(
    command: str, fields: list[Field], query: Query, uploads: Mapping[str, Path]
) -> list[str]:
    """The CLI arguments for a form's query (``--json`` last). Unknown keys, file options and
    model names that are not catalog names or uploads are refused: a page reads no path."""
    known = {f.key: f for f in fields}
    unknown = sorted(k for k in query if k not in known and k not in ("view",))
    if unknown:
        raise FormError(f"{command} has no field {unknown[0]!r}")
    positional: list[str] = []
    options: list[str] = []
    for f in fields:
        values = [v.strip() for v in query.get(f.key, ()) if v.strip()]
        if not values:
            continue
        if f.key.replace("-", "_") in MODEL_PARAMS:
            values = [_model_value(v, uploads) for v in values]
        if f.argument:
            positional += values if f.multiple else values[:1]
        elif f.kind == "flag":
            if values[-1].lower() in ("on", "true", "1", "yes"):
                options.append(f.opt)
        elif f.kind == "bool":
            choice = values[-1].lower()
            if choice in ("on", "true", "1", "yes"):
                options.append(f.opt)
            elif choice in ("off", "false", "0", "no") and f.off_opt:
                options.append(f.off_opt)
        elif f.multiple:
            options += [f.opt, ",".join(values)]
        else:
            options += [f.opt, values[-1]]
    return [command, *positional, *options, "--json"]


def _model_value(value: str, uploads: Mapping[str, Path]) -> str:
    match = UPLOAD.match(value)
    if match:
        path = uploads.get(match.group(1))
        if path is None:
            raise FormError(
                "that uploaded config.json is gone (the server restarted): upload it again"
            )
        return str(path)
    if not MODEL_NAME.match(value) or value.endswith(".json"):
        hub = value.count("/") == 1 and all(value.split("/"))
        raise FormError(
            f"model {value[:60]!r} is not a catalog name: pick one, or upload a config.json"
            + (f" (this Hugging Face model's is at https://huggingface.co/{value[:120]}/resolve/main/config.json)"
               if hub else "")
        )  # fmt: skip
    return value


def cli_line(argv: list[str], uploads: Mapping[str, Path], names: Mapping[str, str]) -> str:
    """The command to type for the same document (an upload shows as its file's name)."""
    shown = []
    by_path = {str(p): names.get(t, "config.json") for t, p in uploads.items()}
    for a in argv:
        shown.append(by_path.get(a, a))
    return "fabriclens " + shlex.join(shown)


@dataclass(frozen=True)
class Outcome:
    status: int
    stdout: str
    stderr: str

    @property
    def error(self) -> str:
        """The CLI's one error line, without its "fabriclens: error: " prefix."""
        return (
            self.stderr.strip().splitlines()[-1].removeprefix("fabriclens: error: ")
            if self.stderr.strip()
            else ""
        )


class Runner:
    """Runs CLI commands in this process and captures what they print (one at a time: the
    CLI writes to sys.stdout)."""

    def __init__(self, run: Callable[[list[str]], int]) -> None:
        self._run = run
        self._lock = threading.Lock()

    def __call__(self, argv: list[str]) -> Outcome:
        out, err = io.StringIO(), io.StringIO()
        with self._lock, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = self._run(argv)
        return Outcome(status, out.getvalue(), err.getvalue())


def parse_doc(outcome: Outcome) -> Any:
    import json

    return json.loads(outcome.stdout)
