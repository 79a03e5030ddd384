"""The releases of 2025-2026: DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5), MiniMax-M2,
Kimi K2.5, Qwen3-VL, the Qwen3.5 mixtures, Nemotron 3 Nano, Qwen3-Coder-480B and the GLM-4.x
line. Their config.json files (tests/fixtures/hf, sources in tests/fixtures/README.md) against the
published totals, the catalog entries against their files, and what sparse attention changes:
parameters, the KV cache, what a decode step reads, and the prefill's attention square."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from conftest import FIXTURES
from fabriclens.catalog import find_engine, find_gpu, find_link, find_model
from fabriclens.errors import InputError
from fabriclens.model.arch import (
    attended_tokens,
    attention_core_flops_per_token,
    cached_tokens,
    count_params,
    indexer_params,
    kv_bytes_per_token,
    kv_read_bytes_per_token,
)
from fabriclens.model.collectives import Fabric
from fabriclens.model.inference import INDEXER_KERNELS, estimate_inference, extra_kernels
from fabriclens.model.memory import pipeline_stages, stage_share

HF = FIXTURES / "hf"
NVLINK = Fabric(find_link("nvlink4-nvswitch"), None, 8, 1)


def _counts(fixture: str):  # type: ignore[no-untyped-def]
    return count_params(find_model(str(HF / fixture)))


@pytest.mark.parametrize(
    ("fixture", "total"),
    [
        # DeepSeek-V3.2's model card: 685B with the 14B multi-token-prediction module, which the
        # DeepSeek-V3 report puts beside the 671B main model; the MTP module is not counted
        ("deepseek-v3.2.json", 685e9 - 14e9),
        ("glm-5.json", 744e9),  # GLM-5: 744B parameters, 40B active
        ("minimax-m2.5.json", 230e9),  # MiniMax-M2: 230B total, 10B active
        ("qwen3.5-35b-a3b.json", 35e9),  # model card: 35B in total, 3B activated
        ("qwen3.5-122b-a10b.json", 122e9),  # 122B in total, 10B activated
        ("nemotron-3-nano-30b-a3b.json", 31.6e9),  # 31.6B total, 3.6B active with embeddings
        ("qwen3-coder-480b-a35b-instruct.json", 480e9),  # 480B total, 35B activated
        ("glm-4.7-flash.json", 30e9),  # GLM-4.7-Flash: 30B-A3B
        # GLM-4.5/4.6/4.7: 355B with the multi-token-prediction layer (a layer of 3.8B here)
        ("glm-4.7-fp8.json", 355e9),
    ],
)
def test_new_models_match_their_published_totals(fixture: str, total: float) -> None:
    """Totals given to two or three figures, held within 1% (GLM-4.x within 1.5%: its
    published 355B counts the MTP layer, 1.1% of it)."""
    tol = 0.015 if fixture == "glm-4.7-fp8.json" else 0.01
    assert _counts(fixture).total == pytest.approx(total, rel=tol)


@pytest.mark.parametrize(
    ("fixture", "active"),
    [("glm-5.json", 40e9), ("minimax-m2.5.json", 10e9), ("glm-4.7-fp8.json", 32e9)],
)
def test_active_counts_without_the_embeddings(fixture: str, active: float) -> None:
    """These vendors count the active parameters without the embedding and the LM head:
    GLM-5 '40B active', MiniMax-M2 '10B activated', GLM-4.5 '32B active' (within 3%)."""
    counts = _counts(fixture)
    assert counts.active - counts.embedding - counts.lm_head == pytest.approx(active, rel=0.03)


def test_nemotron_3_nano_active_count_with_the_embeddings() -> None:
    """Nemotron 3 Nano's model card: 3.6B active including the embeddings (two figures)."""
    assert _counts("nemotron-3-nano-30b-a3b.json").active == pytest.approx(3.6e9, rel=0.02)


