"""LoRA's adapters: where they sit (--lora-targets), what they hold and what they move.

The byte counts are arithmetic on the layer's widths (model/lora.py's docstring lists the reads
and writes of one unfused adapter); the parameter counts are PEFT's rank x (in + out) per
adapted linear layer.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from fabriclens.catalog import find_framework, find_gpu, find_link, find_model
from fabriclens.cli.app import run
from fabriclens.model.arch import count_params
from fabriclens.model.collectives import Fabric
from fabriclens.model.layout import TrainConfig
from fabriclens.model.lora import LORA_TARGETS, adapter_bytes_per_token
from fabriclens.model.memory import adapter_params
from fabriclens.model.step import estimate_training_step

LLAMA2_70B = find_model("llama-2-70b")  # hidden 8192, 64 heads, 8 KV heads of 128, ffn 28672
H100 = find_gpu("h100-sxm")
NVLINK = Fabric(find_link("nvlink4-nvswitch"), None, 8)


def test_attention_adapters_on_one_gpu_stream_inputs_and_outputs_again() -> None:
    """Separate q, k, v, o: inputs 4 x 8192, outputs 8192 + 1024 + 1024 + 8192 elements per
    token; forward 1 in + 4 out, backward 5 in + 2 out, two bytes each."""
    fwd, bwd = adapter_bytes_per_token(LLAMA2_70B, 1, False, 1, "attention")
    ins, outs = 4 * 8192, 8192 + 1024 + 1024 + 8192
    assert fwd == 2 * (ins + 4 * outs)
    assert bwd == 2 * (5 * ins + 2 * outs)


def test_a_fused_qkv_projection_is_read_once() -> None:
    """Megatron-Core's linear_qkv: one adapter on 8192 -> 10240 reads its input once."""
    fwd, bwd = adapter_bytes_per_token(LLAMA2_70B, 1, False, 1, "attention", "fused")
    ins, outs = 8192 + 8192, 10240 + 8192
    assert (fwd, bwd) == (2 * (ins + 4 * outs), 2 * (5 * ins + 2 * outs))


def test_tensor_parallel_ranks_move_their_shards() -> None:
    """TP 8 with sequence parallelism: the column-parallel QKV reads the gathered input and
    writes 1/8 of its output; the row-parallel output projection reads 1/8 of its input and
    writes 1/8 of the tokens' output (reduce-scattered); without sequence parallelism the
    whole output."""
    fwd, _ = adapter_bytes_per_token(LLAMA2_70B, 8, True, 8, "attention", "fused")
    assert fwd == 2 * ((8192 + 1024) + 4 * (1280 + 1024))
    fwd_no_sp, _ = adapter_bytes_per_token(LLAMA2_70B, 8, False, 8, "attention", "fused")
    assert fwd_no_sp == 2 * ((8192 + 1024) + 4 * (1280 + 8192))


def test_targets_choose_the_adapted_layers() -> None:
    spec = find_model("llama-2-7b")  # 4096 wide, 32 heads of 128 (no GQA), ffn 11008
    h, f = 4096, 11008

    def fwd(targets: str, fused: bool = False) -> float:
        layout = "fused" if fused else "separate"
        return adapter_bytes_per_token(spec, 1, False, 1, targets, layout)[0]

    assert fwd("qv") == 2 * (2 * h + 4 * 2 * h)  # q and v: 4096 -> 4096 each
    assert fwd("qkv") == 2 * (3 * h + 4 * 3 * h)  # the output projection left out
    assert fwd("attention") == 2 * (4 * h + 4 * 4 * h)
    mlp = 2 * ((2 * h + f) + 4 * (2 * f + h))  # gate and up read h, write f; down the reverse
    assert fwd("all") == pytest.approx(fwd("attention") + mlp)
    fused_mlp = 2 * ((h + f) + 4 * (2 * f + h))  # linear_fc1 reads its input once
    assert fwd("all", fused=True) == pytest.approx(fwd("attention", fused=True) + fused_mlp)
    assert fwd("qv", fused=True) == fwd("qv")  # PEFT's q_proj and v_proj stay two layers
    assert fwd("mlp") == pytest.approx(mlp)  # gate, up and down alone


def test_adapter_parameters_follow_the_targets() -> None:
    """Llama-2-7B, rank 16 on q_proj and v_proj (PEFT's default for Llama): 32 layers x 2 x 16 x
    (4096 + 4096) = 8,388,608 trainable parameters."""
    spec = find_model("llama-2-7b")
    assert adapter_params(spec, 16, "qv") == 8_388_608
    assert adapter_params(spec, 16, "attention") == 32 * 16 * 4 * 8192
    # one adapter on the fused QKV: 16 x (4096 + 3 x 4096) a layer where three take 16 x 6 x 4096
    assert adapter_params(spec, 16, "qkv", "fused") == 32 * 16 * (4096 + 3 * 4096)
    assert adapter_params(spec, 16, "qkv") == 32 * 16 * 3 * 8192
    assert adapter_params(spec, 16) > adapter_params(spec, 16, "attention")
    assert adapter_params(spec, 16, "mlp") == 32 * 16 * 3 * (4096 + 11008)
    assert adapter_params(spec, 16, "mlp") + adapter_params(spec, 16, "attention") == (
        adapter_params(spec, 16)
    )


