"""``scheduler.intervalset`` gives exactly the sets the ``procset`` operators give.

Seeded random sets of every shape the simulator meets: empty, one interval, many short
fragments, touching and overlapping bounds; small right operands (the bisection path)
and large ones (the merge path).
"""

from __future__ import annotations

import random

import pytest
from procset import ProcInt, ProcSet

from batpolicy.scheduler import intervalset as iv


def _random_set(rng: random.Random, n: int, pieces: int) -> ProcSet:
    ids = []
    for _ in range(pieces):
        lo = rng.randrange(n)
        ids.append((lo, min(n - 1, lo + rng.choice((0, 0, 1, 2, 5, 30)))))
    return ProcSet(*ids)


def _cases(seed: int, count: int = 400):
    rng = random.Random(seed)
    for _ in range(count):
        n = rng.choice((1, 4, 16, 100, 8192))
        yield (_random_set(rng, n, rng.choice((0, 1, 2, 3, 8, 9, 40))),
               _random_set(rng, n, rng.choice((0, 1, 2, 3, 8, 9, 40))))


def _canonical(ps: ProcSet) -> None:
    itvs = ps._itvs
    assert all(type(i) is ProcInt and 0 <= i[0] <= i[1] for i in itvs)
    assert all(a[1] + 1 < b[0] for a, b in zip(itvs, itvs[1:], strict=False))


@pytest.mark.parametrize("seed", range(5))
def test_operations_match_procset(seed: int) -> None:
    for a, b in _cases(seed):
        before_a, before_b = ProcSet(a), ProcSet(b)
        for ours, theirs in ((iv.difference(a, b), a - b), (iv.union(a, b), a | b),
                             (iv.intersection(a, b), a & b),
                             (iv.union_all([a, b, a]), a | b)):
            assert ours == theirs and str(ours) == str(theirs), (str(a), str(b))
            _canonical(ours)
        assert iv.size(a) == len(a)
        assert iv.is_subset(a, b) == (a <= b)
        assert iv.disjoint(a, b) == a.isdisjoint(b)
        assert a == before_a and b == before_b  # inputs untouched


def test_results_are_independent_of_inputs() -> None:
    a = ProcSet((0, 9))
    d = iv.difference(a, ProcSet(50))
    d |= ProcSet(20)
    u = iv.union(a, ProcSet())
    u -= ProcSet(3)
    assert a == ProcSet((0, 9))
    assert iv.union_all([]) == ProcSet()


@pytest.mark.parametrize("seed", range(3))
def test_lowest_of_union_is_take_lowest_of_the_union(seed: int) -> None:
    from batpolicy.scheduler.allocation import take_lowest

    rng = random.Random(seed)
    for _ in range(300):
        sets = [_random_set(rng, rng.choice((16, 100, 8192)), rng.choice((0, 1, 3, 20)))
                for _ in range(rng.randrange(1, 6))]
        union = iv.union_all(sets)
        total = len(union)
        for count in {1, total // 3, total // 2, total} - {0} if total else ():
            ours = iv.lowest_of_union(sets, count)
            assert ours == take_lowest(union, count)
            _canonical(ours)
        with pytest.raises(ValueError):
            iv.lowest_of_union(sets, total + 1)
