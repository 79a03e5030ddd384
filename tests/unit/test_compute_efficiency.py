"""Compute efficiency per GPU generation and per operation class, each from a named source."""

from __future__ import annotations

from dataclasses import replace

import pytest

from fabriclens.catalog import find_gpu, find_link, find_model, find_network
from fabriclens.model.arch import count_params
from fabriclens.model.collectives import Fabric
from fabriclens.model.layout import TrainConfig
from fabriclens.model.step import estimate_training_step

SPEC = find_model("llama-3.1-8b")
COUNTS = count_params(SPEC)
H100 = find_gpu("h100-sxm")
NODE = Fabric(find_link("nvlink4-nvswitch"), find_network("ndr-ib"), 8, 8, find_link("pcie5-x16"))
CFG = TrainConfig(gpus=8, gpus_per_node=8, tp=1, pp=1, dp=8, zero=1, seq_len=8192, global_batch=8,
                  micro_batch=1)  # fmt: skip


def test_fp8_speedup_over_bf16_is_in_the_published_range() -> None:
    """Sources: torchtitan's Llama-3.1-8B on 8 H100s, 6,667 -> 8,532 tokens/s/GPU with float8
    (1.28x, reference/training_more.csv tm080/tm081); Transformer Engine's published end-to-end
    gains of 1.2-1.5x. The best FP8 GEMMs reach ~0.75 of the FP8 peak (tilelang's H800 table,
    FBGEMM#2546's FP8 / BF16 ratio; smaller shapes less, by the GEMM-by-shape table), attention and
    the LM head stay BF16, and every FP8 GEMM's input is cast. Tolerance: the published range."""
    bf16 = estimate_training_step(SPEC, COUNTS, H100, NODE, CFG)
    fp8 = estimate_training_step(SPEC, COUNTS, H100, NODE, replace(CFG, precision="fp8"))
    assert 1.2 <= bf16.time_s / fp8.time_s <= 1.5
    assert any("attention and the LM head in BF16" in a for a in fp8.assumptions)


def test_blackwell_fp8_gemm_rate_is_measured_and_xlas_ratio_agrees() -> None:
    """B200's best FP8 GEMM is NVIDIA's measurement: 3,151 of 4,500 TFLOP/s in aiconfigurator's
    TensorRT-LLM data (catalog/data/gemm_best.csv, tests/unit/test_measured_kernel_rates.py). A
    derivation it replaced agrees within 10%: XLA's sm_100 (B200) GEMM table (catalog/data/
    gemm_shapes.csv, from OpenXLA's matmul_interpolator_data.h) runs FP8 at 2,765 TFLOP/s and
    BF16 at 1,417 at its largest shape, 4096^3 (1.95x), and the BF16 MAMF is 1,745 of 2,250, so
    0.776 x 1.95 / 2 = 0.757 of the FP8 peak (twice the BF16). B100, unmeasured, takes B200's."""
    import csv

    from fabriclens.catalog.gemm_shapes import DATA

    with DATA.open(encoding="utf-8") as f:
        rows = csv.DictReader(line for line in f if not line.startswith("#"))
        (row,) = [
            r
            for r in rows
            if (r["table"], r["m"], r["n"], r["k"]) == ("sm_100", "4096", "4096", "4096")
        ]
    bf16, fp8 = float(row["bf16_flops"]), float(row["fp8_flops"])
    assert fp8 / bf16 == pytest.approx(1.95, abs=0.005)
    b200 = find_gpu("b200")
    assert b200.fp8_flops_per_s == 2 * b200.bf16_flops_per_s
    assert b200.fp8_matmul_efficiency == pytest.approx(3151e12 / 4500e12, abs=0.005)
    derived = b200.matmul_efficiency * (fp8 / bf16) / 2
    assert b200.fp8_matmul_efficiency == pytest.approx(derived, rel=0.10)
    assert find_gpu("b100").fp8_matmul_efficiency == b200.fp8_matmul_efficiency
    # B300 has its own measured figures (stas00/ml-engineering's MAMF table, torch 2.9.1): BF16
    # 1,769.0 and FP8 3,353.3 TFLOP/s of 2,250 and 4,500, within 7% of B200's measured FP8 rate
    b300 = find_gpu("b300")
    assert b300.matmul_efficiency == pytest.approx(1769.0 / 2250, abs=0.001)
    assert b300.fp8_matmul_efficiency == pytest.approx(3353.3 / 4500, abs=0.001)
    assert b300.fp8_matmul_efficiency == pytest.approx(b200.fp8_matmul_efficiency, rel=0.07)


