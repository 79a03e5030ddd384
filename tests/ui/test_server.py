"""The dashboard's HTTP layer: the API is the CLI's JSON, the guard refuses foreign hosts and
origins, pages read no path, reports of every kind render with their findings first."""

from __future__ import annotations

import contextlib
import io
import json
from typing import Any

import pytest

from ui_helpers import REPORT_KINDS, REPORTS, make_app


def _cli_json(argv: list[str]) -> tuple[int, str]:
    from fabriclens.cli.app import run

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = run(argv)
    return status, out.getvalue()


def _timeless(doc: Any) -> Any:
    """The document without the time the command took to compute it (search's elapsed_s)."""
    return {k: v for k, v in doc.items() if k != "elapsed_s"} if isinstance(doc, dict) else doc


def test_api_plan_is_exactly_the_cli_json(client: Any) -> None:
    r = client.get("/api/plan", params=[("model", "llama-3.1-8b"), ("gpus", "16"),
                                        ("network", "100g-roce"), ("network", "ndr-ib")])  # fmt: skip
    assert r.status_code == 200
    status, text = _cli_json(
        ["plan", "llama-3.1-8b", "--gpus", "16", "--network", "100g-roce,ndr-ib", "--json"]
    )
    assert r.text == text
    assert r.headers["x-fabriclens-exit-status"] == str(status)


@pytest.mark.parametrize("cmd,query,argv", [
    ("search", {"model": "llama-3.1-8b", "gpus": "16", "network": "ndr-ib"},
     ["search", "llama-3.1-8b", "--gpus", "16", "--network", "ndr-ib"]),
    ("capacity", {"model": "llama-3.1-8b", "users": "50"}, ["capacity", "llama-3.1-8b", "--users", "50"]),
    ("transfer", {"size": "140GB", "link": "10gbe"}, ["transfer", "140GB", "--link", "10gbe"]),
    ("datapath", {"model": "llama-3.1-8b"}, ["datapath", "llama-3.1-8b"]),
    ("topo", {"gpus": "64"}, ["topo", "--gpus", "64"]),
    ("simulate", {"op": "all_reduce", "size": "1GB", "gpus": "64", "effects": "off"},
     ["simulate", "all_reduce", "1GB", "--gpus", "64", "--no-effects"]),
])  # fmt: skip
def test_every_page_api_matches_its_command(
    client: Any, cmd: str, query: dict[str, str], argv: list[str]
) -> None:
    r = client.get(f"/api/{cmd}", params=query)
    assert r.status_code == 200, r.text
    assert _timeless(r.json()) == _timeless(json.loads(_cli_json([*argv, "--json"])[1]))
    page = client.get(f"/{cmd}", params=query)
    assert page.status_code == 200
    assert "fabriclens " + " ".join(argv) + " --json" in page.text.replace("&#39;", "'")


def test_a_cli_error_is_its_one_line(client: Any) -> None:
    r = client.get("/api/plan", params={"model": "llama-3.1-70b", "tp": "3"})
    assert r.status_code == 400
    assert "--tp 3 does not divide" in r.json()["error"]
    page = client.get("/plan", params={"model": "llama-3.1-70b", "tp": "3"})
    assert page.status_code == 400 and "does not divide" in page.text


@pytest.mark.parametrize("query", [
    {"model": "/etc/passwd"}, {"model": "../../etc/hosts.json"}, {"model": "x.json"},
    {"fabric": "/etc/passwd"}, {"catalog": "/etc/passwd"}, {"plot": "/tmp/x.png"},
    {"model": "upload:" + "0" * 32},
])  # fmt: skip
def test_pages_read_no_path(client: Any, query: dict[str, str]) -> None:
    r = client.get("/api/plan", params=query)
    assert r.status_code == 400
    assert "passwd" not in r.text or "not a catalog name" in r.text or "no field" in r.text


