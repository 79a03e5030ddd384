"""`fabriclens plan`: memory, communication, step time and MFU for one job, across networks."""

from pathlib import Path
from typing import Annotated

import typer

from fabriclens.cli._output import print_json, print_rich, split_list
from fabriclens.cli._params import (
    ACCEPT_LENGTH_HELP,
    ATTENTION_HELP,
    DP_OVERLAP_HELP,
    DRAFT_HELP,
    DRAFT_TOKENS_HELP,
    DRAFT_TOPK_HELP,
    DROPOUT_HELP,
    EP_OVERLAP_HELP,
    ETP_HELP,
    FRAMEWORK_HELP,
    GRAD_REDUCE_HELP,
    LORA_TARGETS_HELP,
    MOE_DISPATCH_HELP,
    PIPELINE_SPLIT_HELP,
    SPEC_TOKENS_HELP,
)

COMPARE_SET = (
    "1gbe",
    "10gbe",
    "25gbe",
    "100gbe",
    "100g-roce",
    "200g-roce",
    "400g-roce",
    "hdr-ib",
    "ndr-ib",
)


def plan(
    model: Annotated[
        str | None,
        typer.Argument(
            help="Catalog model name, or a path to a Hugging Face config.json. Omit when describing the model with --layers/--hidden/..."
        ),
    ] = None,
    workload: Annotated[
        str | None,
        typer.Option(
            "--workload",
            "-w",
            help="pretrain | full-finetune | lora | qlora | inference [default: pretrain; "
            "inference when an inference option (--engine, --batch ...) is given or the model "
            "is named by its Ollama tag]",
        ),
    ] = None,
    gpu: Annotated[str, typer.Option(help="GPU SKU (fabriclens catalog gpus)")] = "h100-sxm",
    gpus: Annotated[
        int | None,
        typer.Option(
            help="Total GPUs (default: 8 for training, 1 on a one-GPU machine such as a Mac or a "
            "DGX Spark; for inference the fewest that hold it)"
        ),
    ] = None,
    gpus_per_node: Annotated[
        int | None, typer.Option(help="GPUs per node [default: up to 8]")
    ] = None,
    network: Annotated[
        list[str] | None,
        typer.Option(help="Network id; a comma list or repeated flag compares them"),
    ] = None,
    compare_networks: Annotated[
        bool, typer.Option("--compare-networks", help=f"Compare {', '.join(COMPARE_SET)}")
    ] = False,
    nics_per_node: Annotated[
        int | None,
        typer.Option(
            help="NICs per node [default: one per GPU for RDMA, 1 for TCP; a comparison uses one count for all]"
        ),
    ] = None,
    intra_link: Annotated[
        str | None, typer.Option(help="Intra-node link id [default: the GPU's]")
    ] = None,
    tp: Annotated[int | None, typer.Option(help="Tensor parallel degree")] = None,
    pp: Annotated[int | None, typer.Option(help="Pipeline parallel degree")] = None,
    dp: Annotated[
        int | None,
        typer.Option(
            help="Data parallel degree [default: derived]; serving: data-parallel attention "
            "groups inside --tp (SGLang's --dp with --enable-dp-attention)"
        ),
    ] = None,
    cp: Annotated[int | None, typer.Option(help="Context parallel degree")] = None,
    ep: Annotated[
        int | None,
        typer.Option(
            help="Expert parallel degree (MoE); serving: the experts split over ranks of --tp "
            "(SGLang's --ep, vLLM's --enable-expert-parallel)"
        ),
    ] = None,
    zero: Annotated[int | None, typer.Option(help="ZeRO stage 0-3 (3 = FSDP full shard)")] = None,
    recompute: Annotated[
        str | None,
        typer.Option(
            help="none | selective (Megatron's: the attention core) | op (torchtitan's per-op selective checkpointing: every second matmul and the elementwise work) | full (the whole forward again; with --framework jax all but each block's last matmul, as JAX's remat reruns only what the backward reads)"
        ),
    ] = None,
    sequence_parallel: Annotated[
        bool | None,
        typer.Option(
            "--sequence-parallel/--no-sequence-parallel", help="[default: on when tp > 1]"
        ),
    ] = None,
    seq_len: Annotated[int | None, typer.Option(help="Sequence length in tokens")] = None,
    global_batch: Annotated[int | None, typer.Option(help="Sequences per optimizer step")] = None,
    micro_batch: Annotated[int | None, typer.Option(help="Sequences per micro-batch")] = None,
    interleave: Annotated[int | None, typer.Option(help="Virtual pipeline stages per GPU")] = None,
    precision: Annotated[
        str | None, typer.Option(help="bf16 | fp16 | fp8 (inference also int8, int4)")
    ] = None,
    flash_attention: Annotated[bool, typer.Option("--flash-attention/--no-flash-attention")] = True,
    lora_rank: Annotated[int | None, typer.Option(help="LoRA adapter rank [default: 16]")] = None,
    lora_targets: Annotated[str | None, typer.Option(help=LORA_TARGETS_HELP)] = None,
    framework: Annotated[str | None, typer.Option(help=FRAMEWORK_HELP)] = None,
    grad_reduce: Annotated[str | None, typer.Option(help=GRAD_REDUCE_HELP)] = None,
    moe_dispatch: Annotated[str | None, typer.Option(help=MOE_DISPATCH_HELP)] = None,
    ep_overlap: Annotated[bool, typer.Option("--ep-overlap", help=EP_OVERLAP_HELP)] = False,
    etp: Annotated[int | None, typer.Option("--etp", help=ETP_HELP)] = None,
    attention: Annotated[str | None, typer.Option(help=ATTENTION_HELP)] = None,
    pipeline_split: Annotated[str | None, typer.Option(help=PIPELINE_SPLIT_HELP)] = None,
    dropout: Annotated[bool, typer.Option("--dropout/--no-dropout", help=DROPOUT_HELP)] = False,
    dp_overlap: Annotated[
        bool, typer.Option("--dp-overlap/--no-dp-overlap", help=DP_OVERLAP_HELP)
    ] = True,
    batch: Annotated[
        int | None, typer.Option(help="Inference: concurrent sequences [default: 1]")
    ] = None,
    prompt_tokens: Annotated[
        int | None, typer.Option(help="Inference: prompt length [default: 1024]")
    ] = None,
    output_tokens: Annotated[
        int | None, typer.Option(help="Inference: generated tokens [default: 256]")
    ] = None,
    spec_tokens: Annotated[int | None, typer.Option(help=SPEC_TOKENS_HELP)] = None,
    accept_length: Annotated[float | None, typer.Option(help=ACCEPT_LENGTH_HELP)] = None,
    draft: Annotated[str | None, typer.Option(help=DRAFT_HELP)] = None,
    draft_topk: Annotated[int | None, typer.Option(help=DRAFT_TOPK_HELP)] = None,
    draft_tokens: Annotated[int | None, typer.Option(help=DRAFT_TOKENS_HELP)] = None,
    engine: Annotated[
        str | None,
        typer.Option(
            help="Inference engine: vllm | sglang | tgi | trtllm | ollama | hf, and a release as vllm@0.8.5 where the engine changed between releases [default: vllm, its newest; ollama on Apple GPUs]"
        ),
    ] = None,
    kv_precision: Annotated[
        str | None, typer.Option(help="Inference: KV cache precision [default: bf16]")
    ] = None,
    host_memory: Annotated[
        str | None,
        typer.Option(
            help="Inference, a model larger than the GPUs (Ollama, llama.cpp): the host memory its "
            "other layers are read from, a `catalog hosts` name or a measured rate such as 60GB/s "
            "[default: desktop-ddr5 beside a GeForce card, else server-ddr5]"
        ),
    ] = None,
    gpu_layers: Annotated[
        int | None,
        typer.Option(
            help="Inference with Ollama or llama.cpp: decoder layers kept on the GPUs, the rest in "
            "host memory (llama.cpp's -ngl, Ollama's num_gpu) [default: as many as fit]"
        ),
    ] = None,
    host_ram: Annotated[
        str | None,
        typer.Option(
            help="Inference with Ollama or llama.cpp, layers in host memory: the host's free "
            "memory, RAM plus swap as Ollama counts it (`free -h`: available + swap free), e.g. 64GB"
        ),
    ] = None,
    layers: Annotated[int | None, typer.Option(help="Custom model: decoder layers")] = None,
    hidden: Annotated[int | None, typer.Option(help="Custom model: hidden size")] = None,
    heads: Annotated[int | None, typer.Option(help="Custom model: attention heads")] = None,
    kv_heads: Annotated[
        int | None, typer.Option(help="Custom model: key/value heads [default: heads]")
    ] = None,
    ffn: Annotated[
        int | None,
        typer.Option(
            help="Custom model: MLP width [default: 4 x hidden for gelu, 8/3 x hidden for swiglu]"
        ),
    ] = None,
    vocab: Annotated[int | None, typer.Option(help="Custom model: vocabulary size")] = None,
    mlp: Annotated[str, typer.Option(help="Custom model: swiglu | gelu")] = "swiglu",
    positions: Annotated[
        str | None,
        typer.Option(
            help="Custom model: rotary | learned (GPT-2/3, Megatron's GPT) | alibi (MPT, BLOOM) "
            "[default: rotary]"
        ),
    ] = None,
    norm: Annotated[
        str | None,
        typer.Option(help="Custom model: rms (RMSNorm) | layer (LayerNorm, GPT) [default: rms]"),
    ] = None,
    experts: Annotated[int, typer.Option(help="Custom model: routed experts (MoE)")] = 0,
    experts_per_token: Annotated[int, typer.Option(help="Custom model: experts per token")] = 0,
    fabric: Annotated[
        Path | None,
        typer.Option(
            help="A `fabriclens topo --json` file: network collectives take the times simulated on it"
        ),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="JSON output")] = False,
    explain: Annotated[
        bool, typer.Option("--explain", help="List the assumptions behind every number")
    ] = False,
) -> int:
    """Plan a training or inference job: memory, communication, step time, MFU, bottleneck.
    Exit status 1 when it does not fit in memory."""
    from fabriclens.cli._model_arg import resolve_model
    from fabriclens.errors import ExitStatus
    from fabriclens.plan.planner import default_engine, default_training_gpus, make_plans
    from fabriclens.plan.request import PlanRequest, settle_workload

    typed = {
        "--engine": engine,
        "--batch": batch,
        "--prompt-tokens": prompt_tokens,
        "--output-tokens": output_tokens,
        "--kv-precision": kv_precision,
        "--host-memory": host_memory,
        "--gpu-layers": gpu_layers,
        "--host-ram": host_ram,
        "--spec-tokens": spec_tokens,
        "--accept-length": accept_length,
        "--draft": draft,
        "--draft-topk": draft_topk,
        "--draft-tokens": draft_tokens,
        "--zero": zero,
        "--recompute": recompute,
        "--global-batch": global_batch,
        "--micro-batch": micro_batch,
        "--interleave": interleave,
        "--framework": framework,
        "--grad-reduce": grad_reduce,
        "--ep-overlap": ep_overlap or None,
        "--etp": etp,
        "--moe-dispatch": moe_dispatch,
        "--attention": attention,
        "--pipeline-split": pipeline_split,
        "--dropout": dropout or None,
        "--no-dp-overlap": None if dp_overlap else True,
        "--lora-rank": lora_rank,
        "--lora-targets": lora_targets,
    }
    spec = resolve_model(
        model,
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=kv_heads,
        ffn=ffn,
        vocab=vocab,
        mlp=mlp,
        experts=experts,
        experts_per_token=experts_per_token,
        seq_len=seq_len,
        positions=positions,
        norm=norm,
    )
    workload, implied = settle_workload(
        workload, {flag for flag, value in typed.items() if value is not None}, spec.named_by
    )
    nets = split_list(network)
    design = None
    if fabric is not None:
        from fabriclens.cli._fabric_args import read_design

        design, fabric_net = read_design(fabric)
        nets = nets or [fabric_net or "ndr-ib"]
        nics_per_node = nics_per_node or design.nics_per_server
        gpus_per_node = gpus_per_node or design.gpus_per_server
    if compare_networks:
        nets = list(dict.fromkeys([*COMPARE_SET, *nets]))
    from fabriclens.catalog import find_gpu

    if engine is None:
        engine = default_engine(find_gpu(gpu), spec)
    req = PlanRequest(
        model=spec,
        gpu=gpu,
        gpus=default_training_gpus(find_gpu(gpu)) if gpus is None else gpus,
        gpus_given=gpus is not None,
        workload=workload,
        gpus_per_node=gpus_per_node,
        networks=tuple(nets),
        nics_per_node=nics_per_node,
        intra_link=intra_link,
        tp=tp,
        pp=pp,
        dp=dp,
        cp=cp,
        ep=ep,
        zero=zero,
        recompute=recompute,
        sequence_parallel=sequence_parallel,
        seq_len=seq_len,
        global_batch=global_batch,
        micro_batch=micro_batch,
        interleave=interleave,
        precision=precision,
        flash_attention=flash_attention,
        lora_rank=16 if lora_rank is None else lora_rank,
        lora_targets=lora_targets,
        framework=framework,
        grad_reduce=grad_reduce,
        moe_dispatch=moe_dispatch,
        ep_overlap=ep_overlap,
        etp=etp,
        attention=attention,
        pipeline_split=pipeline_split,
        dropout=dropout,
        dp_overlap=dp_overlap,
        batch=1 if batch is None else batch,
        prompt_tokens=1024 if prompt_tokens is None else prompt_tokens,
        output_tokens=256 if output_tokens is None else output_tokens,
        engine=engine,
        kv_precision=kv_precision,
        host_memory=host_memory,
        gpu_layers=gpu_layers,
        host_ram=host_ram,
        spec_tokens=spec_tokens,
        accept_length=accept_length,
        draft=draft,
        draft_topk=draft_topk,
        draft_tokens=draft_tokens,
        fabric_design=design,
        extra_notes=(implied,) if implied else (),
    )
    plans = make_plans(req)
    from fabriclens.report.json_doc import plan_doc

    docs = [plan_doc(p) for p in plans]
    # one verdict: a job that does not fit in memory is not a plan that runs (exit status 1); nor
    # is a split (--gpu-layers, --host-ram) that the GPU or the host cannot hold
    status = int(ExitStatus.OK if all(p.fits for p in plans) else ExitStatus.FINDINGS)
    if json_out:
        print_json(docs[0] if len(docs) == 1 else docs)
        return status
    from fabriclens.report import text

    if len(docs) == 1:
        print_rich(text.plan_renderables(docs[0], explain))
    else:
        print_rich(text.comparison_renderables(docs, explain))
    return status