def test_the_step_prices_the_adapters_traffic_at_hbm_speed() -> None:
    """A micro-batch's compute grows by exactly the adapters' bytes over HBM."""
    counts = count_params(LLAMA2_70B)
    cfg = TrainConfig(gpus=8, gpus_per_node=8, tp=8, dp=1, sequence_parallel=True, seq_len=4096,
                      global_batch=8, workload="lora", lora_targets="qkv")  # fmt: skip
    steps = {t: estimate_training_step(LLAMA2_70B, counts, H100, NVLINK,
                                       replace(cfg, lora_targets=t)) for t in LORA_TARGETS}  # fmt: skip
    mem_rate = H100.hbm_bw_bytes_per_s * H100.memory_bw_efficiency
    tokens = 4096 * LLAMA2_70B.layers  # one micro-batch through every layer (one stage)
    for a, b in (("all", "attention"), ("attention", "qkv")):
        extra = [sum(adapter_bytes_per_token(LLAMA2_70B, 8, True, 8, t)) for t in (a, b)]
        assert steps[a].microbatch_compute_s - steps[b].microbatch_compute_s == pytest.approx(
            tokens * (extra[0] - extra[1]) / mem_rate, rel=1e-9
        )
    # a pretraining step has no adapters
    pre = estimate_training_step(
        LLAMA2_70B, counts, H100, NVLINK, replace(cfg, workload="pretrain")
    )
    assert not any("LoRA" in line for line in pre.assumptions)
    assert any("stream each adapted layer's input" in line for line in steps["all"].assumptions)


def test_zero_shards_the_adapters_states_as_it_would_the_bases() -> None:
    """Adam's fp32 state of the adapters is divided over the data-parallel ranks from ZeRO-1, their
    gradients from ZeRO-2 and their 16-bit weights from ZeRO-3; without ZeRO each rank holds all
    (2 + 14 bytes a parameter)."""
    spec = find_model("llama-3.1-8b")
    counts = count_params(spec)
    cfg = TrainConfig(gpus=8, gpus_per_node=8, dp=8, seq_len=4096, global_batch=64,
                      workload="lora", lora_targets="qv")  # fmt: skip
    adapters = adapter_params(spec, 16, "qv", "separate")
    mem = {z: estimate_training_step(spec, counts, H100, NVLINK, replace(cfg, zero=z)).memory
           for z in range(4)}  # fmt: skip
    expected = {  # (gradients, optimizer) bytes per parameter on one of 8 ranks
        0: (2.0, 12.0 + 2.0), 1: (2.0, 12.0 / 8 + 2.0), 2: (2.0 / 8, 12.0 / 8 + 2.0),
        3: (2.0 / 8, 12.0 / 8 + 2.0 / 8),
    }  # fmt: skip
    for z, (grads, optimizer) in expected.items():
        assert mem[z].per_gpu_bytes["gradients"] == pytest.approx(grads * adapters, rel=1e-12)
        assert mem[z].per_gpu_bytes["optimizer"] == pytest.approx(optimizer * adapters, rel=1e-12)


def test_nvidias_stacks_fuse_their_input_projections() -> None:
    assert find_framework("nemo").projections == "fused"
    assert find_framework("megatron").projections == "fused"
    assert find_framework("nanotron").projections == "fused"
    assert find_framework("pytorch").projections == "separate"


def test_plan_takes_lora_targets_and_reports_them(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["plan", "llama-3.1-8b", "--gpus", "8", "-w", "lora", "--json"]
    docs = {}
    for t in ("all", "qv"):
        assert run([*args, "--lora-targets", t]) == 0
        docs[t] = json.loads(capsys.readouterr().out)
    assert docs["qv"]["lora"]["targets"] == "qv"
    assert docs["qv"]["lora"]["trainable_params"] == 32 * 16 * (2 * 4096 + 4096 + 1024)
    assert docs["all"]["lora"]["trainable_params"] > docs["qv"]["lora"]["trainable_params"]
    assert (docs["all"]["lora"]["adapter_bytes_per_token_layer"]["forward"]
            > docs["qv"]["lora"]["adapter_bytes_per_token_layer"]["forward"])  # fmt: skip
    assert docs["all"]["throughput"]["tokens_per_s"] < docs["qv"]["throughput"]["tokens_per_s"]
    assert run(["plan", "llama-3.1-8b", "--gpus", "8", "--json"]) == 0
    assert "lora" not in json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["-w", "lora", "--lora-targets", "ffn"], "--lora-targets all"),
        (["-w", "inference", "--lora-targets", "qv"], "--lora-targets"),
        (["-w", "pretrain", "--lora-targets", "qv"], "-w lora"),
    ],
)
def test_bad_lora_targets_say_what_to_use(
    extra: list[str], needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["plan", "llama-3.1-8b", "--gpus", "8", *extra]) == 2
    err = capsys.readouterr().err
    assert needle in err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_search_takes_the_lora_targets_too(capsys: pytest.CaptureFixture[str]) -> None:
    """`search -w lora` ranks layouts with the adapters where the user puts them: on q and v
    alone they move less than on every projection, so the best layout runs faster."""
    best = {}
    for t in ("all", "qv"):
        args = ["search", "llama-3.1-8b", "-w", "lora", "--lora-targets", t, "--top", "1"]
        assert run([*args, "--json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        best[t] = doc["networks"][0]["top"][0]["tokens_per_s"]
    assert best["qv"] > best["all"]
    assert run(["search", "llama-3.1-8b", "--lora-targets", "qv"]) == 2
    assert "applies to -w lora or qlora" in capsys.readouterr().err


def test_advise_takes_the_lora_options_with_a_model(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["advise", "llama-3.1-8b", "-w", "lora", "--gpus", "16", "--json"]
    assert run([*args, "--lora-targets", "qv"]) == 0
    assert json.loads(capsys.readouterr().out)
    for bad in (["advise", "llama-3.1-8b", "--lora-targets", "qv"],  # pretrain
                ["advise", "-w", "lora", "--lora-targets", "qv"]):  # no model  # fmt: skip
        assert run(bad) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
