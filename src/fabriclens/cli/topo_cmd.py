"""`fabriclens topo`: design a fabric (leaves, spines, cores, cables, optics, cost)."""

from pathlib import Path
from typing import Annotated

import typer

from fabriclens.cli._output import emit


def topo(
    servers: Annotated[int | None, typer.Option(help="Servers on the fabric")] = None,
    gpus: Annotated[int | None, typer.Option(help="GPUs (instead of --servers)")] = None,
    gpus_per_server: Annotated[int, typer.Option(help="GPUs per server")] = 8,
    nics_per_server: Annotated[
        int | None, typer.Option(help="Compute NICs per server [default: one per GPU]")
    ] = None,
    nic_rate: Annotated[
        str | None, typer.Option(help="NIC rate, e.g. 400G [default: the network's, or 400G]")
    ] = None,
    network: Annotated[
        str | None, typer.Option(help="Catalog network of the NICs [default: by switch and rate]")
    ] = None,
    switch: Annotated[
        str, typer.Option(help="Catalog switch (fabriclens catalog switches)")
    ] = "qm9700",
    topology: Annotated[
        str, typer.Option(help="rail-optimized | leaf-spine | fat-tree | rail-only")
    ] = "rail-optimized",
    oversubscription: Annotated[
        float, typer.Option(help="Leaf down:up bandwidth ratio (1 = non-blocking)")
    ] = 1.0,
    core_oversubscription: Annotated[
        float, typer.Option(help="Aggregation down:up ratio of a three-tier fabric")
    ] = 1.0,
    uplink_rate: Annotated[
        str | None,
        typer.Option(
            help="Switch-to-switch link rate, a multiple of the NIC rate (e.g. 400G over 200G NICs, "
            "as MegaScale splits each 400G leaf port into two 200G NIC links) [default: the NIC rate]"
        ),
    ] = None,
    storage_nics: Annotated[
        int, typer.Option(help="Storage/front-end NICs per server: sized as a separate leaf-spine")
    ] = 0,
    storage_rate: Annotated[str, typer.Option(help="Storage NIC rate")] = "200G",
    storage_switch: Annotated[str, typer.Option(help="Storage network switch")] = "sn5600",
    plot: Annotated[
        Path | None, typer.Option(help="Write the diagram to FILE.svg and FILE.png (matplotlib)")
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="JSON output")] = False,
) -> None:
    """Size a compute fabric from a catalog switch and show its cost, growth and diagram."""
    from fabriclens.catalog import find_switch
    from fabriclens.cli._fabric_args import link_rate, resolve_counts
    from fabriclens.fabric.topology import design_fabric, growth_table
    from fabriclens.report.fabric_doc import topo_doc
    from fabriclens.units import parse_rate

    if plot is not None:
        from fabriclens.report.plots import require_matplotlib

        require_matplotlib()
    n = resolve_counts(servers, gpus, gpus_per_server)
    sw = find_switch(switch)
    rate, net = link_rate(nic_rate, network, sw.kind)
    nics = nics_per_server if nics_per_server is not None else gpus_per_server
    args = (nics, rate, sw, topology, oversubscription, core_oversubscription)
    up_rate = parse_rate(uplink_rate) if uplink_rate is not None else None
    design = design_fabric(
        n, *args, gpus_per_server=gpus_per_server, uplink_rate_bits_per_s=up_rate
    )
    growth = growth_table(n, *args, uplink_rate_bits_per_s=up_rate)
    storage = None
    if storage_nics:
        storage = design_fabric(n, storage_nics, parse_rate(storage_rate), find_switch(storage_switch),
                                "leaf-spine", 1.0, 1.0, gpus_per_server=gpus_per_server)  # fmt: skip
    doc = topo_doc(design, net.name, growth, storage)
    if plot is not None:
        from fabriclens.report.fabric_plots import diagram

        doc["plots"] = [str(p) for p in diagram(design, plot)]
    emit(doc, json_out, "fabric_text.topo_renderables")
