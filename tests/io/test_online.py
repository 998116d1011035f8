"""Issue 44: a run keeps no finished job, and its figures are those of the whole list."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from batpolicy.io.inputs import InputSpec, load_inputs
from batpolicy.io.metrics import job_outcomes, online_metrics
from batpolicy.io.online import ExactSum
from batpolicy.io.outputs import OutputPaths
from batpolicy.policies.registry import make_policy
from batpolicy.scheduler.dispatch import Dispatcher
from batpolicy.scheduler.outcomes import compute_metrics
from batpolicy.simulator.engine.simulator import Simulator
from batpolicy.simulator.run import output_layout, run_simulation

KTH = Path("/work/shared/data/traces/KTH-SP2-1996-2.swf.gz")


def test_exact_sum_is_fsum_in_any_order() -> None:
    rng = random.Random(4)
    values = [rng.uniform(-1, 1) * 10 ** rng.randint(-20, 20) for _ in range(5000)]
    sums = []
    for _ in range(3):
        rng.shuffle(values)
        s = ExactSum()
        for v in values:
            s.add(v)
            s.maybe_fold()
        sums.append(s.value())
    assert sums == [math.fsum(values)] * 3


@pytest.mark.parametrize("policy", ["easy", "fcfs"])
def test_a_run_forgets_finished_jobs_and_its_metrics_are_the_records(
        tmp_path: Path, policy: str) -> None:
    workloads, platform, _ = load_inputs(InputSpec())  # the bundled 250 jobs
    extra, groups = output_layout(workloads, platform, Simulator(workloads, platform).options)
    dispatcher = Dispatcher(make_policy(policy, {}))
    kept = []

    def factory(on_record):  # type: ignore[no-untyped-def]
        def both(record):  # type: ignore[no-untyped-def]
            kept.append(record)
            on_record(record)
        return Simulator(workloads, platform, on_record=both)

    report = run_simulation(factory, dispatcher.handle, OutputPaths.in_dir(tmp_path),
                            progress=False, extra_columns=extra, groups=groups)
    # nothing per job is left: the simulator's records, the scheduler's jobs table
    assert report.result.records == [] and report.result.nb_records == 250
    assert len(dispatcher.state.jobs) == 0 and len(kept) == 250
    # the figures gathered as jobs ended are those of the whole list of records
    whole = compute_metrics(job_outcomes(kept), nb_machines=platform.nb_machines,
                            groups=groups)
    written = json.loads((tmp_path / "metrics.json").read_text())
    for key, value in whole.items():
        if key not in ("scheduler_time_s", "decisions_per_second"):
            assert written[key] == value, key
    again = online_metrics(report.result, 10.0, groups, copies=True)
    for record in kept:
        again.add(record)
    assert again.metrics()["mean_bounded_slowdown"] == whole["mean_bounded_slowdown"]


def test_copies_merge_as_merge_copies_does() -> None:
    from batpolicy.io.result import JobRecord, SimResult
    from batpolicy.protocol.intervals import MachineSet
    from batpolicy.protocol.types import JobState

    done = JobState.COMPLETED_SUCCESSFULLY
    records = [
        JobRecord("w0!1", "p", 5.0, 1, 100.0, JobState.COMPLETED_KILLED, start=10.0,
                  runtime=20.0, finish=30.0, alloc=MachineSet.of(0)),
        JobRecord("w0!2", "p", 6.0, 1, 100.0, done, start=6.0, runtime=4.0, finish=10.0,
                  alloc=MachineSet.of(1)),
        JobRecord("r!1", "p", 30.0, 1, 100.0, JobState.COMPLETED_KILLED, start=31.0,
                  runtime=9.0, finish=40.0, alloc=MachineSet.of(0), metadata="parent=w0!1"),
        JobRecord("r!2", "p", 40.0, 1, 100.0, done, start=41.0, runtime=59.0, finish=100.0,
                  alloc=MachineSet.of(0), metadata="parent=r!1"),
    ]
    online = online_metrics(SimResult(nb_machines=2), 10.0, None, copies=True)
    for r in records:
        online.add(r)
    got = online.metrics()
    whole = compute_metrics(job_outcomes(records), nb_machines=2)
    assert got["nb_jobs"] == 2 and got["max_turnaround_time"] == 95.0
    assert {k: got[k] for k in whole if k in got} == \
        {k: v for k, v in whole.items() if k in got}


@pytest.mark.skipif(not KTH.is_file(), reason="shared traces not mounted")
def test_kth_schedule_csv_and_metrics_unchanged(tmp_path: Path) -> None:
    """Whole KTH easy: schedule.csv's figures gathered online are the records' ones."""
    from batpolicy.io.outputs import schedule_fields
    from batpolicy.io.swf import read_swf

    workload = read_swf(KTH, max_jobs=3000)
    from batpolicy.platforms.model import Platform

    platform = Platform.homogeneous(workload.nb_res or 100)
    sim = Simulator([workload], platform)
    sim.run(Dispatcher(make_policy("easy", {})).handle)
    result = sim.result()
    ran = [r for r in result.records if r.start is not None]
    fields = schedule_fields(result)
    assert fields["mean_waiting_time"] == \
        f"{math.fsum(r.start - r.submission_time for r in ran) / result.nb_jobs:f}"
    assert fields["max_slowdown"] == \
        f"{max((r.start + r.runtime - r.submission_time) / r.runtime for r in ran):f}"
