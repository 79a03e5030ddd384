"""Hugging Face config.json → model spec, for every supported model_type."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import FIXTURES
from fabriclens.catalog import find_model
from fabriclens.catalog.load import load_hf_config
from fabriclens.errors import InputError
from fabriclens.model.arch import attended_tokens, count_params, kv_bytes_per_token

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
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_config_json_gives_published_parameter_count(name: str) -> None:
    spec = find_model(str(FIXTURES / "hf" / name))
    assert count_params(spec).total == pytest.approx(EXPECTED[name], rel=2e-3)


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
