"""The bandwidth-centric co-allocation model, as pure functions (no simulator here).

Jones, Pang, Stanzione & Ligon, *Bandwidth-aware co-allocating meta-schedulers for
mini-grid architectures*, IEEE Cluster 2004 / 2005 (seed 003), §3.3-§3.7 and §4.3:

- :func:`required_bandwidth`: the bandwidth ``BW_i^j`` job ``j`` needs on the uplink of
  cluster ``i`` to run at full speed (eq. 1; the Fig. 5 example is eq. 2);
- :func:`saturation`: ``BW_i^sat``, a link's capacity over what its jobs need (eq. 3);
- :func:`allot`: the Step 1-5 algorithm of §3.5 (with eq. 4's residual saturation),
  giving each job its slowdown ``BW^sd`` = allotted / required, the same on every link
  it spans (eq. 5, §3.6);
- :class:`Residual` and :func:`Residual.advance`: residual computation, communication
  and execution times, recomputed at every inter-cluster state change (eq. 6-7, §3.7);
- :func:`ppbw_from_bsbw`: per-processor bandwidth from a bisection bandwidth (eq. 8).

Units are whatever the caller uses consistently (batpolicy: byte/s and seconds). A link
of capacity ``None`` is unlimited (the paper's *Ideal*, §4.2).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass

__all__ = ["Residual", "allot", "link_demands", "ppbw_from_bsbw", "required_bandwidth",
           "saturation"]


def required_bandwidth(n_i: int, n_total: int, ppbw: float) -> float:
    """Eq. 1: ``BW_i^j = (n_i PPBW_j) (n_T - n_i) / (n_T - 1)``.

    The Fig. 5 example (eq. 2): six nodes, three of them on cluster 1, need
    ``3 PPBW x 9/15`` on cluster 1's link.

    >>> required_bandwidth(3, 6, 100.0)
    180.0
    >>> required_bandwidth(4, 4, 100.0), required_bandwidth(1, 1, 100.0)
    (0.0, 0.0)
    """
    if n_total <= 1 or n_i <= 0 or n_i >= n_total:
        return 0.0
    return n_i * ppbw * (n_total - n_i) / (n_total - 1)


def ppbw_from_bsbw(bsbw: float, n_total: int) -> float:
    """Eq. 8: ``PPBW_j = BSBW 4 (N_T - 1) / N_T^2`` (a bisected job needs BSBW per link).

    >>> ppbw_from_bsbw(1000.0, 10)
    360.0
    >>> required_bandwidth(5, 10, ppbw_from_bsbw(1000.0, 10))  # bisection: BSBW
    1000.0
    """
    if n_total <= 0:
        return 0.0
    return bsbw * (4 * (n_total - 1)) / (n_total * n_total)


def link_demands(counts: Mapping[Hashable, int], ppbw: float) -> dict[Hashable, float]:
    """Eq. 1 on every link a job spans: ``{link: BW_i^j}`` for ``counts`` = nodes per cluster.

    Links where the job needs nothing (all its nodes there, or none) are left out: a
    job on one cluster spans no link.

    >>> link_demands({"c0": 3, "c1": 2, "c2": 1}, 100.0)
    {'c0': 180.0, 'c1': 160.0, 'c2': 100.0}
    >>> link_demands({"c0": 4}, 100.0)
    {}
    """
    n_total = sum(counts.values())
    out: dict[Hashable, float] = {}
    for link, n_i in counts.items():
        need = required_bandwidth(n_i, n_total, ppbw)
        if need > 0:
            out[link] = need
    return out


def saturation(capacity: float | None, demands: float) -> float:
    """Eq. 3: ``BW_i^sat = BW_i^max / sum_j BW_i^j``; below 1 the link is saturated.

    >>> saturation(100.0, 400.0), saturation(100.0, 0.0), saturation(None, 5.0)
    (0.25, inf, inf)
    """
    if capacity is None or demands <= 0:
        return math.inf
    return capacity / demands


def allot(demands: Mapping[Hashable, Mapping[Hashable, float]],
          capacity: Mapping[Hashable, float | None]) -> dict[Hashable, float]:
    """§3.5 Steps 1-5: each job's slowdown factor ``BW^sd`` (eq. 5), 1.0 at full speed.

    ``demands[j][i]`` is ``BW_i^j`` (:func:`link_demands`), ``capacity[i]`` is
    ``BW_i^max`` (``None``: unlimited; a link missing from ``capacity`` is unlimited).

    - Step 1: allotted = required; available = capacity; every job unconstrained.
    - Step 2: eq. 4, ``BW_i^uc_sat = BW_i^avail / sum of the unconstrained jobs'
      allotments on i``; stop (Step 5) when none is below 1.
    - Step 3: the most saturated link (smallest ratio; the first in ``capacity``'s order
      among equals) scales every unconstrained job on it by that ratio, on all its links
      (the text says "by a factor of BW_i^sat"; we read it as eq. 4's residual ratio,
      the only one that keeps the already constrained jobs' bandwidth out, as Step 4
      and eq. 4 intend).
    - Step 4: those jobs become constrained and their allotments leave ``avail`` on
      every link they span; back to Step 2.

    Scaling by the smallest ratio never over-commits another link (its ratio is larger),
    so ``avail`` stays >= 0. Runtime complexity: O(L (J + L)) for L links, J jobs.

    Two jobs of demand 200 and 100 on a link of 150 both run at half speed:

    >>> allot({"a": {"l": 200.0}, "b": {"l": 100.0}}, {"l": 150.0})
    {'a': 0.5, 'b': 0.5}
    """
    factor = {job: 1.0 for job in demands}  # Step 1 (allotted = factor x required)
    unconstrained = {job for job, links in demands.items() if links}
    on_link: dict[Hashable, list[Hashable]] = {}
    for job, links in demands.items():
        for link in links:
            on_link.setdefault(link, []).append(job)
    order = [link for link in capacity if link in on_link]
    order += [link for link in on_link if link not in capacity]
    avail = {link: capacity.get(link) for link in order}
    while unconstrained:
        worst, worst_ratio = None, 1.0
        for link in order:  # Step 2: eq. 4 on every link
            cap = avail[link]
            if cap is None:
                continue
            load = sum(demands[j][link] for j in on_link[link] if j in unconstrained)
            if load <= 0:
                continue
            ratio = cap / load
            if ratio < worst_ratio:
                worst, worst_ratio = link, ratio
        if worst is None:
            break  # Step 5
        hit = [j for j in on_link[worst] if j in unconstrained]
        for job in hit:  # Step 3: the most saturated link first
            factor[job] = worst_ratio
            unconstrained.discard(job)  # Step 4
            for link, need in demands[job].items():
                cap = avail[link]
                if cap is not None:
                    avail[link] = max(cap - need * worst_ratio, 0.0)
    return factor


@dataclass(slots=True)
class Residual:
    """Residual times of one co-allocated job (§3.7): computation, communication, slowdown.

    Initialised at the job's start to ``T_P = K T_E`` and ``T_C = (1 - K) T_E`` at full
    speed; :meth:`advance` applies eq. 6-7 at each inter-cluster state change.

    A 100 s job (K = 0.5) slowed to half speed at t=0 ends at 150; at t=75 (half done:
    25 s of computation and 50 s of half-speed communication left) it gets full speed
    back: it ends at 75 + 25 + 50/2 = 125, earlier.

    >>> r = Residual.start(100.0, 0.5, now=0.0)
    >>> r.advance(0.0, 0.5)
    150.0
    >>> r.advance(75.0, 1.0)
    125.0
    """

    tp: float          #: T_P^R, residual computation time (s)
    tc: float          #: T_C^R, residual communication time at the current slowdown (s)
    sd: float          #: BW^sd of the last state change (1.0: full speed)
    since: float       #: time of the last state change

    @classmethod
    def start(cls, runtime: float, comp_share: float, now: float) -> Residual:
        """A job starting at ``now`` with ``T_E = runtime`` and ``K = comp_share``."""
        tp = comp_share * runtime
        return cls(tp, runtime - tp, 1.0, now)

    @property
    def remaining(self) -> float:
        """``T_E^R = T_P^R + T_C^R``."""
        return self.tp + self.tc

    def advance(self, now: float, sd: float) -> float:
        """Eq. 6-7 at a state change at ``now`` with the new slowdown ``sd``; the new end.

        ``T_P^Delta`` and ``T_C^Delta`` are the shares of ``Delta T = now - since`` spent
        computing and communicating (eq. 7); the remaining communication is rescaled by
        ``sd' / sd`` (eq. 6). Runtime complexity: O(1).
        """
        if not sd > 0:
            raise ValueError(f"a slowdown factor must be > 0, got {sd}")
        total = self.tp + self.tc
        delta = now - self.since
        if total > 0 and delta > 0:
            share = min(delta / total, 1.0)
            self.tp -= share * self.tp          # eq. 7: T_P^Delta
            self.tc -= share * self.tc          # eq. 7: T_C^Delta
        if sd != self.sd:
            self.tc = self.tc * self.sd / sd    # eq. 6
            self.sd = sd
        self.since = now
        return now + self.tp + self.tc
