"""Published measurements (reference/ in this repository) turned into model predictions.

Each case names its source row; `accuracy.py` prints them and the unit tests assert their
tolerances. Kernel efficiencies come from the catalog, whose sources are vendor specs, NCCL's own
topology constants and the MAMF table; the one constant taken from these rows is each training
framework's share of the kernel-level step, from the calibration rows only
(`calibrate_frameworks.py`), and the share of a host's memory bandwidth llama.cpp's CPU kernels
reach, from the offload rows with no layer on the GPU (`offload_cases`).
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import statistics
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import partial
from itertools import pairwise
from pathlib import Path

from fabriclens.catalog import (
    find_engine,
    find_framework,
    find_gpu,
    find_host,
    find_link,
    find_model,
    find_network,
    gpu_on_link,
    host_link_on,
)
from fabriclens.catalog.load import share_owner
from fabriclens.catalog.schema import GRAD_REDUCE_DTYPES, Gpu, ModelSpec, Network, split_release
from fabriclens.model.arch import count_params
from fabriclens.model.collectives import Fabric, estimate_collective
from fabriclens.model.inference import estimate_inference, serving_tpot_s
from fabriclens.model.layout import TrainConfig
from fabriclens.model.moe import MOE_LAYER_HOST_MS
from fabriclens.model.offload import estimate_offload
from fabriclens.model.step import estimate_training_step

REPO = Path(__file__).resolve().parent.parent


def reference_dir() -> Path:
    """The published reference CSVs, kept in the repository (reference/, each row with its source)."""
    return REPO / "reference"


@dataclass(frozen=True)
class Case:
    """One published measurement beside the model's prediction."""

    name: str
    measured: float
    predicted: float
    unit: str
    source: str
    note: str = ""
    row_id: str = ""  # the row's id column in reference/
    split: str = ""  # calibration or held_out
    group: str = ""  # scaling group ("" when the row is not part of one)
    scale: tuple[float, ...] = ()  # orders a group's rows: GPUs, then sequence length
    framework: str = ""  # training rows: the framework that ran it (catalog frameworks.toml)
    generation: str = ""  # training rows: the GPU's architecture generation
    moe: bool = False  # training rows: a mixture-of-experts model
    engine: str = ""  # inference rows: the serving engine (catalog engines.toml)
    layer_ms: float = 0.0  # training rows: the step's time per decoder layer per micro-batch, ms

    @property
    def error(self) -> float:
        """Signed relative error of the prediction."""
        return self.predicted / self.measured - 1.0


# Every row is either a calibration row (efficiencies may be judged against it) or held out
# (reported only: nobody tunes a catalog efficiency on it). The rule looks at what the row is,
# never at the model's error: a row's key is its scaling group (so both ends of a scaling pair
# share a split) or else source | model-or-system | GPU count, and a third of the keys, by
# SHA-256, are held out.
HELD_OUT_EVERY = 3


def split_key(row: dict[str, str]) -> str:
    """What decides a row's split: its scaling group, else source, model (or system) and GPUs."""
    group = row.get("scaling_group", "")
    if group:
        return f"group:{group}"
    what = row.get("model") or row.get("system", "")
    return f"{row['source']}|{what}|{row.get('gpus', '')}"


def split_for(row: dict[str, str]) -> str:
    """``held_out`` for a third of the split keys (by hash), ``calibration`` for the rest."""
    digest = hashlib.sha256(split_key(row).encode("utf-8")).hexdigest()
    return "held_out" if int(digest[:8], 16) % HELD_OUT_EVERY == 0 else "calibration"


def _rows(name: str) -> list[dict[str, str]]:
    path = reference_dir() / name
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} not found: the published reference data lives in reference/ of the "
            "repository; restore it with git checkout -- reference"
        )
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


# The intra-node column of collectives.csv, mapped to catalog links.
INTRA = {
    "NVLink3+NVSwitch": "nvlink3-nvswitch",
    "NVLink4+NVSwitch": "nvlink4-nvswitch",
    "NVLink bridge": "nvlink-bridge-h100",
    "PCIe5": "pcie5-x16-host",  # the RTX 5090 rows: GeForce, no peer-to-peer
}
NICS = {
    "InfiniBand HDR 200G": "hdr-ib",
    "InfiniBand NDR 400G": "ndr-ib",
    "200G": "200g-roce",
    "100G": "100g-roce",
}