@pytest.mark.parametrize(
    ("fixture", "entry"),
    [
        ("deepseek-v3.2.json", "deepseek-v3.2"),
        ("glm-5.json", "glm-5"),
        ("glm-5.2.json", "glm-5.2"),
        ("minimax-m2.5.json", "minimax-m2.5"),
        ("kimi-k2.5.json", "kimi-k2.5"),
        ("qwen3-vl-8b-instruct.json", "qwen3-vl-8b"),
        ("qwen3-vl-30b-a3b-instruct.json", "qwen3-vl-30b-a3b"),
        ("qwen3-vl-235b-a22b-instruct.json", "qwen3-vl-235b-a22b"),
        ("qwen3.5-35b-a3b.json", "qwen3.5-35b-a3b"),
        ("qwen3.5-122b-a10b.json", "qwen3.5-122b-a10b"),
        ("nemotron-3-nano-30b-a3b.json", "nemotron-3-nano-30b-a3b"),
        ("qwen3-coder-480b-a35b-instruct.json", "qwen3-coder-480b-a35b"),
        ("glm-4.7-fp8.json", "glm-4.6"),
        ("nemotron-3-super-120b-a12b.json", "nemotron-3-super-120b-a12b"),
        ("nemotron-3-ultra-550b-a55b.json", "nemotron-3-ultra-550b-a55b"),
        ("glm-4.7-flash.json", "glm-4.7-flash"),
    ],
)
def test_catalog_entries_are_their_configs(fixture: str, entry: str) -> None:
    """Every field the planner reads, as `plan` reads it from the file."""
    from_file, from_catalog = find_model(str(HF / fixture)), find_model(entry)
    skip = {"name", "title", "source", "notes", "aliases", "params_published", "reading",
            "named_precision", "named_by", "release_precision"}  # fmt: skip
    for field in dataclasses.fields(from_file):
        if field.name not in skip:
            assert getattr(from_file, field.name) == getattr(from_catalog, field.name), field.name
    assert count_params(from_file) == count_params(from_catalog)


def test_same_language_models_under_other_names() -> None:
    """Qwen3-VL's language models are Qwen3's (8B, 30B-A3B, 235B-A22B); Kimi K2.5's is Kimi
    K2's; the vision encoders are not planned."""
    for vl, text in (("qwen3-vl-8b", "qwen3-8b"), ("qwen3-vl-30b-a3b", "qwen3-30b-a3b"),
                     ("qwen3-vl-235b-a22b", "qwen3-235b-a22b"), ("kimi-k2.5", "kimi-k2")):  # fmt: skip
        assert count_params(find_model(vl)) == count_params(find_model(text)), vl


def test_the_indexer_weights_as_transformers_builds_them() -> None:
    """DeepseekV32Indexer: wq_b (q_lora_rank -> 64 x 128), wk (hidden -> 128), k_norm (a
    LayerNorm: weight and bias), weights_proj (hidden -> 64). DeepSeek-V3.2 is DeepSeek-V3 plus one
    in each of its 61 layers."""
    v32, v3 = find_model("deepseek-v3.2"), find_model("deepseek-v3")
    per_layer = 1536 * 64 * 128 + 7168 * 128 + 2 * 128 + 7168 * 64
    assert indexer_params(v32) == per_layer == 13_959_424
    assert count_params(v32).total - count_params(v3).total == 61 * per_layer
    assert count_params(v32).replicated == 61 * per_layer
    assert indexer_params(v3) == 0 and count_params(v3).replicated == 0


def test_glm_5_2_shares_its_indexers() -> None:
    """GLM-5.2's indexer_types: 21 layers run an indexer, 57 reuse the last one's choice
    (index_topk_freq 4 after 3 full ones), so it holds 57 fewer indexers than GLM-5."""
    glm5, glm52 = find_model("glm-5"), find_model("glm-5.2")
    assert (glm5.index_layers, glm52.index_layers) == (78, 21)
    assert count_params(glm5).total - count_params(glm52).total == 57 * indexer_params(glm5)
    # the same pattern from index_topk_freq and index_skip_topk_offset, without the list
    cfg = json.loads((HF / "glm-5.2.json").read_text())
    del cfg["indexer_types"]
    assert _spec_from(cfg).index_layers == 21


