"""Load the TOML catalog lazily (on first use, cached) and look entries up by name or alias.

A user catalog extends the built-in one with the same tables and the same checks: the file named
by ``FABRICLENS_CATALOG`` (the CLI's ``--catalog FILE`` sets it), else
``$XDG_CONFIG_HOME/fabriclens/catalog.toml`` (``~/.config/...``) when it exists. An entry whose
name (or alias) matches a built-in one replaces it; any other is added.

An entry may name another of its table as ``base = "name"``: it takes every field of that entry
but the name, aliases, title and notes (all of them when it replaces the entry of its own name)
and sets only what differs (an export variant such as the H800 states its NVLink; a user's
power-capped H100 states its clocks). A base is looked up among the user's entries first, then
the built-in ones.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import os
import re
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

from fabriclens.catalog.schema import (
    Engine,
    Framework,
    Gpu,
    Host,
    IntraLink,
    ModelSpec,
    Network,
    Switch,
    _Entry,
    split_release,
    valid_release,
    with_memory,
)
from fabriclens.errors import InputError
from fabriclens.inputs import read_bytes

E = TypeVar("E", bound=_Entry)
# beside this module in the installed package (importlib.resources would add ~3 ms of imports to
# every start for zip imports, which a pip-installed package never is)
DATA = Path(__file__).resolve().parent / "data"


def _normalise(name: str) -> str:
    return name.strip().lower().replace("_", "-").replace(" ", "-")


_WORD_NUMBER = re.compile(r"(?<=[a-z])-(?=\d)")


USER_CATALOG_ENV = "FABRICLENS_CATALOG"
USER_CATALOG_MAX_BYTES = 4 << 20  # a catalog is a few kB; refuse to read a huge or endless file
ENTRY_CLASSES: dict[str, type[_Entry]] = {"gpus": Gpu, "links": IntraLink, "networks": Network,
                                          "engines": Engine, "models": ModelSpec, "switches": Switch,
                                          "frameworks": Framework, "hosts": Host}  # fmt: skip
TABLES = {"gpus": "gpu", "links": "link", "networks": "network", "engines": "engine", "models": "model", "switches": "switch", "frameworks": "framework", "hosts": "host"}  # fmt: skip


# what an entry never takes from its base: its identity
NOT_INHERITED = ("name", "aliases", "title", "notes")
# bases an entry may build on, one on another (a catalog is read on every start: bounded work)
MAX_BASE_DEPTH = 8


class BaseError(ValueError):
    """An entry's ``base`` names no entry of its table, or bases form a loop."""


def _index(rows: Sequence[Any]) -> dict[str, dict[str, Any]]:
    """Raw rows by normalised name and alias (the first one wins, as lookups do)."""
    index: dict[str, dict[str, Any]] = {}
    for row in rows:
        if isinstance(row, dict):
            for key in (row.get("name"), *(row.get("aliases") or ())):
                if isinstance(key, str) and key:
                    index.setdefault(_normalise(key), row)
    return index


def _resolve_base(
    row: dict[str, Any], lookups: Sequence[dict[str, dict[str, Any]]], seen: tuple[str, ...] = ()
) -> dict[str, Any]:
    """``row`` with the fields of the entry its ``base`` names filled in (recursively)."""
    if "base" not in row:
        return row
    base = row["base"]
    if not isinstance(base, str) or not base:
        raise BaseError("base must be the name of another entry of the same table")
    key = _normalise(base)
    if key in seen:
        raise BaseError(f"base {base!r} leads back to itself ({' -> '.join((*seen, key))})")
    if len(seen) >= MAX_BASE_DEPTH:
        raise BaseError(f"more than {MAX_BASE_DEPTH} bases in a chain; build on the last one")
    # a user entry may override the built-in entry of its own name and build on it
    parent = next((lk[key] for lk in lookups if key in lk and lk[key] is not row), None)
    if parent is None:
        raise BaseError(f"base {base!r} is no entry of this table")
    # an entry built on the one it replaces keeps that one's identity unless it sets its own
    keep = () if _normalise(str(row.get("name", ""))) == key else NOT_INHERITED
    merged = {
        k: v for k, v in _resolve_base(parent, lookups, (*seen, key)).items() if k not in keep
    }
    merged.update({k: v for k, v in row.items() if k != "base"})
    return merged