def test_hopper_attention_runs_at_flashattention2s_h100_fraction() -> None:
    """Shah et al. 2024 (FlashAttention-3): FlashAttention-2 reaches ~35% of H100 peak, against
    50-70% of A100 peak (Dao 2023); the step's attention time follows the GPU's own figure."""
    a100 = find_gpu("a100-sxm-80gb")
    assert H100.attention_efficiency == pytest.approx(0.35)
    assert a100.attention_efficiency == pytest.approx(0.55)
    est = estimate_training_step(SPEC, COUNTS, H100, NODE, CFG)
    assert any("35% of the BF16 peak" in a and "FlashAttention-3" in a for a in est.assumptions)
    # attention takes a larger share of an H100 step than 0.55 of peak would give it
    faster = replace(H100, attention_efficiency=0.55)
    assert est.time_s > estimate_training_step(SPEC, COUNTS, faster, NODE, CFG).time_s * 1.02


def test_fp8_gemm_fraction_has_a_source() -> None:
    for name in ("h100-sxm", "h200", "b200"):
        g = find_gpu(name)
        assert 0 < g.fp8_matmul_efficiency < g.matmul_efficiency
        assert len(g.fp8_matmul_efficiency_source) > 10


def test_flashattention_backward_is_two_and_a_half_forwards_at_its_own_rate() -> None:
    """FlashAttention's backward recomputes the scores: 2.5x the forward's FLOPs
    (Dao-AILab/flash-attention benchmarks/benchmark_flash_attention.py), at the backward rate the
    FlashAttention-3 paper measured for FlashAttention-2 on H100 (~310 TFLOP/s at 4k tokens,
    head dim 128). Checked on the step: doubling only the attention rates (forward and backward)
    saves 3.5 forward-attention times per layer, not 3."""
    assert H100.attention_bwd_efficiency == pytest.approx(0.31)
    gpu = replace(H100, gemm_shapes="")
    base = estimate_training_step(SPEC, COUNTS, gpu, NODE, CFG)
    double = replace(gpu, attention_efficiency=0.70, attention_bwd_efficiency=0.62)
    fast = estimate_training_step(SPEC, COUNTS, double, NODE, CFG)
    tokens = CFG.micro_batch * CFG.seq_len
    from fabriclens.model.arch import attention_core_flops_per_token

    core = tokens * attention_core_flops_per_token(SPEC, CFG.seq_len) * 0.5  # causal half
    saved = core / (989e12 * 0.35) / 2 + 2.5 * core / (989e12 * 0.31) / 2
    per_layer = (base.microbatch_compute_s - fast.microbatch_compute_s) / SPEC.layers
    assert per_layer == pytest.approx(saved, rel=1e-6)
    assert any("0.31" in a or "31% backward" in a for a in base.assumptions)


def test_nvidia_stacks_run_cudnn_attention_eager_pytorch_flashattention2() -> None:
    """The framework names its attention kernel: NVIDIA's recipes, Megatron-Core (Transformer
    Engine, Megatron-LM core_v0.6.0's default --transformer-impl) and MaxText run cuDNN's fused
    attention, at 518 / 499 TFLOP/s forward / backward on H100 (FlashAttention-3 paper, head dim
    128, 4k tokens), eager PyTorch FlashAttention-2. GPUs without a published cuDNN figure (A100)
    take their FlashAttention-2 rates for both."""
    from fabriclens.catalog import find_framework

    assert find_framework("nemo").attention == "fused"
    assert find_framework("megatron").attention == "fused"
    assert find_framework("jax").attention == "fused"
    assert find_framework("pytorch").attention == "flash"
    assert H100.attention_rates("fused")[:2] == (0.52, 0.50)
    assert H100.attention_rates("flash")[:2] == (0.35, 0.31)
    a100 = find_gpu("a100")
    assert a100.attention_rates("fused")[:2] == a100.attention_rates("flash")[:2] == (0.55, 0.55)
    flash = estimate_training_step(SPEC, COUNTS, H100, NODE, CFG)
    fused = estimate_training_step(SPEC, COUNTS, H100, NODE, replace(CFG, attention_kernel="fused"))
    assert fused.time_s < flash.time_s * 0.95  # 8k tokens: attention is a large share
    assert any("cuDNN fused attention" in a for a in fused.assumptions)
    assert any("FlashAttention-2" in a for a in flash.assumptions)


