"""The command line: every command with --json, the text output, and the error paths."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES
from fabriclens.cli.app import run


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> object:
    assert run([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _plan_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, object]:
    """A plan's JSON; its exit status is its verdict (1 when it does not fit in memory)."""
    status = run([*argv, "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert isinstance(doc, dict)
    assert status == (0 if doc["fits"] else 1)
    assert doc["fits"] <= doc["memory"]["fits"]  # type: ignore[index,operator]
    return doc


def test_plan_json_has_the_documented_keys(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json(capsys, "plan", "llama-3.1-8b", "--gpus", "16", "--network", "100g-roce")
    assert isinstance(doc, dict)
    assert set(doc["memory"]) >= {"per_gpu_bytes", "total_per_gpu_bytes", "fits", "min_gpus"}
    assert set(doc["step"]) >= {"time_s", "compute_s", "comm_exposed_s", "bubble_s"}
    assert set(doc["throughput"]) >= {
        "tokens_per_s",
        "tflops_per_gpu",
        "hw_tflops_per_gpu",
        "mfu",
        "hfu",
    }
    assert doc["bottleneck"] in {
        "compute",
        "network",
        "intra-node link",
        "pipeline bubble",
        "memory capacity",
    }
    assert doc["assumptions"] and all(isinstance(a, str) for a in doc["assumptions"])
    for c in doc["comm"]:
        assert set(c) >= {"group", "op", "bytes_per_step", "link", "time_s", "exposed_s"}
    assert doc["memory"]["total_per_gpu_bytes"] == pytest.approx(
        sum(doc["memory"]["per_gpu_bytes"].values()), abs=8
    )


def test_tokens_beyond_the_model_s_context_window_are_a_warning(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Llama-3.1's context window is 131,072 positions (its config.json): a longer prompt or
    training sequence is still estimated (long-context variants exist) but said so, in the text
    and in JSON `warnings`; within the window nothing is said."""
    inside = _json(capsys, "plan", "llama-3.1-8b", "-w", "inference", "--gpus", "1",
                   "--prompt-tokens", "100000")  # fmt: skip
    assert inside["warnings"] == []
    beyond = _json(capsys, "plan", "llama-3.1-8b", "-w", "inference", "--gpus", "1",
                   "--prompt-tokens", "200000")  # fmt: skip
    (w,) = beyond["warnings"]
    assert "200,256 tokens" in w and "context window of 131,072" in w
    train = _json(capsys, "plan", "llama-3.1-8b", "--gpus", "8", "--seq-len", "262144")
    assert any("262,144" in w for w in train["warnings"])
    assert run(["plan", "llama-3.1-8b", "--gpus", "8", "--seq-len", "262144"]) == 0
    assert "warning: the sequence length of 262,144 tokens" in capsys.readouterr().out
    cap = _json(capsys, "capacity", "llama-3.1-8b", "--gpu", "h100-sxm", "--prompt-tokens",
                "200000", "--output-tokens", "100", "--users", "1")  # fmt: skip
    assert "context window of 131,072" in cap["advice"][0]


def test_plan_with_several_networks_is_a_list(capsys: pytest.CaptureFixture[str]) -> None:
    docs = _json(
        capsys,
        "plan",
        "llama-3.1-8b",
        "--gpus",
        "16",
        "--network",
        "1gbe,100g-roce",
        "--network",
        "ndr-ib",
    )
    assert isinstance(docs, list)
    assert [d["network"] for d in docs] == ["1gbe", "100g-roce", "ndr-ib"]
    assert docs[0]["step"]["time_s"] >= docs[2]["step"]["time_s"]


def test_plan_explicit_layout_is_respected(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _plan_json(capsys, "plan", "llama-3.1-70b", "--gpus", "32", "--tp", "8", "--pp", "2", "--dp", "2",
                     "--zero", "1", "--recompute", "selective", "--micro-batch", "2", "--global-batch", "64",
                     "--seq-len", "8192", "--network", "ndr-ib", "--nics-per-node", "4")  # fmt: skip
    lay = doc["layout"]
    assert isinstance(lay, dict)
    assert (lay["tp"], lay["pp"], lay["dp"], lay["zero"], lay["recompute"]) == (
        8,
        2,
        2,
        1,
        "selective",
    )
    assert (lay["micro_batch"], lay["global_batch"], lay["seq_len"]) == (2, 64, 8192)
    assert doc["nics_per_node"] == 4


def test_plan_inference_keys(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json(capsys, "plan", "llama-3.1-70b", "-w", "inference", "--gpus", "4", "--batch", "8",
                "--prompt-tokens", "2000", "--output-tokens", "300")  # fmt: skip
    assert isinstance(doc, dict)
    inf = doc["inference"]
    assert set(inf) >= {
        "kv_cache_bytes_per_token",
        "ttft_s",
        "decode_tokens_per_s",
        "batch_tokens_per_s",
    }
    assert inf["kv_cache_bytes_per_token"] == 327680
    assert inf["batch_tokens_per_s"] == pytest.approx(8 * inf["decode_tokens_per_s"], rel=1e-4)
    # a serving benchmark's TPOT at concurrency 8: the step plus newcomers' 2,000-token prompts
    assert inf["tpot_under_load_s"] > inf["decode_step_s"]
    one = _json(capsys, "plan", "llama-3.1-70b", "-w", "inference", "--gpus", "4")
    assert isinstance(one, dict)
    assert one["inference"]["tpot_under_load_s"] == one["inference"]["decode_step_s"]


def test_plan_inference_on_a_mac_runs_ollama(capsys: pytest.CaptureFixture[str]) -> None:
    """vLLM does not run on Apple GPUs: without --engine a Mac's plan runs Ollama."""
    doc = _json(capsys, "plan", "llama3.1:8b", "-w", "inference", "--gpu", "m2-max-64gb",
                "--gpus", "1")  # fmt: skip
    assert isinstance(doc, dict)
    assert doc["layout"]["engine"] == "ollama"
    assert doc["gpu"] == "m2-max-64gb"


def test_an_inference_option_makes_an_inference_plan(capsys: pytest.CaptureFixture[str]) -> None:
    """`plan llama3.1:8b --engine ollama` is a newcomer's question about serving: it was
    answered with a pretraining plan on eight GPUs. Without -w an inference option implies
    -w inference, and the plan says so; a LoRA rank implies -w lora."""
    doc = _json(capsys, "plan", "llama3.1:8b", "--gpu", "rtx-4090", "--engine", "ollama")
    assert isinstance(doc, dict)
    assert doc["workload"] == "inference" and doc["layout"]["engine"] == "ollama"
    assert any("implied by --engine" in a for a in doc["assumptions"])
    lora = _plan_json(capsys, "plan", "llama-3.1-8b", "--lora-rank", "8")
    assert lora["workload"] == "lora"
    plain = _plan_json(capsys, "plan", "llama-3.1-8b")
    assert plain["workload"] == "pretrain"


def test_a_serving_plan_refuses_what_it_would_ignore(capsys: pytest.CaptureFixture[str]) -> None:
    """A serving plan is one replica split by tensor, pipeline and expert parallelism and
    data-parallel attention: --cp 2 was silently dropped. Now one line with the fix, exit 2."""
    argv = ["plan", "minimax-m2.5", "--gpus", "8", "--gpu", "h100-sxm", "--engine", "sglang"]
    assert run([*argv, "--cp", "2"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--cp 2 is not modelled for serving" in err
    assert run([*argv, "--cp", "1"]) == 0  # the degree of one replica is accepted
    capsys.readouterr()


def test_data_parallel_attention_keeps_each_groups_own_cache(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """SGLang's `--tp 8 --dp 8 --enable-dp-attention` was refused. Each of the 8 attention groups
    (one rank here) serves its own requests: a GPU holds DeepSeek-V3's latent cache of 32 of the
    256 requests, not all of them as under tensor parallelism (MLA's cache is not split by
    heads), and the whole attention (11.4B weights, FP8) where tensor parallelism holds an
    eighth; the MLPs gather every group's tokens and scatter them back, once each per layer, in
    place of the two all-reduces. At batch 1 the step reads the whole attention and is slower."""
    argv = ["plan", "deepseek-v3", "--gpus", "8", "--gpu", "h200", "--engine", "sglang",
            "--prompt-tokens", "1000", "--output-tokens", "1000"]  # fmt: skip
    tp, dp = (_plan_json(capsys, *argv, "--batch", "256", *extra) for extra in ([], ["--dp", "8"]))
    assert dp["layout"]["dp"] == 8 and tp["layout"]["dp"] == 1
    kv = [d["memory"]["per_gpu_bytes"]["kv_cache"] for d in (tp, dp)]
    assert kv[1] == pytest.approx(kv[0] / 8, rel=1e-9)
    weights = [d["memory"]["per_gpu_bytes"]["weights"] for d in (tp, dp)]
    attention = 61 * 187_107_328  # DeepSeek-V3's MLA weights per layer, 1 byte each in FP8
    assert weights[1] - weights[0] == pytest.approx(attention * 7 / 8, rel=0.01)
    assert [(c["op"], c["count_per_token"]) for c in dp["comm"]] == [
        ("all_gather", 61), ("reduce_scatter", 61)]  # fmt: skip
    assert any("data-parallel attention: 8 attention groups" in a for a in dp["assumptions"])
    one = [_plan_json(capsys, *argv, "--batch", "1", *extra) for extra in ([], ["--dp", "8"])]
    assert one[1]["step"]["time_s"] > one[0]["step"]["time_s"]
    assert run([*argv, "--dp", "8"]) == 0
    assert "tp 8 · pp 1 · dp attention 8 · batch 1" in capsys.readouterr().out
    assert run([*argv, "--dp", "3"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--dp 3 must divide --tp 8" in err


def test_a_serving_plan_splits_the_experts_with_ep(capsys: pytest.CaptureFixture[str]) -> None:
    """SGLang's `--tp 8 --ep 8` (each expert whole on one rank) was once planned as plain tensor
    parallelism without a word. Now the plan names the layout and prices what differs: the same
    weights per GPU and the same all-reduces, but at batch 1 the step waits for the rank whose
    experts the token picks most (2.5 of DeepSeek-V3's 8 on the busiest of 8 ranks, 1 on
    average), so it reads more than the tensor-parallel plan; at batch 256 every rank reads
    nearly all of its experts and the two read the same."""
    argv = ["plan", "deepseek-v3", "--gpus", "8", "--gpu", "h200", "--engine", "sglang",
            "--prompt-tokens", "1000", "--output-tokens", "1000"]  # fmt: skip
    docs = {(ep, b): _plan_json(capsys, *argv, "--ep", str(ep), "--batch", str(b))
            for ep in (1, 8) for b in (1, 256)}  # fmt: skip
    assert docs[8, 1]["layout"]["ep"] == 8 and docs[1, 1]["layout"]["ep"] == 1
    assert any("expert parallel 8" in a and "2.5 distinct experts on the busiest rank" in a
               for a in docs[8, 1]["assumptions"])  # fmt: skip
    tp, ep = docs[1, 1], docs[8, 1]
    assert ep["memory"]["total_per_gpu_bytes"] == tp["memory"]["total_per_gpu_bytes"]
    assert ep["comm"] == tp["comm"]
    assert (
        ep["inference"]["weights_read_per_step_bytes"]
        > tp["inference"]["weights_read_per_step_bytes"]
    )
    assert ep["step"]["time_s"] > tp["step"]["time_s"]
    big_tp, big_ep = docs[1, 256]["inference"], docs[8, 256]["inference"]
    assert big_ep["weights_read_per_step_bytes"] == pytest.approx(
        big_tp["weights_read_per_step_bytes"], rel=0.02
    )
    assert run([*argv, "--ep", "8", "--batch", "1"]) == 0  # the table names the layout
    assert "tp 8 · pp 1 · ep 8 · batch 1" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("model", "ep", "message"),
    [("llama-3.1-8b", "2", "has no experts to split"),
     ("deepseek-v3", "3", "--ep 3 must divide --tp 8 and the 256 experts")],
)  # fmt: skip
def test_serving_ep_that_cannot_split_is_one_line(
    model: str, ep: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["plan", model, "--gpus", "8", "--gpu", "h200", "--engine", "vllm", "--ep", ep]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err


def test_an_ollama_tag_makes_an_inference_plan_with_ollama(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`plan llama3.1:8b --gpu rtx-4090` names what Ollama serves: without -w it is an inference
    plan with Ollama on the fewest GPUs that hold it (it was pretraining on eight cards), and
    says why; a training option or -w keeps training, a catalog name keeps pretraining."""
    doc = _json(capsys, "plan", "llama3.1:8b", "--gpu", "rtx-4090")
    assert isinstance(doc, dict) and doc["workload"] == "inference" and doc["gpus"] == 1
    assert doc["layout"]["engine"] == "ollama"
    assert any("named by its Ollama tag (set -w" in a for a in doc["assumptions"])
    assert _plan_json(capsys, "plan", "llama3.1:8b", "--zero", "3")["workload"] == "pretrain"
    assert _plan_json(capsys, "plan", "llama3.1:8b", "-w", "lora")["workload"] == "lora"
    assert _plan_json(capsys, "plan", "llama-3.1-8b", "--gpu", "rtx-4090")["workload"] == "pretrain"


def test_inference_without_gpus_takes_the_fewest_that_hold_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """--gpus left out: an 8B model under Ollama on one RTX 4090 is served by that one card
    (it was spread over eight, tensor parallel, because the flag defaulted to 8); a 70B in BF16
    needs two H100 (141 GB of weights). A given --gpus and a training plan keep their count."""
    one = _json(capsys, "plan", "llama-3.1-8b", "-w", "inference", "--gpu", "rtx-4090",
                "--engine", "ollama")  # fmt: skip
    assert isinstance(one, dict) and one["gpus"] == 1
    assert any(a.startswith("GPUs: 1, the fewest") for a in one["assumptions"])
    assert not any("tensor parallel" in a for a in one["assumptions"])  # nothing to reduce
    two = _json(capsys, "plan", "llama-3.1-70b", "-w", "inference", "--gpu", "h100-sxm")
    assert isinstance(two, dict) and two["gpus"] == 2 and two["memory"]["fits"]
    given = _json(capsys, "plan", "llama-3.1-8b", "-w", "inference", "--gpus", "8")
    assert isinstance(given, dict) and given["gpus"] == 8
    train = _json(capsys, "plan", "llama-3.1-8b")
    assert isinstance(train, dict) and train["gpus"] == 8


def test_ollama_splits_layers_over_gpus_in_plan_and_capacity(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """llama.cpp's default --split-mode is layer (common/arg.cpp): a 70B Q4_K_M on two RTX 4090
    runs as two stages, not tensor parallel over PCIe, in plan and in capacity alike; --tp still
    pins tensor parallelism."""
    plan = _json(capsys, "plan", "llama-3.1-70b", "-w", "inference", "--gpu", "rtx-4090",
                 "--engine", "ollama")  # fmt: skip
    assert isinstance(plan, dict) and plan["gpus"] == 2
    assert (plan["layout"]["tp"], plan["layout"]["pp"]) == (1, 2)
    cap = _json(capsys, "capacity", "llama-3.1-70b", "--users", "1", "--gpu", "rtx-4090",
                "--engine", "ollama")  # fmt: skip
    assert isinstance(cap, dict)
    assert (cap["replica"]["tp"], cap["replica"]["pp"]) == (1, 2)
    step = plan["inference"]["decode_step_s"]
    assert cap["replica"]["decode_step_s"] == pytest.approx(step, rel=0.01)
    pinned = _json(capsys, "plan", "llama-3.1-70b", "-w", "inference", "--gpu", "rtx-4090",
                   "--engine", "ollama", "--gpus", "2", "--tp", "2")  # fmt: skip
    assert isinstance(pinned, dict) and (pinned["layout"]["tp"], pinned["layout"]["pp"]) == (2, 1)


def test_ollama_serves_a_model_that_fits_on_one_gpu_from_that_gpu(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Ollama's FAQ ('How does Ollama load models on multiple GPUs?'): a model that fits
    entirely on one GPU is loaded onto that GPU; only one that does not is spread over all.
    `plan llama3 --gpus 8` had split the 8B over eight H100s as eight pipeline stages; now it
    is one GPU of the eight, said in the header and in JSON. A 70B that needs more than one
    card still spreads; llama.cpp's own server (--engine llama.cpp) and --pp keep the split."""
    one = _plan_json(capsys, "plan", "llama3", "--gpus", "8")
    assert (one["gpus"], one["gpus_given"]) == (1, 8)
    assert (one["layout"]["tp"], one["layout"]["pp"]) == (1, 1)  # type: ignore[index]
    assert any(a.startswith("GPUs: 1 of the 8: ") for a in one["assumptions"])  # type: ignore[attr-defined]
    assert run(["plan", "llama3", "--gpus", "8"]) == 0
    head = " ".join(capsys.readouterr().out.split())
    assert "1 x h100-sxm (of the 8 given: ollama loads a model that fits on one GPU" in head
    big = _plan_json(capsys, "plan", "llama3.1:70b", "--gpu", "rtx-4090", "--gpus", "4")
    assert (big["gpus"], big["gpus_given"], big["layout"]["pp"]) == (4, 4, 4)  # type: ignore[index]
    cpp = _plan_json(capsys, "plan", "llama-3.1-8b", "-w", "inference", "--engine", "llama.cpp",
                     "--gpus", "2")  # fmt: skip
    assert (cpp["gpus"], cpp["layout"]["pp"]) == (2, 2)  # type: ignore[index]
    pinned = _plan_json(capsys, "plan", "llama3", "--gpus", "8", "--pp", "8")
    assert (pinned["gpus"], pinned["layout"]["pp"]) == (8, 8)  # type: ignore[index]


def test_ollama_runs_a_model_too_large_for_the_gpu_from_host_memory(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """llama.cpp keeps the layers beyond -ngl in host memory (common/arg.cpp); a 70B Q4_K_M on one
    12 GB card does not fit in GPU memory (the verdict, exit 1) and the plan says what Ollama
    makes of it: the layers it places on the GPU, the rest read from host memory, whose rate
    (--host-memory) then sets the speed."""
    argv = ["plan", "llama-3.1-70b", "--engine", "ollama", "--gpu", "rtx-3060", "--gpus", "1"]
    doc = _plan_json(capsys, *argv)
    off = doc["offload"]
    assert isinstance(off, dict) and not doc["memory"]["fits"]  # type: ignore[index]
    assert 0 < off["gpu_layers"] < off["layers"] == 80 and not off["output_on_gpu"]
    assert off["reported"] == f"{off['gpu_layers']}/81" and off["host"] == "desktop-ddr5"
    from fabriclens.catalog import find_host

    share = f"x {find_host('desktop-ddr5').efficiency:.2f}"  # the calibrated share, stated
    assert any(a.startswith("offload (") and share in a for a in doc["assumptions"])  # type: ignore[attr-defined]
    slow = off["decode_tokens_per_s"]
    assert slow < doc["inference"]["decode_tokens_per_s"] / 2  # type: ignore[index]
    fast = _plan_json(capsys, *argv, "--host-memory", "200GB/s")["offload"]
    assert isinstance(fast, dict) and fast["host_bw_GBps"] == pytest.approx(200)
    assert fast["decode_tokens_per_s"] > 2 * slow
    assert run(argv) == 1
    out = capsys.readouterr().out
    assert "With host memory" in out and f"offloaded {off['reported']} layers" in out
    # a model that fits keeps no offload; the rate is then not used, and the plan says so
    fits = _plan_json(capsys, "plan", "llama-3.1-8b", "--engine", "ollama", "--gpu", "rtx-3060",
                      "--gpus", "1", "--host-memory", "ddr4")  # fmt: skip
    assert "offload" not in fits
    assert any("--host-memory is not used" in a for a in fits["assumptions"])  # type: ignore[attr-defined]


def test_gpu_layers_sets_the_split_as_ngl_does(capsys: pytest.CaptureFixture[str]) -> None:
    """--gpu-layers is llama.cpp's -ngl (Ollama's num_gpu): a model that fits, split on purpose,
    runs at the split's speed and still fits (exit 0); more layers than the GPU holds is the
    engine's out-of-memory, with the most that fit; above the layer count, all on the GPU."""
    argv = ["plan", "llama-3.1-8b", "--engine", "llama.cpp", "--gpu", "rtx-3060", "--gpus", "1"]
    whole = _plan_json(capsys, *argv)
    half = _plan_json(capsys, *argv, "--gpu-layers", "16")
    off = half["offload"]
    assert "offload" not in whole and half["memory"]["fits"]  # type: ignore[index]
    assert isinstance(off, dict) and off["gpu_layers_requested"] == 16 and off["fits"]
    assert off["reported"] == "16/33" and off["max_gpu_layers"] == 32
    assert off["decode_tokens_per_s"] < whole["inference"]["decode_tokens_per_s"] / 2  # type: ignore[index]
    assert run([*argv, "--gpu-layers", "16"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "With --gpu-layers 16" in out and "the times below: every layer on the GPU" in out
    big = ["plan", "llama-3.1-70b", "--engine", "ollama", "--gpu", "rtx-3060", "--gpus", "1"]
    auto = _plan_json(capsys, *big)["offload"]
    over = _plan_json(capsys, *big, "--gpu-layers", "60")["offload"]
    assert isinstance(auto, dict) and isinstance(over, dict)
    assert not over["fits"] and over["max_gpu_layers"] == auto["gpu_layers"] < 60
    assert run([*big, "--gpu-layers", "60"]) == 1
    out = " ".join(capsys.readouterr().out.split())  # as wrapped to the terminal's width
    assert f"At most {auto['gpu_layers']} layers fit (--gpu-layers {auto['gpu_layers']})" in out
    every = _plan_json(capsys, *argv, "--gpu-layers", "999", "--host-memory", "ddr4")
    assert "offload" not in every
    assert any("every layer is on the GPUs" in a for a in every["assumptions"])  # type: ignore[attr-defined]


def test_host_ram_checks_the_layers_left_in_host_memory(capsys: pytest.CaptureFixture[str]) -> None:
    """Ollama refuses a split whose host part exceeds free RAM + swap (llm/server.go: "model
    requires more system memory (X) than is available (Y)"); --host-ram checks it. A split the
    GPU holds but the host does not is no plan that runs: exit 1."""
    argv = ["plan", "llama-3.1-8b", "--engine", "ollama", "--gpu", "rtx-3060", "--gpus", "1",
            "--gpu-layers", "10"]  # fmt: skip
    free = _plan_json(capsys, *argv)["offload"]
    assert isinstance(free, dict) and free["host_ram_bytes"] is None and free["host_fits"] is None
    need = free["host_bytes"]
    roomy = _plan_json(capsys, *argv, "--host-ram", f"{need + 10**9}B")["offload"]
    tight = _plan_json(capsys, *argv, "--host-ram", f"{need - 10**6}B")["offload"]
    assert isinstance(roomy, dict) and isinstance(tight, dict)
    assert roomy["host_fits"] is True and tight["host_fits"] is False
    assert run([*argv, "--host-ram", f"{need + 10**9}B"]) == 0
    capsys.readouterr()
    assert run([*argv, "--host-ram", f"{need - 10**6}B"]) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert "DOES NOT FIT in host memory" in out and "model requires more system memory" in out
    assert "up to --gpu-layers 32" in out  # the split asked for leaves room on the GPU
    # no layer in host memory: the size is not used, and the plan says so
    whole = _plan_json(capsys, "plan", "llama-3.1-8b", "--engine", "ollama", "--gpu", "rtx-3060",
                       "--gpus", "1", "--host-ram", "1GB")  # fmt: skip
    assert "offload" not in whole
    assert any("--host-ram is not used" in a for a in whole["assumptions"])  # type: ignore[attr-defined]


@pytest.mark.parametrize("workload", ["pretrain", "full-finetune", "lora", "qlora"])
def test_every_training_workload_runs(capsys: pytest.CaptureFixture[str], workload: str) -> None:
    doc = _json(capsys, "plan", "qwen2.5-7b", "-w", workload, "--gpus", "8")
    assert isinstance(doc, dict) and doc["step"]["time_s"] > 0


def test_plan_from_config_json_and_from_flags(capsys: pytest.CaptureFixture[str]) -> None:
    by_file = _plan_json(
        capsys, "plan", str(FIXTURES / "hf" / "mixtral-8x7b.json"), "--gpus", "8", "--ep", "2"
    )
    by_flags = _plan_json(capsys, "plan", "--layers", "32", "--hidden", "4096", "--heads", "32", "--kv-heads", "8",
                     "--ffn", "14336", "--vocab", "32000", "--experts", "8", "--experts-per-token", "2",
                     "--gpus", "8", "--ep", "2")  # fmt: skip
    assert isinstance(by_file, dict) and isinstance(by_flags, dict)
    assert by_file["model"]["params"] == by_flags["model"]["params"]
    assert any(c["op"] == "all_to_all" for c in by_file["comm"])


def test_a_gpt_shape_by_flags_has_its_learned_positions(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """--positions learned and --norm layer describe a GPT-style model by flags (GPT-2 small's
    shape here): its learned table holds --seq-len positions, seq-len x hidden parameters the same
    shape with rotary positions lacks. The flags describe a custom model only: with a named model
    they are refused."""
    flags = ["plan", "--layers", "12", "--hidden", "768", "--heads", "12", "--vocab", "50257",
             "--mlp", "gelu", "--norm", "layer", "--positions", "learned", "--seq-len", "1024",
             "--gpus", "1"]  # fmt: skip
    by_flags = _plan_json(capsys, *flags)
    rotary = _plan_json(capsys, *flags[:-6], "--seq-len", "1024", "--gpus", "1")
    assert isinstance(by_flags, dict) and isinstance(rotary, dict)
    assert by_flags["model"]["params"] - rotary["model"]["params"] == 1024 * 768
    assert run(["plan", "gpt2", "--positions", "learned"]) == 2
    assert "--positions describes a custom model" in capsys.readouterr().err


def test_plan_serves_a_hybrid_from_its_config_json(capsys: pytest.CaptureFixture[str]) -> None:
    """Qwen3-Next's config.json: the KV cache in its 12 full-attention layers only (2 KV heads
    of 256, 2 bytes: 24,576 bytes a token), the recurrent state named among the assumptions."""
    plan = _plan_json(capsys, "plan", str(FIXTURES / "hf" / "qwen3-next-80b-a3b-instruct.json"),
                      "--gpus", "4", "--engine", "vllm", "--batch", "8")  # fmt: skip
    assert isinstance(plan, dict)
    assert plan["inference"]["kv_cache_bytes_per_token"] == 12 * 2 * 2 * 256 * 2
    # vLLM keeps the state at the model's 16 bits: 36 layers x (32 x 128 x 128 + 3 x 8,192) x 2
    assert plan["inference"]["state_bytes_per_sequence"] == 36 * (32 * 128 * 128 + 3 * 8192) * 2
    assert any("recurrent state" in a for a in plan["assumptions"])


def test_plan_text_shows_ledgers(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["plan", "llama-3.1-8b", "--gpus", "16", "--network", "100g-roce", "--explain"]) == 0
    out = capsys.readouterr().out
    for needle in (
        "Memory per GPU",
        "Communication per step",
        "Step",
        "MFU",
        "Bottleneck",
        "Assumptions",
    ):
        assert needle in out


def test_plan_text_names_the_node_link_not_its_kind(capsys: pytest.CaptureFixture[str]) -> None:
    """The ledger files an MI300X node's Infinity Fabric under the kind "nvlink"; the tables show
    the node's own link, for training and for serving alike."""
    assert run(["plan", "llama-3.1-70b", "--gpu", "mi300x", "--gpus", "16", "--tp", "8"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("  tp ")]
    assert rows and all("infinity-fabric-mi300x" in r and "nvlink" not in r for r in rows)
    assert run(["plan", "llama-3.1-70b", "-w", "inference", "--gpu", "mi300x", "--gpus", "8"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("  tp ")]
    assert rows and all("infinity-fabric-mi300x" in r for r in rows)
    assert run(["plan", "llama-3.1-70b", "--gpus", "16", "--tp", "8"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("  ")]
    assert any("nvlink4-nvswitch" in r for r in rows) and any("network" in r for r in rows)


def test_plan_header_names_no_link_for_one_gpu_a_node(capsys: pytest.CaptureFixture[str]) -> None:
    """One GPU a node has no intra-node link: the header says so by naming none, not "over none"."""
    assert run(["plan", "llama-3.1-8b", "-w", "inference", "--gpu", "rtx-4090", "--gpus", "1"]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert "1 node x 1 GPU" in head and " over " not in head
    assert run(["plan", "llama-3.1-8b", "--gpus", "8"]) == 0
    assert "1 node x 8 GPUs over nvlink4-nvswitch" in capsys.readouterr().out.splitlines()[0]


def test_a_one_gpu_machine_trains_on_its_one_gpu_by_default(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Without --gpus a training plan on a Mac or a DGX Spark is that one machine, not eight of
    them over a default network; search assumes the same job; an 8-GPU part keeps one node."""
    for gpu in ("m4-max-128gb", "dgx-spark"):
        doc = _json(capsys, "plan", "llama-3.1-8b", "-w", "lora", "--gpu", gpu)
        assert isinstance(doc, dict) and doc["gpus"] == 1 and doc["network"] == "none"
        found = _json(capsys, "search", "llama-3.1-8b", "-w", "lora", "--gpu", gpu)
        assert isinstance(found, dict)
        tops = [r for net in found["networks"] for r in net["top"]]
        assert tops and all(r["tp"] * r["pp"] * r["dp"] == 1 for r in tops)
    doc = _json(capsys, "plan", "llama-3.1-8b", "-w", "lora")
    assert isinstance(doc, dict) and doc["gpus"] == 8


def test_compare_networks_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["plan", "llama-3.1-8b", "--gpus", "16", "--compare-networks"]) == 0
    out = capsys.readouterr().out
    assert "Network comparison" in out and "1gbe" in out and "ndr-ib" in out


def test_collective_json_and_text(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json(capsys, "collective", "all_reduce", "8GiB", "--ranks", "8", "--gpu", "h200")
    assert isinstance(doc, dict)
    assert set(doc) >= {"time_s", "algbw_GBps", "busbw_GBps", "bottleneck"}
    assert doc["busbw_GBps"] == pytest.approx(doc["algbw_GBps"] * 2 * 7 / 8, rel=1e-3)
    assert run(["collective", "allgather", "1GB", "--ranks", "32", "--network", "hdr-ib"]) == 0
    assert "bottleneck" in capsys.readouterr().out


def test_collective_names_the_protocol_it_prices(capsys: pytest.CaptureFixture[str]) -> None:
    """NCCL's tuner picks a protocol per size from its own latencies and bandwidth shares
    (src/graph/tuning.cc): inside a node a 1 MB all_reduce rides LL (latency-bound), a 1 GB one
    across two HDR nodes Simple; a forced 32 GiB tree on B200 runs Simple under perChMaxTreeBws;
    a send_recv is point-to-point (no protocol named)."""
    small = _json(capsys, "collective", "all_reduce", "1MB", "--ranks", "8", "--gpu", "a100")
    assert isinstance(small, dict) and (small["algorithm"], small["protocol"]) == ("ring", "LL")
    large = _json(capsys, "collective", "all_reduce", "1GB", "--ranks", "16", "--network",
                  "hdr-ib", "--gpu", "a100")  # fmt: skip
    assert isinstance(large, dict) and (large["algorithm"], large["protocol"]) == ("ring", "Simple")
    tree = _json(capsys, "collective", "all_reduce", "32GiB", "--ranks", "32", "--gpu", "b200",
                 "--network", "ndr-ib", "--algo", "tree")  # fmt: skip
    assert isinstance(tree, dict) and tree["protocol"] == "Simple"
    p2p = _json(capsys, "collective", "send_recv", "1GB", "--ranks", "2", "--gpus-per-node", "1",
                "--network", "ndr-ib")  # fmt: skip
    assert isinstance(p2p, dict) and p2p["protocol"] is None
    assert run(["collective", "all_reduce", "1MB", "--ranks", "8", "--gpu", "a100"]) == 0
    assert "algorithm ring (LL)" in capsys.readouterr().out


def test_a_forced_tree_names_nccls_per_channel_cap(capsys: pytest.CaptureFixture[str]) -> None:
    """B200 nodes with 8 x 400G: a tree from three nodes runs at 8 channels x 24 GB/s (NCCL's
    perChMaxTreeBws; published 191.7-195.6, reference cm178, cm233-cm238), and says so."""
    doc = _json(capsys, "collective", "all_reduce", "32GiB", "--ranks", "32", "--gpu", "b200",
                "--network", "ndr-ib", "--algo", "tree")  # fmt: skip
    assert isinstance(doc, dict)
    assert doc["algorithm"] == "tree" and doc["bottleneck"] == "tree channels"
    assert doc["busbw_GBps"] == pytest.approx(192.0, rel=0.01)
    assert any("perChMaxTreeBws" in line for line in doc["assumptions"])


def test_commands_read_op_spellings_alike(capsys: pytest.CaptureFixture[str]) -> None:
    """`collective`, `simulate` and `bench import --op` take the op as NCCL and nccl-tests spell
    it (one normaliser): the same answer as the model's name; an unknown op is one line, exit 2."""
    for cmd in (["collective"], ["simulate"]):
        for spelled in ("AllGather", "all-gather"):
            assert run([*cmd, spelled, "1GB", "--ranks", "16", "--json"]) == 0
            got = json.loads(capsys.readouterr().out)
            assert run([*cmd, "all_gather", "1GB", "--ranks", "16", "--json"]) == 0
            assert json.loads(capsys.readouterr().out) == got
        assert run([*cmd, "allsum", "1GB", "--ranks", "16"]) == 2
        assert "allsum" in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["gpus", "links", "networks", "models", "engines", "hosts"])
def test_catalog_lists(capsys: pytest.CaptureFixture[str], kind: str) -> None:
    entries = _json(capsys, "catalog", kind)
    assert isinstance(entries, list) and entries and all(e["source"] for e in entries)
    assert run(["catalog", kind]) == 0


def test_rtx_4090_has_no_nvlink_note(capsys: pytest.CaptureFixture[str]) -> None:
    gpus = _json(capsys, "catalog", "gpus")
    assert isinstance(gpus, list)
    rtx = next(g for g in gpus if g["name"] == "rtx-4090")
    assert "no NVLink" in rtx["notes"] and rtx["intra_link"].endswith("-host")


BAD = [
    (["plan", "llama-9b"], "unknown model"),
    (["plan", "llama-3.1-70b", "--gpu", "h900"], "unknown GPU"),
    (["plan", "llama-3.1-70b", "--network", "5g"], "unknown network"),
    (["plan", "llama-3.1-70b", "--network", "fastbit"], "unknown network"),
    (["plan", "llama-3.1-70b", "--tp", "3"], "does not divide the 64 attention heads"),
    (
        ["plan", "llama-3.1-70b", "--gpus", "32", "--tp", "8", "--pp", "3"],
        "not divisible by tp x pp",
    ),
    (["plan", "llama-3.1-70b", "--gpus", "30"], "whole nodes"),
    (["plan", "llama-3.1-70b", "--seq-len", "0"], "must be at least 1"),
    (["plan", "llama-3.1-70b", "--seq-len", "-5"], "-5 is negative"),
    (["plan", "llama-3.1-70b", "--gpus", "abc"], "Invalid value"),
    (["plan", "llama-3.1-70b", "--zero", "5"], "ZeRO stage"),
    (["plan", "llama-3.1-70b", "--workload", "finetune"], "unknown workload"),
    (["plan", "llama-3.1-70b", "--gpu", "a100", "--precision", "fp8"], "no FP8"),
    (
        ["plan", "llama-3.1-70b", "--gpus", "16", "--global-batch", "7", "--tp", "8", "--pp", "1"],
        "not divisible by dp x micro-batch",
    ),
    (["plan", "llama-3.1-70b", "-w", "inference", "--gpus", "4", "--tp", "2"], "tp x pp"),
    (["plan"], "no model given"),
    # an option the workload does not read was ignored without a word (the plan answered
    # another question); each names the option and the fix
    (
        ["plan", "llama-3.1-8b", "-w", "pretrain", "--engine", "ollama"],
        "--engine applies to inference",
    ),
    (["plan", "llama-3.1-8b", "-w", "inference", "--zero", "3"], "--zero applies to training"),
    (["plan", "llama-3.1-8b", "--batch", "4", "--micro-batch", "2"], "describes an inference plan"),
    (["plan", "llama-3.1-8b", "-w", "pretrain", "--lora-rank", "8"], "-w lora or qlora"),
    # a KV cache precision no engine stores was a KeyError (exit 3)
    (["plan", "llama-3.1-8b", "-w", "inference", "--kv-precision", "int2"], "KV cache precision"),
    # the host memory of a model too large for the GPUs: a catalog name or a rate
    (["plan", "llama-3.1-70b", "--engine", "ollama", "--host-memory", "ddr9"], "unknown host"),
    (["plan", "llama-3.1-70b", "--engine", "ollama", "--host-memory", "60GB"], "60GB"),
    (["plan", "llama-3.1-70b", "-w", "pretrain", "--host-memory", "ddr5"], "--host-memory applies"),
    # llama.cpp's -ngl: for the engines that keep layers in host memory, on a GPU with its own
    (["plan", "llama-3.1-8b", "--engine", "vllm", "--gpu-layers", "8"], "keeps every layer on"),
    (["plan", "llama-3.1-8b", "--gpu", "m2-ultra", "--gpu-layers", "8"], "shares one memory"),
    (
        [
            "plan",
            "llama-3.1-8b",
            "--engine",
            "ollama",
            "--gpus",
            "2",
            "--tp",
            "2",
            "--gpu-layers",
            "8",
        ],
        "tensor parallelism",
    ),
    (["plan", "llama-3.1-8b", "--engine", "ollama", "--gpu-layers", "-3"], "negative"),
    (["plan", "llama-3.1-8b", "-w", "pretrain", "--gpu-layers", "8"], "--gpu-layers applies"),
    # a bare number would be bytes: the unit is asked for
    (["plan", "llama-3.1-70b", "--engine", "ollama", "--host-ram", "32"], "give the unit"),
    (["plan", "llama-3.1-70b", "--engine", "ollama", "--host-ram", "0GB"], "not a memory size"),
    (["plan", "llama-3.1-70b", "--engine", "ollama", "--host-ram", "lots"], "lots"),
    (["collective", "all_reduce", "1XB"], "as a size"),
    (["collective", "bogus", "1GB"], "unknown collective"),
    (["collective", "all_reduce", "1GB", "--ranks", "1"], "at least 2 ranks"),
    (["catalog", "foo"], "unknown catalog"),
]


@pytest.mark.parametrize(
    ("argv", "message"), BAD, ids=lambda x: " ".join(x) if isinstance(x, list) else x
)
def test_bad_input_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert run(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("fabriclens: error: ")
    assert message in err


def test_corrupt_config_json_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "config.json"
    bad.write_text('{"model_type": "llama", "hidden_size": ')
    assert run(["plan", str(bad)]) == 2
    assert "not valid JSON" in capsys.readouterr().err


def test_real_process_never_prints_a_traceback() -> None:
    proc = subprocess.run([sys.executable, "-m", "fabriclens", "plan", "llama-3.1-70b", "--tp", "7"],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1


def test_transfer_json(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json(capsys, "transfer", "140GB", "--link", "1gbe", "--hosts", "4")
    assert isinstance(doc, dict)
    assert set(doc) >= {
        "size_bytes",
        "goodput_bits_per_s",
        "time_s",
        "strategies",
        "best",
        "advice",
    }
    assert doc["time_s"] == pytest.approx(140e9 * 8 / 0.94e9, rel=1e-4)
    assert run(["transfer", "140GB", "--link", "10gbe", "--measured", "8gbit"]) == 0
    assert "Advice" in capsys.readouterr().out


def test_capacity_json(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json(capsys, "capacity", "llama-3.1-8b", "--users", "50", "--output-tokens", "300", "--gpu", "l40s",
                "--latency-slo", "tpot=40ms,ttft=1s")  # fmt: skip
    assert isinstance(doc, dict)
    assert set(doc) >= {
        "replica",
        "replicas",
        "gpus",
        "required_tokens_per_s",
        "egress_bits_per_s",
        "slo_met",
    }
    assert doc["gpus"] == doc["replicas"] * doc["replica"]["gpus"]


def test_capacity_team_json_states_each_assumption(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json(capsys, "capacity", "llama-3.1-70b", "--team", "30", "--request-rate", "1/min")
    assert isinstance(doc, dict)
    team = doc["team"]
    assert team["people"] == 30 and team["streams"] == doc["users"] >= 1
    assert team["arrivals_per_s"] == pytest.approx(30 * 0.5 / 60)
    for a in team["assumptions"]:
        assert set(a) == {"name", "value", "unit", "source"} and a["source"]
    rate = next(a for a in team["assumptions"] if a["name"] == "requests_per_active_person_per_h")
    assert rate["value"] == pytest.approx(60) and rate["source"] == "set by --request-rate"
    assert doc["engine"]["gpu_memory_utilization"] == {
        "value": 0.9,
        "source": doc["engine"]["gpu_memory_utilization"]["source"],
    }
    assert "gpu-memory-utilization" in doc["engine"]["gpu_memory_utilization"]["source"]
    assert doc["tp_choice"]["reason"].startswith(f"tp {doc['replica']['tp']}:")
    assert run(["capacity", "llama-3.1-8b", "--team", "30"]) == 0
    assert "for a team of 30" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["capacity", "llama-3.1-8b", "--team", "30", "--users", "5"], "not both"),
        (["capacity", "llama-3.1-8b", "--team", "30", "--request-rate", "often"], "20/h"),
        (["capacity", "llama-3.1-8b", "--request-rate", "20/h"], "only applies with --team"),
        (["capacity", "llama-3.1-8b", "--max-parallel", "0"], "at least 1"),
        (["capacity", "llama-3.1-8b", "--gpu-memory-utilization", "0"], "not in (0, 1]"),
        (["transfer", "lots", "--link", "1gbe"], "as a size"),
        (["transfer", "1GB", "--link", "1gbe", "--protocol", "rdma"], "has no RDMA"),
        (["transfer", "1GB", "--link", "warp"], "unknown network"),
        (
            ["capacity", "llama-3.1-8b", "--latency-slo", "speed=fast"],
            "is not one of tpot=..., ttft=...",
        ),
        (["capacity", "llama-3.1-8b", "--users", "0"], "at least 1"),
        (
            ["capacity", "llama-3.1-405b", "--gpu", "rtx-4090", "--tp", "1", "--pp", "1"],
            "does not fit",
        ),
    ],
)
def test_transfer_and_capacity_errors(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert run(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_advise_json(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json(
        capsys, "advise", "llama-3.1-8b", "--gpus", "16", "--network", "25gbe,100g-roce,ndr-ib"
    )
    assert isinstance(doc, dict)
    assert set(doc) >= {"facts", "advice", "tiers", "recommended", "reason", "sensitivity"}
    assert doc["recommended"] in {"25gbe", "100g-roce", "ndr-ib"}
    assert [t["network"] for t in doc["tiers"]] == ["25gbe", "100g-roce", "ndr-ib"]
    guide = _json(capsys, "advise", "--scenario", "personal", "--nodes", "1")
    assert isinstance(guide, dict) and guide["tiers"] == [] and guide["advice"]


def test_advise_counts_the_nodes_the_plan_uses(capsys: pytest.CaptureFixture[str]) -> None:
    """The guide's node count is the plan's: 16 GPUs are 2 nodes of 8 H100s, 4 nodes of 4 GH200s,
    one NVL72 domain of GB200s, 16 one-GPU DGX Sparks, not 16 / 8 for every part."""
    for gpu, nodes in (("h100-sxm", 2), ("gh200", 4), ("gb200", 1), ("dgx-spark", 16)):
        doc = _json(capsys, "advise", "llama-3.1-8b", "--gpu", gpu, "--network", "100g-roce")
        assert isinstance(doc, dict) and doc["facts"]["nodes"] == nodes, gpu
        plan = _json(capsys, "plan", "llama-3.1-8b", "--gpu", gpu, "--gpus", "16",
                     "--network", "100g-roce")  # fmt: skip
        assert isinstance(plan, dict) and plan["nodes"] == nodes, gpu


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["advise", "--scenario", "home"], "unknown scenario"),
        (["advise", "--slack", "200%"], "outside 0..100%"),
        (["advise", "llama-3.1-8b", "--network", "5g"], "unknown network"),
        # a flag that prices a model's step is refused without a model, not ignored
        (["advise", "--etp", "1"], "--etp prices a model's training step"),
        (["advise", "--framework", "nemo", "--ep-overlap"], "--framework, --ep-overlap price"),
    ],
)
def test_advise_errors(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    assert run(argv) == 2
    assert message in capsys.readouterr().err


def test_datapath_json(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json(
        capsys,
        "datapath",
        "--gpu",
        "a100",
        "--gpus",
        "4",
        "--storage-network",
        "1gbe",
        "--images-per-s",
        "2500",
    )
    assert isinstance(doc, dict)
    assert set(doc) >= {"stages", "narrowest", "slowdown", "advice"}
    assert doc["slowdown"] > 9
    model = _json(capsys, "datapath", "llama-3.1-8b", "--gpus", "16", "--storage-bw", "5GB/s")
    assert isinstance(model, dict) and model["checkpoint_bytes"] == pytest.approx(
        16 * 8.03e9, rel=1e-3
    )
    assert run(["datapath", "--gpus", "4"]) == 2
    assert "no input rate" in capsys.readouterr().err


def test_transfer_reads_a_measured_rate_in_bytes_per_second(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # 140 GB at 1 GB/s (8 Gbit/s) is 140 s; read as 1 Gbit/s it was 1,120 s (18.7 min)
    doc = _json(capsys, "transfer", "140GB", "--link", "25gbe", "--measured", "1GB/s")
    assert isinstance(doc, dict)
    assert doc["goodput_bits_per_s"] == pytest.approx(8e9)
    assert doc["time_s"] == pytest.approx(140.0)
    bits = _json(capsys, "transfer", "140GB", "--link", "25gbe", "--measured", "8Gbit/s")
    assert isinstance(bits, dict) and bits["time_s"] == pytest.approx(140.0)
    assert run(["transfer", "140GB", "--link", "25gbe", "--storage", "2GB/s", "--json"]) == 0
    assert "1.12e+03" not in capsys.readouterr().out
    assert run(["transfer", "140GB", "--measured", "1gb"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "write 1Gbit/s for bits or 1GB/s for bytes" in err


def test_datapath_reads_the_storage_rate_in_bytes_per_second(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for flag, rate in (("--storage", "2GB/s"), ("--storage-bw", "16Gbit/s")):
        doc = _json(capsys, "datapath", "llama-3.1-8b", flag, rate)
        assert isinstance(doc, dict)
        storage = next(s for s in doc["stages"] if s["name"].startswith("storage system"))
        assert storage["capacity_bytes_per_s"] == pytest.approx(2e9)
    assert run(["datapath", "llama-3.1-8b", "--storage", "2GB"]) == 2
    assert "is a size, not a rate" in capsys.readouterr().err


def test_search_json(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json(
        capsys, "search", "llama-3.1-8b", "--gpus", "16", "--network", "25gbe,ndr-ib", "--top", "3"
    )
    assert isinstance(doc, dict)
    assert set(doc) >= {"networks", "pareto", "upgrades", "layouts_evaluated"}
    first = doc["networks"][0]
    assert len(first["top"]) == 3 and first["top"][0]["why_slower"] == ""
    assert all(x["why_slower"] for x in first["top"][1:])
    times = [x["time_s"] for x in first["top"]]
    assert times == sorted(times)
    assert run(["search", "llama-3.1-8b", "-w", "inference"]) == 2
    assert "training layouts" in capsys.readouterr().err


def test_bench_import(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json(capsys, "bench", "import", str(FIXTURES / "nccl-tests-h200-8gpu.txt"))
    assert isinstance(doc, dict)
    assert set(doc) >= {
        "sizes",
        "plateau_busbw_GBps",
        "expected_busbw_GBps",
        "efficiency",
        "verdict",
    }
    assert doc["plateau_busbw_GBps"] == pytest.approx(475.39)


def test_bench_import_slow_run_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    slow = tmp_path / "slow.txt"
    slow.write_text((FIXTURES / "nccl-tests-h200-8gpu.txt").read_text().replace("475.", "175."))
    assert run(["bench", "import", str(slow), "--op", "all_reduce"]) == 1
    assert "CRITICAL" in capsys.readouterr().out
    assert run(["bench", "import", str(tmp_path / "missing.txt")]) == 2


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["bench", "net"], "no host given"),
        (["bench", "net", "127.0.0.1", "--tool", "nc"], "unknown --tool"),
        (["bench", "net", "127.0.0.1", "--expect", "fast"], "neither a network nor a rate"),
        (
            ["bench", "net", "127.0.0.1", "--tool", "builtin", "--port", "9", "--duration", "1"],
            "cannot reach a test server",
        ),
        (["bench", "net", "--serve", "--timeout", "0"], "bounded --timeout"),
    ],
)
def test_bench_net_errors(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert run(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