def link_fabric(link: str, net: Network | None, gpn: int, nics: int) -> Fabric:
    """The fabric of a collective row that names its intra-node link but not its GPU: the GPU
    that link joins (catalog.gpu_on_link, as `fabriclens collective --intra-link` takes it), its
    generation and host link; where the link joins GPUs of several generations (PCIe), no
    generation, and where they differ in host link (catalog.host_link_on), no host cap."""
    gpu, host = gpu_on_link(link), host_link_on(link)
    return Fabric(find_link(link), net, gpn, nics, find_link(host) if host else None,
                  generation=gpu.generation if gpu is not None else "")  # fmt: skip


def collective_cases() -> Iterator[Case]:
    """collectives.csv: all-reduce bus bandwidth, intra-node and per NIC."""
    for row in _rows("collectives.csv"):
        note = row["algorithm_note"]
        algo = "ring" if "NVLS off" in note else "auto"
        if row["system"] == "per-NIC rule of thumb":
            # two 8-GPU HGX H100 nodes, one NIC each: the ring's busbw equals that NIC's (the
            # same staff: "we suggest passing NCCL_ALGO=RING when benchmarking just two nodes",
            # nccl-tests#290; two nodes otherwise run NVLSTree, beyond the network bound)
            fabric = Fabric(find_link("nvlink4-nvswitch"), find_network(NICS[row["nic"]]), 8, 1,
                            generation="hopper")  # fmt: skip
            ranks, size, algo = 16, 8 * 2**30, "ring"
        else:
            net = find_network(NICS[row["nic"]]) if row["nic"] else None
            gpn = int(row["gpus_per_node"])
            fabric = link_fabric(INTRA[row["intra_node"]], net, gpn, int(row["nics_per_node"] or 1))
            ranks, size = int(row["gpus"]), int(row["size_bytes"])
        est = estimate_collective("all_reduce", size, ranks, fabric, algorithm=algo)
        yield Case(
            name=f"{row['system']} {row['nic'] or ''} {note}".strip(),
            measured=float(row["busbw_GBps"]),
            predicted=est.busbw_bytes_per_s / 1e9,
            unit="GB/s busbw",
            source=row["source"],
            note=f"{est.algorithm}, {est.bottleneck}",
            row_id=row["id"],
            split=row["split"],
        )


def _gpt_spec(row: dict[str, str]) -> ModelSpec:
    """The GPT-style models of Korthikanti et al.: 4h GeLU MLP, learned positions, biases."""
    h = int(row["hidden"])
    return ModelSpec(
        name=row["model"], source=row["source"], layers=int(row["layers"]), hidden=h,
        heads=int(row["heads"]), kv_heads=int(row["heads"]), ffn=4 * h, vocab=int(row["vocab"]),
        mlp="gelu", positions="learned", max_positions=int(row["seq_len"]), norm="layer",
        attn_bias=True, qkv_bias=True, mlp_bias=True, tied_embeddings=True,
    )  # fmt: skip


def framework_efficiency(row: dict[str, str], gpu: Gpu, kernel_level: bool) -> float:
    """The share of the kernel-level step the row's framework reaches on ``gpu`` (catalog
    frameworks.toml), or 1.0 for the kernel-level step itself (what calibration starts from)."""
    return (
        1.0 if kernel_level else find_framework(row["framework"]).efficiency_for(gpu.generation)[0]
    )


# calibration's trial value of eager PyTorch's host time per layer (benchmarks/
# calibrate_frameworks.py), for HOST_OWNER and the frameworks that take its share; None: each
# framework's catalog value
LAYER_HOST_MS: float | None = None
HOST_OWNER = "pytorch"


@contextmanager
def trial_host_time(layer_host_ms: float) -> Iterator[None]:
    """Within the block, HOST_OWNER's frameworks take ``layer_host_ms`` of host time per layer
    instead of the catalog's (calibration's trials; 0: the kernel level without host time)."""
    global LAYER_HOST_MS
    previous, LAYER_HOST_MS = LAYER_HOST_MS, layer_host_ms
    try:
        yield
    finally:
        LAYER_HOST_MS = previous