def _spec_from(cfg: dict) -> object:  # type: ignore[type-arg]
    from fabriclens.catalog.hf_config import spec_from_hf_config

    return spec_from_hf_config(cfg, "test", "a test's config")


def test_sparse_attention_keeps_every_key_and_reads_the_top_k() -> None:
    """The indexer keys are cached in FP8 with a float32 scale per 128 values (vLLM's
    DeepseekV32IndexerCache: 132 bytes per token and layer) beside the MLA latent; the cache
    holds every position, attention reads the 2,048 selected, the indexer every key."""
    v32, v3 = find_model("deepseek-v3.2"), find_model("deepseek-v3")
    assert kv_bytes_per_token(v32, 1.0) == kv_bytes_per_token(v3, 1.0) + 61 * 132
    assert cached_tokens(v32, 100_000) == 100_000
    assert attended_tokens(v32, 100_000) == 2048
    assert attended_tokens(v32, 1000) == 1000
    latent = 61 * 576 * 1.0
    assert kv_read_bytes_per_token(v32, 100_000, 1.0) == 2048 * latent + 100_000 * 61 * 132
    assert kv_read_bytes_per_token(v3, 100_000, 1.0) == 100_000 * latent


def test_sparse_attention_narrows_the_prefill_square() -> None:
    """At 128K tokens DeepSeek-V3.2's attention is the top-2048 band (3% of DeepSeek-V3's
    square) and the indexer's full square of 64 x 128-wide dot products (20% of it: 64 x 128
    against 128 heads x (192 + 128)); within 2,048 tokens the indexer only adds to it."""
    v32, v3 = find_model("deepseek-v3.2"), find_model("deepseek-v3")
    long32, long3 = (attention_core_flops_per_token(s, 131072) for s in (v32, v3))
    band = (2 * 2048 - 2048**2 / 131072) / 131072
    assert long32 / long3 == pytest.approx(band + 64 * 128 / (128 * 320))
    short32, short3 = (attention_core_flops_per_token(s, 2048) for s in (v32, v3))
    indexer = 2.0 * 2048 * 64 * 128  # a dot product per head and key, every layer
    assert short32 == pytest.approx(short3 + indexer)


def test_every_tensor_parallel_rank_holds_the_whole_indexer() -> None:
    """vLLM and SGLang keep the indexer replicated ('No tensor parallel, just replicated'): at
    tp 8 each GPU holds all of it and an eighth of the rest."""
    v32, v3 = find_model("deepseek-v3.2"), find_model("deepseek-v3")
    stage = pipeline_stages(61, 1)[0]
    c32, c3 = count_params(v32), count_params(v3)
    extra = stage_share(v32, c32, 8, 1, stage, 1).dense - stage_share(v3, c3, 8, 1, stage, 1).dense
    assert extra == pytest.approx(c32.replicated)


def test_sparse_decode_at_long_context() -> None:
    """Decoding at a 128K context, DeepSeek-V3.2 reads 2,048 latents and the indexer keys where
    DeepSeek-V3 reads every latent: its step is shorter; at a short context the indexer's
    weights, keys and nine kernels a layer make it longer."""
    gpu, vllm = find_gpu("h200"), find_engine("vllm")
    v32, v3 = find_model("deepseek-v3.2"), find_model("deepseek-v3")

    def step(spec, prompt: int) -> float:  # type: ignore[no-untyped-def]
        return estimate_inference(spec, count_params(spec), gpu, NVLINK, vllm, tp=8, pp=1,
                                  batch=8, prompt_tokens=prompt, output_tokens=256,
                                  precision="fp8", kv_precision="fp8").decode_step_s  # fmt: skip

    assert step(v32, 131072) < 0.8 * step(v3, 131072)
    assert step(v32, 512) > step(v3, 512)
    assert extra_kernels(v32) - extra_kernels(v3) == 61 * INDEXER_KERNELS


