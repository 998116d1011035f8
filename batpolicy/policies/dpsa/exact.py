"""Exact OptimizeUtilization: the best subset by dynamic programming over machine counts.

Grudenic & Bogunovic, MIPRO 2011, §III.B–C. Fig. 2's recursive search enumerates
subsets (exponential); here the same answer — most machines used, ties broken by the
variant's rule — comes from a pseudo-polynomial subset-sum, because a single EASY
reservation leaves only two availability classes (:mod:`.problem`).

Algorithm (``n`` items in search order, ``F`` free machines, ``U`` unreserved ones):

1. Suffix reachability, bit-parallel on Python ints: ``SL[i]`` holds the sums ``≤ U`` of
   long items ``i..n−1`` (bit ``v`` set ⇔ sum ``v`` reachable); ``SS[i]`` the sums of the
   short items ``i..n−1``, stored *mirrored* (bit ``F − v``) so that adding an item, and
   later every test on the short part, is a right shift (cost ∝ the result's width).
   Once a class's set holds every value up to its capacity, earlier items cannot change
   it and are skipped.
2. Optimum: ``OPT`` is the largest ``t ≤ F`` with some long sum ``L`` and short sum
   ``t − L``: the few largest ``t`` are probed directly (usually the free machines can all
   be used), else ``B`` = long sums extended by every short item, capped at ``F``, and
   ``OPT = B.bit_length() − 1``. Longs alone never exceed ``U``, all never ``F``.
3. Tie rule: walk the items in search order keeping ``rest`` (utilisation still to
   choose) and ``cand``, the set of long sums ``l`` still to choose such that ``l`` is in
   ``SL[i]`` and ``rest − l`` in ``SS[i]``; take item ``i`` whenever some ``l`` survives
   taking it. Greedy inclusion of the earliest possible item yields the
   lexicographically smallest index tuple among the optimal subsets — the first one
   Fig. 2's pre-order search would find.

Proof sketch: a subset is feasible iff its long sum ``L ≤ U`` and total ``L + S ≤ F``
(two-class lemma, :mod:`.problem`); long and short items are disjoint, so the reachable
(L, S) pairs are the product of the two sum sets, and step 2 finds the best total. In
step 3, ``cand ≠ ∅`` is the invariant "some optimal completion of the choices so far
exists"; taking an item when possible and skipping it otherwise is the standard greedy
for the lexicographically smallest solution: any optimal solution skipping an item the
greedy takes compares larger at that position.

Runtime complexity: O(n · F / 30) digit operations (CPython ints hold 30 bits per
digit) and O(n · F / 8) bytes for the suffix sets, after
:func:`.problem.reduce_items` (equal items beyond ``capacity // size`` dropped) and gcd
scaling. Shortcuts: no item, or all items fit together (then they are the unique
optimum). Measured (``bench/papers/dpsa_decision_time.py``): about 1 ms for 1,000 items on
100,000 free machines with trace-like sizes.
"""

from __future__ import annotations

from batpolicy.policies.dpsa.problem import Instance, reduce_items, scaled


def solve_exact(inst: Instance) -> tuple[int, ...]:
    """Indices (ascending) of the optimal subset under the lexicographic tie rule.

    Runtime complexity: O(n · F / w) (see the module docstring).

    >>> solve_exact(Instance((3, 2, 2), (False, False, False), free=4, unreserved=0))
    (1, 2)
    >>> solve_exact(Instance((3, 2, 2), (False, True, True), free=4, unreserved=3))
    (0,)
    >>> solve_exact(Instance((1, 2, 1, 2), (False,) * 4, free=3, unreserved=3))
    (0, 1)
    """
    if not inst.sizes:
        return ()
    reduced, back = reduce_items(inst)
    if not reduced.sizes:
        return ()
    sizes, long = reduced.sizes, reduced.long
    long_total = sum(w for w, is_long in zip(sizes, long, strict=True) if is_long)
    if long_total <= reduced.unreserved and sum(sizes) <= reduced.free:
        return tuple(back)  # everything fits: the unique optimum
    chosen = _walk(scaled(reduced))
    return tuple(back[i] for i in chosen)


def _walk(inst: Instance) -> list[int]:
    sizes, long, cap_t, cap_l = inst.sizes, inst.long, inst.free, inst.unreserved
    n = len(sizes)
    mask_l = (1 << (cap_l + 1)) - 1
    mask_t = (1 << (cap_t + 1)) - 1
    # 1. suffix sets: SL[i] long sums of items i.., SM[i] mirrored short sums of items i..
    suffix_l: list[int] = [0] * (n + 1)
    suffix_m: list[int] = [0] * (n + 1)
    sl, sm = 1, 1 << cap_t
    suffix_l[n], suffix_m[n] = sl, sm
    full_l = full_s = False  # once every sum up to the capacity is reachable, stop adding
    for i in range(n - 1, -1, -1):
        w = sizes[i]
        if long[i]:
            if not full_l:
                sl = (sl | (sl << w)) & mask_l
                full_l = sl == mask_l
        elif not full_s:
            sm |= sm >> w
            full_s = sm == mask_t
        suffix_l[i], suffix_m[i] = sl, sm
    # 2. the optimum: probe the largest totals first (usually the free machines are all
    # used), else long sums (capped at U) extended by the short items (capped at F)
    opt = _probe(suffix_l[0], suffix_m[0], cap_t, sum(sizes))
    if opt < 0:
        reach = suffix_l[0]
        for w, is_long in zip(sizes, long, strict=True):
            if not is_long:
                reach = (reach | (reach << w)) & mask_t
        opt = reach.bit_length() - 1
    # 3. greedy walk over ``cand``: the long sums l still to take (l in SL[i]) such that
    # the short items can make up the rest of the remaining total (rest - l in SS[i])
    rest = opt
    cand = suffix_l[0] & (suffix_m[0] >> (cap_t - rest))
    chosen: list[int] = []
    for i in range(n):
        if not rest:
            break
        w = sizes[i]
        if long[i]:
            nxt = suffix_l[i + 1]
            taken = (cand >> w) & nxt
            if taken:
                cand, rest = taken, rest - w
                chosen.append(i)
            else:
                cand &= nxt
        else:
            nxt = suffix_m[i + 1]
            taken = cand & (nxt >> (cap_t - rest + w))
            if taken:
                cand, rest = taken, rest - w
                chosen.append(i)
            else:
                cand &= nxt >> (cap_t - rest)
    return chosen


#: How many totals :func:`_probe` tries before the optimum is computed by a full DP.
PROBES = 8


def _probe(longs: int, mirrored_shorts: int, cap_t: int, total: int) -> int:
    """The best total among the :data:`PROBES` largest candidates, or -1 if none is reachable.

    Total ``t`` is reachable iff some long sum ``L`` has ``t − L`` among the short sums,
    i.e. ``longs & (mirrored_shorts >> (cap_t − t)) != 0``.

    >>> _probe(0b11, 1 << 5 | 1 << 3, 5, 3)  # longs {0, 1}, shorts {0, 2}: best total 3
    3
    """
    top = min(cap_t, total)
    for t in range(top, max(top - PROBES, -1), -1):
        if longs & (mirrored_shorts >> (cap_t - t)):
            return t
    return -1