def test_blackwell_runs_cudnn_attention_at_nvidias_own_measured_share() -> None:
    """NVIDIA's cuDNN SDPA training benchmark (cudnn-frontend benchmark/sdpa_benchmark_training,
    Llama 3.1 shapes, BF16, causal, 4k tokens) measures 1,408 / 1,148 TFLOP/s forward / backward
    on GB200 and 1,703 / 1,248 on GB300, both rated 2,500: the fused kernel's shares on Blackwell
    are those, not FlashAttention-2's estimate carried over. A 64k-token NeMo step on B200 is
    mostly attention, so it runs a tenth or more faster than it would at FlashAttention-2's share."""
    for name in ("b100", "b200", "gb200"):
        assert find_gpu(name).attention_rates("fused")[:2] == (0.56, 0.46), name
    for name in ("b300", "gb300"):
        assert find_gpu(name).attention_rates("fused")[:2] == (0.68, 0.50), name
    b200 = find_gpu("b200")
    assert "cudnn-frontend" in b200.attention_rates("fused")[2]
    long = replace(CFG, seq_len=65536, attention_kernel="fused")
    fused = estimate_training_step(SPEC, COUNTS, b200, NODE, long)
    flash = estimate_training_step(
        SPEC, COUNTS, b200, NODE, replace(long, attention_kernel="flash")
    )
    assert fused.time_s < flash.time_s * 0.9  # equal when fused fell back to FlashAttention-2


def test_eager_pytorch_runs_cudnn_attention_on_blackwell_where_flashattention2_is_slow() -> None:
    """FlashAttention-2 has no Blackwell path: on B200 it reaches 354 TFLOP/s forward at head
    dim 128 (tritonbench#171), 16% of peak, against cuDNN's 56%. PyTorch's SDPA puts cuDNN first
    on sm90 / sm100 (sdp_utils.cpp, check_prefer_cudnn_attention), so eager PyTorch on Blackwell
    is priced with cuDNN's kernel, on Hopper (its calibration rows) with FlashAttention-2; the
    compiled stack follows its base. Serving engines run the faster of the two kernels."""
    from fabriclens.catalog import find_framework

    b200 = find_gpu("b200")
    assert b200.attention_rates("flash")[:2] == (0.16, 0.14)
    for name in ("pytorch", "pytorch-compile"):
        fw = find_framework(name)
        assert fw.attention_for("blackwell") == "fused", name
        assert fw.attention_for("hopper") == fw.attention_for("ampere") == "flash", name
    assert find_framework("nemo").attention_for("blackwell") == "fused"
    assert b200.serving_attention()[0] == 0.56 and H100.serving_attention()[0] == 0.52
    assert find_gpu("a100").serving_attention()[0] == find_gpu("a100").attention_efficiency


def test_unfused_attention_moves_its_score_matrix_once_per_kernel() -> None:
    """Without FlashAttention the heads x s x s score matrix goes through HBM kernel by kernel, in
    16-bit: forward, the QK^T GEMM writes it (2 bytes an element), the fused scale-mask-softmax
    reads it and writes P (4), dropout reads P and writes its output and a 1-byte mask (5), the PV
    GEMM reads that (2): 13; backward 19 (dP written, dropout's and softmax's backward, P read for
    dV, dS read by the dQ and dK GEMMs). Before, the step charged the stored 5 bytes twice over in
    the elementwise pass and again with attention, and doubled both in the backward: 60 bytes an
    element where 32 move, which put the unfused Megatron runs of 2021-22 (Korthikanti et al.
    2022, Narayanan et al. 2021) slow by up to 15-20%. Checked on the step's HBM bytes, read off
    its time at two HBM bandwidths (one GPU, so nothing else moves), against FlashAttention's,
    which keeps only a 4-byte log-sum-exp per row and head: exact."""
    spec = find_model("llama-3.2-1b")
    counts = count_params(spec)
    cfg = TrainConfig(gpus=1, gpus_per_node=1, seq_len=2048, global_batch=1, micro_batch=1,
                      dropout=True)  # fmt: skip
    one = Fabric(find_link("nvlink4-nvswitch"), None, 1, 0, find_link("pcie5-x16"))

    def hbm_bytes(c: TrainConfig) -> float:
        times = []
        for scale in (1.0, 2.0):
            g = replace(H100, hbm_bw_bytes_per_s=H100.hbm_bw_bytes_per_s * scale)
            times.append(estimate_training_step(spec, counts, g, one, c).time_s)
        rate = H100.hbm_bw_bytes_per_s * H100.memory_bw_efficiency * c.framework_efficiency
        return (times[0] - times[1]) * 2.0 * rate

    unfused = hbm_bytes(replace(cfg, flash_attention=False))
    flash = hbm_bytes(cfg)
    elements = spec.heads * 2048 * 2048  # per layer, one micro-batch of one sequence
    lse = 3 * 2 * 4.0 * spec.heads * 2048  # FlashAttention's log-sum-exp, stored and read back
    assert unfused - flash == pytest.approx(spec.layers * (32.0 * elements - lse), rel=1e-9)


