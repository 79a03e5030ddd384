"""PNG plots (matplotlib, an optional extra: ``pip install 'fabriclens[plot]'``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fabriclens.errors import InputError


def require_matplotlib() -> None:
    """Fail before any work when --plot was asked for and matplotlib is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise InputError(
            "--plot needs matplotlib", "pip install 'fabriclens[plot]' (or pip install matplotlib)"
        ) from None


def _save(fig: Any, path: Path) -> None:
    import matplotlib.pyplot as plt

    try:
        fig.savefig(path, dpi=110)
    except OSError as exc:
        raise InputError(
            f"cannot write {path}: {exc.strerror}", "choose a writable --plot path"
        ) from None
    finally:
        plt.close(fig)


def serve_plot(doc: dict[str, Any], path: Path) -> None:
    """`bench serve`: TTFT and ITL (p50, p99) against output tokens/s, one point per load level."""
    require_matplotlib()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in doc["results"] if r["ttft_s"] and r["itl_s"]]
    x = [r["output_tokens_per_s"] for r in rows]
    labels = [
        f"c={r['concurrency']}" if r["concurrency"] is not None else f"{r['rate']:g}/s"
        for r in rows
    ]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), constrained_layout=True)
    for ax, key, title in (
        (axes[0], "ttft_s", "time to first token"),
        (axes[1], "itl_s", "inter-token latency"),
    ):
        for q, style in (("p50", "o-"), ("p99", "s--")):
            ax.plot(x, [1e3 * r[key][q] for r in rows], style, label=q)
        for xi, r, label in zip(x, rows, labels, strict=True):
            ax.annotate(
                label,
                (xi, 1e3 * r[key]["p50"]),
                textcoords="offset points",
                xytext=(4, 4),
                fontsize=8,
            )
        ax.set_xlabel("output tokens/s (all requests)")
        ax.set_ylabel("ms")
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
        ax.legend()
    fig.suptitle(f"{doc['model']} at {doc['url']}", fontsize=10)
    _save(fig, path)


def collective_plot(doc: dict[str, Any], path: Path) -> None:
    """`bench collective`: busbw against size, the expected plateau overlaid."""
    require_matplotlib()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [r["size_bytes"] for r in doc["sizes"]]
    fig, ax = plt.subplots(figsize=(7, 4), constrained_layout=True)
    ax.plot(sizes, [r["busbw_GBps"] for r in doc["sizes"]], "o-", label="measured busbw")
    if doc["expected_busbw_GBps"] is not None:
        ax.axhline(
            doc["expected_busbw_GBps"], linestyle="--", color="gray", label="expected (planner)"
        )
    ax.set_xscale("log", base=2)
    ax.set_xlabel("size (bytes)")
    ax.set_ylabel("GB/s")
    ax.set_title(f"{doc['op']} · {doc['ranks']} ranks · {doc['backend']}")
    ax.grid(True, alpha=0.3)
    ax.legend()
    _save(fig, path)


def watch_plot(samples: list[dict[str, Any]], path: Path) -> None:
    """`watch`: GPU utilisation (top) and each link's throughput (bottom) against time, the
    verdict of each sample as the top panel's background colour."""
    require_matplotlib()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = [s["t_s"] for s in samples]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 6), sharex=True, constrained_layout=True)
    indices = sorted({g["index"] for s in samples for g in s["gpus"]})
    for i in indices:
        top.plot(
            t,
            [next((g["util_pct"] for g in s["gpus"] if g["index"] == i), None) for s in samples],
            label=f"GPU {i}",
        )
    colours = {
        "communication-bound": "tab:red",
        "input-bound": "tab:orange",
        "compute-bound": "tab:green",
    }
    for a, b, s in zip([0.0, *t], t, samples, strict=False):
        if s["verdict"] in colours:
            top.axvspan(a, b, color=colours[s["verdict"]], alpha=0.12, lw=0)
    top.set_ylabel("GPU busy %")
    top.set_ylim(0, 105)
    top.set_title("shading: red communication-bound, orange input-bound, green compute-bound")
    if indices:
        top.legend(loc="upper right")
    else:
        top.text(0.5, 0.5, "no GPUs read", ha="center", va="center", transform=top.transAxes)
    names = sorted({lr["name"] for s in samples for lr in s["links"]})
    for name in names:
        rows = [next((lr for lr in s["links"] if lr["name"] == name), None) for s in samples]
        bottom.plot(
            t,
            [max(r["rx_bits_per_s"], r["tx_bits_per_s"]) / 1e9 if r else None for r in rows],
            label=name,
        )
    bottom.set_ylabel("Gbit/s (busier direction)")
    bottom.set_xlabel("seconds")
    if names:
        bottom.legend(loc="upper right")
    _save(fig, path)
