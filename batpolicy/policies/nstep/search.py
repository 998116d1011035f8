"""The N-step look-ahead of Wu & Chen's greedy scheduler, on immutable snapshots.

Wu & Chen, *N-step search based greedy scheduler* (seed 001): §1 (the greedy rule and the
prefix choice), §3.2 (Fig. 1: the search tree over ``k``, depth-limited), §5.3
(branch-and-bound, the paper's future work, built here).

A :class:`Snapshot` is a copy of what the search needs (free machines per rack, running
jobs' expected ends and machines, pending jobs): the search never touches the scheduler's
live state, and every branch builds new snapshots.

- :func:`greedy_chain` — §1: repeatedly pick, among the *runnable* pending jobs (those
  whose need the free machines can meet), the one of highest expected utility
  E(U) = U_max − E(T_completion) − (T_now − T_arrive), on its preferred placement if
  free, else (``soft``) on other machines with its longer runtime; ``hard`` only runs
  jobs on preferred machines.
- :func:`best_prefix` — §3.2 / Fig. 1: choose how many ``k`` of the chain to start now,
  by simulating the completions of the running jobs (no new arrivals assumed), choosing
  ``k`` again at each completion, up to ``depth`` steps; at the depth limit the rest of the
  chain is started (step-0's "as many as possible") and the utilities are summed.
  ``prune=True`` cuts a branch whose optimistic bound (every pending job started now on
  its preferred placement) cannot beat the best found: the same ``k``, fewer nodes.

Ties: jobs of equal expected utility go by arrival, then id; prefixes of equal value by
the larger ``k`` (start rather than wait when waiting gains nothing).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

#: Job kinds and what they prefer (§1 and the issue: MPI jobs want one rack, GPU jobs the
#: GPU rack; other jobs have no preference).
MPI, GPU, ANY = "mpi", "gpu", "any"


@dataclass(frozen=True, slots=True)
class PendingJob:
    """A waiting job as the search sees it: size, kind, runtimes, U_max, arrival."""

    id: str
    arrive: float
    res: int
    kind: str
    t_pref: float
    t_other: float
    umax: float

    def utility(self, start: float, preferred: bool) -> float:
        """E(U) if started at ``start``: U_max − runtime − (start − arrival) (§1)."""
        return self.umax - (self.t_pref if preferred else self.t_other) - (start - self.arrive)

    def best_utility(self, now: float) -> float:
        """The most it can still earn: started now, at its shortest runtime."""
        return self.umax - min(self.t_pref, self.t_other) - (now - self.arrive)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What the look-ahead needs at one instant; immutable, so branches share it safely.

    ``running`` holds (expected end, machines taken per rack), sorted by end.
    """

    now: float
    free: tuple[int, ...]
    gpu: tuple[bool, ...]
    running: tuple[tuple[float, tuple[int, ...]], ...]
    pending: tuple[PendingJob, ...]


@dataclass(frozen=True, slots=True)
class Start:
    """One link of the greedy chain: the job, its machines per rack, preferred or not."""

    job: PendingJob
    take: tuple[int, ...]
    preferred: bool
    utility: float

    @property
    def runtime(self) -> float:
        """Expected runtime on this placement."""
        return self.job.t_pref if self.preferred else self.job.t_other


def place(job: PendingJob, free: tuple[int, ...], gpu: tuple[bool, ...],
          hard: bool) -> tuple[tuple[int, ...], bool] | None:
    """Machines per rack for ``job`` and whether that is its preferred placement.

    Preferred: an MPI job in the one rack of fewest free machines that holds it (keeping
    large holes for larger jobs; GPU racks last); a GPU job on GPU racks; others
    anywhere. Otherwise (not ``hard``): any free machines, non-GPU racks first, fullest
    racks first (fewest racks spanned). ``None`` when the job cannot run now.

    >>> place(PendingJob("a", 0, 3, MPI, 10, 20, 100), (2, 4, 3), (False,) * 3, False)
    ((0, 0, 3), True)
    >>> place(PendingJob("a", 0, 5, MPI, 10, 20, 100), (2, 4, 3), (False,) * 3, True)
    """
    n = len(free)
    if job.kind == MPI:
        fits = [r for r in range(n) if free[r] >= job.res]
        if fits:
            r = min(fits, key=lambda r: (gpu[r], free[r], r))
            return tuple(job.res if i == r else 0 for i in range(n)), True
    elif job.kind == GPU:
        if sum(free[r] for r in range(n) if gpu[r]) >= job.res:
            return _spread(job.res, free, [r for r in range(n) if gpu[r]]), True
    elif sum(free) >= job.res:
        return _spread(job.res, free, sorted(range(n), key=lambda r: (gpu[r], -free[r], r))), \
            True
    if hard or sum(free) < job.res:
        return None
    order = sorted(range(n), key=lambda r: (gpu[r], -free[r], r))
    return _spread(job.res, free, order), False


