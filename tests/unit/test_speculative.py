"""Speculative decoding (model/inference.py): a draft proposes tokens, the model verifies them in
one step, and a token costs the step over the tokens it emits."""

from __future__ import annotations

import json
import math

import pytest

from fabriclens.catalog import find_engine, find_gpu, find_link, find_model
from fabriclens.cli.app import run
from fabriclens.model.arch import count_params, expert_params
from fabriclens.model.collectives import Fabric
from fabriclens.model.inference import (
    DENSE_LAYER_KERNELS,
    DRAFT_EXTRA_KERNELS,
    EAGLE3_DRAFT_VOCAB,
    InferenceEstimate,
    default_draft,
    draft_layer_spec,
    draft_pass,
    estimate_inference,
    experts_touched,
)


def _plan(model: str, gpu: str, tp: int, engine: str, **kw: object) -> InferenceEstimate:
    spec, g = find_model(model), find_gpu(gpu)
    fabric = Fabric(find_link(g.intra_link), None, 8, 1)
    args: dict[str, object] = {"batch": 1, "prompt_tokens": 1000, "output_tokens": 200}
    args.update(kw)
    return estimate_inference(spec, count_params(spec), g, fabric, find_engine(engine), tp=tp,
                              pp=1, **args)  # type: ignore[arg-type]  # fmt: skip


def test_a_token_costs_the_step_over_the_tokens_it_emits() -> None:
    est = _plan("llama-3.1-8b", "h100-sxm", 1, "vllm", spec_tokens=4, accept_length=3.0,
                draft="eagle3")  # fmt: skip
    assert est.decode_step_s == pytest.approx(est.spec_step_s / 3.0)
    assert est.decode_tokens_per_s == pytest.approx(3.0 / est.spec_step_s)
    # the per-token collectives are the step's over the tokens it emits too
    assert est.spec_step_s > est.draft_s > 0


def test_verifying_drafts_of_a_memory_bound_model_costs_one_weight_read() -> None:
    """At batch 1 a dense 8B model's decode step streams its 16 GB of weights; verifying five
    positions reads them once, so the step beside its draft passes is the plain step (the
    extra FLOPs hide under the weight stream, the KV cache is read once a sequence)."""
    plain = _plan("llama-3.1-8b", "h100-sxm", 1, "vllm")
    est = _plan("llama-3.1-8b", "h100-sxm", 1, "vllm", spec_tokens=4, accept_length=3.0,
                draft="eagle3")  # fmt: skip
    assert est.spec_step_s - est.draft_s == pytest.approx(plain.decode_step_s, rel=0.01)
    assert est.weights_read_per_step_bytes == pytest.approx(plain.weights_read_per_step_bytes,
                                                            rel=1e-3)  # fmt: skip


def test_nothing_accepted_is_slower_than_plain_decode() -> None:
    plain = _plan("llama-3.1-8b", "h100-sxm", 1, "vllm")
    rejected = _plan("llama-3.1-8b", "h100-sxm", 1, "vllm", spec_tokens=3, accept_length=1.0,
                     draft="eagle3")  # fmt: skip
    assert rejected.decode_step_s > plain.decode_step_s


def test_verification_reads_the_experts_of_every_position() -> None:
    """DeepSeek-V3 verifying three drafts at batch 1 routes four tokens a layer: the routed
    experts read grow from 8 to E(1-(1-k/E)^4) of 256, all else read once."""
    spec = find_model("deepseek-v3")
    plain = _plan("deepseek-v3", "h200", 8, "sglang", precision="fp8")
    est = _plan("deepseek-v3", "h200", 8, "sglang", precision="fp8", spec_tokens=3,
                accept_length=2.5)  # fmt: skip
    moe = 58  # DeepSeek-V3's MoE layers: 61 less the first three dense ones
    extra = (experts_touched(256, 8, 4) - experts_touched(256, 8, 1)) * expert_params(spec)
    assert est.weights_read_per_step_bytes - plain.weights_read_per_step_bytes == pytest.approx(
        moe * extra / 8, rel=0.01
    )


