"""SWF traces: field mapping, cleaning, windows, header, every quirk of the shared traces."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from batpolicy.errors import InputError
from batpolicy.io import read_workload
from batpolicy.io.swf import SWF_FIELDS, read_swf

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data"
TRACES = SHARED / "traces"


def _line(job: int, submit: float, run: float = 100, alloc: int = 4, req: int = 4,
          req_time: float = 200, status: int = 1, user: int = 7, queue: int = -1,
          partition: int = -1, wait: float = 3) -> str:
    fields = [job, submit, wait, run, alloc, -1, -1, req, req_time, -1, status, user, 2, -1,
              queue, partition, -1, -1]
    return " ".join(str(f) for f in fields)


def _trace(tmp_path: Path, lines: list[str], header: str = "; MaxProcs: 16\n",
           name: str = "t.swf") -> Path:
    path = tmp_path / name
    text = header + "\n".join(lines) + "\n"
    if name.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return path


def _dropped(skipped: dict[str, int]) -> int:
    return sum(n for k, n in skipped.items() if not k.startswith("kept_"))


def test_fields_map_to_a_batsim_delay_job(tmp_path: Path) -> None:
    path = _trace(tmp_path, [_line(1, 1000, run=100, req=8, alloc=4, req_time=3600,
                                   status=1, user=42, queue=3)])
    w = read_swf(path)
    (job,) = w.jobs
    assert (job.id, job.subtime, job.res, job.walltime, job.profile) == (
        "w0!1", 0.0, 8, 3600.0, "delay_100")
    assert w.profiles == {"delay_100": {"type": "delay", "delay": 100}}
    assert job.raw == {"id": "w0!1", "subtime": 0.0, "res": 8, "profile": "delay_100",
                       "walltime": 3600.0, "swf": {"status": 1, "user": 42, "queue": 3}}
    assert w.nb_res == 16 and w.source == str(path) and not w.skipped


def test_one_profile_per_distinct_runtime(tmp_path: Path) -> None:
    w = read_swf(_trace(tmp_path, [_line(1, 0, run=100), _line(2, 5, run=12.5),
                                   _line(3, 9, run=100)]))
    assert w.profiles == {"delay_100": {"type": "delay", "delay": 100},
                          "delay_12.5": {"type": "delay", "delay": 12.5}}
    assert [j.profile for j in w.jobs] == ["delay_100", "delay_12.5", "delay_100"]


def test_fallbacks_for_missing_requests(tmp_path: Path) -> None:
    # NASA iPSC / synthetic Lublin: requested procs and time are -1 for every job
    w = read_swf(_trace(tmp_path, [_line(1, 0, run=50, req=-1, alloc=3, req_time=-1),
                                   _line(2, 1, run=50, req=0, alloc=2, req_time=0)]))
    assert [(j.res, j.walltime) for j in w.jobs] == [(3, 50.0), (2, 50.0)]
    assert w.skipped == {"kept_res_from_allocated": 2, "kept_walltime_from_runtime": 2,
                         "kept_reaches_walltime": 2}


def test_cleaning_drops_and_counts(tmp_path: Path) -> None:
    # HPC2N: run time -1; Curie: allocated <= 0 but requested > 0 (kept), both <= 0 (dropped)
    lines = [_line(1, 0), _line(2, 1, run=-1), _line(3, 2, run=0),
             _line(4, 3, req=-1, alloc=-1), _line(5, 4, req=6, alloc=-1), _line(6, 5, status=5)]
    w = read_swf(_trace(tmp_path, lines))
    assert [j.id for j in w.jobs] == ["w0!1", "w0!5", "w0!6"]
    assert w.jobs[1].res == 6
    assert w.skipped == {"non_positive_runtime": 2, "non_positive_res": 1}
    w = read_swf(_trace(tmp_path, lines), status_filter={1})
    assert [j.id for j in w.jobs] == ["w0!1", "w0!5"] and w.skipped["status_filtered"] == 1


def test_unsorted_trace_is_sorted_in_batsim_order_and_shifted(tmp_path: Path) -> None:
    # ALCF Theta 2023: absolute epoch submit times, out of order; equal times by id string
    lines = [_line(3, 1693547600), _line(10, 1693547500), _line(2, 1693547500),
             _line(1, 1693547700)]
    w = read_swf(_trace(tmp_path, lines, header="; UnixStartTime: 0\n; MaxProcs: 16\n"))
    assert [(j.id, j.subtime) for j in w.jobs] == [
        ("w0!10", 0.0), ("w0!2", 0.0), ("w0!3", 100.0), ("w0!1", 200.0)]
    w = read_swf(_trace(tmp_path, lines), shift_to_zero=False)
    assert w.jobs[0].subtime == 1693547500.0


def test_window_is_relative_to_the_first_submit_and_max_jobs_counts_kept(tmp_path: Path) -> None:
    lines = [_line(1, 100, run=-1)] + [_line(i, 100 + 10 * i) for i in range(2, 12)]
    path = _trace(tmp_path, lines)
    # first submit is 100 (job 1, dropped for its run time: it still is the trace's start)
    w = read_swf(path, start=40, end=80)
    assert [j.id for j in w.jobs] == ["w0!4", "w0!5", "w0!6", "w0!7"]
    assert w.jobs[0].subtime == 0.0
    assert w.skipped == {"non_positive_runtime": 1, "before_start": 2, "after_end": 4}
    w = read_swf(path, start=40, max_jobs=3)
    assert [j.id for j in w.jobs] == ["w0!4", "w0!5", "w0!6"]
    assert w.skipped["beyond_max_jobs"] == 5 and _dropped(w.skipped) == 1 + 2 + 5
    assert read_swf(path, max_jobs=0).jobs == []


def test_jobs_wider_than_the_platform_are_kept_and_counted(tmp_path: Path) -> None:
    w = read_swf(_trace(tmp_path, [_line(1, 0, req=17), _line(2, 1, req=16)]))
    assert [j.res for j in w.jobs] == [17, 16]
    assert w.skipped == {"kept_larger_than_platform": 1}


@pytest.mark.parametrize(("header", "nb_res"), [
    ("; MaxNodes: 1024\n; MaxProcs: 8192\n", 8192),  # RICC: MaxProcs wins
    ("; MaxProcs: 8192\n; MaxNodes: 1024\n", 8192),
    ("; MaxNodes: 256\n", 256),  # synthetic Lublin: MaxNodes only
    (";\tand MaxProcs fields.\n; MaxNodes: 5544\n", 5544),  # Curie's note is not a header
    ("; MaxProcs: -1\n; MaxNodes: 64\n", 64),
    ("; nothing\n", 9),  # no header: the widest job
])
def test_platform_size_from_header(tmp_path: Path, header: str, nb_res: int) -> None:
    w = read_swf(_trace(tmp_path, [_line(1, 0, req=9), _line(2, 1, req=3)], header=header))
    assert w.nb_res == nb_res


@pytest.mark.parametrize(("bad", "field"), [
    ("1 0 0 100 4 -1 -1 4 200 -1 1 7 2 -1 -1", "line"),
    ("1 0 0 abc 4 -1 -1 4 200 -1 1 7 2 -1 -1 -1 -1 -1", "run_time"),
    ("1 0 0 100 4 -1 -1 4.5 200 -1 1 7 2 -1 -1 -1 -1 -1", "requested_processors"),
    ("x 0 0 100 4 -1 -1 4 200 -1 1 7 2 -1 -1 -1 -1 -1", "job_number"),
    ("1 nan 0 100 4 -1 -1 4 200 -1 1 7 2 -1 -1 -1 -1 -1", "submit_time"),
    ("1 0 0 100 4 -1 -1 4 inf -1 1 7 2 -1 -1 -1 -1 -1", "requested_time"),
])
def test_broken_line_names_file_line_and_field(tmp_path: Path, bad: str, field: str) -> None:
    path = _trace(tmp_path, [_line(1, 0), "", bad.replace("1 ", "2 ", 1), _line(3, 9)])
    with pytest.raises(InputError) as err:
        read_swf(path)
    assert (err.value.path, err.value.line, err.value.field) == (str(path), 4, field)
    assert f"{path}:4" in str(err.value) and field in str(err.value)
    w = read_swf(path, lenient=True)
    assert [j.id for j in w.jobs] == ["w0!1", "w0!3"] and w.skipped == {"malformed_line": 1}


def test_integral_float_fields_are_accepted(tmp_path: Path) -> None:
    w = read_swf(_trace(tmp_path, ["1 0 0 100 4.0 -1 -1 4.0 200 -1 1 7 2 -1 -1 -1 -1 -1"]))
    assert w.jobs[0].res == 4


def test_duplicated_job_number(tmp_path: Path) -> None:
    path = _trace(tmp_path, [_line(1, 0), _line(1, 5)])
    with pytest.raises(InputError, match="appears twice") as err:
        read_swf(path)
    assert err.value.line == 3 and err.value.field == "job_number"
    assert read_swf(path, lenient=True).skipped == {"duplicate_id": 1}


def test_gzip_whitespace_lines_comments_and_read_workload(tmp_path: Path) -> None:
    path = _trace(tmp_path, [_line(1, 0), "   \t ", "; a comment", _line(2, 3), "   "],
                  name="t.swf.gz")
    w = read_workload(path, name="w3")
    assert [j.id for j in w.jobs] == ["w3!1", "w3!2"]
    with pytest.raises(InputError, match="unknown workload format"):
        read_workload(tmp_path / "t.txt")
    with pytest.raises(InputError, match="cannot read"):
        read_swf(tmp_path / "missing.swf")


def test_field_names() -> None:
    assert len(SWF_FIELDS) == 18 and SWF_FIELDS[7] == "requested_processors"


# --------------------------------------------------------------- real (small) traces
def test_hpc2n_excerpt(shared_data: Path) -> None:
    """25 jobs with run time -1, a whitespace-only last line, a full-log header."""
    w = read_swf(TRACES / "HPC2N-2002-2.2-excerpt-alea.swf")
    assert len(w.jobs) == 3170 - 25 and w.skipped["non_positive_runtime"] == 25
    assert w.nb_res == 240 and w.jobs[0].subtime == 0.0
    assert all(j.res > 0 and j.walltime and j.walltime > 0 for j in w.jobs)
    subtimes = [j.subtime for j in w.jobs]
    assert subtimes == sorted(subtimes)


def test_alcf_theta_2023_unsorted_epoch_and_oversized(shared_data: Path) -> None:
    w = read_swf(TRACES / "ALCF-Theta-2023-partial-cqsimplus.swf")
    assert len(w.jobs) == 8401 and w.nb_res == 4360
    assert w.skipped["kept_larger_than_platform"] == 8
    assert max(j.res for j in w.jobs) == 4389
    keys = [(j.subtime, j.id) for j in w.jobs]
    assert keys == sorted(keys) and keys[0][0] == 0.0
    assert keys[-1][0] == pytest.approx(131.9 * 86400, rel=1e-3)


def test_synthetic_lublin_has_maxnodes_only_and_no_requests(shared_data: Path) -> None:
    w = read_swf(TRACES / "synthetic-lublin_256.swf")
    assert w.nb_res == 256 and len(w.jobs) == 10000
    assert w.skipped["kept_walltime_from_runtime"] == 10000
    assert all(j.walltime == w.profiles[j.profile]["delay"] for j in w.jobs)
