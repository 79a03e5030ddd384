"""`fabriclens doctor`: this host's NICs and RDMA ports (and logs), checked against rules."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer


def doctor(
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
    json_out: Annotated[bool, typer.Option("--json", help="JSON output")] = False,
    markdown: Annotated[
        bool, typer.Option("--markdown", help="Markdown output, to paste into a ticket")
    ] = False,
) -> None:
    """Check the local NICs, RDMA ports and (with --logs) NCCL/PyTorch logs; findings with evidence."""
    import shutil
    import time

    from fabriclens.cli._findings import exit_for, findings_doc, read_logs
    from fabriclens.cli._output import check_formats, emit, split_list
    from fabriclens.diagnose.engine import Finding, diagnose
    from fabriclens.diagnose.host import (
        diagnose_host,
        gpu_facts,
        nic_facts,
        peer_facts,
        rdma_facts,
        service_facts,
        topology_facts,
    )
    from fabriclens.errors import InputError
    from fabriclens.parse.ethtool import EthtoolInfo, parse_ethtool
    from fabriclens.parse.netdev import NetInterface, RdmaPort
    from fabriclens.parse.nvidia_smi import QUERY_COMMAND, parse_gpu_query, parse_topo
    from fabriclens.probes._run import run_command
    from fabriclens.probes.sysfs_net import read_interfaces, read_listeners, read_rdma_ports

    check_formats(json_out, markdown)
    if not sys_root.is_dir():
        raise InputError(
            f"--sys-root {sys_root} is not a directory", "give / or a copied sysfs tree"
        )
    if not 0 <= sample <= 300:
        raise InputError(f"--sample {sample:g} is out of range", "give 0 (off) to 300 seconds")
    from fabriclens.probes.peer import valid_host

    peers = split_list(peer)
    for host in peers:
        if not valid_host(host):
            raise InputError(
                f"--peer {host!r} is not a host name or address",
                "give --peer 10.0.0.2 or --peer node2",
            )
    if not 1 <= peer_port <= 65535:
        raise InputError(f"--peer-port {peer_port} is not a port", "give --peer-port 22")
    live = sys_root.resolve() == Path("/")
    not_checked: list[Finding] = []
    excluded = tuple(split_list(exclude_rdma))
    earlier: dict[str, NetInterface] = {}
    earlier_ports: dict[tuple[str, int], RdmaPort] = {}
    if sample > 0:
        earlier = {n.name: n for n in read_interfaces(sys_root)}
        earlier_ports = {(p.device, p.port): p for p in read_rdma_ports(sys_root, excluded)}
        started = time.monotonic()
        time.sleep(sample)
        sample = time.monotonic() - started
    nics = read_interfaces(sys_root)
    have_ethtool = live and shutil.which("ethtool") is not None
    nic_rows: list[dict[str, Any]] = []
    for nic in nics:
        info: EthtoolInfo | None = None
        if have_ethtool and nic.physical:
            res = run_command(["ethtool", nic.name], timeout_s=5)
            info = parse_ethtool(res.stdout) if res.ok else None
        nic_rows.append(nic_facts(nic, info, earlier.get(nic.name), sample))
    if live and not have_ethtool:
        not_checked.append(Finding("not-checked-ethtool", "info", "supported NIC speeds not checked: ethtool is not installed",
                                   "", ("apt-get install ethtool; ethtool <iface>",), "", ()))  # fmt: skip
    ports = read_rdma_ports(sys_root, excluded)
    port_rows = [rdma_facts(p, earlier_ports.get((p.device, p.port)), sample) for p in ports]
    if not ports:
        not_checked.append(Finding("no-rdma", "info", "no RDMA devices: multi-node NCCL traffic will use TCP sockets",
                                   "no /sys/class/infiniband entries", ("ls /sys/class/infiniband", "ibstatus"), "", ()))  # fmt: skip
    gpu_rows: list[dict[str, Any]] = []
    topo_rows: list[dict[str, Any]] = []
    if live and shutil.which("nvidia-smi") is None:
        not_checked.append(Finding("not-checked-gpu", "info", "GPUs not checked: no NVIDIA driver tools here",
                                   "", ("nvidia-smi", "nvidia-smi topo -m"), "", ()))  # fmt: skip
    elif live:
        query = run_command(QUERY_COMMAND, timeout_s=10)
        gpu_rows = [gpu_facts(g) for g in parse_gpu_query(query.stdout)] if query.ok else []
        topo = run_command(["nvidia-smi", "topo", "-m"], timeout_s=10)
        if topo.ok:
            topo_rows = [topology_facts(parse_topo(topo.stdout))]
        if not query.ok:
            not_checked.append(Finding("not-checked-gpu", "info", f"GPUs not checked: {query.command} failed",
                                       query.stderr.strip()[:200], (query.command,), "", ()))  # fmt: skip
    service_rows = service_facts(read_listeners(sys_root))
    peer_rows: list[dict[str, Any]] = []
    if peers and shutil.which("ping") is None:
        not_checked.append(Finding("not-checked-peer", "info", "the path to the peer not checked: ping is not installed",
                                   "", ("apt-get install iputils-ping",), "", ()))  # fmt: skip
    elif peers:
        from fabriclens.probes.peer import probe_peer

        mtus = {n.name: n.mtu for n in nics if n.mtu}
        peer_rows = [peer_facts(probe_peer(h, peer_port, mtus)) for h in peers]
    findings = diagnose_host(nic_rows, port_rows, gpu_rows, topo_rows, service_rows, peer_rows)
    if logs:
        findings += diagnose(*read_logs(logs))
    findings += not_checked
    doc = {
        "interfaces": nic_rows,
        "rdma_ports": port_rows,
        "gpus": gpu_rows,
        "services": service_rows,
        "peers": peer_rows,
        "findings": findings_doc(findings),
    }
    emit(doc, json_out, "doctor_renderables", markdown)
    exit_for(findings)
