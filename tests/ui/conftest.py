"""Fixtures for the dashboard tests (skipped without the `ui` extra)."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("starlette", reason="the dashboard's libraries: pip install 'fabriclens[ui]'")
pytest.importorskip("plotly", reason="the dashboard's libraries: pip install 'fabriclens[ui]'")

from ui_helpers import REPORTS, make_app


@pytest.fixture
def client() -> Any:
    from starlette.testclient import TestClient

    return TestClient(make_app(reports=[REPORTS / "fleet.json"]), base_url="http://127.0.0.1:8471")
