"""The tables of a doctor report as plain rows, laid out once for the terminal and Markdown."""

from __future__ import annotations

from typing import Any, NamedTuple


class Section(NamedTuple):
    """One table: a title, its column names and its rows (strings; "-" for nothing)."""

    title: str
    header: list[str]
    rows: list[list[str]]


def _v(value: object, fmt: str = "{}") -> str:
    return "-" if value is None or value == "" else fmt.format(value)


def _mbps(bits: float | None) -> str:
    return "-" if bits is None else f"{bits / 1e6:,.1f}"


def doctor_sections(doc: dict[str, Any]) -> list[Section]:
    """Interfaces, RDMA ports, GPUs, GPU-NIC placement, servers and peers, where present."""
    out = []
    if doc.get("inputs"):  # doctor --from: what each text was read as
        out.append(Section("Inputs (kind told by content)", ["source", "read as", "used"],
                           [[i["source"], i["tool"] or i["kind"], "yes" if i["read"] else "no (unread)"]
                            for i in doc["inputs"]]))  # fmt: skip
    if doc.get("not_checked"):
        out.append(Section("Not checked (no input for it)", ["check", "needs"],
                           [[c["check"], c["needs"]] for c in doc["not_checked"]]))  # fmt: skip
    nics = doc["interfaces"]
    sampled = next((n["sample_s"] for n in nics if n.get("sample_s")), None)
    header = ["name", "state", "speed Mb/s", "supports Mb/s", "MTU", "errors", "drops"]
    header += ["rx Mb/s", "tx Mb/s", "new errors", "new drops"] if sampled else []
    header += ["pause", "discards"] if any(n.get("pause_frames") is not None for n in nics) else []
    rows = []
    for n in nics:
        row = [n["name"] + ("" if n["physical"] else " (virtual)"), n["nic_state"], _v(n["speed_mbps"] or None, "{:,}"),
               _v(n["max_speed_mbps"] or None, "{:,}"), _v(n["mtu"] or None), str(n["errors"]), str(n["drops"])]  # fmt: skip
        if sampled:
            row += [
                _mbps(n["rx_bits_per_s"]),
                _mbps(n["tx_bits_per_s"]),
                _v(n["errors_new"]),
                _v(n["drops_new"]),
            ]
        if "pause" in header:
            row += [_v(n.get("pause_frames")), _v(n.get("discards"))]
        rows.append(row)
    if nics or not doc.get("inputs"):  # doctor --from without interface data: no empty table
        title = "Network interfaces" + (f" (rates over {sampled:.1f} s)" if sampled else "")
        out.append(Section(title, header, rows))
    if doc["rdma_ports"]:
        out.append(Section("RDMA ports", ["device", "port", "state", "physical", "link layer"],
                           [[p["device"], str(p["port"]), p["state"], p["phys_state"], p["link_layer"]]
                            for p in doc["rdma_ports"]]))  # fmt: skip
    if doc.get("gpus"):
        window = any(g["util_samples"] for g in doc["gpus"])
        header = ["GPU", "name", "busy %", "power W", "PCIe", "slowdown"]
        header += ["mean busy %", "idle share", "busy share"] if window else []
        rows = []
        for g in doc["gpus"]:
            row = [str(g["index"]), g["name"], f"{g['utilization_pct']:g}", f"{g['power_w']:.0f} of {g['power_limit_w']:.0f}",
                   f"Gen{g['pcie_gen']} x{g['pcie_width']} (max Gen{g['pcie_gen_max']} x{g['pcie_width_max']})",
                   _v(g["slowdown"])]  # fmt: skip
            if window:
                row += [_v(g["util_mean_pct"]), _v(g["util_idle_share"]), _v(g["util_busy_share"])]
            rows.append(row)
        out.append(Section(f"GPUs (from {doc.get('gpu_source', '?')})", header, rows))
    if doc.get("gpu_nic_affinity"):
        out.append(Section("Nearest NIC per GPU", ["GPU", "NIC", "link"],
                           [[a["gpu"], a["nic"], a["link"]] for a in doc["gpu_nic_affinity"]]))  # fmt: skip
    if doc.get("services"):
        out.append(Section("Inference servers listening", ["service", "port", "addresses", "localhost only"],
                           [[s["service"], str(s["port"]), s["addresses"], "yes" if s["loopback_only"] else "no"]
                            for s in doc["services"]]))  # fmt: skip
    if doc.get("peers"):
        rows = []
        for p in doc["peers"]:
            share = (
                "-"
                if p.get("goodput_pct") is None
                else f"{p['goodput_pct']}% of {p['expected_mbps']:,.0f}"
            )
            rows.append([p["peer"], f"{p['received']}/{p['sent']}", _v(p["loss_pct"], "{:g}%"),
                         _v(p["rtt_ms"], "{:.2f} ms"), _v(p["jitter_ms"], "{:.2f} ms"), _v(p["tcp_connect_ms"], "{:.2f} ms"),
                         "-" if p["path_mtu"] is None else f"{p['path_mtu']}/{p['iface_mtu']} {p['device'] or ''}".strip(),
                         _mbps(p.get("goodput_bits_per_s")), share])  # fmt: skip
        out.append(Section("Path to peers", ["peer", "answered", "loss", "RTT (median)", "jitter", "TCP connect",
                                             "path MTU", "TCP Mbit/s", "of expected"], rows))  # fmt: skip
    if doc.get("endpoints"):
        rows = [[e["url"], str(e["requests"]), _v(e["ttft_ms"], "{:,.1f} ms"),
                 "-" if e["network_ms"] is None else f"{e['network_ms']:,.1f} ms ({e['network_pct']}%)",
                 "-" if e["server_ms"] is None else f"{e['server_ms']:,.1f} ms ({e['server_pct']}%)",
                 _v(e["rtt_ms"], "{:.2f} ms"), e["error"] or "-"] for e in doc["endpoints"]]  # fmt: skip
        out.append(Section("Inference endpoint (median of the requests)",
                           ["url", "requests", "to first token", "network path", "server", "round trip", "error"], rows))  # fmt: skip
    return out


STATUS_MARK = {"found": "FOUND", "ok": "ok", "not checked": "not checked", "manual": "by hand",
               "not reached": "not reached"}  # fmt: skip
