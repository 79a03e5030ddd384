"""`watch` on a lab host while a TCP test fills its 100 Mbit/s link: the throughput it reports is
the link's rate and its verdict is "network busy" (no GPUs here)."""

from __future__ import annotations

import json
import subprocess
import sys

from fabriclens.lab import LinkSpec, lab_session

FL = [sys.executable, "-m", "fabriclens"]


def test_watch_sees_the_link_fill(quietly) -> None:  # type: ignore[no-untyped-def]
    with lab_session("dw", hosts=2, link=LinkSpec(bandwidth_bits_per_s=100e6)) as lab:
        lab.popen("h2", [*FL, "bench", "net", "--serve", "--bind", "0.0.0.0", "--timeout", "120"],
                  stdout=subprocess.DEVNULL)  # fmt: skip
        lab.wait_listening("h2", 5299)

        def measure() -> dict:  # type: ignore[type-arg]
            sender = lab.popen("h1", [*FL, "bench", "net", lab.host("h2").address, "--tool", "builtin",
                                      "--streams", "2", "--duration", "6", "--json"], stdout=subprocess.DEVNULL)  # fmt: skip
            try:
                res = lab.run("h1", [*FL, "watch", "--iface", "eth0", "--link-speed", "100mbit", "--count", "4",
                                     "--interval", "1", "--json"], timeout_s=30)  # fmt: skip
            finally:
                sender.wait(timeout=30)
            assert res.returncode == 0, res.stderr
            return json.loads(res.stdout)  # type: ignore[no-any-return]

        # tx counts Ethernet frames without preamble and gap: 1514 of every 1538 wire bytes
        frames = 100e6 * 1514 / 1538
        doc, stolen = quietly(
            measure, lambda d: abs(d["peak_link_bits_per_s"] / frames - 1) <= 0.05
        )
    assert doc["links"] == ["eth0"] and doc["gpu_source"] == "none"
    assert 0.95 - stolen <= doc["peak_link_bits_per_s"] / frames <= 1.05
    assert doc["verdict"] == "network busy"
