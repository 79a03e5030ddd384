"""Hugging Face config.json → model spec, for every supported model_type."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import FIXTURES
from fabriclens.catalog import find_model
from fabriclens.catalog.load import load_hf_config
from fabriclens.errors import InputError
from fabriclens.model.arch import attended_tokens, count_params, kv_bytes_per_token, moe_layers

# Published total parameter counts (model cards / safetensors metadata).
EXPECTED = {
    "llama-3.1-8b.json": 8.030e9,
    "mixtral-8x7b.json": 46.70e9,
    "qwen2.5-7b.json": 7.616e9,
    "mistral-7b.json": 7.242e9,
    "deepseek-v3.json": 671e9,
    "gpt2.json": 124.44e6,
    "pythia-160m.json": 162.32e6,
    "mpt-7b.json": 6.65e9,
    "qwen3-8b.json": 8.2e9,  # model card: 8.2B parameters
    "qwen3-30b-a3b.json": 30.5e9,  # model card: 30.5B total, 3.3B activated
    "gpt-oss-120b.json": 116.83e9,  # model card: 116.83B total
    "gemma-2-9b.json": 9.241705984e9,  # keras-hub gemma2_9b_en preset
    "gemma-3-4b.json": 3.880099328e9,  # keras-hub gemma3_4b_text preset (the language model)
    # 1,026,470,731,056 counted from the safetensors (a public dump of the checkpoint's tensors)
    "kimi-k2-instruct.json": 1.026470731056e12,
    "gpt-j-6b.json": 6.053381344e9,  # model card: n_parameters 6053381344
}

# Published totals and active counts given to two figures (model cards, papers, names): held
# within 2%.
ROUNDED = {
    # dbrx-instruct model card: "132B total parameters of which 36B parameters are active"
    "dbrx-instruct.json": (132e9, 36e9),
    # OLMoE paper (arXiv 2409.02060) and model card: 7B total (6.9B), 1.3B active (NVIDIA
    # Megatron-Bridge's model table; the paper rounds it to 1B)
    "olmoe-1b-7b-0924-sft.json": (6.9e9, 1.3e9),
    # the model's name: 57B total, 14B active
    "qwen2-57b-a14b.json": (57e9, 14e9),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_config_json_gives_published_parameter_count(name: str) -> None:
    spec = find_model(str(FIXTURES / "hf" / name))
    assert count_params(spec).total == pytest.approx(EXPECTED[name], rel=2e-3)


@pytest.mark.parametrize("name", sorted(ROUNDED))
def test_config_json_gives_published_total_and_active_counts(name: str) -> None:
    spec = find_model(str(FIXTURES / "hf" / name))
    counts = count_params(spec)
    total, active = ROUNDED[name]
    assert counts.total == pytest.approx(total, rel=0.02)
    assert counts.active == pytest.approx(active, rel=0.02)


def test_more_families_are_read_as_their_configs_describe_them() -> None:
    """Falcon (its first RefinedWebModel config and the in-library one give one model; the 40B's
    new decoder has 8 KV heads), StarCoder2 (a GELU MLP with biases, LayerNorm, a 4,096-token
    window), Granite and OLMo 2 (llama-like), DBRX's nested blocks, Qwen2-MoE's shared expert
    (20,480 wide: eight experts of 2,560), Kimi K2 (DeepSeek-V3's layout)."""
    hf = FIXTURES / "hf"
    first, later = (
        find_model(str(hf / "falcon-7b-refinedweb.json")),
        find_model(str(hf / "falcon-7b-instruct.json")),
    )
    assert count_params(first) == count_params(later)
    assert (first.kv_heads, first.mlp, first.norm, first.tied_embeddings) == (
        1,
        "gelu",
        "layer",
        True,
    )
    assert find_model(str(hf / "falcon-40b.json")).kv_heads == 8
    sc = find_model(str(hf / "starcoder2-15b.json"))
    assert (sc.mlp, sc.norm, sc.mlp_bias, sc.qkv_bias, sc.sliding_window) == (
        "gelu",
        "layer",
        True,
        True,
        4096,
    )
    assert sc.name == "15b"  # _name_or_path is the file's own path: its folder names it
    granite = find_model(str(hf / "granite-3.1-8b-instruct.json"))
    assert (granite.kv_heads, granite.tied_embeddings, granite.is_moe) == (8, True, False)
    assert find_model(str(hf / "olmo-2-1124-7b.json")).kv_heads == 32
    dbrx = find_model(str(hf / "dbrx-instruct.json"))
    assert (dbrx.experts, dbrx.experts_per_token, dbrx.moe_ffn, dbrx.kv_heads) == (16, 4, 10752, 8)
    qwen = find_model(str(hf / "qwen2-57b-a14b.json"))
    assert (qwen.experts, qwen.experts_per_token, qwen.moe_ffn, qwen.shared_experts) == (
        64,
        8,
        2560,
        8,
    )
    assert qwen.qkv_bias
    kimi = find_model(str(hf / "kimi-k2-instruct.json"))
    assert kimi.is_mla and (kimi.experts, kimi.shared_experts, kimi.first_dense_layers) == (
        384,
        1,
        1,
    )


def _llama_text(model_type: str) -> dict[str, object]:
    return {
        **json.loads((FIXTURES / "hf" / "llama-3.1-8b.json").read_text()),
        "model_type": model_type,
    }


def test_a_multimodal_checkpoint_is_planned_by_its_language_model(tmp_path: Path) -> None:
    """Mistral 3 and LLaVA wrap a text_config (mistral, llama): that model is planned, the same
    as its own config.json; a text_config of an unsupported kind is one clear error."""
    path = tmp_path / "config.json"
    plain = count_params(find_model(str(FIXTURES / "hf" / "llama-3.1-8b.json")))
    for wrapper, inner in (("mistral3", "mistral"), ("llava", "llama")):
        path.write_text(json.dumps({"model_type": wrapper, "text_config": _llama_text(inner),
                                    "vision_config": {"hidden_size": 1024}}))  # fmt: skip
        assert count_params(find_model(str(path))) == plain, wrapper
    path.write_text(json.dumps({"model_type": "llava", "text_config": _llama_text("t5")}))
    with pytest.raises(InputError, match="language model of this llava checkpoint"):
        find_model(str(path))


def test_a_qwen2_moe_expert_width_of_zero_is_one_clear_error(tmp_path: Path) -> None:
    """A width of 0 divided the shared expert's width by zero (exit 3)."""
    cfg = json.loads((FIXTURES / "hf" / "qwen2-57b-a14b.json").read_text())
    path = tmp_path / "config.json"
    for width, message in ((0, "not an expert's width"), (1000, "not a whole number of experts")):
        path.write_text(json.dumps(cfg | {"moe_intermediate_size": width}))
        with pytest.raises(InputError, match=message):
            find_model(str(path))


def test_llama4_scout_shape_and_maverick_interleave(tmp_path: Path) -> None:
    """Llama 4's text_config (transformers' Llama4TextConfig names: intermediate_size for each
    expert and the shared one, intermediate_size_mlp for dense layers) at Scout's published
    shape (5,120 wide, 48 layers, 40 heads, 8 KV heads, 16 experts, top-1, vocabulary 202,048):
    its model card gives 17B active and 109B total (the vision encoder in it, not planned here).
    Maverick (TensorRT-LLM's test copy of its config: 128 experts, interleave_moe_layer_step 2)
    puts MoE in every other layer, the others dense MLPs of intermediate_size_mlp: its card
    gives 17B active and 400B total (vision included). Read as one MoE layer in two, its count
    lands there; read as MoE in every layer it would be 776B."""
    text = {"model_type": "llama4_text", "hidden_size": 5120, "intermediate_size": 8192,
            "intermediate_size_mlp": 16384, "num_attention_heads": 40, "num_key_value_heads": 8,
            "head_dim": 128, "num_hidden_layers": 48, "num_local_experts": 16,
            "num_experts_per_tok": 1, "interleave_moe_layer_step": 1, "vocab_size": 202048}  # fmt: skip
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "llama4", "text_config": text}))
    scout = count_params(find_model(str(path)))
    assert scout.active == pytest.approx(17e9, rel=0.02)
    assert 105e9 < scout.total < 109e9
    maverick = {**text, "num_local_experts": 128, "interleave_moe_layer_step": 2}
    path.write_text(json.dumps({"model_type": "llama4", "text_config": maverick}))
    spec = find_model(str(path))
    assert moe_layers(spec) == 24
    counts = count_params(spec)
    assert counts.active == pytest.approx(17e9, rel=0.02)
    assert 395e9 < counts.total < 402e9
    assert counts == count_params(find_model("llama-4-maverick"))  # the catalog entry agrees
    # an explicit list of MoE layers is read when it is that interleave, refused when not
    listed = {**maverick, "moe_layers": list(range(1, 48, 2))}
    path.write_text(json.dumps({"model_type": "llama4", "text_config": listed}))
    assert moe_layers(find_model(str(path))) == 24
    for bad in ({**maverick, "moe_layers": list(range(0, 48, 2))}, {**maverick, "moe_layers": 7},
                {**maverick, "interleave_moe_layer_step": 0}):  # fmt: skip
        path.write_text(json.dumps({"model_type": "llama4", "text_config": bad}))
        with pytest.raises(InputError, match=r"moe_layers|interleave_moe_layer_step"):
            find_model(str(path))