# calibration's trial value of the MoE layers' host time per micro-batch (model/moe.py
# MOE_LAYER_HOST_MS); None: the model's
MOE_HOST_MS: float | None = None


@contextmanager
def trial_moe_host_time(moe_host_ms: float) -> Iterator[None]:
    """Within the block, every MoE layer takes ``moe_host_ms`` of host time per micro-batch
    instead of the model's (calibration's trials)."""
    global MOE_HOST_MS
    previous, MOE_HOST_MS = MOE_HOST_MS, moe_host_ms
    try:
        yield
    finally:
        MOE_HOST_MS = previous


def moe_layer_host_s() -> float:
    """The MoE layers' host time per micro-batch the rows are planned with, in seconds."""
    return (MOE_LAYER_HOST_MS if MOE_HOST_MS is None else MOE_HOST_MS) / 1e3


def layer_host_s(row: dict[str, str]) -> float:
    """The host time per layer per micro-batch of the row's framework, in seconds."""
    fw = find_framework(row["framework"])
    if LAYER_HOST_MS is not None and share_owner(fw.name) == HOST_OWNER:
        return LAYER_HOST_MS / 1e3
    return fw.layer_host_ms / 1e3


def training_cases(kernel_level: bool = False) -> Iterator[Case]:
    """training.csv: iteration time (Megatron-LM, A100) and MFU (llm-foundry, H100)."""
    for row in _rows("training.csv"):
        gpu = find_gpu(row["gpu"])
        fw = framework_efficiency(row, gpu, kernel_level)
        gpus, tp, pp, dp = (int(row[k]) for k in ("gpus", "tp", "pp", "dp"))
        if row["model"].startswith("MPT"):
            spec = find_model("mpt-7b")
            # llm-foundry benchmarking table: micro-batch 6, no gradient accumulation, FSDP
            # FULL_SHARD, no activation checkpointing, flash attention, one 8-GPU node
            cfg = TrainConfig(gpus=gpus, gpus_per_node=8, tp=tp, pp=pp, dp=dp, zero=3,
                              recompute="none", seq_len=int(row["seq_len"]), global_batch=48,
                              micro_batch=6, framework_efficiency=fw,
                              layer_host_s=layer_host_s(row))  # fmt: skip
            fabric = Fabric(find_link(gpu.intra_link), None, 8, 1)
            est = estimate_training_step(spec, count_params(spec), gpu, fabric, cfg)
            yield Case(f"{row['model']} {gpus}x{row['gpu']} FSDP", float(row["value"]), est.mfu_full_square,
                       "MFU", row["source"], "micro-batch 6, global 48 (llm-foundry table)",
                       row["id"], row["split"], framework=row["framework"],
                       generation=gpu.generation)  # fmt: skip
            continue
        spec = _gpt_spec(row)
        # Megatron-LM 2022 (Korthikanti et al.): no FlashAttention, dropout on, 8 x A100 per
        # node on NVLink3, 8 x 200G HDR InfiniBand per node (Selene), micro-batch 1
        cfg = TrainConfig(
            gpus=gpus, gpus_per_node=8, tp=tp, pp=pp, dp=dp, zero=0, recompute=row["recompute"],  # type: ignore[arg-type]
            sequence_parallel=row["sequence_parallel"] == "yes", seq_len=int(row["seq_len"]),
            global_batch=int(row["global_batch"]), micro_batch=1, interleave=int(row["interleave"]),
            flash_attention=False, dropout=True, framework_efficiency=fw,
        )  # fmt: skip
        fabric = Fabric(find_link("nvlink3-nvswitch"), find_network("hdr-ib"), 8, 8,
                        find_link(gpu.host_link), generation=gpu.generation)  # fmt: skip
        est = estimate_training_step(spec, count_params(spec), gpu, fabric, cfg)
        yield Case(
            f"{row['model']} {gpus}x A100 tp{tp} pp{pp} {row['recompute']}",
            float(row["value"]), est.time_s, "s / iteration", row["source"],
            row_id=row["id"], split=row["split"], framework=row["framework"],
            generation=gpu.generation,
        )  # fmt: skip