@pytest.mark.parametrize(
    ("fixture", "change", "match"),
    [
        ("glm-5.2.json", {"indexer_types": ["full", "sometimes"]}, "indexer_types"),
        ("glm-5.2.json", {"indexer_types": ["shared"] * 78}, "indexer_types"),
        ("deepseek-v3.2.json", {"index_n_heads": None}, "index_n_heads"),
        ("deepseek-v3.2.json", {"q_lora_rank": None}, "index_layers"),
        ("nemotron-3-super-120b-a12b.json", {"moe_latent_size": 8192}, "moe_latent"),
        ("nemotron-3.5-lightning-30b-a3b.json", {"layers_block_type": ["mamba", "conv"]},
         "layers_block_type"),
    ],
)  # fmt: skip
def test_what_is_not_modelled_is_refused_in_one_line(
    tmp_path: Path,
    fixture: str,
    change: dict,
    match: str,  # type: ignore[type-arg]
) -> None:
    """A malformed indexer list, a sparse-attention config without its fields, a latent wider
    than the model and an unknown Nemotron block: one line, never a wrong plan."""
    cfg = {**json.loads((HF / fixture).read_text()), **change}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))  # Python's json writes Infinity back as it read it
    with pytest.raises(InputError, match=match) as info:
        find_model(str(path))
    assert "\n" not in str(info.value)


def test_nemotron_blocks_spelled_out() -> None:
    """transformers 5's layers_block_type (Nemotron 3.5 Lightning, num_hidden_layers from its
    length where null) reads as Nemotron 3 Nano's hybrid_override_pattern does."""
    lightning = find_model(str(HF / "nemotron-3.5-lightning-30b-a3b.json"))
    assert count_params(lightning) == count_params(find_model("nemotron-3-nano-30b-a3b"))
    cfg = json.loads((HF / "nemotron-3.5-lightning-30b-a3b.json").read_text())
    cfg["num_hidden_layers"] = None
    assert count_params(_spec_from(cfg)) == count_params(lightning)  # type: ignore[arg-type]


def test_released_formats() -> None:
    """Kimi K2.5's compressed-tensors groups put its routed experts in 4-bit integers: served as
    int4 unless the user says otherwise; MiniMax-M2.5 ships block-scaled FP8; a multimodal
    config's outer tie_word_embeddings reaches its language model."""
    assert find_model(str(HF / "kimi-k2.5.json")).release_precision == "int4"
    assert find_model(str(HF / "minimax-m2.5.json")).release_precision == "fp8"
    cfg = json.loads((HF / "qwen3-vl-8b-instruct.json").read_text())
    cfg["tie_word_embeddings"] = True
    tied = _spec_from(cfg)
    assert tied.tied_embeddings  # type: ignore[attr-defined]
    cfg["text_config"]["tie_word_embeddings"] = False  # the language model's own key wins
    assert not _spec_from(cfg).tied_embeddings  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("fixture", "total", "active"),
    [
        # the names: 120B total, 12B active; 550B total, 55B active (NVIDIA counts the active
        # parameters without the embeddings, as Nemotron 3 Nano's card separates them)
        ("nemotron-3-super-120b-a12b.json", 120e9, 12e9),
        ("nemotron-3-ultra-550b-a55b.json", 550e9, 55e9),
    ],
)
def test_latent_experts_match_the_published_counts(
    fixture: str, total: float, active: float
) -> None:
    """LatentMoE: the router reads the hidden token, fc1_latent_proj takes it down to the latent,
    512 experts of squared ReLU (up and down, no gate) work there, fc2_latent_proj brings the sum
    back; the shared expert works at the hidden width. Its config.json holds time_step_limit
    [0.0, Infinity] as Python's json writes it. Totals within 1%, active within 3% (two
    figures); read as 4x the experts' width, Nemotron 3 Super would count 459B."""
    counts = _counts(fixture)
    assert counts.total == pytest.approx(total, rel=0.01)
    assert counts.active - counts.embedding - counts.lm_head == pytest.approx(active, rel=0.03)


