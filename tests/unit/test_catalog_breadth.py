"""The GPUs and networks users meet every day are in the catalog, with their datasheet figures.

Sources: each vendor datasheet named in the entry's `source` (dense tensor peaks, memory, memory
bandwidth); cloud per-node bandwidth from the AWS EC2 instance pages, Google Cloud's GPU
machine-type page and Azure's ND-series pages. Tolerance: 1% (rounding in the datasheets)."""

from __future__ import annotations

import pytest

from fabriclens.catalog import find_gpu, find_link, find_network, gpus, networks

# name or alias -> (dense BF16/FP16 TFLOP/s used for training, memory GB (1e9), memory GB/s)
GPUS = {
    "v100-sxm2-16gb": (125, 16.9, 900), "v100": (125, 34.1, 900), "t4": (65, 16.1, 320),
    "a10": (125, 24.1, 600), "a10g": (70, 24.1, 600), "a40": (149.7, 48.3, 696),
    "l4": (121, 24.2, 300), "l40": (181, 48.3, 864), "h800": (989, 85.5, 3350),
    "h20": (148, 102.6, 4000), "gh200": (989, 102.0, 4000), "b100": (1750, 193.3, 8000),
    "gb200": (2500, 199.7, 8000), "mi300x": (1307.4, 205.8, 5300),
    "b300": (2250, 288.4, 7750), "gb300": (2500, 298.0, 8000),
    "rtx-3080": (59.5, 10.7, 760), "rtx-3090": (71, 25.8, 936), "rtx-4080": (97.5, 17.2, 716.8),
    "rtx-4090": (165.2, 25.8, 1008), "rtx-5090": (209.5, 34.2, 1792),
    "gtx-1080-ti": (11.3, 11.8, 484), "gtx-1080": (8.9, 8.6, 320),
    "rtx-3070": (40.6, 8.6, 448), "rtx-3080-ti": (68.2, 12.9, 912), "rtx-4070-ti": (80.2, 12.9, 504),
    "rtx-3060": (25.5, 12.9, 360), "rtx-4060-ti-16gb": (44.1, 17.2, 288), "rtx-4070": (58.3, 12.9, 504),
    "rtx-5080": (112.6, 17.1, 960), "rtx-a6000": (154.8, 51.5, 768), "rtx-6000-ada": (364.2, 51.5, 960),
    # AMD's datasheets as ml-engineering and the CDNA 2 white paper quote them (catalog sources)
    "mi325x": (1307.4, 274.9, 6000), "mi350x": (2306.9, 309.2, 8000),
    "mi355x": (2516.6, 309.2, 8000), "mi250x": (191.5, 68.7, 1638.4),
    # NVIDIA's datasheets (dense: half the figures printed with sparsity); memory as nvidia-smi
    "h100-nvl": (835.5, 100.5, 3900), "a30": (165, 25.8, 933),
    # NVIDIA's DGX Spark page: 1 PFLOP FP4 with sparsity (/16: FP16 with FP32 accumulate, as the
    # RTX 5090), 273 GB/s; memory: the pool CPU and GPU share (Linux MemTotal)
    "dgx-spark": (62.5, 132.8, 273),
    # AMD Ryzen AI Max+ 395: 40 CUs x 2.9 GHz x 512 WMMA FLOPs; the BIOS's 96 GB GPU carve-out
    "strix-halo": (59.4, 103.1, 256),
}  # fmt: skip
# name -> (kind, NICs per node, per-node Gbit/s)
CLOUD = {
    "aws-efa-p4d": ("efa", 4, 400), "aws-efa-p5": ("efa", 32, 3200),
    "aws-efa-p5en": ("efa", 16, 3200), "gcp-tcpx": ("tcp", 4, 800),
    "gcp-tcpxo": ("tcp", 8, 1600), "azure-ndv4": ("ib", 8, 1600), "azure-ndv5": ("ib", 8, 3200),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(GPUS))
def test_gpu_figures(name: str) -> None:
    tflops, mem_gb, bw_gbps = GPUS[name]
    g = find_gpu(name)
    assert g.bf16_flops_per_s / 1e12 == pytest.approx(tflops, rel=0.01)
    assert g.memory_bytes / 1e9 == pytest.approx(mem_gb, rel=0.01)
    assert g.hbm_bw_bytes_per_s / 1e9 == pytest.approx(bw_gbps, rel=0.01)
    find_link(g.intra_link)  # every GPU's links exist
    find_link(g.host_link)


def test_an_mi250x_is_two_gpus_to_the_software() -> None:
    """ROCm and PyTorch see each of an MI250X's two GCDs as a GPU: the entry is one GCD, half the
    module's 383.0 TFLOPS, 3.2768 TB/s and 128 GB (AMD CDNA 2 white paper), and a GCD as a Cray
    runtime reports it holds 68,702,699,520 bytes."""
    g = find_gpu("instinct-mi250x")
    assert g.bf16_flops_per_s * 2 == pytest.approx(383.0e12)
    assert g.hbm_bw_bytes_per_s * 2 == pytest.approx(3.2768e12)
    assert g.memory_bytes == 68_702_699_520 and 2 * g.memory_bytes < 128 * 2**30 * 1.03
    assert "GCD" in g.title and g.generation == "cdna2"


def test_mi325x_is_an_mi300x_with_more_memory() -> None:
    """Same CDNA 3 compute (MI325X and MI300X datasheets), more and faster memory."""
    a, b = find_gpu("mi300x"), find_gpu("mi325x")
    assert (a.bf16_flops_per_s, a.fp8_flops_per_s) == (b.bf16_flops_per_s, b.fp8_flops_per_s)
    assert b.memory_bytes > a.memory_bytes and b.hbm_bw_bytes_per_s > a.hbm_bw_bytes_per_s


