"""Models named the way people's tools name them: Ollama tags and Hugging Face ids.

`bench serve --model llama3.1:8b` (the Ollama example its own help gives) and vLLM's served
model name (`meta-llama/Llama-3.1-8B-Instruct`) must reach the planner's catalog entry; the
weights format a tag or repository names (Q8_0, AWQ, FP8) is the one planned."""

from __future__ import annotations

import pytest

from fabriclens.catalog import find_gpu, find_model
from fabriclens.catalog.model_names import read_model_name
from fabriclens.errors import InputError

# what people type -> (catalog entry, weights the name states)
NAMES = {
    # an Ollama tag without a quantization pulls Ollama's default build, Q4_K_M
    "llama3.1:8b": ("llama-3.1-8b", "int4"),
    "llama3.1": ("llama-3.1-8b", "int4"),  # Ollama's latest tag of llama3.1 is 8b
    "llama3.1:latest": ("llama-3.1-8b", "int4"),
    "llama3.1:8b-instruct-q4_K_M": ("llama-3.1-8b", "int4"),
    "llama3.1:8b-instruct-fp16": ("llama-3.1-8b", "fp16"),
    "qwen2.5:7b-instruct-q8_0": ("qwen2.5-7b", "int8"),
    "qwen3:30b-a3b": ("qwen3-30b-a3b", "int4"),
    "qwen3:30b-a3b-instruct-2507-q4_K_M": ("qwen3-30b-a3b", "int4"),
    "mixtral:8x22b": ("mixtral-8x22b", "int4"),
    "gpt-oss:120b": ("gpt-oss-120b", "int4"),
    "meta-llama/Llama-3.1-8B-Instruct": ("llama-3.1-8b", ""),
    "meta-llama/Meta-Llama-3.1-70B-Instruct": ("llama-3.1-70b", ""),
    "neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8-dynamic": ("llama-3.1-70b", "fp8"),
    "Qwen/Qwen2.5-72B-Instruct-AWQ": ("qwen2.5-72b", "int4"),
    "Qwen/Qwen2.5-7B-Instruct-GPTQ-Int8": ("qwen2.5-7b", "int8"),
    "Qwen/Qwen3-30B-A3B-Instruct-2507": ("qwen3-30b-a3b", ""),
    "hf.co/bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M": ("llama-3.2-1b", "int4"),
    "openai/gpt-oss-20b": ("gpt-oss-20b", ""),
    "Llama-3.1-8B": ("llama-3.1-8b", ""),  # a catalog title, as before
    # the models newcomers pull
    "gemma2:9b": ("gemma-2-9b", "int4"),
    "gemma3": ("gemma-3-4b", "int4"),  # Ollama's latest gemma3 is the 4B
    "gemma3:27b-it-q8_0": ("gemma-3-27b", "int8"),
    "google/gemma-2-27b-it": ("gemma-2-27b", ""),
    "phi3:mini": ("phi-3-mini", "int4"),
    "phi3:14b": ("phi-3-medium", "int4"),
    "phi4": ("phi-4", ""),  # also the catalog's phi-4 written without its hyphen
    "phi4:latest": ("phi-4", "int4"),
    "microsoft/phi-4": ("phi-4", ""),
    "mistral-nemo:12b": ("mistral-nemo-12b", "int4"),
    "mistralai/Mistral-Nemo-Instruct-2407": ("mistral-nemo-12b", ""),
    "mistralai/Mistral-Small-24B-Instruct-2501": ("mistral-small-24b", ""),
    "qwen2.5:0.5b": ("qwen2.5-0.5b", "int4"),
    "Qwen/Qwen3-4B": ("qwen3-4b", ""),
    "qwen3:14b-fp16": ("qwen3-14b", "fp16"),
    "deepseek-r1:7b": ("deepseek-r1-distill-qwen-7b", "int4"),
    "deepseek-r1:70b": ("deepseek-r1-distill-llama-70b", "int4"),
    "deepseek-r1:8b-llama-distill-q4_K_M": ("deepseek-r1-distill-llama-8b", "int4"),
    "deepseek-r1:671b": ("deepseek-v3", "int4"),
    "deepseek-r1:8b": ("deepseek-r1-0528-qwen3-8b", "int4"),
    "deepseek-r1:8b-0528-qwen3-q8_0": ("deepseek-r1-0528-qwen3-8b", "int8"),
    "deepseek-r1:1.5b": ("deepseek-r1-distill-qwen-1.5b", "int4"),
    "deepseek-ai/DeepSeek-R1-0528-Qwen3-8B": ("deepseek-r1-0528-qwen3-8b", ""),
    "qwen2.5-coder:7b": ("qwen2.5-7b", "int4"),  # same config.json fields (models.toml)
    "qwen2.5-coder:32b-instruct-q8_0": ("qwen2.5-32b", "int8"),
    "Qwen/Qwen2.5-Coder-7B-Instruct": ("qwen2.5-7b", ""),
    "Qwen/QwQ-32B-AWQ": ("qwen2.5-32b", "int4"),
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B": ("deepseek-r1-distill-qwen-32b", ""),
    "codellama:13b-instruct-q8_0": ("codellama-13b", "int8"),
    "codellama:7b-python": ("codellama-7b", "int4"),  # a size with another word still has it
    "codellama/CodeLlama-34b-Instruct-hf": ("codellama-34b", ""),
    "codellama:70b": ("codellama-70b", "int4"),
    "phi4-mini": ("phi-4-mini", ""),  # the catalog's phi-4-mini without its hyphen
    "phi4-mini:3.8b": ("phi-4-mini", "int4"),
    "microsoft/Phi-4-mini-instruct": ("phi-4-mini", ""),
    "phi3.5:3.8b-mini-instruct-q4_K_M": ("phi-3.5-mini", "int4"),
    "microsoft/Phi-3.5-mini-instruct": ("phi-3.5-mini", ""),
    "qwen3-coder:30b": ("qwen3-coder-30b-a3b", "int4"),
    "Qwen/Qwen3-Coder-30B-A3B-Instruct": ("qwen3-coder-30b-a3b", ""),
    "smollm2:135m": ("smollm2-135m", "int4"),
    "smollm2:360m-instruct-fp16": ("smollm2-360m", "fp16"),
    "HuggingFaceTB/SmolLM2-1.7B-Instruct": ("smollm2-1.7b", ""),
    "tinyllama": ("tinyllama-1.1b", ""),  # the project's only size
    "tinyllama:1.1b-chat-v1-q8_0": ("tinyllama-1.1b", "int8"),
    "TinyLlama/TinyLlama-1.1B-Chat-v1.0": ("tinyllama-1.1b", ""),
    "llama4:16x17b": ("llama-4-scout", "int4"),  # Ollama's tag for Scout (16 experts x 17B)
    "llama4:scout": ("llama-4-scout", "int4"),
    "llama4:128x17b": ("llama-4-maverick", "int4"),  # and Maverick (128 experts x 17B)
    "llama4:maverick": ("llama-4-maverick", "int4"),
    "meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8": ("llama-4-maverick", "fp8"),
    # Mistral Small 3.1/3.2: one size, 24B (its model card), Mistral Small 3's shape at 128k
    "mistral-small3.1": ("mistral-small-3.1-24b", "int4"),
    "mistral-small3.2:24b-instruct-2506-q8_0": ("mistral-small-3.1-24b", "int8"),
    "mistralai/Mistral-Small-3.1-24B-Instruct-2503": ("mistral-small-3.1-24b", ""),
    "mistralai/Mistral-Small-3.2-24B-Instruct-2506": ("mistral-small-3.1-24b", ""),
    # Devstral Small 1.x: Mistral Small 3.1 fine-tuned, text only
    "devstral": ("mistral-small-3.1-24b", "int4"),
    "mistralai/Devstral-Small-2507": ("mistral-small-3.1-24b", ""),
    "olmo2:13b": ("olmo-2-13b", "int4"),
    # Magistral Small: Mistral Small 3.1 (3.2 for 2509) with reasoning trained in, 24B
    "magistral": ("mistral-small-3.1-24b", "int4"),
    "magistral:24b-small-2506-q8_0": ("mistral-small-3.1-24b", "int8"),
    "mistralai/Magistral-Small-2509": ("mistral-small-3.1-24b", ""),
    "allenai/OLMo-2-1124-7B-Instruct": ("olmo-2-7b", ""),
    # a repository's name is the model it holds, never Ollama's latest size of a library name:
    # deepseek-ai/DeepSeek-R1 is the 671B model (DeepSeek-V3's shape), Ollama's deepseek-r1 an 8B
    "deepseek-ai/DeepSeek-R1": ("deepseek-v3", ""),
    "deepseek-ai/DeepSeek-R1-0528": ("deepseek-v3", ""),
    "hf.co/unsloth/DeepSeek-R1-GGUF:Q4_K_M": ("deepseek-v3", "int4"),
    # a reasoning ("Thinking") release keeps its instruct model's shape
    "Qwen/Qwen3-30B-A3B-Thinking-2507": ("qwen3-30b-a3b", ""),
    "Qwen/Qwen3-VL-235B-A22B-Thinking": ("qwen3-vl-235b-a22b", ""),
    # Kimi K2 Thinking: K2's shape with K2.5's 256K context and INT4 experts (models.toml)
    "moonshotai/Kimi-K2-Thinking": ("kimi-k2.5", ""),
    # the 2025-2026 releases, as Hugging Face and Ollama name them
    "deepseek-ai/DeepSeek-V3.2-Exp": ("deepseek-v3.2", ""),
    "zai-org/GLM-5.1-FP8": ("glm-5", "fp8"),
    "MiniMaxAI/MiniMax-M2.1": ("minimax-m2.5", ""),
    "qwen3-vl:8b": ("qwen3-vl-8b", "int4"),
    "qwen3-vl:30b-a3b-instruct-q8_0": ("qwen3-vl-30b-a3b", "int8"),
    "Qwen/Qwen3.6-35B-A3B": ("qwen3.5-35b-a3b", ""),
    "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16": ("nemotron-3-nano-30b-a3b", "bf16"),
    "Qwen/Qwen3-Coder-480B-A35B-Instruct-FP8": ("qwen3-coder-480b-a35b", "fp8"),
    # NVIDIA's Blackwell checkpoints: NVFP4 weights
    "nvidia/Qwen3-235B-A22B-NVFP4": ("qwen3-235b-a22b", "fp4"),
    "nvidia/DeepSeek-R1-0528-FP4": ("deepseek-v3", "fp4"),
    "nvidia/Kimi-K2.5-NVFP4": ("kimi-k2.5", "fp4"),
}


