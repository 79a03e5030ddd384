"""Terminal rendering with rich. Every function returns rich renderables or a string."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from fabriclens.catalog.schema import release_before, split_release
from fabriclens.units import (
    counted,
    format_bytes,
    format_decimal_bytes,
    format_number,
    format_rate,
    format_time,
)

COMPONENT_LABELS = {
    "weights": "weights",
    "gradients": "gradients",
    "optimizer": "optimizer states",
    "activations": "activations",
    "kv_cache": "KV cache",
    "comm_buffers": "communication buffers",
    "framework_overhead": "framework overhead",
}


def _pct(x: float) -> str:
    return f"{100 * x:,.1f}%"


def _gbps(x: float) -> str:
    return f"{x:,.1f}"


def _count(x: float) -> str:
    """A count of calls: whole numbers in full (37,748,736), fractions to 3 figures."""
    return f"{x:,.0f}" if float(x).is_integer() else format_number(x)


def memory_table(doc: dict[str, Any]) -> Table:
    """Per-GPU memory ledger."""
    mem = doc["memory"]
    table = Table(title="Memory per GPU", box=box.SIMPLE_HEAD, title_justify="left")
    table.add_column("component")
    table.add_column("size", justify="right")
    for key, value in mem["per_gpu_bytes"].items():
        table.add_row(COMPONENT_LABELS.get(key, key), format_bytes(value))
    verdict = "fits" if mem["fits"] else "DOES NOT FIT"
    table.add_row(
        Text("total", style="bold"),
        Text(
            f"{format_bytes(mem['total_per_gpu_bytes'])} of {format_bytes(mem['capacity_bytes'])} — {verdict}",
            style="bold" if mem["fits"] else "bold red",
        ),
    )
    if mem.get("min_gpus"):
        table.caption = f"fewest {doc['gpu']} GPUs that can hold this job: {mem['min_gpus']}"
        if not mem["fits"] and mem["min_gpus"] < doc["gpus"]:
            table.caption += (
                f" (no layout of {doc['gpus']} fits: the GPU count must divide the layout)"
            )
        table.caption_justify = "left"
    elif not mem["fits"]:
        table.caption = f"no number of {doc['gpu']} GPUs the planner tries holds this job"
        table.caption_justify = "left"
    return table


def link_shown(kind: str, intra_link: str) -> str:
    """The link column of a communication table: the node's own link (an AMD node's Infinity
    Fabric is not NVLink, though the ledger files both under the kind "nvlink") for traffic
    inside a node, the kind ("network") for the rest."""
    return intra_link if kind in ("nvlink", "pcie") and intra_link else kind


def comm_table(doc: dict[str, Any]) -> Table:
    """Communication ledger of a training step."""
    table = Table(title="Communication per step", box=box.SIMPLE_HEAD, title_justify="left")
    for col, just in (
        ("group", "left"),
        ("op", "left"),
        ("size", "right"),
        ("calls", "right"),
        ("link", "left"),
        ("busbw GB/s", "right"),
        ("time", "right"),
        ("exposed", "right"),
        ("", "left"),
    ):
        table.add_column(col, justify=just)  # type: ignore[arg-type]
    for c in doc["comm"]:
        table.add_row(
            c["group"],
            c["op"],
            format_decimal_bytes(c["size_bytes"]),
            _count(c["count"]),
            link_shown(c["link"], doc.get("intra_link", "")),
            _gbps(c["busbw_GBps"]),
            format_time(c["time_s"]),
            format_time(c["exposed_s"]),
            c["note"],
        )
    return table


def plan_summary(doc: dict[str, Any], with_network: bool = True) -> list[RenderableType]:
    """Header lines: what was planned, on what."""
    lay = doc["layout"]
    head = Text()
    head.append(f"{doc['model']['name']}", style="bold")
    head.append(f" ({doc['model']['params'] / 1e9:.1f}B params")
    if doc["model"]["active_params"] != doc["model"]["params"]:
        head.append(f", {doc['model']['active_params'] / 1e9:.1f}B active")
    head.append(f") · {doc['workload']} · {doc['gpus']} x {doc['gpu']}")
    if doc.get("gpus_given", doc["gpus"]) > doc["gpus"]:
        head.append(
            f" (of the {doc['gpus_given']} given: {doc['layout']['engine']} loads a model that "
            "fits on one GPU onto that GPU alone)"
        )
    head.append(f" · {counted(doc['nodes'], 'node')} x {counted(doc['gpus_per_node'], 'GPU')}")
    if doc["gpus_per_node"] > 1:  # one GPU a node has no intra-node link to name
        head.append(f" over {doc['intra_link']}")
    if with_network and doc["network"] != "none":
        head.append(f" · network {doc['network']} x {doc['nics_per_node']} per node")
    if doc["workload"] == "inference":
        layout = (
            f"layout: tp {lay['tp']} · pp {lay['pp']}"
            + (f" · ep {lay['ep']}" if lay.get("ep", 1) > 1 else "")
            + (f" · dp attention {lay['dp']}" if lay.get("dp", 1) > 1 else "")
            + f" · batch {lay['batch']} · prompt "
            f"{lay['prompt_tokens']} · output {lay['output_tokens']} tokens · engine {lay['engine']}"
            f" · weights {lay['precision']} · KV cache {lay['kv_precision']}"
        )
    else:
        layout = (
            f"layout: tp {lay['tp']} · pp {lay['pp']}"
            + (f" (interleave {lay['interleave']})" if lay.get("interleave", 1) > 1 else "")
            + f" · dp {lay['dp']} · cp {lay['cp']} · ep {lay['ep']}"
            + (f" (etp {lay['etp']})" if lay.get("etp", lay["tp"]) != lay["tp"] else "")
            + f" · ZeRO {lay['zero']} · recompute {lay['recompute']} · sequence-parallel "
            f"{'on' if lay['sequence_parallel'] else 'off'} · micro-batch {lay['micro_batch']} x "
            f"{lay['microbatches']} · global batch {lay['global_batch']} x {lay['seq_len']} tokens"
            f" · {lay['precision']}"
        )
        if lay.get("framework"):
            layout += f" · framework {lay['framework']}"
        if doc.get("lora"):  # the adapters: their rank, where they sit, the base they train over
            lora = doc["lora"]
            layout += f" · LoRA rank {lora['rank']} on {lora['targets']}" + (
                " over a 4-bit base" if lora["base_bits"] == 4 else ""
            )
    return [head, Text(layout)]


def not_fitting_line(doc: dict[str, Any]) -> Text:
    """The verdict above the numbers of a plan that does not fit: they are hypothetical (an
    engine that keeps layers in host memory runs it anyway: that comes first)."""
    if doc.get("offload"):
        return Text(
            f"DOES NOT FIT: {doc['gpus']} x {doc['gpu']} cannot hold this job in GPU memory; "
            f"{doc['offload']['engine']} runs it with host memory (next lines), and the times "
            "after them are what it would take if it fit (hypothetical)",
            style="bold red",
        )
    return Text(
        f"DOES NOT FIT: {doc['gpus']} x {doc['gpu']} cannot hold this job; the times below are "
        "what it would take if it fit (hypothetical)",
        style="bold red",
    )


def offload_lines(doc: dict[str, Any]) -> Text:
    """What an engine that keeps layers in host memory makes of the model: the split it makes of
    a model too large for the GPUs, or the one --gpu-layers asks for."""
    off = doc["offload"]
    gpus = "GPUs" if doc["gpus"] > 1 else "GPU"
    text = Text()
    asked = off["gpu_layers_requested"]
    text.append(
        "With host memory " if asked is None else f"With --gpu-layers {asked} ", style="bold"
    )
    host_layers = off["layers"] - off["gpu_layers"]
    text.append(
        f"{off['engine']} keeps {off['gpu_layers']} of {off['layers']} layers on the "
        f'{gpus} (its log: "offloaded {off["reported"]} layers to GPU") and {host_layers} '
        f"{'layer' if host_layers == 1 else 'layers'}"
        f"{'' if off['output_on_gpu'] else ' and the output layer'} "
        f"({format_bytes(off['host_bytes'])}) in host memory, read at "
        f"{off['host_bw_GBps']:.3g} GB/s ({off['host_title']}; --host-memory):\n"
    )
    if not off["fits"]:
        most = off["max_gpu_layers"]
        text.append(
            f"  DOES NOT FIT: that needs {format_bytes(off['gpu_bytes_per_gpu'])} per GPU, "
            f"more than its {format_bytes(off['capacity_bytes'])}; the engine fails to "
            f"allocate its buffers (cudaMalloc: out of memory). "
            + (
                f"At most {most} layers fit (--gpu-layers {most})\n"
                if most > 0
                else "Not one layer fits beside the GPU runtime's context and the engine's buffers\n"
            ),
            style="bold red",
        )
    if off["host_fits"] is False:
        need, free = format_bytes(off["host_bytes"]), format_bytes(off["host_ram_bytes"])
        most, asked = off["max_gpu_layers"], off["gpu_layers_requested"]
        more = (
            f"keep more layers on the GPU (up to --gpu-layers {most}), "
            if asked is not None and asked < most
            else ""
        )
        text.append(
            f"  DOES NOT FIT in host memory: {need} of layers, {free} free (--host-ram); "
            + (
                f'Ollama refuses to load it ("model requires more system memory ({need}) than is '
                f'available"): free memory, add swap, {more}or take a smaller quantisation'
                if off["engine"] == "ollama"
                else "llama.cpp maps the model file, so what does not fit is read from disk at "
                "every token, far slower than shown"
            )
            + "\n",
            style="bold red",
        )
    share = off["decode_host_s"] / off["decode_step_s"] if off["decode_step_s"] else 0.0
    text.append(
        f"  decode {off['decode_tokens_per_s']:.2g} tokens/s per sequence, "
        f"{format_time(off['decode_step_s'])} per token ({share:.0%} of it reading host memory) · "
        f"time to first token {format_time(off['ttft_s'])}"
        + (" (if it fit)" if not off["fits"] or off["host_fits"] is False else "")
        + (f"\n  the times below: every layer on the {gpus}" if doc["memory"]["fits"] else "")
    )
    return text


def _three_figures(value: float) -> str:
    """A rate to three significant figures, with thousands separators: 104,590 -> 105,000."""
    if value <= 0:
        return "0"
    return f"{float(f'{value:.3g}'):,.0f}" if value >= 100 else f"{value:.3g}"


def _append_likely(text: Text, likely: dict[str, Any], span: str, runs: str) -> None:
    """The Likely line: ``span`` (the plan's figures at the range's ends) and where the
    published ``runs`` fell, or why the range is not known."""
    text.append("Likely ", style="bold")
    if not likely["known"]:
        text.append(f"range not known: {likely['why']}\n")
        return
    low, high = likely["speed_ratio"]
    text.append(
        f"{span}: 90% of {likely['published_runs']} published {runs} came within "
        f"{low:.2f}-{high:.2f}x of the speed the model plans for them\n"
    )


def step_lines(doc: dict[str, Any]) -> list[RenderableType]:
    """Step time decomposition and throughput."""
    s, t = doc["step"], doc["throughput"]
    lines = Text()
    lines.append("Step ", style="bold")
    lines.append(
        f"{format_time(s['time_s'])} = compute {format_time(s['compute_s'])} + exposed communication "
        f"{format_time(s['comm_exposed_s'])} + pipeline bubble {format_time(s['bubble_s'])}\n"
    )
    lines.append("Throughput ", style="bold")
    lines.append(
        f"{t['tokens_per_s']:,.0f} tokens/s · {t['tflops_per_gpu']:.0f} TFLOP/s per GPU "
        f"(hardware {t['hw_tflops_per_gpu']:.0f}) · MFU {_pct(t['mfu'])} · HFU {_pct(t['hfu'])} · "
        f"GPU busy {_pct(t['gpu_utilisation'])}\n"
    )
    fw = doc.get("framework")
    if fw and fw["efficiency"] != 1:
        lines.append("Framework ", style="bold")
        lines.append(
            f"{fw['title']} at {fw['efficiency']:.2f} of the kernel-level step; the kernel level "
            f"(every kernel at its achievable rate, NVIDIA's kernels): "
            f"{fw['kernel_level_tokens_per_s']:,.0f} tokens/s · MFU {_pct(fw['kernel_level_mfu'])}\n"
        )
    likely = t.get("likely")
    if likely:
        lo, hi = likely.get("tokens_per_s", (0.0, 0.0))
        steps = likely.get("step_s", (0.0, 0.0))
        kind = "MoE runs" if doc["model"].get("moe") else "runs"
        _append_likely(
            lines,
            likely,
            f"{_three_figures(lo)}-{_three_figures(hi)} tokens/s (step {format_time(steps[0])} to "
            f"{format_time(steps[1])})",
            f"{kind} on this framework",
        )
    # what the step does not price but published runs show (model/step.py's dispatch line)
    caveat = next((a for a in doc.get("assumptions", []) if a.startswith("dispatch: ")), "")
    if caveat:
        lines.append("Caveat ", style="bold")
        lines.append(caveat.removeprefix("dispatch: ") + "\n")
    lines.append("Bottleneck ", style="bold")
    lines.append(doc["bottleneck"])
    return [lines]


def inference_lines(doc: dict[str, Any]) -> list[RenderableType]:
    """Prefill, decode, KV cache, per-token communication."""
    inf = doc["inference"]
    text = Text()
    text.append("Time to first token ", style="bold")
    text.append(f"{format_time(inf['ttft_s'])} (prefill)\n")
    text.append("Decode ", style="bold")
    spec = inf.get("speculative")
    per = (
        f"{format_time(inf['decode_step_s'])} a token: a speculative step of "
        f"{format_time(spec['step_s'])} ({format_time(spec['draft_s'])} of it the {spec['draft']} "
        f"draft's {spec['spec_tokens']} pass(es)"
        + (
            f", a tree of top-{spec['draft_topk']}, {spec['verify_tokens']} positions verified"
            if spec.get("draft_topk", 1) > 1
            else ""
        )
        + f") emits {spec['accept_length']:g} tokens a sequence; "
        f"without the draft {format_time(spec['plain_decode_step_s'])} a token, "
        f"{spec['plain_decode_step_s'] / inf['decode_step_s']:.2f}x the speed with it"
        + (
            " (slower: the draft does not pay at this batch)"
            if spec["plain_decode_step_s"] < inf["decode_step_s"]
            else ""
        )
        if spec
        else f"{format_time(inf['decode_step_s'])} per step"
    )
    text.append(
        f"{inf['decode_tokens_per_s']:.1f} tokens/s per sequence · {inf['batch_tokens_per_s']:.0f} "
        f"tokens/s for the batch · {per}, bound by {inf['decode_bound']}\n"
    )
    batch = int(doc.get("layout", {}).get("batch") or 1)
    under_load = inf.get("tpot_under_load_s") or 0.0
    if batch > 1 and under_load > inf["decode_step_s"] * 1.005:
        text.append(
            f"  under load, each of the {batch} slots refilled as its request ends: "
            f"{format_time(under_load)} per output token ({under_load / inf['decode_step_s'] - 1:+.0%}"
            ": the prompts of the requests that join meanwhile run on the same GPUs; what a "
            "serving benchmark's mean TPOT reads)\n"
        )
    hidden = inf.get("host_step_hidden_s") or 0.0
    if hidden > 0:
        before = (
            (spec["step_s"] + hidden) / spec["accept_length"]
            if spec
            else inf["decode_step_s"] + hidden
        )
        name = split_release(str(doc.get("layout", {}).get("engine") or "the engine"))[0]
        since = str(inf.get("host_step_hidden_since") or "")
        earlier = release_before(since) or "0"
        text.append(
            f"  {name} from {since} prepares each step while the GPU runs the one before, hiding "
            f"{format_time(hidden)} of host time a step; before {since}: {format_time(before)} a "
            f"{'token' if spec else 'step'}, {1 / before:.1f} tokens/s per sequence (--engine {name}@{earlier} models one)\n"
            if since
            else f"  {name} queues each step while the GPU runs the one before, hiding "
            f"{format_time(hidden)} of host time a step\n"
        )
    likely = inf.get("likely")
    if likely:
        lo, hi = likely.get("decode_tokens_per_s", (0.0, 0.0))
        _append_likely(
            text, likely, f"{lo:.3g}-{hi:.3g} tokens/s per sequence", "runs on this engine"
        )
    if inf.get("engine_caveat"):
        text.append("Published runs ", style="bold")
        text.append(f"{inf['engine_caveat']}\n")
    text.append("KV cache ", style="bold")
    state = inf.get("state_bytes_per_sequence") or 0
    recurrent = (
        f" + {format_bytes(state)} of recurrent state per sequence (linear-attention layers)"
        if state
        else ""
    )
    text.append(
        f"{format_decimal_bytes(inf['kv_cache_bytes_per_token'])} per token (whole model)"
        f"{recurrent} · {format_bytes(inf['kv_cache_bytes_per_gpu'])} per GPU for this batch\n"
    )
    text.append("End to end ", style="bold")
    text.append(f"{format_time(inf['e2e_s'])} per request")
    out: list[RenderableType] = [text]
    if doc["comm"]:
        table = Table(
            title="Communication per generated token", box=box.SIMPLE_HEAD, title_justify="left"
        )
        for col in ("group", "op", "size", "calls", "link", "time per token"):
            table.add_column(col)
        for c in doc["comm"]:
            table.add_row(
                c["group"],
                c["op"],
                format_decimal_bytes(c["size_bytes"]),
                _count(c["count_per_token"]),
                link_shown(c["link"], doc.get("intra_link", "")),
                format_time(c["time_per_token_s"]),
            )
        out.append(table)
    return out


def assumptions_block(lines: Sequence[str]) -> Text:
    """The assumptions, one per line, dimmed."""
    text = Text("Assumptions\n", style="bold")
    for line in lines:
        text.append(f"  · {line}\n", style="dim")
    return text


def plan_renderables(doc: dict[str, Any], explain: bool) -> list[RenderableType]:
    """Everything `fabriclens plan` prints for one network."""
    out: list[RenderableType] = [*plan_summary(doc), memory_table(doc)]
    if not doc["memory"]["fits"]:
        out.append(not_fitting_line(doc))
    if doc.get("offload"):
        out.append(offload_lines(doc))
    if doc["workload"] == "inference":
        out += inference_lines(doc)
    else:
        if doc["comm"]:
            out.append(comm_table(doc))
        out += step_lines(doc)
    out += [Text(f"warning: {w}", style="bold yellow") for w in doc.get("warnings", [])]
    if explain:
        out.append(assumptions_block(doc["assumptions"]))
    else:
        out.append(
            Text(
                "(--explain lists the formulas and catalog values behind every number)", style="dim"
            )
        )
    return out


def comparison_renderables(docs: list[dict[str, Any]], explain: bool) -> list[RenderableType]:
    """The same job across network choices, side by side."""
    first = docs[0]
    out: list[RenderableType] = [plan_summary(first, with_network=False)[0]]
    inference = first["workload"] == "inference"
    table = Table(title="Network comparison", box=box.SIMPLE_HEAD, title_justify="left")
    cols = ["network", "NICs/node"]
    cols += (
        ["TTFT", "decode tok/s", "per-token comm", "bound"]
        if inference
        else ["step", "tokens/s", "GPU busy", "MFU", "comm share", "layout", "bottleneck"]
    )
    cols += ["net cost", "fits"]
    for c in cols:
        table.add_column(
            c, justify="left" if c in ("network", "layout", "bottleneck", "bound") else "right"
        )
    best = min(d["step"]["time_s"] for d in docs)
    for d in docs:
        row = [d["network"], str(d["nics_per_node"])]
        if inference:
            inf = d["inference"]
            comm = sum(c["time_per_token_s"] for c in d["comm"])
            row += [
                format_time(inf["ttft_s"]),
                f"{inf['decode_tokens_per_s']:.1f}",
                format_time(comm),
                inf["decode_bound"],
            ]
        else:
            s, t, lay = d["step"], d["throughput"], d["layout"]
            slower = s["time_s"] / best - 1
            row += [
                format_time(s["time_s"]) + (f" (+{100 * slower:.0f}%)" if slower > 0.005 else ""),
                f"{t['tokens_per_s']:,.0f}",
                _pct(t["gpu_utilisation"]),
                _pct(t["mfu"]),
                _pct(t["comm_share"]),
                f"tp{lay['tp']} pp{lay['pp']} dp{lay['dp']} z{lay['zero']}",
                d["bottleneck"],
            ]
        row += [format_number(d["network_cost_relative"]), "yes" if d["memory"]["fits"] else "NO"]
        table.add_row(*row)
    out.append(table)
    out.append(
        Text(
            "net cost: NIC ports x relative per-port cost (100GbE port = 1); an estimate for ranking",
            style="dim",
        )
    )
    nics = {d["nics_per_node"] for d in docs if d["network"] != "none"}
    if len(nics) == 1 and first["nodes"] > 1:
        out.append(
            Text(
                f"NICs/node: {nics.pop()} for every network, so the networks are compared, not NIC "
                "counts (set --nics-per-node)",
                style="dim",
            )
        )
    if explain:
        out.append(assumptions_block(first["assumptions"]))
    return out


def collective_renderables(doc: dict[str, Any]) -> list[RenderableType]:
    """`fabriclens collective` output."""
    text = Text()
    text.append(
        f"{doc['op']} of {format_decimal_bytes(doc['size_bytes'])} on {doc['ranks']} ranks",
        style="bold",
    )
    text.append(
        f" ({counted(doc['nodes'], 'node')} x {counted(doc['gpus_per_node'], 'GPU')}, {doc['intra_link']}"
    )
    if doc["network"] != "none":
        text.append(f", {doc['network']} x {doc['nics_per_node']} per node")
    text.append(")\n")
    text.append(
        f"time {format_time(doc['time_s'])} · algbw {doc['algbw_GBps']:.2f} GB/s · busbw "
        f"{doc['busbw_GBps']:.2f} GB/s · algorithm {doc['algorithm']}"
        + (f" ({doc['protocol']})" if doc.get("protocol") else "")
        + " · latency "
        f"{format_time(doc['latency_s'])}\n"
    )
    text.append(f"bottleneck: {doc['bottleneck']}")
    return [text, assumptions_block(doc["assumptions"])]


def catalog_table(title: str, columns: Sequence[str], rows: Iterable[Sequence[str]]) -> Group:
    """A catalog listing; the first column (the names users type) is never cut."""
    rows = [tuple(row) for row in rows]
    table = Table(title=title, box=box.SIMPLE_HEAD, title_justify="left")
    name_width = max((len(row[0]) for row in rows if row), default=0)
    for i, c in enumerate(columns):
        table.add_column(c, min_width=name_width if i == 0 else None, no_wrap=i == 0)
    for row in rows:
        table.add_row(*row)
    return Group(table)


def transfer_renderables(doc: dict[str, Any]) -> list[RenderableType]:
    """`fabriclens transfer` output."""
    head = Text()
    head.append(
        f"{format_decimal_bytes(doc['size_bytes'])} over {doc['link']} ({doc['protocol']})",
        style="bold",
    )
    head.append(f": {format_rate(doc['goodput_bits_per_s'])} of goodput ({doc['goodput_source']})")
    table = Table(title=f"to {doc['hosts']} host(s)", box=box.SIMPLE_HEAD, title_justify="left")
    for col in ("strategy", "time", ""):
        table.add_column(col)
    for s in doc["strategies"]:
        name = s["name"] + (
            " (fastest)" if s["name"] == doc["best"] and len(doc["strategies"]) > 1 else ""
        )
        table.add_row(name, format_time(s["time_s"]), s["note"])
    advice = Text("Advice\n", style="bold")
    for line in doc["advice"]:
        advice.append(f"  · {line}\n")
    return [head, table, advice]


def _inside_replica(rep: dict[str, Any]) -> str:
    """` (ep 8, dp attention 8)`: how a capacity replica splits its experts and attention."""
    parts = [f"{name} {rep[key]}" for key, name in (("ep", "ep"), ("dp", "dp attention"))
             if rep.get(key, 1) > 1]  # fmt: skip
    return f" ({', '.join(parts)})" if parts else ""


def capacity_renderables(doc: dict[str, Any]) -> list[RenderableType]:
    """`fabriclens capacity` output."""
    rep = doc["replica"]
    head = Text()
    served = f" of {doc['model']}" if doc.get("model") else ""
    gpu = f" x {doc['gpu']}" if doc.get("gpu") else " GPU(s)"
    head.append(
        f"{doc['gpus']}{gpu}: {counted(doc['replicas'], 'replica')}{served}, tp {rep['tp']} x pp {rep['pp']}"
        + _inside_replica(rep)
        + ",",
        style="bold",
    )
    team = doc.get("team")
    if team:
        head.append(
            f" for a team of {team['people']} ({counted(doc['users'], 'concurrent stream')})"
        )
        head.append(f" at ≤ {format_time(doc['tpot_slo_s'])} per token")
    else:
        head.append(
            f" for {counted(doc['users'], 'user')} at ≤ {format_time(doc['tpot_slo_s'])} per token"
        )
    if not doc["slo_met"]:
        head.append(" — TARGET NOT MET", style="bold red")
    eng = doc["engine"]
    parallel = eng["max_parallel"]["value"]
    if team:
        head.append(f"\nteam: {team['people']} people, {team['arrivals_per_s'] * 3600:.3g} requests per hour "
                    f"at the busiest hour, {team['request_s']:.3g} s each: {team['mean_concurrency']:.3g} in flight "
                    f"on average, {counted(team['streams'], 'stream')} to serve")  # fmt: skip
        for a in team["assumptions"]:
            head.append(f"\n  {a['name']} = {a['value']:g} ({a['unit']}): {a['source']}")
    head.append(f"\nreplica size: {doc['tp_choice']['reason']}")
    head.append(f"\nengine {eng['name']}: {eng['gpu_memory_utilization']['value']:.0%} of each GPU "
                f"({format_decimal_bytes(eng['usable_bytes_per_gpu'])} usable), {eng['precision']} weights at "
                f"{eng['bits_per_weight']['value']:.3g} bits, "
                + (f"{counted(parallel, 'request')} at once per replica" if parallel else "no cap on requests per replica"))  # fmt: skip
    if eng.get("caveat"):
        head.append(f"\npublished runs: {eng['caveat']}")
    off = doc.get("offload")
    if off:
        head.append("\n")
        head.append(offload_lines({"offload": off, "gpus": rep["gpus"], "memory": {"fits": False}}))
    table = Table(title="One replica", box=box.SIMPLE, title_justify="left", show_header=False)
    table.add_column("")
    table.add_column("", justify="right")
    decode_rows = (
        [
            (f"speculative step ({rep['draft']} draft of {rep['spec_tokens']}"
             + (f", top-{rep['draft_topk']} tree, {rep['verify_tokens']} verified"
                if rep.get("draft_topk", 1) > 1 else ", verified") + ")",
             format_time(rep["spec_step_s"])),
            (f"decode time per token (the step / {rep['accept_length']:g} accepted)",
             format_time(rep["decode_step_s"])),
        ]
        if rep.get("spec_tokens")
        else [("decode step", format_time(rep["decode_step_s"]))]
    )  # fmt: skip
    rows = [
        ("requests at once (the engine's limit)", f"{rep['max_batch_kv']}")
        if off
        else ("concurrent requests the KV cache holds", f"{rep['max_batch_kv']}"),
        ("batch that meets the target", f"{rep['batch']}"),
        *decode_rows,
        ("time per output token under load", format_time(rep["tpot_s"])),
        ("tokens/s per user", f"{rep['tokens_per_s_per_user']:.1f}"),
        ("tokens/s per replica", f"{rep['tokens_per_s']:,.0f}"),
        ("time to first token under load", format_time(rep["ttft_s"])),
        ("tensor-parallel communication per token", format_time(rep["comm_per_token_s"])),
        ("KV cache per token (whole model)", format_decimal_bytes(rep["kv_cache_bytes_per_token"])),
    ]
    for label, value in rows:
        table.add_row(label, value)
    totals = Text()
    totals.append(f"required {doc['required_tokens_per_s']:,.0f} tokens/s · provided {doc['provided_tokens_per_s']:,.0f} tokens/s · "
                  f"egress {format_rate(doc['egress_bits_per_s'])} · weights {format_decimal_bytes(doc['weights_bytes'])}")  # fmt: skip
    advice = Text("Advice\n", style="bold")
    for line in doc["advice"]:
        advice.append(f"  · {line}\n")
    return [head, table, totals, advice]


def advise_renderables(doc: dict[str, Any]) -> list[RenderableType]:
    """`fabriclens advise` output."""
    out: list[RenderableType] = []
    facts = doc["facts"]
    head = Text()
    head.append(f"{facts['scenario']}, {counted(facts['nodes'], 'node')}", style="bold")
    head.append(f" · {'cloud' if facts['cloud'] else 'own data centre'} · network engineer: "
                f"{'yes' if facts['network_engineer'] else 'no'}" + (f" · {facts['workload']}" if facts["workload"] else ""))  # fmt: skip
    out.append(head)
    if doc["tiers"]:
        table = Table(title="Network tiers for this job", box=box.SIMPLE_HEAD, title_justify="left")
        for col in ("network", "time", "net cost", "bottleneck", "comm share", "verdict"):
            table.add_column(
                col, justify="right" if col in ("time", "net cost", "comm share") else "left"
            )
        for t in doc["tiers"]:
            style = "bold" if t["verdict"] == "recommended" else ""
            table.add_row(t["network"], format_time(t["time_s"]), format_number(t["network_cost_relative"]), t["bottleneck"],
                          _pct(t["comm_share"]), Text(t["verdict"], style=style))  # fmt: skip
        out.append(table)
        rec = Text("Recommendation ", style="bold")
        rec.append(doc["reason"])
        if doc["sensitivity"]:
            rec.append("\n" + doc["sensitivity"][0].upper() + doc["sensitivity"][1:])
        out.append(rec)
    guide = Text("\nGuide\n", style="bold")
    for a in doc["advice"]:
        guide.append(f"  {a['topic']}: ", style="bold")
        guide.append(f"{a['advice']}\n")
        guide.append(f"    because {a['because']}\n", style="dim")
        if a["watch"]:
            guide.append(f"    watch: {'; '.join(a['watch'])}\n", style="dim")
    out.append(guide)
    return out


def datapath_renderables(doc: dict[str, Any]) -> list[RenderableType]:
    """`fabriclens datapath` output."""
    table = Table(
        title=f"Data path of {counted(doc['nodes'], 'node')} x {counted(doc['gpus_per_node'], 'GPU')}",
        box=box.SIMPLE_HEAD,
        title_justify="left",
    )
    for col in ("stage", "capacity", "demand", "busy", ""):
        table.add_column(col, justify="right" if col in ("capacity", "demand", "busy") else "left")
    for s in doc["stages"]:
        busy = Text(_pct(s["utilisation"]), style="bold red" if s["utilisation"] > 1 else "")
        table.add_row(
            s["name"],
            f"{format_decimal_bytes(s['capacity_bytes_per_s'])}/s",
            f"{format_decimal_bytes(s['demand_bytes_per_s'])}/s",
            busy,
            s["note"],
        )
    text = Text()
    text.append("Narrowest ", style="bold")
    text.append(
        f"{doc['narrowest']} · the job runs {format_number(doc['slowdown'])}x as long as the GPUs need\n"
    )
    for line in doc["advice"]:
        text.append(f"  · {line}\n")
    return [table, text, assumptions_block(doc["assumptions"])]


def search_renderables(doc: dict[str, Any]) -> list[RenderableType]:
    """`fabriclens search` output."""
    out: list[RenderableType] = []
    for net in doc["networks"]:
        table = Table(
            title=f"{net['network']}: {net['layouts_fitting']} of {net['layouts_tried']} layouts fit",
            box=box.SIMPLE_HEAD, title_justify="left",
        )  # fmt: skip
        for col in (
            "#",
            "layout",
            "step",
            "tokens/s",
            "MFU",
            "memory/GPU",
            "bottleneck",
            "why it loses to the one above",
        ):
            table.add_column(
                col,
                justify="right"
                if col in ("#", "step", "tokens/s", "MFU", "memory/GPU")
                else "left",
            )
        for i, x in enumerate(net["top"], start=1):
            table.add_row(str(i), x["layout"], format_time(x["time_s"]), f"{x['tokens_per_s']:,.0f}", _pct(x["mfu"]),
                          format_bytes(x["memory_per_gpu_bytes"]), x["bottleneck"], x["why_slower"])  # fmt: skip
        out.append(table)
    if len(doc["networks"]) > 1:
        text = Text("Pareto front (network cost vs step time): ", style="bold")
        text.append(" < ".join(doc["pareto"]) + "\n")
        for line in doc["upgrades"]:
            text.append(f"  · {line}\n")
        out.append(text)
    out.append(
        Text(
            f"{doc['layouts_evaluated']} layouts evaluated in {doc['elapsed_s']:.2f} s", style="dim"
        )
    )
    return out


def bench_import_renderables(doc: dict[str, Any]) -> list[RenderableType]:
    """`fabriclens bench import` output: the sweep like nccl-tests, then the judgement and flags."""
    title = f"{doc['op'] or 'op ?'} on {doc['ranks'] or '?'} ranks"
    if doc["judged"]:
        title += f" ({counted(doc['nodes'], 'node')} x {doc['gpus_per_node']} {doc['gpu']})"
    table = Table(title=title, box=box.SIMPLE_HEAD, title_justify="left")
    for col in ("size", "time", "algbw GB/s", "busbw GB/s", "in-place busbw", "#wrong"):
        table.add_column(col, justify="right")
    for r in doc["sizes"]:
        inplace = r["inplace_busbw_GBps"]
        wrong = "N/A" if r["wrong"] is None else str(r["wrong"])
        if r.get("error") is not None:
            wrong = f"err {r['error']:g}"
        table.add_row(format_decimal_bytes(r["size_bytes"]), format_time(r["time_us"] * 1e-6), f"{r['algbw_GBps']:.2f}",
                      f"{r['busbw_GBps']:.2f}", f"{inplace:.2f}" if inplace is not None else "-", wrong)  # fmt: skip
    text = Text()
    style = {"ok": "bold green", "warning": "bold yellow", "critical": "bold red", "info": "bold"}
    if doc["judged"]:
        text.append("Plateau ", style="bold")
        text.append(
            f"{doc['plateau_busbw_GBps']:.2f} GB/s busbw · expected {doc['expected_busbw_GBps']:.2f} GB/s · efficiency {_pct(doc['efficiency'])}\n"
        )
    elif doc["plateau_busbw_GBps"] is not None:
        text.append("Plateau ", style="bold")
        text.append(
            f"{doc['plateau_busbw_GBps']:.2f} GB/s busbw at {format_decimal_bytes(doc['plateau_size_bytes'])}\n"
        )
    shown = doc.get("verdict_level", doc["level"])  # the plateau's; the flags carry their own
    text.append(f"{shown.upper()} ", style=style[shown])
    text.append((doc["verdict"] or "see the flags below") + "\n")
    for f in doc["flags"]:
        text.append(f"  {f['level']}: ", style=style[f["level"]])
        text.append(f"{f['text']}\n")
    for check in doc["next_checks"]:
        text.append(f"  next: {check}\n")
    out: list[RenderableType] = [table] if doc["sizes"] else []
    return [*out, text, assumptions_block(doc["assumptions"])]


def logs_renderables(doc: dict[str, Any]) -> list[RenderableType]:
    """`fabriclens logs` output: what NCCL used, then findings by severity."""
    nccl = doc["nccl"]
    head = Text()
    head.append("NCCL ", style="bold")
    if len(nccl.get("versions", [])) > 1:
        head.append(" and ".join(nccl["versions"]) + " (more than one)", style="yellow")
    else:
        head.append(nccl["version"] or "version not found in the log")
    head.append(f" · transport {nccl['transport'] or 'not seen'}")
    if nccl["ib_devices"]:
        head.append(f" · HCAs {', '.join(nccl['ib_devices'])}")
    if nccl["oob"]:
        head.append(f" · OOB {nccl['oob']}")
    if nccl["socket_ifaces"]:
        head.append(f" · sockets on {', '.join(nccl['socket_ifaces'])}")
    if nccl["gdr"] is not None:
        head.append(f" · GPUDirect RDMA {'on' if nccl['gdr'] else 'off'}")
    if nccl["env"]:
        head.append(" · overrides " + ", ".join(f"{k}={v}" for k, v in nccl["env"].items()))

    def count(n: int, what: str) -> str:
        return f"{n:,} {what}{'' if n == 1 else 's'}"

    if "lines" not in nccl:  # a report saved before the counts were added
        return [head, *findings_renderables(doc["findings"])]
    # a log without one NCCL line or fact (Ollama's, vLLM's start-up) gets no NCCL heading
    nccl_seen = nccl["lines"] or any(
        nccl[k] for k in ("version", "transport", "ib_devices", "socket_ifaces", "env")
    )
    found = nccl.get("other_lines_read", 0)  # (absent from a report saved before it)
    read = (f"read {count(nccl['lines'], 'NCCL line')} from {count(len(nccl['hosts']), 'host')}, "
            f"{count(nccl['other_lines'] + found, 'other line')}"
            + (f" ({found:,} with something it reads)" if found else ""))  # fmt: skip
    if nccl["records_not_kept"]:
        read += f"; {count(nccl['records_not_kept'], 'record')} past the caps counted, not kept"
    heading = [head] if nccl_seen else []
    return [*heading, Text(read, style="dim"), *findings_renderables(doc["findings"])]


def findings_renderables(findings: list[dict[str, Any]]) -> list[RenderableType]:
    """Findings (as `findings_doc` gives them), each with its cause, evidence, checks and fix."""
    out: list[RenderableType] = []
    styles = {"critical": "bold red", "warning": "bold yellow", "info": "bold"}
    for f in findings:
        text = Text()
        text.append(f"{f['severity'].upper()} ", style=styles[f["severity"]])
        text.append(f"{f['symptom']}\n", style="bold")
        if f["cause"]:
            text.append(f"  cause: {f['cause']}\n")
        for line in f["evidence"]:
            text.append(f"  evidence: {line}\n", style="dim")
        for line in f["check"]:
            text.append(f"  check: {line}\n")
        if f["fix"]:
            text.append(f"  fix: {f['fix']}\n")
        out.append(text)
    if not findings:
        out.append(Text("no findings"))
    return out


def bench_net_renderables(doc: dict[str, Any]) -> list[RenderableType]:
    """`fabriclens bench net` output."""
    table = Table(
        title=f"TCP to {doc['host']} ({doc['tool']}, {doc['duration_s']:g} s per run)",
        box=box.SIMPLE_HEAD,
        title_justify="left",
    )
    for col in ("streams", "goodput", "retransmits"):
        table.add_column(col, justify="right")
    for r in doc["runs"]:
        retr = r["retransmits"]
        table.add_row(
            str(r["streams"]),
            f"{r['goodput_bits_per_s'] / 1e6:,.1f} Mbit/s",
            "-" if retr is None else str(retr),
        )
    text = Text()
    if doc["rtt"]:
        rtt = doc["rtt"]
        text.append("TCP round trip ", style="bold")
        text.append(
            f"p50 {format_time(rtt['p50_s'])} · p99 {format_time(rtt['p99_s'])} · mean {format_time(rtt['mean_s'])}\n"
        )
    style = {"ok": "bold green", "warning": "bold yellow", "critical": "bold red"}[doc["level"]]
    text.append(f"{doc['level'].upper()} ", style=style)
    text.append(doc["verdict"] + "\n")
    if doc["expected_note"]:
        text.append(f"  expected: {doc['expected_note']}\n", style="dim")
    return [table, text]


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f} ms"


def _numeric(cell: str) -> bool:
    """A number, maybe with a unit or a share ("0.08 ms", "20/20", "10% of 940"): right-aligned."""
    import re

    return bool(re.fullmatch(r"-|[\d,.]+(%| ms)?(/\d+)?( of [\d,.]+)?( \S+)?", cell))


def doctor_renderables(doc: dict[str, Any]) -> list[RenderableType]:
    """`fabriclens doctor` output: the symptom walk, the host's tables, then findings by severity."""
    from fabriclens.report.doctor_tables import STATUS_MARK, doctor_sections

    out: list[RenderableType] = []
    if doc.get("walk"):
        w = doc["walk"]
        text = Text()
        text.append(f"Symptom: {w['title']}\n", style="bold")
        styles = {"found": "bold red", "ok": "green", "not checked": "yellow", "manual": "yellow"}
        for i, step in enumerate(w["steps"], 1):
            text.append(f"  {i}. {step['step']}: ")
            text.append(STATUS_MARK[step["status"]], style=styles.get(step["status"], "dim"))
            for line in step["evidence"] if step["status"] == "found" else []:
                text.append(f"\n       {line}", style="dim")
            if step["manual"]:
                text.append(f"\n       by hand: {step['manual']}", style="dim")
            text.append("\n")
        text.append(w["summary"], style="bold")
        if w.get("exit_note"):
            text.append(f"\n{w['exit_note']}", style="dim")
        out.append(text)
    for sec in doctor_sections(doc):
        table = Table(title=sec.title, box=box.SIMPLE_HEAD, title_justify="left")
        for i, col in enumerate(sec.header):
            table.add_column(
                col,
                justify="left"
                if i == 0 or not sec.rows or not _numeric(sec.rows[0][i])
                else "right",
            )
        for row in sec.rows:
            table.add_row(*row)
        out.append(table)
    out += findings_renderables(doc["findings"])
    return out


