"""Any combination of plan flags ends in a result (0) or a one-line input error (2), never 3."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabriclens.cli.app import run

small = st.one_of(st.none(), st.sampled_from([-1, 0, 1, 2, 3, 4, 8, 16, 64]))


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    model=st.sampled_from(["llama-3.1-8b", "mixtral-8x7b", "deepseek-v3", "gpt2", "qwen2.5-7b"]),
    workload=st.sampled_from(["pretrain", "full-finetune", "lora", "qlora", "inference", "bogus"]),
    gpu=st.sampled_from(["h100-sxm", "a100", "rtx-4090", "l40s", "b200"]),
    gpus=st.sampled_from([1, 2, 3, 8, 16, 24, 64]),
    gpn=small,
    tp=small,
    pp=small,
    dp=small,
    cp=small,
    ep=small,
    zero=small,
    mb=small,
    gb=small,
    seq=st.one_of(st.none(), st.sampled_from([0, 1, 100, 2048, 4097])),
    network=st.one_of(st.none(), st.sampled_from(["1gbe", "ndr-ib", "nope", "100g-roce,25gbe"])),
    precision=st.one_of(st.none(), st.sampled_from(["bf16", "fp8", "int4", "fp64"])),
)
def test_plan_never_fails_internally(
    capsys: pytest.CaptureFixture[str],
    model,
    workload,
    gpu,
    gpus,
    gpn,
    tp,
    pp,
    dp,
    cp,
    ep,
    zero,
    mb,
    gb,
    seq,
    network,
    precision,
) -> None:  # type: ignore[no-untyped-def]
    argv = ["plan", model, "-w", workload, "--gpu", gpu, "--gpus", str(gpus), "--json"]
    for flag, value in (("--gpus-per-node", gpn), ("--tp", tp), ("--pp", pp), ("--dp", dp), ("--cp", cp),
                        ("--ep", ep), ("--zero", zero), ("--micro-batch", mb), ("--global-batch", gb),
                        ("--seq-len", seq), ("--network", network), ("--precision", precision)):  # fmt: skip
        if value is not None:
            argv += [flag, str(value)]
    status = run(argv)
    out, err = capsys.readouterr()
    assert status in (0, 1, 2), err
    if status != 2:  # the exit status is the fit verdict
        docs = json.loads(out)
        docs = docs if isinstance(docs, list) else [docs]
        assert status == (0 if all(d["memory"]["fits"] for d in docs) else 1)
    if status == 2:
        assert err.count("\n") == 1 and err.startswith("fabriclens: error: ")