@pytest.mark.parametrize("text", sorted(NAMES))
def test_names_reach_the_catalog_entry(text: str) -> None:
    entry, precision = NAMES[text]
    spec = find_model(text)
    assert spec.name == entry
    assert spec.named_precision == precision
    if precision:  # the stated format is what is served unless --precision says otherwise
        assert spec.release_precision == precision
        assert text in spec.reading and precision in spec.reading


def test_a_tags_size_is_never_dropped() -> None:
    """llama3.1:13b is no Llama 3.1 the catalog has; it must not become the 8B, nor the family
    name alone: deepseek-r1:8b is a distilled 8B (since May 2025 Ollama's R1-0528 Qwen3-8B
    distill, whose GGUF the catalog entry follows), not the 671B DeepSeek-R1."""
    assert read_model_name("deepseek-r1:8b").candidates == ("deepseek-r1-8b",)
    with pytest.raises(InputError, match=r"unknown model 'llama3\.1:13b'"):
        find_model("llama3.1:13b")
    spec = find_model("deepseek-r1:8b")
    assert (spec.name, spec.layers, spec.vocab, spec.max_positions) == (
        "deepseek-r1-0528-qwen3-8b",
        36,
        151936,
        131072,
    )


@pytest.mark.parametrize(
    ("tag", "entry"),
    [
        # `ollama list`: deepseek-r1:latest and :8b share one ID since May 2025 (model_names.py)
        ("deepseek-r1:latest", "deepseek-r1-0528-qwen3-8b"),
        ("deepseek-r1:instruct", "deepseek-r1-0528-qwen3-8b"),
        ("deepseek-r1:q8_0", "deepseek-r1-0528-qwen3-8b"),
        ("codellama", "codellama-7b"),  # README: "Code Llama | 7B"
        ("qwen3-coder:latest", "qwen3-coder-30b-a3b"),  # docs: "a 30B parameter model"
        ("llama3", "llama-3.1-8b"),  # "Llama 3 | 8B": Llama 3.1's shape (the catalog's alias)
        ("gemma2", "gemma-2-9b"),
        ("phi3:latest", "phi-3-mini"),
        ("llama2", "llama-2-7b"),
        ("qwq", "qwen2.5-32b"),  # "QwQ | 32B"; Qwen/QwQ-32B's config.json is Qwen2.5-32B's shape
    ],
)
def test_a_tag_without_a_size_is_the_size_ollama_pulls(tag: str, entry: str) -> None:
    """A family without a size is the size Ollama's README or docs say `ollama run` pulls; for
    deepseek-r1 that is the distilled 8B, never the 671B model the plain name deepseek-r1 means."""
    assert find_model(tag).name == entry
    assert find_model("deepseek-r1").name == "deepseek-v3"  # the plain name: the 671B model


