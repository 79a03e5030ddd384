"""Eager PyTorch runs RMSNorm, rotary and SwiGLU op by op; fused frameworks do not
(model/elementwise.py). Checked against first principles and against published runs of the same
job with and without torch.compile."""

from __future__ import annotations

import json
import statistics
from dataclasses import replace

import pytest

from fabriclens.catalog import find_framework, find_gpu, find_link, find_model, find_network
from fabriclens.catalog.load import share_owner
from fabriclens.cli.app import run
from fabriclens.model.arch import count_params
from fabriclens.model.collectives import Fabric
from fabriclens.model.elementwise import (
    GATED_EAGER_BWD,
    GATED_EAGER_FWD,
    GATED_FUSED,
    RMSNORM_EAGER_BWD,
    RMSNORM_EAGER_FWD,
    eager_extra_bytes_per_token,
    op_bytes,
)
from fabriclens.model.layout import TrainConfig
from fabriclens.model.step import estimate_training_step
from fabriclens.plan.planner import make_plans
from fabriclens.plan.request import PlanRequest
from reference import all_training_cases, compile_pairs

LLAMA = find_model("llama-3.1-8b")
H100 = find_gpu("h100-sxm")
NODE = Fabric(find_link("nvlink4-nvswitch"), find_network("ndr-ib"), 8, 8, find_link("pcie5-x16"))
CFG = TrainConfig(gpus=8, gpus_per_node=8, tp=1, pp=1, dp=8, zero=3, seq_len=8192, global_batch=16,
                  micro_batch=2, recompute="selective")  # fmt: skip


def test_eager_rmsnorm_moves_nine_times_the_fused_bytes() -> None:
    """torchtitan's RMSNorm: x.float() (read 2, write 4), pow (4, 4), mean (read 4),
    x * rsqrt (4, 4), type_as (4, 2), * weight (2, 2) = 36 bytes per element, against a fused
    kernel's read 2, write 2."""
    assert op_bytes(RMSNORM_EAGER_FWD) == 36
    assert op_bytes(RMSNORM_EAGER_BWD) > 2 * op_bytes(RMSNORM_EAGER_FWD)


def test_eager_extra_bytes_for_llama_3_1_8b_by_hand() -> None:
    """Forward, per token per layer: two norms of 4,096 x (36 - 4) bytes, rotary over 32 query +
    8 key heads of 128 x (20 - 4), the SwiGLU product over 14,336 x (10 - 6)."""
    fwd, bwd = eager_extra_bytes_per_token(LLAMA)
    assert fwd == 2 * 4096 * 32 + 40 * 128 * 16 + 14336 * 4
    assert bwd > fwd
    # tensor parallelism splits rotary and the MLP; the norms only under sequence parallelism
    norms = 2 * 4096 * 32
    tp4, _ = eager_extra_bytes_per_token(LLAMA, tp=4)
    assert tp4 == pytest.approx(norms + (fwd - norms) / 4)
    tp4_sp, _ = eager_extra_bytes_per_token(LLAMA, tp=4, sequence_parallel=True)
    assert tp4_sp == pytest.approx(fwd / 4)


def test_query_and_key_norms_run_the_rmsnorm_chain_over_every_head() -> None:
    """Qwen3-8B normalises its 32 query and 8 key heads of 128 (transformers' Qwen3RMSNorm, the
    same chain as LlamaRMSNorm): eager PyTorch adds (36 - 4) bytes per element of those 5,120
    forward and (76 - 2 x 4) backward, split by the heads over tensor parallelism; the norms' inputs are kept for the
    backward, 2 x 5,120 bytes per token of activations. The same shape in a family without them
    moves neither, and nanotron's fused norms add nothing."""
    from fabriclens.model.memory import activation_bytes_per_layer

    qwen = find_model("qwen3-8b")
    plain = replace(qwen, family="llama")
    fwd, bwd = eager_extra_bytes_per_token(qwen)
    fwd0, bwd0 = eager_extra_bytes_per_token(plain)
    assert fwd - fwd0 == 5120 * 32
    assert bwd - bwd0 == 5120 * (op_bytes(RMSNORM_EAGER_BWD) - 2 * 4)
    tp2, _ = eager_extra_bytes_per_token(qwen, tp=2)
    tp2_0, _ = eager_extra_bytes_per_token(plain, tp=2)
    assert tp2 - tp2_0 == pytest.approx(5120 * 32 / 2)
    mlp_only = eager_extra_bytes_per_token(qwen, mode="eager-mlp")
    assert mlp_only == eager_extra_bytes_per_token(plain, mode="eager-mlp")
    tokens = CFG.micro_batch * CFG.seq_len
    assert activation_bytes_per_layer(qwen, CFG, "none") - activation_bytes_per_layer(
        plain, CFG, "none"
    ) == pytest.approx(2 * tokens * 5120)
    # a full recompute keeps only the block's input; per-op checkpointing reruns the norms
    for rec in ("full", "op"):
        assert activation_bytes_per_layer(qwen, CFG, rec) == activation_bytes_per_layer(
            plain, CFG, rec
        )


