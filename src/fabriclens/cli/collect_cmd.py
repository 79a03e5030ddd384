"""`fabriclens collect`: the troubleshooting checklist's read-only commands and sysfs files, into
one bundle to diagnose elsewhere with `fabriclens doctor --from`."""

from pathlib import Path
from typing import Annotated, Any

import typer


def collect(
    output: Annotated[
        Path | None,
        typer.Option(
            "-o", "--output", help="Bundle to write [default: ./fabriclens-<host>-<time>.tar.gz]"
        ),
    ] = None,
    redact: Annotated[
        bool,
        typer.Option(
            "--redact",
            help="Replace host names, IP and MAC addresses, GUIDs and serial numbers with stable tokens",
        ),
    ] = False,
    json_out: Annotated[bool, typer.Option("--json", help="JSON output (the manifest)")] = False,
) -> None:
    """Run nvidia-smi, ibstat, ethtool, ip, lspci, sysctl, dmesg ... (read-only, each with a
    timeout) and copy the sysfs files doctor reads, into a .tar.gz that `doctor --from` reads."""
    import socket
    import time

    from fabriclens.cli._output import print_json
    from fabriclens.cli._progress import terminal_progress
    from fabriclens.errors import InputError
    from fabriclens.probes.collect import collect_bundle

    if output is None:
        host = "redacted" if redact else socket.gethostname().split(".")[0] or "host"
        output = Path(f"fabriclens-{host}-{time.strftime('%Y%m%d-%H%M%S')}.tar.gz")
    if not output.name.endswith(".tar.gz"):
        raise InputError(f"-o {output}: the bundle is a .tar.gz", f"give -o {output.name}.tar.gz")
    if not output.parent.is_dir():
        raise InputError(
            f"-o {output}: folder {output.parent} does not exist", "create it or choose another"
        )
    with terminal_progress(json_out) as bar:
        manifest = collect_bundle(output, redact, progress=bar.observer("collecting"))
    doc: dict[str, Any] = {"bundle": str(output), **manifest}
    if json_out:
        print_json(doc)
        return
    cmds = manifest["commands"]
    by: dict[str, int] = {}
    for c in cmds:
        by[c["status"]] = by.get(c["status"], 0) + 1
    print(f"wrote {output} in {manifest['elapsed_s']:.1f} s: {len(cmds)} commands "
          f"({', '.join(f'{n} {s}' for s, n in sorted(by.items()))}), {manifest['sysfs_files']} sysfs files"
          + (", redacted" if redact else ""))  # fmt: skip
    missing = sorted({c["command"].split(" ")[0] for c in cmds if c["status"] == "unavailable"})
    if missing:
        print(f"not installed here: {', '.join(missing)}")
    print(f"diagnose it anywhere: fabriclens doctor --from {output}")
