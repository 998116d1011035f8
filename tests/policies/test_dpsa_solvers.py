"""DPSA's OptimizeUtilization solvers against brute force (Grudenic & Bogunovic 2011).

The reference here is written from the paper's text, not from the solvers: enumerate
every subset, keep the feasible ones (Fig. 2, l. 21-22: long jobs on unreserved
machines only), rank by utilisation (l. 16), then by the variant's rule (§III.C) stated
on jobs: compare the solutions' jobs one by one in the variant's order.
"""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from batpolicy.policies.dpsa.exact import solve_exact
from batpolicy.policies.dpsa.policy import priority_order, small_first, wide_first
from batpolicy.policies.dpsa.problem import Instance, reduce_items, scaled
from batpolicy.policies.dpsa.search import CLOCK_EVERY, search_exhaustive
from batpolicy.scheduler.clock import MockClock
from batpolicy.scheduler.jobs import Job

ORDERS = {"dpsa-p": priority_order, "dpsa-n": small_first, "dpsa-w": wide_first}


def brute_force(jobs: list[Job], long: dict[str, bool], free: int, unreserved: int,
                variant: str) -> set[str]:
    """Best subset by enumeration: max utilisation, then the variant's job-by-job comparison."""
    key = ORDERS[variant]
    best: tuple[int, list[tuple[int, ...]]] | None = None
    chosen: set[str] = set()
    for r in range(len(jobs) + 1):
        for subset in itertools.combinations(jobs, r):
            total = sum(j.res for j in subset)
            longs = sum(j.res for j in subset if long[j.id])
            if longs > unreserved or total > free:
                continue
            rank = (-total, sorted(key(j) for j in subset))
            if best is None or rank < best:
                best, chosen = rank, {j.id for j in subset}
    return chosen


def as_instance(jobs: list[Job], long: dict[str, bool], free: int, unreserved: int,
                variant: str) -> tuple[Instance, list[Job]]:
    """The policy's view: jobs in the variant's search order (Fig. 2, l. 10)."""
    ordered = sorted(jobs, key=ORDERS[variant])
    return Instance(tuple(j.res for j in ordered), tuple(long[j.id] for j in ordered), free,
                    unreserved), ordered


@st.composite
def problems(draw: st.DrawFn) -> tuple[list[Job], dict[str, bool], int, int]:
    n = draw(st.integers(0, 9))
    free = draw(st.integers(0, 24))
    unreserved = draw(st.integers(0, free))
    sizes = draw(st.lists(st.integers(1, 9), min_size=n, max_size=n))
    longs = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    jobs = [Job(f"w0!{i}", 0.0, w, 1.0, "p", seq=i) for i, w in enumerate(sizes)]
    return jobs, {j.id: b for j, b in zip(jobs, longs, strict=True)}, free, unreserved


@pytest.mark.parametrize("variant", ["dpsa-p", "dpsa-n", "dpsa-w"])
@settings(max_examples=400, deadline=None)
@given(problem=problems())
def test_exact_equals_brute_force(variant: str, problem: tuple) -> None:
    jobs, long, free, unreserved = problem
    inst, ordered = as_instance(jobs, long, free, unreserved, variant)
    got = {ordered[i].id for i in solve_exact(inst)}
    assert got == brute_force(jobs, long, free, unreserved, variant)


@pytest.mark.parametrize("variant", ["dpsa-p", "dpsa-n", "dpsa-w"])
@settings(max_examples=150, deadline=None)
@given(problem=problems())
def test_exhaustive_equals_exact_when_not_cut(variant: str, problem: tuple) -> None:
    jobs, long, free, unreserved = problem
    inst, _ = as_instance(jobs, long, free, unreserved, variant)
    for prune in (False, True):
        result = search_exhaustive(inst, prune=prune)
        assert not result.cut
        assert result.chosen == solve_exact(inst)


def test_exact_on_many_equal_sizes_and_large_capacities() -> None:
    # Random medium instances, checked against the uncut, pruned paper search
    rng = random.Random(7)
    for _ in range(200):
        n = rng.randint(10, 18)
        free = rng.randint(10, 200)
        inst = Instance(tuple(rng.choice((1, 2, 4, 8, 16, 32, 3, 24)) for _ in range(n)),
                        tuple(rng.random() < 0.4 for _ in range(n)), free,
                        rng.randint(0, free))
        assert search_exhaustive(inst, prune=True).chosen == solve_exact(inst)


