"""`fabriclens doctor`: this host's NICs and RDMA ports (and logs), checked against rules."""

from pathlib import Path
from typing import Annotated, Any

import typer


def doctor(
    from_: Annotated[
        list[str] | None,
        typer.Option(
            "--from",
            help="Diagnose captured output instead of this host: a collect bundle (.tar.gz or folder), "
            "a folder or file of tool output, or - for text pasted on stdin",
        ),
    ] = None,
    logs: Annotated[
        list[Path] | None, typer.Option("--logs", help="NCCL / PyTorch log files to read too")
    ] = None,
    sys_root: Annotated[
        Path, typer.Option(help="Read sysfs under this root (tests, or a copied tree)")
    ] = Path("/"),
    exclude_rdma: Annotated[
        list[str] | None, typer.Option(help="RDMA devices whose counters must not be read")
    ] = None,
    sample: Annotated[
        float,
        typer.Option(
            help="Read the counters twice this many seconds apart: rates, and errors rising now"
        ),
    ] = 0.0,
    peer: Annotated[
        list[str] | None,
        typer.Option(
            help="Test the path to this host too: latency, jitter, loss, TCP connect, path MTU, hops"
        ),
    ] = None,
    peer_port: Annotated[int, typer.Option(help="TCP port for the connect-time test")] = 22,
    pings: Annotated[
        int,
        typer.Option(help="Pings per peer (more finds rarer loss; over 20 go 20 ms apart as root)"),
    ] = 20,
    test_port: Annotated[
        int | None,
        typer.Option(help="Port of the peer's throughput server [default: iperf3 5201, then 5299]"),
    ] = None,
    throughput: Annotated[
        bool,
        typer.Option(
            help="Measure TCP throughput to each peer (needs `doctor --serve` or iperf3 -s there)"
        ),
    ] = True,
    expect: Annotated[
        str | None,
        typer.Option(
            help="What the link to the peers should give: a network id (25gbe) or a wire rate "
            "(1gbit) [default: the NIC's negotiated speed]"
        ),
    ] = None,
    weights: Annotated[
        str | None,
        typer.Option(
            help="Size of the model files loaded from the peer (e.g. 140GB): time to copy them"
        ),
    ] = None,
    url: Annotated[
        str | None,
        typer.Option(
            help="Time requests to this inference endpoint: where its time to first token goes"
        ),
    ] = None,
    data: Annotated[
        str | None, typer.Option(help="--url: request body (JSON), or @FILE [default: a GET]")
    ] = None,
    symptom: Annotated[
        str | None,
        typer.Option(
            help="Walk the checks for: training-slow, nccl-timeout, training-hangs, inference-slow, weights-slow"
        ),
    ] = None,
    serve: Annotated[
        bool,
        typer.Option(
            "--serve",
            help="Be the peer: answer other hosts' throughput tests on every address (port 5299) for --serve-for seconds",
        ),
    ] = False,
    serve_for: Annotated[float, typer.Option(help="--serve: exit after this many seconds")] = 300.0,
    json_out: Annotated[bool, typer.Option("--json", help="JSON output")] = False,
    markdown: Annotated[
        bool, typer.Option("--markdown", help="Markdown output, to paste into a ticket")
    ] = False,
) -> None:
    """Check this host's GPUs, NICs, RDMA ports, listening servers and (with --peer) the path to
    other hosts, and (with --logs) NCCL/PyTorch logs; findings with evidence and the next check."""
    from fabriclens.cli._findings import exit_for, findings_doc, read_logs
    from fabriclens.cli._output import check_formats, emit, split_list
    from fabriclens.diagnose.engine import diagnose
    from fabriclens.diagnose.host import diagnose_host
    from fabriclens.diagnose.symptoms import walk, walk_exit_status, walks
    from fabriclens.errors import InputError
    from fabriclens.probes.peer import valid_host
    from fabriclens.probes.survey import PeerOptions, survey_host

    if serve:
        _serve(serve_for, test_port)
        return
    check_formats(json_out, markdown)
    if from_:
        _from(from_, logs, json_out, markdown)
        return
    from fabriclens.inputs import is_directory

    if not is_directory(sys_root):
        raise InputError(
            f"--sys-root {sys_root} is not a directory", "give / or a copied sysfs tree"
        )
    if not 0 <= sample <= 300:
        raise InputError(f"--sample {sample:g} is out of range", "give 0 (off) to 300 seconds")
    if symptom is not None and symptom not in walks():
        raise InputError(f"unknown --symptom {symptom!r}", f"give one of: {', '.join(walks())}")
    peers = split_list(peer)
    for host in peers:
        if not valid_host(host):
            raise InputError(
                f"--peer {host!r} is not a host name or address",
                "give --peer 10.0.0.2 or --peer node2",
            )
    if not 5 <= pings <= 10000:
        raise InputError(f"--pings {pings} is out of range", "give 5 to 10000 (20 by default)")
    for name, port in (("--peer-port", peer_port), ("--test-port", test_port or 1)):
        if not 1 <= port <= 65535:
            raise InputError(f"{name} {port} is not a port", f"give {name} 22")
    from fabriclens.cli.http_cmd import check_endpoint, check_url, read_body

    if url:
        check_url(url)
    body = read_body(data)
    from fabriclens.plan.transfer import expected_goodput
    from fabriclens.units import parse_size

    opts = PeerOptions(tuple(peers), peer_port, pings, test_port, throughput, expected_goodput(expect),
                       parse_size(weights) if weights else None)  # fmt: skip
    log_findings = diagnose(*read_logs(logs)) if logs else []
    from fabriclens.cli._progress import terminal_progress

    with terminal_progress(json_out) as bar:
        s = survey_host(sys_root, tuple(split_list(exclude_rdma)), sample, opts,
                        progress=bar.observer("peer tests"))  # fmt: skip
    endpoints: list[dict[str, Any]] = []
    if url:
        from fabriclens.diagnose.host import endpoint_facts
        from fabriclens.redact import redact_url

        endpoints = [endpoint_facts(redact_url(url), *check_endpoint(url, body))]
    findings = diagnose_host(
        s.nics,
        s.ports,
        s.gpus,
        s.topology,
        s.services,
        s.peers,
        s.affinity,
        endpoints,
        extra={"limits": s.limits, "nvswitch": s.nvswitch},
    )
    findings += log_findings + s.not_checked
    doc: dict[str, Any] = {
        "interfaces": s.nics,
        "rdma_ports": s.ports,
        "gpu_source": s.gpu_source,
        "gpus": s.gpus,
        "gpu_nic_affinity": s.affinity,
        "services": s.services,
        "limits": s.limits,
        "nvswitch": s.nvswitch,
        "peers": s.peers,
        "endpoints": endpoints,
        "findings": findings_doc(findings),
    }
    if symptom:
        ran = {"nics", "services"}
        ran |= {"gpu"} if s.gpu_source != "none" else set()
        ran |= {"gpu-sample"} if s.gpu_source != "none" and sample > 0 else set()
        ran |= {"peer"} if s.peers else set()
        ran |= {"throughput"} if any(p["goodput_bits_per_s"] for p in s.peers) else set()
        ran |= {"logs"} if logs else set()
        ran |= {"endpoint"} if endpoints else set()
        doc["walk"] = walk(symptom, findings, ran)
        status, doc["walk"]["exit_note"] = walk_exit_status(doc["walk"], findings)
        emit(doc, json_out, "doctor_renderables", markdown)
        if status:
            raise typer.Exit(status)
        return
    emit(doc, json_out, "doctor_renderables", markdown)
    exit_for(findings)


