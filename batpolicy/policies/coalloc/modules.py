"""The allocation modules of the bandwidth-aware meta-schedulers, on a cluster snapshot.

Jones, Pang, Stanzione & Ligon, *Bandwidth-aware co-allocating meta-schedulers for
mini-grid architectures*, IEEE Cluster 2004 / 2005 (seed 003), §4.2 and §5. Each module
gets the job's node count and the clusters (:class:`ClusterInfo`: free nodes, uplink
capacity, the bandwidth the running co-allocated jobs need on it by eq. 1) and returns a
mapping ``{cluster name: nodes}`` or None when it cannot place the job:

- :func:`local` — module LA (§5): the job's origin cluster;
- :func:`migrate` — module MIG (§5): the cluster with the fewest free nodes that fits;
- :func:`first_fit` — §4.2 First-fit: largest free cluster first, spanning as many
  clusters as needed;
- :func:`b1` (largest free first), :func:`b2` (least saturated link first), :func:`b3`
  (big-small chunking), :func:`b4` (round-robin load balancing) — §5 class "B": first
  the clusters whose link is saturated beyond the LSLT are discounted (:func:`eligible`).

Class "A" module A1 (eq. 9-11) is in :mod:`.satisfy`. Ties are broken by the platform's
cluster order (stable sorts), so decisions are reproducible.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["ClusterInfo", "b1", "b2", "b3", "b4", "eligible", "first_fit", "local", "migrate"]

Mapping_ = dict[str, int]


@dataclass(slots=True)
class ClusterInfo:
    """One cluster as a module sees it.

    ``capacity`` is ``BW_i^max`` (byte/s; None: unlimited), ``load`` the sum of eq. 1
    over the running jobs spanning the link; :attr:`level` is their ratio (the inverse
    of eq. 3's ``BW_i^sat``): above 1 the link is saturated.
    """

    name: str
    free: int
    capacity: float | None = None
    load: float = 0.0

    @property
    def level(self) -> float:
        """Link saturation level ``load / capacity`` (0 for an unlimited link).

        >>> ClusterInfo("c0", 10, 100.0, 150.0).level
        1.5
        """
        if self.capacity is None or self.capacity <= 0:
            return 0.0 if self.capacity is None or self.load <= 0 else math.inf
        return self.load / self.capacity


def local(n: int, clusters: Sequence[ClusterInfo], origin: str | None) -> Mapping_ | None:
    """Module LA: the whole job on its origin cluster, if it has ``n`` free nodes.

    >>> local(5, [ClusterInfo("c0", 4), ClusterInfo("c1", 9)], "c1")
    {'c1': 5}
    >>> local(5, [ClusterInfo("c0", 4)], "c0") is None
    True
    """
    for c in clusters:
        if c.name == origin:
            return {c.name: n} if c.free >= n else None
    return None


def migrate(n: int, clusters: Sequence[ClusterInfo]) -> Mapping_ | None:
    """Module MIG: the whole job on the cluster with the fewest free nodes that fits.

    >>> migrate(5, [ClusterInfo("c0", 9), ClusterInfo("c1", 6), ClusterInfo("c2", 4)])
    {'c1': 5}
    """
    best: ClusterInfo | None = None
    for c in clusters:
        if c.free >= n and (best is None or c.free < best.free):
            best = c
    return None if best is None else {best.name: n}


def _greedy(n: int, ordered: Sequence[ClusterInfo]) -> Mapping_ | None:
    """Take as many nodes as possible from each cluster in order until ``n`` are placed."""
    out: Mapping_ = {}
    rest = n
    for c in ordered:
        if rest == 0:
            break
        take = min(c.free, rest)
        if take > 0:
            out[c.name] = take
            rest -= take
    return out if rest == 0 else None


def _by_free(clusters: Sequence[ClusterInfo]) -> list[ClusterInfo]:
    return sorted(clusters, key=lambda c: -c.free)


def first_fit(n: int, clusters: Sequence[ClusterInfo]) -> Mapping_ | None:
    """§4.2 First-fit: largest free cluster first, as many clusters as needed; link-blind.

    Runtime complexity: O(m log m) for m clusters.

    >>> first_fit(12, [ClusterInfo("c0", 5), ClusterInfo("c1", 8), ClusterInfo("c2", 5)])
    {'c1': 8, 'c0': 4}
    """
    return _greedy(n, _by_free(clusters))


def eligible(clusters: Sequence[ClusterInfo], lslt: float) -> list[ClusterInfo]:
    """Class "B" first step: drop clusters whose link is saturated beyond the LSLT.

    A link counts as saturated beyond the threshold when its level exceeds ``lslt``
    (1.0: the link's capacity, eq. 3's ``BW_sat < 1``).

    >>> [c.name for c in eligible([ClusterInfo("c0", 5, 100.0, 120.0),
    ...                             ClusterInfo("c1", 5, 100.0, 100.0)], 1.0)]
    ['c1']
    """
    return [c for c in clusters if c.level <= lslt]


def b1(n: int, clusters: Sequence[ClusterInfo], lslt: float) -> Mapping_ | None:
    """Module B1: largest free nodes first, among the clusters below the LSLT.

    >>> b1(8, [ClusterInfo("c0", 9, 100.0, 200.0), ClusterInfo("c1", 5),
    ...        ClusterInfo("c2", 4)], 1.0)
    {'c1': 5, 'c2': 3}
    """
    return _greedy(n, _by_free(eligible(clusters, lslt)))


def b2(n: int, clusters: Sequence[ClusterInfo], lslt: float) -> Mapping_ | None:
    """Module B2: least saturated link first (then largest free), below the LSLT.

    >>> b2(8, [ClusterInfo("c0", 9, 100.0, 50.0), ClusterInfo("c1", 5, 100.0, 10.0)], 1.0)
    {'c1': 5, 'c0': 3}
    """
    return _greedy(n, sorted(eligible(clusters, lslt), key=lambda c: (c.level, -c.free)))


def b3(n: int, clusters: Sequence[ClusterInfo], lslt: float, chunk: float) -> Mapping_ | None:
    """Module B3: a "large chunk" (``chunk`` of the job) on one cluster, the rest B1-like.

    The chunk goes on the eligible cluster with the most free nodes, which must hold at
    least ``ceil(chunk n)`` of them; it takes as many as it can (B3 "co-allocates
    starting with the largest partition possible", like B1, §6.3); the remaining nodes
    go largest free first. Refuses (None) when no chunk fits.

    >>> b3(10, [ClusterInfo("c0", 8), ClusterInfo("c1", 6)], 1.0, 0.8)
    {'c0': 8, 'c1': 2}
    >>> b3(10, [ClusterInfo("c0", 7), ClusterInfo("c1", 6)], 1.0, 0.8) is None
    True
    """
    ordered = _by_free(eligible(clusters, lslt))
    if not ordered or ordered[0].free < math.ceil(chunk * n - 1e-9):
        return None
    return _greedy(n, ordered)


def b4(n: int, clusters: Sequence[ClusterInfo], lslt: float) -> Mapping_ | None:
    """Module B4: one node at a time, round robin over the eligible clusters.

    The cycle visits the clusters largest free first and skips those that are full.
    Runtime complexity: O(m log m + m x rounds), at most O(p) rounds.

    >>> b4(7, [ClusterInfo("c0", 2), ClusterInfo("c1", 9), ClusterInfo("c2", 4)], 1.0)
    {'c1': 3, 'c2': 2, 'c0': 2}
    """
    ordered = [c for c in _by_free(eligible(clusters, lslt)) if c.free > 0]
    if sum(c.free for c in ordered) < n:
        return None
    out: Mapping_ = {c.name: 0 for c in ordered}
    rest = n
    while rest:
        for c in ordered:
            if rest and out[c.name] < c.free:
                out[c.name] += 1
                rest -= 1
    return {name: k for name, k in out.items() if k}
