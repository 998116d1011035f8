"""Batsim reads a scheduler's times with RapidJSON's default flags (``json_quirks``)."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from batpolicy.io.rapidjson_number import rapidjson_float
from batpolicy.protocol.codec import decode_reply
from batpolicy.simulator.json_quirks import (
    batsim_reads,
    batsim_reads_reply,
    batsim_reads_text,
    text_readings,
)


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


def test_batscheds_grisu2_text_is_read_from_the_text() -> None:
    """killer2's ``now + 5`` from fuzz seed 5239 (tests/data/fuzz/reply-time-read-from-its-text).

    batsched's RapidJSON ``Writer`` (Grisu2) writes 17.0000149999999976 as
    ``17.000014999999999``, not the shortest closest ``17.000014999999998``; Batsim reads
    that text as 17.000015000000001, an ulp above the double.
    """
    sent = 12.000015 + 5
    assert repr(sent) == "17.000014999999998" and batsim_reads(sent) == sent
    text = b'{"now":17.000014999999999,"events":[{"timestamp":17.000014999999999,' \
           b'"type":"CALL_ME_LATER","data":{"timestamp":22.000014999999999}}]}'
    reply = decode_reply(text)
    read = batsim_reads_text(reply, text)
    up = math.nextafter(sent, math.inf)
    assert read.now == up == read.decisions[0].timestamp
    assert read.decisions[0].at == 22.000015 == math.nextafter(22.000014999999999, math.inf)
    assert batsim_reads_reply(read) is read  # read once, from the text


def test_a_reply_with_short_numbers_keeps_its_times() -> None:
    text = '{"now":17.000015,"events":[{"timestamp":17.000015,"type":"CALL_ME_LATER",' \
           '"data":{"timestamp":18.5}}]}'
    read = batsim_reads_text(decode_reply(text), text)
    assert (read.now, read.decisions[0].timestamp, read.decisions[0].at) == \
        (17.000015, 17.000015, 18.5)
    assert text_readings(text) == {}
