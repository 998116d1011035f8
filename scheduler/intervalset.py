"""Fast set algebra on :class:`procset.ProcSet` for the hot paths of a simulation.

``procset`` 1.0 implements every operator with one generic generator merge (two
``_flatten`` generators, a predicate call and a :class:`~procset.ProcInt` validation per
bound) and builds ``ProcSet(*pieces)`` by merging the pieces one at a time, which is
quadratic in the number of pieces. On a fragmented 8,192-machine cluster that was
nine tenths of the simulation time. The functions here give the same sets (same
canonical interval lists, so ``==`` and ``str()`` agree with the ``procset`` operators)
at a fraction of the cost:

- the usual case, a small set (an allocation: one to a few intervals) cut out of or
  added to a large one (the free machines), costs O(log n) bisections plus one C-level
  list copy, instead of a Python-level walk over every interval;
- sizes are summed at C speed;
- subset and disjointness tests stop at the first answer and build no set;
- the union of many sets is one sort and one coalescing pass.

They read and build ``ProcSet._itvs`` (a sorted list of disjoint, non-adjacent
``ProcInt``), the representation of ``procset`` 1.x; inputs are never modified, and
unchanged ``ProcInt`` objects are shared between results (they are immutable tuples).
``tests/scheduler/test_intervalset.py`` checks every function against the ``procset``
operators on seeded random sets.

>>> a, b = ProcSet((0, 9), (20, 29)), ProcSet((3, 4), (25, 40))
>>> str(difference(a, b)), str(union(a, b)), str(intersection(a, b)), size(a)
('0-2 5-9 20-24', '0-9 20-40', '3-4 25-29', 20)
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from operator import itemgetter

from procset import ProcInt, ProcSet

__all__ = ["difference", "disjoint", "intersection", "is_subset", "lowest_of_union", "make",
           "size", "union", "union_all"]

_inf = itemgetter(0)
_sup = itemgetter(1)
_tuple_new = tuple.__new__
_new_set = ProcSet.__new__
#: Below this many intervals in the right operand, cut or insert them one by one
#: (bisection + list copy); above it, one linear merge.
_FEW = 8


def _itv(inf: int, sup: int) -> ProcInt:
    """A ProcInt without argument checks (callers guarantee 0 <= inf <= sup)."""
    return _tuple_new(ProcInt, (inf, sup))


def make(itvs: list[ProcInt]) -> ProcSet:
    """Wrap a canonical interval list (sorted, disjoint, non-adjacent) as a ProcSet, unchecked.

    Runtime complexity: O(1).

    >>> str(make([ProcInt(0, 1), ProcInt(5, 5)]))
    '0-1 5'
    """
    result = _new_set(ProcSet)
    result._itvs = itvs
    return result


def size(machines: ProcSet) -> int:
    """Number of machines in the set. Runtime complexity: O(intervals), at C speed.

    >>> size(ProcSet((0, 3), 7))
    5
    """
    itvs = machines._itvs
    n = len(itvs)
    if n == 1:  # the common allocation: one interval, no map/sum machinery
        inf, sup = itvs[0]
        return sup - inf + 1
    return sum(map(_sup, itvs)) - sum(map(_inf, itvs)) + n


def _cut(itvs: list, lo: int, hi: int) -> list:
    """``itvs`` without [lo, hi] (a new list, or ``itvs`` itself if they do not meet)."""
    i = bisect_left(itvs, lo, key=_sup)  # first interval ending at or after lo
    j = bisect_right(itvs, hi, key=_inf, lo=i)  # first interval starting after hi
    if i >= j:
        return itvs
    middle = []
    first, last = itvs[i], itvs[j - 1]
    if first[0] < lo:
        middle.append(_itv(first[0], lo - 1))
    if last[1] > hi:
        middle.append(_itv(hi + 1, last[1]))
    return itvs[:i] + middle + itvs[j:]


def _insert(itvs: list, lo: int, hi: int) -> list:
    """``itvs`` with [lo, hi] added and coalesced with the intervals it meets or touches."""
    i = bisect_left(itvs, lo - 1, key=_sup)  # first interval ending at or after lo - 1
    j = bisect_right(itvs, hi + 1, key=_inf, lo=i)  # first starting after hi + 1
    if i < j:
        first, last = itvs[i][0], itvs[j - 1][1]
        if first < lo:
            lo = first
        if last > hi:
            hi = last
    return itvs[:i] + [_itv(lo, hi)] + itvs[j:]


def difference(left: ProcSet, right: ProcSet) -> ProcSet:
    """``left - right`` as a new ProcSet.

    Runtime complexity: O(k log n + n) C-level work for k = intervals of ``right`` <= 8,
    else one O(n + k) merge.

    >>> str(difference(ProcSet((0, 9)), ProcSet(3, (5, 6))))
    '0-2 4 7-9'
    """
    itvs, cut = left._itvs, right._itvs
    if not itvs or not cut or cut[0][0] > itvs[-1][1] or cut[-1][1] < itvs[0][0]:
        return make(itvs[:])
    if len(cut) <= _FEW:
        out = itvs
        for lo, hi in cut:
            out = _cut(out, lo, hi)
        return make(out if out is not itvs else itvs[:])
    out = []
    append = out.append
    j, n = 0, len(cut)
    for itv in itvs:
        lo, hi = itv
        while j < n and cut[j][1] < lo:
            j += 1
        k = j
        whole = True
        while k < n:
            clo, chi = cut[k]
            if clo > hi:
                break
            whole = False
            if clo > lo:
                append(_itv(lo, clo - 1))
            if chi >= hi:
                lo = hi + 1
                break
            lo = chi + 1
            k += 1
        if whole:
            append(itv)
        elif lo <= hi:
            append(_itv(lo, hi))
        j = k
    return make(out)


def _coalesce(itvs: Iterable[tuple[int, int]]) -> list:
    """Canonical list of the union of intervals given sorted by lower bound."""
    out: list = []
    cur_lo = cur_hi = -2
    cur = None
    for itv in itvs:
        lo, hi = itv
        if lo <= cur_hi + 1:
            if hi > cur_hi:
                cur_hi = hi
                cur = None
            continue
        if cur_hi >= 0:
            out.append(cur if cur is not None else _itv(cur_lo, cur_hi))
        cur_lo, cur_hi, cur = lo, hi, itv
    if cur_hi >= 0:
        out.append(cur if cur is not None else _itv(cur_lo, cur_hi))
    return out


def union(left: ProcSet, right: ProcSet) -> ProcSet:
    """``left | right`` as a new ProcSet.

    Runtime complexity: O(k log n + n) C-level work for k = intervals of the smaller
    operand <= 8, else O((n + k) log) for one sort and a coalescing pass.

    >>> str(union(ProcSet((0, 2), (6, 7)), ProcSet((3, 4))))
    '0-4 6-7'
    """
    itvs, add = left._itvs, right._itvs
    if len(add) > len(itvs):
        itvs, add = add, itvs
    if not add:
        return make(itvs[:])
    if len(add) <= _FEW:
        out = itvs
        for lo, hi in add:
            out = _insert(out, lo, hi)
        return make(out)
    return make(_coalesce(sorted(itvs + add)))


def union_all(sets: Iterable[ProcSet]) -> ProcSet:
    """The union of all ``sets``: one sort of their intervals, one coalescing pass.

    Runtime complexity: O(N log N) in the total number of intervals N.

    >>> str(union_all([ProcSet(5), ProcSet((0, 3)), ProcSet(4, 9)]))
    '0-5 9'
    """
    itvs: list = []
    for machines in sets:
        itvs += machines._itvs
    itvs.sort()
    return make(_coalesce(itvs))


def lowest_of_union(sets: Iterable[ProcSet], count: int) -> ProcSet:
    """The ``count`` lowest ids of the union of ``sets``: ``take_lowest(union_all(sets))``.

    One sort of all the intervals, then a walk that stops once ``count`` ids are taken
    (the union above them is never built). Raises ``ValueError`` if the union holds
    fewer than ``count`` ids.
    Runtime complexity: O(N log N) C-level sort of the N intervals, O(p) Python steps for
    the ``p`` intervals below the last id taken.

    >>> str(lowest_of_union([ProcSet((4, 9)), ProcSet(0, 2), ProcSet((2, 3))], 5))
    '0 2-5'
    """
    itvs: list = []
    for machines in sets:
        itvs += machines._itvs
    itvs.sort()
    out: list = []
    need = count
    cur_lo = cur_hi = -2  # the interval being built, not yet in out
    cur = None  # the input interval it is, if unchanged (shared, not rebuilt)
    for itv in itvs:
        if need <= 0:
            break
        lo, hi = itv
        if hi <= cur_hi:
            continue
        whole = True
        if lo <= cur_hi:
            lo = cur_hi + 1  # overlapping sets: only the new ids
            whole = False
        take = hi - lo + 1
        if take > need:
            take = need
            hi = lo + need - 1
            whole = False
        need -= take
        if lo == cur_hi + 1:
            cur_hi = hi
            cur = None
        else:
            if cur_hi >= 0:
                out.append(cur if cur is not None else _itv(cur_lo, cur_hi))
            cur_lo, cur_hi = lo, hi
            cur = itv if whole else None
    if need > 0:
        raise ValueError(f"asked for {count} resources, only {count - need} available")
    if cur_hi >= 0:
        out.append(cur if cur is not None else _itv(cur_lo, cur_hi))
    return make(out)


def _clip(itvs: list, lo: int, hi: int) -> list:
    """The parts of ``itvs`` inside [lo, hi] (a new list). Runtime: O(log n + k)."""
    i = bisect_left(itvs, lo, key=_sup)  # first interval ending at or after lo
    j = bisect_right(itvs, hi, key=_inf, lo=i)  # first interval starting after hi
    if i >= j:
        return []
    out = itvs[i:j]
    first = out[0]
    if first[0] < lo:
        out[0] = _itv(lo, first[1])
    last = out[-1]
    if last[1] > hi:
        out[-1] = _itv(last[0], hi)
    return out


def intersection(left: ProcSet, right: ProcSet) -> ProcSet:
    """``left & right`` as a new ProcSet.

    Runtime complexity: O(log n + k) when one operand is one interval (a machine group
    against the free machines: the group-aware allocators do that once per group),
    else O(n + k); empty: O(1).

    >>> str(intersection(ProcSet((0, 9)), ProcSet((5, 12), 20)))
    '5-9'
    """
    a, b = left._itvs, right._itvs
    if not a or not b or a[0][0] > b[-1][1] or b[0][0] > a[-1][1]:
        return make([])
    if len(b) == 1:
        return make(_clip(a, b[0][0], b[0][1]))
    if len(a) == 1:
        return make(_clip(b, a[0][0], a[0][1]))
    out = []
    i = j = 0
    na, nb = len(a), len(b)
    while i < na and j < nb:
        alo, ahi = a[i]
        blo, bhi = b[j]
        lo = alo if alo > blo else blo
        if ahi < bhi:
            if lo <= ahi:
                out.append(a[i] if lo == alo else _itv(lo, ahi))
            i += 1
        else:
            if lo <= bhi:
                out.append(b[j] if lo == blo else _itv(lo, bhi))
            j += 1
    return make(out)


def is_subset(part: ProcSet, whole: ProcSet) -> bool:
    """Whether every machine of ``part`` is in ``whole``.

    Runtime complexity: O(k log n) for k intervals of ``part``, n of ``whole``.

    >>> is_subset(ProcSet(2, 5), ProcSet((0, 5))), is_subset(ProcSet(2, 6), ProcSet((0, 5)))
    (True, False)
    """
    itvs = whole._itvs
    n = len(itvs)
    i = 0
    for lo, hi in part._itvs:
        i = bisect_left(itvs, lo, lo=i, key=_sup)  # the interval that must hold lo
        if i == n:
            return False
        inf, sup = itvs[i]
        if inf > lo or sup < hi:
            return False
    return True


def disjoint(left: ProcSet, right: ProcSet) -> bool:
    """Whether the sets share no machine.

    Runtime complexity: O(k log n) for k intervals of the smaller set.

    >>> disjoint(ProcSet((0, 3)), ProcSet((4, 9))), disjoint(ProcSet(3), ProcSet((0, 9)))
    (True, False)
    """
    a, b = left._itvs, right._itvs
    if len(a) > len(b):
        a, b = b, a
    if not a or a[0][0] > b[-1][1] or b[0][0] > a[-1][1]:
        return True
    i = 0
    n = len(b)
    for lo, hi in a:
        i = bisect_left(b, lo, lo=i, key=_sup)  # first interval of b ending at or after lo
        if i == n:
            return True
        if b[i][0] <= hi:
            return False
    return True
