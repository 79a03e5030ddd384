"""A user catalog adds and replaces entries with the built-in schema's checks (--catalog FILE,
FABRICLENS_CATALOG, ~/.config/fabriclens/catalog.toml)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from fabriclens.catalog.load import reset_caches
from fabriclens.cli.app import run

GPU = """
[[gpu]]
name = "my-card"
title = "My Card 48GB"
memory_bytes = 51539607552
hbm_bw_bytes_per_s = 0.96e12
bf16_flops_per_s = 181e12
fp16_flops_per_s = 181e12
fp8_flops_per_s = 0
matmul_efficiency = 0.7
matmul_efficiency_source = "estimate"
memory_bw_efficiency = 0.8
intra_link = "pcie4-x16"
source = "vendor datasheet"
"""
FRAMEWORK = """
[[framework]]
name = "our-stack"
title = "our fork of Megatron-Core"
efficiency = { hopper = 0.8 }
efficiency_source = "our own runs against fabriclens plan --framework megatron"
source = "our cluster"
"""
NET_OVERRIDE = """
[[network]]
name = "25gbe"
title = "25GbE on our switches"
kind = "tcp"
rate_bits_per_s = 25e9
efficiency = 0.5
efficiency_source = "measured on our cluster"
latency_s = 50e-6
cost_relative = 1.6
source = "our iperf3 runs"
"""


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    monkeypatch.delenv("FABRICLENS_CATALOG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    reset_caches()
    yield
    reset_caches()


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> object:
    assert run(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_catalog_flag_adds_a_gpu_the_planner_uses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "cat.toml"
    f.write_text(GPU)
    doc = _json(
        capsys,
        [
            "plan",
            "llama-3.1-8b",
            "-w",
            "inference",
            "--gpu",
            "my-card",
            "--gpus",
            "1",
            "--catalog",
            str(f),
            "--json",
        ],
    )
    assert isinstance(doc, dict) and "my-card" in json.dumps(doc)
    # without the flag the GPU is unknown again: the flag lasts one run
    assert run(["plan", "llama-3.1-8b", "--gpu", "my-card"]) == 2
    assert "unknown GPU 'my-card'" in capsys.readouterr().err


def test_default_file_is_read_and_replaces_a_builtin(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "config" / "fabriclens").mkdir(parents=True)
    (tmp_path / "config" / "fabriclens" / "catalog.toml").write_text(NET_OVERRIDE)
    reset_caches()
    nets = _json(capsys, ["catalog", "networks", "--json"])
    assert isinstance(nets, list)
    mine = [n for n in nets if n["name"] == "25gbe"]
    assert len(mine) == 1 and mine[0]["efficiency"] == 0.5  # replaced, not duplicated
    user = _json(capsys, ["catalog", "networks", "--user", "--json"])
    assert [n["name"] for n in user] == ["25gbe"]  # type: ignore[union-attr]
    assert run(["catalog", "gpus", "--user"]) == 0
    assert "adds no gpus" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("kind", "text", "needle"),
    [
        ("gpus", "[[gpu]]\nname = 'x'\n", "user catalog"),  # fields missing
        (
            "gpus",
            GPU.replace("matmul_efficiency = 0.7", "matmul_efficiency = 7"),
            "matmul_efficiency",
        ),
        ("gpus", GPU.replace('source = "vendor datasheet"', 'source = ""'), "source"),
        ("gpus", GPU + 'generation = "kepler"\n', "generation"),
        ("gpus", "[[gpu]\n", "not valid TOML"),
        ("gpus", "[[router]]\nname = 'x'\n", "unknown table"),
        ("gpus", "gpu = 3\n", "array of tables"),
        ("gpus", GPU + "\nbogus_field = 1\n", "bogus_field"),
        ("gpus", '[[gpu]]\nname = "x"\ntitle = "X"\nbase = "no-such-card"\n', "no entry of"),
        ("gpus", '[[gpu]]\nname = "x"\ntitle = "X"\nbase = 3\n', "base must be"),
        (
            "engines",
            '[[engine]]\nname = "x"\nbase = "ollama"\nmeasured_caveat = 5\n',
            "must be text",
        ),
        (
            "engines",
            '[[engine]]\nname = "x"\nbase = "ollama"\nmoe_caveat = 5\n',
            "moe_caveat: must be text",
        ),
        (
            "engines",
            '[[engine]]\nname = "x"\nbase = "vllm"\nprefill_mixed = "yes"\n',
            "must be true or false",
        ),
        (
            "gpus",
            '[[gpu]]\nname = "x"\ntitle = "X"\nbase = "y"\n'
            '[[gpu]]\nname = "y"\ntitle = "Y"\nbase = "x"\n',
            "leads back to itself",
        ),
        (
            "gpus",
            "".join(
                f'[[gpu]]\nname = "g{i}"\ntitle = "G"\nbase = "g{i + 1}"\n' for i in range(3000)
            )
            + '[[gpu]]\nname = "g3000"\ntitle = "G"\nbase = "h100"\n',
            "more than 8 bases in a chain",
        ),
        (
            "engines",
            '[[engine]]\nname = "x"\nbase = "hf"\nkv_cache_copies = -1\n',
            "kv_cache_copies",
        ),
        (
            "engines",
            '[[engine]]\nname = "x"\nbase = "hf"\nspread = { low = 3, high = 2, runs = 9 }\n',
            "spread",
        ),
        ("gpus", GPU + "decode_bw_efficiency = 1.5\n", "decode_bw_efficiency: must be at most 1"),
        ("gpus", GPU + 'decode_bw_efficiency = "fast"\n', "decode_bw_efficiency: must be a number"),
        # TOML spells inf and nan; no catalog value is either
        (
            "networks",
            '[[network]]\nname = "x"\nbase = "ndr-ib"\nrate_bits_per_s = inf\n',
            "rate_bits_per_s: must be a finite number",
        ),
        (
            "networks",
            '[[network]]\nname = "x"\nbase = "ndr-ib"\ntree_step_s = inf\n'
            'tree_step_source = "measured: ours"\n',
            "tree_step_s: must be a finite number",
        ),
        (
            "gpus",
            GPU.replace("hbm_bw_bytes_per_s = 0.96e12", "hbm_bw_bytes_per_s = nan"),
            "hbm_bw_bytes_per_s: must be a finite number",
        ),
        ("gpus", GPU + "decode_bw_efficiency = 0.9\n", "decode_bw_efficiency_source"),
        (
            "engines",
            '[[engine]]\nname = "x"\nbase = "vllm"\nint4_stream_share = 0\n',
            "int4_stream_share: must be in (0, 1]",
        ),
        (
            "engines",
            '[[engine]]\nname = "x"\nbase = "vllm"\noverlap_always = true\n',
            "overlap_always: names no release",
        ),
        (
            "engines",
            '[[engine]]\nname = "x"\nbase = "gpt-fast"\noverlap_always = "yes"\n',
            "overlap_always: must be true or false",
        ),
        ("frameworks", FRAMEWORK.replace("hopper = 0.8", "hopper = 1.8"), "efficiency.hopper"),
        ("frameworks", FRAMEWORK.replace("hopper = 0.8", "kepler = 0.8"), "'kepler' is not one"),
        ("frameworks", FRAMEWORK.replace("{ hopper = 0.8 }", "{}"), "at least one GPU generation"),
        (
            "frameworks",
            FRAMEWORK + 'attention_by_generation = { blackwell = "flash3" }\n',
            "attention_by_generation.blackwell",
        ),
        (
            "frameworks",
            FRAMEWORK + 'attention_by_generation = { kepler = "fused" }\n',
            "'kepler' is not one",
        ),
        (
            "frameworks",
            FRAMEWORK + 'attention_by_generation = "fused"\n',
            "attention_by_generation",
        ),
        (
            "frameworks",
            FRAMEWORK.replace('"our own runs against fabriclens plan --framework megatron"', '""'),
            "efficiency_source",
        ),
        ("frameworks", FRAMEWORK + "spread = { low = 1.2, high = 1.4, runs = 12 }\n", "spread"),
        ("frameworks", FRAMEWORK + "spread = { low = 0.8, high = 1.2 }\n", "low, high and runs"),
        ("frameworks", FRAMEWORK + "moe_spread = [0.5, 1.1]\n", "moe_spread"),
        ("frameworks", FRAMEWORK + "layer_host_ms = -1\n", "layer_host_ms"),
        ("frameworks", FRAMEWORK + 'zero3_calls = "per-module"\n', "zero3_calls"),
        ("frameworks", FRAMEWORK + 'layer_host_ms = "fast"\n', "layer_host_ms"),
        (
            "frameworks",
            FRAMEWORK + "spread = { low = 0.8, high = 1.2, runs = 2.5 }\n",
            "spread.runs",
        ),
    ],
)
def test_bad_user_catalog_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, text: str, needle: str
) -> None:
    f = tmp_path / "cat.toml"
    f.write_text(text)
    assert run(["catalog", kind, "--catalog", str(f)]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1 and "Traceback" not in err


def test_catalog_flag_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["catalog", "gpus", "--catalog", str(tmp_path / "missing.toml")]) == 2
    assert "No such file" in capsys.readouterr().err
    assert run(["catalog", "gpus", "--catalog", str(tmp_path)]) == 2
    assert "is a directory, not a regular file" in capsys.readouterr().err
    assert run(["catalog", "gpus", "--catalog"]) == 2
    assert "--catalog needs a file" in capsys.readouterr().err


def test_user_framework_is_planned_with(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "cat.toml"
    f.write_text(FRAMEWORK)
    argv = ["plan", "llama-3.1-8b", "--gpus", "8", "--catalog", str(f), "--json"]
    doc = _json(capsys, [*argv, "--framework", "our-stack"])
    assert isinstance(doc, dict) and doc["framework"]["efficiency"] == pytest.approx(0.8)
    # a GPU of a generation the framework does not list takes its nearest (here: the only one)
    doc = _json(capsys, [*argv, "--framework", "our-stack", "--gpu", "a100"])
    assert isinstance(doc, dict) and doc["framework"]["efficiency"] == pytest.approx(0.8)


CAPPED = """
[[gpu]]
name = "h100-500w"
base = "h100"
title = "H100 SXM capped at 500 W"
bf16_flops_per_s = 700e12
power_w = 500
source = "our clocks under the cap"

