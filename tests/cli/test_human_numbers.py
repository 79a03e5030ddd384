"""Human output never shows scientific notation, however large or small the numbers get."""

from __future__ import annotations

import re

import pytest

from fabriclens.cli.app import run

# 1e+03, 3.2e+03, 1.13E-06: a mantissa, an exponent marker and a signed or bare exponent
SCIENTIFIC = re.compile(r"\d(?:\.\d+)?[eE][+-]?\d")

EXTREMES = [
    "transfer 1PB --link 1gbe",
    "transfer 1PB --link 1gbe --hosts 1000 --storage 1tbit",
    "transfer 1kB --link ndr-ib --protocol rdma",
    "transfer 1TB --link 1gbe --measured 1kbit",
    "plan llama-3.1-405b --gpus 16 --network 1gbe --explain",
    "plan llama-3.1-405b --gpus 16 --network 1gbe --global-batch 100000",
    "plan llama-3.1-405b --gpus 1024 --compare-networks --global-batch 100000",
    "plan llama-3.1-405b -w inference --gpus 16 --network 1gbe --batch 256 --prompt-tokens 100000 --explain",
    "collective all_reduce 1PB --ranks 64 --network 1gbe",
    "collective all_reduce 1B --ranks 2",
    "search llama-3.1-405b --gpus 64 --network 1gbe,ndr-ib --global-batch 100000",
    "advise --gpus 1024 --network 1gbe,ndr-ib",
    "datapath --gpus 1024 --tokens-per-s 1e12 --checkpoint-size 1PB --storage-network 1gbe",
    "datapath --gpus 8 --images-per-s 1e9 --image-size 1GB --storage-bw 1kB/s",
    "datapath --gpus 8 --tokens-per-s 0.001 --checkpoint-size 1kB",
    "capacity llama-3.1-405b --users 100000 --network 1gbe --latency-slo tpot=50ms,ttft=2s",
    "capacity llama-3.1-405b --users 100000 --tp 16 --gpus-per-node 8 --network 1gbe",
]


@pytest.mark.parametrize("argv", EXTREMES)
def test_planning_output_has_no_scientific_notation(
    capsys: pytest.CaptureFixture[str], argv: str
) -> None:
    assert run(argv.split()) in (0, 1)  # 1: a plan that does not fit (still printed)
    captured = capsys.readouterr()
    text = captured.out + captured.err
    assert text.strip()
    hits = [line.strip() for line in text.splitlines() if SCIENTIFIC.search(line)]
    assert not hits, hits


def test_a_petabyte_over_gigabit_ethernet_reads_in_days(capsys: pytest.CaptureFixture[str]) -> None:
    # 1e15 bytes x 8 / 0.94e9 bit/s goodput = 8.5e6 s = 98.5 days
    assert run(["transfer", "1PB", "--link", "1gbe"]) == 0
    out = capsys.readouterr().out
    assert "1,000 TB over 1gbe" in out
    assert "98.5 days" in out
