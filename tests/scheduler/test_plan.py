"""Per-machine plans (policies.toolkit.plan).

Exact hand-made schedules, incremental updates equal to a recomputation from scratch,
copies independent of the original, and the CPU count never exceeded under random
arrivals, starts, early ends, withdrawals and capacity changes (hypothesis).
Conservative backfilling's reservation-holding plan is tested in test_slices.py.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from batpolicy.policies.toolkit.plan import (
    MachinePlan,
    Plan,
    PlannedJob,
    check_capacity,
    earliest_fit,
)
from batpolicy.protocol.intervals import MachineSet


def job(name: str, res: int, work: float, deadline: float = math.inf, **kw: float) -> PlannedJob:
    return PlannedJob(name, res, work, deadline=deadline, **kw)


def starts(machine: MachinePlan) -> dict[str, tuple[float, float]]:
    return {j.id: (s, e) for j, s, e in machine.schedule()}


# ------------------------------------------------------------------ hand-made cases
def test_ordered_schedule_respects_cpus_order_and_speed() -> None:
    m = MachinePlan("m", MachineSet.span(0, 3), speed=2.0)  # 4 CPUs, twice the reference speed
    m.add_running("r", 10.0, 2)  # 2 CPUs busy until 10
    for pj in (job("a", 3, 8.0), job("b", 1, 40.0), job("c", 2, 4.0)):
        m.insert(pj)
    # a (3 CPUs, 4 s here) waits for r; b (1 CPU, 20 s) cannot start before a (ordered);
    # c (2 CPUs, 2 s) cannot start before b and needs 2 CPUs: a ends at 14.
    assert starts(m) == {"a": (10.0, 14.0), "b": (10.0, 30.0), "c": (14.0, 16.0)}
    check_capacity(m)


def test_unordered_schedule_fills_gaps() -> None:
    m = MachinePlan("m", MachineSet.span(0, 3), ordered=False)
    m.add_running("r", 10.0, 2)
    for pj in (job("a", 4, 5.0), job("b", 2, 10.0), job("c", 2, 3.0)):
        m.insert(pj)
    # a needs all 4 CPUs: 10-15; b (2 CPUs, 10 s) fits now until 10: 0-10; c then waits for a
    assert starts(m) == {"a": (10.0, 15.0), "b": (0.0, 10.0), "c": (15.0, 18.0)}


def test_walltime_caps_duration_and_unknown_work_blocks_forever() -> None:
    m = MachinePlan("m", MachineSet.span(0, 1), speed=0.5)
    m.insert(job("a", 1, 100.0, walltime=60.0))  # 200 s at half speed, capped at 60
    m.insert(job("b", 2, math.inf))  # no work estimate and no walltime
    m.insert(job("c", 1, 1.0))
    assert starts(m) == {"a": (0.0, 60.0), "b": (60.0, math.inf), "c": (math.inf, math.inf)}


def test_late_jobs_and_tardiness_and_edf_position() -> None:
    m = MachinePlan("m", MachineSet.of(0))
    for pj in (job("a", 1, 5.0, 4.0), job("b", 1, 5.0, 20.0), job("c", 1, 5.0, 12.0)):
        m.insert(pj, m.edf_position(pj.deadline))
    assert [j.id for j in m.queue] == ["a", "c", "b"]
    assert m.late_and_tardiness() == (1, 1.0)  # a ends at 5 > 4
    assert m.edf_position(12.0) == 2  # after every job with a deadline <= 12 (Fig. 1 l. 9)


def test_earliest_fit_restarts_the_window_after_a_busy_segment() -> None:
    times, frees = [0.0, 2.0, 3.0, 8.0], [2, 0, 2, 2]
    assert earliest_fit(times, frees, 0.0, 1.5, 2) == 0.0
    assert earliest_fit(times, frees, 0.0, 3.0, 2) == 3.0
    assert earliest_fit(times, frees, 5.0, 3.0, 2) == 5.0


def test_evaluate_insert_matches_insert_and_changes_nothing() -> None:
    m = MachinePlan("m", MachineSet.span(0, 2))
    for i, (res, work, dl) in enumerate([(2, 5, 6), (3, 4, 9), (1, 7, 30), (2, 2, 12)]):
        m.insert(job(f"j{i}", res, work, dl), m.edf_position(dl))
    before = m.schedule()
    new = job("n", 2, 3.0, 8.0)
    predicted = m.evaluate_insert(new, m.edf_position(8.0))
    assert m.schedule() == before
    m.insert(new, m.edf_position(8.0))
    assert m.late_and_tardiness() == predicted


def test_copies_are_independent() -> None:
    plan = Plan([MachinePlan("a", MachineSet.span(0, 1)), MachinePlan("b", MachineSet.span(2, 3))])
    plan.insert(job("x", 1, 5.0), 0)
    trial = plan.copy()
    trial.insert(job("y", 2, 5.0), 0, 0)
    trial.remove("x")
    assert [j.id for j in plan.machines[0].queue] == ["x"] and "y" not in plan
    assert [j.id for j in trial.machines[0].queue] == ["y"] and "x" not in trial


# ------------------------------------------------------------------ properties
ACTIONS = st.lists(st.tuples(st.sampled_from(["arrive", "arrive", "tick", "end", "capacity",
                                              "withdraw"]),
                             st.integers(1, 6), st.floats(0.5, 30.0), st.floats(0.0, 1.0)),
                   min_size=1, max_size=40)


def _from_scratch(plan: Plan) -> list[list[tuple[str, float, float]]]:
    """The same machines rebuilt from their running jobs and queues."""
    out = []
    for m in plan.machines:
        fresh = MachinePlan(m.name, m.hosts, m.speed, cpus=m.cpus, ordered=m.ordered, now=m.now)
        for job_id, (end, res) in m.running.items():
            fresh.add_running(job_id, end, res)
        for pj in m.queue:
            fresh.insert(pj)
        out.append([(j.id, s, e) for j, s, e in fresh.schedule()])
    return out


@pytest.mark.parametrize("ordered", [True, False])
@settings(max_examples=60, deadline=None)
@given(actions=ACTIONS)
def test_plans_never_exceed_a_machines_cpus(ordered: bool, actions: list) -> None:
    """The CPU count holds and incremental equals from-scratch, whatever happens.

    Random arrivals, due jobs started at their planned start, running jobs ending at or
    before their planned end, planned jobs withdrawn, CPUs going away and back.
    """
    plan = Plan([MachinePlan("a", MachineSet.span(0, 3), 1.0, ordered=ordered),
                 MachinePlan("b", MachineSet.span(4, 9), 0.5, ordered=ordered)])
    now, seq = 0.0, 0
    for kind, res, amount, frac in actions:
        if kind == "arrive":
            target = seq % 2
            if res <= len(plan.machines[target].hosts):
                plan.insert(job(f"j{seq}", res, amount, now + 2 * amount), target,
                            plan.machines[target].edf_position(now + 2 * amount))
            seq += 1
        elif kind == "tick":
            now += amount * frac
            plan.advance(now)
        elif kind == "end":  # a running job ends, possibly earlier than planned
            running = [(e, jid) for m in plan.machines for jid, (e, _) in m.running.items()]
            if running:
                end, jid = min(running)
                now = max(now, now + (end - now) * frac) if end < math.inf else now + amount
                plan.advance(now)
                plan.finish(jid)
        elif kind == "withdraw":  # a planned job leaves (moved elsewhere by a search)
            planned = [j.id for _, j in plan.planned()]
            if planned:
                plan.remove(planned[int(frac * (len(planned) - 1))])
        else:  # a CPU of machine b goes away or comes back
            b = plan.machines[1]
            b.set_capacity(5 if b.cpus == 6 else 6)
        for i, pj in plan.due(now):  # the policy starts what is due
            m = plan.machines[i]
            used = sum(r for _, r in m.running.values())
            if used + pj.res <= m.cpus:
                plan.start(pj.id, now)
        plan.check()
        incremental = [[(j.id, s, e) for j, s, e in m.schedule()] for m in plan.machines]
        assert incremental == _from_scratch(plan)