def _spread(need: int, free: tuple[int, ...], order: list[int]) -> tuple[int, ...]:
    take = [0] * len(free)
    for r in order:
        got = min(need, free[r])
        take[r] = got
        need -= got
        if not need:
            break
    return tuple(take)


def greedy_chain(snap: Snapshot, hard: bool) -> list[Start]:
    """§1: the order in which the greedy rule would start jobs with the free machines.

    Runtime complexity: O(n² · racks) for n pending jobs.
    """
    free = snap.free
    left = list(snap.pending)
    chain: list[Start] = []
    while left:
        best: tuple[float, float, str] | None = None
        pick = None
        for job in left:
            placed = place(job, free, snap.gpu, hard)
            if placed is None:
                continue
            utility = job.utility(snap.now, placed[1])
            key = (-utility, job.arrive, job.id)
            if best is None or key < best:
                best, pick = key, (job, placed, utility)
        if pick is None:
            break
        job, (take, preferred), utility = pick
        chain.append(Start(job, take, preferred, utility))
        free = tuple(f - t for f, t in zip(free, take, strict=True))
        left.remove(job)
    return chain


def after(snap: Snapshot, chain: list[Start], k: int) -> Snapshot | None:
    """The snapshot at the next completion once the first ``k`` of ``chain`` started.

    Every running job ending at that instant releases its machines; ``None`` when nothing
    runs (no completion will ever come without new arrivals).
    """
    started = chain[:k]
    free = snap.free
    running = list(snap.running)
    for s in started:
        free = tuple(f - t for f, t in zip(free, s.take, strict=True))
        running.append((snap.now + s.runtime, s.take))
    if not running:
        return None
    running.sort()
    when = running[0][0]
    for end, take in running:
        if end > when:
            break
        free = tuple(f + t for f, t in zip(free, take, strict=True))
    rest = tuple(r for r in running if r[0] > when)
    done = {s.job.id for s in started}
    return Snapshot(when, free, snap.gpu, rest,
                    tuple(j for j in snap.pending if j.id not in done))


@dataclass(slots=True)
class SearchStats:
    """Nodes visited and whether a bound stopped the search."""

    nodes: int = 0
    cut: bool = False


class _Stop(Exception):
    """The time or node bound was reached."""


def best_prefix(snap: Snapshot, *, depth: int, hard: bool = False, prune: bool = False,
                max_nodes: int = 0, deadline: float | None = None,
                clock: Callable[[], float] | None = None) -> tuple[int, list[Start], SearchStats]:
    """How many of the greedy chain to start now (§3.2, Fig. 1), the chain, the stats.

    ``depth`` = number of future scheduling points searched (the paper's N, 7). With
    ``max_nodes`` or ``deadline`` reached the search stops and the best ``k`` found so far
    stands (``k = len(chain)``, step-0's choice, when none was evaluated).
    Runtime complexity: O((n + 1)^depth) nodes without pruning.
    """
    stats = SearchStats()
    chain = greedy_chain(snap, hard)
    n = len(chain)
    if n == 0:
        return 0, chain, stats

    def tick() -> None:
        """Count a node; stop at the node or time bound (clock read every 64 nodes)."""
        stats.nodes += 1
        if max_nodes and stats.nodes > max_nodes:
            raise _Stop
        if deadline is not None and clock is not None and stats.nodes % 64 == 0 \
                and clock() >= deadline:
            raise _Stop

    def value(node: Snapshot, steps: int, floor: float) -> float:
        """Best total utility from ``node`` (exact whenever it exceeds ``floor``)."""
        tick()
        links = greedy_chain(node, hard)
        if steps == 0 or not links:
            return sum(s.utility for s in links)
        if prune and sum(max(j.best_utility(node.now), 0.0) for j in node.pending) <= floor:
            return -math.inf  # cannot beat floor: any value <= floor will do
        best = -math.inf
        for k in range(len(links), -1, -1):
            gained = sum(s.utility for s in links[:k])
            nxt = after(node, links, k)
            total = gained if nxt is None else gained + value(
                nxt, steps - 1, max(best, floor) - gained)
            if total > best:
                best = total
        return best

    best_k, best_total = n, -math.inf
    try:
        for k in range(n, -1, -1):
            tick()
            gained = sum(s.utility for s in chain[:k])
            nxt = after(snap, chain, k)
            total = gained if nxt is None or depth <= 0 else gained + value(
                nxt, depth - 1, best_total - gained)
            if total > best_total:
                best_total, best_k = total, k
    except _Stop:
        stats.cut = True
    return best_k, chain, stats
