"""One rule for every numeric option of every command, applied to the command tree at start-up.

A float option (seconds, rates, fractions, quantiles) takes a finite number of zero or more:
``--duration nan`` would never end and ``--timeout -1`` means nothing. An integer option (counts,
sizes, ranks, ports) takes zero or more and at most MAX_INT; a port at most 65535. Commands
still check the ranges that are theirs (a count of at least 1, a ZeRO stage up to 3).
"""

from __future__ import annotations

import math
from typing import Any

import click

# --framework, as plan, search and advise take it (catalog frameworks.toml)
FRAMEWORK_HELP = (
    "Training framework: pytorch (eager FSDP/DDP, HF, torchtitan, DeepSpeed) | pytorch-compile "
    "(the same with torch.compile) | megatron (Megatron-LM, Megatron-DeepSpeed) | "
    "deepspeed-legacy (Megatron with DeepSpeed's ZeRO-3 before 0.6, 2021) | nemo (NVIDIA's "
    "tuned NeMo recipes) | jax (MaxText) | paxml [default: pytorch]"
)
GRAD_REDUCE_HELP = (
    "Element type of the data-parallel gradient reduction: bf16 | fp32 [default: the framework's; "
    "Megatron-LM reduces BF16 runs' gradients in fp32, torchtitan too]"
)
MOE_DISPATCH_HELP = (
    "MoE: how tokens reach experts on other nodes: all-to-all (every routed copy crosses the "
    "network) | node-dedup (once per destination node, then NVLink: DeepEP, HybridEP) "
    "[default: the framework's]"
)
ATTENTION_HELP = (
    "Training attention kernel: flash (FlashAttention-2, through SDPA or flash-attn) | fused "
    "(cuDNN's, through Transformer Engine, XLA or SDPA's cuDNN backend) [default: the "
    "framework's on this GPU]"
)
LORA_TARGETS_HELP = (
    "Linear layers with LoRA adapters: all (every attention and MLP projection, PEFT's "
    "all-linear) | attention (q, k, v and output: NeMo's and MLPerf's) | qkv (Megatron-Bridge's "
    "linear_qkv) | qv (PEFT's default for Llama) | mlp (gate, up and down) [default: all]"
)
PIPELINE_SPLIT_HELP = (
    "Decoder layers over pipeline stages: even (the same number each, Megatron-LM's default) | "
    "balanced (by compute, the LM head counted on the last stage: nanotron, Megatron's "
    "--account-for-loss-in-pipeline-split) [default: the framework's]"
)
EP_OVERLAP_HELP = (
    "MoE: hide the expert all-to-all behind another micro-batch's compute (Megatron-Core's "
    "overlap_moe_expert_parallel_comm, DeepSeek's DualPipe)"
)
DROPOUT_HELP = (
    "Training: dropout on (Megatron's GPT defaults, 0.1 on attention and hidden states): its masks "
    "are stored and, without FlashAttention, the score matrix's too [default: off, as current "
    "pretraining recipes]"
)
DP_OVERLAP_HELP = (
    "Training: reduce the data-parallel gradients behind the backward (bucketed, as DDP, FSDP and "
    "Megatron's --overlap-grad-reduce do); --no-dp-overlap reduces them after the backward "
    "[default: on]"
)
ETP_HELP = (
    "MoE: tensor parallelism inside the experts, 1 or the --tp degree (Megatron-Core's "
    "expert_tensor_parallel_size) [default: --tp; 1 keeps each expert whole (MoE Parallel "
    "Folding): each rank holds whole experts, the routed tokens are not gathered over the TP "
    "ranks, and the expert-parallel group may span them (ep must divide tp x cp x dp)]"
)
# speculative decoding, as plan and capacity take it
SPEC_TOKENS_HELP = (
    "Inference: speculative decoding, draft tokens proposed a step in a chain (SGLang's "
    "--speculative-num-steps with --speculative-eagle-topk 1, vLLM's num_speculative_tokens) "
    "[default: none]"
)
ACCEPT_LENGTH_HELP = (
    "Inference, with --spec-tokens: tokens a step emits on average, the accepted drafts and the "
    "model's own (SGLang's bench_serving 'Accept length', vLLM's mean acceptance length); it "
    "depends on the model, draft and text, so it is not guessed"
)
DRAFT_HELP = (
    "Inference, with --spec-tokens: mtp (the model's own next-token layer) | eagle | eagle3 (a "
    "one-layer draft head) [default: mtp for DeepSeek-V3, GLM-4.5+, Qwen3-Next and Qwen3.5, else "
    "eagle3]"
)
DRAFT_TOPK_HELP = (
    "Inference, with --spec-tokens: a tree of drafts, the candidates each draft pass keeps "
    "(SGLang's --speculative-eagle-topk; its default is 4) [default: 1, a chain]"
)
DRAFT_TOKENS_HELP = (
    "Inference, with --draft-topk: positions a sequence the model verifies a step, at most "
    "1 + topk x spec-tokens (SGLang's --speculative-num-draft-tokens; its default is 8)"
)
MAX_INT = 2**53  # beyond any count, size or rank; a float still holds it exactly
MAX_PORT = 65535


class FiniteFloat(click.ParamType[float]):
    """A float option: finite, zero or more."""

    name = "float"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = click.FLOAT.convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!s} is not a finite number; give a number like 1.5", param, ctx)
        if number < 0:
            self.fail(f"{value!s} is negative; give zero or more", param, ctx)
        return number


class BoundedInt(click.ParamType[int]):
    """An integer option: zero or more, at most ``most``."""

    name = "integer"

    def __init__(self, most: int) -> None:
        self.most = most

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, int):
            number = value
        else:
            text = str(value).strip()
            if len(text.lstrip("+-")) > 30:
                self.fail(f"{text[:20]}... is too large; {self._range()}", param, ctx)
            number = click.INT.convert(text, param, ctx)  # type: ignore[arg-type]
        if number < 0:
            self.fail(f"{number} is negative; {self._range()}", param, ctx)
        if number > self.most:
            self.fail(f"{number} is too large; {self._range()}", param, ctx)
        return number

    def _range(self) -> str:
        if self.most == MAX_PORT:
            return f"give a port from 0 to {MAX_PORT}"
        return "give a whole number of 0 or more (up to 2^53)"


FLOAT = FiniteFloat()
INT = BoundedInt(MAX_INT)
PORT = BoundedInt(MAX_PORT)


def harden(command: click.Command) -> None:
    """Give every numeric option in ``command`` (and its subcommands) the types above."""
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            harden(sub)
    for param in command.params:
        kind = getattr(param.type, "name", "")
        if kind == "float" and not isinstance(param.type, FiniteFloat):
            param.type = FLOAT
        elif kind == "integer" and not isinstance(param.type, BoundedInt):
            param.type = PORT if (param.name or "").endswith("port") else INT
