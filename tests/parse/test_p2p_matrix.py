"""CUDA's p2pBandwidthLatencyTest matrices pasted into a log (parse/p2p_matrix.py)."""

from __future__ import annotations

from conftest import FIXTURES
from fabriclens.diagnose.engine import diagnose
from fabriclens.parse.nccl_log import NcclLog, parse_nccl_log
from fabriclens.parse.p2p_matrix import SlowestPair, note, read_matrices
from fabriclens.parse.torch_log import parse_torch_log

# the layout the sample prints (NVIDIA/cuda-samples p2pBandwidthLatencyTest); rates of a
# healthy NVLink pair: P2P far above the copy through the host
HEALTHY = """Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)
   D\\D     0      1
     0 1540.12  21.35
     1  21.40 1541.90
Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)
   D\\D     0      1
     0 1529.61 257.51
     1 257.62 1532.20
Bidirectional P2P=Disabled Bandwidth Matrix (GB/s)
   D\\D     0      1
     0 1552.63  28.51
     1  28.49 1553.14
Bidirectional P2P=Enabled Bandwidth Matrix (GB/s)
   D\\D     0      1
     0 1550.90 513.85
     1 514.01 1551.37
P2P=Disabled Latency Matrix (us)
   GPU     0      1
     0   2.07  12.80
"""


def _slowest(text: str) -> dict[str, SlowestPair]:
    found: dict[str, SlowestPair] = {}
    note(found, text)
    return found


def _rules(text: str) -> set[str]:
    return {f.rule for f in diagnose(parse_nccl_log(text), parse_torch_log(text))}


def test_the_matrices_are_read_with_their_rows() -> None:
    matrices = read_matrices(HEALTHY)
    assert [(m.direction, m.p2p) for m in matrices] == [
        ("unidirectional", False), ("unidirectional", True),
        ("bidirectional", False), ("bidirectional", True),
    ]  # fmt: skip
    assert matrices[1].rates == {(0, 1): 257.51, (1, 0): 257.62}  # the diagonal left out
    assert not any(pair.slow for pair in _slowest(HEALTHY).values())
    assert "gpu-p2p-slower-than-host-copy" not in _rules(HEALTHY)


def test_p2p_below_the_copy_through_the_host_is_named() -> None:
    """Corpus log 294 (stas00/ml-engineering#1): four RTX A6000 on an AMD host, P2P writes at
    1.6-2.6 GB/s where copies through the host ran at 13-22: the IOMMU, fixed by turning it
    off. The slowest pair is quoted beside the slowest through-host one."""
    name = "294-transformers-finetune-a6000-amd-iommu-p2p-hang.log"
    text = (FIXTURES / "real" / "logs" / name).read_text()
    slow = _slowest(text)["unidirectional"]
    assert slow.slow and slow.p2p is not None
    assert (slow.p2p[:3], slow.host) == ((1.58, 0, 2), 12.99)
    assert "gpu-p2p-slower-than-host-copy" in _rules(text)
    # a bidirectional pair alone, in a paste with a prefix-less header of its own
    bi = HEALTHY.replace("513.85", "3.10")
    assert "gpu-p2p-slower-than-host-copy" in _rules(bi)


def test_half_a_paste_or_junk_after_a_header_names_nothing() -> None:
    enabled_only = HEALTHY.split("Bidirectional")[0].split("Unidirectional P2P=Enabled")[1]
    assert not any(p.slow for p in _slowest("Unidirectional P2P=Enabled" + enabled_only).values())
    junk = "Unidirectional P2P=Enabled Bandwidth Matrix (GB/s)\nnot a row\n" + "9" * 5000
    assert read_matrices(junk) == []
    many = "Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)\n 0 1 2\n" * 1000
    assert len(read_matrices(many)) <= 16


BROKEN = HEALTHY.replace("257.51", "1.90")  # one pair's P2P at 1.9 GB/s


def test_a_matrix_cut_by_a_batch_or_a_part_is_read_whole() -> None:
    """The reader takes 256 lines at a time, and a large log is cut into parts read by other
    processes: a matrix whose header and rows fall on both sides of either cut is still read,
    and a matrix read twice or in pieces gives the same slowest pairs."""
    matrix = BROKEN.split("\n")
    for filler in range(250, 258):  # the header at and around the end of the first batch
        lines = ["plain line"] * filler + matrix
        assert "gpu-p2p-slower-than-host-copy" in _rules("\n".join(lines)), filler
        whole = parse_nccl_log(lines).p2p_slowest
        for cut in range(filler, filler + 12):  # parts cut inside the matrix
            for second in (cut + 1, cut + 3):
                joined = NcclLog()
                for a, b in ((0, cut), (cut, second), (second, len(lines))):
                    joined.extend(parse_nccl_log(lines[a:b]))
                assert joined.p2p_slowest == whole, (filler, cut, second)


def test_line_by_line_reads_the_matrix_as_batches_do() -> None:
    from fabriclens.parse.nccl_log import add_nccl_line

    lines = ["plain line", *BROKEN.split("\n"), "after"]
    one_by_one = NcclLog()
    for raw in lines:
        add_nccl_line(one_by_one, raw)
    assert one_by_one.p2p_slowest == parse_nccl_log(lines).p2p_slowest
    assert one_by_one.p2p_slowest["unidirectional"].slow
