"""One parser for human quantities: sizes, rates, times, fractions."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fabriclens.errors import InputError
from fabriclens.units import (
    format_bw,
    format_bytes,
    format_decimal_bytes,
    format_number,
    format_time,
    parse_fraction,
    parse_rate,
    parse_size,
    parse_time,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("140GB", 140_000_000_000),
        ("1GiB", 2**30),
        ("64M", 64_000_000),
        ("64MiB", 64 * 2**20),
        ("4096", 4096),
        ("1.5 kB", 1500),
        ("8g", 8_000_000_000),
    ],
)
def test_parse_size(text: str, expected: int) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1gbit", 1e9),
        ("100G", 100e9),
        ("400Gbps", 400e9),
        ("25GbE", 25e9),
        ("100mbit", 100e6),
        ("10Gb/s", 10e9),
    ],
)
def test_parse_rate_is_bits_per_second(text: str, expected: float) -> None:
    assert parse_rate(text) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("text", "expected"), [("5ms", 5e-3), ("1.5s", 1.5), ("200us", 200e-6), ("2", 2.0)]
)
def test_parse_time(text: str, expected: float) -> None:
    assert parse_time(text) == pytest.approx(expected)


def test_parse_fraction() -> None:
    assert parse_fraction("0.5%") == pytest.approx(0.005)
    assert parse_fraction("0.02") == pytest.approx(0.02)
    with pytest.raises(InputError):
        parse_fraction("150%")


@pytest.mark.parametrize("bad", ["", "GB", "1XB", "-5GB", "1e999GB", "12 34", "nan"])
def test_bad_sizes_raise_input_error_with_a_fix(bad: str) -> None:
    with pytest.raises(InputError) as info:
        parse_size(bad)
    assert "write it like" in info.value.message


@given(st.text(max_size=20))
def test_parsers_never_crash(text: str) -> None:
    for parser in (parse_size, parse_rate, parse_time, parse_fraction):
        try:
            value = parser(text)
        except InputError:
            continue
        assert value >= 0 or parser is parse_time or parser is parse_rate


def test_formatting_uses_binary_for_memory_and_si_for_time() -> None:
    assert format_bytes(80 * 2**30) == "80 GiB"
    assert format_time(0.0123) == "12.3 ms"


def test_numbers_are_plain_digits_to_three_figures() -> None:
    assert format_number(3249.7) == "3,250"
    assert format_number(999.7) == "1,000"
    assert format_number(0.0000123) == "0.0000123"
    assert format_number(1.5) == "1.5"
    assert format_number(12.0) == "12"
    assert format_number(0) == "0"
    assert format_number(1234567, 6) == "1,234,570"


def test_long_times_read_in_minutes_hours_and_days() -> None:
    assert format_time(119) == "119 s"
    assert format_time(3200) == "53.3 min"
    assert format_time(7200) == "2 h"
    assert format_time(1e6) == "11.6 days"


def test_large_sizes_and_bandwidths_have_no_exponent() -> None:
    assert format_decimal_bytes(1.13e15) == "1,130 TB"
    assert format_bw(1e13) == "10,000 GB/s"


@given(st.floats(min_value=-1e30, max_value=1e30, allow_nan=False))
def test_no_formatter_writes_an_exponent(value: float) -> None:
    for text in (
        format_number(value),
        format_time(value),
        format_decimal_bytes(value),
        format_bytes(value),
        format_bw(value),
    ):
        assert "e+" not in text and "e-" not in text, text
