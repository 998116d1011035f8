"""Batsim reads a scheduler's times with RapidJSON's default flags (``json_quirks``)."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from batpolicy.io.rapidjson_number import rapidjson_float
from batpolicy.simulator.json_quirks import batsim_reads


@given(st.floats(min_value=0.0, max_value=1e9, allow_nan=False, allow_infinity=False))
def test_a_time_is_read_within_an_ulp_and_exactly_when_its_text_is_short(x: float) -> None:
    read = batsim_reads(x)
    assert abs(read - x) <= math.ulp(x)
    if len(repr(x)) <= 16:  # at most 15 digits: RapidJSON's exact fast path
        assert read == x


@given(st.integers(min_value=0, max_value=10**15 - 1), st.integers(min_value=0, max_value=15))
def test_short_decimals_read_as_pythons_float(significand: int, decimals: int) -> None:
    text = f"{significand / 10**decimals:.{decimals}f}"
    assert rapidjson_float(text) == float(text)


def test_batscheds_now_plus_five_is_read_an_ulp_up() -> None:
    """killer2's ``now + 5`` from fuzz seed 3203 (tests/data/fuzz/timestamp-read-by-rapidjson)."""
    sent = 5.000061 + 5
    assert repr(sent) == "10.000060999999999"
    assert batsim_reads(sent) == 10.000061 == math.nextafter(sent, math.inf)


def test_an_int_time_from_a_python_scheduler_is_kept() -> None:
    assert batsim_reads(12) == 12 and type(batsim_reads(12)) is int
