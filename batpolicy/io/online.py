"""Figures of a run computed as its jobs end, so that no job is kept once written.

:class:`ExactSum` adds floats exactly (the result is the correctly rounded sum of the
values, whatever their order: Shewchuk's partials as :func:`math.fsum` keeps them,
Python's ``Modules/mathmodule.c``), in O(1) memory; a mean is that sum over a count.
:class:`ScheduleStats` is what Batsim's ``schedule.csv`` needs of the jobs (its means
and maxima, ``export.cpp``); :class:`OnlineMetrics` is ``metrics.json``'s schedule part
(:func:`~batpolicy.scheduler.outcomes.compute_metrics`'s figures, the copies of a
killed job merged as :func:`~batpolicy.scheduler.outcomes.merge_copies` does),
fed one :class:`~batpolicy.io.result.JobRecord` at a time.

Memory: O(1) per run, plus the machines (utilisation per group) and, with dynamic jobs,
the records a later copy may replace (those that did not succeed), held until the end.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Mapping
from typing import Any

from batpolicy.protocol.intervals import MachineSet
from batpolicy.protocol.types import JobState
from batpolicy.scheduler.outcomes import parent_of

__all__ = ["NULL_RUNTIME", "ExactSum", "OnlineMetrics", "ScheduleStats"]

log = logging.getLogger(__name__)

_fsum = math.fsum
#: The runtime Batsim writes for a job that ran in null time (``jobs_execution.cpp``:
#: ``job->runtime = 1e-5l``), as a double (re-exported by :mod:`.result`).
NULL_RUNTIME = 1e-5
#: Jobs taken at once by the batched figures (a few hundred kB of floats at most).
_BATCH = 4096
_BATCH_VALUES = 4 * _BATCH
_KILLED = (JobState.COMPLETED_KILLED, JobState.COMPLETED_WALLTIME_REACHED)
_SUCCESS = JobState.COMPLETED_SUCCESSFULLY


class ExactSum:
    """The exact sum of floats added one at a time; :meth:`value` rounds it once.

    Values are buffered and folded every 512 into a few non-overlapping partials whose
    sum is exactly that of everything added (each fold: the correctly rounded remainder,
    then what that rounding left, until nothing is left), so :meth:`value` equals
    ``math.fsum`` of every value added, in any order.

    >>> s = ExactSum()
    >>> for x in [1e100, 1.0, -1e100, 1e-3] * 300:
    ...     s.add(x)
    >>> s.value() == math.fsum([1e100, 1.0, -1e100, 1e-3] * 300)
    True
    """

    __slots__ = ("_partials", "_buffer", "add")

    def __init__(self) -> None:
        self._partials: list[float] = []
        self._buffer: list[float] = []
        self.add = self._buffer.append  # O(1); folded in value() and every 512 values

    def fold(self) -> None:
        """Replace the buffer and partials by an exact, short list of partials."""
        items = self._partials + self._buffer
        self._buffer.clear()
        partials: list[float] = []
        rest = _fsum(items)
        while rest != 0.0 and math.isfinite(rest):
            partials.append(rest)
            items.append(-rest)
            rest = _fsum(items)
        self._partials = partials

    def value(self) -> float:
        """The correctly rounded sum of every value added. Runtime complexity: O(buffer)."""
        return _fsum(self._partials + self._buffer)

    def extend(self, values: list[float]) -> None:
        """Add many values, then fold them into the partials."""
        self._buffer.extend(values)
        self.fold()

    def maybe_fold(self) -> None:
        """Fold when the buffer holds 512 values (called by the owners after adding)."""
        if len(self._buffer) >= 512:
            self.fold()


class ScheduleStats:
    """``schedule.csv``'s means and maxima over the jobs that ran (Batsim's slowdown).

    As Batsim 4.2.1 computes them (``export.cpp``, ``JobsTracer::write_job`` and
    ``finalize``): each job's wait ``start - submission``, turnaround ``start + runtime -
    submission`` and slowdown ``turnaround / runtime`` in long double (a null runtime is
    ``1e-5l``), added one job after the other in the order the jobs ended to long double
    sums; a mean is the sum cast to double over every job, rejected ones included. A
    double computation differs in the last printed digit (seed 302: a mean slowdown of
    6.2e10, one ulp apart) and an exact sum prints 0.000000 where Batsim's rounded sum is
    a few ulps below 0 (``-0.000000``). Where numpy's ``longdouble`` is double (not
    x86), the figures are double's.
    """

    __slots__ = ("wait_sum", "turnaround_sum", "slowdown_sum", "max_wait", "max_turnaround",
                 "max_slowdown", "count", "_pending", "add")

    def __init__(self) -> None:
        #: The long double sums (numpy ``longdouble`` scalars, or 0.0 before any job).
        self.wait_sum: Any = 0.0
        self.turnaround_sum: Any = 0.0
        self.slowdown_sum: Any = 0.0
        self.max_wait = self.max_turnaround = self.max_slowdown = 0.0
        self.count = 0
        self._pending: list[float] = []  # start, runtime, submission of each job in turn
        #: ``add((start, runtime, submitted))``: one job that ran. O(1): the jobs are
        #: taken in batches (:meth:`flush`), with the same figures as one at a time.
        self.add = self._add

    def _add(self, start: float, runtime: float, submitted: float) -> None:
        pending = self._pending
        pending += (start, runtime, submitted)
        if len(pending) >= 3 * _BATCH:
            self.flush()

    def mean(self, total: Any, nb_jobs: int) -> float:
        """A long double sum over ``nb_jobs`` as Batsim divides it: cast to double first.

        >>> ScheduleStats().mean(0.0, 0)
        0.0
        """
        return float(total) / nb_jobs if nb_jobs else 0.0

    def flush(self) -> None:
        """Count the jobs added since the last flush (call before reading the figures).

        numpy's ``longdouble`` operations are the C++ ones element by element, and a
        cumulative sum adds in order, so batching changes no digit. Runtime complexity:
        O(jobs added).

        >>> stats = ScheduleStats()
        >>> stats.add(10.0, 5.0, 4.0); stats.add(20.0, 1e-5, 20.0); stats.flush()
        >>> stats.mean(stats.wait_sum, 2), stats.max_turnaround, stats.count
        (3.0, 11.0, 2)
        """
        pending = self._pending
        if not pending:
            return
        import numpy as np

        ld = np.longdouble
        start, runtime, submitted = np.array(pending).astype(ld).reshape(-1, 3).T
        pending.clear()
        runtime[runtime == ld(NULL_RUNTIME)] = ld("1e-5")  # job->runtime = 1e-5l
        wait = start - submitted
        turnaround = (start + runtime) - submitted
        with np.errstate(divide="ignore", invalid="ignore"):
            slowdown = turnaround / runtime
        self.wait_sum = np.cumsum(np.concatenate(([ld(self.wait_sum)], wait)))[-1]
        self.turnaround_sum = np.cumsum(
            np.concatenate(([ld(self.turnaround_sum)], turnaround)))[-1]
        self.slowdown_sum = np.cumsum(np.concatenate(([ld(self.slowdown_sum)], slowdown)))[-1]
        self.max_wait = max(self.max_wait, float(wait.max()))
        self.max_turnaround = max(self.max_turnaround, float(turnaround.max()))
        self.max_slowdown = max(self.max_slowdown, float(slowdown.max()))
        self.count += len(wait)


class OnlineMetrics:
    """``metrics.json``'s schedule figures, one job record at a time (docs/metrics.md).

    ``copies``: a later record may be a copy of this one (metadata ``parent=<id>``, a
    job killed and registered again: only with dynamic jobs); the records that did not
    succeed are then held until :meth:`metrics` and a copy replaces its original as
    :func:`~batpolicy.scheduler.outcomes.merge_copies` does. An original already
    counted when its copy ends (one that succeeded, or any without ``copies``) stays
    counted beside its copy: no policy copies such a job.
    """

    def __init__(self, *, nb_machines: int, tau: float = 10.0,
                 groups: Mapping[str, MachineSet] | None = None, copies: bool = False) -> None:
        self.nb_machines = nb_machines
        self.tau = tau
        self.copies = copies
        self.groups = dict(groups) if groups else {}
        self._top = max((g.max() for g in self.groups.values() if g), default=-1) + 2
        self._diff = [0.0] * (self._top + 1) if self.groups else None
        self.nb_records = 0
        self.nb_jobs = self.nb_finished = self.nb_success = self.nb_killed = 0
        self.nb_rejected = self.nb_rejected_with_deadline = 0
        self.first_submit = math.inf
        self.last_end = -math.inf
        self.waits, self.turnarounds, self.bslds = ExactSum(), ExactSum(), ExactSum()
        self.busy = ExactSum()  # allocated machine-seconds: res × run
        self.tardiness = ExactSum()
        self.max_wait = self.max_turnaround = self.max_bsld = self.max_tardiness = -math.inf
        self.nb_with_deadline = self.nb_late = 0
        self.rejected: Counter[str] = Counter()
        #: a job ran without a walltime: then a missing one explains no rejection
        self.ran_without_walltime = False
        #: copies: held records, id -> (outcome fields, root submit, root deadline)
        self._held: dict[str, tuple[tuple[Any, ...], float, float | None]] = {}
        self._replaced: set[str] = set()  # originals named before their record came
        #: jobs that ran, without a deadline, counted in batches (:meth:`_fold_batch`):
        #: submission, start, runtime, requested resources of each, one after the other
        self._batch: list[float] = []
        #: no copies, no groups: every such job may be batched
        self._plain = not copies and self._diff is None

    # ------------------------------------------------------------------ feeding
    def add(self, r: Any) -> None:
        """One :class:`~batpolicy.io.result.JobRecord`, in completion order. O(1)."""
        self.nb_records += 1
        start = r.start
        deadline = r.fields.deadline
        state = r.final_state
        metadata = r.metadata
        if (start is not None and deadline is None and self._plain
                and not (metadata and "parent" in metadata)):  # the common case: batched
            walltime = r.walltime
            if walltime is None or walltime <= 0:
                self.ran_without_walltime = True
            batch = self._batch
            batch += (r.submission_time, start, r.runtime, r.requested_resources)
            if state is _SUCCESS:
                self.nb_success += 1
            elif state in _KILLED:
                self.nb_killed += 1
            if len(batch) >= _BATCH_VALUES:
                self._fold_batch()
            return
        if start is None:
            self._rejection(r)
        elif not self.ran_without_walltime and (r.walltime is None or r.walltime <= 0):
            self.ran_without_walltime = True
        outcome = (r.submission_time, start,
                   None if start is None else start + r.runtime,
                   r.requested_resources, state is _SUCCESS, state in _KILLED, deadline,
                   r.alloc)
        parent = parent_of(metadata) if metadata and "parent" in metadata else None
        job_id = r.job_id
        if parent is None and not self._replaced and (not self.copies or state is _SUCCESS):
            self._fold(*outcome)  # the common case
            return
        if job_id in self._replaced:
            self._replaced.discard(job_id)
            return  # a copy of it came first and replaced it
        root_submit, root_deadline = outcome[0], None
        if parent is not None:
            held = self._held.pop(parent, None)
            if held is not None:
                root_submit, root_deadline = held[1], held[2]
            else:  # its record comes later (dropped then), or it succeeded and counts
                self._replaced.add(parent)
            outcome = (min(root_submit, outcome[0]), *outcome[1:6],
                       deadline if deadline is not None else root_deadline, outcome[7])
        if self.copies and state is not _SUCCESS:
            self._held[job_id] = (outcome, root_submit if parent is not None else outcome[0],
                                  root_deadline if parent is not None else deadline)
        else:
            self._fold(*outcome)

    def _rejection(self, r: Any) -> None:
        """Count a rejected record by its reason (as :func:`~.metrics.rejection_reasons`)."""
        res = r.requested_resources
        if res <= 0:
            self.rejected["no_machine"] += 1
        elif res > self.nb_machines:
            self.rejected["too_large"] += 1
        elif r.walltime is None or r.walltime <= 0:
            self.rejected["no_walltime"] += 1
        else:
            self.rejected["policy"] += 1

    def _fold(self, submit: float, start: float | None, finish: float | None, res: int,
              success: bool, killed: bool, deadline: float | None,
              alloc: MachineSet | None) -> None:
        """Count one user job (compute_metrics's figures)."""
        self.nb_jobs += 1
        if submit < self.first_submit:
            self.first_submit = submit
        if start is None or finish is None:
            self.nb_rejected += start is None
            if start is None and deadline is not None:
                self.nb_rejected_with_deadline += 1
            return
        self.nb_finished += 1
        self.nb_success += success
        self.nb_killed += killed
        wait = start - submit
        run = finish - start
        turnaround = finish - submit
        bsld = (wait + run) / (run if run > self.tau else self.tau)
        if bsld < 1.0:
            bsld = 1.0
        self.waits.add(wait)
        self.turnarounds.add(turnaround)
        self.bslds.add(bsld)
        self.busy.add(float(res) * run)
        if wait > self.max_wait:
            self.max_wait = wait
        if turnaround > self.max_turnaround:
            self.max_turnaround = turnaround
        if bsld > self.max_bsld:
            self.max_bsld = bsld
        if finish > self.last_end:
            self.last_end = finish
        if deadline is not None:
            self.nb_with_deadline += 1
            late = finish - deadline
            self.nb_late += late > 0
            tardy = late if late > 0.0 else 0.0
            self.tardiness.add(tardy)
            if tardy > self.max_tardiness:
                self.max_tardiness = tardy
            self.tardiness.maybe_fold()
        diff = self._diff
        if diff is not None and alloc is not None:
            top = self._top
            for inf, sup in alloc.intervals():
                if inf < top:
                    diff[inf] += run
                    diff[min(sup + 1, top)] -= run
        if not self.nb_finished & 511:
            self.waits.fold()
            self.turnarounds.fold()
            self.bslds.fold()
            self.busy.fold()

    def _fold_batch(self) -> None:
        """Count the batched jobs as :meth:`_fold` counts each (no deadline, no groups).

        The same IEEE operations in numpy's arrays (finish ``start + runtime``, run
        ``finish - start``, ...); sums exact and maxima order-free: no digit changes.
        """
        batch = self._batch
        if not batch:
            return
        import numpy as np

        submit, start, runtime, res = np.array(batch, dtype=np.float64).reshape(-1, 4).T
        batch.clear()
        n = len(submit)
        self.nb_jobs += n
        self.nb_finished += n
        finish = start + runtime
        wait = start - submit
        run = finish - start
        turnaround = finish - submit
        bsld = np.maximum((wait + run) / np.maximum(run, self.tau), 1.0)
        self.first_submit = min(self.first_submit, float(submit.min()))
        self.last_end = max(self.last_end, float(finish.max()))
        self.waits.extend(wait.tolist())
        self.turnarounds.extend(turnaround.tolist())
        self.bslds.extend(bsld.tolist())
        self.busy.extend((res * run).tolist())
        self.max_wait = max(self.max_wait, float(wait.max()))
        self.max_turnaround = max(self.max_turnaround, float(turnaround.max()))
        self.max_bsld = max(self.max_bsld, float(bsld.max()))

    # ------------------------------------------------------------------ reading
    def metrics(self) -> dict[str, Any]:
        """The figures so far, as :func:`~batpolicy.scheduler.outcomes.compute_metrics`.

        Folds the held records first (a run that stopped early counts them as they are).
        """
        self._fold_batch()
        for outcome, _, _ in self._held.values():
            self._fold(*outcome)
        self._held.clear()
        n = self.nb_finished
        first = self.first_submit if self.nb_jobs else 0.0
        last = self.last_end if n else first
        span = last - first
        tardy = self.tardiness.value()
        out: dict[str, Any] = {
            "nb_jobs": self.nb_jobs,
            "nb_jobs_finished": n,
            "nb_jobs_success": self.nb_success,
            "nb_jobs_killed": self.nb_killed,
            "nb_jobs_rejected": self.nb_rejected,
            "makespan": last,
            "mean_waiting_time": self.waits.value() / n if n else 0.0,
            "max_waiting_time": self.max_wait if n else 0.0,
            "mean_turnaround_time": self.turnarounds.value() / n if n else 0.0,
            "max_turnaround_time": self.max_turnaround if n else 0.0,
            "mean_bounded_slowdown": self.bslds.value() / n if n else 0.0,
            "max_bounded_slowdown": self.max_bsld if n else 0.0,
            "bsld_tau": self.tau,
            "utilization": self.busy.value() / (self.nb_machines * span)
            if span > 0 and self.nb_machines else 0.0,
            "nb_jobs_with_deadline": self.nb_with_deadline,
            "nb_late_jobs": self.nb_late,
            "total_tardiness": tardy,
            "max_tardiness": self.max_tardiness if self.nb_with_deadline else 0.0,
            "mean_tardiness": tardy / self.nb_with_deadline if self.nb_with_deadline else 0.0,
            "nb_rejected_with_deadline": self.nb_rejected_with_deadline,
        }
        if self.groups:
            out["utilization_per_group"] = self._per_group(span)
        return out

    def _per_group(self, span: float) -> dict[str, float]:
        """Utilisation inside each group.

        As :func:`~batpolicy.scheduler.outcomes.utilization_per_group` computes it.
        """
        if span <= 0:
            return {name: 0.0 for name in self.groups}
        import numpy as np

        top = self._top
        per_machine = np.cumsum(np.array(self._diff))[:top]
        prefix = np.concatenate(([0.0], np.cumsum(per_machine)))
        out = {}
        for name, group in self.groups.items():
            total = sum(float(prefix[sup + 1] - prefix[inf]) for inf, sup in group.intervals())
            out[name] = total / (len(group) * span) if len(group) else 0.0
        return out

    def rejection_reasons(self) -> dict[str, int]:
        """Rejected records by reason (docs/metrics.md ``rejected_by_reason``), sorted.

        As :func:`~batpolicy.io.metrics.rejection_reasons`: once a job ran without a
        walltime, the rejections of jobs without one are the policy's.
        """
        reasons = Counter(self.rejected)
        if self.ran_without_walltime and reasons["no_walltime"]:
            reasons["policy"] += reasons.pop("no_walltime")
        return dict(sorted((k, n) for k, n in reasons.items() if n))