def test_latent_experts_dispatch_their_latent() -> None:
    """A LatentMoE token travels to its experts at the latent width (1,024 of Nemotron 3 Super's
    4,096): the routed copies its expert GEMMs keep and its all-to-all carry a quarter of what a
    hidden-width expert's would; two more GEMM kernels a MoE layer in decode."""
    from fabriclens.model.arch import routed_width
    from fabriclens.model.inference import LATENT_MOE_KERNELS
    from fabriclens.model.moe import routed_input_bytes_per_token

    super_ = find_model("nemotron-3-super-120b-a12b")
    wide = dataclasses.replace(super_, moe_latent=0)
    assert (routed_width(super_), routed_width(wide)) == (1024, 4096)
    assert routed_input_bytes_per_token(super_) == routed_input_bytes_per_token(wide) / 4
    assert extra_kernels(super_) - extra_kernels(wide) == 40 * LATENT_MOE_KERNELS
    experts = count_params(super_).experts
    assert count_params(wide).experts == 4 * experts  # up and down, each 4x wider


def test_nvfp4_weights_are_four_and_a_half_bits() -> None:
    """NVFP4 (fp4): 4-bit E2M1 values and an FP8 scale per 16, 4.5 bits a weight; on a GPU with
    FP4 tensor cores (B200: 9 PFLOPS dense) the prefill's GEMMs run at that peak, elsewhere
    (H100) at 16 bits, and the plan says so. A decode step reads 0.5625 bytes a weight."""
    from fabriclens.model.layout import WEIGHT_BYTES

    spec = find_model("qwen3-235b-a22b")
    kw = dict(tp=8, pp=1, batch=1, prompt_tokens=1024, output_tokens=128, kv_precision="bf16")

    def est(gpu: str, precision: str):  # type: ignore[no-untyped-def]
        return estimate_inference(spec, count_params(spec), find_gpu(gpu), NVLINK,
                                  find_engine("vllm"), precision=precision, **kw)  # type: ignore[arg-type]  # fmt: skip

    assert WEIGHT_BYTES["fp4"] == 0.5625 and find_engine("vllm").bytes_per_weight("fp4") == 0.5625
    fp4, fp8 = est("b200", "fp4"), est("b200", "fp8")
    assert fp4.weights_read_per_step_bytes == pytest.approx(
        fp8.weights_read_per_step_bytes * 0.5625
    )
    assert fp4.prefill_compute_s < fp8.prefill_compute_s  # FP4 tensor cores
    assert est("h100-sxm", "fp4").prefill_compute_s > est("h100-sxm", "fp8").prefill_compute_s


def test_nvfp4_checkpoints_are_read_as_released() -> None:
    """NVIDIA Model Optimizer's NVFP4 checkpoints (quant_method modelopt, quant_algo NVFP4) and
    compressed-tensors' 4-bit floats are served as fp4 unless the user says otherwise."""
    cfg = json.loads((HF / "minimax-m2.5.json").read_text())
    cfg["quantization_config"] = {"quant_method": "modelopt", "quant_algo": "NVFP4"}
    assert _spec_from(cfg).release_precision == "fp4"  # type: ignore[attr-defined]
    group = {"weights": {"num_bits": 4, "type": "float", "group_size": 16}}
    cfg["quantization_config"] = {"quant_method": "compressed-tensors",
                                  "config_groups": {"group_0": group}}  # fmt: skip
    assert _spec_from(cfg).release_precision == "fp4"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--engine", "vllm", "--precision", "fp4", "--kv-precision", "fp4"],
         "KV cache precision 'fp4' is not supported"),
        (["--precision", "fp4"], "training precision 'fp4' is not supported"),
    ],
)  # fmt: skip
def test_fp4_is_a_serving_weight_format(
    argv: list[str], needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """No engine keeps a KV cache in NVFP4, and training here runs bf16, fp16 or fp8: one line."""
    from fabriclens.cli.app import run

    assert run(["plan", "qwen3-30b-a3b", "--gpus", "8", "--gpu", "b200", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and needle in err