def test_h800_is_not_an_h100() -> None:
    """H800: H100 compute with NVLink cut to 400 GB/s bidirectional (H800 datasheet)."""
    h800, h100 = find_gpu("h800"), find_gpu("h100")
    assert h800.name != h100.name
    assert find_link(h800.intra_link).bw_bytes_per_s * 2 == pytest.approx(400e9)


@pytest.mark.parametrize("name", sorted(CLOUD))
def test_cloud_fabrics_per_node(name: str) -> None:
    kind, nics, node_gbps = CLOUD[name]
    n = find_network(name)
    assert (n.kind, n.nics_per_node) == (kind, nics)
    assert n.rate_bits_per_s * n.nics_per_node / 1e9 == pytest.approx(node_gbps, rel=0.01)


def test_older_infiniband() -> None:
    """IBTA: EDR 4x = 100 Gbit/s; FDR 4x = 54.54 Gbit/s of data (56 Gbaud-class signalling)."""
    assert find_network("edr").rate_bits_per_s == 100e9
    assert find_network("fdr").rate_bits_per_s == pytest.approx(54.54e9, rel=0.01)


def test_names_and_aliases_are_unique() -> None:
    for table in (gpus(), networks()):
        keys = [k.lower() for e in table for k in (e.name, *e.aliases)]
        assert len(keys) == len(set(keys)), sorted(k for k in keys if keys.count(k) > 1)


def test_catalog_lists_the_switches(capsys: pytest.CaptureFixture[str]) -> None:
    """`fabriclens catalog switches`: each switch with its ports and its source."""
    import json

    from fabriclens.cli.app import run

    assert run(["catalog", "switches", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    names = {r["name"] for r in rows}
    assert {"tomahawk4", "tomahawk5", "sn5600", "qm9700", "q3400"} <= names
    assert all(len(r["source"]) > 10 for r in rows)


@pytest.mark.parametrize(
    ("printed", "name"),
    [("NVIDIA GeForce RTX 3070", "rtx-3070"), ("NVIDIA GeForce RTX 5080", "rtx-5080"),
     ("NVIDIA H100 80GB HBM3", "h100-sxm"), ("NVIDIA RTX 6000 Ada Generation", "rtx-6000-ada"),
     ("NVIDIA A10G", "a10g"), ("NVIDIA H200", "h200"), ("4060 Ti 16GB", "rtx-4060-ti-16gb")],
)  # fmt: skip
def test_the_name_nvidia_smi_prints_finds_the_gpu(printed: str, name: str) -> None:
    """A user copies the GPU's name from nvidia-smi: the catalog title without its closing note
    in parentheses is that name."""
    assert find_gpu(printed).name == name


def test_an_ambiguous_nvidia_smi_name_is_refused() -> None:
    """The RTX 4060 Ti comes with 8 or 16 GB under one nvidia-smi name: only the 16 GB card is
    catalogued, so the bare name is refused with it as the suggestion, never taken for it."""
    from fabriclens.errors import InputError

    with pytest.raises(InputError, match="rtx-4060-ti-16gb"):
        find_gpu("NVIDIA GeForce RTX 4060 Ti")


# Apple silicon: name -> (memory bandwidth GB/s, GPU TFLOP/s): Apple's announcements, and for
# the rates philipturner/metal-benchmarks where Apple gave none (sources in each entry)
APPLE = {"m1": (68.25, 2.6), "m1-max": (400, 10.4), "m2-ultra": (800, 27.2),
         "m3-max": (400, 14.2), "m4-max": (546, 18.4), "m4-pro": (273, 9.2)}  # fmt: skip


@pytest.mark.parametrize("name", sorted(APPLE))
def test_apple_gpu_figures(name: str) -> None:
    bw, tflops = APPLE[name]
    g = find_gpu(name)
    assert g.hbm_bw_bytes_per_s / 1e9 == pytest.approx(bw, rel=0.01)
    assert g.bf16_flops_per_s / 1e12 == pytest.approx(tflops, rel=0.01)
    assert g.unified_memory and g.max_gpus_per_node == 1


def test_a_mac_s_memory_size_and_the_share_its_gpu_may_use() -> None:
    """A size suffix picks the memory a Mac was bought with; Metal lets the GPU use two thirds
    of it up to 32 GB and three quarters above (16 GB: 10922.67 MB, llama-cpp-python#687;
    64 GB: 49152 MiB, llama.cpp#1870). The bare name is the smallest size."""
    assert find_gpu("m2-max-64gb").memory_bytes == 48 * 2**30
    assert find_gpu("Apple M2 16GB").memory_bytes == pytest.approx(16 * 2**30 * 2 / 3, abs=1)
    assert find_gpu("m2-max").memory_bytes == find_gpu("m2-max-32gb").memory_bytes
    assert find_gpu("m3-max-30c-96gb").name == "m3-max-30c-96gb"


def test_a_size_a_mac_is_not_sold_with_is_refused_with_the_sizes() -> None:
    from fabriclens.errors import InputError

    with pytest.raises(InputError, match="48, 64, 128 GB, not 36 GB") as err:
        find_gpu("m3-max-36gb")
    assert "m3-max-30c-36gb" in err.value.fix
    with pytest.raises(InputError, match="unknown GPU"):
        find_gpu("h100-40gb")  # a size suffix only for parts sold in several sizes


def test_a_part_sold_in_sizes_holds_its_smallest_size_s_memory() -> None:
    """The entry itself is its smallest size: a memory_bytes that disagrees is refused."""
    from dataclasses import replace

    m2 = find_gpu("m2-max")
    with pytest.raises(ValueError, match="memory_bytes"):
        replace(m2, memory_bytes=m2.memory_bytes + 2**30)
