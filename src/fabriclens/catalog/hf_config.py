"""Map a Hugging Face ``config.json`` (already parsed) to a :class:`ModelSpec`.

Supported ``model_type``: the llama-like families (llama, mistral, qwen2, qwen3, olmo, olmo2,
granite, cohere, smollm3, glm4, phi3, gemma2, gemma3_text), their mixtures of experts (mixtral,
qwen2_moe, qwen3_moe, olmoe, glm4_moe, gpt_oss, minimax_m2, deepseek_v2, deepseek_v3, kimi_k2,
glm4_moe_lite (GLM-4.7-Flash: DeepSeek's layout), dbrx; deepseek_v32 and glm_moe_dsa, DeepSeek's
layout with sparse attention's lightning indexer; and the hybrid qwen3_next, whose
linear-attention layers are Gated DeltaNets), falcon, starcoder2, gpt2, gpt_neox, gptj, phi, mpt, and the
multimodal checkpoints whose language model is one of them (gemma3, llama4, mistral3, llava,
llava_next, qwen3_vl, qwen3_vl_moe, kimi_k25, and the hybrids qwen3_5, qwen3_5_moe: their
``text_config``; the vision encoder is not planned), and the Mamba-2 hybrids granitemoehybrid
(Granite 4.0-H) and nemotron_h (Nemotron-H and Nemotron 3, whose blocks hold a mixer or an MLP,
Super's and Ultra's experts in a latent).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from fabriclens.catalog.schema import ModelSpec
from fabriclens.errors import InputError

# the same keys as LlamaConfig (hidden_size, num_attention_heads, num_key_value_heads,
# intermediate_size, num_hidden_layers, vocab_size) and a gated (SwiGLU) MLP; what each adds
# (QK norms, logit and residual multipliers, partial rotary) moves no weights or FLOPs that count
LLAMA_LIKE = ("llama", "mistral", "qwen2", "qwen3", "olmo", "olmo2", "granite", "cohere",
              "smollm3", "glm4", "phi3", "gemma2", "gemma3_text", "qwen3_5_text",
              "qwen3_vl_text")  # fmt: skip
MIXTURES = ("mixtral", "qwen2_moe", "qwen3_moe", "qwen3_next", "qwen3_5_moe_text", "olmoe",
            "glm4_moe", "gpt_oss", "deepseek_v2", "deepseek_v3", "kimi_k2", "dbrx",
            "qwen3_vl_moe_text", "minimax_m2", "deepseek_v32", "glm_moe_dsa",
            "glm4_moe_lite")  # fmt: skip
# hybrids of Gated DeltaNet (linear attention) and gated softmax-attention layers: Qwen3-Next and
# Qwen3.5, whose language model shares Qwen3-Next's layers (vLLM's Qwen3_5MoeConfig: "the same
# hybrid GDN (GatedDeltaNet) architecture as Qwen3-Next")
HYBRIDS = ("qwen3_next", "qwen3_5_text", "qwen3_5_moe_text")
# IBM's Granite 4.0 hybrids: Mamba-2 and GQA attention layers (layer_types "mamba" / "attention"),
# each with a shared MLP and, in the mixture-of-experts sizes, routed experts beside it
MAMBA_HYBRIDS = ("granitemoehybrid", "nemotron_h")
# Falcon's first releases name it RefinedWebModel (7B) and RefinedWeb (40B)
OTHERS = ("falcon", "refinedwebmodel", "refinedweb", "starcoder2", "gpt2", "gpt_neox", "mpt", "phi",
          "gptj")  # fmt: skip
# multimodal checkpoints: the language model is their text_config
MULTIMODAL = {"gemma3": "gemma3_text", "llama4": "llama4_text", "mistral3": "", "llava": "",
              "llava_next": "", "qwen3_5": "qwen3_5_text", "qwen3_5_moe": "qwen3_5_moe_text",
              "qwen3_vl": "qwen3_vl_text", "qwen3_vl_moe": "qwen3_vl_moe_text",
              "kimi_k25": ""}  # fmt: skip
# what a multimodal config.json may keep beside its text_config and not in it, and that belongs
# to the language model (Qwen3-VL: tie_word_embeddings; NVIDIA's Kimi-K2.5 NVFP4: the weights'
# quantization_config)
OUTER_KEYS = ("tie_word_embeddings", "quantization_config")
SUPPORTED = (*LLAMA_LIKE, *MIXTURES, *OTHERS, *MULTIMODAL, *MAMBA_HYBRIDS, "llama4_text")
# DeepSeek's layout (multi-head latent attention, shared experts, dense first layers, routing
# groups) under other names
DEEPSEEK_LIKE = ("deepseek_v2", "deepseek_v3", "kimi_k2", "deepseek_v32", "glm_moe_dsa",
                 "glm4_moe_lite")  # fmt: skip
# ... and with DeepSeek Sparse Attention's lightning indexer (DeepSeek-V3.2, GLM-5)
SPARSE_ATTENTION = ("deepseek_v32", "glm_moe_dsa")

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
# NVIDIA Model Optimizer checkpoints (quant_method "modelopt") name their format in quant_algo
MODELOPT_FORMATS = {"nvfp4": "fp4", "fp8": "fp8"}
# compressed-tensors' weight formats (num_bits, type) -> the planner's precision
COMPRESSED_FORMATS = {
    (4, "int"): "int4",
    (8, "int"): "int8",
    (8, "float"): "fp8",
    (4, "float"): "fp4",
}


# the largest whole number a config field may hold, as the CLI's own counts (2^53: every integer
# up to it is exact as a float, so no product of a few such fields overflows)
MAX_CONFIG_INT = 2**53


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
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value != int(value)
        or abs(value) > MAX_CONFIG_INT
    ):
        raise InputError(
            f"config.json field {keys[0]} = {value!r} is not a whole number up to 2^53",
            "fix the file",
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
        if text.endswith("/config.json"):  # the file itself: its folder names the model
            text = text.removesuffix("/config.json")
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


def _layer_kinds(
    cfg: Mapping[str, Any], layers: int, *keys: str, empty_ok: bool = False
) -> list[Any] | None:
    """A hybrid's list of layer kinds under the first of ``keys`` the config has (None without
    one); refused unless it names all ``layers`` layers (or, ``empty_ok``, none of them)."""
    kinds = _get(cfg, *keys)
    if kinds is not None and (
        not isinstance(kinds, list) or (len(kinds) != layers and not (empty_ok and not kinds))
    ):
        raise InputError(
            f"config.json field {keys[0]} is not a list of {layers} layer kinds", "fix the file"
        )
    return kinds


def _linear_attention(cfg: Mapping[str, Any], layers: int) -> dict[str, Any]:
    """Qwen3-Next's (and Qwen3.5's) hybrid layout (transformers Qwen3NextConfig): ``layer_types`` names each
    layer ``linear_attention`` (a Gated DeltaNet) or ``full_attention``; without the list, one
    layer in every ``full_attention_interval`` (default 4) is full attention, the others linear.
    Its full-attention layers gate their output (q_proj twice as wide)."""
    layer_types = _layer_kinds(cfg, layers, "layer_types")
    if layer_types is not None:
        linear = sum(1 for t in layer_types if t == "linear_attention")
    else:
        interval = _int(cfg, "full_attention_interval", default=4)
        if interval < 1:
            raise InputError(
                f"config.json field full_attention_interval = {interval} is below 1",
                "fix the file (Qwen3-Next: 4)",
            )
        linear = layers - layers // interval
    return dict(
        linear_layers=linear,
        linear_key_heads=_int(cfg, "linear_num_key_heads", default=16),
        linear_value_heads=_int(cfg, "linear_num_value_heads", default=32),
        linear_key_dim=_int(cfg, "linear_key_head_dim", default=128),
        linear_value_dim=_int(cfg, "linear_value_head_dim", default=128),
        linear_conv=_int(cfg, "linear_conv_kernel_dim", default=4),
        attn_output_gate=True,
    )


def _granite_hybrid(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """transformers' GraniteMoeHybridConfig: Mamba-2 layers where ``layer_types`` says "mamba"
    (mamba_n_heads heads of mamba_d_head, "auto": mamba_expand x hidden / heads; a state of
    mamba_d_state over mamba_n_groups groups), every layer's MLP the shared one
    (shared_intermediate_size) plus, with num_local_experts, routed experts of
    intermediate_size (the shared MLP counted as that many experts' width)."""
    hidden, heads = _int(cfg, "hidden_size"), _int(cfg, "num_attention_heads")
    layers = _int(cfg, "num_hidden_layers")
    layer_types = _layer_kinds(cfg, layers, "layer_types", "layers_block_type", empty_ok=True) or []
    mamba = sum(1 for t in layer_types if t == "mamba")
    shared = _int(cfg, "shared_intermediate_size")
    experts = _int(cfg, "num_local_experts", default=0)
    fields: dict[str, Any] = dict(
        layers=layers, hidden=hidden, heads=heads,
        kv_heads=_int(cfg, "num_key_value_heads", default=heads),
        ffn=shared, vocab=_int(cfg, "vocab_size"),
        max_positions=_int(cfg, "max_position_embeddings", default=4096),
        tied_embeddings=bool(cfg.get("tie_word_embeddings", True)),
        qkv_bias=bool(cfg.get("attention_bias", False)),
    )  # fmt: skip
    if experts:
        width = _int(cfg, "intermediate_size")
        if width < 1 or shared % width:
            raise InputError(
                f"config.json: a shared MLP of {shared} is not a whole number of experts of {width}",
                "describe it with --layers/--hidden/--heads/--experts flags",
            )
        fields.update(experts=experts, experts_per_token=_int(cfg, "num_experts_per_tok"),
                      moe_ffn=width, shared_experts=shared // width)  # fmt: skip
    if mamba:
        n_heads = _int(cfg, "mamba_n_heads", default=128)
        d_head = cfg.get("mamba_d_head", "auto")
        if d_head == "auto":
            d_head = _int(cfg, "mamba_expand", default=2) * hidden // max(1, n_heads)
        fields.update(
            linear_layers=mamba,
            linear_kind="mamba2",
            linear_value_heads=n_heads,
            linear_value_dim=_int({"mamba_d_head": d_head}, "mamba_d_head"),
            linear_key_heads=_int(cfg, "mamba_n_groups", default=1),
            linear_key_dim=_int(cfg, "mamba_d_state", default=256),
            linear_conv=_int(cfg, "mamba_d_conv", default=4),
        )
    return fields


# transformers 5's NemotronHConfig names each block in layers_block_type; the letters of the
# older hybrid_override_pattern
NEMOTRON_BLOCKS = {"mamba": "M", "attention": "*", "mlp": "-", "moe": "E"}


def _nemotron_h(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """NVIDIA's Nemotron-H (transformers' / its remote code's NemotronHConfig): blocks that hold one
    thing each, as ``hybrid_override_pattern`` spells them: M a Mamba-2 mixer, * attention, - a
    dense MLP (squared ReLU, not gated), E a mixture of experts. Planned as layers of a mixer and
    an MLP: the mixers are the layers, and those beyond the MLP blocks' count have no MLP."""
    pattern = cfg.get("hybrid_override_pattern")
    kinds = cfg.get("layers_block_type")
    if pattern is None and kinds is not None:  # transformers 5 spells the blocks out
        if not isinstance(kinds, list) or any(k not in NEMOTRON_BLOCKS for k in kinds):
            raise InputError(
                "config.json field layers_block_type is not a list of "
                + ", ".join(f'"{k}"' for k in NEMOTRON_BLOCKS),
                "fix the file",
            )
        pattern = "".join(NEMOTRON_BLOCKS[k] for k in kinds)
    blocks = _int(
        cfg, "num_hidden_layers", default=len(pattern) if isinstance(pattern, str) else None
    )
    if not isinstance(pattern, str) or len(pattern) != blocks or set(pattern) - set("M*-E"):
        raise InputError(
            f"config.json field hybrid_override_pattern is not {blocks} of M, *, - and E",
            "fix the file",
        )
    mamba, attention = pattern.count("M"), pattern.count("*")
    dense, moe = pattern.count("-"), pattern.count("E")
    layers = mamba + attention
    if (dense and moe) or not layers or dense + moe > layers:
        raise InputError(
            f"config.json: Nemotron-H blocks {mamba} M, {attention} *, {dense} -, {moe} E: only "
            "mixers with dense or with expert MLPs, no more MLPs than mixers, are modelled",
            "describe it with --layers/--hidden/--heads flags",
        )
    heads = _int(cfg, "num_attention_heads")
    hidden = _int(cfg, "hidden_size")
    fields: dict[str, Any] = dict(
        layers=layers, hidden=hidden, heads=heads,
        kv_heads=_int(cfg, "num_key_value_heads", default=heads),
        head_dim=_int(cfg, "head_dim", "attention_head_dim", default=0),
        ffn=_int(cfg, "moe_intermediate_size") if moe else _int(cfg, "intermediate_size"),
        vocab=_int(cfg, "vocab_size"), mlp="gelu",
        max_positions=_int(cfg, "max_position_embeddings", default=4096),
        tied_embeddings=bool(cfg.get("tie_word_embeddings", False)),
        mlp_free_layers=layers - dense - moe,
        linear_layers=mamba, linear_kind="mamba2",
        linear_value_heads=_int(cfg, "mamba_num_heads"),
        linear_value_dim=_int(cfg, "mamba_head_dim"),
        linear_key_heads=_int(cfg, "n_groups", default=1),
        linear_key_dim=_int(cfg, "ssm_state_size"),
        linear_conv=_int(cfg, "conv_kernel", default=4),
    )  # fmt: skip
    if moe:
        width = fields["ffn"]
        shared = _int(cfg, "moe_shared_expert_intermediate_size", default=0)
        if width < 1 or shared % width:
            raise InputError(
                f"config.json: a shared expert of {shared} is not a whole number of experts of {width}",
                "describe it with --layers/--hidden/--heads/--experts flags",
            )
        fields.update(experts=_int(cfg, "n_routed_experts"), moe_ffn=width,
                      experts_per_token=_int(cfg, "num_experts_per_tok"),
                      shared_experts=shared // width,
                      # LatentMoE (Nemotron 3 Super, Ultra): the experts work in this latent
                      moe_latent=_int(cfg, "moe_latent_size", default=0))  # fmt: skip
    return fields


def _text_config(cfg: Mapping[str, Any], model_type: str) -> dict[str, Any]:
    """A multimodal checkpoint's language model: its text_config, typed."""
    text = cfg.get("text_config")
    if text is None and MULTIMODAL[model_type].startswith("qwen3_5"):
        text = cfg  # a text-only Qwen3.5 export keeps the language model's keys at the top
    if not isinstance(text, Mapping):
        raise InputError(
            f"config.json of model_type {model_type} has no text_config", "fix the file"
        )
    inner = MULTIMODAL[model_type] or str(text.get("model_type", "")).lower()
    if inner not in SUPPORTED or inner in MULTIMODAL:
        raise InputError(
            f"config.json: the language model of this {model_type} checkpoint has model_type "
            f"{inner or '(missing)'!r}, which is not supported",
            "describe it with --layers/--hidden/--heads flags",
        )
    outer = {k: cfg[k] for k in OUTER_KEYS if k in cfg and k not in text and text is not cfg}
    return {**text, **outer, "model_type": inner}


def _moe_layer_step(cfg: Mapping[str, Any], key: str, layers: int, model_type: str) -> int:
    """One MoE layer in every ``key`` layers (Llama 4 Maverick: 2, the others dense). An explicit
    list of MoE layers (``moe_layers``) must be that interleave: another placement is refused."""
    step = _int(cfg, key, default=1)
    if step < 1 or step > layers:
        raise InputError(
            f"config.json: {key} {step} is not between 1 and num_hidden_layers ({layers})",
            "fix the file",
        )
    listed = cfg.get("moe_layers")
    if listed is not None and listed != list(range(step - 1, layers, step)):
        raise InputError(
            f"config.json: {model_type}'s moe_layers list is not one MoE layer in every {step} "
            "(only that interleave and leading dense layers are modelled)",
            "describe it with --layers/--hidden/--heads/--experts flags",
        )
    return step


def _llama_like(cfg: Mapping[str, Any], model_type: str) -> dict[str, Any]:
    heads = _int(cfg, "num_attention_heads")
    windowed = _windowed_layers(cfg)
    layers = _int(cfg, "num_hidden_layers")
    if windowed:  # layer_types names the windowed layers (gpt-oss, OLMo 3, Gemma)
        window = _int(cfg, "sliding_window")
        partial = windowed if windowed < layers else 0
    elif cfg.get("use_sliding_window", model_type in ("mistral", "starcoder2")):
        window, partial = _int(cfg, "sliding_window", default=0), 0
    else:
        window, partial = 0, 0
    return dict(
        layers=layers,
        hidden=_int(cfg, "hidden_size"),
        heads=heads,
        kv_heads=_int(cfg, "num_key_value_heads", default=heads),
        head_dim=_int(cfg, "head_dim", default=0),
        # a mixture with experts in every layer has no dense MLP: a config may leave its width out
        ffn=_int(
            cfg,
            "intermediate_size",
            default=cfg.get("moe_intermediate_size") if model_type in MIXTURES else None,
        ),
        vocab=_int(cfg, "vocab_size"),
        max_positions=_int(cfg, "max_position_embeddings", default=4096),
        tied_embeddings=bool(cfg.get("tie_word_embeddings", False)),
        qkv_bias=model_type in ("qwen2", "qwen2_moe") or bool(cfg.get("attention_bias", False)),
        sliding_window=window,
        sliding_window_layers=partial,
    )


def _mixture(cfg: Mapping[str, Any], model_type: str, layers: int) -> dict[str, Any]:
    """The expert fields of each mixture family, by its config's names."""
    if model_type in ("mixtral", "olmoe", "gpt_oss", "minimax_m2"):  # the experts are the MLP
        return dict(
            experts=_int(cfg, "num_local_experts", "num_experts"),
            experts_per_token=_int(cfg, "num_experts_per_tok", "experts_per_token"),
            moe_ffn=_int(cfg, "intermediate_size"),
        )
    if model_type in ("qwen2_moe", "qwen3_moe", "qwen3_next", "qwen3_5_moe_text",
                      "qwen3_vl_moe_text"):  # fmt: skip
        moe_ffn = _int(cfg, "moe_intermediate_size")
        shared = _int(cfg, "shared_expert_intermediate_size", default=0)
        if moe_ffn < 1:
            raise InputError(
                f"config.json field moe_intermediate_size = {moe_ffn} is not an expert's width",
                "fix the file",
            )
        if shared % moe_ffn:
            raise InputError(
                f"config.json: a shared expert of {shared} is not a whole number of experts of "
                f"{moe_ffn}",
                "describe it with --layers/--hidden/--heads/--experts flags",
            )
        return dict(
            experts=_int(cfg, "num_experts"),
            experts_per_token=_int(cfg, "num_experts_per_tok"),
            moe_ffn=moe_ffn,
            # Qwen2-MoE's shared expert is one MLP as wide as that many routed experts
            shared_experts=shared // moe_ffn,
            first_dense_layers=_qwen3_moe_dense_prefix(cfg, layers),
        )
    if model_type == "llama4_text":  # Llama 4: each MoE layer adds one shared expert
        return dict(
            experts=_int(cfg, "num_local_experts"),
            experts_per_token=_int(cfg, "num_experts_per_tok"),
            moe_ffn=_int(cfg, "intermediate_size"),
            ffn=_int(cfg, "intermediate_size_mlp", "intermediate_size"),
            shared_experts=1,
            moe_layer_step=_moe_layer_step(cfg, "interleave_moe_layer_step", layers, model_type),
        )
    # DeepSeek's names: DeepSeek-V2/V3, Kimi K2, GLM-4.5
    return dict(
        experts=_int(cfg, "n_routed_experts"),
        experts_per_token=_int(cfg, "num_experts_per_tok"),
        moe_ffn=_int(cfg, "moe_intermediate_size"),
        shared_experts=_int(cfg, "n_shared_experts", default=0),
        expert_groups=_int(cfg, "n_group", default=0),
        expert_groups_per_token=_int(cfg, "topk_group", default=0),
        first_dense_layers=_int(cfg, "first_k_dense_replace", default=0),
    )


def _released_format(quant: Any) -> str:
    """The precision a checkpoint's quantization_config puts its weights in ("" for none the
    planner has): the quant_method (RELEASED_FORMATS), or for compressed-tensors the one format
    all its config_groups give the weights they target (Kimi K2.5: 4-bit integers in groups of
    32, its routed experts; attention and the shared experts stay 16-bit, as gpt-oss's do)."""
    if not isinstance(quant, Mapping):
        return ""
    method = str(quant.get("quant_method", "")).lower()
    if method == "modelopt":
        return MODELOPT_FORMATS.get(str(quant.get("quant_algo", "")).lower(), "")
    if method != "compressed-tensors":
        return RELEASED_FORMATS.get(method, "")
    groups = quant.get("config_groups")
    if not isinstance(groups, Mapping) or not groups:
        return ""
    formats: set[tuple[object, str]] = set()
    for group in groups.values():
        weights = group.get("weights") if isinstance(group, Mapping) else None
        if not isinstance(weights, Mapping):
            return ""
        formats.add((weights.get("num_bits"), str(weights.get("type", "")).lower()))
    if len(formats) != 1:
        return ""
    bits, kind = formats.pop()
    return COMPRESSED_FORMATS.get((bits, kind), "") if isinstance(bits, int) else ""


def _indexer_layers(cfg: Mapping[str, Any], layers: int) -> int:
    """How many layers run their own lightning indexer: every one (DeepSeek-V3.2, GLM-5), or
    those ``indexer_types`` names "full", the rest "shared", reusing the last full layer's
    choice (GLM-5.2). Without the list, transformers' GlmMoeDsaConfig derives it from
    ``index_topk_pattern`` (F/S) or ``index_topk_freq`` and ``index_skip_topk_offset``."""
    kinds = cfg.get("indexer_types")
    pattern = cfg.get("index_topk_pattern")
    if kinds is None and isinstance(pattern, str):
        kinds = [{"F": "full", "S": "shared"}.get(c, c) for c in pattern]
    if kinds is None:
        freq = max(_int(cfg, "index_topk_freq", default=1), 1)
        offset = _int(cfg, "index_skip_topk_offset", default=2)
        return sum(1 for i in range(layers) if max(i - offset + 1, 0) % freq == 0)
    if (
        not isinstance(kinds, list)
        or len(kinds) != layers
        or any(k not in ("full", "shared") for k in kinds)
        or kinds[0] != "full"
    ):
        raise InputError(
            f'config.json field indexer_types is not {layers} of "full" and "shared", '
            'starting with "full"',
            "fix the file",
        )
    return kinds.count("full")


def _sparse_attention(cfg: Mapping[str, Any], layers: int) -> dict[str, Any]:
    """DeepSeek Sparse Attention's fields (DeepSeek-V3.2-Exp's and GLM-5's config.json)."""
    return dict(
        index_heads=_int(cfg, "index_n_heads"),
        index_head_dim=_int(cfg, "index_head_dim"),
        index_topk=_int(cfg, "index_topk"),
        index_layers=_indexer_layers(cfg, layers),
    )


def _gpt2_shape(cfg: Mapping[str, Any], positions: int) -> dict[str, Any]:
    """The shape GPT-2's config keys give (n_embd, n_layer, n_head, n_inner, n_positions), shared
    by GPT-J: a GELU MLP of 4 x the width unless n_inner says otherwise, LayerNorm."""
    hidden = _int(cfg, "n_embd")
    return dict(
        layers=_int(cfg, "n_layer"),
        hidden=hidden,
        heads=_int(cfg, "n_head"),
        ffn=_int(cfg, "n_inner", default=4 * hidden),
        vocab=_int(cfg, "vocab_size"),
        max_positions=_int(cfg, "n_positions", default=positions),
        mlp="gelu",
        norm="layer",
    )


def spec_from_hf_config(cfg: Mapping[str, Any], name: str, source: str) -> ModelSpec:
    """Build a model spec from a parsed config.json; raises InputError on what it can't use."""
    model_type = str(cfg.get("model_type", "")).lower()
    if model_type not in SUPPORTED:
        raise InputError(
            f"config.json model_type {model_type or '(missing)'!r} is not supported",
            f"supported: {', '.join(SUPPORTED)}; or describe it with --layers/--hidden/--heads flags",
        )
    if model_type in MULTIMODAL:  # a multimodal checkpoint: plan its language model
        return spec_from_hf_config(_text_config(cfg, model_type), name, source)
    if model_type in GEMMA_DEFAULTS:
        cfg = {**GEMMA_DEFAULTS[model_type], **{k: v for k, v in cfg.items() if v is not None}}
    fields: dict[str, Any] = {"name": name, "title": name, "family": model_type, "source": source}
    if model_type == "gpt2":
        fields.update(
            _gpt2_shape(cfg, positions=1024),
            tied_embeddings=True,
            positions="learned",
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
    elif model_type == "dbrx":  # DbrxConfig: attention and experts in nested blocks
        attn, ffn = cfg.get("attn_config") or {}, cfg.get("ffn_config") or {}
        if not isinstance(attn, Mapping) or not isinstance(ffn, Mapping):
            raise InputError(
                "config.json: dbrx attn_config / ffn_config are not objects", "fix the file"
            )
        heads = _int(cfg, "n_heads")
        fields.update(
            layers=_int(cfg, "n_layers"),
            hidden=_int(cfg, "d_model"),
            heads=heads,
            kv_heads=_int(attn, "kv_n_heads", default=heads),
            ffn=_int(ffn, "ffn_hidden_size"),
            vocab=_int(cfg, "vocab_size"),
            max_positions=_int(cfg, "max_seq_len", default=2048),
            tied_embeddings=bool(cfg.get("tie_word_embeddings", False)),
            norm="layer",
            experts=_int(ffn, "moe_num_experts"),
            experts_per_token=_int(ffn, "moe_top_k"),
            moe_ffn=_int(ffn, "ffn_hidden_size"),
        )
    elif model_type in ("falcon", "refinedwebmodel", "refinedweb"):  # a GELU MLP, LayerNorm
        hidden = _int(cfg, "hidden_size")
        heads = _int(cfg, "num_attention_heads", "n_head")
        if cfg.get("new_decoder_architecture") or model_type == "refinedweb":  # 40B, 180B
            kv_heads = _int(cfg, "num_kv_heads", "n_head_kv")
        else:  # Falcon-7B: one KV head (multi_query), else as many as the heads
            kv_heads = 1 if cfg.get("multi_query", True) else heads
        bias = bool(cfg.get("bias", False))
        fields.update(
            layers=_int(cfg, "num_hidden_layers", "n_layer"),
            hidden=hidden,
            heads=heads,
            kv_heads=kv_heads,
            ffn=_int(cfg, "ffn_hidden_size", default=4 * hidden),
            vocab=_int(cfg, "vocab_size"),
            max_positions=_int(cfg, "max_position_embeddings", default=2048),
            tied_embeddings=bool(cfg.get("tie_word_embeddings", True)),
            mlp="gelu",
            positions="alibi" if cfg.get("alibi") else "rotary",
            norm="layer",
            attn_bias=bias,
            qkv_bias=bias,
            mlp_bias=bias,
        )
    elif model_type == "nemotron_h":
        fields.update(_nemotron_h(cfg))
    elif model_type in MAMBA_HYBRIDS:
        fields.update(_granite_hybrid(cfg))
    elif model_type == "gptj":  # GPT-2's keys; no attention biases, a GELU MLP with them
        fields.update(
            _gpt2_shape(cfg, positions=2048),
            tied_embeddings=bool(cfg.get("tie_word_embeddings", False)),
            mlp_bias=True,
        )
    elif model_type in ("gpt_neox", "phi"):  # a GELU MLP, LayerNorm, biases everywhere
        # (GPT-NeoX and Pythia; Phi-1 to Phi-2, whose config may name fewer KV heads)
        hidden, heads = _int(cfg, "hidden_size"), _int(cfg, "num_attention_heads")
        fields.update(
            layers=_int(cfg, "num_hidden_layers"),
            hidden=hidden,
            heads=heads,
            kv_heads=_int(cfg, "num_key_value_heads", default=heads),
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
    else:  # llama-like attention: the LLAMA_LIKE families, the mixtures, StarCoder2
        fields.update(_llama_like(cfg, model_type))
        if model_type == "starcoder2":  # a GELU MLP (c_fc, c_proj) and LayerNorm, biases
            bias = bool(cfg.get("use_bias", True))
            fields.update(mlp="gelu", norm="layer", attn_bias=bias, qkv_bias=bias, mlp_bias=bias)
        if model_type in GEMMA_DEFAULTS and "layer_types" not in cfg:
            # local (windowed) and global layers without layer_types: Gemma 2's alternation
            # (local first) or Gemma 3's pattern (every 6th layer global)
            layers = fields["layers"]
            pattern = 2 if model_type == "gemma2" else _int(cfg, "sliding_window_pattern")
            if pattern < 1:
                raise InputError(
                    f"config.json field sliding_window_pattern = {pattern} is below 1",
                    "fix the file (Gemma 3: 6, one global layer in six)",
                )
            windowed = layers - layers // pattern
            fields.update(
                sliding_window=_int(cfg, "sliding_window") if windowed else 0,
                sliding_window_layers=windowed if windowed < layers else 0,
            )
        if model_type == "gpt_oss":  # every projection has a bias
            fields.update(
                attn_bias=bool(cfg.get("attention_bias", True)),
                qkv_bias=bool(cfg.get("attention_bias", True)),
                mlp_bias=True,
            )
        if model_type in MIXTURES or model_type == "llama4_text":
            fields.update(_mixture(cfg, model_type, fields["layers"]))
        if model_type in HYBRIDS:
            fields.update(_linear_attention(cfg, fields["layers"]))
        if model_type in DEEPSEEK_LIKE:  # multi-head latent attention
            fields.update(
                q_lora_rank=_int(cfg, "q_lora_rank", default=0),
                kv_lora_rank=_int(cfg, "kv_lora_rank"),
                qk_rope_head_dim=_int(cfg, "qk_rope_head_dim"),
                qk_nope_head_dim=_int(cfg, "qk_nope_head_dim"),
                v_head_dim=_int(cfg, "v_head_dim"),
                head_dim=0,
            )
        if model_type in SPARSE_ATTENTION:
            fields.update(_sparse_attention(cfg, fields["layers"]))
    released = _released_format(cfg.get("quantization_config"))
    if released:  # the format the checkpoint's weights are in
        fields["release_precision"] = released
    fields.setdefault("kv_heads", fields["heads"])
    try:
        return ModelSpec(**fields)
    except (TypeError, ValueError) as exc:
        raise InputError(f"config.json: {exc}", "fix the file") from None
