"""Cases of Batsim 4.2.1's own test suite, recorded with real Batsim, replayed without it.

``tests/sim/test_batsim_testsuite.py`` compares fake-batsim with real Batsim on Batsim's
test matrix when Batsim is built; these four cases of that matrix were recorded
(``bench/fidelity/relay.py`` between Batsim 4.2.1 and batsched 1.4, the commands of the
matrix; ``tests/data/README.md``) so that a clone without Batsim still checks what they
show:

- ``kill_progress-delay1-killer`` (``test_kill::test_kill_progress``, small_platform.xml,
  batsched ``killer``): Batsim sends the one JOB_SUBMITTED alone and NOTIFY
  ``no_more_static_job_to_submit`` in a later message, so the kill lands at 5.000060;
- ``submitorder2-samesubmittime-fcfs`` (``test_submitorder::test_submitorder2``): the
  submissions of t = 20.00003 go out at once although jobs end at that date;
- ``walltime2-cluster512-fcfs`` (``test_walltime::test_walltime2``): a parallel task
  whose runtime equals its walltime completes (job 1010), a delay job reaches it;
- ``basic2-cluster512_pfs-delay1-fcfs`` (``test_simple::test_basic2``): the storage host
  counts in schedule.csv's ``nb_computing_machines`` (513), not in machine states.

and two runs of ``bench/fidelity/ptask_random.py`` (batsched ``fcfs`` on its seeded random
workloads of communicating parallel tasks, on the generated ``racks`` and
``multicluster`` platforms, links with latency): Batsim's 1-byte messages share the
links with the running tasks in the parallel-task solver and slow them for their few
nanoseconds, which moves a printed microsecond (``random-racks-seed5-fcfs`` job 7 ends at
82.610532, not 82.610531; ``random-multicluster-seed3-fcfs`` jobs 36, 45, 50).

Replayed, the simulator (the latency driver: these platforms' links take time) must
send Batsim's messages one for one (same events in the same messages, same 6-decimal
times), and write Batsim's jobs.csv, schedule.csv counts and machine_states.csv.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from sim.test_transcript_fidelity import as_batsim_json

from batpolicy.io.batsim_json import read_batsim_workload
from batpolicy.io.machine_states import format_row
from batpolicy.io.outputs import SCHEDULE_COLUMNS, format_job_row, schedule_fields
from batpolicy.platforms.xml import read_platform
from batpolicy.protocol import types as t
from batpolicy.protocol.codec import reply_from_obj, request_from_obj
from batpolicy.simulator import SimOptions
from batpolicy.simulator.latency.driver import LatencySimulator, make_simulator

DATA = Path(__file__).resolve().parents[1] / "data" / "batsim_suite"
PLATFORMS = Path(__file__).resolve().parents[1] / "data" / "batsim421"
#: recording -> (workload, platform file, Batsim flags as SimOptions)
RUNS: dict[str, tuple[str, Path, dict[str, Any]]] = {
    "kill_progress-delay1-killer": ("test_one_delay_job.json",
                                    PLATFORMS / "small_platform.xml",
                                    {"forward_profiles": True}),
    "submitorder2-samesubmittime-fcfs": ("test_same_submit_time.json",
                                         PLATFORMS / "small_platform.xml", {}),
    "walltime2-cluster512-fcfs": ("test_walltime.json", PLATFORMS / "cluster512.xml", {}),
    "basic2-cluster512_pfs-delay1-fcfs": ("test_one_delay_job.json",
                                          DATA / "cluster512_pfs.xml", {}),
    "random-racks-seed5-fcfs": ("random-racks-seed5.json", DATA / "random-racks.xml", {}),
    "random-multicluster-seed3-fcfs": ("random-multicluster-seed3.json",
                                       DATA / "random-multicluster.xml", {}),
}
WALL_CLOCK = {"batsim_version", "scheduling_time", "simulation_time"}


class MessageForMessage:
    """Answers with the recorded replies; each request must be Batsim's message, whole."""

    def __init__(self, name: str, folder: Path = DATA) -> None:
        self.name = name
        path = folder / f"{name}.jsonl"
        text = path.read_text() if path.is_file() else \
            gzip.decompress(path.with_suffix(".jsonl.gz").read_bytes()).decode()
        self.recorded = [(request_from_obj(r["batsim"]), reply_from_obj(r["scheduler"]))
                         for r in map(json.loads, text.splitlines())]
        self.position = 0

    def __call__(self, request: t.Request) -> t.Reply:
        assert self.position < len(self.recorded), f"a message Batsim did not send: {request}"
        expected, reply = self.recorded[self.position]
        got = (request.now, [_shortest(as_batsim_json(e), self.name) for e in request.events])
        want = (expected.now, [_shortest(as_batsim_json(e), self.name)
                               for e in expected.events])
        assert got == want, f"Batsim's message #{self.position + 1}:\n{want}\nours:\n{got}"
        self.position += 1
        return reply