def inference_cases() -> Iterator[Case]:
    """inference.csv: single-sequence decode speed."""
    engines = {"vLLM 0.6.3": "vllm@0.6.3", "HF Transformers": "hf"}
    for row in _rows("inference.csv"):
        spec = find_model(row["model"])
        gpu = find_gpu(row["gpu"])
        fabric = Fabric(find_link(gpu.intra_link), None, 8, 1)
        est = estimate_inference(
            spec, count_params(spec), gpu, fabric, find_engine(engines[row["engine"]]),
            tp=int(row["tp"]), pp=1, batch=int(row["batch"]),
            prompt_tokens=int(row["input_tokens"]), output_tokens=int(row["output_tokens"]),
            precision=row["precision"],
        )  # fmt: skip
        yield Case(
            f"{row['model']} {row['gpu']} {row['engine']} in={row['input_tokens']}",
            float(row["value"]), est.decode_tokens_per_s, "tokens/s", row["source"],
            row_id=row["id"], split=row["split"], engine=split_release(engines[row["engine"]])[0],
        )  # fmt: skip


def median_abs_error(cases: list[Case]) -> float:
    """Median of |error| over the cases."""
    return statistics.median(abs(c.error) for c in cases)


# --- the wider set: reference/*_more.csv (see reference/README.md and SOURCES.md) ---


@dataclass(frozen=True)
class Excluded:
    """A published row kept in reference/ but not predicted, and why."""

    file: str
    row_id: str
    what: str
    reason: str
    source: str


def _int(row: dict[str, str], key: str, default: int = 1) -> int:
    value = row.get(key, "")
    return int(value) if value else default


def _mpt_spec(row: dict[str, str]) -> ModelSpec:
    """MosaicML MPT: ALiBi, no biases, LayerNorm, 4h GELU MLP, tied embeddings (llm-foundry yamls)."""
    return ModelSpec(
        name=row["model"], source=row["source"], layers=int(row["layers"]),
        hidden=int(row["hidden"]), heads=int(row["heads"]), kv_heads=int(row["heads"]),
        ffn=int(row["ffn"]), vocab=int(row["vocab"]), mlp="gelu", positions="alibi",
        max_positions=int(row["seq_len"]), norm="layer", tied_embeddings=True,
    )  # fmt: skip


def _wide_gpt_spec(row: dict[str, str]) -> ModelSpec:
    """GPT-style (NeMo GPT-3, Megatron-Core) and Nemotron rows: 2-matrix MLP, untied embeddings."""
    h = int(row["hidden"])
    return ModelSpec(
        name=row["model"], source=row["source"], layers=int(row["layers"]), hidden=h,
        heads=int(row["heads"]), kv_heads=int(row["kv_heads"] or row["heads"]),
        ffn=int(row["ffn"]), vocab=int(row["vocab"]), mlp="gelu",
        positions="rotary" if row["arch"] == "nemotron" else "learned",
        max_positions=int(row["seq_len"]), norm="layer",
    )  # fmt: skip


def _llama_spec(row: dict[str, str]) -> ModelSpec:
    """A Llama-shaped model the catalog does not list: SwiGLU, rotary, RMSNorm, no biases."""
    return ModelSpec(
        name=row["model"], source=row["source"], layers=int(row["layers"]),
        hidden=int(row["hidden"]), heads=int(row["heads"]),
        kv_heads=int(row["kv_heads"] or row["heads"]), ffn=int(row["ffn"]),
        vocab=int(row["vocab"]), max_positions=int(row["seq_len"]),
    )  # fmt: skip


def _training_spec(row: dict[str, str]) -> ModelSpec:
    arch = row["arch"]
    if arch.startswith("catalog:"):
        return find_model(arch.removeprefix("catalog:"))
    if arch == "mpt":
        return _mpt_spec(row)
    if arch == "llama":
        return _llama_spec(row)
    if arch == "llama-tied":  # the same with the output projection tied to the embedding
        return dataclasses.replace(_llama_spec(row), tied_embeddings=True)
    return _wide_gpt_spec(row)