[[gpu]]
name = "h100-sxm"
base = "h100-sxm"
title = "H100 SXM (our HBM2e nodes)"
hbm_bw_bytes_per_s = 2.4e12
source = "our nodes"
"""


def test_base_entries_take_every_field_they_do_not_set(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    builtin = {g["name"]: g for g in _json(capsys, ["catalog", "gpus", "--json"])}  # type: ignore[union-attr]
    # the built-in export variants are written as their base plus what differs
    a100, a800 = builtin["a100-sxm-80gb"], builtin["a800-sxm-80gb"]
    assert a800["intra_link"] != a100["intra_link"] and a800["title"] != a100["title"]
    assert "a100" not in a800["aliases"]  # identity is never inherited
    for field in ("bf16_flops_per_s", "hbm_bw_bytes_per_s", "memory_bytes", "generation"):
        assert a800[field] == a100[field]
    f = tmp_path / "cat.toml"
    f.write_text(CAPPED)
    mine = {g["name"]: g for g in _json(capsys, ["catalog", "gpus", "--catalog", str(f), "--json"])}  # type: ignore[union-attr]
    capped, h100 = mine["h100-500w"], builtin["h100-sxm"]
    assert capped["bf16_flops_per_s"] == 700e12 and capped["power_w"] == 500
    assert capped["attention_efficiency"] == h100["attention_efficiency"]
    assert capped["aliases"] == [] and capped["title"] == "H100 SXM capped at 500 W"
    assert capped["notes"] == ""  # notes describe the entry they sit on
    # an entry may replace the built-in of its own name and build on it
    assert mine["h100-sxm"]["hbm_bw_bytes_per_s"] == 2.4e12
    assert mine["h100-sxm"]["bf16_flops_per_s"] == h100["bf16_flops_per_s"]
    assert mine["h100-sxm"]["aliases"] == h100["aliases"]  # it replaces the entry: same names
    assert run(["catalog", "gpus", "--catalog", str(f), "--user"]) == 0
    assert "h100-500w" in capsys.readouterr().out


def test_readme_catalog_examples_load(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text("utf-8")
    blocks = [b.split("```")[0] for b in readme.split("```\n[[")[1:]]
    assert len(blocks) >= 2
    for n, block in enumerate(blocks):
        f = tmp_path / f"example{n}.toml"
        f.write_text("[[" + block)
        kind = {"gpu": "gpus", "network": "networks"}[block.split("]]")[0]]
        assert run(["catalog", kind, "--catalog", str(f), "--user"]) == 0, capsys.readouterr().err
        assert "adds no" not in capsys.readouterr().out


def test_fused_attention_rates_come_together(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "cat.toml"
    f.write_text(
        GPU + "fused_attention_efficiency = 0.5\nfused_attention_efficiency_source = 'ours'\n"
    )
    assert run(["catalog", "gpus", "--catalog", str(f)]) == 2
    assert "fused_attention_bwd_efficiency together" in capsys.readouterr().err
