"""The first NCCL release for a GPU architecture (diagnose/gpu_support.py), against a log's
release: an RTX 5090 needs 2.26.2 (NVIDIA/nccl-tests#291), a B200 2.25.1 (NCCL 2.25.1's release
notes)."""

from __future__ import annotations

from fabriclens.diagnose.gpu_support import first_release, release, too_old


def test_a_release_string_reads_as_numbers() -> None:
    assert release("2.25.1+cuda12.4") == (2, 25, 1)
    assert release("2.26.2") == (2, 26, 2)
    assert release("unknown") is None


def test_an_rtx_5090_needs_2_26_2() -> None:
    assert first_release("NVIDIA GeForce RTX 5090") is not None
    assert too_old(["NVIDIA GeForce RTX 5090"], ["2.25.1+cuda12.8"]) == [
        "NVIDIA GeForce RTX 5090 (sm_120) under NCCL 2.25.1: supported from 2.26.2"
    ]
    assert too_old(["NVIDIA GeForce RTX 5090"], ["2.26.2+cuda12.8"]) == []


def test_a_b200_and_a_gb200_need_2_25_1() -> None:
    assert len(too_old(["NVIDIA B200", "NVIDIA GB200"], ["2.21.5"])) == 2
    assert too_old(["NVIDIA B200"], ["2.25.1"]) == []


def test_unlisted_gpus_and_logs_without_a_release_say_nothing() -> None:
    assert too_old(["NVIDIA H100 80GB HBM3"], ["2.10.3"]) == []
    assert too_old(["NVIDIA GeForce RTX 5090"], []) == []
    # of several releases in one log, the newest decides
    assert too_old(["NVIDIA GeForce RTX 5090"], ["2.25.1", "2.27.3"]) == []
