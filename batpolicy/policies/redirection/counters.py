"""Algorithm 2 of redirection: pressure counters, their two filters, the conflict policy.

Faure, Lucarelli, Richard & Trystram, *Online scheduling with redirection for parallel
jobs*, IPDPSW 2020, §III-A/B and Algorithm 2:

- l. 2–6: when a job j is submitted, every running job k of the principal group that
  passes the filter gets ``Counter_k += 1`` (:meth:`PressureCounters.count`);
- l. 3, the filter: Algorithm 2 compares walltimes (``w_j >= w_k``); the text of §III-B
  compares sizes ("only the counter of the jobs k satisfying q_k ≥ q_j is increased").
  Both are here (:func:`passes_filter`), plus ``both`` and ``none``;
- l. 7: candidates are the running jobs with ``Counter_l > θ`` that fit the redirection
  group (q_l ≤ m'; the pseudo-code's ``r_i ≤ m'`` is read as q_l ≤ m', as the text says);
- l. 9: ``conflictRedirectionPolicy`` picks one (:func:`choose`): the largest walltime
  (the paper's example), the oldest start, or the highest counter;
- l. 10: every counter is reset after a redirection (:meth:`PressureCounters.reset`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from batpolicy.scheduler.jobs import Job

#: Counter filters (Alg. 2, l. 3 and §III-B). ``size`` is the default: see the package doc.
FILTERS = ("size", "walltime", "both", "none")
#: Conflict policies (Alg. 2, l. 9).
CONFLICTS = ("walltime", "oldest", "counter")


def passes_filter(kind: str, submitted: Job, running: Job) -> bool:
    """Whether the submission of ``submitted`` (j) increments the counter of ``running`` (k).

    ``size``: q_k ≥ q_j (§III-B); ``walltime``: w_j ≥ w_k (Alg. 2, l. 3), a job without
    walltime counting as infinitely long; ``both``: both; ``none``: always.

    >>> from batpolicy.scheduler.jobs import Job
    >>> small_short, big_long = Job("w0!1", 0, 2, 60.0, "p", 1), Job("w0!2", 0, 8, 600.0, "p", 2)
    >>> [passes_filter(f, small_short, big_long) for f in FILTERS]
    [True, False, False, True]
    >>> [passes_filter(f, big_long, small_short) for f in FILTERS]
    [False, True, False, True]
    """
    if kind == "size":
        return running.res >= submitted.res
    if kind == "walltime":
        return submitted.planned_walltime >= running.planned_walltime
    if kind == "both":
        return (running.res >= submitted.res
                and submitted.planned_walltime >= running.planned_walltime)
    return True


class PressureCounters:
    """``Counter_k`` of the running jobs of the principal group (Algorithm 2).

    Counters live only while their job runs (:meth:`forget` on completion); a job
    without an entry has counter 0.

    >>> from batpolicy.scheduler.jobs import Job
    >>> c = PressureCounters(theta=1, filter_kind="size")
    >>> k = Job("w0!0", 0, 4, 100.0, "p", 0)
    >>> for n in range(3):
    ...     _ = c.count(Job(f"w0!{n + 1}", 0, 2, 10.0, "p", n + 1), [k])
    >>> c[k.id], c.over_threshold()
    (3, ['w0!0'])
    >>> c.reset(); c[k.id]
    0
    """

    __slots__ = ("theta", "filter_kind", "_counts")

    def __init__(self, theta: float, filter_kind: str) -> None:
        self.theta = theta
        self.filter_kind = filter_kind
        self._counts: dict[str, int] = {}

    def count(self, submitted: Job, running: Iterable[Job]) -> int:
        """Alg. 2, l. 2–6: increment the counters ``submitted`` passes; return how many.

        Runtime complexity: O(r) in the number of running jobs given.
        """
        counts = self._counts
        kind = self.filter_kind
        nb = 0
        for job in running:  # Alg. 2, l. 2
            if passes_filter(kind, submitted, job):  # Alg. 2, l. 3
                counts[job.id] = counts.get(job.id, 0) + 1  # Alg. 2, l. 4
                nb += 1
        return nb

    def over_threshold(self) -> list[str]:
        """Ids whose counter exceeds θ (the first condition of Alg. 2, l. 7). O(r)."""
        theta = self.theta
        return [jid for jid, n in self._counts.items() if n > theta]

    def reset(self) -> None:
        """Alg. 2, l. 10: reset every counter. Runtime complexity: O(1)."""
        self._counts = {}

    def forget(self, job_id: str) -> None:
        """Drop the counter of a job that stopped running. Runtime complexity: O(1)."""
        self._counts.pop(job_id, None)

    def __getitem__(self, job_id: str) -> int:
        return self._counts.get(job_id, 0)

    def snapshot(self) -> dict[str, int]:
        """A copy of the non-zero counters (for tests and logs)."""
        return dict(self._counts)


def choose(candidates: Iterable[Job], counters: Mapping[str, int] | PressureCounters,
           rule: str) -> Job | None:
    """Alg. 2, l. 9, ``conflictRedirectionPolicy``: the job to redirect, or None.

    ``walltime``: largest walltime (§III-B's example; no walltime counts as infinite);
    ``oldest``: earliest start; ``counter``: highest counter. Ties go to the job
    submitted first (lowest submission rank), so the choice is deterministic.

    >>> from batpolicy.scheduler.jobs import Job
    >>> a = Job("w0!a", 0, 1, 500.0, "p", 0, start=10.0)
    >>> b = Job("w0!b", 0, 1, 900.0, "p", 1, start=5.0)
    >>> counts = {"w0!a": 7, "w0!b": 4}
    >>> [choose([a, b], counts, r).id for r in CONFLICTS]
    ['w0!b', 'w0!b', 'w0!a']
    >>> choose([], counts, "walltime") is None
    True
    """
    def _key(job: Job) -> tuple[float, int]:
        if rule == "walltime":
            primary = -job.planned_walltime
        elif rule == "oldest":
            primary = job.start if job.start is not None else float("inf")
        else:
            primary = -counters[job.id]
        return (primary, job.seq)

    return min(candidates, key=_key, default=None)
