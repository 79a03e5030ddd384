"""`fabriclens transfer`: how long to move model files or checkpoints, to one or many hosts."""

from typing import Annotated

import typer

from fabriclens.cli._output import emit


def transfer(
    size: Annotated[str, typer.Argument(help="Size to move, e.g. 140GB, 16GiB")],
    link: Annotated[str, typer.Option(help="Network id (fabriclens catalog networks)")] = "1gbe",
    protocol: Annotated[str, typer.Option(help="tcp | rdma")] = "tcp",
    hosts: Annotated[int, typer.Option(help="Receiving hosts")] = 1,
    measured: Annotated[
        str | None,
        typer.Option(
            help="A goodput you measured (e.g. 850mbit or 110MB/s), instead of the catalog's"
        ),
    ] = None,
    storage: Annotated[
        str | None,
        typer.Option(help="Shared storage read rate (e.g. 2GB/s), to compare reading from it"),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="JSON output")] = False,
) -> None:
    """Time to move SIZE over a link at realistic goodput, and the best way to reach many hosts."""
    from fabriclens.plan.transfer import plan_transfer
    from fabriclens.report.json_doc import transfer_doc
    from fabriclens.units import parse_rate, parse_size

    plan = plan_transfer(
        parse_size(size), link, protocol=protocol, hosts=hosts,
        measured_bits_per_s=parse_rate(measured) if measured else None,
        storage_bits_per_s=parse_rate(storage) if storage else None,
    )  # fmt: skip
    doc = transfer_doc(plan)
    emit(doc, json_out, "transfer_renderables")
