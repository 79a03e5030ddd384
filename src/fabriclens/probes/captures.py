"""Read what `doctor --from` is given: a collect bundle (tar.gz or its folder), any folder of
captured outputs, single files, or `-` for text pasted on stdin. Which tool printed each text is
decided later from its content; here only the bytes are read (binary files are skipped)."""

from __future__ import annotations

import json
import sys
import tarfile
import tempfile
from pathlib import Path

from fabriclens.diagnose.captured import Baseline, Capture
from fabriclens.errors import InputError
from fabriclens.probes.sysfs_net import read_interfaces, read_listeners, read_rdma_ports

MAX_FILE_BYTES = 32 * 2**20


def _text(path: Path) -> str | None:
    try:
        data = path.read_bytes()[:MAX_FILE_BYTES]
    except OSError:
        return None
    if b"\0" in data[:4096]:
        return None  # binary
    return data.decode("utf-8", errors="replace")


def _bundle(folder: Path, manifest: Path) -> tuple[list[Capture], Baseline]:
    """A `fabriclens collect` folder: the manifest's command outputs and the sysfs copy."""
    try:
        doc = json.loads(manifest.read_text())
    except (OSError, ValueError):
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


def read_captures(paths: list[str], tmp: Path) -> tuple[list[Capture], Baseline | None]:
    """Every text under ``paths`` (tar archives unpacked under ``tmp``); the Baseline of the
    first collect bundle met, if any. A path that does not exist is an input error."""
    caps: list[Capture] = []
    base: Baseline | None = None
    for raw in paths:
        if raw == "-":
            caps.append(Capture("<stdin>", sys.stdin.read()))
            continue
        path = Path(raw)
        if not path.exists():
            raise InputError(
                f"--from {raw}: no such file or folder",
                "give a bundle, a folder, a file or - for stdin",
            )
        if path.is_dir():
            more, b = _folder(path)
        elif tarfile.is_tarfile(path):
            dest = Path(tempfile.mkdtemp(dir=tmp))
            try:
                with tarfile.open(path) as tar:
                    tar.extractall(dest, filter="data")
            except (tarfile.TarError, OSError) as exc:
                raise InputError(
                    f"--from {raw}: cannot unpack ({exc})", "give the .tar.gz collect wrote"
                ) from None
            more, b = _folder(dest)
        else:
            text = _text(path)
            more, b = ([Capture(raw, text)] if text is not None else [Capture(raw, "")]), None
        caps += more
        base = base or b
    return caps, base
