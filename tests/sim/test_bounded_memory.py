"""A long run holds O(jobs alive) memory: a streamed trace keeps nothing per job ended."""

from __future__ import annotations

import gzip
import tracemalloc
from pathlib import Path

import pytest

from batpolicy.app import cli
from batpolicy.io.swf import read_swf
from batpolicy.io.swf_stream import StreamedJobs, stream_swf

HEADER = "; MaxProcs: 64\n"


def _line(number: int, submit: float, run: float = 10.0, res: int = 1) -> str:
    return (f"{number} {submit:g} 0 {run:g} {res} -1 -1 {res} 20 -1 1 {number % 7} "
            "-1 -1 1 -1 -1 -1\n")


def _trace(path: Path, nb_jobs: int) -> Path:
    """nb_jobs one-machine jobs, one a second, each 10 s: never more than 10 alive."""
    with gzip.open(path, "wt") as f:
        f.write(HEADER)
        for i in range(1, nb_jobs + 1):
            f.write(_line(i, float(i), run=float(5 + i % 6)))
    return path


def _peak_mib(trace: Path, out: Path) -> float:
    tracemalloc.start()
    try:
        assert cli.main(["simulate", "--policy", "fcfs", "-w", str(trace), "-o", str(out),
                         "-q", "--no-progress"]) == 0
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def test_peak_memory_does_not_grow_with_the_trace(tmp_path: Path) -> None:
    """Five times the jobs, the same jobs alive at once: the same peak within 1.5 MiB.

    Holding ~570 bytes per job (the JobSpecs read whole) would add ~13 MiB here. Both
    traces are longer than a block the reader parses at once (256 KiB: 6,000 lines of
    50 bytes), whose arrays are the same few MiB for any longer trace.
    """
    _peak_mib(_trace(tmp_path / "w.swf.gz", 100), tmp_path / "w")  # imports, caches
    small = _peak_mib(_trace(tmp_path / "s.swf.gz", 6_000), tmp_path / "s")
    large = _peak_mib(_trace(tmp_path / "l.swf.gz", 30_000), tmp_path / "l")
    assert large < small + 1.5, (small, large)


SWF = HEADER + "".join([
    _line(9, 50, run=-1), _line(3, 100), _line(10, 100), _line(2, 100, run=7),
    _line(4, 150, res=99), _line(5, 200, run=30), _line(6, 200), _line(11, 300),
    _line(12, 300, run=7)])


@pytest.mark.parametrize("options", [
    {}, {"max_jobs": 2}, {"max_jobs": 4}, {"start": 60.0}, {"start": 10.0, "end": 200.0},
    {"status_filter": {1}}, {"status_filter": {0}}, {"size": "allocated"}, {"max_jobs": 0},
])
def test_a_streamed_trace_gives_what_read_swf_gives(tmp_path: Path, options: dict) -> None:
    """Same jobs in the same order (ties by full id string), profiles, counts, size."""
    trace = tmp_path / "t.swf"
    trace.write_text(SWF)
    whole, streamed = read_swf(trace, **options), stream_swf(trace, **options)
    assert isinstance(streamed.jobs, StreamedJobs)
    assert list(streamed.jobs) == whole.jobs and len(streamed.jobs) == len(whole.jobs)
    assert [j.raw for j in streamed.jobs] == [j.raw for j in whole.jobs]
    assert streamed.profiles == whole.profiles
    assert list(streamed.profiles) == list(whole.profiles)
    assert streamed.skipped == whole.skipped and streamed.nb_res == whole.nb_res


def test_a_trace_out_of_order_is_read_whole(tmp_path: Path) -> None:
    trace = tmp_path / "t.swf"
    trace.write_text(HEADER + _line(1, 100) + _line(2, 50) + _line(3, 200))
    streamed = stream_swf(trace)
    assert isinstance(streamed.jobs, list)
    assert [j.id for j in streamed.jobs] == ["w0!2", "w0!1", "w0!3"]


def test_a_broken_line_is_an_error_before_any_job(tmp_path: Path) -> None:
    from batpolicy.errors import InputError

    trace = tmp_path / "t.swf"
    trace.write_text(HEADER + _line(1, 100) + "2 x 0 1 1 -1 -1 1 1 -1 1 1 -1 -1 1 -1 -1 -1\n")
    with pytest.raises(InputError, match=r"t\.swf:3, field 'submit_time'"):
        stream_swf(trace)