#: Recordings whose profiles have floats of 16-17 significant digits: Batsim's
#: SIMULATION_BEGINS writes them with 15 (rapidjson, which rounds the 15th its own way),
#: fake-batsim with Python's repr (a difference of the wire, not of the simulation), so
#: they are compared to 13.
LONG_FLOATS = {"random-racks-seed5-fcfs", "random-multicluster-seed3-fcfs"}


def _shortest(event: dict[str, Any], name: str) -> dict[str, Any]:
    """SIMULATION_BEGINS' profile floats to 13 significant digits for :data:`LONG_FLOATS`."""
    if name not in LONG_FLOATS or event.get("type") != "SIMULATION_BEGINS":
        return event

    def short(value: Any) -> Any:
        """``value`` with every float to 13 significant digits."""
        if isinstance(value, float):
            return float(f"{value:.13g}")
        if isinstance(value, dict):
            return {k: short(v) for k, v in value.items()}
        if isinstance(value, list):
            return [short(v) for v in value]
        return value
    return {**event, "data": {**event["data"], "profiles": short(event["data"]["profiles"])}}


def replay(name: str) -> tuple[Any, list[str]]:
    """Run recording ``name`` against its recorded replies: (result, machine-state rows)."""
    workload, platform, flags = RUNS[name]
    sim = make_simulator([read_batsim_workload(DATA / workload, "w0")],
                         read_platform(platform), options=SimOptions(**flags))
    assert isinstance(sim, LatencySimulator)
    rows: list[str] = []
    sim.trace_machine_states(lambda batch: rows.extend(format_row(*row) for row in batch))
    scheduler = MessageForMessage(name)
    result = sim.run(scheduler)
    assert scheduler.position == len(scheduler.recorded)
    assert result.complete
    return result, rows


@pytest.mark.parametrize("name", sorted(RUNS))
def test_batsim_suite_case_replays_message_for_message_with_batsims_outputs(name: str
                                                                           ) -> None:
    result, states = replay(name)
    jobs = (DATA / f"{name}.jobs.csv").read_text().splitlines(keepends=True)[1:]
    assert sorted(format_job_row(r) for r in result.records) == sorted(jobs)
    header, values = (DATA / f"{name}.schedule.csv").read_text().splitlines()
    reference = dict(zip(header.split(","), values.split(","), strict=True))
    fields = schedule_fields(result)
    assert {k: fields[k] for k in SCHEDULE_COLUMNS if k not in WALL_CLOCK} == \
        {k: reference[k] for k in SCHEDULE_COLUMNS if k not in WALL_CLOCK}
    assert states == (DATA / f"{name}.machine_states.csv").read_text().splitlines(
        keepends=True)[1:]


def test_a_parallel_task_ending_at_its_walltime_completes_a_delay_does_not() -> None:
    """walltime2: job 1010 (parallel_homogeneous, 10 s on a 10 s walltime) succeeds."""
    result, _ = replay("walltime2-cluster512-fcfs")
    states = {r.job_id: r.final_state for r in result.records}
    assert states["w0!1010"] is t.JobState.COMPLETED_SUCCESSFULLY
    assert states["w0!10"] is t.JobState.COMPLETED_WALLTIME_REACHED  # delay 10 s, walltime 10


def test_the_storage_host_counts_in_schedule_csv_only() -> None:
    result, states = replay("basic2-cluster512_pfs-delay1-fcfs")
    assert schedule_fields(result)["nb_computing_machines"] == "513"
    assert states[0].endswith(",511,1\n")  # 512 compute machines in the states