@pytest.mark.parametrize(
    ("fixture", "entry"),
    [("dbrx-instruct.json", "dbrx"), ("olmoe-1b-7b-0924-sft.json", "olmoe-1b-7b"),
     ("qwen2-57b-a14b.json", "qwen2-57b-a14b"), ("kimi-k2-instruct.json", "kimi-k2"),
     ("falcon-7b-refinedweb.json", "falcon-7b"), ("falcon-40b.json", "falcon-40b"),
     ("granite-3.1-8b-instruct.json", "granite-3.1-8b"), ("gpt-j-6b.json", "gpt-j-6b"),
     ("gpt-neox-20b.json", "gpt-neox-20b"), ("phi-2.json", "phi-2")],
)  # fmt: skip
def test_catalog_entries_equal_their_configs(fixture: str, entry: str) -> None:
    from_file = find_model(str(FIXTURES / "hf" / fixture))
    from_catalog = find_model(entry)
    assert count_params(from_file) == count_params(from_catalog)
    assert kv_bytes_per_token(from_file) == kv_bytes_per_token(from_catalog)
    for field in ("experts", "experts_per_token", "moe_ffn", "shared_experts", "first_dense_layers",
                  "mlp", "norm", "tied_embeddings", "kv_heads", "qkv_bias", "attn_bias",
                  "mlp_bias"):  # fmt: skip
        assert getattr(from_file, field) == getattr(from_catalog, field), (fixture, field)