def test_a_family_without_a_known_latest_size_is_not_guessed() -> None:
    """qwen3 with no size: no source states which size Ollama's latest is; ask, do not pick."""
    with pytest.raises(InputError, match="unknown model 'qwen3'"):
        find_model("qwen3")


def test_other_quantizations_are_named_not_guessed() -> None:
    """Q5/Q6 GGUF types have no precision of the planner's: say so, plan the engine's."""
    spec = find_model("llama3.1:70b-instruct-q5_K_M")
    assert spec.name == "llama-3.1-70b" and spec.named_precision == ""
    assert "Q5_K_M weights not modelled" in spec.reading


def test_plain_catalog_names_are_unchanged() -> None:
    spec = find_model("llama-3.1-8b")
    assert spec.reading == "" and spec.named_precision == ""
    # the model's own release format still applies (gpt-oss ships MXFP4 experts)
    assert find_model("openai/gpt-oss-20b").release_precision == "int4"


def test_the_named_format_is_planned_and_said() -> None:
    from fabriclens.plan.planner import Plan, make_plans
    from fabriclens.plan.request import PlanRequest

    def plan(name: str) -> Plan:
        req = PlanRequest(model=find_model(name), gpu="rtx-4090", gpus=1, workload="inference")
        return make_plans(req)[0]

    q8, bf16 = plan("qwen2.5:7b-instruct-q8_0"), plan("qwen2.5-7b")
    # 8.5 bits vs 16 per weight for the weights (the engine's Q8_0 figure; vLLM's int8 is 8.0)
    assert q8.inference is not None and bf16.inference is not None
    weights = [p.inference.memory.per_gpu_bytes["weights"] for p in (q8, bf16)]
    assert 0.45 < weights[0] / weights[1] < 0.56
    text = " ".join(q8.inference.assumptions + q8.defaults)
    assert "'qwen2.5:7b-instruct-q8_0': Ollama tag read as the catalog's qwen2.5-7b" in text
    assert "as the model name gives them" in text
    from fabriclens.report.json_doc import plan_doc

    layouts = [plan_doc(p)["layout"] for p in (q8, bf16)]
    assert [(lay["precision"], lay["kv_precision"]) for lay in layouts] == [
        ("int8", "bf16"),
        ("bf16", "bf16"),
    ]