@functools.cache
def _builtin_rows(filename: str, key: str) -> tuple[dict[str, Any], ...]:
    text = (DATA / filename).read_text("utf-8")
    return tuple(tomllib.loads(text).get(key, []))


def _read_table(filename: str, key: str, cls: type[E]) -> tuple[E, ...]:
    rows = _builtin_rows(filename, key)
    lookup = _index(rows)
    entries = []
    for row in rows:
        try:
            entries.append(cls(**_resolve_base(row, (lookup,))))
        except (TypeError, ValueError) as exc:  # a broken built-in catalog is our bug
            raise RuntimeError(
                f"catalog file {filename}, entry {row.get('name')!r}: {exc}"
            ) from exc
    return tuple(entries)


def user_catalog_path() -> Path | None:
    """The user catalog in force: ``FABRICLENS_CATALOG`` (must exist), else the default file
    under the XDG config folder when it exists, else None."""
    named = os.environ.get(USER_CATALOG_ENV)
    if named:
        return Path(named).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    default = Path(base) / "fabriclens" / "catalog.toml"
    return default if default.is_file() else None


@functools.cache
def _user_doc() -> tuple[Path | None, dict[str, Any]]:
    """The user catalog's path and parsed tables (empty without one); InputError when unusable."""
    path = user_catalog_path()
    if path is None:
        return None, {}
    fix = "fix the file or unset FABRICLENS_CATALOG / drop --catalog"
    try:
        raw = read_bytes(path, "user catalog", USER_CATALOG_MAX_BYTES)
    except InputError as exc:
        raise InputError(exc.problem, fix) from None
    try:
        doc = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise InputError(f"user catalog {path} is not UTF-8 text", fix) from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"user catalog {path} is not valid TOML ({exc})", fix) from None
    unknown = sorted(set(doc) - set(TABLES.values()))
    if unknown:
        raise InputError(
            f"user catalog {path}: unknown table(s) {', '.join(unknown)}",
            f"use [[{']], [['.join(TABLES.values())}]]",
        )
    return path, doc


def user_entries(kind: str) -> tuple[Any, ...]:
    """The user catalog's entries of one kind (``gpus``, ``links``, ...), checked like the
    built-in ones; InputError naming the file, the entry and the field otherwise."""
    path, doc = _user_doc()
    cls = ENTRY_CLASSES[kind]
    rows = doc.get(TABLES[kind], [])
    if not isinstance(rows, list):
        raise InputError(f"user catalog {path}: {TABLES[kind]} must be an array of tables",
                         f"write each entry as [[{TABLES[kind]}]]")  # fmt: skip
    entries = []
    lookups = (_index(rows), _index(_builtin_rows(f"{kind}.toml", TABLES[kind])))
    for n, row in enumerate(rows, 1):
        if not isinstance(row, dict):
            raise InputError(f"user catalog {path}: {TABLES[kind]} entry {n} is not a table",
                             f"write each entry as [[{TABLES[kind]}]]")  # fmt: skip
        try:
            entries.append(cls(**_resolve_base(row, lookups)))
        except BaseError as exc:
            raise InputError(f"user catalog {path}, {TABLES[kind]} {row.get('name', n)!r}: {exc}",
                             f"`fabriclens catalog {kind}` lists the entries a base can name") from None  # fmt: skip
        except TypeError as exc:
            raise InputError(f"user catalog {path}, {TABLES[kind]} {row.get('name', n)!r}: {exc}",
                             f"`fabriclens catalog {kind} --json` shows the fields an entry has") from None  # fmt: skip
        except ValueError as exc:
            raise InputError(f"user catalog {path}, {TABLES[kind]} {row.get('name', n)!r}: {exc}",
                             "fix that field") from None  # fmt: skip
    return tuple(entries)