def _more_training_case(row: dict[str, str], kernel_level: bool = False) -> Case:
    spec = _training_spec(row)
    gpu = find_gpu(row["gpu"])
    fw = find_framework(row["framework"])
    gpus, gpn = int(row["gpus"]), int(row["gpus_per_node"])
    cfg = TrainConfig(
        gpus=gpus, gpus_per_node=gpn, tp=_int(row, "tp"), pp=_int(row, "pp"), dp=_int(row, "dp"),
        cp=_int(row, "cp"), ep=_int(row, "ep"), zero=_int(row, "zero"),
        # a row that does not state its experts' TP runs at its framework's default
        etp=_int(row, "etp", fw.default_etp),
        recompute=row["recompute"] or "none",  # type: ignore[arg-type]
        sequence_parallel=row["sequence_parallel"] == "yes", seq_len=int(row["seq_len"]),
        global_batch=int(row["global_batch"]), micro_batch=_int(row, "micro_batch"),
        interleave=_int(row, "interleave"), precision=row["precision"],  # type: ignore[arg-type]
        flash_attention=row["flash_attention"] != "no", dropout=row["dropout"] == "yes",
        workload=row["workload"] or "pretrain",  # type: ignore[arg-type]
        framework_efficiency=framework_efficiency(row, gpu, kernel_level),
        attention_kernel=fw.attention_for(gpu.generation),
        elementwise=fw.elementwise,
        # the row's recipe where it names its MoE dispatcher and overlap, else the framework's
        moe_dispatch=row.get("moe_dispatch") or fw.moe_dispatch,
        ep_overlap=row.get("ep_overlap") == "yes",
        overlap_dp=row.get("dp_overlap") != "no",  # a recipe that reduces gradients after the backward
        grad_bytes=GRAD_REDUCE_DTYPES[fw.grad_reduce], pipeline_split=fw.pipeline_split,
        recompute_reruns=fw.recompute_reruns, grad_buckets=fw.grad_buckets,
        zero3_calls=fw.zero3_calls, layer_host_s=layer_host_s(row),
        moe_layer_host_s=moe_layer_host_s(),
        lora_base_bits=_int(row, "base_bits", 16),  # 4: QLoRA's 4-bit base (bitsandbytes NF4)
        lora_targets=row.get("lora_targets") or "all",  # the linear layers with adapters
        projections=fw.projections,  # q/k/v and gate/up as the framework lays them out
    )  # fmt: skip
    net = find_network(row["network"]) if row["network"] and gpus > gpn else None
    fabric = Fabric(find_link(gpu.intra_link), net, gpn, _int(row, "nics_per_node"),
                    find_link(gpu.host_link), generation=gpu.generation)  # fmt: skip
    est = estimate_training_step(spec, count_params(spec), gpu, fabric, cfg)
    if row["measured"] == "hardware_tflops_per_gpu" and cfg.flash_attention:
        # with FlashAttention the step runs (and hw_flops counts) the causal half of the square
        raise ValueError(f"{row['id']}: hardware TFLOP/s are compared for unfused attention only")
    predicted = {
        "throughput_tokens_per_s_per_gpu": est.tokens_per_s / gpus,
        # published MFU and TFLOP/s (Megatron-LM, llm-foundry) count attention as the full score
        # square; compare like with like
        "model_tflops_per_gpu": est.model_flops_full_square / est.time_s / est.gpus / 1e12,
        "mfu": est.mfu_full_square,
        "iteration_time": est.time_s,
        # Megatron's and DeepSpeed's published TFLOP/s (Narayanan et al. 2021, eq. 3) count the
        # recomputed forward and the whole score square: the hardware FLOPs of an unfused run
        "hardware_tflops_per_gpu": est.hw_flops / est.time_s / est.gpus / 1e12,
    }[row["measured"]]
    layout = f"tp{cfg.tp} pp{cfg.pp} dp{cfg.dp}" + (f" cp{cfg.cp}" if cfg.cp > 1 else "")
    return Case(
        f"{row['model']} {gpus}x{row['gpu']} {layout} {cfg.precision}",
        float(row["value"]), predicted, row["unit"], row["source"], row["planner_note"],
        row["id"], row["split"], row["scaling_group"], (float(gpus), float(cfg.seq_len)),
        row["framework"], gpu.generation, spec.is_moe,
        layer_ms=est.microbatch_compute_s / max(1.0, spec.layers / cfg.pp) * 1e3,
    )  # fmt: skip


def more_training_cases(kernel_level: bool = False) -> Iterator[Case]:
    """training_more.csv: llm-foundry, torchtitan, NeMo, Megatron-LM runs (rows not excluded)."""
    for row in _rows("training_more.csv"):
        if not row["exclude"]:
            yield _more_training_case(row, kernel_level)


