"""Batsim's 6-decimal writing: the fast path for integral times changes no value."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from batpolicy.simulator.json_quirks import wire_json, wire_time

NUMBERS = st.floats(allow_nan=True, allow_infinity=True) | st.integers(-2**70, 2**70) | \
    st.floats(min_value=0, max_value=1e9).map(lambda x: float(round(x)))


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return type(a) is type(b) and a == b


@given(NUMBERS)
def test_wire_time_is_round_to_six_decimals(value: float) -> None:
    assert _same(wire_time(value), round(value, 6))


@given(st.dictionaries(st.sampled_from(["subtime", "walltime", "res", "x"]),
                       st.floats(allow_nan=False) | st.integers(0, 100) | st.text(max_size=3)))
def test_wire_json_rounds_each_float_as_round_does(job: dict) -> None:
    out = wire_json(job)
    assert out.keys() == job.keys()
    for key, value in job.items():
        assert _same(out[key], round(value, 6) if type(value) is float else value)
    if all(type(v) is not float or round(v, 6) == v for v in job.values()):
        assert out is job  # nothing to round: no copy
