"""The state's running jobs by expected end: the running jobs, sorted, whatever happens.

``ClusterState`` keeps them in one list sorted by (expected end, submission rank) with
C-level bisection (scheduler/state.py); EASY's shadow time and every reservation walk it.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from batpolicy.protocol import types as t
from batpolicy.protocol.intervals import MachineSet
from batpolicy.scheduler.state import ClusterState, check_invariants

NB = 8


def _state(walltimes: list[float]) -> ClusterState:
    state = ClusterState()
    resources = tuple(t.ResourceInfo(i, f"h{i}") for i in range(NB))
    state.apply(t.SimulationBegins(0.0, NB, NB, 0, False, True, {}, resources, (),
                                   {"w0": "/w0.json"}, {"w0": {"p": {"type": "delay",
                                                                     "delay": 1.0}}}))
    for i, walltime in enumerate(walltimes):
        state.apply(t.JobSubmitted(0.0, f"w0!{i}", {"id": f"w0!{i}", "subtime": 0.0, "res": 1,
                                                     "walltime": walltime, "profile": "p"}))
    return state


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from([5.0, 10.0, 20.0]), min_size=1, max_size=NB),
       st.lists(st.tuples(st.booleans(), st.integers(0, NB - 1)), max_size=40),
       st.lists(st.sampled_from([0.0, 1.0, 2.0]), max_size=40))  # 0: same instant, equal ends
def test_running_jobs_stay_sorted_by_expected_end(walltimes: list[float], steps: list,
                                                  delays: list[float]) -> None:
    state = _state(walltimes)
    now = 0.0
    for (start, i), delay in zip(steps, delays + [1.0] * len(steps), strict=False):
        now += delay
        state.now = now
        job = state.jobs.get(f"w0!{i}")
        if job is None:
            continue
        if start and job.status.value == "waiting":
            machine = state.free.min()
            state.apply_decision(t.ExecuteJob(job.id, MachineSet.of(machine)))
        elif start and job.status.value == "running":  # a driver moves its end (earlier)
            state.move_expected_end(job, min(job.expected_end, now + delay / 2))
        elif not start and job.status.value == "running":
            state.apply(t.JobCompleted(now, job.id, t.JobState.COMPLETED_SUCCESSFULLY, 0,
                                       job.allocation))
        index = list(state.running_by_expected_end)
        assert index == sorted(state.running.values(), key=lambda j: (j.expected_end, j.seq))
        check_invariants(state)


def test_a_job_tied_on_expected_end_leaves_the_index_by_its_rank() -> None:
    state = _state([10.0, 10.0, 10.0])
    for i in range(3):
        state.apply_decision(t.ExecuteJob(f"w0!{i}", MachineSet.of(i)))
    a, b, c = (state.jobs[f"w0!{i}"] for i in range(3))
    assert list(state.running_by_expected_end) == [a, b, c]  # equal ends: by rank
    state.now = 4.0
    state.apply(t.JobCompleted(4.0, b.id, t.JobState.COMPLETED_SUCCESSFULLY, 0, b.allocation))
    assert list(state.running_by_expected_end) == [a, c]
    state.move_expected_end(c, 5.0)
    assert list(state.running_by_expected_end) == [c, a]


def test_jobs_started_out_of_rank_order_with_equal_ends_are_indexed_by_rank() -> None:
    state = _state([10.0, 10.0, 10.0, 10.0])
    for i in (2, 0, 3, 1):  # the same instant and walltime: equal expected ends
        state.apply_decision(t.ExecuteJob(f"w0!{i}", MachineSet.of(i)))
    assert [job.seq for job in state.running_by_expected_end] == [0, 1, 2, 3]
    check_invariants(state)
    for i in (1, 3, 0, 2):
        job = state.jobs[f"w0!{i}"]
        state.apply(t.JobCompleted(0.0, job.id, t.JobState.COMPLETED_SUCCESSFULLY, 0,
                                   job.allocation))
        assert job not in state.running_by_expected_end
        check_invariants(state)
    assert not state.running_by_expected_end