def collective_fabric(row: dict[str, str], steps: dict[str, float] | None = None) -> Fabric:
    """The fabric a collectives_more.csv row ran on: its intra-node link, network and NICs
    (``steps``: trial values of the network's measured step costs, ``ring_step_s`` or
    ``tree_step_s``, instead of the catalog's)."""
    net = find_network(row["network"]) if row["network"] else None
    if net is not None and steps:
        net = dataclasses.replace(net, **steps)
    return link_fabric(row["link"], net, int(row["gpus_per_node"]), _int(row, "nics_per_node"))


def more_collective_cases() -> Iterator[Case]:
    """collectives_more.csv: all-reduce, reduce-scatter sweeps and multi-node runs."""
    for row in _rows("collectives_more.csv"):
        if not row["exclude"]:
            yield collective_case(row)


def collective_case(row: dict[str, str], steps: dict[str, float] | None = None) -> Case:
    """One collectives_more.csv row beside the model (``steps``: trial step costs on its
    network, as collective_fabric takes them)."""
    fabric = collective_fabric(row, steps)
    size = int(row["size_bytes"])
    est = estimate_collective(
        row["op"],  # type: ignore[arg-type]
        size, int(row["gpus"]), fabric, algorithm=row["algorithm"],
    )  # fmt: skip
    return Case(
        f"{row['system']} {row['op']} {size / 2**20:g} MiB {row['algorithm']}",
        float(row["busbw_GBps"]), est.busbw_bytes_per_s / 1e9, "GB/s busbw", row["source"],
        "; ".join(x for x in (f"{est.algorithm}, {est.bottleneck}", row["planner_note"]) if x),
        row["id"], row["split"],
    )  # fmt: skip


def _more_models() -> dict[str, ModelSpec]:
    specs = {}
    for row in _rows("models_more.csv"):
        specs[row["model"]] = ModelSpec(
            name=row["model"], source=row["source"], layers=int(row["layers"]),
            hidden=int(row["hidden"]), heads=int(row["heads"]), kv_heads=int(row["kv_heads"]),
            head_dim=int(row["head_dim"]), ffn=int(row["ffn"]), vocab=int(row["vocab"]),
            tied_embeddings=row["tied_embeddings"] == "yes", mlp=row["mlp"],  # type: ignore[arg-type]
            qkv_bias=row["qkv_bias"] == "yes", experts=int(row["experts"]),
            experts_per_token=int(row["experts_per_token"]), moe_ffn=int(row["moe_ffn"]),
            family=row["family"],
        )  # fmt: skip
    return specs


def more_inference_cases() -> Iterator[Case]:
    """inference_more.csv: decode speed (batch 1), static-batch throughput, a serving benchmark's
    time per output token and a batch's decode throughput."""
    specs = _more_models()
    for row in _rows("inference_more.csv"):
        if row["exclude"]:
            continue
        arch = row["arch"]
        if arch.startswith("catalog:"):
            spec = find_model(arch.removeprefix("catalog:"))
        else:
            spec = specs[arch.removeprefix("models_more:")]
        gpu = find_gpu(row["gpu"])
        gpus, tp = int(row["gpus"]), int(row["tp"])
        pp = gpus // tp  # Transformers' device_map splits layers over GPUs: a pipeline
        fabric = Fabric(find_link(gpu.intra_link), None, 8, 1)
        # the release the row's source ran (engine_release); a row that states none predates
        # its engine's overlapped scheduling (reference/README.md), so it is planned as release 0
        engine = find_engine(f"{row['engine_id']}@{row.get('engine_release') or '0'}")
        batch, out = int(row["batch"]), int(row["output_tokens"])

        run = partial(
            estimate_inference, spec, count_params(spec), gpu, fabric, engine, tp=tp, pp=pp,
            ep=int(row.get("ep") or 1), dp=int(row.get("dp") or 1),
            spec_tokens=int(row.get("spec_tokens") or 0),
            accept_length=float(row.get("accept_length") or 1.0), draft=row.get("draft") or "mtp",
            prompt_tokens=int(row["input_tokens"]), output_tokens=out,
            precision=row["precision"], kv_precision=row["kv_precision"],
            weight_bytes_per_param=(engine.bytes_per_weight(row["precision"])
                                    if row["precision"] in ("int4", "int8") else None),
        )  # fmt: skip
        est = run(batch=batch)
        if row["measured"] == "output_throughput_static_batch":
            predicted, unit = batch * out / est.e2e_s / gpus, "tokens/s/GPU"
        elif row["measured"] == "tpot_ms":  # a serving benchmark's mean time per output token:
            # the decode step and the prompts of the requests that arrive meanwhile
            tpot = serving_tpot_s(est, run(batch=1), batch, out, engine.prefill_mixed)
            predicted, unit = tpot * 1e3, "ms/token"
        elif row["measured"] == "decode_batch_tokens_per_s":  # batch / decode step time
            predicted, unit = est.batch_tokens_per_s, "tokens/s"
        elif row["measured"] == "decode_tokens_per_s":  # over the whole request, prefill included
            predicted, unit = out / est.e2e_s, "tokens/s"
        else:
            raise ValueError(f"{row['id']}: unknown measured kind {row['measured']!r}")
        yield Case(
            f"{row['model']} {row['gpu']} x{gpus} {row['engine']} {row['precision']} "
            f"b{batch} in={row['input_tokens']}",
            float(row["value"]), predicted, unit, row["source"], row["planner_note"],
            row["id"], row["split"], engine=engine.name,
        )  # fmt: skip


