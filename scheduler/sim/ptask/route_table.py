"""The routes of host pairs as a parallel task meets them, in arrays.

``L07Action::L07Action`` (``src/surf/ptask_L07.cpp``) asks the platform for the route
and latency of every pair of hosts that moves data (``get_route_and_latency``) and
expands the task's variable on each link of each route. A task on n hosts has up to
n (n - 1) pairs; routes never change, so :class:`RouteTable` computes each pair's once
and hands a task the links of all its pairs with a few array operations per source host
instead of a Python call per pair.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from batpolicy.scheduler.sim.routes import COORDINATES, Hop

__all__ = ["RouteTable"]


class RouteTable:
    """Pair -> (links, latency) of ``nb_hosts`` hosts, filled as pairs are met.

    ``route(a, b)`` gives the hops from host ``a`` to host ``b``; ``link(hop)`` the
    index of a hop's link constraint (the caller creates it at its first meeting). A
    hop with :data:`~..routes.COORDINATES` sharing (a Vivaldi distance) adds its latency
    and no link. Memory: three numbers per destination for each source host met, plus
    the links of the routes met.
    """

    def __init__(self, nb_hosts: int, route: Callable[[int, int], list[Hop]],
                 link: Callable[[Hop], int]) -> None:
        self._nb_hosts = nb_hosts
        self._route = route
        self._link = link
        # source host -> (offset of each destination's links in _flat, -1 unknown; their
        # count; the route's latency)
        self._rows: dict[int, tuple[Any, Any, Any]] = {}
        self._flat = np.empty(1024, dtype=np.intp)  # every route's links, back to back
        self._used = 0

    def _row(self, src: int) -> tuple[Any, Any, Any]:
        row = self._rows.get(src)
        if row is None:
            n = self._nb_hosts
            row = self._rows[src] = (np.full(n, -1, dtype=np.intp), np.zeros(n, dtype=np.intp),
                                     np.zeros(n))
        return row

    def _fill(self, src: int, dst: int, row: tuple[Any, Any, Any]) -> None:
        """Compute ``src`` -> ``dst``: its latency is the sum of its hops' in route order."""
        links: list[int] = []
        latency = 0.0
        for hop in self._route(src, dst):
            latency += hop.latency
            if hop.sharing != COORDINATES:
                links.append(self._link(hop))
        used, size = self._used, len(links)
        if used + size > self._flat.size:
            grown = np.empty(max(2 * self._flat.size, used + size), dtype=np.intp)
            grown[:used] = self._flat[:used]
            self._flat = grown
        self._flat[used:used + size] = links
        row[0][dst], row[1][dst], row[2][dst] = used, size, latency
        self._used = used + size

    def pairs(self, hosts: Sequence[int], cells: Any) -> tuple[Any, Any, Any]:
        """The routes of some cells of a task's ``len(hosts)`` x ``len(hosts)`` matrix.

        ``cells`` are increasing row-major indexes ``i * n + j`` (from host ``hosts[i]`` to
        host ``hosts[j]``). Returns the links of every cell's route, concatenated in cell
        order, the number of links of each cell and each cell's latency. Pairs not met
        before are computed in cell order (so new links are met in that order).
        """
        nb = len(hosts)
        dst = np.asarray(hosts, dtype=np.intp)[cells % nb]
        src_pos = cells // nb
        starts = np.empty(cells.size, dtype=np.intp)
        sizes = np.empty(cells.size, dtype=np.intp)
        latencies = np.empty(cells.size)
        cuts = [0, *(np.flatnonzero(np.diff(src_pos)) + 1).tolist(), cells.size]
        for lo, hi in zip(cuts[:-1], cuts[1:], strict=False):
            src = int(hosts[int(src_pos[lo])])
            row = self._row(src)
            block = dst[lo:hi]
            for new in dict.fromkeys(block[row[0][block] < 0].tolist()):
                self._fill(src, new, row)
            starts[lo:hi] = row[0][block]
            sizes[lo:hi] = row[1][block]
            latencies[lo:hi] = row[2][block]
        ends = np.cumsum(sizes)
        total = int(ends[-1]) if ends.size else 0
        at = np.repeat(starts - (ends - sizes), sizes) + np.arange(total)
        return self._flat[at], sizes, latencies
