"""Workload transforms: load, windows, weeks, seeded samples; the JSON writer; SWF options."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from batpolicy.errors import ConfigError, InputError
from batpolicy.io import read_batsim_workload, read_swf
from batpolicy.io.batsim_json import write_batsim_workload
from batpolicy.io.transform import (
    WEEK,
    TransformSpec,
    apply,
    drop_larger,
    exact_walltime,
    head,
    inter_arrival_times,
    sample,
    scale_load,
    time_window,
    weeks,
)
from batpolicy.io.workload import JobSpec, Workload

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data"
KTH = SHARED / "traces" / "KTH-SP2-1996-2.swf.gz"


def _workload(times: list[float], runs: list[float] | None = None, res: int = 1,
              nb_res: int | None = 4) -> Workload:
    runs = runs or [10.0] * len(times)
    jobs, profiles = [], {}
    for i, (t, r) in enumerate(zip(times, runs, strict=True)):
        profiles[f"d{r:g}"] = {"type": "delay", "delay": r}
        jobs.append(JobSpec(f"w0!{i}", t, res, f"d{r:g}", 2 * r,
                            {"id": f"w0!{i}", "subtime": t, "res": res, "profile": f"d{r:g}",
                             "walltime": 2 * r, "deadline": t + 100}))
    return Workload("w0", jobs, profiles, nb_res=nb_res)


def _swf(tmp_path: Path, rows: list[tuple[int, float, float, float, int]],
         procs: int = 4) -> Path:
    """An SWF file of (job, submit, wait, run, allocated procs) rows, requests missing."""
    lines = [f"; MaxProcs: {procs}"]
    for job, submit, wait, run, alloc in rows:
        fields = [job, submit, wait, run, alloc, -1, -1, -1, -1, -1, 1, 1, 1, -1, -1, -1, -1,
                  -1]
        lines.append(" ".join(str(f) for f in fields))
    path = tmp_path / "t.swf"
    path.write_text("\n".join(lines) + "\n")
    return path


# ------------------------------------------------------------------------ load
def test_load_2_halves_every_inter_arrival_time_and_keeps_every_job() -> None:
    w = _workload([3.0, 10.0, 10.0, 17.0, 1001.0, 1234567.0])
    doubled = scale_load(w, 2)
    assert [j.id for j in doubled.jobs] == [j.id for j in w.jobs]
    assert inter_arrival_times(doubled.jobs) == [g / 2 for g in inter_arrival_times(w.jobs)]
    assert doubled.jobs[0].subtime == 3.0  # the first submission stays
    assert [j.raw["subtime"] for j in doubled.jobs] == [j.subtime for j in doubled.jobs]
    assert [(j.res, j.profile, j.walltime) for j in doubled.jobs] == \
        [(j.res, j.profile, j.walltime) for j in w.jobs]
    assert doubled.profiles == w.profiles
    assert [j.subtime for j in w.jobs] == [3.0, 10.0, 10.0, 17.0, 1001.0, 1234567.0]  # untouched


def test_load_1_5_divides_gaps_and_keeps_order() -> None:
    w = _workload([0.0, 3.0, 9.0, 30.0])
    assert [j.subtime for j in scale_load(w, 1.5).jobs] == [0.0, 2.0, 6.0, 20.0]
    assert [j.subtime for j in scale_load(w, 0.5).jobs] == [0.0, 6.0, 18.0, 60.0]


@pytest.mark.skipif(not KTH.is_file(), reason=f"trace not found at {KTH}")
def test_load_2_on_a_whole_trace() -> None:
    kth = read_swf(KTH)
    doubled = scale_load(kth, 2)
    assert len(doubled.jobs) == len(kth.jobs) == 28481
    assert inter_arrival_times(doubled.jobs) == [g / 2 for g in inter_arrival_times(kth.jobs)]


@pytest.mark.parametrize("factor", [0, -1, float("inf"), float("nan")])
def test_load_factor_must_be_positive(factor: float) -> None:
    with pytest.raises(ConfigError, match="load factor"):
        scale_load(_workload([0.0]), factor)


# --------------------------------------------------------------- window, head, drop
def test_time_window_keeps_start_drops_end_shifts_and_counts() -> None:
    w = _workload([0.0, 5.0, 10.0, 15.0, 20.0], runs=[1.0, 2.0, 3.0, 4.0, 5.0])
    cut = time_window(w, 5.0, 15.0)
    assert [(j.id, j.subtime) for j in cut.jobs] == [("w0!1", 0.0), ("w0!2", 5.0)]
    assert cut.skipped == {"before_start": 1, "after_end": 2}
    assert set(cut.profiles) == {"d2", "d3"}  # unused profiles dropped
    assert [j.subtime for j in time_window(w, 5.0, 15.0, shift=False).jobs] == [5.0, 10.0]
    with pytest.raises(ConfigError, match="empty"):
        time_window(w, 10.0, 10.0)


def test_head_and_drop_larger() -> None:
    w = _workload([0.0, 1.0, 2.0])
    w.jobs[1].res = 8
    assert [j.id for j in head(w, 2).jobs] == ["w0!0", "w0!1"]
    assert head(w, 2).skipped == {"beyond_max_jobs": 1}
    fit = drop_larger(w, 4)
    assert [j.id for j in fit.jobs] == ["w0!0", "w0!2"] and fit.skipped == {
        "larger_than_platform": 1}


def test_composed_profiles_keep_their_parts() -> None:
    w = _workload([0.0, 1.0])
    w.profiles["seq"] = {"type": "composed", "repeat": 1, "seq": ["d10"]}
    w.profiles["unused"] = {"type": "delay", "delay": 1}
    w.jobs[0].profile = "seq"
    assert set(head(w, 1).profiles) == {"seq", "d10"}


# ------------------------------------------------------------------------ weeks
def test_weeks_utilisation_in_the_offered_schedule() -> None:
    half = WEEK / 2
    # week 0: 2 of 4 machines for half a week = 25 %; week 1: 4 machines all week = 100 %;
    # week 2: a job submitted, running 1 s
    w = _workload([0.0, WEEK, 2 * WEEK + 7], runs=[half, WEEK, 1.0])
    w.jobs[0].res, w.jobs[1].res = 2, 4
    found = weeks(w, min_util=0.0)
    assert [(b.index, b.utilisation) for b in found] == [(0, 0.25), (1, 1.0),
                                                         (2, 1 / (4 * WEEK))]
    loaded = weeks(w, min_util=0.7)
    assert [b.index for b in loaded] == [1]
    week = loaded[0].workload
    assert [(j.id, j.subtime) for j in week.jobs] == [("w0!1", 0.0)]
    assert week.skipped["other_weeks"] == 2
    two = weeks(w, length=2)
    assert [(b.index, len(b.workload.jobs)) for b in two] == [(0, 2), (1, 1)]
    assert two[0].utilisation == pytest.approx((2 * half + 4 * WEEK) / (4 * 2 * WEEK))


def test_weeks_utilisation_in_the_log_schedule(tmp_path: Path) -> None:
    # job 1 submitted in week 0 but started (submit + wait) in week 1 by the log
    path = _swf(tmp_path, [(1, 0, WEEK, WEEK, 4), (2, 10, 0, 100, 1)])
    logged = read_swf(path, size="allocated", keep_wait=True)
    assert logged.jobs[0].raw["swf"]["wait"] == WEEK
    found = weeks(logged, min_util=0.9)
    assert [(b.index, len(b.workload.jobs)) for b in found] == []  # week 1: no submission
    assert weeks(logged)[0].utilisation == pytest.approx(100 / (4 * WEEK))
    offered = read_swf(path, size="allocated")
    assert "wait" not in offered.jobs[0].raw["swf"]
    assert weeks(offered, min_util=0.9)[0].index == 0


def test_weeks_needs_a_platform_size() -> None:
    with pytest.raises(InputError, match="nb_res"):
        weeks(_workload([0.0], nb_res=None))
    assert weeks(_workload([0.0], nb_res=None), nb_res=1)[0].index == 0


# ----------------------------------------------------------------------- sample
def test_sample_is_seeded_ordered_and_exact_in_size() -> None:
    w = _workload([float(t) for t in range(100)])
    a, b = sample(w, seed=7, count=30), sample(w, seed=7, count=30)
    assert [j.id for j in a.jobs] == [j.id for j in b.jobs]
    assert len(a.jobs) == 30 and a.skipped == {"not_sampled": 70}
    assert [j.subtime for j in a.jobs] == sorted(j.subtime for j in a.jobs)
    assert [j.id for j in sample(w, seed=8, count=30).jobs] != [j.id for j in a.jobs]
    assert len(sample(w, seed=1, fraction=0.25).jobs) == 25
    assert len(sample(w, seed=1, count=500).jobs) == 100
    with pytest.raises(ConfigError):
        sample(w, seed=1)


def test_exact_walltime_sets_the_run_time() -> None:
    w = exact_walltime(_workload([0.0, 1.0], runs=[5.0, 7.0]))
    assert [(j.walltime, j.raw["walltime"]) for j in w.jobs] == [(5.0, 5.0), (7.0, 7.0)]


# --------------------------------------------------------------- spec (CLI bridge)
@pytest.mark.parametrize("spec,option", [
    (TransformSpec(load=-1.0), "--load"), (TransformSpec(weeks=0), "--weeks"),
    (TransformSpec(min_util=1.5), "--min-util"), (TransformSpec(sample=2.0), "--sample"),
    (TransformSpec(sample_jobs=-3), "--sample-jobs"), (TransformSpec(week_index=-1),
                                                       "--week-index")])
def test_spec_errors_name_the_option(spec: TransformSpec, option: str) -> None:
    with pytest.raises(ConfigError, match=option):
        apply(_workload([0.0]), spec)


def test_apply_weeks_then_sample_then_load() -> None:
    w = _workload([float(t) for t in range(0, 1000, 10)], runs=[WEEK] * 100)
    out = apply(w, TransformSpec(weeks=1, min_util=0.5, sample_jobs=10, seed=3, load=2.0))
    direct = scale_load(sample(weeks(w, min_util=0.5)[0].workload, seed=3, count=10), 2.0)
    assert [(j.id, j.subtime) for j in out.jobs] == [(j.id, j.subtime) for j in direct.jobs]
    with pytest.raises(InputError, match="--week-index 5"):
        apply(w, TransformSpec(weeks=1, week_index=5))


# ----------------------------------------------------------------------- writer
def test_written_workload_reads_back_with_its_extra_fields(tmp_path: Path) -> None:
    w = _workload([0.0, 2.5, 9.0])
    w.jobs[2].walltime = None
    w.jobs[2].raw["walltime"] = -1
    path = write_batsim_workload(w, tmp_path / "w.json")
    back = read_batsim_workload(path, "w7")
    assert [(j.id, j.subtime, j.res, j.profile, j.walltime) for j in back.jobs] == \
        [(j.id.replace("w0!", "w7!"), j.subtime, j.res, j.profile, j.walltime) for j in w.jobs]
    assert back.profiles == w.profiles and back.nb_res == 4
    assert [j.raw["deadline"] for j in back.jobs] == [100.0, 102.5, 109.0]
    assert json.loads(path.read_text())["jobs"][0]["id"] == "0"
    assert not list(tmp_path.glob(".*partial"))


def test_writer_names_the_file_it_cannot_write(tmp_path: Path) -> None:
    (tmp_path / "nowhere").write_text("a file where the folder would be\n")
    with pytest.raises(ConfigError, match="nowhere"):
        write_batsim_workload(_workload([0.0]), tmp_path / "nowhere" / "w.json")


def test_writer_creates_the_missing_folder(tmp_path: Path) -> None:
    written = write_batsim_workload(_workload([0.0]), tmp_path / "new" / "w.json")
    assert json.loads(written.read_text())["jobs"][0]["subtime"] == 0.0


# ------------------------------------------------------------------- SWF options
def test_swf_size_from_allocated_or_requested(tmp_path: Path) -> None:
    path = tmp_path / "t.swf"
    # job 1: 8 allocated, 6 requested; job 2: allocated missing, 3 requested
    path.write_text("; MaxProcs: 8\n"
                    "1 0 0 10 8 -1 -1 6 20 -1 1 1 1 -1 -1 -1 -1 -1\n"
                    "2 5 0 10 -1 -1 -1 3 20 -1 1 1 1 -1 -1 -1 -1 -1\n")
    assert [j.res for j in read_swf(path).jobs] == [6, 3]
    allocated = read_swf(path, size="allocated")
    assert [j.res for j in allocated.jobs] == [8, 3]
    assert allocated.skipped["kept_res_from_requested"] == 1
    with pytest.raises(InputError, match="size"):
        read_swf(path, size="used")
