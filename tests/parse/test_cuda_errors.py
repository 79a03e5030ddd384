"""CUDA's error texts: each names one error, the kernel faults among them, and a text that only
starts like one is not taken for it."""

from fabriclens.parse.cuda_errors import CUDA_ERRORS, STICKY_CODES, cuda_error


def test_every_listed_text_reads_as_its_own_error() -> None:
    for text, (code, name) in CUDA_ERRORS.items():
        assert cuda_error(text) == (text, code, name)
        assert cuda_error(text.upper() + "'") == (text, code, name)  # case aside, a quote after
        assert name.startswith("cudaError")


def test_the_kernel_faults_are_listed_errors() -> None:
    codes = {code for code, _ in CUDA_ERRORS.values()}
    assert codes >= STICKY_CODES
    assert cuda_error("an illegal memory access was encountered")[1] in STICKY_CODES  # type: ignore[index]
    assert cuda_error("out of memory")[1] not in STICKY_CODES  # type: ignore[index]


def test_the_longest_text_wins_and_a_sentence_that_runs_on_is_not_an_error() -> None:
    assert cuda_error("operation not supported on global/shared address space.")[1] == 717  # type: ignore[index]
    assert cuda_error("operation not supported")[1] == 801  # type: ignore[index]
    assert cuda_error("misaligned address handling is off") is None
    assert cuda_error("unknown errors were ignored") is None
    assert cuda_error("out of memoryless") is None
    # PyTorch runs its next sentence on after the error, capitalised
    assert cuda_error("an illegal memory access was encountered CUDA kernel errors might")[1] == 700  # type: ignore[index]


def test_every_listed_error_has_its_reason_in_the_findings() -> None:
    from fabriclens.diagnose.describe import CUDA_HINTS

    assert {name for _, name in CUDA_ERRORS.values()} == set(CUDA_HINTS)
