"""Fabric diagram and link-utilisation heat map (matplotlib)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fabriclens.fabric.simulate import SimResult
from fabriclens.fabric.topology import FabricDesign
from fabriclens.report.plots import _save

MAX_DRAWN = 32  # switches per row drawn; larger layers are drawn in part and labelled


def _xs(n: int, shown: int) -> list[float]:
    return [(i + 0.5) / shown for i in range(shown)]


def diagram(d: FabricDesign, prefix: Path) -> list[Path]:
    """Draw servers, leaves, spines and cores (rails coloured); writes PREFIX.svg and .png."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(12, 5))
    cmap = plt.get_cmap("tab10")
    layers: list[tuple[str, int, float]] = [("servers", d.servers, 0.0), ("leaves", d.leaves, 1.0)]
    if d.tiers >= 2:
        layers.append(("spines", d.spines, 2.0))
    if d.tiers == 3:
        layers.append(("cores", d.cores, 3.0))
    pos: dict[str, list[float]] = {}
    for name, n, y in layers:
        shown = min(n, MAX_DRAWN)
        pos[name] = _xs(n, shown)
        ax.scatter(pos[name], [y] * shown, s=60, marker="s", color="0.3", zorder=3)
        more = f" (first {shown} of {n})" if shown < n else ""
        label = "switch" if name == "leaves" and d.tiers == 1 and n == 1 else name
        ax.text(-0.02, y, f"{label}: {n}{more}", ha="right", va="center", fontsize=9)
    nleaf = len(pos["leaves"])
    for s, x in enumerate(pos["servers"]):  # server NICs, coloured by rail
        for r in range(d.nics_per_server):
            leaf = int(d.leaf_of(s, r))
            if leaf < nleaf:
                ax.plot([x, pos["leaves"][leaf]], [0, 1], color=cmap(r % 10), lw=0.6, alpha=0.7)
    if d.tiers >= 2:
        nsp = len(pos["spines"])
        for leaf, x in enumerate(pos["leaves"]):
            pod = leaf // d.leaves_per_pod
            for p in range(min(d.leaf_up, d.spines_per_pod)):
                sp = pod * d.spines_per_pod + p % d.spines_per_pod
                if sp < nsp:
                    ax.plot([x, pos["spines"][sp]], [1, 2], color="0.6", lw=0.4)
    if d.tiers == 3:
        ncore = len(pos["cores"])
        for sp, x in enumerate(pos["spines"]):
            plane = sp % d.spines_per_pod
            for c in range(d.cores_per_plane):
                core = plane * d.cores_per_plane + c
                if core < ncore:
                    ax.plot([x, pos["cores"][core]], [2, 3], color="0.75", lw=0.3)
    for r in range(min(d.nics_per_server, 10)):
        ax.plot([], [], color=cmap(r), label=f"rail {r}")
    ax.legend(loc="upper right", fontsize=7, ncol=2)
    ax.set_xlim(-0.35, 1.02)
    ax.set_axis_off()
    ax.set_title(
        f"{d.topology}, {d.servers} servers x {d.nics_per_server} NICs, {d.switch} ({d.oversubscription:g}:1)"
    )
    svg, png = prefix.with_suffix(".svg"), prefix.with_suffix(".png")
    try:
        fig.savefig(svg)
    except OSError as exc:
        plt.close(fig)
        from fabriclens.errors import InputError

        raise InputError(
            f"cannot write {svg}: {exc.strerror}", "choose a writable --plot path"
        ) from None
    _save(fig, png)
    return [svg, png]


def heat_map(d: FabricDesign, r: SimResult, path: Path) -> Path:
    """Leaf x uplink-port utilisation (rows: leaves; columns: up then down ports)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    e = d.endpoints
    u = d.leaf_up if d.tiers >= 2 else 0
    util: Any = r.utilisation
    if u:
        up = util[2 * e : 2 * e + d.leaves * u].reshape(d.leaves, u)
        down = util[2 * e + d.leaves * u : 2 * e + 2 * d.leaves * u].reshape(d.leaves, u)
        grid = np.hstack([up, down])
        xlabel = f"leaf uplink ports 0-{u - 1}, then spine->leaf ports 0-{u - 1}"
    else:
        grid = util[:e].reshape(d.servers, d.nics_per_server)
        xlabel = "NIC (rail)"
    fig, ax = plt.subplots(figsize=(10, 5))
    im = ax.imshow(grid, aspect="auto", cmap="viridis", vmin=0, vmax=1, interpolation="nearest")
    fig.colorbar(im, ax=ax, label="utilisation at max-min rates")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("leaf" if u else "server")
    ax.set_title(f"{r.op} on {r.ranks} ranks: link utilisation")
    _save(fig, path)
    return path
