"""Batsim-compatible outputs: byte-exact rows, Batsim's schedule.csv arithmetic, partial files.

The real files Batsim 4.2.1 wrote for the 16 recorded runs are the reference: every row
of every ``NAME.jobs.csv`` parsed into a record and written back must give the same
bytes, and ``schedule.csv`` recomputed from those rows must give Batsim's line (except
the wall-clock fields and the version).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from batpolicy.errors import InvalidDecision
from batpolicy.io.outputs import (
    JOBS_COLUMNS,
    SCHEDULE_COLUMNS,
    JobsCsvWriter,
    format_job_row,
    schedule_fields,
    write_jobs_csv,
    write_schedule_csv,
)
from batpolicy.io.workload import JobSpec, Workload
from batpolicy.platforms.model import Platform
from batpolicy.protocol import types as t
from batpolicy.protocol.intervals import MachineSet
from batpolicy.protocol.types import JobState
from batpolicy.simulator import JobRecord, SimResult, Simulator

from conftest import TRANSCRIPTS

RUNS = sorted(p.name[:-len(".jobs.csv")] for p in TRANSCRIPTS.glob("*.jobs.csv")) \
    if TRANSCRIPTS.is_dir() else []
_ABSENT = pytest.mark.skip(reason=f"shared transcripts not found at {TRANSCRIPTS}")
WALL_CLOCK = {"batsim_version", "scheduling_time", "simulation_time"}


def parse_row(row: dict[str, str]) -> JobRecord:
    """A record from one row of a Batsim jobs.csv."""
    walltime = float(row["requested_time"])
    record = JobRecord(f"{row['workload_name']}!{row['job_id']}", row["profile"],
                       float(row["submission_time"]), int(row["requested_number_of_resources"]),
                       None if walltime == -1 else walltime, JobState(row["final_state"]),
                       metadata=row["metadata"])
    if row["starting_time"]:
        record.start = float(row["starting_time"])
        record.runtime = float(row["execution_time"])
        record.finish = float(row["finish_time"])
        record.alloc = MachineSet.parse(row["allocated_resources"])
    return record


def records_of(path: Path) -> tuple[list[str], list[JobRecord]]:
    text = path.read_text()
    lines = text.splitlines(keepends=True)
    return lines, [parse_row(row) for row in csv.DictReader(io.StringIO(text))]


@pytest.mark.parametrize("run", RUNS or [pytest.param("absent", marks=_ABSENT)])
def test_rows_written_back_as_batsim_writes_them(run: str) -> None:
    """Every column's text, except the four Batsim derives from exact times.

    finish, waiting, turnaround and stretch are recomputed here from the file's
    6-decimal times, so they may differ in the last digit; the transcript fidelity
    tests check them byte for byte on the simulator's own times.
    """
    lines, records = records_of(TRANSCRIPTS / f"{run}.jobs.csv")
    assert lines[0] == ",".join(JOBS_COLUMNS) + "\n"
    derived = slice(10, 14)
    for line, record in zip(lines[1:], records, strict=True):
        ours, theirs = format_job_row(record).split(","), line.split(",")
        assert ours[:10] + ours[14:] == theirs[:10] + theirs[14:], line
        for a, b in zip(ours[derived], theirs[derived], strict=True):
            assert (a == b == "") or float(a) == pytest.approx(float(b), abs=1.5e-6), line
        if record.rejected:
            assert format_job_row(record) == line


@pytest.mark.parametrize("run", RUNS or [pytest.param("absent", marks=_ABSENT)])
def test_schedule_line_recomputed_from_batsim_rows(run: str) -> None:
    _, records = records_of(TRANSCRIPTS / f"{run}.jobs.csv")
    (header, values) = (TRANSCRIPTS / f"{run}.schedule.csv").read_text().splitlines()
    reference = dict(zip(header.split(","), values.split(","), strict=True))
    assert header.split(",") == list(SCHEDULE_COLUMNS)
    finished = [r for r in records if not r.rejected]
    result = SimResult(records=records, nb_machines=int(reference["nb_computing_machines"]),
                       nb_jobs=len(records), nb_jobs_finished=len(finished),
                       nb_jobs_success=sum(r.success for r in records),
                       nb_jobs_killed=sum(not r.success for r in finished),
                       nb_jobs_rejected=len(records) - len(finished),
                       makespan=max(r.completion_time for r in finished),
                       time_computing=float(reference["time_computing"]),
                       time_idle=float(reference["time_idle"]),
                       time_unavailable=float(reference["time_unavailable"]))
    ours = schedule_fields(result)
    for key in SCHEDULE_COLUMNS:
        if key in WALL_CLOCK:
            continue
        if key.startswith(("mean_", "max_")) and ours[key] != reference[key]:
            # recomputed from 6-decimal rows; Batsim sums exact values
            assert float(ours[key]) == pytest.approx(float(reference[key]), abs=2e-6), key
        else:
            assert ours[key] == reference[key], key


def test_means_divide_by_all_jobs_and_killed_counts_every_failure() -> None:
    ok = JobRecord("w0!1", "p", 0.0, 1, None, JobState.COMPLETED_SUCCESSFULLY, start=2.0,
                   runtime=2.0, finish=4.0, alloc=MachineSet.of(0))
    wall = JobRecord("w0!2", "p", 0.0, 1, 1.0, JobState.COMPLETED_WALLTIME_REACHED, start=0.0,
                     runtime=1.0, finish=1.0, alloc=MachineSet.of(1))
    rejected = JobRecord("w0!3", "p", 0.0, 1, None, JobState.REJECTED)
    result = SimResult(records=[wall, ok, rejected], nb_machines=2, nb_jobs=3,
                       nb_jobs_finished=2, nb_jobs_success=1, nb_jobs_killed=1,
                       nb_jobs_rejected=1, makespan=4.0, batsim_version="batpolicy-x")
    fields = schedule_fields(result)
    assert fields["mean_waiting_time"] == f"{2.0 / 3:f}"
    assert fields["mean_slowdown"] == f"{(1.0 + 2.0) / 3:f}"  # plain, not bounded
    assert fields["max_waiting_time"] == "2.000000"
    assert (fields["nb_jobs_killed"], fields["success_rate"]) == ("1", f"{1 / 3:f}")
    assert fields["batsim_version"] == "batpolicy-x"


def test_metadata_is_always_quoted_and_no_walltime_is_minus_one() -> None:
    record = JobRecord("dyn!a-r", "p", 1.5, 3, None, JobState.COMPLETED_KILLED, start=2.0,
                       runtime=1e-5, finish=2.0, alloc=MachineSet.of((0, 1), 5), metadata="a b,c")
    assert format_job_row(record) == ("a-r,dyn,p,1.500000,3,-1.000000,0,COMPLETED_KILLED,"
                                      "2.000000,0.000010,2.000010,0.500000,0.500010,"
                                      "50001.000000,0-1 5,-1.000000,\"a b,c\"\n")


def _two_jobs_then_a_bad_decision() -> tuple[Simulator, object]:
    jobs = [JobSpec(f"w0!{i}", float(10 * i), 1, "p", None,
                    {"id": f"w0!{i}", "subtime": 10 * i, "res": 1, "profile": "p"})
            for i in range(3)]
    workload = Workload("w0", jobs, {"p": {"type": "delay", "delay": 5}})

    def scheduler(request: t.Request) -> t.Reply:
        out = [t.ExecuteJob(e.job_id, MachineSet.of(0 if e.job_id != "w0!2" else 9))
               for e in request.events if isinstance(e, t.JobSubmitted)]
        return t.Reply(request.now, tuple(out))

    return workload, scheduler


def test_jobs_csv_rows_are_on_disk_when_a_run_stops_on_an_error(tmp_path: Path) -> None:
    workload, scheduler = _two_jobs_then_a_bad_decision()
    jobs_csv, schedule_csv = tmp_path / "out_jobs.csv", tmp_path / "out_schedule.csv"
    with JobsCsvWriter(jobs_csv, flush_every=1) as writer:
        sim = Simulator([workload], Platform.homogeneous(2), on_record=writer.write)
        with pytest.raises(InvalidDecision):
            try:
                sim.run(scheduler)  # type: ignore[arg-type]
            finally:
                write_schedule_csv(schedule_csv, sim.result())
        assert jobs_csv.read_text().count("\n") == 3  # flushed before the writer closes
    rows = list(csv.DictReader(jobs_csv.open()))
    assert [r["job_id"] for r in rows] == ["0", "1"]
    summary = dict(zip(*[line.split(",") for line in schedule_csv.read_text().splitlines()],
                       strict=True))
    assert (summary["nb_jobs"], summary["nb_jobs_finished"], summary["makespan"]) == \
        ("3", "2", "15.000000")


def test_whole_file_writer_matches_the_incremental_one(tmp_path: Path) -> None:
    workload, _ = _two_jobs_then_a_bad_decision()
    records = [JobRecord("w0!1", "p", 0.0, 1, 5.0, JobState.COMPLETED_SUCCESSFULLY, start=0.0,
                         runtime=5.0, finish=5.0, alloc=MachineSet.of(0)),
               JobRecord("w0!2", "p", 1.0, 1, 5.0, JobState.REJECTED)]
    write_jobs_csv(tmp_path / "a.csv", records)
    with JobsCsvWriter(tmp_path / "b.csv") as writer:
        for record in records:
            writer.write(record)
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()
    with pytest.raises(ValueError, match="closed"):
        writer.write(records[0])


def test_a_row_that_cannot_be_formatted_leaves_the_rows_before_it_on_disk(tmp_path: Path
                                                                          ) -> None:
    good = JobRecord("w0!1", "p", 0.0, 1, 5.0, JobState.COMPLETED_SUCCESSFULLY, start=0.0,
                     runtime=5.0, finish=5.0, alloc=MachineSet.of(0))
    bad = JobRecord("w0!2", "p", 1.0, 1, 5.0, JobState.COMPLETED_SUCCESSFULLY, start=1.0,
                    runtime="five", finish=6.0, alloc=MachineSet.of(0))  # type: ignore[arg-type]
    path = tmp_path / "jobs.csv"
    with pytest.raises(TypeError), JobsCsvWriter(path, flush_every=10) as writer:
        writer.write(good)
        writer.write(bad)
        assert path.read_text().count("\n") == 1  # the header: rows go in batches
    rows = list(csv.DictReader(path.open()))
    assert [r["job_id"] for r in rows] == ["1"]