def test_exact_scales_to_large_platforms() -> None:
    rng = random.Random(3)
    sizes = tuple(rng.randint(1, 5000) for _ in range(300))
    inst = Instance(sizes, tuple(rng.random() < 0.5 for _ in sizes), 100_000, 40_000)
    chosen = solve_exact(inst)
    assert inst.feasible(chosen)
    assert inst.utilisation(chosen) == 100_000  # so many items: the free machines are filled


def test_fig1_instance() -> None:
    # Fig. 1 at t=2: 4 free machines all reserved for J1 until 7; J2 (3), J3 (2), J4 (2)
    inst = Instance((3, 2, 2), (False, False, False), free=4, unreserved=0)
    assert solve_exact(inst) == (1, 2)
    assert search_exhaustive(inst).chosen == (1, 2)


def test_node_bound_keeps_best_so_far() -> None:
    inst = Instance((3, 2, 2), (False,) * 3, free=4, unreserved=0)
    assert search_exhaustive(inst, max_nodes=2).chosen == (0,)  # root, then {J2}: cut
    assert search_exhaustive(inst, max_nodes=2).cut
    full = search_exhaustive(inst)
    assert not search_exhaustive(inst, max_nodes=full.nodes).cut  # exactly enough nodes


def test_time_bound_with_a_mock_clock() -> None:
    inst = Instance(tuple([1] * 20), (False,) * 20, free=10, unreserved=10)
    clock = MockClock(step=1.0)  # reads 0.0, 1.0, ...: the second reading passes the deadline
    result = search_exhaustive(inst, deadline=0.5, clock=clock)
    assert result.cut and result.nodes == 2 * CLOCK_EVERY and len(result.chosen) == 10
    # no clock, no time bound: the deadline alone does nothing
    assert not search_exhaustive(Instance((1, 2), (False, False), 3, 3), deadline=0.0).cut


def test_pruning_visits_fewer_nodes() -> None:
    inst = Instance(tuple(range(1, 15)), (False,) * 14, free=30, unreserved=30)
    plain, pruned = search_exhaustive(inst), search_exhaustive(inst, prune=True)
    assert plain.chosen == pruned.chosen == solve_exact(inst)
    assert pruned.nodes < plain.nodes


def test_reduce_and_scale_keep_the_problem() -> None:
    inst = Instance((4, 4, 4, 8, 6), (False, False, False, True, True), free=9, unreserved=7)
    small, back = reduce_items(inst)
    assert back == [0, 1, 4] and small.sizes == (4, 4, 6)  # third 4 and the long 8 can't be used
    assert scaled(small) == Instance((2, 2, 3), (False, False, True), 4, 3)
    assert solve_exact(inst) == (0, 1)  # 4 + 4 = 8 beats 6 and 8 (longs: at most 7)


def test_instance_rejects_bad_capacities() -> None:
    with pytest.raises(ValueError):
        Instance((1,), (False,), free=1, unreserved=2)
    with pytest.raises(ValueError):
        Instance((0,), (False,), free=1, unreserved=1)
    with pytest.raises(ValueError):
        Instance((1,), (), free=1, unreserved=1)


def mapped_on_machines(sizes: list[int], long: list[bool], reserved: int,
                       unreserved: int) -> bool:
    """Fig. 2, l. 21-25 on machine lists, job after job; True if every job was mapped.

    Each job takes its feasible machines of least availability (reserved ones:
    availability shadow - now = 1; the others: unlimited).
    """
    machines = [1.0] * reserved + [float("inf")] * unreserved
    for w, is_long in zip(sizes, long, strict=True):
        need = 2.0 if is_long else 1.0  # a long job outlives the reserved machines
        feasible = sorted(a for a in machines if a >= need)  # l. 21
        if w > len(feasible):  # l. 22
            return False
        for a in feasible[:w]:  # l. 23: least availability first
            machines.remove(a)
    return True


@settings(max_examples=300, deadline=None)
@given(problem=problems(), seed=st.integers(0, 2**16))
def test_two_class_lemma_on_machine_lists(problem: tuple, seed: int) -> None:
    # the lemma the solvers rest on: a set of jobs can be mapped by l. 21-25, in any
    # order, iff sum(long sizes) <= unreserved and sum(all sizes) <= free
    jobs, long, free, unreserved = problem
    rng = random.Random(seed)
    for _ in range(8):
        subset = [j for j in jobs if rng.random() < 0.5]
        rng.shuffle(subset)
        sizes, kinds = [j.res for j in subset], [long[j.id] for j in subset]
        inst = Instance(tuple(sizes), tuple(kinds), free, unreserved)
        assert mapped_on_machines(sizes, kinds, free - unreserved, unreserved) == \
            inst.feasible(range(len(sizes)))
