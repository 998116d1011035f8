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
  static submissions (case 2); at t = 57.25 a completion comes before a submission of its
  instant (the job went to sleep before the submitter did, ``simulator/core.py``).

``pybatsim-wakeorder`` was recorded the same way between real Batsim 4.2.1 and a pybatsim
3.2.1 scheduler (``wake_order_scheduler.py.txt``: each job started on the lowest free
machines at once, CALL_ME_LATER(10) in reply to SIMULATION_BEGINS) on
``wake_order.json`` with the events of ``wake_order_events.txt``: the wake-ups of one
instant in the order their actors went to sleep (t = 10: the event, the call, the
submissions, then the completion of a job started at 0; t = 25 and t = 100030: a
completion before a submission). ``pybatsim-seqorder`` (the same scheduler, no events, on
``seq_order.json``): a job of three 10 s tasks ends after the submission of its instant,
its last sleep having begun after the submitter's (t = 30 and t = 100030).

Each is replayed as ``test_transcript_fidelity`` replays the shared recordings: the
simulator, fed the recorded replies, must send Batsim's events at each instant and write
Batsim's jobs.csv byte for byte.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sim.test_transcript_fidelity import RecordedScheduler

from batpolicy.io.batsim_json import read_batsim_workload
from batpolicy.io.events import read_events
from batpolicy.io.outputs import format_job_row
from batpolicy.platforms.xml import read_platform
from batpolicy.simulator import SimOptions, Simulator

DATA = Path(__file__).resolve().parents[1] / "data" / "batsim421"
#: name -> (workload, platform, Batsim flags as SimOptions)
RUNS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "killer2-walltime120": ("walltime_mix_120.json", "zero_lat_cluster32.xml", {}),
    "killer-walltime120": ("walltime_mix_120.json", "zero_lat_cluster32.xml", {}),
}
SUBMITTER = ("walltime_mix_120.json", "zero_lat_cluster32.xml",
             {"dynamic_jobs": True, "acknowledge_dynamic_jobs": True})
RUNS["submitter-walltime120"] = SUBMITTER
RUNS["pybatsim-wakeorder"] = ("wake_order.json", "zero_lat_cluster32.xml", {})
RUNS["pybatsim-seqorder"] = ("seq_order.json", "zero_lat_cluster32.xml", {})
#: name -> the ``--events`` file of the run
EVENTS = {"pybatsim-wakeorder": "wake_order_events.txt"}


def replay(name: str) -> list[str]:
    """Replay recording ``name``; return our jobs.csv rows (checking every message)."""
    workload, platform, flags = RUNS[name]
    events = read_events(DATA / EVENTS[name]) if name in EVENTS else ()
    sim = Simulator([read_batsim_workload(DATA / workload, "w0")],
                    read_platform(DATA / platform), events=events,
                    options=SimOptions(**flags))
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


def test_the_acknowledgement_of_a_registered_job_carries_its_full_id_after_submissions() -> None:
    """Issue 17, case 2: the acknowledgement has the full id and follows t = 0's submissions.

    batsched ``submitter`` registers ``"id": "0"``; Batsim's JOB_SUBMITTED acknowledging
    it carries ``"id": "dynamic!0"`` and comes after the static submissions of t = 0
    (the whole conversation replays: the test above).
    """
    scheduler = RecordedScheduler(DATA / "submitter-walltime120.jsonl")
    ack = scheduler.recorded[1][0].events[2]
    assert (ack.job_id, ack.job["id"]) == ("dynamic!0", "dynamic!0")
    replayed = replay("submitter-walltime120")
    assert any(row.startswith("0,dynamic,") for row in replayed)


def test_wake_ups_of_one_instant_come_in_the_order_their_actors_went_to_sleep() -> None:
    """Real Batsim 4.2.1 + pybatsim: a completion, then a submission of its instant.

    The job started before the submitter's previous batch (t = 25, t = 100030); the
    waiter and the event submitter slept before the job submitter (t = 10).
    """
    scheduler = RecordedScheduler(DATA / "pybatsim-wakeorder.jsonl")
    order: dict[float, list[str]] = {}  # the first message of each instant
    for request, _ in scheduler.recorded:
        order.setdefault(request.now, [getattr(e, "job_id", None) or type(e).__name__
                                       for e in request.events])
    assert order[25.0] == ["w0!d", "w0!e"] and order[100030.0][:2] == ["w0!f", "w0!h"]
    assert order[10.0][:5] == ["Notify", "RequestedCall", "w0!b", "w0!c", "w0!a"]
    assert len(replay("pybatsim-wakeorder")) == 8


def test_a_sequence_job_completes_where_its_last_task_began() -> None:
    """Batsim's executor sleeps once per task: a sequence job ends where its last began.

    At t = 30 the job of three 10 s tasks started at 0 ends after the submission due then
    (its last sleep began at 20, the submitter's at 15).
    """
    scheduler = RecordedScheduler(DATA / "pybatsim-seqorder.jsonl")
    at30 = next(request for request, _ in scheduler.recorded if request.now == 30.0)
    assert [type(e).__name__ for e in at30.events] == ["JobSubmitted", "JobCompleted"]
    assert len(replay("pybatsim-seqorder")) == 6