def test_sglang_turns_its_overlap_off_for_speculative_decoding_and_vllm_keeps_it() -> None:
    sglang = _plan("llama-3.1-8b", "h100-sxm", 1, "sglang")
    sglang_spec = _plan("llama-3.1-8b", "h100-sxm", 1, "sglang", spec_tokens=3,
                        accept_length=2.5, draft="eagle3")  # fmt: skip
    vllm_spec = _plan("llama-3.1-8b", "h100-sxm", 1, "vllm", spec_tokens=3, accept_length=2.5,
                      draft="eagle3")  # fmt: skip
    engine = find_engine("sglang")
    assert sglang.host_step_hidden_s == pytest.approx(engine.step_overhead_s)
    assert sglang_spec.host_step_hidden_s == 0.0
    assert vllm_spec.host_step_hidden_s > 0.0
    assert any("turns its overlapped scheduling off" in a for a in sglang_spec.assumptions)


def test_a_draft_pass_is_its_layer_head_and_fc_read_plus_its_kernel_gaps() -> None:
    """First principles for an EAGLE head on Llama-3.1-8B (one GPU, vLLM): the pass streams a
    dense layer (218M parameters), the shared 128,256 x 4,096 LM head and the 2 x 4,096 fc in
    16 bits, and pays one layer's kernel gaps plus six; its KV read at 1,100 tokens is small."""
    spec, gpu, engine = find_model("llama-3.1-8b"), find_gpu("h100-sxm"), find_engine("vllm")
    fabric = Fabric(find_link(gpu.intra_link), None, 8, 1)
    one = draft_pass(spec, "eagle", gpu, fabric, engine, tp=1, batch=1, prompt_tokens=1000,
                     output_tokens=200, ep=1, dp=1, precision="bf16", kv_precision="bf16",
                     weight_bytes_per_param=2.0)  # fmt: skip
    h, f = spec.hidden, spec.ffn
    layer = 2 * h * h + 2 * h * (h // 4) + 3 * h * f  # q, o; k, v of 8 KV heads; the MLP
    read = 2.0 * (layer + spec.vocab * h + 2 * h * h)
    rate = gpu.hbm_bw_bytes_per_s * gpu.decode_stream_efficiency
    gaps = engine.layer_overhead_s * (1 + DRAFT_EXTRA_KERNELS / DENSE_LAYER_KERNELS)
    assert one.time_s == pytest.approx(read / rate + gaps, rel=0.03)
    # the weights it adds: its layer and fc, not the head it shares with the model
    assert one.weights_bytes_per_gpu == pytest.approx(2.0 * (layer + 2 * h * h), rel=0.01)


def test_an_eagle3_head_reads_its_own_small_vocabulary() -> None:
    spec, gpu, engine = find_model("llama-3.1-8b"), find_gpu("h100-sxm"), find_engine("vllm")
    fabric = Fabric(find_link(gpu.intra_link), None, 8, 1)
    kw = {"tp": 1, "batch": 1, "prompt_tokens": 1000, "output_tokens": 200, "ep": 1, "dp": 1,
          "precision": "bf16", "kv_precision": "bf16", "weight_bytes_per_param": 2.0}  # fmt: skip
    eagle = draft_pass(spec, "eagle", gpu, fabric, engine, **kw)  # type: ignore[arg-type]
    eagle3 = draft_pass(spec, "eagle3", gpu, fabric, engine, **kw)  # type: ignore[arg-type]
    rate = gpu.hbm_bw_bytes_per_s * gpu.decode_stream_efficiency
    head_saved = 2.0 * (spec.vocab - EAGLE3_DRAFT_VOCAB) * spec.hidden / rate
    fc_added = 2.0 * spec.hidden * spec.hidden / rate
    assert eagle.time_s - eagle3.time_s == pytest.approx(head_saved - fc_added, rel=0.02)
    # its own head is memory the model does not hold
    assert eagle3.weights_bytes_per_gpu - eagle.weights_bytes_per_gpu == pytest.approx(
        2.0 * (EAGLE3_DRAFT_VOCAB + spec.hidden) * spec.hidden, rel=0.01
    )


def test_an_mtp_draft_is_one_layer_of_the_models_own_kind() -> None:
    spec = find_model("deepseek-v3.2")
    one = draft_layer_spec(spec, "mtp")
    assert (one.layers, moe_layers_of(one)) == (1, 1)
    assert one.is_mla and one.is_sparse and one.experts == spec.experts
    assert default_draft(spec) == "mtp" and default_draft(find_model("llama-3.1-8b")) == "eagle3"
    dense = draft_layer_spec(spec, "eagle3")
    assert not (dense.is_moe or dense.is_mla or dense.is_sparse) and dense.vocab == 32000


def moe_layers_of(spec: object) -> int:
    from fabriclens.model.arch import moe_layers

    return moe_layers(spec)  # type: ignore[arg-type]


def test_the_draft_holds_one_more_layer_of_memory() -> None:
    """DeepSeek-V3's MTP layer in FP8 over 8 ranks: about one MoE layer's share (its 256
    experts dominate), ~1.4 GiB a GPU, and its KV cache one layer's of 61."""
    spec = find_model("deepseek-v3")
    counts = count_params(spec)
    plain = _plan("deepseek-v3", "h200", 8, "sglang", precision="fp8", batch=8)
    est = _plan("deepseek-v3", "h200", 8, "sglang", precision="fp8", batch=8, spec_tokens=3,
                accept_length=2.5)  # fmt: skip
    added = est.memory.per_gpu_bytes["weights"] - plain.memory.per_gpu_bytes["weights"]
    moe_layer = (counts.experts + counts.shared_and_router) / 58 + counts.attention / 61
    assert added == pytest.approx(moe_layer / 8 + 2 * 2 * spec.hidden**2, rel=0.05)
    kv = est.memory.per_gpu_bytes["kv_cache"] / plain.memory.per_gpu_bytes["kv_cache"]
    assert kv == pytest.approx(62 / 61, rel=1e-3)


def _json_plan(capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, object]:
    argv = ["plan", "deepseek-v3", "--gpu", "h200", "--gpus", "8", "--engine", "sglang",
            "--precision", "fp8", "--json", *extra]  # fmt: skip
    assert run(argv) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def test_plan_reports_the_speculative_step(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json_plan(capsys, "--spec-tokens", "3", "--accept-length", "2.5")
    inf = doc["inference"]
    spec = inf["speculative"]  # type: ignore[index]
    assert (spec["spec_tokens"], spec["accept_length"], spec["draft"]) == (3, 2.5, "mtp")
    assert math.isclose(inf["decode_step_s"] * 2.5, spec["step_s"], rel_tol=1e-3)  # type: ignore[index]
    plain = _json_plan(capsys)
    assert "speculative" not in plain["inference"]  # type: ignore[operator]
    # the plan states the same batch without the draft beside it
    assert spec["plain_decode_step_s"] == plain["inference"]["decode_step_s"]  # type: ignore[index]
    assert run(["plan", "deepseek-v3", "--gpu", "h200", "--gpus", "8", "--engine", "sglang",
                "--spec-tokens", "3", "--accept-length", "2.5"]) == 0  # fmt: skip
    out = " ".join(capsys.readouterr().out.split())  # the terminal's line breaks aside
    assert "speculative step of" in out and "mtp draft's 3 pass(es)" in out, out
    assert "without the draft" in out and "the draft does not pay" not in out
    # a large batch that accepts little: verifying 4 positions of 64 requests reads far more
    # experts, and the draft costs more than it saves
    assert run(["plan", "deepseek-v3", "--gpu", "h200", "--gpus", "8", "--engine", "sglang",
                "--spec-tokens", "3", "--accept-length", "1.2", "--batch", "64"]) == 0  # fmt: skip
    assert "slower: the draft does not pay" in " ".join(capsys.readouterr().out.split())


# three drafts a step under SGLang, the engine that plans a tree of them
SGLANG_3 = ["--spec-tokens", "3", "--accept-length", "2", "--engine", "sglang"]


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--accept-length", "2"], "needs --spec-tokens"),
        (["--draft", "mtp"], "needs --spec-tokens"),
        (["--spec-tokens", "3"], "needs --accept-length"),
        (["--spec-tokens", "3", "--accept-length", "5"], "between 1"),
        (["--spec-tokens", "3", "--accept-length", "0.5"], "between 1"),
        (["--spec-tokens", "3", "--accept-length", "nan"], "not a finite number"),
        (["--spec-tokens", "0", "--accept-length", "1"], "between 1 and 16"),
        (["--spec-tokens", "3", "--accept-length", "2", "--draft", "medusa"], "unknown --draft"),
        (["--spec-tokens", "3", "--accept-length", "2", "--engine", "ollama"], "modelled for"),
        (["--spec-tokens", "3", "--accept-length", "2", "--tp", "4", "--pp", "2"], "pipeline"),
        (["--draft-topk", "4"], "needs --spec-tokens"),
        (["--draft-tokens", "8"], "needs --spec-tokens"),
        ([*SGLANG_3, "--draft-topk", "4"], "needs --draft-tokens"),
        ([*SGLANG_3, "--draft-topk", "4", "--draft-tokens", "14"], "between 2 and 13"),
        ([*SGLANG_3, "--draft-topk", "17", "--draft-tokens", "8"], "between 1 and 16"),
        (
            [*SGLANG_3, "--engine", "vllm", "--draft-topk", "4", "--draft-tokens", "8"],
            "SGLang's EAGLE",
        ),
        ([*SGLANG_3, "--draft-tokens", "8"], "a chain of 3"),
        (
            [
                "--spec-tokens",
                "5",
                "--accept-length",
                "3.5",
                "--engine",
                "sglang",
                "--draft-topk",
                "4",
                "--draft-tokens",
                "3",
            ],
            "more than the 3 positions",
        ),
    ],
)
def test_bad_speculative_options_are_one_line_with_the_fix(
    capsys: pytest.CaptureFixture[str], extra: list[str], says: str
) -> None:
    argv = ["plan", "llama-3.1-8b", "--gpus", "8", "-w", "inference", *extra]
    assert run(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and says in err, err


def test_the_speed_up_follows_tensorrt_llms_published_mtp_sweep() -> None:
    """NVIDIA's DeepSeek-R1 on 8 B200s blog (TensorRT-LLM, NVFP4, TP 8 with EP 4, batch 1, 1k in /
    2k out; reference/inference_more.csv im622-im627) measured one run without MTP and with 1-5
    MTP draft tokens, each with its accept length: 111, 198, 250, 253, 245 and 239 tokens/s a
    user at 1.00, 1.92, 2.58, 2.82, 2.99 and 3.01 tokens a step. The plan's own speed is 2.6x
    the published one there (the large-MoE miss, README), but its speed-up over the run without
    MTP, which is what speculative decoding adds, follows the sweep within 15% at every draft
    length, and it falls past three drafts as the sweep does."""
    spec, gpu = find_model("deepseek-r1"), find_gpu("b200")
    fabric = Fabric(find_link(gpu.intra_link), None, 8, 1)
    sweep = {0: (111, 1.0), 1: (198, 1.92), 2: (250, 2.58), 3: (253, 2.82), 4: (245, 2.99),
             5: (239, 3.01)}  # fmt: skip
    planned = {}
    for k, (_, accept) in sweep.items():
        est = estimate_inference(spec, count_params(spec), gpu, fabric, find_engine("trtllm@0"),
                                 tp=8, pp=1, ep=4, batch=1, prompt_tokens=1024,
                                 output_tokens=2048, precision="fp4", spec_tokens=k,
                                 accept_length=accept)  # fmt: skip
        planned[k] = 2048 / est.e2e_s  # the blog's rate a user: prefill included
    for k in range(1, 6):
        published = sweep[k][0] / sweep[0][0]
        assert planned[k] / planned[0] == pytest.approx(published, rel=0.15), k
    assert planned[5] < planned[3] and sweep[5][0] < sweep[3][0]


def test_capacity_serves_with_speculative_decoding() -> None:
    """32 users of DeepSeek-V3 on H200s under SGLang at 10 ms a token, replicas of 8: plain decode
    meets it at one request a replica (32 replicas); three MTP drafts accepted 2.5 a step meet it
    at four (8 replicas). The draft's layer and KV cache leave room for fewer requests, and
    SGLang runs 48 at once by default with speculative decoding unless told otherwise."""
    from fabriclens.plan.capacity import plan_capacity

    spec = find_model("deepseek-v3")
    kw = {"users": 32, "output_tokens": 1000, "prompt_tokens": 1000, "tpot_slo_s": 0.010,
          "engine": "sglang", "tp": 8}  # fmt: skip
    plain = plan_capacity(spec, "h200", **kw)  # type: ignore[arg-type]
    spec_plan = plan_capacity(spec, "h200", spec_tokens=3, accept_length=2.5, **kw)  # type: ignore[arg-type]
    assert plain.slo_met and spec_plan.slo_met
    assert spec_plan.gpus < plain.gpus and spec_plan.batch > plain.batch
    # the plan says what the same demand takes without the draft
    assert any(a.startswith(f"without the draft: {plain.gpus} GPUs") for a in spec_plan.advice)
    assert not any(a.startswith("without the draft") for a in plain.advice)
    assert spec_plan.max_batch_kv < plain.max_batch_kv
    assert (
        spec_plan.limits.max_parallel == 48
        and "reset to 48" in spec_plan.limits.max_parallel_source
    )
    assert plain.limits.max_parallel == 0
    told = plan_capacity(spec, "h200", spec_tokens=3, accept_length=2.5, max_parallel=64, **kw)  # type: ignore[arg-type]
    assert told.limits.max_parallel == 64
    assert spec_plan.estimate.spec_step_s == pytest.approx(
        spec_plan.estimate.decode_step_s * 2.5, rel=1e-9
    )


def test_capacity_refuses_speculative_decoding_with_pipeline_stages(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["capacity", "llama-3.1-70b", "--users", "4", "--spec-tokens", "3",
            "--accept-length", "2"]  # fmt: skip
    assert run([*argv, "--pp", "2"]) == 2
    assert "pipeline stages is not modelled" in capsys.readouterr().err
    assert run([*argv, "--engine", "ollama"]) == 2
    assert "modelled for vLLM, SGLang and TensorRT-LLM" in capsys.readouterr().err
    # one request of the 70B needs 16 stages of 24 GB cards at --tp 1: the sizing says so
    assert run([*argv, "--gpu", "rtx-4090", "--tp", "1", "--engine", "vllm"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "16 pipeline stages" in err and "raise --tp" in err


def test_an_mtp_draft_for_a_model_without_one_is_said(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["plan", "llama-3.1-8b", "-w", "inference", "--gpus", "1", "--spec-tokens", "3",
            "--accept-length", "2", "--draft", "mtp", "--json"]  # fmt: skip
    assert run(argv) == 0
    notes = " ".join(json.loads(capsys.readouterr().out)["assumptions"])
    assert "not released with a next-token (MTP) layer" in notes


def test_a_tree_of_drafts_verifies_its_positions_and_drafts_from_its_branches() -> None:
    """SGLang's EAGLE with top-k 4 and 8 positions verified (its defaults with 5 steps): the
    model's pass runs over 8 positions a sequence, not 6, and each draft pass after the first
    over 4 x the batch; a top-1 tree is the chain."""
    kw = {"spec_tokens": 5, "accept_length": 3.5, "draft": "eagle3"}
    chain = _plan("llama-3.1-8b", "h100-sxm", 1, "sglang", batch=32, **kw)
    same = _plan("llama-3.1-8b", "h100-sxm", 1, "sglang", batch=32, draft_topk=1,
                 verify_tokens=6, **kw)  # fmt: skip
    assert same == chain and chain.verify_tokens == 6 and chain.draft_topk == 1
    tree = _plan("llama-3.1-8b", "h100-sxm", 1, "sglang", batch=32, draft_topk=4,
                 verify_tokens=8, **kw)  # fmt: skip
    assert (tree.draft_topk, tree.verify_tokens) == (4, 8)
    spec, g = find_model("llama-3.1-8b"), find_gpu("h100-sxm")
    fabric = Fabric(find_link(g.intra_link), None, 8, 1)
    args = {"tp": 1, "prompt_tokens": 1000, "output_tokens": 200, "ep": 1, "dp": 1,
            "precision": "bf16", "kv_precision": "bf16", "weight_bytes_per_param": 2.0}  # fmt: skip
    engine = find_engine("sglang")
    first = draft_pass(spec, "eagle3", g, fabric, engine, batch=32, **args)  # type: ignore[arg-type]
    wide = draft_pass(spec, "eagle3", g, fabric, engine, batch=128, **args)  # type: ignore[arg-type]
    assert tree.draft_s == pytest.approx(first.time_s + 4 * wide.time_s)
    assert chain.draft_s == pytest.approx(5 * first.time_s)
    # verifying 8 positions of 32 requests is 256 tokens: more compute than 192
    assert tree.spec_step_s - tree.draft_s > chain.spec_step_s - chain.draft_s


def test_plan_and_capacity_plan_a_tree(capsys: pytest.CaptureFixture[str]) -> None:
    tree = ["--spec-tokens", "5", "--accept-length", "3.5", "--draft-topk", "4",
            "--draft-tokens", "8"]  # fmt: skip
    doc = _json_plan(capsys, *tree)
    spec = doc["inference"]["speculative"]  # type: ignore[index]
    assert (spec["draft_topk"], spec["verify_tokens"]) == (4, 8)
    assert run(["capacity", "llama-3.1-8b", "--users", "20", "--gpu", "h100-sxm", "--engine",
                "sglang", "--json", *tree]) == 0  # fmt: skip
    replica = json.loads(capsys.readouterr().out)["replica"]
    assert (replica["draft_topk"], replica["verify_tokens"]) == (4, 8)
