"""`fabriclens lab`: an emulated cluster on this machine (root)."""

from typing import Annotated

import typer

from fabriclens.cli._output import print_json, print_rich

lab_app = typer.Typer(
    name="lab",
    help="An emulated cluster on this machine: hosts in network namespaces on one switch, with links you can slow down, delay and break (needs root).",
    no_args_is_help=True,
)

NameOpt = Annotated[str, typer.Option("--name", help="Lab name (1-8 lower-case letters/digits)")]


def _settings(
    bandwidth: str | None, delay: str | None, jitter: str | None, loss: str | None, mtu: int | None
) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in (
        ("bandwidth", bandwidth),
        ("delay", delay),
        ("jitter", jitter),
        ("loss", loss),
    ):
        if value is not None:
            out[key] = value
    if mtu is not None:
        out["mtu"] = str(mtu)
    return out


@lab_app.command("up")
def up(
    name: NameOpt = "lab",
    hosts: Annotated[int, typer.Option(help="Number of hosts")] = 2,
    bandwidth: Annotated[str | None, typer.Option(help="Link rate, e.g. 1gbit, 100mbit")] = None,
    delay: Annotated[
        str | None, typer.Option(help="One-way delay of each link, each direction, e.g. 2ms")
    ] = None,
    jitter: Annotated[str | None, typer.Option(help="Uniform +/- jitter, e.g. 0.5ms")] = None,
    loss: Annotated[
        str | None, typer.Option(help="Loss per packet per direction, e.g. 0.5%")
    ] = None,
    mtu: Annotated[int | None, typer.Option(help="Link MTU")] = None,
    link: Annotated[
        list[str] | None,
        typer.Option("--link", help="Per-host override, e.g. h2:bandwidth=100mbit,loss=2%"),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="JSON output")] = False,
) -> None:
    """Bring up N hosts on one emulated switch."""
    from fabriclens.lab.lab import Lab, require_root
    from fabriclens.lab.spec import LinkSpec, parse_link_override, with_settings

    require_root()
    base = with_settings(LinkSpec(), _settings(bandwidth, delay, jitter, loss, mtu))
    overrides: dict[str, dict[str, str]] = {}
    for item in link or []:
        host, settings = parse_link_override(item, hosts)
        overrides.setdefault(host, {}).update(settings)
    from fabriclens.cli._progress import terminal_progress

    with terminal_progress(json_out) as bar:
        lab = Lab.up(name=name, hosts=hosts, link=base, overrides=overrides,
                     progress=bar.observer("hosts"))  # fmt: skip
    _show(lab.to_json(), json_out)


@lab_app.command("status")
def status(
    name: NameOpt = "lab",
    json_out: Annotated[bool, typer.Option("--json", help="JSON output")] = False,
) -> None:
    """Show a lab's hosts, addresses, link settings and the impairment mechanism, and what on
    the host differs from that (exit status 1 when something does)."""
    from fabriclens.lab.lab import Lab, locked, require_root

    require_root()
    with locked(name):
        lab = Lab.load(name)
        drift = lab.check()
    doc = lab.to_json()
    doc["drift"] = drift
    _show(doc, json_out)
    if drift:
        raise typer.Exit(1)


@lab_app.command(
    "exec", context_settings={"allow_extra_args": True, "ignore_unknown_options": True}
)
def exec_(
    host: Annotated[str, typer.Argument(help="Host name, e.g. h1")],
    command: Annotated[list[str], typer.Argument(help="Command and arguments (after --)")],
    name: NameOpt = "lab",
    timeout: Annotated[float, typer.Option(help="Seconds before the command is stopped")] = 3600.0,
) -> None:
    """Run a command inside a host: fabriclens lab exec h1 -- iperf3 -c 198.18.0.2"""
    import subprocess

    from fabriclens.errors import InputError
    from fabriclens.lab.lab import Lab, locked, require_root

    require_root()
    with locked(name):
        lab = Lab.load(name)
    argv = lab.exec_argv(host, command)
    try:
        proc = subprocess.run(argv, timeout=timeout, check=False)
    except FileNotFoundError:
        raise InputError(
            f"{command[0]}: command not found", "install it, or give its full path"
        ) from None
    except subprocess.TimeoutExpired:
        raise InputError(
            f"{command[0]} ran past --timeout {timeout:g} s and was stopped", "raise --timeout"
        ) from None
    raise typer.Exit(proc.returncode)