def _merged(kind: str, filename: str, cls: type[E]) -> tuple[E, ...]:
    """The built-in entries with the user catalog's on top: same name or alias replaces."""
    builtin = _read_table(filename, TABLES[kind], cls)
    user: tuple[E, ...] = user_entries(kind)
    if not user:
        return builtin
    replaced = {_normalise(k) for u in user for k in (u.name, *u.aliases) if k}
    kept = [b for b in builtin if _normalise(b.name) not in replaced]
    return (*kept, *user)


@functools.cache
def gpus() -> tuple[Gpu, ...]:
    """All GPUs: the built-in catalog and the user's."""
    return _merged("gpus", "gpus.toml", Gpu)


@functools.cache
def links() -> tuple[IntraLink, ...]:
    """All intra-node links: the built-in catalog and the user's."""
    return _merged("links", "links.toml", IntraLink)


@functools.cache
def networks() -> tuple[Network, ...]:
    """All networks: the built-in catalog and the user's."""
    return _merged("networks", "networks.toml", Network)


@functools.cache
def engines() -> tuple[Engine, ...]:
    """All inference engines: the built-in catalog and the user's."""
    return _merged("engines", "engines.toml", Engine)


@functools.cache
def models() -> tuple[ModelSpec, ...]:
    """All models: the built-in catalog and the user's."""
    return _merged("models", "models.toml", ModelSpec)


@functools.cache
def switches() -> tuple[Switch, ...]:
    """All fabric switches: the built-in catalog and the user's."""
    return _merged("switches", "switches.toml", Switch)


@functools.cache
def frameworks() -> tuple[Framework, ...]:
    """All training frameworks: the built-in catalog and the user's."""
    return _merged("frameworks", "frameworks.toml", Framework)


@functools.cache
def hosts() -> tuple[Host, ...]:
    """All host memory systems: the built-in catalog and the user's."""
    return _merged("hosts", "hosts.toml", Host)


def share_owner(name: str) -> str:
    """The built-in framework whose calibrated share ``name`` runs at: itself, or the base it
    takes its ``efficiency`` from (pytorch-compile is eager PyTorch's stack with its elementwise
    work fused, which the step model prices; the rest of the stack is the same)."""
    index = _index(_builtin_rows("frameworks.toml", "framework"))
    row = index.get(_normalise(name))
    for _ in range(MAX_BASE_DEPTH):
        if row is None or "efficiency" in row or not isinstance(row.get("base"), str):
            break
        row = index.get(_normalise(row["base"]))
    return str(row["name"]) if row is not None else name


def reset_caches() -> None:
    """Forget what was loaded (after FABRICLENS_CATALOG changes; for tests)."""
    for f in (_user_doc, gpus, links, networks, engines, models, switches, frameworks, hosts):
        f.cache_clear()


def _loose(key: str) -> str:
    """The spelling without a hyphen between a word and its number: llama-3.1-8b and
    llama3.1-8b (Ollama's spelling), gemma-2-9b and gemma2-9b are one key."""
    return _WORD_NUMBER.sub("", key)


_TITLE_NOTE = re.compile(r"\s*\([^()]*\)\s*$")


def _name_index(entries: Sequence[E]) -> dict[str, E]:
    index: dict[str, E] = {}
    for entry in entries:
        for key in (entry.name, *entry.aliases, entry.title):
            if key:
                index.setdefault(_normalise(key), entry)
    for entry in entries:  # a title without its closing note: the name nvidia-smi prints
        if entry.title and (bare := _TITLE_NOTE.sub("", entry.title)) != entry.title:
            index.setdefault(_normalise(bare), entry)
    for key, entry in list(index.items()):
        index.setdefault(_loose(key), entry)
    return index


