"""What the user asked for, before defaults are filled in."""

from __future__ import annotations

from dataclasses import dataclass, field

from fabriclens.catalog.model_names import OLLAMA_TAG
from fabriclens.catalog.schema import ModelSpec
from fabriclens.errors import InputError


@dataclass(frozen=True)
class PlanRequest:
    """Inputs of `fabriclens plan`; None means "choose a sensible default and say so"."""

    model: ModelSpec
    gpu: str
    gpus: int
    # False when the user left --gpus out: an inference plan then takes the fewest GPUs that
    # hold the model (a training plan keeps ``gpus``, one 8-GPU node by default)
    gpus_given: bool = True
    workload: str = "pretrain"
    gpus_per_node: int | None = None
    networks: tuple[str, ...] = ()
    nics_per_node: int | None = None
    comparison_nics: int | None = None  # one NIC count for every network compared (like_for_like)
    intra_link: str | None = None
    tp: int | None = None
    pp: int | None = None
    dp: int | None = None
    cp: int | None = None
    ep: int | None = None
    zero: int | None = None
    recompute: str | None = None
    sequence_parallel: bool | None = None
    seq_len: int | None = None
    global_batch: int | None = None
    micro_batch: int | None = None
    interleave: int | None = None
    precision: str | None = None
    flash_attention: bool = True
    lora_rank: int = 16
    lora_base_bits: int = 16
    lora_targets: str | None = None  # LORA_TARGETS (model/lora.py); None: all
    framework: str | None = None  # training framework (catalog frameworks.toml); None: default
    grad_reduce: str | None = None  # bf16 | fp32 gradient reduction; None: the framework's
    moe_dispatch: str | None = None  # all-to-all | node-dedup (MoE); None: the framework's
    ep_overlap: bool = False  # MoE all-to-all hidden behind another micro-batch's compute
    etp: int | None = None  # MoE: tensor parallelism inside the experts, 1 or tp; None: tp
    attention: str | None = None  # flash | fused attention kernel; None: the framework's
    pipeline_split: str | None = None  # even | balanced (PIPELINE_SPLITS); None: the framework's
    dropout: bool = False  # dropout on: its masks stored (and the score matrix's, unfused)
    dp_overlap: bool = True  # data-parallel gradients reduced behind the backward
    # inference
    batch: int = 1
    prompt_tokens: int = 1024
    output_tokens: int = 256
    engine: str = "vllm"
    kv_precision: str | None = None
    # host memory a model too large for the GPUs is partly read from (catalog hosts, or a rate)
    host_memory: str | None = None
    gpu_layers: int | None = None  # llama.cpp's -ngl, Ollama's num_gpu; None: what fits
    host_ram: str | None = None  # free host memory (RAM + swap) for the layers left there
    # speculative decoding: draft tokens a step, tokens emitted a step on average, draft kind
    spec_tokens: int | None = None
    accept_length: float | None = None
    draft: str | None = None
    draft_topk: int | None = None  # a tree of drafts: candidates kept a pass (SGLang's topk)
    draft_tokens: int | None = None  # positions a sequence verified a step (the tree's)
    extra_notes: tuple[str, ...] = field(default_factory=tuple)
    # the GPUs the user gave where the engine serves the model on fewer (Ollama: one, when
    # the model fits there); None: it uses all of ``gpus``
    gpus_given_count: int | None = None
    fabric_design: object | None = None  # a fabric.topology.FabricDesign (`plan --fabric`)


# Options that only one kind of plan reads: given with the other kind they would be ignored
# without a word, and the plan would answer a question the user did not ask.
INFERENCE_OPTIONS = (
    "--engine",
    "--batch",
    "--prompt-tokens",
    "--output-tokens",
    "--kv-precision",
    "--host-memory",
    "--gpu-layers",
    "--host-ram",
    "--spec-tokens",
    "--accept-length",
    "--draft",
    "--draft-topk",
    "--draft-tokens",
)
TRAINING_OPTIONS = (
    "--zero",
    "--recompute",
    "--global-batch",
    "--micro-batch",
    "--interleave",
    "--framework",
    "--grad-reduce",
    "--ep-overlap",
    "--etp",
    "--moe-dispatch",
    "--attention",
    "--pipeline-split",
    "--dropout",
    "--no-dp-overlap",
)
LORA_OPTIONS = ("--lora-rank", "--lora-targets")


def _these(flags: list[str], one: str, many: str) -> str:
    return f"{', '.join(flags)} {one if len(flags) == 1 else many}"


def _them(flags: list[str]) -> str:
    return "it" if len(flags) == 1 else "them"


def settle_workload(
    workload: str | None, given: set[str], named_by: str = ""
) -> tuple[str, str | None]:
    """The workload a plan evaluates, from ``-w`` (None when left out), the options the user
    typed (``given``, by flag name) and the kind of name the model was given by (``named_by``),
    and the note that says so when they implied it.

    Without ``-w``, an inference option (``--engine ollama``) or a model named by its Ollama tag
    (what Ollama serves) makes it an inference plan, unless a training option says otherwise;
    with a workload that does not read an option the user typed, the answer would silently
    ignore it, so that is an error naming the option and the fix."""
    inference = [o for o in INFERENCE_OPTIONS if o in given]
    training = [o for o in TRAINING_OPTIONS if o in given]
    lora = [o for o in LORA_OPTIONS if o in given]
    if workload is None:
        if inference and (training or lora):
            raise InputError(
                f"{_these(inference, 'describes', 'describe')} an inference plan and "
                f"{', '.join(training + lora)} a training plan",
                "choose one with -w inference | pretrain | full-finetune | lora | qlora "
                "and drop the other's options",
            )
        if inference:
            return "inference", f"workload: inference, implied by {inference[0]} (set -w)"
        if lora:
            return "lora", f"workload: lora, implied by {lora[0]} (set -w lora or qlora)"
        if named_by == OLLAMA_TAG and not training:
            return "inference", "workload: inference, as the model is named by its Ollama tag (set -w to plan training)"  # fmt: skip
        return "pretrain", None
    if workload == "inference" and (training or lora):
        raise InputError(
            f"{_these(training + lora, 'applies', 'apply')} to training plans, not -w inference",
            f"drop {_them(training + lora)}, or plan training with "
            "-w pretrain | full-finetune | lora | qlora",
        )
    if workload != "inference" and inference:
        raise InputError(
            f"{_these(inference, 'applies', 'apply')} to inference plans, not -w {workload}",
            f"add -w inference, or drop {_them(inference)}",
        )
    if workload in ("pretrain", "full-finetune") and lora:
        raise InputError(
            f"{_these(lora, 'applies', 'apply')} to -w lora or qlora, not -w {workload}",
            f"add -w lora (or qlora), or drop {_them(lora)}",
        )
    return workload, None