def test_config_json_matches_catalog_entry() -> None:
    from_file = find_model(str(FIXTURES / "hf" / "llama-3.1-8b.json"))
    from_catalog = find_model("llama-3.1-8b")
    assert count_params(from_file) == count_params(from_catalog)
    assert kv_bytes_per_token(from_file) == kv_bytes_per_token(from_catalog)


def test_gemma_and_phi_configs_match_the_catalog() -> None:
    """Gemma 2 alternates local (4096-token window) and global layers; Gemma 3's released
    text_config leaves out what equals transformers' Gemma3TextConfig defaults (8 heads, 4 KV
    heads, head_dim 256, every 6th layer global); a gemma3 checkpoint is planned by its language
    model. Each equals its catalog entry (sources in models.toml)."""
    for fixture, entry in (("gemma-2-9b.json", "gemma-2-9b"), ("gemma-3-4b.json", "gemma-3-4b"),
                           ("phi-4.json", "phi-4")):  # fmt: skip
        from_file = find_model(str(FIXTURES / "hf" / fixture))
        from_catalog = find_model(entry)
        assert count_params(from_file) == count_params(from_catalog), fixture
        assert kv_bytes_per_token(from_file) == kv_bytes_per_token(from_catalog), fixture
        for field in ("sliding_window", "sliding_window_layers", "head_dim", "max_positions"):
            assert getattr(from_file, field) == getattr(from_catalog, field), (fixture, field)
    g2 = find_model(str(FIXTURES / "hf" / "gemma-2-9b.json"))
    assert (g2.sliding_window, g2.sliding_window_layers, g2.tied_embeddings) == (4096, 21, True)
    g3 = find_model(str(FIXTURES / "hf" / "gemma-3-4b.json"))
    assert (g3.heads, g3.kv_heads, g3.head_dim, g3.sliding_window_layers) == (8, 4, 256, 29)