def excluded_rows() -> list[Excluded]:
    """Rows kept in reference/ but not predicted, each with its reason."""
    out = []
    for name, what in (("training_more.csv", "model"), ("collectives_more.csv", "system"),
                       ("inference_more.csv", "model")):  # fmt: skip
        for row in _rows(name):
            if row["exclude"]:
                out.append(Excluded(name, row["id"], row[what], row["exclude"], row["source"]))
    return out


def reference_row_ids() -> dict[str, list[tuple[str, str]]]:
    """Every data row's (id, split) by file, for the completeness test."""
    files = ("training.csv", "collectives.csv", "inference.csv", "training_more.csv",
             "collectives_more.csv", "inference_more.csv")  # fmt: skip
    return {name: [(row["id"], row["split"]) for row in _rows(name)] for name in files}


def offload_cases(host_efficiency: float | None = None) -> list[Case]:
    """offload.csv: llama.cpp's decode speed with ``-ngl`` layers on the GPU and the rest in host
    memory (model/offload.py), at the catalog's host efficiency (the same for every host entry)
    unless ``host_efficiency`` is given. The rows with no layer on the GPU measure the host's rate
    alone: they calibrate that efficiency; every row with layers on the GPU is held out."""
    engine = find_engine("ollama")
    reference = find_host("desktop-ddr5")
    eff = reference.efficiency if host_efficiency is None else host_efficiency
    cases = []
    for row in _rows("offload.csv"):
        spec = find_model(row["model"])
        gpu = find_gpu(row["gpu"])
        bits = float(row["bits_per_weight"]) if row["bits_per_weight"] else None
        host = replace(reference, name=row["host"], title=row["host"],
                       memory_bw_bytes_per_s=float(row["host_peak_GBps"]) * 1e9, efficiency=eff)  # fmt: skip
        est = estimate_offload(
            spec, count_params(spec), gpu, engine, host, gpus=1, batch=1,
            prompt_tokens=int(row["prompt_tokens"]), output_tokens=int(row["output_tokens"]),
            weight_bytes_per_param=bits / 8 if bits else engine.bytes_per_weight("int4"),
            kv_bytes_per_value=2.0, host_link_bytes_per_s=find_link(gpu.host_link).bw_bytes_per_s,
            gpu_layers=int(row["ngl"]),
        )  # fmt: skip
        cases.append(Case(
            f"{row['model']} {row['gpu']} -ngl {row['ngl']} ({row['host']})",
            float(row["measured_tps"]), est.decode_tokens_per_s, "tokens/s", row["source"],
            note=row["note"], row_id=row["id"], split=row["split"],
        ))  # fmt: skip
    return cases


def all_training_cases(kernel_level: bool = False) -> list[Case]:
    """Every predicted training row, old and new; ``kernel_level``: every framework at 1.0."""
    return list(training_cases(kernel_level)) + list(more_training_cases(kernel_level))


