"""The paper's OptimizeUtilization: recursive enumeration, bounded by nodes or time.

Grudenic & Bogunovic, MIPRO 2011, §III.B, Fig. 2, l. 15–29: a pre-order depth-first
search over subsets of the eligible jobs in search order; each call compares the
subset under construction with the best one (l. 16–18, strict ``>``, so the first of
equal utilisation wins), then tries to add every later job that still fits on its
feasible machines (l. 20–29). "Time boundness … by adding a time or iteration count
constriction on the top of the procedure": :func:`search_exhaustive` stops after
``max_nodes`` calls or when ``clock()`` passes ``deadline`` and returns the best so far.

Machines are counted, not listed: with one reservation a short job's feasible machines
are all free ones and its least-available mapping (l. 23) takes reserved machines first,
a long job's are the unreserved ones (:mod:`.problem`); the chosen subset is mapped onto
machine ids afterwards, in the same order, by the policy.

Deviations: the recursion is an explicit stack (queues deeper than Python's recursion
limit); Fig. 2 starts at ``jobIndex = 1`` with ``i < |lp|``, which would skip the last
job of a 1-based list (a typo: every job is tried here); ``prune=True`` optionally skips
subtrees that cannot beat the best utilisation found (sum of the remaining sizes, or the
free machines left, too small) and stops once every free machine is used — neither
changes the result of an uncut search, since such subtrees never pass l. 16.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from batpolicy.policies.dpsa.problem import Instance

#: How many search nodes between two readings of the clock (a reading costs ~0.1 µs).
CLOCK_EVERY = 64


@dataclass(frozen=True, slots=True)
class DpsaSearchResult:
    """Best subset found (indices ascending), nodes visited, and whether a bound cut it."""

    chosen: tuple[int, ...]
    nodes: int
    cut: bool


def search_exhaustive(inst: Instance, *, max_nodes: int = 0, deadline: float | None = None,
                      clock: Callable[[], float] | None = None,
                      prune: bool = False) -> DpsaSearchResult:
    """Fig. 2's OptimizeUtilization on ``inst``; ``max_nodes`` 0 and ``deadline`` None: no bound.

    A node is one call of OptimizeUtilization (the root included). Runtime complexity:
    O(nodes) ≤ O(2^n); the clock is read every :data:`CLOCK_EVERY` nodes.

    >>> search_exhaustive(Instance((3, 2, 2), (False,) * 3, free=4, unreserved=0))
    DpsaSearchResult(chosen=(1, 2), nodes=5, cut=False)
    >>> search_exhaustive(Instance((3, 2, 2), (False,) * 3, free=4, unreserved=0), max_nodes=2)
    DpsaSearchResult(chosen=(0,), nodes=2, cut=True)
    """
    sizes, long = inst.sizes, inst.long
    n = len(sizes)
    rem_r, rem_u = inst.reserved, inst.unreserved
    suffix = [0] * (n + 1)
    for i in range(n - 1, -1, -1):
        suffix[i] = suffix[i + 1] + sizes[i]
    timed = deadline is not None and clock is not None
    best: tuple[int, ...] = ()
    best_util = util = 0
    chosen: list[int] = []
    taken_r: list[int] = []  # reserved machines each chosen item took (for undo)
    stack = [0]  # per open call: the next index its loop (l. 20) will try
    nodes = 1
    cut = False
    while stack:
        i = stack[-1]
        while i < n:  # l. 20-22: next job that fits its feasible machines
            w = sizes[i]
            if w <= rem_u if long[i] else w <= rem_r + rem_u:
                break
            i += 1
        if i >= n or (prune and (util + min(suffix[i], rem_r + rem_u) <= best_util
                                 or best_util == inst.free)):
            stack.pop()  # l. 29: this call returns; l. 26: undo its job in the caller
            if chosen:
                j = chosen.pop()
                took = taken_r.pop()
                rem_r += took
                rem_u += sizes[j] - took
                util -= sizes[j]
            continue
        if (max_nodes and nodes >= max_nodes) or (
                timed and nodes % CLOCK_EVERY == 0 and clock() >= deadline):  # type: ignore[misc,operator]
            cut = True  # another call was due: the bound cut the search here
            break
        stack[-1] = i + 1  # l. 28
        w = sizes[i]
        took = 0 if long[i] else min(w, rem_r)  # l. 23: least available machines first
        rem_r -= took
        rem_u -= w - took
        util += w
        chosen.append(i)  # l. 24
        taken_r.append(took)
        stack.append(i + 1)  # l. 25: the recursive call
        nodes += 1
        if util > best_util:  # l. 16-18
            best_util, best = util, tuple(chosen)
    return DpsaSearchResult(best, nodes, cut)

