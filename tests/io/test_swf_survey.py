"""The vectorised survey of a streamed SWF trace gives what the Python survey gives.

:func:`batpolicy.io.swf_survey.fast_survey` either refuses a trace (the Python survey
then runs: its errors, lenient's counts) or fills the survey exactly as the Python one:
compared here on generated traces (comments, headers, blank lines, tabs, decimals, whole
numbers written ``4.0``, malformed lines, duplicates, traces out of order) with the
options of :func:`~batpolicy.io.swf_stream.stream_swf`, and on the whole workloads.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from batpolicy.errors import InputError
from batpolicy.io import swf_stream, swf_survey
from batpolicy.io.swf import Scan
from batpolicy.io.swf_stream import _Selection, _Survey, stream_swf
from batpolicy.io.swf_survey import _submission_order, fast_survey

_NUMBER = st.sampled_from(["-1", "0", "1", "2", "3", "4", "8", "16", "100", "4.0", "2.",
                           "12.5", ".5", "-0", "0.1", "7200", "3600.25", "-3", "017",
                           # past one 8-byte word, 15 digits (the most read whole), 16
                           "123456789", "-98765432109", "999999999999999", "12345678.5",
                           "1234567890123456"])
_WHOLE = st.sampled_from(["-1", "0", "1", "2", "3", "4", "8", "16", "4.0", "2.", "-0", "017",
                          "123456789", "-98765432109"])
_ODD = st.sampled_from(["x", "1e3", "1-2", "-", ".", "1.2.3", "inf", "nan", "4.5", "--1",
                        "1\r", "\x0c", "\xa0", "99999999999999999999", "+3", "1_0"])


@st.composite
def _trace(draw: st.DrawFn) -> str:
    lines = []
    if draw(st.booleans()):
        lines.append("; Version: 2.2")
        for key in draw(st.lists(st.sampled_from(["MaxProcs", "MaxNodes"]), max_size=2)):
            indent = draw(st.sampled_from(["", "  ", "\t"]))
            lines.append(f"{indent}; {key}: {draw(st.integers(-1, 64))}")
    submit = draw(st.integers(0, 5))
    job = draw(st.integers(0, 3))
    for _ in range(draw(st.integers(0, 40))):
        kind = draw(st.integers(0, 80))
        if kind == 0:
            lines.append(draw(st.sampled_from(["", "   ", "\t", "; a comment; 1 2 3",
                                               " ;MaxProcs: 12", "; MaxNodes : 8 "])))
            continue
        submit += draw(st.sampled_from([0, 0, 1, 2, 7] + ([-1] if kind == 1 else [])))
        job += draw(st.sampled_from([1, 1, 2, 13] + ([0] if kind == 2 else [])))
        fields = [str(job), str(submit),
                  *[draw(_NUMBER if i in (2, 3, 5, 8) else _WHOLE) for i in range(2, 18)]]
        if kind == 6:
            fields[draw(st.integers(0, 17))] = draw(_NUMBER)
        fields[1] = draw(st.sampled_from([fields[1], f"{fields[1]}.0", f"{fields[1]}.5"]))
        fields[10] = draw(st.sampled_from(["1", "0", "5", "-1", fields[10]]))
        if kind == 3:
            fields[draw(st.integers(0, 17))] = draw(_ODD)
        if kind == 4:
            del fields[draw(st.integers(0, 17))]
        if kind == 5:
            fields.append("1")
        sep = draw(st.sampled_from([" ", "  ", "\t"]))
        lines.append(draw(st.sampled_from(["", " "])) + sep.join(fields))
    return "\n".join(lines) + draw(st.sampled_from(["", "\n"]))


def _outcome(path: Path, **options: object) -> object:
    """The streamed workload as plain data, or the error it raised."""
    try:
        w = stream_swf(path, **options)
    except InputError as error:
        return ("error", str(error))
    jobs = w.jobs
    # skipped's order is not part of the result: every reader sorts it (metrics, log)
    return (list(w.profiles.items()), sorted(w.skipped.items()), w.nb_res, len(jobs),
            [(j.id, j.subtime, j.res, j.profile, j.walltime, j.raw) for j in jobs],
            getattr(jobs, "max_res", None), getattr(jobs, "examples", None),
            getattr(jobs, "raw_example", None))


_OPTIONS = st.fixed_dictionaries({}, optional={
    "lenient": st.booleans(),
    "status_filter": st.sampled_from([{1}, {0, 1}, {5, -1}, set()]),
    "max_jobs": st.integers(0, 30),
    "start": st.sampled_from([0.0, 2.0]),
    "end": st.sampled_from([3.0, 100.0]),
    "size": st.sampled_from(["requested", "allocated"]),
    "name": st.sampled_from(["w0", "kth"]),
})


@settings(max_examples=400, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=_trace(), options=_OPTIONS, gzipped=st.booleans())
def test_the_fast_survey_gives_what_the_python_survey_gives(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, options: dict,
        gzipped: bool) -> None:
    path = tmp_path / ("t.swf.gz" if gzipped else "t.swf")
    data = text.encode("latin-1")
    path.write_bytes(gzip.compress(data) if gzipped else data)
    status_filter = options.get("status_filter")
    allocated_first = options.get("size") == "allocated"
    name = options.get("name", "w0")
    fast, fast_scan = _Survey(), Scan()
    took = fast_survey(path, name, status_filter, allocated_first, fast, fast_scan)
    event(f"fast path took the trace: {took}")
    if took:
        slow, slow_scan = _Survey(), Scan()
        slow.all_rows(_Selection(path, name, False, status_filter, None, None, None,
                                 allocated_first), slow_scan)
        for key in _Survey.__slots__:
            assert getattr(fast, key) == getattr(slow, key), key
        assert list(fast.profiles) == list(slow.profiles)
        assert list(fast.examples.items()) == list(slow.examples.items())
        assert fast_scan.header == slow_scan.header
        assert list(fast_scan.skipped.items()) == list(slow_scan.skipped.items())
        assert fast_scan.first_submit == slow_scan.first_submit
        assert fast_scan.in_order and slow_scan.in_order
    streamed = _outcome(path, **options)
    with monkeypatch.context() as patch:
        patch.setattr(swf_survey, "fast_survey", lambda *args: False)
        assert _outcome(path, **options) == streamed


def test_a_clean_trace_takes_the_fast_path(tmp_path: Path) -> None:
    path = tmp_path / "t.swf"
    path.write_text("; MaxProcs: 8\n"
                    "2 0 -1 5 1 -1 -1 2 10 -1 1 3 -1 -1 1 -1 -1 -1\n"
                    "10 0 -1 5.5 1 -1 -1 -1 -1 -1 1 3 -1 -1 1 -1 -1 -1\n"
                    "3 4 -1 0 1 -1 -1 2 10 -1 1 3 -1 -1 1 -1 -1 -1\n")
    survey, scan = _Survey(), Scan()
    assert fast_survey(path, "w0", None, False, survey, scan)
    assert (survey.count, survey.max_res, list(survey.profiles)) == (2, 2, ["delay_5.5",
                                                                           "delay_5"])
    assert survey.examples == {"delay_5.5": "w0!10", "delay_5": "w0!2"}
    assert scan.header == {"MaxProcs": 8} and dict(scan.skipped) == {"non_positive_runtime": 1}


def test_stream_swf_uses_the_fast_survey() -> None:
    assert swf_stream.stream_swf.__code__.co_names.count("fast_survey") >= 1


def test_a_cut_clean_trace_is_surveyed_without_the_python_parse(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``max_jobs`` below the trace's jobs: the first jobs' figures come from numpy too."""
    path = tmp_path / "t.swf"
    path.write_text("; MaxProcs: 8\n" + "".join(
        f"{i} {i} -1 5 1 -1 -1 2 10 -1 1 3 -1 -1 1 -1 -1 -1\n" for i in range(1, 5))
        + "5 6 -1 0 1 -1 -1 2 10 -1 1 3 -1 -1 1 -1 -1 -1\n")

    def python_parse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the trace was parsed line by line in Python")
    monkeypatch.setattr(swf_stream, "job_rows", python_parse)
    workload = stream_swf(path, max_jobs=2)
    assert [job.id for job in workload.jobs] == ["w0!1", "w0!2"]
    assert dict(workload.skipped) == {"beyond_max_jobs": 2, "non_positive_runtime": 1}


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0.0, 5.0, 7.0]),
                          st.one_of(st.integers(0, 200), st.integers(0, 2**32 - 1),
                                    st.sampled_from([0, 1, 9, 10, 11, 99, 100, 101, 1000]))),
                max_size=60, unique_by=lambda row: row[1]))
