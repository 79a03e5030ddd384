"""Helpers for the dashboard tests: the app over the real CLI, a fake live sampler, report files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fabriclens.measure.watch import LinkRate

REPORTS = Path(__file__).parent / "fixtures" / "reports"
# every report kind the Reports page knows, from a real run of the command (fixtures/reports/README.md)
REPORT_KINDS = {
    "doctor.json": "doctor",
    "logs.json": "logs",
    "bench-import.json": "bench import",
    "bench-collective.json": "bench collective",
    "bench-p2p.json": "bench p2p",
    "bench-net.json": "bench net",
    "bench-serve.json": "bench serve",
    "fleet.json": "fleet",
    "http.json": "http",
}


class FakeSampler:
    """A sampler whose GPU load and link rate rise each second: the live page must follow it."""

    def __init__(self) -> None:
        self.n = 0

    def start(self) -> list[str]:
        return ["eth0"]

    def sample(self) -> tuple[list[dict[str, Any]], list[LinkRate]]:
        self.n += 1
        gpus = [
            {
                "index": 0,
                "util_pct": min(100.0, 10.0 * self.n),
                "power_w": 300.0,
                "power_limit_w": 700.0,
            }
        ]
        return gpus, [LinkRate("eth0", 1e8 * self.n, 5e7 * self.n, 1e10)]


def make_app(port: int = 8471, reports: list[Path] | None = None) -> Any:
    from fabriclens.cli.app import command_of, run
    from fabriclens.ui.server import Backend, create_app

    backend = Backend(run=run, command=command_of, reports=reports or [], sampler=FakeSampler)
    return create_app(backend, port=port)
