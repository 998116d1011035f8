"""EXECUTE_JOB's ``additional_io_job``: I/O profiles merged into a job's parallel tasks.

The reference is real Batsim 4.2.1 on ``small_platform.xml`` with
``tests/data/batsim421/io_jobs.json`` and the one-job-at-a-time scheduler
``io_jobs.scheduler.py`` (its plan, ``io_jobs.plan.json``: allocation and I/O job per
job): an I/O job on machines overlapping the job's, beside it, a sequence paired with an
I/O sequence (repeated twice), a delay (the I/O is ignored), an I/O profile given inline,
a job that moves no data itself. Batsim's jobs.csv is
``io_jobs-small_platform.jobs.csv``; the simulator, given the same decisions, must write
it byte for byte.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from batpolicy.errors import InvalidDecision
from batpolicy.io.batsim_json import read_batsim_workload
from batpolicy.io.outputs import format_job_row
from batpolicy.platforms.xml import read_platform
from batpolicy.protocol import types as t
from batpolicy.protocol.intervals import MachineSet
from batpolicy.simulator import SimOptions
from batpolicy.simulator.latency.driver import make_simulator

DATA = Path(__file__).resolve().parents[1] / "data" / "batsim421"


class OneAtATime:
    """The recording's scheduler: the next submitted job once the previous one ended."""

    def __init__(self, plan: dict[str, dict[str, Any]]) -> None:
        self.plan = plan
        self.queue: list[str] = []
        self.running = False

    def __call__(self, request: t.Request) -> t.Reply:
        for event in request.events:
            if isinstance(event, t.JobSubmitted):
                self.queue.append(event.job_id)
            elif isinstance(event, t.JobCompleted):
                self.running = False
        decisions = []
        if not self.running and self.queue:
            job_id = self.queue.pop(0)
            entry = self.plan[job_id.split("!")[1]]
            decisions.append(t.ExecuteJob(job_id, MachineSet.parse(entry["alloc"]),
                                          additional_io_job=entry.get("io")))
            self.running = True
        return t.Reply(request.now, tuple(decisions))


def run(plan: dict[str, dict[str, Any]], workload: Path = DATA / "io_jobs.json") -> Any:
    sim = make_simulator([read_batsim_workload(workload, "w0")],
                         read_platform(DATA / "small_platform.xml"), options=SimOptions())
    return sim.run(OneAtATime(plan))


def test_io_jobs_give_batsims_jobs() -> None:
    result = run(json.loads((DATA / "io_jobs.plan.json").read_text()))
    ours = sorted(format_job_row(r) for r in result.records)
    batsim = (DATA / "io_jobs-small_platform.jobs.csv").read_text().splitlines(keepends=True)
    assert ours == sorted(batsim[1:])


def test_io_job_slows_the_job_down() -> None:
    """Without its I/O job, job 2's parallel task is shorter (the I/O moves 400 MB)."""
    plan = json.loads((DATA / "io_jobs.plan.json").read_text())
    with_io = {r.job_id: r for r in run(plan).records}
    without = {r.job_id: r for r in run({k: {"alloc": v["alloc"]} for k, v in plan.items()})
               .records}
    def runtime(r: Any) -> float:
        return r.finish - r.start
    assert runtime(with_io["w0!2"]) > 2 * runtime(without["w0!2"])


@pytest.mark.parametrize(("io", "message"), [
    ({"alloc": "1", "profile_name": "nope"}, "the given profile name 'nope' does not exist"),
    ({"alloc": "1", "profile_name": "io_hom", "profile": {"type": "delay", "delay": 1}},
     "the given profile name 'io_hom' already exists"),
    ({"alloc": "9", "profile_name": "io_hom"}, "alloc names machines that do not exist"),
    ({"alloc": "1", "profile_name": "io_seq"}, "the job io profile is a sequence profile"),
    ({"alloc": "1", "profile_name": "d1"}, "Batsim merges only parallel"),
    ({"alloc": "1", "profile_name": "nocom"}, "'nocom' moves no data"),
])
def test_bad_io_job_is_refused_naming_job_and_rule(io: dict[str, Any], message: str) -> None:
    plan = {str(i): {"alloc": "0-1"} for i in range(1, 10)}
    plan["1"] = {"alloc": "0-1", "io": io}
    with pytest.raises(InvalidDecision, match="EXECUTE_JOB") as caught:
        run(plan)
    assert message in str(caught.value) and "w0!1" in str(caught.value)
