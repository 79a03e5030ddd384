"""`fabriclens watch`: GPU utilisation beside NIC/RDMA throughput every second, with a verdict."""

from pathlib import Path
from typing import Annotated, Any

import typer


def watch(
    interval: Annotated[float, typer.Option(help="Seconds between samples")] = 1.0,
    duration: Annotated[
        float, typer.Option(help="Stop after this many seconds (0: until Ctrl-C)")
    ] = 0.0,
    count: Annotated[int, typer.Option(help="Stop after this many samples (0: no limit)")] = 0,
    iface: Annotated[
        list[str] | None,
        typer.Option(help="Interfaces to watch [default: the physical ones that are up]"),
    ] = None,
    link_speed: Annotated[
        str | None,
        typer.Option(help="Capacity of each watched link (e.g. 25gbit) when the NIC does not say"),
    ] = None,
    record: Annotated[
        Path | None, typer.Option(help="Append every sample to this JSON-lines file")
    ] = None,
    plot: Annotated[
        Path | None, typer.Option(help="Draw GPU utilisation and throughput to this PNG")
    ] = None,
    sys_root: Annotated[Path, typer.Option(help="Read sysfs under this root (tests)")] = Path("/"),
    exclude_rdma: Annotated[list[str] | None, typer.Option(help="RDMA devices not to read")] = None,
    prometheus: Annotated[
        str | None,
        typer.Option(
            help="Serve the samples as Prometheus metrics at ADDR:PORT/metrics (ADDR defaults to 127.0.0.1)"
        ),
    ] = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print only the summary, as JSON")
    ] = False,
) -> None:
    """GPU utilisation and network throughput side by side, with a running verdict:
    compute-bound, communication-bound, input-bound or idle."""
    import sys
    import time

    from fabriclens.cli._output import emit, split_list
    from fabriclens.errors import InputError
    from fabriclens.measure.watch import VERDICTS, running_verdict, sample_doc, summary
    from fabriclens.probes.gpu import open_gpus
    from fabriclens.probes.watch_sampler import Sampler
    from fabriclens.safe_text import clean_text
    from fabriclens.units import parse_rate

    if not 0.05 <= interval <= 60:
        raise InputError(f"--interval {interval:g} is out of range", "give 0.05 to 60 seconds")
    if duration < 0 or count < 0:
        raise InputError("--duration and --count cannot be negative", "give 0 for no limit")
    from fabriclens.inputs import is_directory

    if not is_directory(sys_root):
        raise InputError(
            f"--sys-root {sys_root} is not a directory", "give / or a copied sysfs tree"
        )
    exporter = _prometheus_address(prometheus) if prometheus is not None else None
    if plot is not None:
        from fabriclens.report.plots import require_matplotlib

        require_matplotlib()
    sink = None
    if record is not None:
        try:
            sink = record.open("a", encoding="utf-8")
        except OSError as exc:
            raise InputError(
                f"cannot write {record}: {exc.strerror}", "choose a writable --record path"
            ) from None
    live = sys_root.resolve() == Path("/")
    gpus = open_gpus(live=live)
    sampler = Sampler(sys_root, gpus, split_list(iface), parse_rate(link_speed) if link_speed else None,
                      tuple(split_list(exclude_rdma)))  # fmt: skip
    names = sampler.start()
    if not names and gpus.read is None:
        raise InputError(
            "nothing to watch: no interfaces matched and no GPUs", "name one with --iface eth0"
        )
    metrics, server = _start_exporter(exporter) if exporter else (None, None)
    samples: list[dict[str, Any]] = []
    started = time.monotonic()
    view = None if json_out or not sys.stdout.isatty() else _live_view()
    try:
        if view:
            view.start()
        while True:
            next_at = started + (len(samples) + 1) * interval
            time.sleep(max(0.0, next_at - time.monotonic()))
            doc = sample_doc(time.monotonic() - started, *sampler.sample())
            samples.append(doc)
            if sink:
                sink.write(_json_line(doc))
                sink.flush()
            running = running_verdict(samples)
            if metrics is not None:
                metrics.update(doc, running)
            if view:
                view.update(_table(doc, running, gpus.name))
            elif not json_out:
                print(clean_text(_line(doc, running)), flush=True)
            if (count and len(samples) >= count) or (duration and doc["t_s"] >= duration):
                break
    except KeyboardInterrupt:
        pass
    finally:
        if view:
            view.stop()
        if sink:
            sink.close()
        if server is not None:
            server.shutdown()
            server.server_close()
    result = summary(samples) | {"gpu_source": gpus.name, "links": names,
                                 "gpu_problem": gpus.problem or None, "verdicts": VERDICTS}  # fmt: skip
    if plot is not None and samples:
        from fabriclens.report.plots import watch_plot

        watch_plot(samples, plot)
        result["plot"] = str(plot)
    emit(result, json_out, "watch_renderables")


