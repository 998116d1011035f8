"""Allocation helpers over interval sets: the rule is *lowest free ids first*.

Batsim reference schedulers (batsched ``basic`` selector) pick the lowest free resource
ids; every batpolicy policy does the same unless its docstring says otherwise.
"""

from __future__ import annotations

from procset import ProcSet


def take_lowest(available: ProcSet, count: int) -> ProcSet:
    """The ``count`` lowest ids of ``available`` (which must hold at least ``count``).

    Runtime complexity: O(i) in the number of intervals visited.

    >>> str(take_lowest(ProcSet((0, 1), (4, 9)), 4))
    '0-1 4-5'
    """
    pieces: list[tuple[int, int]] = []
    need = count
    for itv in available.intervals():
        size = itv.sup - itv.inf + 1
        if size >= need:
            pieces.append((itv.inf, itv.inf + need - 1))
            need = 0
            break
        pieces.append((itv.inf, itv.sup))
        need -= size
    if need:
        raise ValueError(f"asked for {count} resources, only {count - need} available")
    return ProcSet(*pieces)
