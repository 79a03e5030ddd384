"""`fabriclens ui`: the local web dashboard (Starlette + uvicorn, charts by plotly)."""

from pathlib import Path
from typing import Annotated

import typer


def ui(
    ctx: typer.Context,
    reports: Annotated[
        list[Path] | None,
        typer.Argument(
            help="--json reports to offer on the Reports page (the only paths it reads)"
        ),
    ] = None,
    port: Annotated[int, typer.Option(help="Port to listen on")] = 8471,
    bind: Annotated[
        str, typer.Option(help="Address to listen on; anything but loopback is reachable by others")
    ] = "127.0.0.1",
    allow_host: Annotated[
        list[str] | None,
        typer.Option(help="Another name this server answers to in Host (behind a proxy)"),
    ] = None,
    open_browser: Annotated[
        bool, typer.Option("--open", help="Open the dashboard in the default browser")
    ] = False,
) -> None:
    """A local web dashboard over the same documents: plan, search, capacity, transfer, datapath,
    topo and simulate as forms and charts; reports (doctor, logs, bench, fleet, http) opened from
    JSON; watch as a live timeline. Binds 127.0.0.1 unless --bind names another address."""
    import sys

    from fabriclens.errors import InputError

    try:
        import uvicorn

        from fabriclens.ui.server import Backend, create_app
    except ImportError as exc:
        raise InputError(
            f"the dashboard needs {exc.name or 'its web libraries'}",
            "pip install 'fabriclens[ui]'",
        ) from None
    if not 0 <= port <= 65535:
        raise InputError(f"--port {port} is out of range", "give 1 to 65535")
    files = list(reports or [])
    for f in files:
        if not f.is_file():
            raise InputError(f"no such report file: {f}", "name a --json output of a command")
    if bind not in ("127.0.0.1", "localhost", "::1"):
        from fabriclens.safe_text import clean_text

        sys.stderr.write(
            f"fabriclens: warning: listening on {clean_text(bind)}: anyone who can reach it can use the "
            "dashboard (it has no login); use the default 127.0.0.1 and an SSH tunnel instead\n"
        )
    import socket

    try:  # refuse a taken port as bad input, before uvicorn logs a traceback
        family = socket.AF_INET6 if ":" in bind else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((bind, port))
            port = probe.getsockname()[1]
    except OSError as exc:
        raise InputError(
            f"cannot listen on {bind}:{port}: {exc.strerror}", "choose another --port"
        ) from None
    backend = Backend(run=ctx.obj["run"], command=ctx.obj["command_of"], reports=files)
    app = create_app(backend, bind=bind, port=port, allow_hosts=tuple(allow_host or ()))
    host = f"[{bind}]" if ":" in bind else bind
    url = f"http://{'127.0.0.1' if bind in ('0.0.0.0', '::') else host}:{port}/"
    sys.stderr.write(f"fabriclens ui: {url}  (Ctrl-C stops it)\n")
    if open_browser:
        import webbrowser

        webbrowser.open(url)
    uvicorn.run(app, host=bind, port=port, log_level="warning", access_log=False)
