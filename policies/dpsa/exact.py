"""Exact OptimizeUtilization: the best subset by dynamic programming over machine counts.

Grudenic & Bogunovic, MIPRO 2011, §III.B–C. Fig. 2's recursive search enumerates
subsets (exponential); here the same answer — most machines used, ties broken by the
variant's rule — comes from a pseudo-polynomial subset-sum, because a single EASY
reservation leaves only two availability classes (:mod:`.problem`).

Algorithm (``n`` items in search order, ``F`` free machines, ``U`` unreserved ones):

1. Suffix reachability, bit-parallel on Python ints: ``SL[i]`` holds the sums ``≤ U`` of
   long items ``i..n−1`` (bit ``v`` set ⇔ sum ``v`` reachable); ``SS[i]`` the sums of the
   short items ``i..n−1``, stored *mirrored* (bit ``F − v``) so that a test on the short
   part becomes a right shift.
2. Optimum: ``B`` = sums of long items capped at ``U``, then extended by every short item
   capped at ``F``; ``OPT = B.bit_length() − 1``. ``B`` holds exactly the utilisations of
   feasible subsets: longs alone never exceed ``U``, and all together never exceed ``F``.
3. Tie rule: walk the items in search order keeping ``C``, the set of final long sums
   ``L`` still reachable (``L − a ∈ SL[i]`` and ``OPT − L − b ∈ SS[i]``, with ``a``, ``b``
   the long and short sums taken so far); take item ``i`` whenever some ``L`` survives
   taking it. Greedy inclusion of the earliest possible item yields the
   lexicographically smallest index tuple among the optimal subsets — the first one
   Fig. 2's pre-order search would find.

Proof sketch: a subset is feasible iff its long sum ``L ≤ U`` and total ``L + S ≤ F``
(two-class lemma, :mod:`.problem`); step 2 enumerates exactly those totals, so ``OPT`` is
the best utilisation. In step 3, ``C ≠ ∅`` is the invariant "some optimal completion of
the choices so far exists"; taking item ``i`` when possible and skipping it otherwise is
the standard greedy for the lexicographically smallest solution, since every solution
that skips an item which could be taken compares larger at that position.

Runtime complexity: O(n · F / w) word operations (w = 30-bit digits of Python ints),
after :func:`.problem.reduce_items` (equal items beyond ``capacity // size`` dropped) and
gcd scaling; O(n · F / 8) bytes for the suffix sets. Shortcuts: no item, or all items fit
together (then they are the unique optimum).
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
    for i in range(n - 1, -1, -1):
        w = sizes[i]
        if long[i]:
            sl = (sl | (sl << w)) & mask_l
        else:
            sm |= sm >> w
        suffix_l[i], suffix_m[i] = sl, sm
    # 2. the optimum: long sums (capped at U) extended by the short items (capped at F)
    reach = suffix_l[0]
    for w, is_long in zip(sizes, long, strict=True):
        if not is_long:
            reach = (reach | (reach << w)) & mask_t
    opt = reach.bit_length() - 1
    # 3. greedy walk: candidate final long sums L with L - a in SL[i], OPT - L - b in SS[i]
    base = cap_t - opt  # bit L of (SM >> (base + b)) <=> OPT - L - b reachable by shorts
    cand = suffix_l[0] & (suffix_m[0] >> base)
    a = b = 0
    chosen: list[int] = []
    for i in range(n):
        if a + b == opt:
            break
        w = sizes[i]
        if long[i]:
            nxt = suffix_l[i + 1]
            taken = cand & (nxt << (a + w))
            if taken:
                cand, a = taken, a + w
                chosen.append(i)
            else:
                cand &= nxt << a
        else:
            nxt = suffix_m[i + 1]
            taken = cand & (nxt >> (base + b + w))
            if taken:
                cand, b = taken, b + w
                chosen.append(i)
            else:
                cand &= nxt >> (base + b)
    return chosen
