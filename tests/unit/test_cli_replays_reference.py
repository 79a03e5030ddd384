"""`fabriclens plan`, given a published training row's model and recipe as flags, answers what
benchmarks/accuracy.py reports for that row: the accuracy the README states is the accuracy a user
gets from the command line, not only from the harness that calls the step model directly.

An MPT or a tied Llama shape is given as the config.json its checkpoint would carry; a GPT-style
or Nemotron shape as flags (--mlp gelu --norm layer, learned or rotary positions). Every row not
excluded is replayed."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from fabriclens.cli.app import build_app
from reference import _more_training_case, _rows

TOLERANCE = 0.005  # JSON rounds the figures it prints; nothing else may differ
# row columns passed as the flags of the same name
VALUE_FLAGS = {
    "gpu": "--gpu", "gpus": "--gpus", "gpus_per_node": "--gpus-per-node", "tp": "--tp",
    "pp": "--pp", "dp": "--dp", "cp": "--cp", "ep": "--ep", "etp": "--etp", "zero": "--zero",
    "seq_len": "--seq-len", "global_batch": "--global-batch", "micro_batch": "--micro-batch",
    "interleave": "--interleave", "precision": "--precision", "framework": "--framework",
    "moe_dispatch": "--moe-dispatch", "lora_targets": "--lora-targets",
}  # fmt: skip


def config_json(row: dict[str, str], folder: Path) -> Path | None:
    """The Hugging Face config.json of an MPT or tied-Llama row's shape, written to ``folder``."""
    if row["arch"] == "mpt":
        config = {"model_type": "mpt", "n_layers": int(row["layers"]), "d_model": int(row["hidden"]),
                  "n_heads": int(row["heads"]), "vocab_size": int(row["vocab"]),
                  "expansion_ratio": int(row["ffn"]) / int(row["hidden"]),
                  "max_seq_len": int(row["seq_len"])}  # fmt: skip
    elif row["arch"] == "llama-tied":
        config = {"model_type": "llama", "num_hidden_layers": int(row["layers"]),
                  "hidden_size": int(row["hidden"]), "num_attention_heads": int(row["heads"]),
                  "num_key_value_heads": int(row["kv_heads"] or row["heads"]),
                  "intermediate_size": int(row["ffn"]), "vocab_size": int(row["vocab"]),
                  "max_position_embeddings": int(row["seq_len"]),
                  "tie_word_embeddings": True}  # fmt: skip
    else:
        return None
    path = folder / f"{row['id']}.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


def replay_args(row: dict[str, str], folder: Path) -> list[str] | None:
    """The `plan` command line of a training_more.csv row, or None where neither flags nor a
    config.json name its model."""
    arch = row["arch"]
    config = config_json(row, folder)
    if arch.startswith("catalog:"):
        args = ["plan", arch.removeprefix("catalog:")]
    elif config is not None:
        args = ["plan", str(config)]
    elif arch in ("llama", "gpt", "nemotron"):
        args = ["plan", "--layers", row["layers"], "--hidden", row["hidden"], "--heads",
                row["heads"], "--kv-heads", row["kv_heads"] or row["heads"], "--ffn", row["ffn"],
                "--vocab", row["vocab"]]  # fmt: skip
        if arch != "llama":  # a 2-matrix GELU MLP and LayerNorm; GPT's learned positions
            positions = "learned" if arch == "gpt" else "rotary"
            args += ["--mlp", "gelu", "--norm", "layer", "--positions", positions]
    else:
        return None
    for column, flag in VALUE_FLAGS.items():
        if row[column]:
            args += [flag, row[column]]
    workload = row["workload"] or "pretrain"
    if workload == "lora" and row["base_bits"] == "4":
        workload = "qlora"
    args += ["--workload", workload, "--recompute", row["recompute"] or "none"]
    args.append(
        "--sequence-parallel" if row["sequence_parallel"] == "yes" else "--no-sequence-parallel"
    )
    args.append("--no-flash-attention" if row["flash_attention"] == "no" else "--flash-attention")
    args += ["--dropout"] if row["dropout"] == "yes" else []
    args += ["--no-dp-overlap"] if row["dp_overlap"] == "no" else []
    args += ["--ep-overlap"] if row["ep_overlap"] == "yes" else []
    if row["network"] and int(row["gpus"]) > int(row["gpus_per_node"]):
        args += ["--network", row["network"]]
        args += ["--nics-per-node", row["nics_per_node"]] if row["nics_per_node"] else []
    return [*args, "--json"]


def planned(doc: dict, measured: str) -> float:
    """The row's measured quantity as `plan --json` states it."""
    t = doc["throughput"]
    return {
        "throughput_tokens_per_s_per_gpu": t["tokens_per_s"] / doc["gpus"],
        # the full score square, as published MFU and TFLOP/s count attention
        "model_tflops_per_gpu": t["tflops_per_gpu"] * t["mfu_full_square"] / t["mfu"],
        "mfu": t["mfu_full_square"],
        "iteration_time": doc["step"]["time_s"],
        "hardware_tflops_per_gpu": t["hw_tflops_per_gpu"],
    }[measured]


def test_plan_from_the_command_line_answers_what_the_harness_reports(tmp_path: Path) -> None:
    app, runner = build_app(), CliRunner()
    replayed, differ = 0, []
    for row in _rows("training_more.csv"):
        args = None if row["exclude"] else replay_args(row, tmp_path)
        if args is None:
            continue
        result = runner.invoke(app, args)
        assert result.exit_code == 0, f"{row['id']}: {' '.join(args)}\n{result.output}"
        cli = planned(json.loads(result.output), row["measured"])
        harness = _more_training_case(row).predicted
        if abs(cli / harness - 1) > TOLERANCE:
            differ.append(f"{row['id']}: plan {cli:.4g}, harness {harness:.4g}: {' '.join(args)}")
        replayed += 1
    assert replayed > 950, replayed  # every row not excluded
    assert not differ, "\n".join(differ)