@pytest.mark.parametrize(
    ("bf16_id", "fp8_id"),
    [("tm419", "tm422"), ("tm421", "tm424"), ("tm425", "tm431"), ("tm428", "tm434"),
     ("tm430", "tm436")],
)  # fmt: skip
def test_blackwell_fp8_gain_follows_nvidias_published_pairs(bf16_id: str, fp8_id: str) -> None:
    """Source: NVIDIA's DGX Cloud benchmarks on GB200 (reference/training_more.csv, SOURCES T26):
    the same Llama 3.1 405B and Nemotron-4 340B jobs in BF16 and FP8, 1.44-1.53x faster in FP8.
    The pair cancels the framework's share, so it tests the FP8 GEMM rate. At 0.66 of the FP8
    peak the model gave 1.34-1.44x. Tolerance: 0.1 on the ratio."""
    from reference import _more_training_case, _rows

    rows = {r["id"]: r for r in _rows("training_more.csv")}
    bf16, fp8 = _more_training_case(rows[bf16_id]), _more_training_case(rows[fp8_id])
    assert bf16.unit == fp8.unit == "s/iteration"
    published = bf16.measured / fp8.measured
    assert 1.43 <= published <= 1.54
    assert bf16.predicted / fp8.predicted == pytest.approx(published, abs=0.1)


# zzc0721/torch-performance-test-data database.md (commit 9d82827): the best BF16 torch.matmul
# of squares 1,024-10,240 (FP16 on T4, FP32 on P40), TFLOP/s, per entry of that card. The
# database's H100 SXM (783.7, 797.5), A100 SXM 80GB (264.5) and B200 (1,696) entries sit within
# 3% of the MAMF figures the catalog takes for those cards, so it measures the same thing.
GEMM_DATABASE = {
    "rtx-4090": (162.39, 163.09, 164.81, 165.71, 170.06, 173.31),
    "rtx-3090": (76.34, 76.58, 76.68),
    "rtx-3080-ti": (76.47, 78.34),
    "rtx-5090": (221.65, 236.03, 240.05, 242.18),
    "rtx-a6000": (123.34,),
    "l40s": (269.15,),
    "l4": (70.89,),
    "h100-pcie": (495.93,),
    "h20": (141.86,),
    "t4": (41.91,),
    "tesla-p40": (10.07,),
}


@pytest.mark.parametrize("name", sorted(GEMM_DATABASE))
def test_gpus_without_a_mamf_take_the_measured_best_gemm(name: str) -> None:
    """Source: the database above. Each card's best GEMM over its rated peak, the median of its
    entries; GeForce cards boost above the clock their rating assumes and exceed it, which is
    taken as 1.0 (the rating is the ceiling the catalog can state). Before, these were estimates
    (0.6-0.8): two RTX 4090s ran Answer.AI's LoRA 25-33% faster than planned. Tolerance 0.01."""
    import statistics

    gpu = find_gpu(name)
    measured = statistics.median(GEMM_DATABASE[name]) * 1e12 / gpu.bf16_flops_per_s
    assert gpu.matmul_efficiency == pytest.approx(min(1.0, measured), abs=0.01)
    assert "torch-performance-test-data" in gpu.matmul_efficiency_source
