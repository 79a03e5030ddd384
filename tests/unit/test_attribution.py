"""Attribution of the time to first token: the parts add up and land where the time went."""

from __future__ import annotations

import pytest

from fabriclens.measure.attribution import attribute, tls_round_trips

# a request 20 ms of RTT away from a server that takes 200 ms to its first token
CLIENT = {"dns": 0.001, "connect": 0.020, "tls": 0.0, "request": 0.0001, "wait": 0.0202,
          "first_token": 0.2, "transfer": 0.3}  # fmt: skip
SERVER_SIDE = {"dns": 0.0, "connect": 0.0001, "tls": 0.0, "request": 0.0001, "wait": 0.0002,
               "first_token": 0.2, "transfer": 0.3}  # fmt: skip


def _part(doc: dict, name: str) -> float:  # type: ignore[type-arg]
    return next(p["seconds"] for p in doc["parts"] if p["part"] == name)


def _ttft_parts(doc: dict) -> float:  # type: ignore[type-arg]
    return sum(p["seconds"] for p in doc["parts"] if not p["part"].startswith("generation"))


def test_client_only() -> None:
    doc = attribute(CLIENT)
    assert doc["network_s"] == pytest.approx(0.040) and doc["server_s"] == pytest.approx(0.2003)
    assert _ttft_parts(doc) == pytest.approx(doc["time_to_first_token_s"])
    assert doc["verdict"].startswith("server")


def test_with_baseline_and_a_gateway() -> None:
    """30 ms more between connect and first token than path + server explain: the gateway."""
    client = dict(CLIENT, wait=CLIENT["wait"] + 0.030)
    doc = attribute(client, SERVER_SIDE)
    assert doc["rtt_s"] == pytest.approx(0.0199) and doc["server_s"] == pytest.approx(0.2003)
    assert _part(doc, "gateway / proxy / other") == pytest.approx(0.0302, abs=1e-4)
    assert _ttft_parts(doc) == pytest.approx(doc["time_to_first_token_s"])


def test_tls_and_server_reported_durations() -> None:
    assert (tls_round_trips(None), tls_round_trips("TLSv1.3"), tls_round_trips("TLSv1.2")) == (
        0,
        1,
        2,
    )
    doc = attribute(
        dict(CLIENT, tls=0.025), tls_version="TLSv1.3", server_s={"load": 0.05, "prefill": 0.1}
    )
    assert doc["network_s"] == pytest.approx(0.060)
    assert _part(doc, "TLS handshake work") == pytest.approx(0.005)
    assert _part(doc, "server: prefill") == 0.1 and _part(doc, "server: model load") == 0.05
    assert _ttft_parts(doc) == pytest.approx(doc["time_to_first_token_s"])