def test_the_submission_order_is_that_of_the_id_strings(rows: list[tuple[float, int]]) -> None:
    """Batsim's order (submit time, then id string), with and without making the strings."""
    submit = np.array([r[0] for r in rows], dtype=np.float64)
    job = np.array([r[1] for r in rows], dtype=np.int64)
    expected = np.lexsort((job.astype(np.bytes_), submit))
    assert _submission_order(job, submit).tolist() == expected.tolist()


def test_a_streamed_workload_sorts_as_the_same_trace_read_whole(tmp_path: Path) -> None:
    """``Workload.sort`` keeps a streamed trace's order: Batsim's, the order read_swf sorts to."""
    from batpolicy.io.swf import read_swf

    path = tmp_path / "t.swf"
    path.write_text("; MaxProcs: 8\n" + "".join(
        f"{i} {submit} -1 5 1 -1 -1 2 10 -1 1 3 -1 -1 1 -1 -1 -1\n"
        for i, submit in ((1, 0), (10, 0), (9, 0), (2, 3), (11, 3))))
    streamed, whole = stream_swf(path), read_swf(path)
    streamed.sort()
    whole.sort()
    assert [job.id for job in streamed.jobs] == [job.id for job in whole.jobs] == [
        "w0!1", "w0!10", "w0!9", "w0!11", "w0!2"]


