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
from collections.abc import Callable

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
_NB = len(JOB_FEATURES)


class Observer:
    """Builds observations and action masks for one platform; keeps the machines' ends.

    ``fits(job, free)`` says whether a job can start on ``free`` now (None: when it asks
    for no more machines than are free, the lowest-ids allocator's rule, vectorised).
    The caller tells :meth:`started` and :meth:`ended` so that each machine's expected
    end and idleness are known without scanning the running jobs or the free set.

    Runtime complexity: O(W + M) per observation in numpy, plus O(W) Python work when
    the window's jobs changed since the previous observation.
    """

    def __init__(self, window: int, view: PolicyView,
                 fits: Callable[[Job, MachineSet], bool] | None = None) -> None:
        if window < 1:
            raise ValueError(f"the window must hold at least one job, got {window}")
        self.window = window
        self.nb_machines = n = view.nb_machines
        self._fits = fits
        platform = view.platform
        self._groups = {name: i + 1 for i, name in enumerate(getattr(platform, "groups", {}))}
        self._ends = np.full(n, np.nan)  # each machine's running job's expected end
        self._unavailable: MachineSet | None = None
        gpu = [float(m.gpu) for m in platform.machines[:n]]
        #: the machines' columns that change rarely: available, GPU
        self._machines = np.zeros((n, len(MACHINE_FEATURES)))
        self._machines[:, 1] = 1.0
        self._machines[:, 3] = gpu if len(gpu) == n else 0.0
        # static rows of the jobs seen waiting (JOB_FEATURES, subtime, deadline), by slot
        self._bank = np.zeros((max(64, 2 * window), _NB + 2))
        self._slots: dict[str, int] = {}
        self._spare: list[int] = []
        self._used = 0
        self._nb_deadlines = 0
        # the window of the previous observation: its jobs and their static columns
        self._key: tuple[Job, ...] = ()
        self._static = np.zeros((window, _NB))
        self._present = np.zeros(window, dtype=np.int8)
        self._subtimes = np.zeros(0)
        self._deadlines: np.ndarray | None = None
        self._res = np.zeros(0)

    # ------------------------------------------------------------ machines' ends
    def started(self, job: Job, alloc: MachineSet, now: float) -> None:
        """``job`` starts on ``alloc`` now: its machines end at now + walltime."""
        end = now + job.walltime if job.walltime is not None else math.inf
        for inf, sup in alloc.intervals():
            self._ends[inf:sup + 1] = end
        self.forget(job)

    def ended(self, alloc: MachineSet | None) -> None:
        """A job on ``alloc`` ended: its machines are idle again."""
        if alloc is not None:
            for inf, sup in alloc.intervals():
                self._ends[inf:sup + 1] = np.nan

    # ------------------------------------------------------------ observation
    def _slot(self, job: Job) -> int:
        """The job's row in the bank of static rows (filled on first sight). Amortised O(1)."""
        slot = self._slots.get(job.id)
        if slot is not None:
            return slot
        if self._spare:
            slot = self._spare.pop()
        else:
            slot = self._used
            self._used += 1
            if slot == len(self._bank):
                self._bank = np.concatenate([self._bank, np.zeros_like(self._bank)])
        group = job.preferred or job.origin
        self._bank[slot] = (
            float(job.res), -1.0 if job.walltime is None else float(job.walltime),
            0.0, 0.0, 0.0, 0.0 if job.deadline is None else 1.0,
            1.0 if job.job_type == "gpu" else 0.0,
            float(self._groups.get(group, 0)) if group is not None else 0.0,
            -1.0 if job.comp_share is None else float(job.comp_share),
            -1.0 if job.ppbw is None else float(job.ppbw),
            job.subtime, np.nan if job.deadline is None else job.deadline)
        if job.deadline is not None:
            self._nb_deadlines += 1
        self._slots[job.id] = slot
        return slot

    def forget(self, job: Job) -> None:
        """The job left the queue: its bank row is free again. O(1)."""
        slot = self._slots.pop(job.id, None)
        if slot is not None:
            self._spare.append(slot)
            if job.deadline is not None:
                self._nb_deadlines -= 1

    def _new_window(self, jobs: tuple[Job, ...]) -> None:
        """The static columns of a window whose jobs changed. O(W)."""
        k = len(jobs)
        slot = self._slot
        rows = self._bank[[slot(job) for job in jobs]]
        static = self._static
        static[:k] = rows[:, :_NB]
        static[k:] = 0.0
        self._subtimes = rows[:, _NB]
        self._deadlines = rows[:, _NB + 1] if self._nb_deadlines else None
        self._res = rows[:, _RES]
        self._present = np.zeros(self.window, dtype=np.int8)
        self._present[:k] = 1
        self._key = jobs

    def observe(self, now: float, view: PolicyView, free: MachineSet, jobs: tuple[Job, ...],
                nb_waiting: int, waiting_res: float) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """The observation and action mask with ``jobs`` in the window and ``free`` idle.

        ``nb_waiting`` and ``waiting_res`` are the queue's totals (the caller's, which
        knows the jobs it already started in this message). Runtime complexity: O(W + M).
        """
        if jobs != self._key:
            self._new_window(jobs)
        w = self.window
        k = len(jobs)
        table = self._static.copy()
        mask = np.zeros(w + 1, dtype=np.int8)
        mask[w] = 1
        nfree = len(free)
        if k:
            table[:k, _WAIT] = now - self._subtimes
            if self._deadlines is not None:
                slack = self._deadlines - now
                table[:k, _SLACK] = np.where(np.isnan(slack), 0.0, slack)
            if self._fits is None:
                fits = self._res <= nfree
            else:
                fits = [self._fits(job, free) for job in jobs]
            mask[:k] = fits
            table[:k, _FITS] = fits
        unavailable = view.unavailable
        if unavailable is not self._unavailable:  # a machine (un)available: rare
            self._machines[:, 1] = 1.0
            for inf, sup in unavailable.intervals():
                self._machines[inf:sup + 1, 1] = 0.0
            self._unavailable = unavailable
        machines = self._machines.copy()
        ends = self._ends
        np.multiply(np.isnan(ends), machines[:, 1], out=machines[:, 0])
        # a job past its expected end ends at this very instant: 0 s left, as EASY counts it
        remaining = np.fmax(ends - now, 0.0)  # fmax: nan (no job) gives 0
        remaining[remaining == math.inf] = -1.0
        machines[:, 2] = remaining
        cluster = np.array([now, nfree, nb_waiting, len(view.running), waiting_res],
                           dtype=np.float64)
        return {"jobs": table, "job_mask": self._present.copy(), "machines": machines,
                "cluster": cluster}, mask