@lab_app.command("impair")
def impair(
    host: Annotated[str, typer.Argument(help="Host name, e.g. h2")],
    name: NameOpt = "lab",
    bandwidth: Annotated[str | None, typer.Option(help="New link rate (0 = unshaped)")] = None,
    delay: Annotated[str | None, typer.Option(help="New one-way delay")] = None,
    jitter: Annotated[str | None, typer.Option(help="New jitter")] = None,
    loss: Annotated[str | None, typer.Option(help="New loss")] = None,
    mtu: Annotated[int | None, typer.Option(help="New MTU on the host's side (a mismatch)")] = None,
    down: Annotated[bool, typer.Option("--down", help="Take the link down")] = False,
    up_: Annotated[bool, typer.Option("--up", help="Bring the link back up")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="JSON output")] = False,
) -> None:
    """Change a live link."""
    from fabriclens.errors import InputError
    from fabriclens.lab.lab import Lab, locked, require_root

    require_root()
    settings = _settings(bandwidth, delay, jitter, loss, mtu)
    if down and up_:
        raise InputError("--down and --up together", "give one of them")
    if down or up_:
        settings["state"] = "down" if down else "up"
    if not settings:
        raise InputError(
            "nothing to change",
            "give --bandwidth, --delay, --jitter, --loss, --mtu, --down or --up",
        )
    with locked(name):
        lab = Lab.load(name)
        lab.impair(host, settings)
    _show(lab.to_json(), json_out)


@lab_app.command("down")
def down(
    name: NameOpt = "lab",
    all_: Annotated[
        bool,
        typer.Option(
            "--all",
            help="Remove every lab this tool brought up (only what their state records); report what else looks like one",
        ),
    ] = False,
    json_out: Annotated[bool, typer.Option("--json", help="JSON output")] = False,
) -> None:
    """Tear a lab down (or all of them)."""
    import sys

    from fabriclens.lab.lab import down_all, down_name, require_root

    require_root()
    result = down_all() if all_ else down_name(name)
    if json_out:
        print_json(result.to_json())
        return
    print(f"removed: {', '.join(result.removed) if result.removed else 'nothing'}")
    for line in result.notes:
        sys.stderr.write(f"note: {line}\n")
    for line in result.left_alone:
        sys.stderr.write(f"left alone: {line}\n")


def _show(doc: dict[str, object], json_out: bool) -> None:
    if json_out:
        print_json(doc)
        return
    from rich import box
    from rich.table import Table
    from rich.text import Text

    from fabriclens.lab.spec import LinkSpec, lab_command, lab_hints

    head = Text()
    head.append(f"lab {doc['name']}", style="bold")
    head.append(
        f" · subnet {doc['subnet']} · switch namespace {doc['switch_netns']} · bandwidth: {doc['bandwidth']} · delay/jitter/loss: {doc['impairment']}"
    )
    table = Table(box=box.SIMPLE_HEAD)
    for col in ("host", "address", "namespace", "link", "path"):
        table.add_column(col)
    hosts = doc["hosts"]
    assert isinstance(hosts, list)
    for h in hosts:
        spec = LinkSpec.from_json(h["link"])
        path = (
            "kernel (veth)"
            if h["path"] == "veth"
            else f"userspace stage (pid {h['forwarder_pid']})"
        )
        table.add_row(h["name"], h["address"], h["netns"], spec.describe(), path)
    drift = doc.get("drift") or []
    assert isinstance(drift, list)
    warn = Text()
    if drift:
        warn.append("the lab differs from its state:\n", style="bold red")
        warn.append("\n".join(f"  {line}" for line in drift) + "\n", style="red")
        warn.append(
            f"rebuild it: {lab_command(str(doc['name']), 'down')}, then up again", style="red"
        )
    note = Text(
        "delay, jitter and loss apply in each direction of a host's link: the RTT between two hosts is "
        "2 x (delay of one + delay of the other)\n"
        + "\n".join(lab_hints(str(doc["name"]), [h["address"] for h in hosts])),
        style="dim",
    )
    print_rich([head, table, *([warn] if drift else []), note])
