"""The dashboard in a real browser (Debian's chromium, headless, driven by Playwright): the plan
form's chart holds `plan --json`'s numbers, every page and report kind renders, the live page
follows a fake sampler, and no page logs a console error. Screenshots go to test-artifacts/ui/."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests_ui_browser import ARTIFACTS, browser_page, need_browser, screenshot, serving
from ui_helpers import REPORT_KINDS, REPORTS, make_app

NETWORKS = "10gbe,100g-roce,ndr-ib"


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    need_browser()
    with serving(lambda port: make_app(port=port, reports=[REPORTS / "doctor.json"])) as url:
        yield url


def _plan_json(argv: list[str]) -> Any:
    from fabriclens.cli.app import run

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        run(argv)
    return json.loads(out.getvalue())


def test_plan_form_draws_the_cli_numbers(base_url: str) -> None:
    with browser_page() as (page, errors):
        page.goto(f"{base_url}/plan")
        page.fill("input[name=model]", "llama-3.1-70b")
        page.fill("input[name=workload]", "full-finetune")
        page.fill("input[name=gpus]", "32")
        page.fill("input[name=network]", NETWORKS)
        page.fill("input[name=nics-per-node]", "1")
        page.click("#submit")
        page.wait_for_selector("#fig-comparison .main-svg")
        drawn = page.evaluate("document.getElementById('fig-comparison').data[0]")
        docs = _plan_json(["plan", "llama-3.1-70b", "--workload", "full-finetune", "--gpus", "32",
                           "--network", NETWORKS, "--nics-per-node", "1", "--json"])  # fmt: skip
        assert drawn["x"] == [d["network"] for d in docs]
        assert drawn["y"] == [d["step"]["time_s"] for d in docs]
        assert "/plan?model=llama-3.1-70b" in page.url  # the URL reproduces the view
        cli = page.inner_text("#cli")
        assert cli.startswith("fabriclens plan llama-3.1-70b --workload full-finetune --gpus 32")
        for key in ("step", "memory"):
            assert page.locator(f"#fig-{key} .main-svg").count() >= 1
        assert page.locator("#plan-summary td.bottleneck").count() == len(docs)
        screenshot(page, "plan")
        page.goto(page.url)  # the same view from its URL alone, rendered by the server
        page.wait_for_selector("#fig-comparison .main-svg")
        assert page.evaluate("document.getElementById('fig-comparison').data[0].y") == drawn["y"]
        assert errors == []


PAGES = {
    "search": "model=llama-3.1-8b&gpus=16&network=100g-roce,ndr-ib",
    "capacity": "model=llama-3.1-8b&users=100",
    "transfer": "size=140GB&link=10gbe&hosts=4",
    "datapath": "model=llama-3.1-8b",
    "topo": "gpus=64",
    "simulate": "op=all_reduce&size=1GB&gpus=64&effects=off",
}


@pytest.mark.parametrize("cmd", sorted(PAGES))
def test_each_page_renders_its_charts(base_url: str, cmd: str) -> None:
    with browser_page() as (page, errors):
        page.goto(f"{base_url}/{cmd}?{PAGES[cmd]}")
        page.wait_for_selector(".plot .main-svg")
        assert page.locator(".error").count() == 0
        assert page.inner_text("#cli").startswith(f"fabriclens {cmd}")
        screenshot(page, cmd)
        assert errors == []


@pytest.mark.parametrize("name", sorted(REPORT_KINDS))
def test_each_report_kind_opens(base_url: str, name: str) -> None:
    with browser_page() as (page, errors):
        page.goto(f"{base_url}/reports")
        page.set_input_files("#report-file", str(REPORTS / name))
        page.wait_for_selector("h2.kind")
        assert page.inner_text("h2.kind") == f"{REPORT_KINDS[name]} · {name}"
        doc = json.loads((REPORTS / name).read_text())
        if doc.get("findings") or doc.get("verdict") or doc.get("suspect_nodes"):
            assert page.locator("section.findings").count() == 1
        screenshot(page, f"report-{name.removesuffix('.json')}")
        assert errors == []


def test_a_report_named_on_the_command_line(base_url: str) -> None:
    with browser_page() as (page, errors):
        page.goto(f"{base_url}/reports")
        page.click("text=doctor.json")
        page.wait_for_selector("h2.kind")
        assert page.inner_text("h2.kind") == "doctor · doctor.json"
        assert errors == []


def test_the_live_page_follows_the_sampler(base_url: str) -> None:
    with browser_page() as (page, errors):
        page.goto(f"{base_url}/live")
        assert page.inner_text("#samples") == "0"  # nothing sampled before Start
        page.click("#live-start")
        page.wait_for_function(
            "Number(document.getElementById('samples').textContent) >= 3", timeout=15000
        )
        xs = page.evaluate("document.getElementById('fig-live').data[0].y")
        assert xs[:3] == [10, 20, 30]  # the fake sampler's GPU load, second by second
        assert page.inner_text("#running") != "-"
        screenshot(page, "live")
        page.click("#live-stop")
        assert errors == []


def test_screenshots_were_saved() -> None:
    need_browser()
    assert ARTIFACTS.is_dir()
