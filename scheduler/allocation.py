"""Allocation helpers over interval sets: the rule is *lowest free ids first*.

Batsim reference schedulers (batsched ``basic`` selector) pick the lowest free resource
ids; every batpolicy policy does the same unless its docstring says otherwise.
"""

from __future__ import annotations

from procset import ProcInt, ProcSet

from batpolicy.scheduler.intervalset import make

_tuple_new = tuple.__new__


def take_lowest(available: ProcSet, count: int) -> ProcSet:
    """The ``count`` lowest ids of ``available`` (which must hold at least ``count``).

    Runtime complexity: O(i) in the number of intervals visited; the result is built
    directly (``ProcSet(*pieces)`` merges piece by piece, O(i²)) and shares the untouched
    intervals of ``available`` (they are immutable).

    >>> str(take_lowest(ProcSet((0, 1), (4, 9)), 4))
    '0-1 4-5'
    """
    pieces: list[ProcInt] = []
    need = count
    for itv in available._itvs:  # noqa: SLF001 (procset 1.x representation, see intervalset)
        inf, sup = itv
        size = sup - inf + 1
        if size >= need:
            if need > 0:
                pieces.append(itv if size == need else _tuple_new(ProcInt, (inf, inf + need - 1)))
            need = 0
            break
        pieces.append(itv)
        need -= size
    if need:
        raise ValueError(f"asked for {count} resources, only {count - need} available")
    return make(pieces)
