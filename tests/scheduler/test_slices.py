"""The time-slice schedule of conservative backfilling (policies.toolkit.plan.slices).

Hand-made first fits (a backfill into a hole that delays no reservation; a hole whose
machines change over time), removals merging slices back, exact rational ties, and,
over random arrivals and early ends (hypothesis): slices stay consecutive with every
machine either free or held by one job, and compression never moves a reservation later
(Mu'alem & Feitelson 2001, §2).
"""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from batpolicy.policies.toolkit.plan import SliceSchedule
from batpolicy.policies.toolkit.plan.slices import HORIZON
from batpolicy.protocol.intervals import MachineSet

F = Fraction


def placed(s: SliceSchedule) -> dict[str, tuple[int, int, str]]:
    return {j: (int(b), int(e), str(m)) for j, (b, e, m) in s.allocations().items()}


def test_backfill_delays_no_reservation() -> None:
    s = SliceSchedule(MachineSet.span(0, 3))
    s.add_first_fit("run", 2, F(10))       # 0-10 on 0-1
    s.add_first_fit("wide", 4, F(5))       # every machine: 10-15
    long = s.add_first_fit("long", 1, F(20))  # 2-3 are free now but only until 10
    short = s.add_first_fit("short", 1, F(7))  # ends at 7 <= 10: backfilled now
    assert (long.begin, str(long.machines), long.starts_now) == (15, "0", False)
    assert (short.begin, str(short.machines), short.starts_now) == (0, "2", True)
    assert placed(s)["wide"] == (10, 15, "0-3")
    s.check()


def test_machines_must_stay_the_same_across_slices() -> None:
    """Enough machines in count at every instant is not enough: the same ones must stay free."""
    s = SliceSchedule(MachineSet.span(0, 3))
    for name in ("p", "a", "c", "d"):           # p 0-1, a 2-3 on 0-4; c 0-1, d 2-3 on 4-8
        s.add_first_fit(name, 2, F(4))
    s.remove("a")
    s.remove("c")                               # free: 2-3 on 0-4, then 0-1 on 4-8
    # two machines are free at every instant of 0-8, but never the same two: a job of 2
    # machines for 6 s cannot start at 0 (a count-based profile would start it there)
    z = s.add_first_fit("z", 2, F(6))
    assert (z.begin, z.end, str(z.machines)) == (4, 10, "0-1")
    s.check()


def test_removal_merges_slices_back() -> None:
    s = SliceSchedule(MachineSet.span(0, 3), F(3))
    for name, res, dur in (("a", 2, 10), ("b", 4, 5), ("c", 1, 2), ("d", 3, 1)):
        s.add_first_fit(name, res, F(dur))
    before = placed(s)
    assert len(list(s)) > 3
    assert s.remove("c") and not s.remove("c")
    assert placed(s) == {k: v for k, v in before.items() if k != "c"}  # the others stay
    for name in ("a", "b", "d"):
        s.remove(name)
    assert [(p.begin, p.end, str(p.free), p.jobs) for p in s] == [(3, HORIZON, "0-3", {})]


def test_ties_are_exact() -> None:
    """A job as long as a hole to the last bit fits in it; one ulp longer does not."""
    s = SliceSchedule(MachineSet.span(0, 1))
    gap = F(0.1) + F(0.2)                   # 0.1 + 0.2 in exact rationals, not 0.30000000000000004
    s.add_first_fit("a", 1, gap)
    s.add_first_fit("wide", 2, F(1))        # at `gap`
    assert s.add_first_fit("fits", 1, gap).starts_now
    s.remove("fits")
    assert not s.add_first_fit("longer", 1, F(0.1 + 0.2)).starts_now


def test_present_moves_within_the_first_slice_only() -> None:
    s = SliceSchedule(MachineSet.span(0, 1))
    s.add_first_fit("a", 2, F(10))
    s.update_first_slice(F(4))
    assert s.now == 4 and placed(s)["a"] == (4, 10, "0-1")
    with pytest.raises(ValueError, match="outside the first slice"):
        s.update_first_slice(F(11))


def test_job_without_walltime_holds_its_machines_to_the_horizon() -> None:
    s = SliceSchedule(MachineSet.span(0, 1))
    s.add_first_fit("a", 1, F(5))
    forever = s.add_first_fit("forever", 2, None)
    assert (forever.begin, forever.end) == (5, HORIZON)
    assert s.add_first_fit("b", 1, F(5)).starts_now  # beside a, before forever
    assert s.add_first_fit("c", 1, F(6)).begin == HORIZON  # nowhere before it


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 6), st.integers(1, 30), st.integers(0, 30)),
                min_size=1, max_size=25))
def test_random_arrivals_and_early_ends(jobs: list[tuple[int, int, int]]) -> None:
    """Jobs arrive one per second; after each arrival the earliest running job ends early.

    Each end compresses as conservative_bf does (every waiting job removed and added
    again, in order); no reservation ever moves later and the slices stay consistent.
    """
    s = SliceSchedule(MachineSet.span(0, 5))
    waiting: list[str] = []
    running: list[str] = []
    planned: dict[str, Fraction] = {}
    for now, (res, walltime, runtime) in enumerate(jobs):
        s.update_first_slice(F(now))
        name = f"j{now}"
        alloc = s.add_first_fit(name, res, F(walltime))
        (running if alloc.starts_now else waiting).append(name)
        planned[name] = alloc.begin
        ends = s.allocations()
        done = [j for j in running if ends[j][0] + min(runtime, walltime) <= now + 1
                or ends[j][1] <= now + 1]
        if not done:
            continue
        for j in done:
            running.remove(j)
            s.remove(j)
        s.update_first_slice(F(now) + F(1, 2))
        for j in list(waiting):
            s.remove(j)
            again = s.add_first_fit(j, _res(jobs, j), F(_wall(jobs, j)))
            assert again.begin <= planned[j], f"{j} moved later"
            planned[j] = again.begin
            if again.starts_now:
                waiting.remove(j)
                running.append(j)
        s.check()
    s.check()


def _res(jobs: list[tuple[int, int, int]], name: str) -> int:
    return jobs[int(name[1:])][0]


def _wall(jobs: list[tuple[int, int, int]], name: str) -> int:
    return jobs[int(name[1:])][1]
