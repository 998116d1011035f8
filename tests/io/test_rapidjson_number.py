"""Workload numbers read as Batsim 4.2.1 reads them (rapidjson's normal-precision parse).

The expected doubles were printed (``%.17g``) by a C++ program parsing each text with
``rapidjson::Document::Parse`` and the default flags, the parse Batsim runs on its
workloads (rapidjson 1.1 headers of the machine that built /opt/batsim-4.2.1).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from batpolicy.io.batsim_json import read_batsim_workload
from batpolicy.io.rapidjson_number import rapidjson_float

#: text -> the double rapidjson gives (where it is not Python's float(text), said so)
RAPIDJSON = [
    ("9933923076.923079", 9933923076.9230804),  # float(): 9933923076.923079
    ("-123456789012345678901234.5678", -1.2345678901234567e+23),  # float(): ...568e+23
    ("12345678901234567.89", 12345678901234570.0),  # float(): 12345678901234568.0
    ("0.1", 0.1),
    ("41666666.666667", 41666666.666667),
    ("1.7976931348623157e308", 1.7976931348623157e308),
    ("0.000000000000000000001234567890123456789", 1.2345678901234568e-21),
    ("5e-324", 5e-324),
    ("1e-320", 9.9998886718268301e-321),
    ("-9223372036854775809.5", -9.2233720368547758e+18),
]


@pytest.mark.parametrize(("text", "expected"), RAPIDJSON)
def test_numbers_parse_as_rapidjson_parses_them(text: str, expected: float) -> None:
    assert rapidjson_float(text) == expected


def test_a_profile_gets_the_flops_batsim_gives_its_parallel_task(tmp_path: Path) -> None:
    # the co-allocation workloads' profiles carry 16-17 digit numbers (Python's repr);
    # Batsim's ptask for this one has 9933923076.92308 flops per host, one ulp more than
    # Python's float() of the text: its rate 1e9 / flops is an ulp lower in SimGrid
    text = ('{"nb_res": 2, "jobs": [{"id": 1, "subtime": 0, "res": 2, "profile": "c"}],'
            ' "profiles": {"c": {"type": "parallel_homogeneous", "cpu": 9933923076.923079,'
            ' "com": 14900884.615384616}}}')
    path = tmp_path / "w.json"
    path.write_text(text)
    profile = read_batsim_workload(path).profiles["c"]
    assert profile["cpu"] == 9933923076.9230804 != float("9933923076.923079")
    assert profile["com"] == json.loads("14900884.615384616")
