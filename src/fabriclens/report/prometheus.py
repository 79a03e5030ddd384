"""`watch --prometheus`: each sample as Prometheus metrics (prometheus-client), named as the
node and DCGM exporters name theirs: base units, ``_ratio`` for 0-1 shares, labels for the
device. The verdicts are a state set (one label value at 1, the others 0)."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Enum, Gauge

from fabriclens.measure.watch import VERDICTS

NAMES = (
    "fabriclens_gpu_utilization_ratio",
    "fabriclens_gpu_power_watts",
    "fabriclens_gpu_power_limit_watts",
    "fabriclens_link_receive_bytes_per_second",
    "fabriclens_link_transmit_bytes_per_second",
    "fabriclens_link_capacity_bytes_per_second",
    "fabriclens_link_load_ratio",
    "fabriclens_network_load_ratio",
    "fabriclens_verdict",
    "fabriclens_running_verdict",
    "fabriclens_samples_total",
)


class WatchMetrics:
    """The metrics of one `watch` run, in their own registry."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.gpu_util = Gauge(
            "fabriclens_gpu_utilization_ratio", "GPU busy share (0-1)", ["gpu"], registry=r
        )
        self.gpu_power = Gauge("fabriclens_gpu_power_watts", "GPU power draw", ["gpu"], registry=r)
        self.gpu_limit = Gauge(
            "fabriclens_gpu_power_limit_watts", "GPU power limit", ["gpu"], registry=r
        )
        self.rx = Gauge(
            "fabriclens_link_receive_bytes_per_second",
            "Receive rate over the last interval",
            ["link", "kind"],
            registry=r,
        )
        self.tx = Gauge(
            "fabriclens_link_transmit_bytes_per_second",
            "Transmit rate over the last interval",
            ["link", "kind"],
            registry=r,
        )
        self.cap = Gauge(
            "fabriclens_link_capacity_bytes_per_second",
            "Link capacity (absent when unknown)",
            ["link", "kind"],
            registry=r,
        )
        self.load = Gauge(
            "fabriclens_link_load_ratio",
            "Busier direction as a share of capacity",
            ["link", "kind"],
            registry=r,
        )
        self.net_load = Gauge(
            "fabriclens_network_load_ratio", "The busiest link's load (0-1)", registry=r
        )
        states = [*VERDICTS]
        self.verdict = Enum(
            "fabriclens_verdict", "This sample's verdict", states=states, registry=r
        )
        self.running = Enum(
            "fabriclens_running_verdict",
            "The most common verdict over the last 10 samples",
            states=states,
            registry=r,
        )
        self.samples = Counter(
            "fabriclens_samples", "Samples taken", registry=r
        )  # exposed as _total

    def update(self, doc: dict[str, Any], running: str) -> None:
        """Set every metric from one `watch` sample document."""
        for g in doc["gpus"]:
            gpu = str(g["index"])
            if g.get("util_pct") is not None:
                self.gpu_util.labels(gpu).set(g["util_pct"] / 100)
            if g.get("power_w") is not None:
                self.gpu_power.labels(gpu).set(g["power_w"])
            if g.get("power_limit_w") is not None:
                self.gpu_limit.labels(gpu).set(g["power_limit_w"])
        for lr in doc["links"]:
            labels = (lr["name"], "rdma" if "/" in lr["name"] else "nic")
            self.rx.labels(*labels).set(lr["rx_bits_per_s"] / 8)
            self.tx.labels(*labels).set(lr["tx_bits_per_s"] / 8)
            if lr["capacity_bits_per_s"]:
                self.cap.labels(*labels).set(lr["capacity_bits_per_s"] / 8)
            if lr["load"] is not None:
                self.load.labels(*labels).set(lr["load"])
        if doc.get("net_load") is not None:
            self.net_load.set(doc["net_load"])
        if doc["verdict"] in VERDICTS:
            self.verdict.state(doc["verdict"])
        if running in VERDICTS:
            self.running.state(running)
        self.samples.inc()


def serve(metrics: WatchMetrics, address: str, port: int) -> Any:
    """Start the /metrics endpoint in a thread; returns the server (``.shutdown()`` stops it)."""
    from prometheus_client import start_http_server

    server, _thread = start_http_server(port, addr=address, registry=metrics.registry)
    return server