def _from(paths: list[str], logs: list[Path] | None, json_out: bool, markdown: bool) -> None:
    """`doctor --from`: the same rules over captured output (tool kinds told by content)."""
    import tempfile

    from fabriclens.cli._findings import exit_for, findings_doc
    from fabriclens.cli._output import emit
    from fabriclens.diagnose.captured import diagnose_captures
    from fabriclens.probes.captures import read_captures

    with tempfile.TemporaryDirectory(prefix="fabriclens-from-") as tmp:
        caps, base = read_captures(paths, Path(tmp))
    for path in logs or []:
        caps += read_captures([str(path)], Path("."))[0]
    doc, findings = diagnose_captures(caps, base)
    doc["findings"] = findings_doc(findings)
    emit(doc, json_out, "doctor_renderables", markdown)
    exit_for(findings)


def _serve(seconds: float, port: int | None) -> None:
    """`doctor --serve`: the built-in throughput server on every address (IPv4 and IPv6), for a
    bounded time."""
    from fabriclens.bench.tcp import DEFAULT_PORT
    from fabriclens.bench.tcp import serve as run_server
    from fabriclens.errors import InputError

    if not 0 < seconds <= 3600:
        raise InputError(f"--serve-for {seconds:g} is outside (0, 3600] s", "give --serve-for 300")
    p = port or DEFAULT_PORT
    try:
        n = run_server("", p, seconds, ready=lambda q: print(
            f"answering throughput tests on port {q} for {seconds:g} s "
            f"(on the other host: fabriclens doctor --peer <this host>)", flush=True))  # fmt: skip
    except OSError as exc:
        raise InputError(
            f"cannot listen on port {p}: {exc.strerror}", "choose another --test-port"
        ) from None
    print(f"served {n} test(s)")
