"""`fabriclens catalog`: list what the planner knows."""

import sys
from typing import Annotated, Any

import typer

from fabriclens.cli._output import print_json, print_rich

KINDS = ("gpus", "links", "networks", "models", "engines", "switches", "frameworks", "hosts")


def _range_cell(band: tuple[float, float, int] | None, kind: str = "") -> str:
    """Where 90% of published runs fell around the planned speed (a spread), or '-'."""
    return f"{kind}{band[0]:.2f}-{band[1]:.2f}x ({band[2]} runs)" if band is not None else "-"


def _likely_cell(fw: Any) -> str:
    """A framework's spreads: dense, and MoE where it has one."""
    moe = fw.likely_range(True)
    return _range_cell(fw.likely_range(False)) + (f", {_range_cell(moe, 'MoE ')}" if moe else "")


def _complete_kind(incomplete: str) -> list[str]:
    return [k for k in KINDS if k.startswith(incomplete)]


def catalog(
    kind: Annotated[
        str,
        typer.Argument(
            help="gpus | links | networks | models | engines | switches | frameworks | hosts",
            autocompletion=_complete_kind,
        ),
    ],
    json_out: Annotated[bool, typer.Option("--json", help="JSON output")] = False,
    user: Annotated[
        bool,
        typer.Option(
            "--user",
            help="Only what the user catalog adds or replaces (~/.config/fabriclens/catalog.toml,"
            " or --catalog FILE / FABRICLENS_CATALOG)",
        ),
    ] = False,
) -> None:
    """List the catalog (built-in and user entries), with each entry's source."""
    from fabriclens import catalog as cat
    from fabriclens.catalog.schema import ATTENTION_NAMES
    from fabriclens.errors import InputError

    if kind not in KINDS:
        raise InputError(f"unknown catalog {kind!r}", f"use one of {', '.join(KINDS)}")
    entries: tuple[Any, ...] = getattr(cat, kind)()
    if user:
        from fabriclens.catalog.load import user_catalog_path, user_entries

        path = user_catalog_path()
        entries = user_entries(kind)
        if not entries and not json_out:
            where = f"the user catalog {path}" if path else "no user catalog is in force; it"
            sys.stdout.write(f"{where} adds no {kind}\n")
            return
    if json_out:
        from dataclasses import asdict

        print_json([asdict(e) for e in entries])
        return
    from fabriclens.model.arch import count_params
    from fabriclens.report.text import catalog_table
    from fabriclens.units import format_bytes

    rows: list[tuple[str, ...]]
    if kind == "gpus":
        rows = [
            (
                g.name,
                g.title,
                format_bytes(g.memory_bytes),
                f"{g.hbm_bw_bytes_per_s / 1e12:.2f}",
                f"{g.bf16_flops_per_s / 1e12:.0f}",
                f"{g.fp8_flops_per_s / 1e12:.0f}" if g.fp8_flops_per_s else "-",
                f"{g.fp4_flops_per_s / 1e12:.0f}" if g.fp4_flops_per_s else "-",
                f"{g.matmul_efficiency:.2f}",
                g.generation or "-",
                g.intra_link,
                g.notes,
            )
            for g in entries
        ]
        cols = [
            "name",
            "GPU",
            "memory",
            "HBM TB/s",
            "BF16 TFLOP/s",
            "FP8",
            "FP4",
            "matmul eff.",
            "generation",
            "intra link",
            "notes",
        ]
    elif kind == "links":
        rows = [
            (
                x.name,
                x.title,
                f"{x.bw_bytes_per_s / 1e9:g}",
                f"{x.efficiency:.3g}",
                "yes" if x.p2p else "no",
                "yes" if x.nvls else "no",
                x.notes,
            )
            for x in entries
        ]
        cols = ["name", "link", "GB/s per GPU (one way)", "efficiency", "P2P", "NVLS", "notes"]
    elif kind == "networks":
        rows = [
            (
                n.name,
                n.title,
                f"{n.rate_bits_per_s / 1e9:g}",
                f"{n.efficiency:.2f}",
                f"{n.latency_s * 1e6:g}",
                f"{n.cost_relative:g}",
                str(n.nics_per_node) if n.nics_per_node else "-",
                ", ".join(n.aliases),
            )
            for n in entries
        ]
        cols = ["name", "network", "Gbit/s", "efficiency", "latency us", "rel. cost", "NICs/node",
                "aliases"]  # fmt: skip
    elif kind == "models":
        rows = []
        for m in entries:
            p = count_params(m)
            kind_s = "MoE" if m.is_moe else "dense"
            rows.append(
                (
                    m.name,
                    f"{p.total / 1e9:.2f}B",
                    f"{p.active / 1e9:.2f}B",
                    str(m.layers),
                    str(m.hidden),
                    f"{m.heads}/{m.kv_heads}",
                    kind_s
                    + (" MLA" if m.is_mla else "")
                    + (f" sparse top-{m.index_topk}" if m.is_sparse else "")
                    + (f" hybrid {m.linear_layers}/{m.layers}" if m.is_hybrid else ""),
                    m.source,
                )
            )
        cols = ["name", "params", "active", "layers", "hidden", "heads/kv", "kind", "source"]
    elif kind == "switches":
        from fabriclens.units import format_rate

        rows = [
            (
                e.name,
                e.title,
                e.kind,
                ", ".join(f"{p} x {format_rate(r)}" for p, r in e.port_configs),
                f"{e.cost_relative:g}",
                e.source,
            )
            for e in entries
        ]
        cols = ["name", "switch", "kind", "ports", "rel. cost", "source"]
    elif kind == "hosts":
        rows = [
            (
                h.name,
                h.title,
                f"{h.memory_bw_bytes_per_s / 1e9:.1f} GB/s",
                f"{h.efficiency:.2f}",
                h.source,
            )
            for h in entries
        ]
        cols = ["name", "host memory", "peak", "reached", "source"]
    elif kind == "frameworks":
        rows = [
            (
                f.name,
                f.title,
                ", ".join(f"{g} {v:.2f}" for g, v in f.efficiency.items()),
                _likely_cell(f),
                ATTENTION_NAMES[f.attention]
                + "".join(
                    f" ({g}: {ATTENTION_NAMES[k]})" for g, k in f.attention_by_generation.items()
                ),
                f.elementwise
                + (f", host {f.layer_host_ms:g} ms a layer" if f.layer_host_ms else ""),
                f.grad_reduce
                + ("" if f.grad_buckets == "whole" else f", {f.grad_buckets} buckets")
                + ("" if f.zero3_calls == "per-layer" else f", ZeRO-3 {f.zero3_calls} calls"),
                f.moe_dispatch,
                ", ".join(f.aliases),
                f.efficiency_source,
            )
            for f in entries
        ]
        cols = ["name", "framework", "share of the kernel-level step", "90% of runs within", "attention",
                "elementwise", "grad reduce", "MoE dispatch", "aliases", "source"]  # fmt: skip
    else:
        rows = [
            (e.name, e.title,
             f"{e.step_overhead_s * 1e3:g} ms"
             + (f", hidden behind the GPU from {e.overlap_since}" if e.overlap_since else "")
             + (", hidden behind the GPU" if e.overlap_always else ""),
             f"{e.layer_overhead_s * 1e6:g} us",
             "mixed into decode steps" if e.prefill_mixed else "passes of their own",
             "own kernel" if e.custom_all_reduce else "NCCL, if any",
             ("one GPU if it fits, else " if e.one_gpu_when_fits else "")
             + ("layers split" if e.multi_gpu == "layers" else "tensor parallel"),
             _range_cell(e.likely_range()))
            for e in entries
        ]  # fmt: skip
        cols = ["name", "engine", "per step", "per layer", "newcomers' prompts", "TP all-reduce",
                "over GPUs", "90% of runs within"]  # fmt: skip
    print_rich([catalog_table(f"fabriclens catalog {kind}", cols, rows)])
