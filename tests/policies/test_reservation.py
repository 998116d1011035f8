"""EASY's fast reservations give what the general walk gives.

:func:`whole_platform_reservation` (a job that needs every machine, O(1)) and
:func:`lowest_reservation` (any job, walking the running jobs themselves) must give what
:func:`plan_reservation` finds by walking every expected release, on any state: jobs
running past their walltime or without one, jobs started in the same decision, ties on
the end time.
"""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from batpolicy.policies.toolkit.reservation import (
    expected_releases,
    lowest_reservation,
    plan_reservation,
    whole_platform_reservation,
)
from batpolicy.protocol import types as t
from batpolicy.protocol.intervals import MachineSet
from batpolicy.scheduler.jobs import Job
from batpolicy.scheduler.state import ClusterState
from batpolicy.scheduler.view import PolicyView

NB = 10
WALLTIMES = st.one_of(st.none(), st.sampled_from([5.0, 10.0, 20.0]))


def _running(sizes: list[int], walltimes: list[float | None], now: float) -> ClusterState:
    """A state with one job per size started at 0 on the lowest free machines, at ``now``."""
    state = ClusterState()
    resources = tuple(t.ResourceInfo(i, f"h{i}") for i in range(NB))
    state.apply(t.SimulationBegins(0.0, NB, NB, 0, False, True, {}, resources, (),
                                   {"w0": "/w0.json"}, {"w0": {"p": {"type": "delay",
                                                                     "delay": 1.0}}}))
    for i, (res, walltime) in enumerate(zip(sizes, walltimes, strict=False)):
        if res > len(state.free):
            break
        job = {"id": f"w0!{i}", "subtime": 0.0, "res": res, "profile": "p"}
        if walltime is not None:
            job["walltime"] = walltime
        state.apply(t.JobSubmitted(0.0, f"w0!{i}", job))
        state.apply_decision(t.ExecuteJob(f"w0!{i}", state.free.lowest(res)))
    state.now = now
    return state


def _started(free: MachineSet, now: float, starts: list[tuple[int, float]]
             ) -> tuple[MachineSet, list[tuple[float, MachineSet]]]:
    """Jobs this decision starts (not in the state yet): the machines left, their releases."""
    started: list[tuple[float, MachineSet]] = []
    for res, walltime in starts:
        if res <= len(free):
            alloc = free.lowest(res)
            free = free - alloc
            started.append((now + walltime, alloc))
    started.sort(key=lambda item: item[0])
    return free, started


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 4), max_size=6), st.lists(WALLTIMES, min_size=6, max_size=6),
       st.sampled_from([0.0, 5.0, 12.0, 30.0]),
       st.lists(st.tuples(st.integers(1, 3), st.sampled_from([6.0, 10.0, 40.0])), max_size=2))
def test_a_whole_platform_job_is_reserved_what_the_walk_finds(
        sizes: list[int], walltimes: list[float | None], now: float,
        starts: list[tuple[int, float]]) -> None:
    state = _running(sizes, walltimes, now)
    view = PolicyView(state)
    free, started = _started(state.free, now, starts)
    head = Job("w0!head", 0.0, NB, 10.0, "p", seq=99)
    fast = whole_platform_reservation(head, view, started)
    walked = plan_reservation(head, now, free, expected_releases(view, started),
                              view.unavailable)
    assert fast is not None
    assert (fast.shadow_time, fast.machines) == (walked.shadow_time, walked.machines)


def test_other_jobs_and_unavailable_machines_are_left_to_the_walk() -> None:
    state = _running([2, 3], [10.0, 20.0], 0.0)
    view = PolicyView(state)
    assert whole_platform_reservation(Job("w0!a", 0.0, NB - 1, 1.0, "p", seq=7), view,
                                      []) is None
    state.apply(t.Notify(0.0, t.NotifyType.EVENT_MACHINE_UNAVAILABLE, resources=MachineSet.of(9)))
    assert whole_platform_reservation(Job("w0!b", 0.0, NB, 1.0, "p", seq=8), view, []) is None


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(1, 4), max_size=6), st.lists(WALLTIMES, min_size=6, max_size=6),
       st.sampled_from([0.0, 5.0, 10.0, 12.0, 30.0]),
       st.lists(st.tuples(st.integers(1, 3),
                          st.sampled_from([0.0, 5.0, 6.0, 10.0, 40.0, math.inf])), max_size=3),
       st.integers(1, NB + 1))
def test_the_walk_over_running_jobs_finds_what_the_general_walk_finds(
        sizes: list[int], walltimes: list[float | None], now: float,
        starts: list[tuple[int, float]], need: int) -> None:
    state = _running(sizes, walltimes, now)
    view = PolicyView(state)
    free, started = _started(state.free, now, starts)
    head = Job("w0!head", 0.0, need, 10.0, "p", seq=99)
    fast = lowest_reservation(head, now, free, view.running_by_expected_end, started)
    walked = plan_reservation(head, now, free, expected_releases(view, started),
                              view.unavailable)
    assert (fast.shadow_time, fast.machines) == (walked.shadow_time, walked.machines)
