"""EXECUTE_JOB is checked once: by the in-process Dispatcher, or else by the simulator.

On a zero-latency platform a reply of ``Dispatcher.handle`` applies at the instant of
the message it answers, and the Dispatcher's checker applied Batsim's rules
(:mod:`batpolicy.scheduler.rules`) to a state holding the same facts as Batsim's books:
the simulator does not check its plain EXECUTE_JOBs again
(:meth:`~batpolicy.simulator.engine.decisions.DecisionApplier.checked_by_scheduler`).
Any other scheduler, and any decision applied after time passed, is checked in full.
The two paths must give the same run.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from batpolicy.errors import InvalidDecision
from batpolicy.io.workload import JobSpec, Workload
from batpolicy.platforms.model import Platform
from batpolicy.policies.registry import make_policy
from batpolicy.protocol import types as t
from batpolicy.protocol.intervals import MachineSet
from batpolicy.scheduler.dispatch import Dispatcher
from batpolicy.simulator import Simulator
from batpolicy.simulator.engine import validation
from batpolicy.simulator.engine.decisions import DecisionApplier


def _workload(seed: int, n: int = 120) -> Workload:
    rng = random.Random(seed)
    specs, profiles, subtime = [], {}, 0.0
    for i in range(n):
        subtime += rng.choice([0.0, 0.0, 1.0, 3.0, 7.5])
        delay = float(rng.choice([0, 1, 2, 5, 10, 30]))
        walltime = delay + rng.choice([-1.0, 0.0, 5.0, 20.0]) if delay else 10.0
        res = rng.randint(1, 6)
        full, profile = f"w0!{i}", f"delay{delay:g}"
        profiles[profile] = {"type": "delay", "delay": delay}
        specs.append(JobSpec(full, subtime, res, profile, walltime,
                             {"id": full, "subtime": subtime, "res": res, "profile": profile,
                              "walltime": walltime}))
    return Workload("w0", specs, profiles)


def _run(seed: int, policy: str, wrap: bool, calls: list[int]) -> list[tuple[Any, ...]]:
    handle = Dispatcher(make_policy(policy)).handle
    scheduler = (lambda request: handle(request)) if wrap else handle
    result = Simulator([_workload(seed)], Platform.homogeneous(8)).run(scheduler)
    return [(r.job_id, r.start, r.finish, str(r.alloc), r.final_state) for r in result.records]


@pytest.mark.parametrize("policy", ["easy", "fcfs", "conservative"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_checked_path_and_the_full_check_give_the_same_run(
        monkeypatch: pytest.MonkeyPatch, policy: str, seed: int) -> None:
    calls: list[int] = []
    full_check = validation.check_execute

    def counted(view: Any, d: t.ExecuteJob) -> Any:
        calls.append(1)
        return full_check(view, d)

    monkeypatch.setattr(validation, "check_execute", counted)
    checked = _run(seed, policy, wrap=False, calls=calls)
    skipped = len(calls)
    calls.clear()
    full = _run(seed, policy, wrap=True, calls=calls)
    assert checked == full
    started = sum(1 for record in full if record[1] is not None)
    assert len(calls) == started > 0  # a wrapped handle: every start checked here
    assert skipped == 0  # Dispatcher.handle: none


def test_only_a_dispatchers_own_handle_is_trusted() -> None:
    dispatcher = Dispatcher(make_policy("easy"))
    assert DecisionApplier.checked_by_scheduler(dispatcher.handle)
    assert not DecisionApplier.checked_by_scheduler(lambda request: dispatcher.handle(request))
    assert not DecisionApplier.checked_by_scheduler(dispatcher.shadow)


class _StartsLate:
    """A Dispatcher-like scheduler (``checks_replies``) whose start applies 5 s later.

    Its EXECUTE_JOB takes machine 0 at t=5, when job 0 still runs there (until 10):
    Batsim aborts, so the simulator must check that start in full.
    """

    checks_replies = True

    def handle(self, request: t.Request) -> t.Reply:
        events = request.events
        if any(isinstance(e, t.JobSubmitted) and e.job_id == "w0!1" for e in events):
            return t.Reply(request.now, (t.ExecuteJob("w0!1", MachineSet.of(0),
                                                      timestamp=request.now + 5.0),))
        if any(isinstance(e, t.JobSubmitted) and e.job_id == "w0!0" for e in events):
            return t.Reply(request.now, (t.ExecuteJob("w0!0", MachineSet.of(0)),))
        return t.Reply(request.now, ())


def test_a_start_applied_after_time_passed_is_checked_in_full() -> None:
    specs = [JobSpec("w0!0", 0.0, 1, "delay10", 20.0,
                     {"id": "w0!0", "subtime": 0.0, "res": 1, "profile": "delay10"}),
             JobSpec("w0!1", 1.0, 1, "delay10", 20.0,
                     {"id": "w0!1", "subtime": 1.0, "res": 1, "profile": "delay10"})]
    work = Workload("w0", specs, {"delay10": {"type": "delay", "delay": 10.0}})
    scheduler = _StartsLate()
    assert DecisionApplier.checked_by_scheduler(scheduler.handle)
    with pytest.raises(InvalidDecision, match="computing w0!0"):
        Simulator([work], Platform.homogeneous(2)).run(scheduler.handle)