def _lookup(entries: Sequence[E], names: Sequence[str]) -> E | None:
    index = _name_index(entries)
    for name in names:
        wanted = _normalise(name)
        found = index.get(wanted) or index.get(_loose(wanted))
        if found is not None:
            return found
    return None


def _find(
    entries: Sequence[E], name: str, what: str, command: str, hint_for: str = "", more: str = ""
) -> E:
    found = _lookup(entries, [name])
    if found is not None:
        return found
    index = _name_index(entries)
    wanted = _normalise(hint_for or name)
    # a name the user's spelling begins (a card's size left out), then the close spellings
    longer = [k for k in index if len(wanted) >= 3 and k.startswith((wanted, _loose(wanted)))]
    close = difflib.get_close_matches(wanted, list(index), n=4, cutoff=0.5)
    names = list(dict.fromkeys(index[c].name for c in [*longer, *close]))[:4]
    hint = f"did you mean {', '.join(names)}?" if names else ""
    fix = f"{hint} `fabriclens catalog {command}` lists them all{more}".strip()
    raise InputError(f"unknown {what} {name!r}", fix)


_MEMORY_SIZE = re.compile(r"(?P<base>.+?)[-_ ]?(?P<gb>\d{1,4}) ?gb", re.I)


def gpu_on_link(link: str) -> Gpu | None:
    """The catalog's GPU for an intra-node link where every GPU on that link is of one
    generation (NVLink4 and NVSwitch: the H100 SXM, the first listed), so that a collective given
    only its link is priced for the GPUs that link joins; None where the link joins GPUs of
    several generations (PCIe) or none."""
    on = [gpu for gpu in gpus() if gpu.intra_link == link]
    return on[0] if on and len({gpu.generation for gpu in on}) == 1 else None


def host_link_on(link: str) -> str | None:
    """The host link every catalog GPU on an intra-node link has (the path that feeds its
    NICs), or None where they differ (NVLink5 and NVSwitch: B200 on PCIe Gen5, B300 on Gen6)."""
    hosts = {gpu.host_link for gpu in gpus() if gpu.intra_link == link}
    return hosts.pop() if len(hosts) == 1 else None


def find_gpu(name: str) -> Gpu:
    """Look a GPU up by name or alias (case-insensitive); a part sold with several memory sizes
    takes one as a suffix (m2-max-64gb, "M3 Max 64GB")."""
    found = _lookup(gpus(), [name])
    if found is not None:
        return found
    sized = _MEMORY_SIZE.fullmatch(name.strip())
    base = _lookup(gpus(), [sized.group("base")]) if sized else None
    if sized and base is not None and base.memory_options_gb:
        size = int(sized.group("gb"))
        if size not in base.memory_options_gb:
            sizes = ", ".join(str(s) for s in base.memory_options_gb)
            # a variant of the same part sold with that size (m3-max-30c: 36 GB)
            kin = [
                g.name
                for g in gpus()
                if g.name.startswith(base.name) and size in g.memory_options_gb
            ]
            fix = (
                f"give {kin[0]}-{size}gb"
                if kin
                else f"give one of them: {base.name}-{base.memory_options_gb[-1]}gb"
            )
            raise InputError(f"{base.name} comes with {sizes} GB, not {size} GB", fix)  # fmt: skip
        return with_memory(base, size)
    return _find(gpus(), name, "GPU", "gpus")


def find_link(name: str) -> IntraLink:
    """Look an intra-node link up by name or alias."""
    return _find(links(), name, "intra-node link", "links")


def find_network(name: str) -> Network:
    """Look a network up by name or alias."""
    return _find(networks(), name, "network", "networks")


def find_switch(name: str) -> Switch:
    """Look a fabric switch up by name or alias."""
    return _find(switches(), name, "switch", "switches")


