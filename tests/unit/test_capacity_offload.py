"""`capacity` for Ollama / llama.cpp on GPUs too small for the model (--pp pinned): each replica
is the split the engine makes, the same one `plan` shows, its host layers read from host memory."""

from __future__ import annotations

import json

import pytest

from fabriclens.catalog import find_model
from fabriclens.cli.app import run
from fabriclens.errors import InputError
from fabriclens.plan.capacity import plan_capacity

COMMON = dict(output_tokens=256, prompt_tokens=1024, engine="ollama")


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, dict | None]:  # type: ignore[type-arg]
    code = run([*argv, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out) if code in (0, 1) else None


def test_a_replica_too_small_for_the_model_is_the_split_plan_shows(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Llama-3.1-70B in Ollama's Q4_K_M (43 GB) on one RTX 4090 (24 GiB): capacity and `plan -w
    inference` place the same layers on the GPU and decode at the same speed (one request at
    once, Ollama's default), and the verdict follows the target."""
    argv = ["--gpu", "rtx-4090", "--engine", "ollama", "--prompt-tokens", "1024", "--output-tokens", "256"]  # fmt: skip
    _, cap = _json(capsys, ["capacity", "llama-3.1-70b", "--users", "1", "--pp", "1", *argv])
    _, plan = _json(capsys, ["plan", "llama-3.1-70b", "-w", "inference", "--gpus", "1", *argv])
    assert cap is not None and plan is not None
    off, poff = cap["offload"], plan["offload"]
    assert off["gpu_layers"] == poff["gpu_layers"] and 0 < off["gpu_layers"] < off["layers"]
    assert off["decode_step_s"] == pytest.approx(poff["decode_step_s"], rel=1e-4)
    rep = cap["replica"]
    assert (rep["tp"], rep["pp"], rep["batch"]) == (1, 1, 1)
    assert rep["decode_step_s"] == pytest.approx(off["decode_step_s"], rel=1e-4)
    assert rep["ttft_s"] == pytest.approx(off["ttft_s"] + off["decode_step_s"], rel=1e-4)
    # ~0.36 s per token: a 50 ms target is not met, a 1 s one is
    assert cap["slo_met"] is False
    _, loose = _json(capsys, ["capacity", "llama-3.1-70b", "--users", "1", "--pp", "1",
                              "--latency-slo", "tpot=1s", *argv])  # fmt: skip
    assert loose is not None and loose["slo_met"] is True and loose["gpus"] == 1


def test_the_advice_names_the_gpus_that_hold_every_layer() -> None:
    """The host layers cost most of each token; the advice gives the fewest GPUs that hold every
    layer and their speed, which is what `capacity --pp` of that many says."""
    spec = find_model("llama-3.1-70b")
    one = plan_capacity(spec, "rtx-4090", users=1, pp=1, **COMMON)  # type: ignore[arg-type]
    two = plan_capacity(spec, "rtx-4090", users=1, pp=2, **COMMON)  # type: ignore[arg-type]
    assert one.offload is not None and two.offload is None
    assert one.offload.decode_host_s > 0.5 * one.offload.decode_step_s
    assert f"(--pp 2), {two.tpot_s * 1e3:.0f} ms per token" in one.advice[0]


def test_the_host_part_scales_with_the_host_memory_rate() -> None:
    """A rate given with --host-memory is taken as reached: twice the rate, half the time the
    host layers take per token; the GPU's part does not move."""
    spec = find_model("llama-3.1-70b")
    slow = plan_capacity(spec, "rtx-4090", users=1, pp=1, host_memory="40GB/s", **COMMON)  # type: ignore[arg-type]
    fast = plan_capacity(spec, "rtx-4090", users=1, pp=1, host_memory="80GB/s", **COMMON)  # type: ignore[arg-type]
    assert slow.offload is not None and fast.offload is not None
    assert fast.offload.decode_host_s == pytest.approx(slow.offload.decode_host_s / 2, rel=1e-9)
    gpu_part = slow.offload.decode_step_s - slow.offload.decode_host_s
    assert fast.offload.decode_step_s - fast.offload.decode_host_s == pytest.approx(gpu_part)


def test_engines_that_keep_every_layer_on_the_gpus_still_refuse() -> None:
    """vLLM has no host offload: one request that does not fit on --tp 1 --pp 1 is one line,
    exit 2 (without --tp it takes tensor parallelism instead)."""
    spec = find_model("llama-3.1-70b")
    with pytest.raises(InputError, match="does not fit on tp 1 x pp 1"):
        plan_capacity(spec, "rtx-4090", users=1, tp=1, pp=1, output_tokens=256, engine="vllm")
    wider = plan_capacity(spec, "rtx-4090", users=1, pp=1, output_tokens=256, engine="vllm")
    assert wider.offload is None and wider.tp > 1


def test_a_model_that_fits_has_no_offload_and_says_host_memory_is_unused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, doc = _json(capsys, ["capacity", "llama-3.1-8b", "--users", "1", "--gpu", "rtx-4090",
                               "--engine", "ollama", "--pp", "1", "--host-memory", "60GB/s"])  # fmt: skip
    assert code == 0 and doc is not None and doc["offload"] is None
    assert any(a.startswith("--host-memory is not used") for a in doc["assumptions"])
    assert run(["capacity", "llama-3.1-8b", "--gpu", "rtx-4090", "--host-memory", "0GB/s"]) == 2
    assert "not a positive rate" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("value", "says"),
    [("60", "has no unit"), ("7.5", "has no unit"), ("1e-30GB/s", "slower than any host memory"),
     ("0GB/s", "not a positive rate"), ("60GB", "a size, not a rate"), ("ddr9", "unknown host memory")],
)  # fmt: skip
@pytest.mark.parametrize("command", ["plan", "capacity"])
def test_a_host_memory_rate_without_a_unit_or_below_any_ram_is_refused(
    capsys: pytest.CaptureFixture[str], value: str, says: str, command: str
) -> None:
    """A bare number could be bits or bytes per second (60 read as 60 bit/s made a token take 85
    years; every rate refuses it, units.parse_rate); under 0.1 GB/s is no RAM. One line, exit 2,
    in both commands."""
    argv = (
        ["-w", "inference", "--gpus", "1"] if command == "plan" else ["--users", "1", "--pp", "1"]
    )
    code = run([command, "llama3.1:70b", "--gpu", "rtx-4090", *argv, "--host-memory", value])
    err = capsys.readouterr().err
    assert code == 2 and says in err and len(err.strip().splitlines()) == 1, err


def test_host_ram_checks_the_layers_each_replica_leaves_in_host_memory() -> None:
    """--host-ram is each replica host's free RAM + swap, as Ollama counts it before it loads:
    18.8 GiB of Llama-3.1-70B's layers do not fit in 16 GB, so no replica runs (the target is
    not met however loose); 64 GB holds them. A model that fits leaves the flag unused, said."""
    spec = find_model("llama-3.1-70b")
    loose = dict(COMMON, tpot_slo_s=1.0)
    short = plan_capacity(spec, "rtx-4090", users=1, pp=1, host_ram="16GB", **loose)  # type: ignore[arg-type]
    roomy = plan_capacity(spec, "rtx-4090", users=1, pp=1, host_ram="64GB", **loose)  # type: ignore[arg-type]
    assert short.offload is not None and short.host_fits is False and short.slo_met is False
    assert short.offload.host_bytes > 16e9 and "14.9 GiB free (--host-ram)" in short.advice[0]
    assert "does not load" in short.advice[0]
    assert roomy.host_fits is True and roomy.slo_met is True
    small = plan_capacity(
        find_model("llama-3.1-8b"), "rtx-4090", users=1, pp=1, host_ram="64GB", **COMMON
    )  # type: ignore[arg-type]
    assert small.offload is None and small.host_fits is None
    assert any(a.startswith("--host-ram is not used") for a in small.assumptions)
    with pytest.raises(InputError, match="give the unit"):
        plan_capacity(spec, "rtx-4090", users=1, pp=1, host_ram="64", **COMMON)  # type: ignore[arg-type]


def test_where_every_layer_needs_more_gpus_the_one_gpu_split_is_advised() -> None:
    """`capacity llama3.1:70b --gpu rtx-4090` sizes replicas of two cards that hold every layer;
    a newcomer has one: the advice gives what the engine makes of one (the --pp 1 replica's split
    and speed). A model one card holds gets no such line; the speed advice names no tensor
    parallelism, which Ollama does not have."""
    spec = find_model("llama-3.1-70b")
    two = plan_capacity(spec, "rtx-4090", users=1, **COMMON)  # type: ignore[arg-type]
    one = plan_capacity(spec, "rtx-4090", users=1, pp=1, **COMMON)  # type: ignore[arg-type]
    assert two.pp == 2 and two.offload is None and one.offload is not None
    line = next(a for a in two.advice if a.startswith("on one rtx-4090 (--pp 1)"))
    assert f"keeps {one.offload.gpu_layers} of 80 layers" in line
    assert f"{one.tpot_s * 1e3:.0f} ms per token" in line
    assert not any("tensor parallelism" in a for a in two.advice)
    small = plan_capacity(find_model("llama-3.1-8b"), "rtx-4090", users=1, **COMMON)  # type: ignore[arg-type]
    assert not any(a.startswith("on one") for a in small.advice)
