"""Map a Hugging Face ``config.json`` (already parsed) to a :class:`ModelSpec`.

Supported ``model_type``: llama, mistral, qwen2, qwen3, qwen3_moe, mixtral, gpt_oss, deepseek_v3,
gemma2, gemma3 (its ``text_config``: the language model), gemma3_text, phi3, gpt2, gpt_neox, mpt.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fabriclens.catalog.schema import ModelSpec
from fabriclens.errors import InputError

SUPPORTED = ("llama", "mistral", "qwen2", "qwen3", "qwen3_moe", "mixtral", "gpt_oss", "deepseek_v3",
             "gemma2", "gemma3", "gemma3_text", "phi3", "gpt2", "gpt_neox", "mpt")  # fmt: skip

# The keys a Gemma config.json may leave out, at the defaults of transformers' Gemma2Config and
# Gemma3TextConfig (configuration_gemma2.py, configuration_gemma3.py): the released Gemma 3
# text_configs list only what differs from them.
GEMMA_DEFAULTS: dict[str, dict[str, Any]] = {
    "gemma2": {"vocab_size": 256000, "head_dim": 256, "max_position_embeddings": 8192,
               "tie_word_embeddings": True, "sliding_window": 4096},
    "gemma3_text": {"vocab_size": 262208, "head_dim": 256, "max_position_embeddings": 131072,
                    "tie_word_embeddings": True, "sliding_window": 4096, "num_attention_heads": 8,
                    "num_key_value_heads": 4, "sliding_window_pattern": 6},
}  # fmt: skip


# quantization_config.quant_method -> the precision serving the checkpoint takes by default
RELEASED_FORMATS = {"mxfp4": "int4", "fp8": "fp8"}


def _get(cfg: Mapping[str, Any], *keys: str, default: Any = None) -> Any:
    for key in keys:
        if cfg.get(key) is not None:
            return cfg[key]
    return default


def _int(cfg: Mapping[str, Any], *keys: str, default: int | None = None) -> int:
    value = _get(cfg, *keys, default=default)
    if value is None:
        raise InputError(
            f"config.json has no {' / '.join(keys)}", "is this a complete config.json?"
        )
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        raise InputError(
            f"config.json field {keys[0]} = {value!r} is not a whole number", "fix the file"
        )
    return int(value)


NAME_KEYS = ("_name_or_path", "name_or_path", "model_name")


def name_in_config(cfg: Mapping[str, Any]) -> tuple[str, str] | None:
    """The model's name as the config.json records it, and the key it came from; None if absent.

    ``save_pretrained`` writes ``_name_or_path``: a Hub id (``meta-llama/Llama-3.1-8B``), kept
    whole, or the local folder it was loaded from, of which only the last part names the model.
    """
    for key in NAME_KEYS:
        value = cfg.get(key)
        if not isinstance(value, str) or not value.strip():
            continue
        text = value.strip().replace("\\", "/").rstrip("/")
        is_hub_id = text.count("/") <= 1 and not text.startswith((".", "/", "~"))
        name = text if is_hub_id else text.rsplit("/", 1)[-1]
        if name and name not in (".", ".."):
            return name, key
    return None


def _qwen3_moe_dense_prefix(cfg: Mapping[str, Any], layers: int) -> int:
    """Qwen3-MoE's dense layers (``mlp_only_layers``, ``decoder_sparse_step``) as the leading
    dense layers the model supports; other patterns are not modelled."""
    step = _int(cfg, "decoder_sparse_step", default=1)
    dense = cfg.get("mlp_only_layers") or []
    if not isinstance(dense, list) or not all(isinstance(i, int) for i in dense):
        raise InputError(
            f"config.json field mlp_only_layers = {dense!r} is not a list of layers", "fix the file"
        )
    if step != 1 or sorted(dense) != list(range(len(dense))) or len(dense) > layers:
        raise InputError(
            "config.json: MoE layers other than after a block of leading dense layers are not modelled",
            "describe it with --layers/--hidden/--heads/--experts flags",
        )
    return len(dense)


def _windowed_layers(cfg: Mapping[str, Any]) -> int:
    """Layers whose ``layer_types`` entry is ``sliding_attention`` (0 without the list)."""
    layer_types = cfg.get("layer_types") or []
    if not isinstance(layer_types, list):
        raise InputError(
            f"config.json field layer_types = {layer_types!r} is not a list", "fix the file"
        )
    return sum(1 for t in layer_types if t == "sliding_attention")


def spec_from_hf_config(cfg: Mapping[str, Any], name: str, source: str) -> ModelSpec:
    """Build a model spec from a parsed config.json; raises InputError on what it can't use."""
    model_type = str(cfg.get("model_type", "")).lower()
    if model_type not in SUPPORTED:
        raise InputError(
            f"config.json model_type {model_type or '(missing)'!r} is not supported",
            f"supported: {', '.join(SUPPORTED)}; or describe it with --layers/--hidden/--heads flags",
        )
    if model_type == "gemma3":  # the multimodal checkpoint: plan its language model
        text = cfg.get("text_config")
        if not isinstance(text, Mapping):
            raise InputError("config.json of model_type gemma3 has no text_config", "fix the file")
        return spec_from_hf_config({**text, "model_type": "gemma3_text"}, name, source)
    if model_type in GEMMA_DEFAULTS:
        cfg = {**GEMMA_DEFAULTS[model_type], **{k: v for k, v in cfg.items() if v is not None}}
    fields: dict[str, Any] = {"name": name, "title": name, "family": model_type, "source": source}
    if model_type == "gpt2":
        hidden = _int(cfg, "n_embd")
        fields.update(
            layers=_int(cfg, "n_layer"),
            hidden=hidden,
            heads=_int(cfg, "n_head"),
            ffn=_int(cfg, "n_inner", default=4 * hidden),
            vocab=_int(cfg, "vocab_size"),
            max_positions=_int(cfg, "n_positions", default=1024),
            tied_embeddings=True,
            mlp="gelu",
            positions="learned",
            norm="layer",
            attn_bias=True,
            qkv_bias=True,
            mlp_bias=True,
        )
    elif model_type == "mpt":
        hidden = _int(cfg, "d_model")
        no_bias = bool(cfg.get("no_bias", True))
        fields.update(
            layers=_int(cfg, "n_layers"),
            hidden=hidden,
            heads=_int(cfg, "n_heads"),
            ffn=int(hidden * float(_get(cfg, "expansion_ratio", default=4))),
            vocab=_int(cfg, "vocab_size"),
            max_positions=_int(cfg, "max_seq_len", default=2048),
            tied_embeddings=True,
            mlp="gelu",
            positions="alibi",
            norm="layer",
            attn_bias=not no_bias,
            qkv_bias=not no_bias,
            mlp_bias=not no_bias,
        )
    elif model_type == "gpt_neox":
        hidden = _int(cfg, "hidden_size")
        fields.update(
            layers=_int(cfg, "num_hidden_layers"),
            hidden=hidden,
            heads=_int(cfg, "num_attention_heads"),
            ffn=_int(cfg, "intermediate_size", default=4 * hidden),
            vocab=_int(cfg, "vocab_size"),
            max_positions=_int(cfg, "max_position_embeddings", default=2048),
            tied_embeddings=bool(cfg.get("tie_word_embeddings", False)),
            mlp="gelu",
            norm="layer",
            attn_bias=True,
            qkv_bias=True,
            mlp_bias=True,
        )
    else:  # llama-like: llama, mistral, qwen2, qwen3(_moe), mixtral, gpt_oss, deepseek_v3, gemma, phi3
        heads = _int(cfg, "num_attention_heads")
        fields.update(
            layers=_int(cfg, "num_hidden_layers"),
            hidden=_int(cfg, "hidden_size"),
            heads=heads,
            kv_heads=_int(cfg, "num_key_value_heads", default=heads),
            head_dim=_int(cfg, "head_dim", default=0),
            ffn=_int(cfg, "intermediate_size"),
            vocab=_int(cfg, "vocab_size"),
            max_positions=_int(cfg, "max_position_embeddings", default=4096),
            tied_embeddings=bool(cfg.get("tie_word_embeddings", False)),
            qkv_bias=model_type == "qwen2" or bool(cfg.get("attention_bias", False)),
            sliding_window=_int(cfg, "sliding_window", default=0)
            if cfg.get("use_sliding_window", model_type == "mistral")
            else 0,
        )
        if model_type in GEMMA_DEFAULTS:
            # local (windowed) and global layers: layer_types where given, else Gemma 2's
            # alternation (local first) or Gemma 3's pattern (every 6th layer global)
            layers = fields["layers"]
            pattern = 2 if model_type == "gemma2" else _int(cfg, "sliding_window_pattern")
            if pattern < 1:
                raise InputError(
                    f"config.json field sliding_window_pattern = {pattern} is below 1",
                    "fix the file (Gemma 3: 6, one global layer in six)",
                )
            windowed = _windowed_layers(cfg) if "layer_types" in cfg else layers - layers // pattern
            fields.update(
                sliding_window=_int(cfg, "sliding_window") if windowed else 0,
                sliding_window_layers=windowed if windowed < layers else 0,
            )
        if model_type == "mixtral":
            fields.update(
                experts=_int(cfg, "num_local_experts"),
                experts_per_token=_int(cfg, "num_experts_per_tok"),
                moe_ffn=_int(cfg, "intermediate_size"),
            )
        if model_type == "gpt_oss":
            # every projection has a bias; windowed and full-attention layers alternate
            # (layer_types); the experts are the MLP (intermediate_size each)
            windowed = _windowed_layers(cfg)
            fields.update(
                experts=_int(cfg, "num_local_experts"),
                experts_per_token=_int(cfg, "num_experts_per_tok", "experts_per_token"),
                moe_ffn=_int(cfg, "intermediate_size"),
                attn_bias=bool(cfg.get("attention_bias", True)),
                qkv_bias=bool(cfg.get("attention_bias", True)),
                mlp_bias=True,
                sliding_window=_int(cfg, "sliding_window", default=0) if windowed else 0,
                sliding_window_layers=windowed if windowed < fields["layers"] else 0,
            )
        if model_type == "qwen3_moe":
            fields.update(
                experts=_int(cfg, "num_experts"),
                experts_per_token=_int(cfg, "num_experts_per_tok"),
                moe_ffn=_int(cfg, "moe_intermediate_size"),
                first_dense_layers=_qwen3_moe_dense_prefix(cfg, fields["layers"]),
            )
        if model_type == "deepseek_v3":
            fields.update(
                experts=_int(cfg, "n_routed_experts"),
                experts_per_token=_int(cfg, "num_experts_per_tok"),
                moe_ffn=_int(cfg, "moe_intermediate_size"),
                shared_experts=_int(cfg, "n_shared_experts", default=0),
                expert_groups=_int(cfg, "n_group", default=0),
                expert_groups_per_token=_int(cfg, "topk_group", default=0),
                first_dense_layers=_int(cfg, "first_k_dense_replace", default=0),
                q_lora_rank=_int(cfg, "q_lora_rank", default=0),
                kv_lora_rank=_int(cfg, "kv_lora_rank"),
                qk_rope_head_dim=_int(cfg, "qk_rope_head_dim"),
                qk_nope_head_dim=_int(cfg, "qk_nope_head_dim"),
                v_head_dim=_int(cfg, "v_head_dim"),
                head_dim=0,
            )
    quant = cfg.get("quantization_config")
    method = str(quant.get("quant_method", "")).lower() if isinstance(quant, Mapping) else ""
    if method in RELEASED_FORMATS:  # the format the checkpoint's weights are in
        fields["release_precision"] = RELEASED_FORMATS[method]
    fields.setdefault("kv_heads", fields["heads"])
    try:
        return ModelSpec(**fields)
    except (TypeError, ValueError) as exc:
        raise InputError(f"config.json: {exc}", "fix the file") from None
