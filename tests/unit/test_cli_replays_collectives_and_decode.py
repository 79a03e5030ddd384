"""`fabriclens collective` and `fabriclens plan -w inference`, given a published row's setup as
flags, answer what benchmarks/accuracy.py reports for it (as test_cli_replays_reference.py checks
for training): the README's accuracy is what the command line gives.

A collective row names its intra-node link, not its GPU: `collective --intra-link` then prices
the GPU that link joins (its generation's NCCL caps, its host link), as the harness does. A
serving benchmark's time per output token is the plan's `tpot_under_load_s` (the decode step and
the prompts of newcomers); models the catalog does not list are left out."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from fabriclens.cli.app import build_app
from reference import _rows, collective_case, more_inference_cases

TOLERANCE = 0.005  # JSON rounds the figures it prints; nothing else may differ


def test_collective_from_the_command_line_answers_what_the_harness_reports() -> None:
    app, runner = build_app(), CliRunner()
    replayed, differ = 0, []
    for row in _rows("collectives_more.csv"):
        if row["exclude"]:
            continue
        args = ["collective", row["op"], f"{row['size_bytes']}B", "--ranks", row["gpus"],
                "--gpus-per-node", row["gpus_per_node"], "--intra-link", row["link"],
                "--algo", row["algorithm"], "--json"]  # fmt: skip
        args += ["--network", row["network"]] if row["network"] else []
        args += ["--nics-per-node", row["nics_per_node"]] if row["nics_per_node"] else []
        result = runner.invoke(app, args)
        assert result.exit_code == 0, f"{row['id']}: {' '.join(args)}\n{result.output}"
        cli = json.loads(result.output)["busbw_GBps"]
        harness = collective_case(row).predicted
        if abs(cli / harness - 1) > TOLERANCE:
            differ.append(f"{row['id']}: {cli:.4g} GB/s, harness {harness:.4g}: {' '.join(args)}")
        replayed += 1
    assert replayed > 350, replayed
    assert not differ, "\n".join(differ)


def test_an_inference_plan_answers_what_the_harness_reports() -> None:
    app, runner = build_app(), CliRunner()
    harness = {case.row_id: case.predicted for case in more_inference_cases()}
    replayed, differ = 0, []
    for row in _rows("inference_more.csv"):
        batch, out = int(row["batch"]), int(row["output_tokens"])
        if row["exclude"] or not row["arch"].startswith("catalog:"):
            continue
        gpus, tp = int(row["gpus"]), int(row["tp"])
        args = ["plan", row["arch"].removeprefix("catalog:"), "-w", "inference",
                "--gpu", row["gpu"], "--gpus", row["gpus"], "--tp", row["tp"],
                "--pp", str(gpus // tp), "--batch", row["batch"],
                "--engine", f"{row['engine_id']}@{row['engine_release'] or '0'}",
                "--prompt-tokens", row["input_tokens"], "--output-tokens", row["output_tokens"],
                "--precision", row["precision"], "--kv-precision", row["kv_precision"]]  # fmt: skip
        for column, flag in (("ep", "--ep"), ("dp", "--dp"), ("spec_tokens", "--spec-tokens"),
                             ("accept_length", "--accept-length"), ("draft", "--draft")):  # fmt: skip
            args += [flag, row[column]] if row[column] else []
        result = runner.invoke(app, [*args, "--json"])
        assert result.exit_code == 0, f"{row['id']}: {' '.join(args)}\n{result.output}"
        inf = json.loads(result.output)["inference"]
        cli = {
            "output_throughput_static_batch": batch * out / inf["e2e_s"] / gpus,
            "tpot_ms": inf["tpot_under_load_s"] * 1e3,
            "decode_batch_tokens_per_s": inf["batch_tokens_per_s"],
            "decode_tokens_per_s": out / inf["e2e_s"],
        }[row["measured"]]
        if abs(cli / harness[row["id"]] - 1) > TOLERANCE:
            differ.append(
                f"{row['id']}: {cli:.4g}, harness {harness[row['id']]:.4g}: {' '.join(args)}"
            )
        replayed += 1
    assert replayed > 550, replayed
    assert not differ, "\n".join(differ)