def find_engine(name: str) -> Engine:
    """Look an inference engine up by name or alias; ``NAME@RELEASE`` (vllm@0.8.5) models that
    release where the engine's behaviour changed between releases (overlap_since)."""
    base, release = split_release(name)
    if "@" not in name:
        return _find(engines(), name, "engine", "engines")
    engine = _find(engines(), base, "engine", "engines")
    if not valid_release(release):
        raise InputError(
            f"engine release {release!r} is not a release number",
            f"write it like {engine.name}@0.8.5",
        )
    return dataclasses.replace(engine, release=release)


def find_host(name: str) -> Host:
    """Look a host memory system up by name or alias."""
    return _find(hosts(), name, "host memory", "hosts")


def find_framework(name: str) -> Framework:
    """Look a training framework up by name or alias."""
    return _find(frameworks(), name, "training framework", "frameworks")


def find_model(name_or_path: str) -> ModelSpec:
    """A catalog model by name, or a Hugging Face ``config.json`` given by path."""
    path = Path(name_or_path)
    if name_or_path.endswith(".json") or _is(path, "file"):
        return load_hf_config(path)
    if _is(path, "dir") and _is(path / "config.json", "file"):
        return load_hf_config(path / "config.json")
    return _find_model_name(name_or_path)


def _find_model_name(text: str) -> ModelSpec:
    """A catalog name, else an Ollama tag or Hugging Face id read as one (catalog/model_names.py):
    the catalog entry with the weights format the name states and a line saying how it was read."""
    from fabriclens.catalog.model_names import read_model_name

    entries = models()
    found = _lookup(entries, [text])
    if found is not None:
        return found
    name = read_model_name(text)
    spec = _lookup(entries, name.candidates)
    if spec is None:
        best = name.candidates[0] if name.candidates else text
        repo = text.strip().strip("/")
        more = (
            f"; or give the model's config.json: https://huggingface.co/{repo}/resolve/main/config.json"
            if name.kind == "Hugging Face id" and repo.count("/") == 1
            else ""
        )
        return _find(entries, text, "model", "models", hint_for=best, more=more)  # raises
    return dataclasses.replace(
        spec,
        release_precision=name.precision or spec.release_precision,
        named_precision=name.precision,
        reading=f"{text!r}: {name.reading(spec.name)}",
        named_by=name.kind,
    )


def _is(path: Path, kind: str) -> bool:
    """``path.is_file()`` / ``is_dir()``, False for names the system refuses (too long, ...)."""
    try:
        return path.is_file() if kind == "file" else path.is_dir()
    except (OSError, ValueError):
        return False


def load_hf_config(path: Path) -> ModelSpec:
    """Read a Hugging Face ``config.json`` into a model spec; clear errors for bad files."""
    from fabriclens.catalog.hf_config import (  # only for config.json files
        NAME_KEYS,
        name_in_config,
        spec_from_hf_config,
    )
    from fabriclens.inputs import read_json

    if not os.path.lexists(path):
        raise InputError(f"no such file: {path}", "give a model name or a config.json path")
    # transformers writes config.json with Python's json module, which spells an infinite float
    # Infinity (Nemotron-H's time_step_limit [0.0, Infinity]); no field the planner reads may
    # be one (hf_config._int refuses it)
    data: Any = read_json(
        path,
        "model config",
        "give the config.json from the model's Hugging Face repository",
        constants=True,
    )
    if not isinstance(data, dict):
        raise InputError(f"{path} holds no JSON object", "give a Hugging Face config.json")
    found = name_in_config(data)
    missing = f"as it holds no {', '.join(NAME_KEYS[:-1])} or {NAME_KEYS[-1]}"
    if found is not None:
        name, how = found[0], f"name from its {found[1]}"
    elif path.name != "config.json":
        name, how = path.stem, f"name from the file name, {missing}"
    else:
        name, how = path.resolve().parent.name or path.stem, f"name from its folder, {missing}"
    return spec_from_hf_config(data, name=name, source=f"{path}; {how}")
