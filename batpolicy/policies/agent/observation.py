"""What a learning scheduler sees at a decision point: a window of waiting jobs and the machines.

The observation of :class:`Observer` is the one both the Gymnasium environment
(:mod:`batpolicy.gym`) and ``--policy agent:...`` beside Batsim build, from the policy's
read-only view, so an agent trained offline reads the same numbers beside Batsim. It is a
dict of fixed-shape numpy arrays (``W`` = window, ``M`` = machines):

- ``jobs`` (W, len(JOB_FEATURES)) float64: the first ``W`` waiting jobs in submission
  order (the queue of Feitelson & Rudolph's FCFS; RLScheduler, Zhang et al., SC 2020,
  §3.2, observes the same window of its queue), one row each, zeros past the last job;
- ``job_mask`` (W,) int8: 1 where a row holds a job;
- ``machines`` (M, len(MACHINE_FEATURES)) float64: each compute machine by Batsim id;
- ``cluster`` (len(CLUSTER_FEATURES),) float64: totals.

Times are seconds in physical units (no scaling: the agent or a Gymnasium wrapper
normalises); ``-1`` where a value is unknown (a job without walltime, a running job
without expected end). The action mask (``W + 1`` entries, int8) has a 1 for each row
whose job fits the free machines now, and a last 1 for "wait for the next event".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from batpolicy.protocol.intervals import MachineSet
from batpolicy.scheduler.jobs import Job
from batpolicy.scheduler.view import PolicyView

__all__ = ["CLUSTER_FEATURES", "JOB_FEATURES", "MACHINE_FEATURES", "Observer"]

#: Columns of ``obs["jobs"]``: requested machines, walltime (s, -1: none), time waited so
#: far (s), 1 if it fits the free machines now, deadline - now (s, 0 without deadline),
#: 1 if it has a deadline, 1 for a GPU job (``job_type`` "gpu"), its group (1 + index of
#: the platform group named by ``preferred``, else ``origin``; 0: none), its computation
#: share K and per-processor bandwidth (co-allocation model, -1: absent).
JOB_FEATURES = ("res", "walltime", "wait", "fits", "deadline_slack", "has_deadline", "gpu",
                "group", "comp_share", "ppbw")
#: Columns of ``obs["machines"]``: 1 if idle and available, 1 if available, time until the
#: running job's expected end (s; 0 idle, -1 unknown), 1 for a GPU machine.
MACHINE_FEATURES = ("free", "available", "remaining", "gpu")
#: ``obs["cluster"]``: simulated time (s), free machines, waiting jobs (all, not only the
#: window's), running jobs, machines the waiting jobs ask for in all.
CLUSTER_FEATURES = ("now", "nb_free", "nb_waiting", "nb_running", "waiting_res")

_RES, _WALLTIME, _WAIT, _FITS, _SLACK, _HAS_DEADLINE = range(6)


class Observer:
    """Builds observations and action masks for one platform; keeps the machines' ends.

    ``fits(job, free)`` says whether a job can start on ``free`` now (the policy's
    allocator). The caller tells :meth:`started` and :meth:`ended` so that each
    machine's expected end is known without scanning the running jobs.

    Runtime complexity: O(W + M) per observation (numpy fills), O(1) per job row after
    its first observation.
    """

    def __init__(self, window: int, view: PolicyView,
                 fits: Callable[[Job, MachineSet], bool]) -> None:
        if window < 1:
            raise ValueError(f"the window must hold at least one job, got {window}")
        self.window = window
        self.nb_machines = n = view.nb_machines
        self._fits = fits
        platform = view.platform
        self._groups = {name: i + 1 for i, name in enumerate(getattr(platform, "groups", {}))}
        self._ends = np.full(n, np.nan)  # each machine's running job's expected end
        self._gpu = np.array([float(m.gpu) for m in platform.machines[:n]]) \
            if len(platform.machines) >= n else np.zeros(n)
        self._rows: dict[str, tuple[float, ...]] = {}
        self._subtimes: dict[str, float] = {}
        self._deadlines: dict[str, float] = {}

    # ------------------------------------------------------------ machines' ends
    def started(self, job: Job, alloc: MachineSet, now: float) -> None:
        """``job`` starts on ``alloc`` now: its machines end at now + walltime."""
        end = now + job.walltime if job.walltime is not None else math.inf
        for inf, sup in alloc.intervals():
            self._ends[inf:sup + 1] = end
        self.forget(job)

    def ended(self, alloc: MachineSet | None) -> None:
        """A job on ``alloc`` ended: its machines have no expected end any more."""
        if alloc is not None:
            for inf, sup in alloc.intervals():
                self._ends[inf:sup + 1] = np.nan

    def forget(self, job: Job) -> None:
        """Drop the job's cached row (it left the queue)."""
        self._rows.pop(job.id, None)

    # ------------------------------------------------------------ observation
    def window_jobs(self, view: PolicyView, skip: set[str] | frozenset[str]) -> list[Job]:
        """The first ``window`` waiting jobs in submission order, but those in ``skip``.

        Runtime complexity: O(window + len(skip)).
        """
        out: list[Job] = []
        size = self.window
        for job in view.waiting.values():
            if skip and job.id in skip:
                continue
            out.append(job)
            if len(out) == size:
                break
        return out

    def _row(self, job: Job) -> tuple[float, ...]:
        row = self._rows.get(job.id)
        if row is None:
            deadline = job.deadline
            group = job.preferred or job.origin
            row = (float(job.res), -1.0 if job.walltime is None else float(job.walltime),
                   0.0, 0.0, 0.0, 0.0 if deadline is None else 1.0,
                   1.0 if job.job_type == "gpu" else 0.0,
                   float(self._groups.get(group, 0)) if group is not None else 0.0,
                   -1.0 if job.comp_share is None else float(job.comp_share),
                   -1.0 if job.ppbw is None else float(job.ppbw))
            self._rows[job.id] = row
            self._subtimes[job.id] = job.subtime
            if deadline is not None:
                self._deadlines[job.id] = deadline
        return row

    def observe(self, now: float, view: PolicyView, free: MachineSet, jobs: list[Job],
                nb_waiting: int, waiting_res: float) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """The observation and action mask with ``jobs`` in the window and ``free`` idle.

        ``nb_waiting`` and ``waiting_res`` are the queue's totals (the caller's, which
        knows the jobs it already started in this message). Runtime complexity: O(W + M).
        """
        w = self.window
        table = np.zeros((w, len(JOB_FEATURES)))
        mask = np.zeros(w + 1, dtype=np.int8)
        mask[w] = 1
        present = np.zeros(w, dtype=np.int8)
        k = len(jobs)
        if k:
            table[:k] = [self._row(job) for job in jobs]
            present[:k] = 1
            subtimes = self._subtimes
            table[:k, _WAIT] = now - np.fromiter((subtimes[j.id] for j in jobs), float, k)
            deadlines = self._deadlines
            if deadlines:
                table[:k, _SLACK] = [deadlines[j.id] - now if j.id in deadlines else 0.0
                                     for j in jobs]
            fits = self._fits
            for i, job in enumerate(jobs):
                if fits(job, free):
                    mask[i] = 1
            table[:k, _FITS] = mask[:k]
        n = self.nb_machines
        machines = np.zeros((n, len(MACHINE_FEATURES)))
        for inf, sup in free.intervals():
            machines[inf:sup + 1, 0] = 1.0
        machines[:, 1] = 1.0
        for inf, sup in view.unavailable.intervals():
            machines[inf:sup + 1, 1] = 0.0
        # a job past its expected end ends at this very instant: 0 s left, as EASY counts it
        remaining = np.fmax(self._ends - now, 0.0)  # fmax: nan (no job) gives 0
        remaining[np.isinf(remaining)] = -1.0
        machines[:, 2] = remaining
        machines[:, 3] = self._gpu
        cluster = np.array([now, float(len(free)), float(nb_waiting),
                            float(len(view.running)), waiting_res])
        return {"jobs": table, "job_mask": present, "machines": machines,
                "cluster": cluster}, mask


def spaces_bounds(window: int, nb_machines: int) -> Mapping[str, Any]:
    """Shapes and dtypes of the observation's arrays (for Gymnasium's spaces)."""
    return {"jobs": ((window, len(JOB_FEATURES)), np.float64),
            "job_mask": ((window,), np.int8),
            "machines": ((nb_machines, len(MACHINE_FEATURES)), np.float64),
            "cluster": ((len(CLUSTER_FEATURES),), np.float64)}