def test_a_gemma3_config_without_its_text_part_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "config.json"
    bad.write_text('{"model_type": "gemma3", "vision_config": {}}')
    with pytest.raises(InputError, match="no text_config"):
        find_model(str(bad))
    for pattern in (0, -3):  # one global layer in every "pattern": 0 would divide by zero
        bad.write_text(json.dumps({"model_type": "gemma3_text", "hidden_size": 2560,
                                   "intermediate_size": 10240, "num_hidden_layers": 34,
                                   "sliding_window_pattern": pattern}))  # fmt: skip
        with pytest.raises(InputError, match="sliding_window_pattern"):
            find_model(str(bad))


def test_features_are_read() -> None:
    ds = find_model(str(FIXTURES / "hf" / "deepseek-v3.json"))
    assert ds.is_mla and ds.is_moe and ds.first_dense_layers == 3
    assert (ds.expert_groups, ds.expert_groups_per_token) == (8, 4)  # n_group, topk_group
    gpt2 = find_model(str(FIXTURES / "hf" / "gpt2.json"))
    assert gpt2.positions == "learned" and gpt2.tied_embeddings
    qwen = find_model(str(FIXTURES / "hf" / "qwen2.5-7b.json"))
    assert qwen.qkv_bias and qwen.sliding_window == 0
    assert find_model(str(FIXTURES / "hf" / "mistral-7b.json")).sliding_window == 4096
    q3 = find_model(str(FIXTURES / "hf" / "qwen3-30b-a3b.json"))
    assert q3.is_moe and (q3.experts, q3.experts_per_token, q3.moe_ffn) == (128, 8, 768)
    assert q3.head_dim == 128 and q3.first_dense_layers == 0 and not q3.qkv_bias
    assert count_params(q3) == count_params(find_model("qwen3-30b-a3b"))
    assert count_params(find_model(str(FIXTURES / "hf" / "qwen3-8b.json"))) == count_params(
        find_model("qwen3-8b")
    )


def test_gpt_oss_alternates_windowed_and_full_layers() -> None:
    """openai/gpt-oss-120b config.json: layer_types alternate sliding_attention (window 128) and
    full_attention over 36 layers; every projection has a bias; 128 experts, top-4."""
    spec = find_model(str(FIXTURES / "hf" / "gpt-oss-120b.json"))
    assert (spec.sliding_window, spec.sliding_window_layers) == (128, 18)
    assert spec.release_precision == "int4"  # quantization_config quant_method "mxfp4"
    assert spec.qkv_bias and spec.attn_bias and spec.mlp_bias
    assert (spec.experts, spec.experts_per_token, spec.moe_ffn) == (128, 4, 2880)
    assert count_params(spec) == count_params(find_model("gpt-oss-120b"))
    # half the layers attend to 128 keys, half to the whole context: (128 + 8192) / 2 at 8k
    assert attended_tokens(spec, 8192) == 4160.0
    assert attended_tokens(spec, 100) == 100.0


def test_gpt_oss_layer_types_that_are_not_a_list_are_one_clear_error(tmp_path: Path) -> None:
    cfg = json.loads((FIXTURES / "hf" / "gpt-oss-120b.json").read_text())
    cfg["layer_types"] = 5
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    with pytest.raises(InputError, match="layer_types"):
        find_model(str(path))


