"""Read what `doctor --from` is given: a collect bundle (tar.gz or its folder), any folder of
captured outputs, single files, or `-` for text pasted on stdin. Which tool printed each text is
decided later from its content; here only the bytes are read (binary files are skipped)."""

from __future__ import annotations

import io
import sys
import tarfile
import tempfile
from pathlib import Path

from fabriclens.diagnose.captured import Baseline, Capture
from fabriclens.errors import InputError
from fabriclens.inputs import STDIN, is_directory, loads_json, open_input
from fabriclens.probes.sysfs_net import read_interfaces, read_listeners, read_rdma_ports

MAX_FILE_BYTES = 32 * 2**20  # one captured output: read up to this, the rest ignored
MAX_BUNDLE_BYTES = 2 * 2**30  # what a bundle may unpack to (a collect bundle is a few MB)


def _decoded(data: bytes) -> str | None:
    if b"\0" in data[:4096]:
        return None  # binary
    return data.decode("utf-8", errors="replace")


def _text(path: Path) -> str | None:
    """A captured output inside a folder: regular files only, at most MAX_FILE_BYTES."""
    try:
        with open_input(path, "captured file") as fh:
            return _decoded(fh.read(MAX_FILE_BYTES))
    except (InputError, OSError):
        return None


def _bundle(folder: Path, manifest: Path) -> tuple[list[Capture], Baseline]:
    """A `fabriclens collect` folder: the manifest's command outputs and the sysfs copy."""
    try:
        text = _text(manifest)
        doc = loads_json(text or "")
        if not isinstance(doc, dict):
            raise ValueError("not an object")
    except ValueError:
        raise InputError(
            f"{manifest} is not a readable manifest", "run fabriclens collect again"
        ) from None
    caps, unavailable = [], []
    for rec in doc.get("commands", []):
        if rec.get("status") == "unavailable":
            unavailable.append(str(rec.get("command", "")).split(" ")[0])
        if rec.get("status") != "ok" or not rec.get("file"):
            continue
        text = _text(folder / rec["file"])
        if text is not None:
            caps.append(Capture(rec["file"], text, rec.get("command", ""), rec.get("subject", "")))
    base = Baseline(read_interfaces(folder), read_rdma_ports(folder), read_listeners(folder), True,
                    tuple(dict.fromkeys(unavailable)))  # fmt: skip
    return caps, base


def _folder(folder: Path) -> tuple[list[Capture], Baseline | None]:
    manifests = sorted(folder.glob("manifest.json")) or sorted(folder.glob("*/manifest.json"))
    if manifests:
        return _bundle(manifests[0].parent, manifests[0])
    caps = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        text = _text(path)
        if text is not None:
            caps.append(Capture(str(path.relative_to(folder)), text))
    return caps, None


def _unpack(raw: str, data: bytes, tmp: Path) -> tuple[list[Capture], Baseline | None]:
    """A tar(.gz) bundle: its members' sizes checked before anything is written (a bomb is
    refused), unpacked with tarfile's 'data' filter (no links out, no devices)."""
    if len(data) > MAX_FILE_BYTES:
        raise InputError(f"--from {raw}: a bundle over {MAX_FILE_BYTES >> 20} MiB",
                         "give the .tar.gz collect wrote")  # fmt: skip
    dest = Path(tempfile.mkdtemp(dir=tmp))
    try:
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            members = tar.getmembers()
            if sum(m.size for m in members) > MAX_BUNDLE_BYTES or len(members) > 100_000:
                raise InputError(f"--from {raw}: the archive unpacks to too much",
                                 "give the .tar.gz collect wrote")  # fmt: skip
            tar.extractall(dest, filter="data")
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise InputError(
            f"--from {raw}: cannot unpack ({exc})", "give the .tar.gz collect wrote"
        ) from None
    return _folder(dest)


def read_captures(paths: list[str], tmp: Path) -> tuple[list[Capture], Baseline | None]:
    """Every text under ``paths`` (tar archives unpacked under ``tmp``); the Baseline of the
    first collect bundle met, if any. A path that does not exist is an input error."""
    caps: list[Capture] = []
    base: Baseline | None = None
    for raw in paths:
        if raw == STDIN:
            caps.append(Capture("<stdin>", sys.stdin.read(MAX_FILE_BYTES)))
            continue
        if not raw.strip():
            raise InputError(
                "--from was given an empty path", "give a bundle, a folder, a file or -"
            )
        path = Path(raw)
        if is_directory(path):
            more, b = _folder(path)
            caps += more
            base = base or b
            continue
        # a regular file only (a FIFO or a device is refused, never read); the bytes once
        with open_input(path, "--from input") as fh:
            head = fh.read(MAX_FILE_BYTES + 1)
        if head[:2] == b"\x1f\x8b" or head[257:262] == b"ustar":
            more, b = _unpack(raw, head, tmp)
        else:
            text = _decoded(head[:MAX_FILE_BYTES])
            more, b = ([Capture(raw, text)] if text is not None else [Capture(raw, "")]), None
        caps += more
        base = base or b
    return caps, base
