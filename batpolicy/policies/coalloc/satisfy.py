"""Module A1 "Satisfy": co-allocate without saturating any link beyond the LSLT.

Jones, Pang, Stanzione & Ligon, *Bandwidth-aware co-allocating meta-schedulers for
mini-grid architectures*, IEEE Cluster 2004 / 2005 (seed 003), §5 class "A", eq. 9-11,
Fig. 12, and §6.4 (Table 1: the brute-force solver's O(p^m) nested loops).

- :func:`feasible_ranges` — eq. 9-10: the node counts ``X_i`` job ``j`` may take on
  cluster ``i`` so that eq. 1 stays within ``BW_i^avail`` (the LSLT share of the link
  minus what running jobs need), cut to the cluster's free nodes: ``[0, floor(n1)] U
  [ceil(n2), n_T]``;
- eq. 11, ``X_i in S_i, sum X_i = n_T``, an integer constraint satisfaction problem,
  solved three ways that decide the same feasibility:
  :func:`solve_branch_and_bound` (the paper's first-solution search: nested loops over
  the clusters with pruning), :func:`solve_dp` (exact and faster: dynamic programming
  over clusters on bitsets of reachable sums, returning the very solution the search
  finds first), and :func:`solve_fewest` (the "best mapping for an objective" option:
  fewest clusters spanned).

Deviations: 0 and ``n_T`` nodes on a cluster use no bandwidth (eq. 1 is 0), so they are
always in ``S_i`` when free nodes allow, even when the link is already beyond the LSLT
(``BW_avail < 0``, where eq. 10 read literally would exclude everything); boundaries
from the square root are checked against eq. 1 in exact arithmetic on integers.
The loops take values in a chosen order: ``desc`` (most nodes first, on clusters
listed largest free first: the first solution is first-fit within the ranges) or
``asc`` (0 to p, as the paper's loops are written).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["CoallocSearchResult", "Ranges", "feasible_ranges", "fits_link",
           "solve_branch_and_bound", "solve_dp", "solve_fewest"]

#: A cluster's feasible node counts: disjoint inclusive intervals, ascending.
Ranges = tuple[tuple[int, int], ...]


def fits_link(x: int, n: int, ppbw: float, avail: float | None) -> bool:
    """Whether ``x`` of the ``n`` nodes on one cluster need at most ``avail`` (eq. 1).

    >>> fits_link(3, 6, 100.0, 180.0), fits_link(3, 6, 100.0, 179.0), fits_link(0, 6, 1.0, -5)
    (True, False, True)
    """
    if x <= 0 or x >= n or avail is None or ppbw <= 0:
        return True
    return x * (n - x) * ppbw <= avail * (n - 1)


def feasible_ranges(n: int, free: int, ppbw: float, avail: float | None) -> Ranges:
    """Eq. 9-10: ``S_1^(i,j)``, the node counts job ``j`` may take on cluster ``i``.

    ``n`` is ``n_T^j``, ``free`` is ``n_i^avail``, ``avail`` is ``BW_i^avail`` (None:
    unlimited). Runtime complexity: O(1).

    >>> feasible_ranges(10, 10, 90.0, 160.0)   # x (10 - x) <= 16: x <= 2 or x >= 8
    ((0, 2), (8, 10))
    >>> feasible_ranges(10, 6, 90.0, 160.0), feasible_ranges(10, 6, 90.0, None)
    (((0, 2),), ((0, 6),))
    """
    top = min(n, free)
    if top < 0:
        return ()
    if avail is None or ppbw <= 0 or n <= 1:
        return ((0, top),)
    c = avail * (n - 1) / ppbw
    disc = n * n - 4 * c
    if disc < 0:
        return ((0, top),)  # eq. 9 has no real root: every count fits the link
    root = math.sqrt(disc)
    if not root < n:  # BW_avail <= 0: only 0 and n_T use no bandwidth
        return ((0, 0), (n, n)) if top == n else ((0, 0),)
    n1 = min(max(math.floor((n - root) / 2), 0), n)  # eq. 9, then eq. 10's floor / ceil
    n2 = min(max(math.ceil((n + root) / 2), 0), n)
    while n1 >= 1 and not fits_link(n1, n, ppbw, avail):
        n1 -= 1
    while n1 + 1 < n and fits_link(n1 + 1, n, ppbw, avail):
        n1 += 1
    n1 = max(n1, 0)
    while n2 <= n - 1 and not fits_link(n2, n, ppbw, avail):
        n2 += 1
    while n2 - 1 > 0 and fits_link(n2 - 1, n, ppbw, avail):
        n2 -= 1
    n2 = min(n2, n)
    if n2 <= n1 + 1:
        return ((0, top),)
    low, high = (0, min(n1, top)), (n2, top)
    return (low, high) if high[0] <= high[1] else (low,)


@dataclass(frozen=True, slots=True)
class CoallocSearchResult:
    """A solution of eq. 11 (node counts in the clusters' order) or None; nodes visited."""

    counts: tuple[int, ...] | None
    nodes: int = 0


def _values(ranges: Ranges, order: str) -> list[int]:
    values = [x for lo, hi in ranges for x in range(lo, hi + 1)]
    return values[::-1] if order == "desc" else values


def solve_branch_and_bound(ranges: Sequence[Ranges], n: int, order: str = "desc"
                           ) -> CoallocSearchResult:
    """Eq. 11 by the paper's brute force: nested loops, first solution, with pruning.

    Cluster ``i``'s loop runs over ``S_i`` in ``order``; a branch is cut when the nodes
    left cannot be placed on the remaining clusters (their largest counts). Worst case
    O(p^m) (Table 1).

    >>> solve_branch_and_bound([((0, 2), (8, 9)), ((0, 6),)], 10).counts
    (9, 1)
    >>> solve_branch_and_bound([((0, 2), (8, 9)), ((0, 6),)], 10, "asc").counts
    (8, 2)
    >>> solve_branch_and_bound([((0, 2),), ((0, 6),)], 10).counts is None
    True
    """
    m = len(ranges)
    most = [0] * (m + 1)
    for i in range(m - 1, -1, -1):
        most[i] = most[i + 1] + (ranges[i][-1][1] if ranges[i] else 0)
    values = [_values(r, order) for r in ranges]
    chosen = [0] * m
    nodes = 0

    def search(i: int, rest: int) -> bool:
        """Loop of cluster ``i``: place ``rest`` nodes on clusters ``i..m-1``."""
        nonlocal nodes
        nodes += 1
        if i == m:
            return rest == 0
        if rest > most[i]:
            return False  # bound: the remaining clusters cannot take ``rest``
        for x in values[i]:
            if x > rest:
                continue
            chosen[i] = x
            if search(i + 1, rest - x):
                return True
        return False

    found = search(0, n)
    return CoallocSearchResult(tuple(chosen) if found else None, nodes)


def _reachable(ranges: Sequence[Ranges], n: int) -> list[int]:
    """``suffix[i]``: bitset of the sums clusters ``i..m-1`` can make (up to ``n``)."""
    mask = (1 << (n + 1)) - 1
    suffix = [0] * (len(ranges) + 1)
    suffix[-1] = 1
    for i in range(len(ranges) - 1, -1, -1):
        after = suffix[i + 1]
        bits = 0
        for lo, hi in ranges[i]:
            for x in range(lo, min(hi, n) + 1):
                bits |= after << x
        suffix[i] = bits & mask
    return suffix


def solve_dp(ranges: Sequence[Ranges], n: int, order: str = "desc") -> CoallocSearchResult:
    """Eq. 11 exactly by dynamic programming: the same solution as the search, faster.

    Suffix bitsets of reachable sums decide feasibility in O(m p^2 / w) word operations;
    the solution is rebuilt cluster by cluster taking, in ``order``, the first count
    whose rest the remaining clusters can make: exactly the first solution of
    :func:`solve_branch_and_bound`.

    >>> solve_dp([((0, 2), (8, 9)), ((0, 6),)], 10).counts
    (9, 1)
    """
    suffix = _reachable(ranges, n)
    if not (suffix[0] >> n) & 1:
        return CoallocSearchResult(None, len(ranges))
    counts, rest = [], n
    for i, r in enumerate(ranges):
        after = suffix[i + 1]
        for x in _values(r, order):
            if x <= rest and (after >> (rest - x)) & 1:
                counts.append(x)
                rest -= x
                break
    return CoallocSearchResult(tuple(counts), len(ranges))


def solve_fewest(ranges: Sequence[Ranges], n: int, order: str = "desc") -> CoallocSearchResult:
    """Eq. 11 with an objective: the fewest clusters spanned (then the first in ``order``).

    Runtime complexity: O(m p^2) for m clusters and p nodes.

    >>> solve_fewest([((0, 5),), ((0, 5),), ((0, 10),)], 10).counts
    (0, 0, 10)
    >>> solve_dp([((0, 5),), ((0, 5),), ((0, 10),)], 10).counts
    (5, 5, 0)
    """
    m = len(ranges)
    inf = m + 1
    best = [[inf] * (n + 1) for _ in range(m + 1)]  # best[i][s]: fewest clusters i.. for s
    best[m][0] = 0
    for i in range(m - 1, -1, -1):
        row, after = best[i], best[i + 1]
        for lo, hi in ranges[i]:
            for x in range(lo, min(hi, n) + 1):
                cost = 1 if x else 0
                for s in range(x, n + 1):
                    value = after[s - x] + cost
                    if value < row[s]:
                        row[s] = value
    if best[0][n] >= inf:
        return CoallocSearchResult(None, m)
    counts, rest = [], n
    for i, r in enumerate(ranges):
        target = best[i][rest]
        for x in _values(r, order):
            if x <= rest and best[i + 1][rest - x] + (1 if x else 0) == target:
                counts.append(x)
                rest -= x
                break
    return CoallocSearchResult(tuple(counts), m)
