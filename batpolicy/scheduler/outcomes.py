"""Scheduling metrics of a finished run: the figures papers report.

Bounded slowdown (Feitelson, Rudolph, Schwiegelshohn, Sevcik & Wong, *Theory and
practice in parallel job scheduling*, JSSPP 1997, §4.2)::

    bsld = max((wait + run) / max(run, tau), 1)

with ``tau`` = 10 s by default (the redirection paper uses 60 s). Rejected jobs count in
``nb_jobs`` but in no mean (unlike Batsim's schedule.csv, whose means divide by all jobs).
Utilisation is the allocated machine-seconds over ``nb_machines × (last end − first
submission)``; per group (INTERFACES.md §A: a cluster, rack or multi-CPU machine) it is
the machine-seconds allocated inside the group over its size times the same span.

Deadlines (a job's ``deadline`` field, absolute seconds; seed 002): a job that ran is
late when it finishes after its deadline; its tardiness is ``max(finish - deadline,
0)`` (Lawler's T_j). ``nb_late_jobs``, ``total_tardiness``, ``max_tardiness`` and
``mean_tardiness`` (over the jobs that have a deadline) count jobs that ran; a rejected
job with a deadline is counted apart in ``nb_rejected_with_deadline``.

Resubmitted jobs count once. A policy that kills a job and registers a copy of it (the
redirection policy, pybatsim's ``resubmit_job``) marks the copy with the metadata
``parent=<original id>`` (:data:`PARENT_KEY`); :func:`merge_copies` then counts the user
job once: submitted as the original, started and ended as its last copy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from msgspec import Struct

from batpolicy.protocol.intervals import MachineSet

#: Metadata key naming, in a copy of a killed job, the original's full id.
PARENT_KEY = "parent"


class JobOutcome(Struct, frozen=True):
    """What metrics need of one job; times are None for a rejected job.

    Why this form: metrics are computed from the simulator's job records
    (:mod:`batpolicy.io.metrics`) and, in ``serve`` where there are none, from
    the scheduler's own finished jobs (a policy's stats, :mod:`.copies`): this is what the
    two have in common, without either's bookkeeping.
    """

    submit: float
    start: float | None
    finish: float | None
    nb_resources: int
    success: bool
    killed: bool = False
    deadline: float | None = None
    alloc: MachineSet | None = None


def parent_of(metadata: str) -> str | None:
    """The original's id in a copy's metadata (``parent=<id>``, items split by ``;``).

    >>> parent_of("parent=w0!12"), parent_of("redirected_to=redir!w0.12"), parent_of("")
    ('w0!12', None, None)
    """
    if PARENT_KEY not in metadata:
        return None
    for item in metadata.split(";"):
        key, sep, value = item.strip().partition("=")
        if sep and key == PARENT_KEY:
            return value
    return None


def merge_copies(jobs: Sequence[tuple[str, str, JobOutcome]]) -> list[JobOutcome]:
    """One outcome per user job from ``(job_id, metadata, outcome)`` triples.

    A copy (metadata ``parent=<id>``) replaces its original and keeps the original's
    submission time; copies of copies chain back to the first original.
    Runtime complexity: O(n).

    >>> orig = ("w0!1", "", JobOutcome(5.0, 10.0, 30.0, 2, False, killed=True))
    >>> copy = ("r!1", "parent=w0!1", JobOutcome(30.0, 30.0, 80.0, 2, True))
    >>> [(o.submit, o.start, o.finish, o.success) for o in merge_copies([orig, copy])]
    [(5.0, 30.0, 80.0, True)]
    """
    parents = {job_id: p for job_id, metadata, _ in jobs
               if metadata and (p := parent_of(metadata)) is not None}
    if not parents:
        return [outcome for _, _, outcome in jobs]
    submit = {job_id: outcome.submit for job_id, _, outcome in jobs}
    deadlines = {job_id: outcome.deadline for job_id, _, outcome in jobs}
    replaced = set(parents.values())

    def root(job_id: str) -> str:
        """The first original of a chain of copies."""
        seen = set()
        while job_id in parents and job_id not in seen:
            seen.add(job_id)
            job_id = parents[job_id]
        return job_id

    out = []
    for job_id, _, outcome in jobs:
        if job_id in replaced:
            continue  # replaced by its copy
        if job_id in parents:
            first = submit.get(root(job_id), outcome.submit)
            deadline = outcome.deadline if outcome.deadline is not None \
                else deadlines.get(root(job_id))
            outcome = JobOutcome(min(first, outcome.submit), outcome.start, outcome.finish,
                                 outcome.nb_resources, outcome.success, outcome.killed,
                                 deadline, outcome.alloc)
        out.append(outcome)
    return out


def bounded_slowdown(wait: np.ndarray, run: np.ndarray, tau: float) -> np.ndarray:
    """Element-wise bounded slowdown ``max((wait + run) / max(run, tau), 1)``.

    >>> bounded_slowdown(np.array([0.0, 90.0]), np.array([5.0, 10.0]), 10.0).tolist()
    [1.0, 10.0]
    """
    return np.maximum((wait + run) / np.maximum(run, tau), 1.0)


def utilization_per_group(outcomes: Sequence[JobOutcome], groups: Mapping[str, MachineSet],
                          span: float) -> dict[str, float]:
    """Allocated machine-seconds inside each group over ``len(group) × span``.

    Per-machine busy time is summed on a difference array over each allocation's
    intervals. Runtime complexity: O(allocation intervals + machines + groups × its
    intervals).

    >>> jobs = [JobOutcome(0.0, 0.0, 10.0, 2, True, alloc=MachineSet.span(0, 1)),
    ...         JobOutcome(0.0, 0.0, 5.0, 1, True, alloc=MachineSet.of(2))]
    >>> utilization_per_group(jobs, {"a": MachineSet.span(0, 1), "b": MachineSet.span(2, 3)}, 10.0)
    {'a': 1.0, 'b': 0.25}
    """
    if span <= 0 or not groups:
        return {name: 0.0 for name in groups}
    top = max((g.max() for g in groups.values() if g), default=-1) + 2
    diff = np.zeros(top + 1)
    for o in outcomes:
        if o.alloc is None or o.start is None or o.finish is None:
            continue
        run = o.finish - o.start
        for inf, sup in o.alloc.intervals():
            if inf < top:
                diff[inf] += run
                diff[min(sup + 1, top)] -= run
    per_machine = np.cumsum(diff)[:top]
    prefix = np.concatenate(([0.0], np.cumsum(per_machine)))  # busy time of machines < m
    out = {}
    for name, group in groups.items():
        total = sum(float(prefix[sup + 1] - prefix[inf]) for inf, sup in group.intervals())
        out[name] = total / (len(group) * span) if len(group) else 0.0
    return out


def compute_metrics(outcomes: Sequence[JobOutcome], *, nb_machines: int, tau: float = 10.0,
                    scheduler_time_s: float = 0.0, nb_decisions: int = 0,
                    groups: Mapping[str, MachineSet] | None = None) -> dict[str, Any]:
    """The metrics summary of a run (what ``metrics.json`` holds).

    ``groups`` (name -> machines) adds ``utilization_per_group``.
    Runtime complexity: O(n) with numpy.

    >>> m = compute_metrics([JobOutcome(0.0, 0.0, 10.0, 2, True),
    ...                      JobOutcome(0.0, 10.0, 20.0, 2, True)], nb_machines=2)
    >>> m["mean_waiting_time"], m["max_bounded_slowdown"], m["utilization"]
    (5.0, 2.0, 1.0)
    """
    ran = [o for o in outcomes if o.start is not None and o.finish is not None]
    nb_rejected = sum(1 for o in outcomes if o.start is None)
    submit = np.fromiter((o.submit for o in ran), float, len(ran))
    start = np.fromiter((o.start for o in ran), float, len(ran))  # type: ignore[misc]
    finish = np.fromiter((o.finish for o in ran), float, len(ran))  # type: ignore[misc]
    res = np.fromiter((o.nb_resources for o in ran), float, len(ran))
    wait = start - submit
    run = finish - start
    turnaround = finish - submit
    bsld = bounded_slowdown(wait, run, tau)
    first_submit = min((o.submit for o in outcomes), default=0.0)
    last_end = float(finish.max()) if len(finish) else first_submit
    span = last_end - first_submit
    late = [(o.finish - o.deadline) for o in ran if o.deadline is not None]  # type: ignore[operator]
    tardiness = [max(x, 0.0) for x in late]

    def _stat(values: np.ndarray, fn: str) -> float:
        return float(getattr(values, fn)()) if len(values) else 0.0

    return {
        "nb_jobs": len(outcomes),
        "nb_jobs_finished": len(ran),
        "nb_jobs_success": sum(1 for o in ran if o.success),
        "nb_jobs_killed": sum(1 for o in ran if o.killed),
        "nb_jobs_rejected": nb_rejected,
        "makespan": last_end,
        "mean_waiting_time": _stat(wait, "mean"),
        "max_waiting_time": _stat(wait, "max"),
        "mean_turnaround_time": _stat(turnaround, "mean"),
        "max_turnaround_time": _stat(turnaround, "max"),
        "mean_bounded_slowdown": _stat(bsld, "mean"),
        "max_bounded_slowdown": _stat(bsld, "max"),
        "bsld_tau": tau,
        "utilization": float((res * run).sum() / (nb_machines * span))
        if span > 0 and nb_machines else 0.0,
        "nb_jobs_with_deadline": len(late),
        "nb_late_jobs": sum(1 for x in late if x > 0),
        "total_tardiness": float(sum(tardiness)),
        "max_tardiness": float(max(tardiness, default=0.0)),
        "mean_tardiness": float(sum(tardiness)) / len(tardiness) if tardiness else 0.0,
        "nb_rejected_with_deadline": sum(1 for o in outcomes
                                         if o.start is None and o.deadline is not None),
        "scheduler_time_s": scheduler_time_s,
        "decisions_per_second": nb_decisions / scheduler_time_s if scheduler_time_s > 0 else None,
        **({"utilization_per_group": utilization_per_group(ran, groups, span)}
           if groups else {}),
    }