def test_layernorm_gelu_alibi_models_run_the_same_either_way() -> None:
    """MPT's LayerNorm and GELU are one kernel each in eager PyTorch and it has no rotary: eager
    adds nothing. A Llama step is slower eager than fused, by the extra bytes over HBM."""
    mpt = find_model("mpt-7b")
    assert eager_extra_bytes_per_token(mpt) == (0.0, 0.0)
    cfg_mpt = replace(CFG, seq_len=2048)
    fused = estimate_training_step(mpt, count_params(mpt), H100, NODE, cfg_mpt)
    eager = estimate_training_step(mpt, count_params(mpt), H100, NODE, replace(cfg_mpt, elementwise="eager"))  # fmt: skip
    assert eager.time_s == pytest.approx(fused.time_s, rel=1e-12)
    counts = count_params(LLAMA)
    fused = estimate_training_step(LLAMA, counts, H100, NODE, CFG)
    eager = estimate_training_step(LLAMA, counts, H100, NODE, replace(CFG, elementwise="eager"))
    assert eager.time_s > 1.05 * fused.time_s
    assert any("op by op (eager)" in a for a in eager.assumptions)
    assert not any("op by op (eager)" in a for a in fused.assumptions)


def test_compile_speedup_follows_the_published_pairs() -> None:
    """Sources: torchtitan's and fms-fsdp's published runs of the same job with and without
    torch.compile (benchmarks/reference.py COMPILE_PAIRS). torch.compile gains 11-28% on them; the model, which prices only the fused
    elementwise bytes, must give a gain on each, within 15 points of the published one (median
    within 10): it explains most of it and never invents one. Without the eager elementwise
    model every pair's predicted gain is zero."""
    pairs = compile_pairs(all_training_cases())
    assert len(pairs) == 10
    errors = []
    for eager, compiled in pairs:
        eager_id = eager.row_id
        assert eager.framework == "pytorch" and compiled.framework == "pytorch-compile"
        measured = compiled.measured / eager.measured
        predicted = compiled.predicted / eager.predicted
        assert predicted > 1.04, (eager_id, predicted)
        assert abs(predicted - measured) <= 0.15, (eager_id, measured, predicted)
        errors.append(abs(predicted - measured))
    assert statistics.median(errors) <= 0.10


def test_pytorch_compile_is_the_eager_stack_with_fused_elementwise() -> None:
    eager, compiled = find_framework("pytorch"), find_framework("torch.compile")
    assert (eager.elementwise, compiled.elementwise) == ("eager", "fused")
    assert compiled.name == "pytorch-compile"
    assert compiled.efficiency == eager.efficiency  # one calibrated share for both
    assert share_owner("pytorch-compile") == "pytorch"
    assert share_owner("nemo") == "nemo"
    for name in ("nemo", "megatron", "jax"):
        assert find_framework(name).elementwise == "fused"


