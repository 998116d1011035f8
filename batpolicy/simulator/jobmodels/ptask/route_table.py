"""The routes of host pairs as a parallel task meets them, in arrays.

``L07Action::L07Action`` (``src/surf/ptask_L07.cpp``) asks the platform for the route
and latency of every pair of hosts that moves data (``get_route_and_latency``) and
expands the task's variable on each link of each route. A task on n hosts has up to
n (n - 1) pairs; routes never change, so :class:`RouteTable` computes each pair's once
and hands a task the links of all its pairs with a few array operations, not a Python
call per pair.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from batpolicy.platforms.routes import COORDINATES, Hop

__all__ = ["RouteTable"]


#: Up to this many hosts the table keeps a dense row per source host met (16 bytes per
#: destination: 67 MB at most for 2,048 hosts); beyond, a dictionary of the pairs met.
DENSE_LIMIT = 2048


class RouteTable:
    """Pair -> (links, latency) of ``nb_hosts`` hosts, filled as pairs are met.

    ``route(a, b)`` gives the hops from host ``a`` to host ``b``; ``link(hop)`` the
    index of a hop's link constraint (the caller creates it at its first meeting). A
    hop with :data:`~.platforms.routes.COORDINATES` sharing (a Vivaldi distance) adds its latency
    and no link. Memory: with at most ``dense_limit`` hosts, three numbers per destination
    for each source host met (a task's pairs are then one array indexing); else three per
    pair met (a dictionary look-up per pair); plus the links of the routes met.
    """

    def __init__(self, nb_hosts: int, route: Callable[[int, int], list[Hop]],
                 link: Callable[[Hop], int], dense_limit: int = DENSE_LIMIT) -> None:
        self._route = route
        self._link = link
        self._dense = nb_hosts <= dense_limit
        self._pairs: dict[tuple[int, int], tuple[int, int, float]] = {}  # not dense
        width = nb_hosts if self._dense else 0
        self._row_of = np.full(width, -1, dtype=np.intp)  # source host -> its row
        # per row (a source host met) and destination host: the offset of the route's
        # links in _flat (-1: not computed yet), their count, the route's latency
        self._start = np.full((0, width), -1, dtype=np.int32)
        self._size = np.zeros((0, width), dtype=np.int32)
        self._latency = np.zeros((0, width))
        self._nb_rows = 0
        self._flat = np.empty(1024, dtype=np.intp)  # every route's links, back to back
        self._used = 0

    def _add_rows(self, sources: list[int]) -> None:
        """Rows for source hosts met for the first time."""
        for src in sources:
            if self._row_of[src] >= 0:
                continue
            if self._nb_rows == self._start.shape[0]:
                grow = max(8, 2 * self._nb_rows)
                start = np.full((grow, self._start.shape[1]), -1, dtype=np.int32)
                size = np.zeros(start.shape, dtype=np.int32)
                latency = np.zeros(start.shape)
                start[:self._nb_rows] = self._start
                size[:self._nb_rows] = self._size
                latency[:self._nb_rows] = self._latency
                self._start, self._size, self._latency = start, size, latency
            self._row_of[src] = self._nb_rows
            self._nb_rows += 1

    def _compute(self, src: int, dst: int) -> tuple[int, int, float]:
        """Compute ``src`` -> ``dst``: (offset of its links in _flat, their count, latency).

        The latency is the sum of the hops' in route order.
        """
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
        if used + size >= 2**31:
            raise OverflowError("more than 2**31 route links in one table")
        self._flat[used:used + size] = links
        self._used = used + size
        return used, size, latency

    def pairs(self, hosts: Sequence[int], cells: Any) -> tuple[Any, Any, Any]:
        """The routes of some cells of a task's ``len(hosts)`` x ``len(hosts)`` matrix.

        ``cells`` are increasing row-major indexes ``i * n + j`` (from host ``hosts[i]`` to
        host ``hosts[j]``). Returns the links of every cell's route, concatenated in cell
        order, the number of links of each cell and each cell's latency. Pairs not met
        before are computed in cell order (so new links are met in that order).
        """
        nb = len(hosts)
        machines = np.asarray(hosts, dtype=np.intp)
        src = machines[cells // nb]
        dst = machines[cells % nb]
        if self._dense:
            starts, sizes, latencies = self._dense_cells(src, dst)
        else:
            found = [self._pairs.get(pair) or self._sparse_cell(*pair)
                     for pair in zip(src.tolist(), dst.tolist(), strict=True)]
            starts = np.array([f[0] for f in found], dtype=np.intp)
            sizes = np.array([f[1] for f in found], dtype=np.intp)
            latencies = np.array([f[2] for f in found])
        ends = np.cumsum(sizes)
        total = int(ends[-1]) if ends.size else 0
        at = np.repeat(starts - (ends - sizes), sizes) + np.arange(total)
        return self._flat[at], sizes, latencies

    def _sparse_cell(self, src: int, dst: int) -> tuple[int, int, float]:
        found = self._pairs[(src, dst)] = self._compute(src, dst)
        return found

    def _dense_cells(self, src: Any, dst: Any) -> tuple[Any, Any, Any]:
        """(offsets, counts, latencies) of the pairs ``src[k]`` -> ``dst[k]`` from the rows."""
        rows = self._row_of[src]
        if rows.min() < 0:
            self._add_rows(list(dict.fromkeys(src[rows < 0].tolist())))
            rows = self._row_of[src]
        starts = self._start[rows, dst]
        unknown = np.flatnonzero(starts < 0)
        if unknown.size:
            for k in unknown.tolist():
                row, target = int(rows[k]), int(dst[k])
                if self._start[row, target] < 0:
                    (self._start[row, target], self._size[row, target],
                     self._latency[row, target]) = self._compute(int(src[k]), target)
            starts = self._start[rows, dst]
        return (starts.astype(np.intp), self._size[rows, dst].astype(np.intp),
                self._latency[rows, dst])
