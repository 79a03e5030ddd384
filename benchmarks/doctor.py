"""doctor and watch measured against the faults the lab was told to make.

Run as root: make bench  (or: python benchmarks/doctor.py)
One lab, one fault per host: h2 healthy, h3 capped at 100 Mbit/s, h4 2% loss each way, h5 20 ms
each way, h6 down; `doctor --peer` from h1 to all of them in one run (300 pings each), then
`watch` on h1 while a TCP test fills the link to h3 (the path's 100 Mbit/s is the capacity
given). Each figure is printed beside what the lab
configured: TCP goodput against rate x 1448/1538, RTT against 2 x delay, echo loss against
1 - (1 - p)^2, the NIC's transmit rate against the cap in frame bytes (1514 of every 1538 on the
wire), and whether each fault got its own finding and the healthy peer none.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from fabriclens.lab import LinkSpec, lab_session

FL = [sys.executable, "-m", "fabriclens"]
GOODPUT = 1448 / 1538


def main() -> int:
    if os.geteuid() != 0:
        print("benchmarks/doctor.py: needs root for the lab (skipped)")
        return 0
    faults = {"h3": {"bandwidth": "100mbit"}, "h4": {"loss": "2%"}, "h5": {"delay": "20ms"}}
    with lab_session(
        "bd", hosts=6, link=LinkSpec(bandwidth_bits_per_s=1e9), overrides=faults
    ) as lab:
        for h in ("h2", "h3", "h4", "h5"):
            lab.popen(
                h, [*FL, "doctor", "--serve", "--serve-for", "300"], stdout=subprocess.DEVNULL
            )
        for h in ("h2", "h3", "h4", "h5"):
            lab.wait_listening(h, 5299)
        lab.impair("h6", {"state": "down"})
        addr = {h: lab.host(h).address for h in ("h2", "h3", "h4", "h5", "h6")}
        argv = [*FL, "doctor", "--json", "--expect", "1gbit", "--pings", "300"]
        for a in addr.values():
            argv += ["--peer", a]
        t0 = time.monotonic()
        doc = json.loads(lab.run("h1", argv, timeout_s=300).stdout)
        took = time.monotonic() - t0
        sender = lab.popen("h1", [*FL, "bench", "net", addr["h3"], "--tool", "builtin", "--streams", "2",
                                  "--duration", "6"], stdout=subprocess.DEVNULL)  # fmt: skip
        watched = json.loads(lab.run("h1", [*FL, "watch", "--iface", "eth0", "--link-speed", "100mbit", "--count", "4",
                                            "--json"], timeout_s=30).stdout)  # fmt: skip
        sender.wait(timeout=30)
    peers = {p["peer"]: p for p in doc["peers"]}

    def rules(host: str) -> list[str]:
        a = addr[host]
        return sorted(
            {
                f["rule"]
                for f in doc["findings"]
                if any(e.startswith(f"{a}:") for e in f["evidence"])
            }
        )

    print(f"doctor --peer x5 in the lab ({took:.0f} s for five peers, 300 pings each)")
    print(f"{'peer':<22} {'measured':>30} {'configured':>26}  findings")
    h2, h3, h4, h5 = (peers[addr[h]] for h in ("h2", "h3", "h4", "h5"))
    want_h2, want_h3 = 1e9 * GOODPUT, 100e6 * GOODPUT
    print(
        f"{'h2 healthy':<22} {h2['goodput_mbps']:>21,.1f} Mbit/s {want_h2 / 1e6:>19,.1f} Mbit/s  {rules('h2') or 'none'}"
    )
    print(
        f"{'h3 capped 100 Mbit/s':<22} {h3['goodput_mbps']:>21,.1f} Mbit/s {want_h3 / 1e6:>19,.1f} Mbit/s  {rules('h3')}"
    )
    print(
        f"{'h4 loss 2% each way':<22} {h4['loss_pct']:>23.2f}% loss {100 * (1 - 0.98**2):>21.2f}% loss  {rules('h4')}"
    )
    print(
        f"{'h5 delay 20 ms each way':<22} {h5['rtt_ms']:>24.2f} ms RTT {40.0:>20.2f} ms RTT  {rules('h5')}"
    )
    print(
        f"{'':<22} {h5['goodput_mbps']:>21,.1f} Mbit/s   (2 s, 4 streams over a 40 ms round trip)"
    )
    print(f"{'h6 down':<22} {'no answer':>30} {'no answer':>26}  {rules('h6')}")
    print(
        f"  ratios: h2 goodput {h2['goodput_mbps'] * 1e6 / want_h2:.3f}, h3 goodput "
        f"{h3['goodput_mbps'] * 1e6 / want_h3:.3f}, h5 RTT {h5['rtt_ms'] / 40:.3f}"
    )
    frames = 100e6 * 1514 / 1538
    print(f"watch on h1 while a TCP test fills the 100 Mbit/s link to h3: peak transmit "
          f"{watched['peak_link_bits_per_s'] / 1e6:.1f} Mbit/s of {frames / 1e6:.1f} Mbit/s of frames "
          f"({watched['peak_link_bits_per_s'] / frames:.3f}); verdict {watched['verdict']}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
