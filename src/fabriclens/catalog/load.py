"""Load the TOML catalog lazily (on first use, cached) and look entries up by name or alias."""

from __future__ import annotations

import difflib
import functools
import json
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

from fabriclens.catalog.schema import Engine, Gpu, IntraLink, ModelSpec, Network, _Entry
from fabriclens.errors import InputError

E = TypeVar("E", bound=_Entry)
# beside this module in the installed package (importlib.resources would add ~3 ms of imports to
# every start for zip imports, which a pip-installed package never is)
DATA = Path(__file__).resolve().parent / "data"


def _normalise(name: str) -> str:
    return name.strip().lower().replace("_", "-").replace(" ", "-")


def _read_table(filename: str, key: str, cls: type[E]) -> tuple[E, ...]:
    text = (DATA / filename).read_text("utf-8")
    rows = tomllib.loads(text).get(key, [])
    entries = []
    for row in rows:
        try:
            entries.append(cls(**row))
        except (TypeError, ValueError) as exc:  # a broken built-in catalog is our bug
            raise RuntimeError(
                f"catalog file {filename}, entry {row.get('name')!r}: {exc}"
            ) from exc
    return tuple(entries)


@functools.cache
def gpus() -> tuple[Gpu, ...]:
    """All GPUs in the built-in catalog."""
    return _read_table("gpus.toml", "gpu", Gpu)


@functools.cache
def links() -> tuple[IntraLink, ...]:
    """All intra-node links in the built-in catalog."""
    return _read_table("links.toml", "link", IntraLink)


@functools.cache
def networks() -> tuple[Network, ...]:
    """All networks in the built-in catalog."""
    return _read_table("networks.toml", "network", Network)


@functools.cache
def engines() -> tuple[Engine, ...]:
    """All inference engines in the built-in catalog."""
    return _read_table("engines.toml", "engine", Engine)


@functools.cache
def models() -> tuple[ModelSpec, ...]:
    """All models in the built-in catalog."""
    return _read_table("models.toml", "model", ModelSpec)


def _find(entries: Sequence[E], name: str, what: str, command: str) -> E:
    wanted = _normalise(name)
    index: dict[str, E] = {}
    for entry in entries:
        for key in (entry.name, *entry.aliases, entry.title):
            if key:
                index.setdefault(_normalise(key), entry)
    if wanted in index:
        return index[wanted]
    close = difflib.get_close_matches(wanted, list(index), n=4, cutoff=0.5)
    names = list(dict.fromkeys(index[c].name for c in close))
    hint = f"did you mean {', '.join(names)}?" if names else ""
    fix = f"{hint} `fabriclens catalog {command}` lists them all".strip()
    raise InputError(f"unknown {what} {name!r}", fix)


def find_gpu(name: str) -> Gpu:
    """Look a GPU up by name or alias (case-insensitive)."""
    return _find(gpus(), name, "GPU", "gpus")


def find_link(name: str) -> IntraLink:
    """Look an intra-node link up by name or alias."""
    return _find(links(), name, "intra-node link", "links")


def find_network(name: str) -> Network:
    """Look a network up by name or alias."""
    return _find(networks(), name, "network", "networks")


def find_engine(name: str) -> Engine:
    """Look an inference engine up by name or alias."""
    return _find(engines(), name, "engine", "engines")


def find_model(name_or_path: str) -> ModelSpec:
    """A catalog model by name, or a Hugging Face ``config.json`` given by path."""
    path = Path(name_or_path)
    if name_or_path.endswith(".json") or path.is_file():
        return load_hf_config(path)
    if path.is_dir() and (path / "config.json").is_file():
        return load_hf_config(path / "config.json")
    return _find(models(), name_or_path, "model", "models")


def load_hf_config(path: Path) -> ModelSpec:
    """Read a Hugging Face ``config.json`` into a model spec; clear errors for bad files."""
    from fabriclens.catalog.hf_config import spec_from_hf_config  # only for config.json files

    try:
        data: Any = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        raise InputError(
            f"no such file: {path}", "give a model name or a config.json path"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read {path}: {exc}", "check the path and permissions") from None
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{path} is not valid JSON (line {exc.lineno}: {exc.msg})",
            "give the config.json from the model's Hugging Face repository",
        ) from None
    if not isinstance(data, dict):
        raise InputError(f"{path} holds no JSON object", "give a Hugging Face config.json")
    return spec_from_hf_config(data, name=path.parent.name or path.stem, source=str(path))