def test_a_page_takes_an_ollama_tag_but_no_hugging_face_path(client: Any) -> None:
    """An Ollama tag names no file; an owner/name id could, so a page asks for an upload."""
    r = client.get("/api/capacity", params={"model": "qwen2.5:7b-instruct-q8_0", "users": "2",
                                            "gpu": "rtx-4090"})  # fmt: skip
    assert r.status_code == 200 and r.json()["model"] == "qwen2.5-7b"
    r = client.get("/api/plan", params={"model": "meta-llama/Llama-3.1-8B"})
    assert r.status_code == 400 and "not a catalog name" in r.text
    assert "huggingface.co/meta-llama/Llama-3.1-8B/resolve/main/config.json" in r.text


def test_a_mac_s_sized_name_is_offered_and_planned(client: Any) -> None:
    """The GPU list offers each memory size of a part sold in several (a Mac), and the page
    sizes it as the command does (Ollama, one machine)."""
    page = client.get("/capacity")
    assert page.status_code == 200 and 'value="m2-max-64gb"' in page.text
    r = client.get("/api/capacity", params={"model": "llama3.1:8b", "users": "1",
                                            "gpu": "m2-max-64gb"})  # fmt: skip
    assert r.status_code == 200, r.text
    assert r.json()["gpu"] == "m2-max-64gb" and r.json()["engine"]["name"] == "ollama"


def test_an_uploaded_config_json_plans_like_the_file(client: Any) -> None:
    from pathlib import Path

    path = Path(__file__).parents[1] / "fixtures" / "hf" / "llama-3.1-8b.json"
    up = client.post(
        "/api/upload", content=path.read_bytes(), headers={"X-Filename": "config.json"}
    )
    assert up.status_code == 200
    token = up.json()["model"]
    r = client.get("/api/plan", params={"model": token, "gpus": "8"})
    assert r.status_code == 200
    from_file = json.loads(_cli_json(["plan", str(path), "--gpus", "8", "--json"])[1])
    assert r.json()["model"]["params"] == from_file["model"]["params"]
    assert r.json()["step"] == from_file["step"]
    page = client.get("/plan", params={"model": token, "gpus": "8"})
    assert "fabriclens plan config.json --gpus 8 --json" in page.text


def test_uploads_do_not_outlive_the_server() -> None:
    """The dashboard makes no folder until a file is uploaded, and removes it (the user's
    config.json with it) when it stops: each start once left a folder in /tmp for good."""
    from starlette.testclient import TestClient

    guard = make_app()
    store = guard.app.state.uploads
    with TestClient(guard, base_url="http://127.0.0.1:8471") as client:
        assert store.folder is None
        client.get("/plan")
        assert store.folder is None
        assert client.post("/api/upload", content=b"{}").status_code == 200
        folder = store.folder
        assert folder is not None and len(list(folder.iterdir())) == 1
    assert not folder.exists()
    assert len(store) == 0


def test_an_upload_is_bounded_and_must_be_json(client: Any) -> None:
    assert client.post("/api/upload", content=b"x" * (2 * 2**20)).status_code == 413
    assert client.post("/api/upload", content=b"not json").status_code == 400


@pytest.mark.parametrize(
    "host", ["evil.example:8471", "127.0.0.1:9999", "attacker.127.0.0.1.nip.io:8471", ""]
)
def test_a_foreign_host_is_refused(host: str) -> None:
    from starlette.testclient import TestClient

    c = TestClient(make_app(), base_url="http://127.0.0.1:8471")
    r = c.get("/api/plan", params={"model": "llama-3.1-8b"}, headers={"Host": host})
    assert r.status_code == 403
    assert "refused" in r.text


def test_a_foreign_origin_is_refused_and_ours_passes(client: Any) -> None:
    r = client.post("/api/upload", content=b"{}", headers={"Origin": "http://evil.example"})
    assert r.status_code == 403
    r = client.post("/api/upload", content=b"{}", headers={"Origin": "http://127.0.0.1:8471"})
    assert r.status_code == 200
    assert client.get("/plan", headers={"Host": "localhost:8471"}).status_code == 200


