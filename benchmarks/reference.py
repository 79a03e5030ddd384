"""Published measurements (reference/ in this repository) turned into model predictions.

Each case names its source row; `accuracy.py` prints them and the unit tests assert their
tolerances. The model is not fitted to these rows: every efficiency comes from the catalog,
whose sources are vendor specs, NCCL's own topology constants and the MAMF table.
"""

from __future__ import annotations

import csv
import statistics
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from fabriclens.catalog import find_engine, find_gpu, find_link, find_model, find_network
from fabriclens.catalog.schema import ModelSpec
from fabriclens.model.arch import count_params
from fabriclens.model.collectives import Fabric, estimate_collective
from fabriclens.model.inference import estimate_inference
from fabriclens.model.layout import TrainConfig
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

    @property
    def error(self) -> float:
        """Signed relative error of the prediction."""
        return self.predicted / self.measured - 1.0


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


def collective_cases() -> Iterator[Case]:
    """collectives.csv: all-reduce bus bandwidth, intra-node and per NIC."""
    for row in _rows("collectives.csv"):
        note = row["algorithm_note"]
        algo = "ring" if "NVLS off" in note else "auto"
        if row["system"] == "per-NIC rule of thumb":
            # two 8-GPU HGX H100 nodes, one NIC each: the busbw equals that NIC's
            fabric = Fabric(find_link("nvlink4-nvswitch"), find_network(NICS[row["nic"]]), 8, 1)
            ranks, size = 16, 8 * 2**30
        else:
            net = find_network(NICS[row["nic"]]) if row["nic"] else None
            gpn = int(row["gpus_per_node"])
            fabric = Fabric(
                find_link(INTRA[row["intra_node"]]), net, gpn, int(row["nics_per_node"] or 1)
            )
            ranks, size = int(row["gpus"]), int(row["size_bytes"])
        est = estimate_collective("all_reduce", size, ranks, fabric, algorithm=algo)
        yield Case(
            name=f"{row['system']} {row['nic'] or ''} {note}".strip(),
            measured=float(row["busbw_GBps"]),
            predicted=est.busbw_bytes_per_s / 1e9,
            unit="GB/s busbw",
            source=row["source"],
            note=f"{est.algorithm}, {est.bottleneck}",
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


def training_cases() -> Iterator[Case]:
    """training.csv: iteration time (Megatron-LM, A100) and MFU (llm-foundry, H100)."""
    for row in _rows("training.csv"):
        gpu = find_gpu(row["gpu"])
        gpus, tp, pp, dp = (int(row[k]) for k in ("gpus", "tp", "pp", "dp"))
        if row["model"].startswith("MPT"):
            spec = find_model("mpt-7b")
            # llm-foundry benchmarking table: micro-batch 6, no gradient accumulation, FSDP
            # FULL_SHARD, no activation checkpointing, flash attention, one 8-GPU node
            cfg = TrainConfig(gpus=gpus, gpus_per_node=8, tp=tp, pp=pp, dp=dp, zero=3,
                              recompute="none", seq_len=int(row["seq_len"]), global_batch=48,
                              micro_batch=6)  # fmt: skip
            fabric = Fabric(find_link(gpu.intra_link), None, 8, 1)
            est = estimate_training_step(spec, count_params(spec), gpu, fabric, cfg)
            yield Case(f"{row['model']} {gpus}x{row['gpu']} FSDP", float(row["value"]), est.mfu,
                       "MFU", row["source"], "micro-batch 6, global 48 (llm-foundry table)")  # fmt: skip
            continue
        spec = _gpt_spec(row)
        # Megatron-LM 2022 (Korthikanti et al.): no FlashAttention, dropout on, 8 x A100 per
        # node on NVLink3, 8 x 200G HDR InfiniBand per node (Selene), micro-batch 1
        cfg = TrainConfig(
            gpus=gpus, gpus_per_node=8, tp=tp, pp=pp, dp=dp, zero=0, recompute=row["recompute"],  # type: ignore[arg-type]
            sequence_parallel=row["sequence_parallel"] == "yes", seq_len=int(row["seq_len"]),
            global_batch=int(row["global_batch"]), micro_batch=1, interleave=int(row["interleave"]),
            flash_attention=False, dropout=True,
        )  # fmt: skip
        fabric = Fabric(find_link("nvlink3-nvswitch"), find_network("hdr-ib"), 8, 8,
                        find_link(gpu.host_link))  # fmt: skip
        est = estimate_training_step(spec, count_params(spec), gpu, fabric, cfg)
        yield Case(
            f"{row['model']} {gpus}x A100 tp{tp} pp{pp} {row['recompute']}",
            float(row["value"]), est.time_s, "s / iteration", row["source"],
        )  # fmt: skip


def inference_cases() -> Iterator[Case]:
    """inference.csv: single-sequence decode speed."""
    engines = {"vLLM 0.6.3": "vllm", "HF Transformers": "hf"}
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
        )  # fmt: skip


def median_abs_error(cases: list[Case]) -> float:
    """Median of |error| over the cases."""
    return statistics.median(abs(c.error) for c in cases)
