"""Corner cases of the protocol, against conversations recorded with real Batsim 4.2.1.

The recordings in ``tests/data/batsim421/`` (vendored, so that these tests run without
Batsim and without ``../shared``) were made with ``bench/fidelity/relay.py`` between real
Batsim 4.2.1 and batsched 1.4 on ``zero_lat_cluster32.xml`` and ``walltime_mix_120.json``:

- ``killer2-walltime120``: jobs killed at the very instant they start (issue 17, case 1:
  Batsim writes ``execution_time`` 0 and ``finish_time`` = start);
- ``killer-walltime120``: a KILL_JOB for a job that already ended, answered at the instant
  of a submission (case 3: Batsim sends the submission first, then JOB_KILLED);
- ``submitter-walltime120`` (``--enable-dynamic-jobs --acknowledge-dynamic-jobs``): the
  acknowledgement of a REGISTER_JOB carries the full id and comes after the instant's
  static submissions (case 2).

Each is replayed as ``test_transcript_fidelity`` replays the shared recordings: the
simulator, fed the recorded replies, must send Batsim's events at each instant and write
Batsim's jobs.csv byte for byte.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sim.test_transcript_fidelity import RecordedScheduler

from batpolicy.platforms.xml import read_platform
from batpolicy.scheduler.io.batsim_json import read_batsim_workload
from batpolicy.scheduler.io.outputs import format_job_row
from batpolicy.scheduler.sim import SimOptions, Simulator

DATA = Path(__file__).resolve().parents[1] / "data" / "batsim421"
#: name -> (workload, platform, Batsim flags as SimOptions)
RUNS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "killer2-walltime120": ("walltime_mix_120.json", "zero_lat_cluster32.xml", {}),
    "killer-walltime120": ("walltime_mix_120.json", "zero_lat_cluster32.xml", {}),
}
SUBMITTER = ("walltime_mix_120.json", "zero_lat_cluster32.xml",
             {"dynamic_jobs": True, "acknowledge_dynamic_jobs": True})


def replay(name: str) -> list[str]:
    """Replay recording ``name``; return our jobs.csv rows (checking every message)."""
    workload, platform, flags = RUNS[name]
    sim = Simulator([read_batsim_workload(DATA / workload, "w0")],
                    read_platform(DATA / platform), options=SimOptions(**flags))
    scheduler = RecordedScheduler(DATA / f"{name}.jsonl")
    result = sim.run(scheduler)
    scheduler.check_complete()
    assert result.complete
    return [format_job_row(record) for record in result.records]


def batsim_rows(name: str) -> list[str]:
    """The rows of the jobs.csv Batsim wrote for recording ``name``."""
    return (DATA / f"{name}.jobs.csv").read_text().splitlines(keepends=True)[1:]


STRETCH = 13  # jobs.csv column


def comparable(row: str) -> tuple[list[str], float]:
    """A row but its stretch, and its stretch.

    The stretch of a job killed at the instant it starts divides by a runtime of a few
    picoseconds, made of SimGrid's clock increments; :mod:`.message_clock` reproduces them to
    an ulp or so, which shows in the stretch's last digits only.
    """
    fields = row.split(",")
    stretch = float(fields[STRETCH]) if fields[STRETCH] else 0.0
    fields[STRETCH] = ""
    return fields, stretch


@pytest.mark.parametrize("name", sorted(RUNS))
def test_recorded_conversation_replays_with_batsims_messages_and_jobs_csv(name: str) -> None:
    ours, batsim = replay(name), batsim_rows(name)
    assert len(ours) == len(batsim)
    for mine, theirs in zip(ours, batsim, strict=True):
        if mine != theirs:
            (fields, stretch), (ref_fields, ref_stretch) = comparable(mine), comparable(theirs)
            assert fields == ref_fields, f"ours: {mine}Batsim: {theirs}"
            assert stretch == pytest.approx(ref_stretch, rel=1e-9), f"ours: {mine}Batsim: {theirs}"


def test_a_job_killed_as_it_starts_has_batsims_null_execution_time() -> None:
    """Issue 17, case 1: execution_time 0.000000 and finish = start, as Batsim writes."""
    rows = [row.split(",") for row in replay("killer2-walltime120")]
    killed_at_start = [r for r in rows if r[7] == "COMPLETED_KILLED" and r[9] == "0.000000"]
    assert len(killed_at_start) > 20
    assert all(r[10] == r[8] for r in killed_at_start)
    assert all(float(r[STRETCH]) > 1e9 for r in killed_at_start)


class _Replayed(Exception):
    """The recorded messages to check have all been matched."""


def test_the_acknowledgement_of_a_registered_job_carries_its_full_id_after_submissions() -> None:
    """Issue 17, case 2: the acknowledgement has the full id and follows t = 0's submissions.

    batsched ``submitter`` registers ``"id": "0"``; Batsim's JOB_SUBMITTED acknowledging
    it carries ``"id": "dynamic!0"`` and comes after the static submissions of t = 0.
    Replayed message by message up to #22 of 193: message #23 (t = 57.25) holds a
    completion and a submission of one instant in an order decided by SimGrid's
    sub-nanosecond clock (a job started 31 s earlier against the submitter's drift), which
    the simulator does not reproduce (docs/simulator.md).
    """
    workload, platform, flags = SUBMITTER
    sim = Simulator([read_batsim_workload(DATA / workload, "w0")],
                    read_platform(DATA / platform), options=SimOptions(**flags))
    scheduler = RecordedScheduler(DATA / "submitter-walltime120.jsonl")
    checked = 22

    def until_checked(request: Any) -> Any:
        if scheduler.position >= checked:
            raise _Replayed
        return scheduler(request)

    with pytest.raises(_Replayed):
        sim.run(until_checked)
    assert scheduler.position == checked
    ack = scheduler.recorded[1][0].events[2]
    assert (ack.job_id, ack.job["id"]) == ("dynamic!0", "dynamic!0")