def test_streamed_jobs_carry_the_fields_their_raw_object_parses_to() -> None:
    """The stream sets each job's parsed fields: those parse_job_fields reads in its raw."""
    from itertools import islice

    from batpolicy.io.inputs import bundled
    from batpolicy.scheduler.jobfields import parse_job_fields

    workload = stream_swf(bundled("KTH-SP2-1996-2-4weeks.swf.gz"))
    for spec in islice(workload.jobs, 300):
        assert spec.parsed is not None
        assert spec.parsed == parse_job_fields(spec.raw)


def test_streamed_jobs_are_wired_only_when_wire_json_would_change_nothing(
        tmp_path: Path) -> None:
    """``spec.wired`` (``raw`` forwarded as is) holds only where wire_json changes nothing.

    A fractional time leaves it False, and the simulator's JOB_SUBMITTED then carries the
    rounded object.
    """
    from batpolicy.simulator.json_quirks import wire_json

    path = tmp_path / "t.swf"
    path.write_text("; MaxProcs: 8\n"
                    "1 0 -1 5 1 -1 -1 2 10 -1 1 3 -1 -1 1 -1 -1 -1\n"
                    "2 0.12345678 -1 5 1 -1 -1 2 10 -1 1 3 -1 -1 1 -1 -1 -1\n"
                    "3 4 -1 5 1 -1 -1 2 10.1234567 -1 1 3 -1 -1 1 -1 -1 -1\n"
                    "4 6 -1 5 1 -1 -1 2 3600 -1 1 3 -1 -1 1 -1 -1 -1\n")
    specs = list(stream_swf(path).jobs)
    assert [spec.wired for spec in specs] == [True, False, False, True]
    for spec in specs:
        rounded = wire_json(spec.raw)
        assert (rounded is spec.raw) if spec.wired else (rounded != spec.raw)