@pytest.mark.parametrize("name,kind", sorted(REPORT_KINDS.items()))
def test_every_report_kind_renders_findings_first(client: Any, name: str, kind: str) -> None:
    r = client.post(
        "/api/report", content=(REPORTS / name).read_bytes(), headers={"X-Filename": name}
    )
    assert r.status_code == 200
    assert f'<h2 class="kind">{kind} · {name}</h2>' in r.text
    doc = json.loads((REPORTS / name).read_text())
    if doc.get("findings") or doc.get("verdict") or doc.get("suspect_nodes"):
        assert "Findings" in r.text
        assert r.text.index("Findings") < r.text.index("the whole document")


def test_a_report_that_is_not_ours_says_so(client: Any) -> None:
    r = client.post("/api/report", content=b'{"a": 1}', headers={"X-Filename": "x.json"})
    assert "no fabriclens --json document" in r.text
    r = client.post("/api/report", content=b"{oops", headers={"X-Filename": "x.json"})
    assert r.status_code == 400 and "is not a JSON document" in r.text


def test_only_files_named_on_the_command_line_are_read(client: Any) -> None:
    assert client.get("/reports/0").status_code == 200
    assert "fleet" in client.get("/reports/0").text
    assert client.get("/reports/1").status_code == 404


def test_plotly_is_served_from_the_installed_package(client: Any) -> None:
    from pathlib import Path

    import plotly

    r = client.get("/static/plotly.min.js")
    assert r.status_code == 200
    shipped = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    assert r.content == shipped.read_bytes()
    page = client.get("/plan").text
    assert "http" not in "".join(
        line for line in page.splitlines() if "<script" in line or "stylesheet" in line
    )


def test_the_live_feed_samples_only_when_asked(client: Any) -> None:
    from fabriclens.ui import live

    started: list[int] = []

    class Counting:
        def __init__(self) -> None:
            started.append(1)

    assert client.get("/live").status_code == 200
    assert started == []  # the page alone starts nothing
    events = []

    async def collect() -> None:
        from ui_helpers import FakeSampler

        async for chunk in live.stream(FakeSampler, 0.2):
            events.append(chunk)
            if len(events) == 3:
                break

    import asyncio

    asyncio.run(collect())
    assert events[0].startswith("event: start")
    sample = json.loads(events[2].split("data: ", 1)[1])
    assert sample["gpu_util_pct"] == 20.0 and sample["links"][0]["rx_bits_per_s"] > 0
    assert sample["running"]


def test_ui_refuses_bad_input_in_one_line(tmp_path: Any, capsys: Any) -> None:
    import socket

    from fabriclens.cli.app import run

    assert run(["ui", str(tmp_path / "missing.json")]) == 2
    assert "no such report file" in capsys.readouterr().err
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        assert run(["ui", "--port", str(taken.getsockname()[1])]) == 2
    assert "cannot listen on 127.0.0.1" in capsys.readouterr().err


def test_other_commands_never_import_the_web_stack() -> None:
    import subprocess
    import sys

    code = (
        "import io, sys, contextlib\n"
        "from fabriclens.cli.app import run\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    assert run(['plan', 'llama-3.1-8b', '--gpus', '16', '--json']) == 0\n"
        "    assert run(['watch', '--help']) == 0\n"
        "web = ('starlette', 'uvicorn', 'jinja2', 'plotly', 'prometheus_client', 'fabriclens.ui')\n"
        "print([m for m in sys.modules if m.split('.')[0] in web or m.startswith('fabriclens.ui')])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.strip() == "[]"


def test_a_fleet_report_shows_the_values_it_left_out() -> None:
    """The dashboard lists fleet's left-out values (an edited file) among its findings."""
    from fabriclens.ui.reports import headlines

    doc = json.loads((REPORTS / "fleet.json").read_text())
    doc["left_out"] = ["node1: ens1f0 speed Mb/s reads -1e+308, which no run writes"]
    lines = headlines("fleet", doc)
    left = [h for h in lines if "left out" in h.title]
    assert len(left) == 1 and left[0].details == doc["left_out"]
    assert not any("left out" in h.title for h in headlines("fleet", {**doc, "left_out": []}))