def test_an_unknown_hugging_face_id_points_at_its_config() -> None:
    """A Hub model the catalog lacks is still plannable from its config.json: say where it is."""
    with pytest.raises(InputError) as err:
        find_model("HuggingFaceTB/SmolLM3-3B")
    assert "https://huggingface.co/HuggingFaceTB/SmolLM3-3B/resolve/main/config.json" in (
        err.value.fix
    )


def test_catalog_entries_agree_with_the_reference_model_table() -> None:
    """reference/models_more.csv was transcribed from the Hugging Face configs separately from
    the catalog (for the decode reference rows); every model it shares with the catalog, found
    by its Hugging Face name, has the same shape and family (the config's model_type)."""
    import csv

    from conftest import ROOT

    shared = 0
    with (ROOT / "reference" / "models_more.csv").open(encoding="utf-8") as f:
        for row in csv.DictReader(f):
            try:
                spec = find_model(row["model"])
            except InputError:
                continue  # GPT-J, Falcon: reference-only architectures
            shared += 1
            head_dim = spec.head_dim or spec.hidden // spec.heads
            got = (spec.layers, spec.hidden, spec.heads, spec.kv_heads, head_dim, spec.ffn,
                   spec.vocab, spec.tied_embeddings, spec.qkv_bias, spec.experts, spec.family)  # fmt: skip
            want = (int(row["layers"]), int(row["hidden"]), int(row["heads"]),
                    int(row["kv_heads"]), int(row["head_dim"]), int(row["ffn"]), int(row["vocab"]),
                    row["tied_embeddings"] == "yes", row["qkv_bias"] == "yes",
                    int(row["experts"]), row["family"])  # fmt: skip
            assert got == want, row["model"]
    assert shared >= 11