def all_collective_cases() -> list[Case]:
    """Every predicted collective row, old and new."""
    return list(collective_cases()) + list(more_collective_cases())


def all_inference_cases() -> list[Case]:
    """Every predicted inference row, old and new."""
    return list(inference_cases()) + list(more_inference_cases())


@dataclass(frozen=True)
class ScalingPair:
    """Two rows of one scaling group: measured vs predicted change between the scales."""

    group: str
    small: Case
    large: Case

    @property
    def measured_change(self) -> float:
        """Measured relative change of the quantity from the smaller to the larger scale."""
        return self.large.measured / self.small.measured - 1.0

    @property
    def predicted_change(self) -> float:
        """Predicted relative change between the same two scales."""
        return self.large.predicted / self.small.predicted - 1.0

    @property
    def error_pp(self) -> float:
        """Predicted minus measured change, in percentage points."""
        return 100.0 * (self.predicted_change - self.measured_change)


def scaling_pairs(cases: list[Case]) -> list[ScalingPair]:
    """Adjacent scales of every scaling group (rows sorted by GPUs, then sequence length)."""
    groups: dict[str, list[Case]] = {}
    for c in cases:
        if c.group:
            groups.setdefault(c.group, []).append(c)
    pairs = []
    for name, members in groups.items():
        members.sort(key=lambda c: c.scale)
        pairs += [ScalingPair(name, a, b) for a, b in pairwise(members)]
    return pairs


# The same job published with and without torch.compile (reference/training_more.csv): torchtitan
# benchmarks/llama3_h100_202412_torchtitan.md Tables 1 and 3 ("FSDP" vs "FSDP + torch.compile")
# and fms-fsdp README.md (its throughput tables before and after compile), as (eager, compiled).
COMPILE_PAIRS = (("tm079", "tm080"), ("tm082", "tm083"), ("tm164", "tm156"), ("tm165", "tm157"),
                 ("tm166", "tm158"), ("tm167", "tm159"), ("tm168", "tm160"), ("tm169", "tm161"),
                 ("tm170", "tm162"), ("tm171", "tm163"))  # fmt: skip


def compile_pairs(cases: list[Case]) -> list[tuple[Case, Case]]:
    """(eager, torch.compile) cases of COMPILE_PAIRS: what compiling the same job gains."""
    by_id = {c.row_id: c for c in cases}
    return [(by_id[e], by_id[c]) for e, c in COMPILE_PAIRS if e in by_id and c in by_id]


@dataclass(frozen=True)
class ScalePoint:
    """One node count of a published scale series (collectives_more.csv)."""

    row_id: str
    nodes: int
    busbw_gbps: float
    row: dict[str, str]


def scale_series(min_points: int = 3) -> dict[str, list[ScalePoint]]:
    """Collective rows of one cluster, collective, algorithm and stated message size at
    ``min_points`` or more node counts, by series name (the system before its colon), excluded
    rows too (a congested fabric's curve is still a curve); rows whose size was assumed are left
    out. A series with ``min_points`` node counts beyond one starts at the first of them: its
    one-node row crosses no network, and the series is the network's scaling (a shorter one keeps
    its one-node row as the base, as one NVL72 rack is to two and three). Rows of one name with
    different GPUs per node (a tray and a rack of one NVL72) are different series, named apart."""
    groups: dict[tuple[str, str], list[ScalePoint]] = {}
    for row in _rows("collectives_more.csv"):
        if ":" not in row["system"] or "size not stated" in row["planner_note"]:
            continue
        size = int(row["size_bytes"])
        name = f"{row['system'].split(':')[0]} {row['op']} {size / 2**30:g} GiB {row['algorithm']}"
        point = ScalePoint(row["id"], int(row["nodes"]), float(row["busbw_GBps"]), row)
        groups.setdefault((name, row["gpus_per_node"]), []).append(point)
    for key, points in groups.items():
        if len({p.nodes for p in points if p.nodes > 1}) >= min_points:
            groups[key] = [p for p in points if p.nodes > 1]
    names = [name for name, _ in groups]
    return {
        (name if names.count(name) == 1 else f"{name}, {gpn} GPUs per node"): sorted(
            points, key=lambda p: p.nodes
        )
        for (name, gpn), points in groups.items()
        if len({p.nodes for p in points}) >= min_points
    }
