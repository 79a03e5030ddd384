"""`doctor` on the lab, one peer per fault: a link capped at 100 Mbit/s where 1 Gbit/s is
expected, 2% loss, 20 ms of delay, a peer that is down, and a healthy peer that must raise no
alarm; plus an inference server bound to 127.0.0.1. Each fault must be reported with its own
cause and nothing else; the healthy peer with nothing at all."""

from __future__ import annotations

import json
import subprocess
import sys

from fabriclens.lab import LinkSpec, lab_session

FL = [sys.executable, "-m", "fabriclens"]
PEER_RULES = {"peer-unreachable", "peer-loss", "peer-jitter", "peer-latency-high", "peer-path-mtu-below-interface",
              "peer-throughput-low"}  # fmt: skip
SERVERS = ("h2", "h3", "h4", "h5")


def _by_peer(doc: dict, address: str) -> set[str]:  # type: ignore[type-arg]
    return {
        f["rule"]
        for f in doc["findings"]
        if any(e.startswith(f"{address}:") for e in f["evidence"])
    }


def test_doctor_names_each_fault_and_leaves_the_healthy_peer_alone(quietly) -> None:  # type: ignore[no-untyped-def]
    faults = {"h3": {"bandwidth": "100mbit"}, "h4": {"loss": "2%"}, "h5": {"delay": "20ms"}}
    with lab_session(
        "dd", hosts=6, link=LinkSpec(bandwidth_bits_per_s=1e9), overrides=faults
    ) as lab:
        for h in SERVERS:
            lab.popen(
                h, [*FL, "doctor", "--serve", "--serve-for", "240"], stdout=subprocess.DEVNULL
            )
        for h in SERVERS:
            lab.wait_listening(h, 5299)
        lab.impair("h6", {"state": "down"})
        addr = {h: lab.host(h).address for h in ("h2", "h3", "h4", "h5", "h6")}
        argv = [*FL, "doctor", "--json", "--expect", "1gbit", "--pings", "500"]
        for h in addr.values():
            argv += ["--peer", h]

        def measure() -> dict:  # type: ignore[type-arg]
            res = lab.run("h1", argv, timeout_s=240)
            assert res.returncode == 1, res.stderr
            return json.loads(res.stdout)  # type: ignore[no-any-return]

        def healthy_is_quiet(doc: dict) -> bool:  # type: ignore[type-arg]
            return not _by_peer(doc, addr["h2"])

        doc, _ = quietly(measure, healthy_is_quiet)
    peers = {p["peer"]: p for p in doc["peers"]}
    # healthy: answered, fast, near the link's rate, no finding of any kind
    assert _by_peer(doc, addr["h2"]) == set()
    assert peers[addr["h2"]]["goodput_share"] >= 0.7 and peers[addr["h2"]]["loss_pct"] == 0
    # 100 Mbit/s where 1 Gbit/s is expected: throughput, and only that
    assert _by_peer(doc, addr["h3"]) & PEER_RULES == {"peer-throughput-low"}, peers[addr["h3"]]
    assert 0.08 <= peers[addr["h3"]]["goodput_share"] <= 0.11  # 94 of 941 Mbit/s
    # 2% each way: about 4% of echoes lost; 500 echoes keep a miss (under 1% seen) below 1e-4
    assert "peer-loss" in _by_peer(doc, addr["h4"]), peers[addr["h4"]]
    assert not _by_peer(doc, addr["h4"]) & {
        "peer-latency-high",
        "peer-unreachable",
        "peer-path-mtu-below-interface",
    }
    assert 1 <= peers[addr["h4"]]["loss_pct"] <= 10, peers[addr["h4"]]
    # 20 ms each way: a 40 ms round trip
    assert _by_peer(doc, addr["h5"]) & PEER_RULES >= {"peer-latency-high"}
    assert not _by_peer(doc, addr["h5"]) & {"peer-loss", "peer-unreachable"}
    assert abs(peers[addr["h5"]]["rtt_ms"] - 40) <= 3, peers[addr["h5"]]
    # down: unreachable, critical, and no throughput test attempted
    assert _by_peer(doc, addr["h6"]) == {"peer-unreachable"}
    assert peers[addr["h6"]]["goodput_bits_per_s"] is None
    assert (
        next(f for f in doc["findings"] if f["rule"] == "peer-unreachable")["severity"]
        == "critical"
    )


def test_doctor_finds_a_server_bound_to_localhost() -> None:
    with lab_session("ds", hosts=2) as lab:
        lab.popen("h1", [sys.executable, "-m", "fabriclens.bench.stream_server", "--bind", "127.0.0.1",
                         "--port", "11434"], stdout=subprocess.DEVNULL)  # fmt: skip
        lab.wait_listening("h1", 11434)
        res = lab.run("h1", [*FL, "doctor", "--json", "--symptom", "inference-slow"], timeout_s=60)
        other = lab.run("h2", [*FL, "doctor", "--json"], timeout_s=60)
    doc = json.loads(res.stdout)
    assert res.returncode == 1
    assert [s["service"] for s in doc["services"]] == ["Ollama"] and doc["services"][0][
        "loopback_only"
    ]
    found = next(f for f in doc["findings"] if f["rule"] == "inference-server-localhost")
    assert "OLLAMA_HOST=0.0.0.0" in found["fix"] and found["evidence"] == [
        "Ollama listens on 127.0.0.1 port 11434 only"
    ]
    assert doc["walk"]["stopped_at"] == "where the server listens"
    # the other lab host listens on nothing: no service, exit 0
    assert other.returncode == 0 and json.loads(other.stdout)["services"] == []


BODY = '{"model":"m","stream":true,"max_tokens":8,"messages":[{"role":"user","content":"hi"}]}'


def test_doctor_splits_a_slow_endpoint_into_path_and_server() -> None:
    """A server 20 ms away each way that answers in 20 ms: the path is most of the time to first
    token. The same server answering in 1.5 s: the server is."""
    from fabriclens.bench.stream_server import spawn

    with lab_session("de", hosts=2, overrides={"h2": {"delay": "20ms"}}) as lab:
        urls = {}
        for ttft in ("0.02", "1.5"):
            _, base = spawn(["--bind", "0.0.0.0", "--ttft", ttft],
                            launch=lambda argv, **kw: lab.popen("h2", argv, **kw))  # fmt: skip
            urls[ttft] = base.replace("0.0.0.0", lab.host("h2").address) + "/v1/chat/completions"
        docs = {}
        for ttft, url in urls.items():
            res = lab.run("h1", [*FL, "doctor", "--json", "--url", url, "--data", BODY, "--symptom", "inference-slow"],
                          timeout_s=90)  # fmt: skip
            assert res.returncode == 1, res.stderr
            docs[ttft] = json.loads(res.stdout)
    near = docs["0.02"]["endpoints"][0]
    # request + response: two 40 ms round trips, and the connect is one of them
    assert abs(near["network_ms"] - 80) <= 6 and abs(near["rtt_ms"] - 40) <= 3
    assert near["network_share"] >= 0.6
    rules = {f["rule"] for f in docs["0.02"]["findings"]}
    assert "inference-network-path-slow" in rules and "inference-server-slow" not in rules
    far = docs["1.5"]["endpoints"][0]
    assert abs(far["server_ms"] - 1500) <= 30
    rules = {f["rule"] for f in docs["1.5"]["findings"]}
    assert "inference-server-slow" in rules and "inference-network-path-slow" not in rules
    assert docs["1.5"]["walk"]["stopped_at"].startswith("HTTP phase breakdown")