def test_qwen3_moe_dense_layers_other_than_a_leading_block_are_refused(tmp_path: Path) -> None:
    cfg = json.loads((FIXTURES / "hf" / "qwen3-30b-a3b.json").read_text())
    cfg["mlp_only_layers"] = [0, 1]  # a leading dense block: supported
    path = tmp_path / "lead.json"
    path.write_text(json.dumps(cfg))
    assert find_model(str(path)).first_dense_layers == 2
    cfg["mlp_only_layers"] = [3, 7]
    path.write_text(json.dumps(cfg))
    with pytest.raises(InputError, match="not modelled"):
        find_model(str(path))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", "not valid JSON"),
        ("[1, 2]", "no JSON object"),
        ('{"model_type": "bert"}', "not supported"),
        ('{"model_type": "llama", "hidden_size": 4096}', "has no num_attention_heads"),
        (
            '{"model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": "x", "hidden_size": 1,'
            ' "intermediate_size": 1, "vocab_size": 1}',
            "not a whole number",
        ),
        (  # a whole number as a float too large for any model: once an OverflowError
            '{"model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 1e308, "hidden_size": 64,'
            ' "intermediate_size": 1, "vocab_size": 1}',
            "not a whole number up to 2^53",
        ),
        (
            '{"model_type": "llama", "num_attention_heads": 32, "num_key_value_heads": 5, "num_hidden_layers": 2,'
            ' "hidden_size": 64, "intermediate_size": 1, "vocab_size": 1}',
            "multiple of kv_heads",
        ),
    ],
)
def test_corrupt_config_gives_one_clear_error(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "config.json"
    path.write_text(content)
    with pytest.raises(InputError) as info:
        load_hf_config(path)
    assert message in info.value.message
    assert "\n" not in info.value.message


def test_missing_file_and_directory_lookup(tmp_path: Path) -> None:
    with pytest.raises(InputError):
        find_model(str(tmp_path / "nope.json"))
    (tmp_path / "config.json").write_text(
        json.dumps(json.loads((FIXTURES / "hf" / "gpt2.json").read_text()))
    )
    assert find_model(str(tmp_path)).layers == 12


def test_unknown_name_lists_close_matches() -> None:
    with pytest.raises(InputError) as info:
        find_model("lama-3.1-70b")
    assert "llama-3.1-70b" in info.value.message


def _config_with(tmp_path: Path, folder: str, **extra: str) -> Path:
    cfg = json.loads((FIXTURES / "hf" / "llama-3.1-8b.json").read_text()) | extra
    path = tmp_path / folder / "config.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(cfg))
    return path


def test_a_config_is_named_by_its_name_or_path_before_its_folder(tmp_path: Path) -> None:
    hub = _config_with(tmp_path, "snapshot-1", _name_or_path="meta-llama/Llama-3.1-8B")
    spec = find_model(str(hub))
    assert spec.name == "meta-llama/Llama-3.1-8B"
    assert "name from its _name_or_path" in spec.source
    local = _config_with(tmp_path, "snapshot-2", _name_or_path="/data/models/my-llama/")
    assert find_model(str(local)).name == "my-llama"
    other = _config_with(tmp_path, "snapshot-3", model_name="tuned-8b")
    assert find_model(str(other.parent)).name == "tuned-8b"


def test_a_config_without_a_name_is_named_after_its_folder_and_says_so(tmp_path: Path) -> None:
    bare = _config_with(tmp_path, "llama-local")
    spec = find_model(str(bare))
    assert spec.name == "llama-local"
    assert "name from its folder, as it holds no _name_or_path" in spec.source
    # a file not called config.json names the model itself, not the folder it sits in ("hf")
    assert find_model(str(FIXTURES / "hf" / "gpt2.json")).name == "gpt2"


def test_the_plan_says_where_the_models_name_came_from(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from fabriclens.cli.app import run

    path = _config_with(tmp_path, "x", _name_or_path="Qwen/Qwen2.5-7B")
    assert run(["plan", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["model"]["name"] == "Qwen/Qwen2.5-7B"
    assert "name from its _name_or_path" in doc["model"]["source"]
    assert any(a.startswith("model: Qwen/Qwen2.5-7B (") for a in doc["assumptions"])


@pytest.mark.parametrize(
    ("fixture", "entry", "qk_norm"),
    [("qwen3-8b.json", "qwen3-8b", True), ("qwen3-30b-a3b.json", "qwen3-30b-a3b", True),
     ("olmo-2-1124-7b.json", "olmo-2-7b", True), ("olmoe-1b-7b-0924-sft.json", "olmoe-1b-7b", True),
     ("gemma-3-4b.json", "gemma-3-4b", True), ("gemma-2-9b.json", "gemma-2-9b", False),
     ("llama-3.1-8b.json", "llama-3.1-8b", False), ("qwen2.5-7b.json", "qwen2.5-7b", False)],
)  # fmt: skip
def test_query_and_key_norms_come_from_the_configs_model_type(
    fixture: str, entry: str, qk_norm: bool
) -> None:
    """A config.json's model_type names the family, and the families whose modeling code
    normalises queries and keys (transformers' Qwen3, Qwen3-MoE, OLMo 2, OLMoE and Gemma 3
    attention: q_norm and k_norm) plan those norms, as their catalog entries do; Gemma 2, Llama
    and Qwen2.5 have none."""
    from_file = find_model(str(FIXTURES / "hf" / fixture))
    assert from_file.qk_norm is qk_norm
    assert find_model(entry).qk_norm is qk_norm