def test_a_training_plan_keeps_its_own_precision() -> None:
    """An Ollama tag's Q4_K_M describes the served weights; training from it plans BF16."""
    from fabriclens.plan.planner import make_plans
    from fabriclens.plan.request import PlanRequest

    plan = make_plans(PlanRequest(model=find_model("llama3.1:8b"), gpu="h100-sxm", gpus=8))[0]
    assert plan.config is not None and plan.config.precision == "bf16"
    assert any("a training plan keeps its own --precision" in d for d in plan.defaults)


def test_an_ollama_tag_is_served_by_ollama_unless_an_engine_is_named() -> None:
    """`llama3.1:8b` is what Ollama pulls and serves: without --engine, capacity and plan serve
    it with Ollama (its Q4_K_M at 4.89 bits, one request at once), and say so; --engine vllm and
    the catalog's own name keep vLLM."""
    from fabriclens.plan.capacity import plan_capacity
    from fabriclens.plan.planner import default_engine

    tag, plain = find_model("llama3.1:8b"), find_model("llama-3.1-8b")
    gpu = find_gpu("rtx-4090")
    assert default_engine(gpu, tag) == "ollama" and default_engine(gpu, plain) == "vllm"
    assert default_engine(find_gpu("h100-sxm"), find_model("meta-llama/Llama-3.1-8B")) == "vllm"
    # unified memory alone does not pick Ollama: vLLM runs on NVIDIA's GB10, not on Apple GPUs
    assert default_engine(find_gpu("dgx-spark"), plain) == "vllm"
    assert default_engine(find_gpu("m4-max"), plain) == "ollama"
    served = plan_capacity(tag, "rtx-4090", users=1, output_tokens=256)
    assert served.limits.engine == "ollama" and served.limits.bits_per_weight == pytest.approx(4.89)
    assert "served by Ollama unless --engine names another" in tag.reading
    assert plan_capacity(tag, "rtx-4090", users=1, output_tokens=256, engine="vllm").limits.engine == "vllm"  # fmt: skip
    assert plan_capacity(plain, "rtx-4090", users=1, output_tokens=256).limits.engine == "vllm"
