"""The head's reservation (policies/reservation.py), shared by EASY and DPSA."""

from __future__ import annotations

import random

import pytest
from procset import ProcSet

from batpolicy.policies.reservation import lowest_of_disjoint
from batpolicy.scheduler.allocation import take_lowest


@pytest.mark.parametrize("seed", range(5))
def test_lowest_of_disjoint_equals_lowest_of_the_union(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(400):
        ids = list(range(rng.choice((10, 300))))
        rng.shuffle(ids)
        k = rng.randrange(1, 7)
        parts = [ProcSet(*ids[i::k][:rng.randrange(0, 80)]) for i in range(k)]
        union = ProcSet().union(*parts)
        n = len(union)
        for count in {c for c in (1, n // 2, n) if 0 < c <= n}:
            got = lowest_of_disjoint(parts, count)
            assert got == take_lowest(union, count)
            assert str(got) == str(take_lowest(union, count))  # canonical intervals


def test_lowest_of_disjoint_refuses_too_many() -> None:
    with pytest.raises(ValueError, match="only 3"):
        lowest_of_disjoint([ProcSet(1, 2), ProcSet(5)], 4)
