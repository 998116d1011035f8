"""The once-per-instant hook that moves ends: exact times, walltime kills, the policy's view."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from batpolicy.errors import ConfigError
from batpolicy.io.workload import JobSpec, Workload
from batpolicy.platforms.model import Platform
from batpolicy.protocol import types as t
from batpolicy.protocol.intervals import MachineSet
from batpolicy.protocol.types import JobState
from batpolicy.simulator import SimOptions, Simulator
from batpolicy.simulator.instant import InstantModel

_OK = JobState.COMPLETED_SUCCESSFULLY
_WALLTIME = JobState.COMPLETED_WALLTIME_REACHED


class SharedLink(InstantModel):
    """Test model: every running job shares one link; k jobs progress at 1/k each.

    A job's work is its own model's duration (``natural_end - start``); at each instant
    the work done since the last one is banked and the rest re-planned at the new rate.
    """

    name = "shared-link"

    def __init__(self) -> None:
        self.calls: list[tuple[float, tuple[str, ...]]] = []
        self.left: dict[str, float] = {}
        self.rate: dict[str, float] = {}
        self.since = 0.0

    def after_instant(self, now: float, running: Mapping[str, Any],
                      ctx: Any) -> dict[str, float]:
        self.calls.append((now, tuple(sorted(running))))
        for job_id in list(self.left):
            if job_id not in running:
                del self.left[job_id], self.rate[job_id]
            else:
                self.left[job_id] -= (now - self.since) * self.rate[job_id]
        for job_id, job in running.items():
            if job_id not in self.left:
                self.left[job_id] = ctx.natural_end(job) - job.start
        self.since = now
        k = len(running)
        moves = {}
        for job_id in running:
            self.rate[job_id] = 1.0 / k
            moves[job_id] = now + self.left[job_id] * k
        return moves


def workload(**walltimes: float | None) -> Workload:
    """Job a (delay 10) submitted at 0, job b (delay 4) at 2."""
    jobs = []
    for name, subtime, profile in (("a", 0.0, "d10"), ("b", 2.0, "d4")):
        raw = {"id": f"w0!{name}", "subtime": subtime, "res": 1, "profile": profile}
        wt = walltimes.get(name)
        if wt is not None:
            raw["walltime"] = wt
        jobs.append(JobSpec(f"w0!{name}", subtime, 1, profile, wt, raw))
    return Workload("w0", jobs, {"d10": {"type": "delay", "delay": 10},
                                 "d4": {"type": "delay", "delay": 4}})


class StartAll:
    """Starts a on machine 0 and b on machine 1 as soon as they are submitted."""

    def __init__(self) -> None:
        self.completed: dict[str, tuple[float, JobState, int]] = {}
        self.killed: list[t.JobKilled] = []
        self.kill_at: float | None = None

    def __call__(self, request: t.Request) -> t.Reply:
        out: list[t.Decision] = []
        for event in request.events:
            if isinstance(event, t.JobSubmitted):
                out.append(t.ExecuteJob(event.job_id, MachineSet.of(0 if event.job_id == "w0!a"
                                                               else 1)))
                if self.kill_at is not None and event.job_id == "w0!a":
                    out.append(t.CallMeLater(self.kill_at))
            elif isinstance(event, t.RequestedCall):
                out.append(t.KillJob(("w0!a",)))
            elif isinstance(event, t.JobCompleted):
                self.completed[event.job_id] = (event.timestamp, event.job_state,
                                                event.return_code)
            elif isinstance(event, t.JobKilled):
                self.killed.append(event)
        return t.Reply(request.now, tuple(out))


def simulate(model: InstantModel, **walltimes: float | None
             ) -> tuple[StartAll, Simulator, list[tuple[str, float]]]:
    scheduler = StartAll()
    sim = Simulator([workload(**walltimes)], Platform.homogeneous(2),
                    options=SimOptions(instant_model=model))
    hints: list[tuple[str, float]] = []
    sim.set_end_hint(lambda job_id, end: hints.append((job_id, end)))
    sim.run(scheduler)
    return scheduler, sim, hints


def test_shared_link_moves_an_end_later_then_earlier_with_exact_times() -> None:
    # a alone 0-2 (2 s done, 8 left); a and b share 2-10 (b's 4 s take 8 s, a does 4 more);
    # a alone again from 10: its last 4 s end at 14 (planned 10, then 18, then 14)
    model = SharedLink()
    scheduler, sim, hints = simulate(model)
    assert scheduler.completed == {"w0!b": (10.0, _OK, 0), "w0!a": (14.0, _OK, 0)}
    assert hints == [("w0!a", 10.0), ("w0!a", 18.0), ("w0!b", 10.0), ("w0!a", 14.0)]
    # once per instant with a start or an end, after all of them
    assert model.calls == [(0.0, ("w0!a",)), (2.0, ("w0!a", "w0!b")), (10.0, ("w0!a",)),
                           (14.0, ())]
    record = sim.result().job("w0!a")
    assert (record.start, record.runtime, record.finish) == (0.0, 14.0, 14.0)


def test_a_moved_end_past_the_walltime_is_a_kill_at_exactly_start_plus_walltime() -> None:
    scheduler, sim, hints = simulate(SharedLink(), a=13.0)
    assert scheduler.completed["w0!a"] == (13.0, _WALLTIME, -1)
    assert scheduler.completed["w0!b"] == (10.0, _OK, 0)
    assert ("w0!a", 13.0) in hints and all(end <= 13.0 for job, end in hints if job == "w0!a")
    assert sim.result().job("w0!a").runtime == 13.0


def test_moving_back_before_the_walltime_restores_the_jobs_own_outcome() -> None:
    # planned 18 at t=2 is past 0 + 16: a kill at 16 is planned, then at t=10 the end
    # moves back to 14 and the job succeeds
    scheduler, _, hints = simulate(SharedLink(), a=16.0)
    assert scheduler.completed["w0!a"] == (14.0, _OK, 0)
    assert hints == [("w0!a", 10.0), ("w0!a", 16.0), ("w0!b", 10.0), ("w0!a", 14.0)]


def test_the_jobs_own_walltime_shorter_than_its_work_still_kills_it() -> None:
    # b's own profile (4 s) is within its walltime 5, but shared it would end at 10
    scheduler, _, _ = simulate(SharedLink(), b=5.0)
    assert scheduler.completed["w0!b"] == (7.0, _WALLTIME, -1)
    # a: 2 s alone, 5 s at half speed (2.5 done), alone from 7 with 5.5 left
    assert scheduler.completed["w0!a"] == (12.5, _OK, 0)


def test_kill_progress_is_the_job_models_and_a_killed_job_leaves_the_share() -> None:
    scheduler = StartAll()
    scheduler.kill_at = 4.0
    sim = Simulator([workload()], Platform.homogeneous(2),
                    options=SimOptions(instant_model=SharedLink()))
    sim.run(scheduler)
    assert scheduler.completed["w0!a"][0:2] == (4.0, JobState.COMPLETED_KILLED)
    # b: 2 s of work at half speed (1 s done) then alone from 4: 3 s left, ends at 7
    assert scheduler.completed["w0!b"] == (7.0, _OK, 0)


class Backwards(InstantModel):
    name = "backwards"

    def after_instant(self, now: float, running: Mapping[str, Any],
                      ctx: Any) -> dict[str, float]:
        return {job_id: now - 1.0 for job_id in running}


def test_an_end_moved_into_the_past_is_a_clear_error_naming_the_model() -> None:
    with pytest.raises(ConfigError, match="backwards moved the end of 'w0!a'"):
        simulate(Backwards())


def test_without_an_instant_model_nothing_is_hinted_unless_asked() -> None:
    sim = Simulator([workload()], Platform.homogeneous(2))
    assert not sim.parts.ends.moving
    scheduler = StartAll()
    sim.run(scheduler)
    assert scheduler.completed == {"w0!a": (10.0, _OK, 0), "w0!b": (6.0, _OK, 0)}


class Delayed(StartAll):
    """Starts b with a decision stamped ``at`` (Batsim sleeps until then)."""

    def __init__(self, at: float) -> None:
        super().__init__()
        self.at = at

    def __call__(self, request: t.Request) -> t.Reply:
        out: list[t.Decision] = []
        for event in request.events:
            if isinstance(event, t.JobSubmitted):
                stamp = self.at if event.job_id == "w0!b" else None
                out.append(t.ExecuteJob(event.job_id, MachineSet.of(0 if event.job_id == "w0!a"
                                                               else 1), timestamp=stamp))
            elif isinstance(event, t.JobCompleted):
                self.completed[event.job_id] = (event.timestamp, event.job_state,
                                                event.return_code)
        return t.Reply(request.now, tuple(out))


@pytest.mark.parametrize("at,calls,ends", [
    # b starts at 3: a did 3 alone, 7 left at half speed until b ends at 11, then 3 alone
    (3.0, [0.0, 3.0, 11.0, 14.0], {"w0!a": 14.0, "w0!b": 11.0}),
    # b's start stamped at 12: a ends at 10 while Batsim sleeps; the hook still runs there
    (12.0, [0.0, 10.0, 12.0, 16.0], {"w0!a": 10.0, "w0!b": 16.0}),
])
def test_decisions_stamped_later_still_get_the_hook_at_every_instant(
        at: float, calls: list[float], ends: dict[str, float]) -> None:
    model = SharedLink()
    scheduler = Delayed(at)
    Simulator([workload()], Platform.homogeneous(2),
              options=SimOptions(instant_model=model)).run(scheduler)
    assert [now for now, _ in model.calls] == calls
    assert {job: done[0] for job, done in scheduler.completed.items()} == ends
