"""Printing for the CLI: JSON to stdout, rich text to the terminal, errors as one line."""

from __future__ import annotations

import json
import math
import sys
from typing import Any


def finite(doc: Any) -> Any:
    """``doc`` with every NaN and infinity replaced by None, so that it is strict JSON."""
    if isinstance(doc, float):
        return doc if math.isfinite(doc) else None
    if isinstance(doc, dict):
        return {k: finite(v) for k, v in doc.items()}
    if isinstance(doc, list | tuple):
        return [finite(v) for v in doc]
    return doc


def print_json(doc: Any) -> None:
    """Write a JSON document to stdout: strict JSON (a NaN or infinity becomes null)."""
    sys.stdout.write(json.dumps(finite(doc), indent=2, sort_keys=False, allow_nan=False) + "\n")


def print_rich(renderables: list[Any]) -> None:
    """Print rich renderables to stdout (colour only on a terminal)."""
    from rich.console import Console

    # markup off: the renderers use none, and names from the host or a file (an interface
    # called "[/x]") must print as they are
    console = Console(highlight=False, markup=False)
    if not console.is_terminal:  # pipes and files: wide enough for the tables, no wrapping
        console = Console(highlight=False, markup=False, width=150)
    for r in renderables:
        console.print(r)


def check_formats(json_out: bool, markdown: bool) -> None:
    """Refuse --json with --markdown; called before a command does any work (doctor may sleep)."""
    if json_out and markdown:
        from fabriclens.errors import InputError

        raise InputError("--json and --markdown were both given", "choose one output format")


def emit(doc: Any, json_out: bool, renderer: str, markdown: bool = False) -> None:
    """Print a command's document as JSON, as Markdown through
    ``fabriclens.report.markdown.<name>_markdown``, or through ``fabriclens.report.text.<renderer>``
    (``module.function`` names another module of ``fabriclens.report``; imported only then: rich
    costs start-up time that --json does not need). Commands that take --markdown call
    ``check_formats`` first."""
    if json_out:
        print_json(doc)  # JSON escapes control characters itself
        return
    from fabriclens.safe_text import clean_doc

    doc = clean_doc(doc)  # names and lines from files and hosts: no terminal escapes
    if markdown:
        from fabriclens.report import markdown as md

        sys.stdout.write(getattr(md, renderer.replace("_renderables", "_markdown"))(doc))
        return
    import importlib

    module, _, func = renderer.rpartition(".")
    print_rich(getattr(importlib.import_module(f"fabriclens.report.{module or 'text'}"), func)(doc))


def split_list(values: list[str] | None) -> list[str]:
    """Accept repeated flags and comma-separated lists alike."""
    out: list[str] = []
    for v in values or []:
        out += [x.strip() for x in v.split(",") if x.strip()]
    return out


def parse_headers(items: list[str] | None) -> dict[str, str]:
    """Repeated ``--header 'Name: value'`` flags as a dict; one clear error for a bad one."""
    from fabriclens.errors import InputError

    headers: dict[str, str] = {}
    for item in items or []:
        name, sep, value = item.partition(":")
        shown = name.strip().split()[0][:40] if name.strip() else ""  # never the value: a secret
        if not sep or not name.strip():
            raise InputError(
                f"--header {shown!r}... is not 'Name: value'",
                "write it like --header 'Authorization: Bearer X'",
            )
        if any(c in item for c in "\r\n\0"):
            raise InputError(
                f"--header {shown!r} holds a line break (CR/LF) or NUL, which would inject headers",
                "give each header as one line, one --header per header",
            )
        if any(c in name.strip() for c in " \t"):
            raise InputError(
                f"--header name {shown!r}... holds a space", "write it like --header 'Name: value'"
            )
        headers[name.strip()] = value.strip()
    return headers
