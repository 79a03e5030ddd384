"""Record what the GPU probes see on a machine with NVIDIA GPUs, as parser and probe fixtures.

    python benchmarks/gpu_capture.py OUT_DIR

Writes the raw `nvidia-smi` query CSV and `topo -m` matrix (the parsers' inputs), the readings
through NVML and through nvidia-smi side by side (they must agree), a `doctor --json --sample 3`
and a `watch --count 5 --json`. Without a GPU it says so and exits 0. Not part of `make bench`:
run it where a GPU machine is at hand, and commit the files under tests/fixtures/ with a note of
the machine.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

from fabriclens.parse.nvidia_smi import QUERY_COMMAND, parse_gpu_query
from fabriclens.probes.gpu import open_gpus


def _run(argv: list[str]) -> str:
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False).stdout


def main(argv: list[str]) -> int:
    out = Path(argv[1] if len(argv) > 1 else "gpu-capture")
    if shutil.which("nvidia-smi") is None:
        print("no nvidia-smi here: nothing to capture")
        return 0
    out.mkdir(parents=True, exist_ok=True)
    csv = _run(QUERY_COMMAND)
    (out / "nvidia-smi-query.csv").write_text(csv)
    (out / "nvidia-smi-topo.txt").write_text(_run(["nvidia-smi", "topo", "-m"]))
    nvml = open_gpus()
    nvml_rows = [asdict(g) for g in nvml.read()] if nvml.read else []
    smi_rows = [asdict(g) for g in parse_gpu_query(csv)]
    (out / "readings.json").write_text(
        json.dumps(
            {
                "source": nvml.name,
                "problem": nvml.problem,
                "nvml": nvml_rows,
                "nvidia_smi": smi_rows,
            },
            indent=2,
        )
    )
    fl = [sys.executable, "-m", "fabriclens"]
    (out / "doctor.json").write_text(_run([*fl, "doctor", "--json", "--sample", "3"]))
    (out / "watch.json").write_text(_run([*fl, "watch", "--count", "5", "--json"]))
    agree = [
        (
            a["index"],
            a["pcie_width_max"] == b["pcie_width_max"],
            a["pcie_gen_max"] == b["pcie_gen_max"],
        )
        for a, b in zip(nvml_rows, smi_rows, strict=False)
    ]
    print(f"{len(smi_rows)} GPU(s) via nvidia-smi, {len(nvml_rows)} via {nvml.name}; "
          f"PCIe maxima agree per GPU: {agree}; files in {out}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