def watch_renderables(doc: dict[str, Any]) -> list[RenderableType]:
    """`fabriclens watch` summary: the overall verdict and the share of time in each."""
    text = Text()
    if not doc["samples"]:
        return [Text("no samples taken")]
    text.append("Verdict ", style="bold")
    text.append(f"{doc['verdict']}: {doc['meaning']}\n")
    text.append("Time ", style="bold")
    text.append(" · ".join(f"{v} {100 * s:.0f}%" for v, s in doc["shares"].items()))
    text.append(f" of {doc['samples']} samples over {doc['duration_s']:.1f} s\n")
    gpu = (
        "-"
        if doc["gpu_util_mean_pct"] is None
        else f"{doc['gpu_util_mean_pct']:.0f}% busy on average"
    )
    load = (
        "no link capacity known, so no share of it (give --link-speed)"
        if doc["net_load_mean"] is None
        else f"{100 * doc['net_load_mean']:.0f}% of capacity on average"
    )
    text.append("GPUs ", style="bold")
    text.append(
        f"{gpu} ({doc['gpu_source']}{': ' + doc['gpu_problem'] if doc['gpu_problem'] else ''})\n"
    )
    text.append("Network ", style="bold")
    text.append(
        f"{', '.join(doc['links']) or 'no links'}: busiest {format_rate(doc['peak_link_bits_per_s'])} at peak; {load}"
    )
    if doc.get("plot"):
        text.append(f"\nPlot {doc['plot']}")
    return [text]
