"""`fabriclens fleet FILES...`: many nodes' results, fleet baselines, the nodes outside them."""

from pathlib import Path
from typing import Annotated

import typer


def fleet(
    files: Annotated[list[Path], typer.Argument(help="JSON from doctor --json / bench ... --json, one file per node (named after it)")],
    json_out: Annotated[bool, typer.Option("--json", help="JSON output")] = False,
) -> None:  # fmt: skip
    """Merge results from many nodes: per-metric median and MAD, and the nodes that fall outside, ranked."""
    from fabriclens.cli._output import emit
    from fabriclens.errors import ExitStatus, InputError
    from fabriclens.inputs import read_json
    from fabriclens.measure.fleet import MIN_NODES, baselines, metrics_of, rank_nodes

    nodes: dict[str, dict[str, tuple[float, bool]]] = {}
    used = []
    left_out: list[str] = []
    for path in files:
        doc = read_json(path, "fleet file", "give the output of `fabriclens doctor --json` or `bench ... --json`")  # fmt: skip
        if not isinstance(doc, dict):
            raise InputError(
                f"{path} is not a fabriclens JSON document",
                "give doctor --json or bench --json output",
            )
        node = str(doc.get("node") or path.stem)
        got = metrics_of(doc, node, left_out)
        if not got:
            raise InputError(f"{path}: no metric fabriclens fleet knows", "give doctor, bench net, bench collective or bench p2p JSON")  # fmt: skip
        for n, ms in got.items():
            nodes.setdefault(n, {}).update(ms)
        used.append(str(path))
    if len(nodes) < MIN_NODES:
        raise InputError(
            f"{len(nodes)} node(s): a baseline needs at least {MIN_NODES}", "give one file per node"
        )
    table, outliers = baselines(nodes)
    doc = {
        "files": used,
        "nodes": sorted(nodes),
        "metrics": table,
        "outliers": outliers,
        "suspect_nodes": rank_nodes(outliers),
        "left_out": left_out,
    }
    emit(doc, json_out, "collective_bench_text.fleet_renderables")
    if outliers:
        raise typer.Exit(int(ExitStatus.FINDINGS))