def _prometheus_address(value: str) -> tuple[str, int]:
    """``ADDR:PORT``, ``:PORT`` or ``PORT`` (address 127.0.0.1) for --prometheus."""
    from fabriclens.errors import InputError

    addr, sep, port_text = value.rpartition(":")
    addr = addr.strip("[]") if sep else ""
    try:
        port = int(port_text)
    except ValueError:
        port = -1
    if not 1 <= port <= 65535:
        raise InputError(f"--prometheus {value!r} names no port", "write it like 127.0.0.1:9471")
    return addr or "127.0.0.1", port


def _start_exporter(address: tuple[str, int]) -> tuple[Any, Any]:
    import sys

    from fabriclens.errors import InputError

    try:
        from fabriclens.report.prometheus import WatchMetrics, serve
    except ImportError:
        raise InputError(
            "--prometheus needs prometheus-client", "pip install 'fabriclens[ui]'"
        ) from None
    if address[0] not in ("127.0.0.1", "localhost", "::1"):
        sys.stderr.write(
            f"fabriclens: warning: metrics served on {address[0]}: anyone who can reach it can read them\n"
        )
    metrics = WatchMetrics()
    try:
        server = serve(metrics, *address)
    except OSError as exc:
        raise InputError(
            f"cannot serve metrics on {address[0]}:{address[1]}: {exc.strerror}",
            "choose another port",
        ) from None
    return metrics, server


def _json_line(doc: dict[str, Any]) -> str:
    """One sample as a line of strict JSON (a NaN or infinity, e.g. a rate over no time, is null)."""
    import json

    from fabriclens.cli._output import finite

    return json.dumps(finite(doc), separators=(",", ":"), allow_nan=False) + "\n"


def _busiest(doc: dict[str, Any]) -> str:
    if not doc["links"]:
        return "no links"
    top = max(doc["links"], key=lambda lr: max(lr["rx_bits_per_s"], lr["tx_bits_per_s"]))
    load = f" ({100 * top['load']:.0f}% of capacity)" if top["load"] is not None else ""
    return f"{top['name']} rx {top['rx_bits_per_s'] / 1e6:,.1f} tx {top['tx_bits_per_s'] / 1e6:,.1f} Mbit/s{load}"


def _line(doc: dict[str, Any], running: str) -> str:
    gpu = "no GPU" if doc["gpu_util_pct"] is None else f"GPU {doc['gpu_util_pct']:.0f}% busy"
    return f"{doc['t_s']:7.1f} s  {gpu}  {_busiest(doc)}  -> {doc['verdict']} (running: {running})"


def _live_view() -> Any:
    from rich.live import Live

    return Live(refresh_per_second=4, transient=False)


def _table(doc: dict[str, Any], running: str, source: str) -> Any:
    from rich import box
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    table = Table(
        box=box.SIMPLE_HEAD, title=f"fabriclens watch · {doc['t_s']:.0f} s", title_justify="left"
    )
    for col in ("what", "now", "of capacity"):
        table.add_column(col, justify="left" if col == "what" else "right")
    for g in doc["gpus"]:
        power = (
            f"{g['power_w']:.0f} of {g['power_limit_w']:.0f} W"
            if g["power_w"] and g["power_limit_w"]
            else "-"
        )
        table.add_row(f"GPU {g['index']} ({source})", f"{g['util_pct'] or 0:.0f}% busy", power)
    for lr in doc["links"]:
        table.add_row(lr["name"], f"rx {lr['rx_bits_per_s'] / 1e6:,.1f} / tx {lr['tx_bits_per_s'] / 1e6:,.1f} Mbit/s",
                      "-" if lr["load"] is None else f"{100 * lr['load']:.0f}%")  # fmt: skip
    line = Text()
    line.append("now: ", style="bold")
    line.append(doc["verdict"])
    line.append("   over the last 10 samples: ", style="bold")
    line.append(running, style="bold yellow" if running == "communication-bound" else "bold")
    return Group(table, line)
