"""The subset problem DPSA solves at each decision (Fig. 2, l. 9–11, 21–23).

Grudenic & Bogunovic, MIPRO 2011, §III.B: after the head job's reservation is made,
choose among the eligible waiting jobs the subset that uses the most free machines now.
With EASY's single reservation the free machines fall into two availability classes
(§III.B, l. 21): machines the reservation holds from the shadow time ``s`` on are
available for ``s − now``; the others are available forever. A *short* job (walltime
≤ ``s − now``) may use any free machine, a *long* one only the unreserved ones, so a
subset is feasible iff

    sum(size of its long jobs) <= unreserved   and   sum(size of all its jobs) <= free.

Items are listed in the variant's search order (Fig. 2, l. 10 and §III.C); every tie
rule of the family is "lexicographically smallest tuple of item indices" in that order.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import gcd


@dataclass(frozen=True, slots=True)
class Instance:
    """One OptimizeUtilization call: item sizes and kinds in search order, and capacities.

    ``long[i]`` is True when item ``i`` outlives the reserved machines' availability and
    so may only use the ``unreserved`` free machines; ``free`` counts all free machines.
    """

    sizes: tuple[int, ...]
    long: tuple[bool, ...]
    free: int
    unreserved: int

    def __post_init__(self) -> None:
        if len(self.sizes) != len(self.long):
            raise ValueError("sizes and long must have the same length")
        if not 0 <= self.unreserved <= self.free:
            raise ValueError(f"need 0 <= unreserved <= free, got {self.unreserved}, {self.free}")
        if any(w <= 0 for w in self.sizes):
            raise ValueError("item sizes must be positive")

    @property
    def reserved(self) -> int:
        """Free machines held by the reservation (availability ``s − now``)."""
        return self.free - self.unreserved

    def feasible(self, chosen: tuple[int, ...] | list[int] | range) -> bool:
        """True if the items ``chosen`` can all start now (two-class condition).

        Runtime complexity: O(len(chosen)).

        >>> Instance((3, 2, 2), (False, True, True), free=4, unreserved=3).feasible([1, 2])
        False
        """
        total = sum(self.sizes[i] for i in chosen)
        longs = sum(self.sizes[i] for i in chosen if self.long[i])
        return longs <= self.unreserved and total <= self.free

    def utilisation(self, chosen: tuple[int, ...] | list[int]) -> int:
        """Machines the items ``chosen`` use (Fig. 2, ``Utilization``).

        >>> Instance((3, 2, 2), (False,) * 3, free=4, unreserved=0).utilisation((1, 2))
        4
        """
        return sum(self.sizes[i] for i in chosen)


def reduce_items(inst: Instance) -> tuple[Instance, list[int]]:
    """Drop items no optimal tie-broken solution uses; return (reduced instance, old indices).

    Dropped: long items larger than ``unreserved`` and any item larger than ``free``
    (never feasible), and, among items of equal size and kind, all but the first
    ``capacity // size`` in search order (swapping a chosen item for an unchosen earlier
    twin keeps feasibility and utilisation and gives a smaller index tuple, so the chosen
    twins are always a prefix of the group, and no more than ``capacity // size`` fit).
    Runtime complexity: O(n).

    >>> inst = Instance((2, 2, 2, 3, 5), (False, False, False, True, True), free=4, unreserved=3)
    >>> small, back = reduce_items(inst)
    >>> small.sizes, back
    ((2, 2, 3), [0, 1, 3])
    """
    kept: list[int] = []
    used: dict[tuple[int, bool], int] = {}
    for i, (w, is_long) in enumerate(zip(inst.sizes, inst.long, strict=True)):
        cap = inst.unreserved if is_long else inst.free
        key = (w, is_long)
        if w <= cap and used.get(key, 0) < cap // w:
            used[key] = used.get(key, 0) + 1
            kept.append(i)
    reduced = Instance(tuple(inst.sizes[i] for i in kept), tuple(inst.long[i] for i in kept),
                       inst.free, inst.unreserved)
    return reduced, kept


def scaled(inst: Instance) -> Instance:
    """Divide sizes by their gcd and capacities by it (rounding down): same solutions.

    >>> scaled(Instance((4, 6), (False, True), free=13, unreserved=7))
    Instance(sizes=(2, 3), long=(False, True), free=6, unreserved=3)
    """
    g = 0
    for w in inst.sizes:
        g = gcd(g, w)
    if g <= 1:
        return inst
    return Instance(tuple(w // g for w in inst.sizes), inst.long, inst.free // g,
                    inst.unreserved // g)
