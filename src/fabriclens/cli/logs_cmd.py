"""`fabriclens logs`: NCCL and PyTorch logs -> transport, devices, timeouts, stragglers, findings."""

from pathlib import Path
from typing import Annotated, Any

import typer


def logs(
    files: Annotated[
        list[Path],
        typer.Argument(
            help="Log files (NCCL_DEBUG=INFO output, PyTorch stderr), one or many ranks"
        ),
    ],
    json_out: Annotated[bool, typer.Option("--json", help="JSON output")] = False,
    markdown: Annotated[
        bool, typer.Option("--markdown", help="Markdown output, to paste into a ticket")
    ] = False,
    max_input: Annotated[
        str, typer.Option(help="Read at most this much of each file (- reads stdin)")
    ] = "4GB",
) -> None:
    """Read NCCL and PyTorch logs: what NCCL used, what failed, which rank is behind."""
    from fabriclens.cli._findings import exit_for, findings_doc, read_logs
    from fabriclens.cli._output import check_formats, emit
    from fabriclens.diagnose.describe import describe
    from fabriclens.diagnose.engine import diagnose, facts
    from fabriclens.units import parse_size

    check_formats(json_out, markdown)
    nccl, torch = read_logs(files, parse_size(max_input))
    findings = diagnose(nccl, torch)
    doc: dict[str, Any] = {
        "files": [str(p) for p in files],
        "nccl": {
            "version": nccl.version,
            "versions": sorted(nccl.versions),  # every release the log shows
            "transport": nccl.net_transport(),
            "ib_devices": nccl.ib_devices,
            "oob": nccl.oob,
            "socket_ifaces": nccl.socket_ifaces,
            "gdr": nccl.gdr,
            "env": nccl.env,
            "channels_via": dict(nccl.via),
            "warnings": nccl.warnings,
            "hosts": nccl.hosts,
            "interfaces": nccl.ifaces,
            "events": [
                {"kind": e.kind, **e.detail, "host": e.host, "dev": e.dev, "text": describe(e)}
                for e in nccl.events
            ],
            "errors": list(dict.fromkeys(nccl.errors)),
            "lines": nccl.lines,  # lines with NCCL's layout
            "other_lines": nccl.unparsed_lines,  # lines without it and nothing found in them
            "other_lines_read": nccl.found_other_lines,  # lines without it, something found
            "records_not_kept": nccl.dropped_records,  # past the caps on events, hosts, ...
        },
        "timeouts": [
            {
                "rank": t.rank,
                "op": t.op,
                "seq": t.seq,
                "numel": t.numel,
                "timeout_s": t.timeout_s,
                "ran_s": t.ran_s,
            }
            for t in torch.timeouts
        ],
        "last_completed": {str(k): v for k, v in sorted(torch.last_completed.items())},
        "facts": facts(nccl, torch),
        "findings": findings_doc(findings),
    }
    emit(doc, json_out, "logs_renderables", markdown)
    exit_for(findings)
