"""The dashboard's ASGI app (Starlette): pages rendered on the server (Jinja2), charts drawn by
plotly.js served from the installed plotly package, the CLI's JSON as the API."""

from __future__ import annotations

import contextlib
import json
import secrets
import shutil
import tempfile
import time
import weakref
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import click
from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import (
    FileResponse,
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from fabriclens.ui import figures, live, reports
from fabriclens.ui.commands import (
    PAGES,
    Field,
    FormError,
    Outcome,
    Runner,
    build_argv,
    cli_line,
    fields_of,
)
from fabriclens.ui.guard import HostOriginGuard, allowed_hosts

MAX_UPLOAD_BYTES = 1 * 2**20  # a config.json is a few KiB
MAX_UPLOADS = 64


def plotly_js() -> Path:
    """plotly.min.js as the installed plotly package ships it (no CDN)."""
    import plotly

    return Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


class UploadStore:
    """Uploaded config.json files, by token, in a private folder made on the first upload and
    removed when the server stops (or, failing that, when the process exits): a user's files do
    not outlive the dashboard."""

    def __init__(self) -> None:
        self.paths: dict[str, Path] = {}
        self.names: dict[str, str] = {}
        self._dir: Path | None = None
        self._finalizer: weakref.finalize[Any, UploadStore] | None = None

    def __len__(self) -> int:
        return len(self.paths)

    def put(self, body: bytes, name: str) -> str:
        if self._dir is None:
            self._dir = Path(tempfile.mkdtemp(prefix="fabriclens-ui-"))
            self._finalizer = weakref.finalize(self, shutil.rmtree, self._dir, ignore_errors=True)
        token = secrets.token_hex(16)
        path = self._dir / f"{token}.json"
        path.write_bytes(body)
        self.paths[token] = path
        self.names[token] = name
        return token

    @property
    def folder(self) -> Path | None:
        return self._dir

    def close(self) -> None:
        if self._finalizer is not None:
            self._finalizer()
        self.paths.clear()
        self.names.clear()


@dataclass
class Backend:
    """What the app needs from the CLI: a way to run a command, and a command's definition."""

    run: Callable[[list[str]], int]
    command: Callable[[str], click.Command]
    reports: list[Path] = field(default_factory=list)  # files named on `fabriclens ui`'s line
    sampler: live.SamplerFactory = live.host_sampler


def _query(request: Request) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for k, v in request.query_params.multi_items():
        out.setdefault(k, []).append(v)
    return out


def _catalog_lists() -> dict[str, list[str]]:
    from fabriclens.catalog import load

    return {
        "model": [m.name for m in load.models()],
        # a part sold in several memory sizes (a Mac) offers each: m2-max-64gb
        "gpu": [
            n
            for g in load.gpus()
            for n in (g.name, *(f"{g.name}-{s}gb" for s in g.memory_options_gb))
        ],
        "network": [n.name for n in load.networks()],
        "intra-link": [lk.name for lk in load.links()],
        "engine": [e.name for e in load.engines()],
    }


def create_app(backend: Backend, bind: str = "127.0.0.1", port: int = 8471,
               allow_hosts: tuple[str, ...] = ()) -> HostOriginGuard:  # fmt: skip
    """The app, wrapped in the Host/Origin guard for ``bind:port``."""
    env = Environment(loader=PackageLoader("fabriclens.ui", "templates"),
                      autoescape=select_autoescape(["html"]), trim_blocks=True, lstrip_blocks=True)  # fmt: skip
    env.filters["num"] = _num
    run = Runner(backend.run)
    store = UploadStore()
    uploads, upload_names = store.paths, store.names
    fields_cache: dict[str, list[Field]] = {}
    catalog_cache: dict[str, dict[str, list[str]]] = {}
    streams = {"open": 0}

    def fields(cmd: str) -> list[Field]:
        if cmd not in fields_cache:
            fields_cache[cmd] = fields_of(backend.command(cmd))
        return fields_cache[cmd]

    def lists() -> dict[str, list[str]]:
        if "x" not in catalog_cache:
            catalog_cache["x"] = _catalog_lists()
        return catalog_cache["x"]

    def render(name: str, **ctx: Any) -> str:
        return env.get_template(name).render(pages=PAGES, **ctx)

    def execute(cmd: str, query: dict[str, list[str]]) -> tuple[list[str], Outcome]:
        argv = build_argv(cmd, fields(cmd), query, uploads)
        return argv, run(argv)

    def result_ctx(cmd: str, query: dict[str, list[str]]) -> dict[str, Any]:
        """What a page shows for a submitted form: the document, its charts and tables, the
        command line, or the CLI's error line."""
        started = time.perf_counter()
        try:
            argv, outcome = execute(cmd, query)
        except FormError as exc:
            return {"error": str(exc)}
        if outcome.status == 2 or not outcome.stdout.strip():
            return {"error": outcome.error or f"exit status {outcome.status}",
                    "cli": cli_line(argv, uploads, upload_names)}  # fmt: skip
        doc = json.loads(outcome.stdout)
        kind = reports.kind_of(doc) or cmd
        figs = _command_figures(cmd, doc) if cmd in PAGES else reports.report_figures(kind, doc)
        params = urlencode([(k, v) for k, vs in query.items() for v in vs])
        return {"doc": doc, "docs": doc if isinstance(doc, list) else [doc], "kind": kind,
                "figures": figs, "headlines": reports.headlines(kind, doc), "status": outcome.status,
                "cli": cli_line(argv, uploads, upload_names), "api": f"/api/{cmd}?{params}",
                "view": f"/{cmd}?{params}", "elapsed_ms": 1000 * (time.perf_counter() - started)}  # fmt: skip

    async def index(request: Request) -> Response:
        return RedirectResponse("/plan", status_code=307)

    async def page(request: Request) -> Response:
        cmd = request.path_params["cmd"]
        if cmd not in PAGES:
            return PlainTextResponse("no such page", status_code=404)
        query = _query(request)
        result = await run_in_threadpool(result_ctx, cmd, query) if query else None
        html = render("command.html", cmd=cmd, title=PAGES[cmd][0], main=PAGES[cmd][1],
                      fields=fields(cmd), query=query, lists=lists(), result=result)  # fmt: skip
        return HTMLResponse(html, status_code=400 if result and "error" in result else 200)

    async def fragment(request: Request) -> Response:
        cmd = request.path_params["cmd"]
        if cmd not in PAGES:
            return PlainTextResponse("no such page", status_code=404)
        result = await run_in_threadpool(result_ctx, cmd, _query(request))
        return HTMLResponse(render("_result.html", cmd=cmd, result=result),
                            status_code=400 if "error" in result else 200)  # fmt: skip

    async def api(request: Request) -> Response:
        cmd = request.path_params["cmd"]
        if cmd not in PAGES:
            return JSONResponse({"error": f"no command {cmd!r} here"}, status_code=404)
        try:
            _argv, outcome = await run_in_threadpool(execute, cmd, _query(request))
        except FormError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        if outcome.status == 2 or not outcome.stdout.strip():
            return JSONResponse(
                {"error": outcome.error, "exit_status": outcome.status}, status_code=400
            )
        # exactly what `fabriclens <cmd> ... --json` prints
        return Response(outcome.stdout, media_type="application/json",
                        headers={"X-Fabriclens-Exit-Status": str(outcome.status)})  # fmt: skip

    async def upload(request: Request) -> Response:
        body = await _bounded_body(request, MAX_UPLOAD_BYTES)
        if body is None:
            return JSONResponse({"error": "a config.json is at most 1 MiB"}, status_code=413)
        try:
            json.loads(body)
        except ValueError:
            return JSONResponse(
                {"error": "that file is not JSON: upload a Hugging Face config.json"},
                status_code=400,
            )
        if len(uploads) >= MAX_UPLOADS:
            return JSONResponse(
                {"error": "too many uploads: restart fabriclens ui"}, status_code=429
            )
        token = store.put(body, (request.headers.get("x-filename") or "config.json")[:100])
        return JSONResponse({"model": f"upload:{token}", "name": upload_names[token]})

    async def reports_page(request: Request) -> Response:
        return HTMLResponse(render("reports.html", title="Reports",
                                   named=[(i, p.name) for i, p in enumerate(backend.reports)]))  # fmt: skip

    def report_ctx(name: str, body: bytes) -> dict[str, Any]:
        try:
            doc = json.loads(body)
        except ValueError as exc:
            return {
                "error": f"{name} is not a JSON document ({exc}); give a --json output of fabriclens"
            }
        kind = reports.kind_of(doc)
        if not kind:
            return {"error": f"{name} is no fabriclens --json document this page knows",
                    "doc": doc, "docs": [doc], "kind": "", "figures": [], "headlines": []}  # fmt: skip
        return {"doc": doc, "docs": doc if isinstance(doc, list) else [doc], "kind": kind, "name": name,
                "figures": reports.report_figures(kind, doc), "headlines": reports.headlines(kind, doc)}  # fmt: skip

    async def report_upload(request: Request) -> Response:
        body = await _bounded_body(request, reports.MAX_REPORT_BYTES)
        if body is None:
            return PlainTextResponse("a report is at most 16 MiB", status_code=413)
        name = (request.headers.get("x-filename") or "report.json")[:100]
        ctx = await run_in_threadpool(report_ctx, name, body)
        return HTMLResponse(
            render("_report.html", result=ctx),
            status_code=400 if "error" in ctx and not ctx.get("doc") else 200,
        )

    async def report_named(request: Request) -> Response:
        i = request.path_params["index"]
        if not 0 <= i < len(backend.reports):
            return PlainTextResponse("no such report", status_code=404)
        path = backend.reports[i]  # a file the user named on the command line, nothing else
        try:
            body = path.read_bytes()[: reports.MAX_REPORT_BYTES + 1]
        except OSError as exc:
            ctx: dict[str, Any] = {"error": f"cannot read {path.name}: {exc.strerror}"}
        else:
            ctx = await run_in_threadpool(report_ctx, path.name, body)
        return HTMLResponse(render("reports.html", title="Reports", result=ctx,
                                   named=[(j, p.name) for j, p in enumerate(backend.reports)]))  # fmt: skip

    async def live_page(request: Request) -> Response:
        return HTMLResponse(render("live.html", title="Live", figure=figures.watch_figure()))

    async def live_stream(request: Request) -> Response:
        try:
            interval = float(request.query_params.get("interval", "1"))
        except ValueError:
            interval = 0.0
        if not 0.2 <= interval <= 60:
            return PlainTextResponse("interval: give 0.2 to 60 seconds", status_code=400)
        if streams["open"] >= live.MAX_STREAMS:
            return PlainTextResponse("too many live pages open", status_code=429)

        async def events() -> Any:
            streams["open"] += 1
            try:
                async for chunk in live.stream(backend.sampler, interval):
                    yield chunk
            finally:
                streams["open"] -= 1

        return StreamingResponse(events(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-store"})  # fmt: skip

    async def plotly_asset(request: Request) -> Response:
        return FileResponse(plotly_js(), media_type="text/javascript",
                            headers={"Cache-Control": "public, max-age=86400"})  # fmt: skip

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            store.close()

    static = Path(__file__).parent / "static"
    app = Starlette(lifespan=lifespan, routes=[
        Route("/", index),
        Route("/static/plotly.min.js", plotly_asset),
        Mount("/static", StaticFiles(directory=static), name="static"),
        Route("/api/upload", upload, methods=["POST"]),
        Route("/api/report", report_upload, methods=["POST"]),
        Route("/api/watch/stream", live_stream),
        Route("/api/{cmd}", api),
        Route("/fragment/{cmd}", fragment),
        Route("/reports", reports_page),
        Route("/reports/{index:int}", report_named),
        Route("/live", live_page),
        Route("/{cmd}", page),
    ])  # fmt: skip
    app.state.uploads = store
    return HostOriginGuard(app, allowed_hosts(bind, port, allow_hosts))


async def _bounded_body(request: Request, limit: int) -> bytes | None:
    """The request body, or None once it passes ``limit`` bytes (read no further)."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _command_figures(cmd: str, doc: Any) -> list[figures.Figure]:
    docs = doc if isinstance(doc, list) else [doc]
    table: Mapping[str, Callable[[Any], list[figures.Figure]]] = {
        "plan": lambda d: figures.plan_figures(docs),
        "search": figures.search_figures,
        "capacity": figures.capacity_figures,
        "transfer": figures.transfer_figures,
        "datapath": figures.datapath_figures,
        "topo": figures.topo_figures,
        "simulate": figures.simulate_figures,
    }
    return table[cmd](doc)


def _num(value: Any) -> str:
    """A number as a table shows it: integers with separators, floats to 4 significant digits."""
    if isinstance(value, bool) or value is None:
        return "-" if value is None else ("yes" if value else "no")
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if abs(value) >= 1e15:
            return f"{value:.3e}"
        return f"{value:,.0f}" if abs(value) >= 1e4 else f"{value:,.4g}"
    return str(value)