def test_nanotron_runs_only_its_gated_mlp_op_by_op() -> None:
    """nanotron's Llama (models/llama.py at the Ultra-Scale Playbook sweep's commit) normalises
    with flash-attn's Triton RMSNorm and rotates with flash-attn's fused rotary kernel; only its
    GLUActivation, act(gate) * up, runs op by op. Its extra traffic is the gated chain's alone:
    (2 + 2 + 4 + 2) - (4 + 2) = 4 bytes forward and (4 + 2) x 3 - 2 x 6 = 6 backward per element
    of the MLP's width, 14,336 for Llama 3.1 8B."""
    assert find_framework("nanotron").elementwise == "eager-mlp"
    fwd, bwd = eager_extra_bytes_per_token(LLAMA, mode="eager-mlp")
    assert op_bytes(GATED_EAGER_FWD) - op_bytes(GATED_FUSED) == 4
    assert op_bytes(GATED_EAGER_BWD) - 2 * op_bytes(GATED_FUSED) == 6
    assert (fwd, bwd) == (4 * 14336, 6 * 14336)
    assert eager_extra_bytes_per_token(LLAMA, tp=2, mode="eager-mlp") == (2 * 14336, 3 * 14336)
    whole = eager_extra_bytes_per_token(LLAMA)
    assert whole[0] > fwd and whole[1] > bwd  # eager PyTorch adds the norms and rotary too
    assert eager_extra_bytes_per_token(LLAMA, mode="fused") == (0.0, 0.0)


def test_plan_prices_the_framework_elementwise_mode() -> None:
    req = PlanRequest(model=LLAMA, gpu="h100-sxm", gpus=8)
    (eager,) = make_plans(req)
    (compiled,) = make_plans(replace(req, framework="pytorch-compile"))
    assert eager.training is not None and compiled.training is not None
    assert compiled.training.tokens_per_s > 1.05 * eager.training.tokens_per_s
    # the kernel-level line is NVIDIA's fused step for both
    assert eager.kernel_level is not None and compiled.kernel_level is not None
    assert eager.kernel_level.time_s == pytest.approx(compiled.kernel_level.time_s, rel=1e-12)


def test_json_names_the_elementwise_mode(capsys: pytest.CaptureFixture[str]) -> None:
    status = run(
        ["plan", "llama-3.1-8b", "--gpus", "8", "--framework", "pytorch-compile", "--json"]
    )
    doc = json.loads(capsys.readouterr().out)
    assert status == 0
    assert doc["framework"]["name"] == "pytorch-compile"
    assert doc["framework"]["elementwise"] == "fused"


def test_bad_grad_reduce_is_one_line_with_the_fix(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["plan", "llama-3.1-8b", "--gpus", "8", "--grad-reduce", "fp16"]) == 2
    err = capsys.readouterr().err
    assert "fp16" in err and "--grad-reduce bf16 or fp32" in err and "Traceback" not in err
    assert run(["plan", "llama-3.1-8b", "--gpus", "8", "--framework", "megatron", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["framework"]["grad_reduce"] == "fp32"


def test_attention_kernel_is_the_frameworks_on_the_gpu_unless_the_user_names_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Eager PyTorch runs FlashAttention-2 on H100 and cuDNN's kernel on B200 (its SDPA's choice
    there); --attention overrides it, says so, and a long sequence then runs at the other rate.
    A kernel the model does not price is one line with the fix, exit 2."""

    def doc(*extra: str) -> dict:  # type: ignore[type-arg]
        argv = ["plan", "llama-3.1-8b", "--gpus", "8", "--seq-len", "16384", "--json", *extra]
        assert run(argv) == 0
        return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]

    assert doc()["framework"]["attention"] == "flash"
    assert doc("--gpu", "b200")["framework"]["attention"] == "fused"
    req = PlanRequest(model=LLAMA, gpu="h100-sxm", gpus=8, seq_len=16384)
    (flash,) = make_plans(req)
    (fused,) = make_plans(replace(req, attention="fused"))
    assert flash.training is not None and fused.training is not None
    assert fused.training.time_s < flash.training.time_s
    assert any("--attention" in n for n in fused.defaults)
    assert not any("--attention" in n for n in flash.defaults)
    assert run(["plan", "llama-3.1-8b", "--gpus", "8", "--attention", "flash3"]) == 2
    err = capsys.readouterr().err
    assert "flash3" in err and "--attention flash" in err and err.count("\n") == 1
