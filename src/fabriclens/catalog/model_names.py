"""Read the names people give models: Ollama tags and Hugging Face repository ids.

A newcomer names a model the way their tool does: ``llama3.1:8b`` or
``qwen2.5:7b-instruct-q8_0`` (Ollama), ``meta-llama/Llama-3.1-8B-Instruct`` or
``Qwen/Qwen2.5-7B-Instruct-AWQ`` (Hugging Face, and so vLLM's served model name). The catalog
holds architectures, not every fine-tune: an instruct or chat variant has its base model's
shape. This module turns such a name into the catalog names to try, best first, and the weights
format the name states (an Ollama quantization tag, an AWQ/GPTQ/FP8 repository suffix).

Pure: no catalog, no I/O. ``catalog.load.find_model`` tries the candidates in order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Ollama's library: the size a tag without one (``llama3.1``, ``llama3.1:latest``) pulls, from
# the model table of ollama/ollama's README (commit bd6697ad, Feb 2026: "Llama 3.1 | 8B | 4.7GB |
# `ollama run llama3.1`", "Code Llama | 7B | 3.8GB | `ollama run codellama`"; older tables for
# families since dropped from it: 57f038ec, Jan 2025, "Gemma 2 | 9B" and "Phi 3 Mini | 3.8B |
# `ollama run phi3`"; 6f43898b, May 2024, "Llama 3 | 8B"; e4d0db5a, Apr 2024, "Llama 2 | 7B";
# 1f6986e9, Mar 2025, "QwQ | 32B | `ollama run qwq`") and its docs (docs/api/anthropic-
# compatibility.mdx: after `ollama pull qwen3-coder`, "Qwen 3 coder is a 30B parameter model").
# deepseek-r1: the README's "DeepSeek-R1 | 7B | 4.7GB" row (1ca608bc) was written in Feb 2025 and
# never revised; since the R1-0528 release (May 2025) `ollama list` prints deepseek-r1:latest
# and deepseek-r1:8b with one ID, 6995872bfe4c, 5.2 GB (public tutorials and READMEs quote it:
# "deepseek-r1:latest 6995872bfe4c 5.2 GB ... deepseek-r1:8b 6995872bfe4c 5.2 GB"), where the
# 7B distill was 4.7 GB. Families whose latest size no source states are not guessed.
OLLAMA_LATEST: dict[str, str] = {
    "llama3.1": "8b",
    "llama3.2": "3b",
    "llama3.3": "70b",
    "gemma3": "4b",
    "phi4": "14b",
    "mistral": "7b",
    "deepseek-r1": "8b",  # not the 671B model the plain name deepseek-r1 means
    "gemma2": "9b",
    "phi3": "mini",
    "llama3": "8b",
    "llama2": "7b",
    "qwq": "32b",
    "codellama": "7b",
    "qwen3-coder": "30b",
    # one size only: "With 24 billion parameters" (Mistral-Small-3.1-24B's model card)
    "mistral-small3.1": "24b",
    "mistral-small3.2": "24b",
    "devstral": "24b",  # Devstral Small 1.x: "24 billion parameters" (its model card)
    "magistral": "24b",  # Magistral Small: "a small, efficient reasoning model with 24B parameters"
}

# what a tag without a quantization pulls: the Q4_K_M build (ollama/ollama#8954, a maintainer:
# "deepseek-r1:671b is the same as deepseek-r1:671b-q4_K_M"; the README's sizes agree: Llama 3.1
# 8B is 4.7 GB, under 5 bits per weight, where Q8_0 would take 8.5 GB)
OLLAMA_DEFAULT_QUANT = "Q4_K_M (Ollama's default)"

# What an Ollama quantization tag (GGUF type) or a repository suffix says about the weights, in
# the planner's precisions. Q4 types are the 4-bit formats (Ollama's default Q4_K_M: the
# engine's int4 bits per weight); Q8_0 is 8-bit. Q2/Q3/Q5/Q6 have no precision of their own here.
_QUANT_TAGS: tuple[tuple[str, str], ...] = (
    (r"i?q4(_\w+)?", "int4"),
    (r"q8(_\w+)?", "int8"),
    (r"f16|fp16", "fp16"),
    (r"bf16", "bf16"),
    (r"fp8|fp8-dynamic|w8a8-fp8", "fp8"),
    (r"nvfp4|fp4", "fp4"),  # NVIDIA's Blackwell checkpoints (nvidia/*-NVFP4, *-FP4)
    (r"awq|gptq|gptq-int4|int4|4bit|bnb-4bit|w4a16|mxfp4", "int4"),
    (r"gptq-int8|int8|8bit|w8a8", "int8"),
)
_OTHER_QUANT = re.compile(r"i?q[2-6](_\w+)?|f32|fp32")
# trailing words that name a variant of the same architecture, not another one
_VARIANT_WORDS = frozenset({
    "instruct", "chat", "it", "hf", "base", "pt", "sft", "dpo", "rl", "text", "latest", "gguf",
    "awq", "gptq", "fp8", "fp16", "bf16", "int4", "int8", "4bit", "8bit", "bnb", "mxfp4",
    "dynamic", "w4a16", "w8a8", "qat", "turbo", "thinking", "nvfp4", "fp4",
})  # fmt: skip
_DATE = re.compile(r"\d{4}")  # a release date suffix: Mistral's -2407, Qwen's -2507
_SIZE = re.compile(r"(\d+x)?\d+(\.\d+)?[bm]|e\d+b|a\d+(\.\d+)?b")  # 8b, 3.8b, 8x7b, 270m, a3b


OLLAMA_TAG = "Ollama tag"  # ModelName.kind of a name such as llama3.1:8b


@dataclass(frozen=True, slots=True)
class ModelName:
    """How a model name was read: the catalog names to try, best first, and what it said."""

    candidates: tuple[str, ...]
    precision: str = ""  # the weights format the name states ("" when it states none)
    quantization: str = ""  # the name's own word for it (Q4_K_M, AWQ)
    kind: str = ""  # "Ollama tag", "Hugging Face id" or "" for a plain name

    def reading(self, catalog_name: str) -> str:
        """One line for the assumptions: what the name was taken to mean."""
        weights = f", {self.quantization} weights as {self.precision}" if self.precision else ""
        if self.quantization and not self.precision:
            weights = f", {self.quantization} weights not modelled (the engine's precision is used)"
        served = (
            "; served by Ollama unless --engine names another" if self.kind == OLLAMA_TAG else ""
        )
        return f"{self.kind} read as the catalog's {catalog_name}{weights}{served}"


def _precision(word: str) -> str | None:
    low = word.lower()
    for pattern, precision in _QUANT_TAGS:
        if re.fullmatch(pattern, low):
            return precision
    return None


def _strip_variants(name: str) -> list[str]:
    """``llama-3.1-8b-instruct`` -> [itself, ``llama-3.1-8b``]: drop trailing variant words."""
    out = [name]
    parts = name.split("-")
    while len(parts) > 1 and (parts[-1] in _VARIANT_WORDS or _DATE.fullmatch(parts[-1])):
        parts.pop()
        out.append("-".join(parts))
    if out[-1].startswith("meta-"):  # Meta-Llama-3.1-8B: the repository's older spelling
        out.append(out[-1].removeprefix("meta-"))
    return out


def read_model_name(text: str) -> ModelName:
    """The catalog names ``text`` may mean, best first, and the weights format it states."""
    name = text.strip().lower().replace("_", "-").replace(" ", "-")
    kind = ""
    tag_words: list[str] = []
    if ":" in name:  # an Ollama tag: family:size-variant-quantization
        name, _, tag = name.rpartition(":")
        tag_words = [w for w in tag.split("-") if w]
        kind = OLLAMA_TAG
    repository = "/" in name
    if repository:  # a Hugging Face id (or an Ollama hf.co/owner/repo pull)
        name = name.rstrip("/").rsplit("/", 1)[-1]
        kind = kind or "Hugging Face id"
    precision, quantization = "", ""
    words = [w for w in name.split("-") if w]
    # the quantization may close a tag (q4-k-m after our "_" -> "-") or a repository name (-AWQ)
    joined_tag = "-".join(tag_words)
    for source in (joined_tag, "-".join(words)):
        for width in (3, 2, 1):
            tail = source.split("-")[-width:]
            if len(tail) < width or not tail[0]:
                continue
            word = "-".join(tail)
            underscored = word.replace("-", "_")
            found = _precision(underscored) or _precision(word)
            if found or _OTHER_QUANT.fullmatch(underscored):
                precision = found or ""
                quantization = underscored.upper() if source is joined_tag else word.upper()
                if source is joined_tag:
                    tag_words = tag_words[:-width]
                else:
                    words = words[:-width]
                break
        if quantization:
            break
    tag_words = [w for w in tag_words if w != "latest"]
    base = "-".join(words)
    candidates: list[str] = []
    sizes = [w for w in tag_words if _SIZE.fullmatch(w)]
    # Ollama's latest size belongs to its library names only: a repository's name is the model
    # it holds (deepseek-ai/DeepSeek-R1 is the 671B model, not Ollama's deepseek-r1, an 8B)
    latest = OLLAMA_LATEST.get(base) if not sizes and not repository else None
    if tag_words:
        named = _strip_variants("-".join([base, *tag_words]))
        # with a latest size the family name alone is that size: deepseek-r1:instruct is the 8B's
        # instruct, not the 671B model the plain name deepseek-r1 means
        candidates += [c for c in named if not (latest and c == base)]
        if sizes:
            candidates += _strip_variants("-".join([base, *sizes]))
    if latest:  # llama3.1, llama3.1:latest, llama3.1:instruct
        candidates.append(f"{base}-{latest}")
        kind = OLLAMA_TAG
    elif not sizes:  # a tag's size is never dropped: llama3.1:13b is not llama3.1
        candidates += _strip_variants(base)
    if kind == "Ollama tag" and not quantization:
        # a tag without a quantization pulls Ollama's default build of the model: Q4_K_M
        precision, quantization = "int4", OLLAMA_DEFAULT_QUANT
    unique = tuple(dict.fromkeys(c for c in candidates if c))
    return ModelName(unique, precision, quantization, kind)
