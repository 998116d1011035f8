"""``metrics.json``: the summary a run writes beside Batsim's outputs (docs/metrics.md).

:func:`run_metrics` counts each user job once (a killed-and-resubmitted job as its last
copy, :func:`~batpolicy.scheduler.outcomes.merge_copies`), computes the scheduling
metrics (:func:`~batpolicy.scheduler.outcomes.compute_metrics`), adds the run's
costs, the policy's own ``stats()`` under ``"policy_stats"``, and ``"error"`` when the
run stopped on one; :func:`write_json` replaces the file atomically.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from batpolicy.io.online import OnlineMetrics
from batpolicy.io.result import JobRecord, SimResult
from batpolicy.protocol.intervals import MachineSet
from batpolicy.protocol.types import JobState
from batpolicy.scheduler.outcomes import JobOutcome, merge_copies, parent_of
from batpolicy.scheduler.stop_signals import stopped_by

__all__ = ["job_outcomes", "run_metrics", "write_json"]

_KILLED = (JobState.COMPLETED_KILLED, JobState.COMPLETED_WALLTIME_REACHED)
#: With energy (-E): the totals of Batsim's schedule.csv, under its names.
ENERGY_KEYS = ("consumed_joules", "nb_machine_switches", "nb_grouped_switches",
               "time_computing", "time_idle", "time_sleeping", "time_switching_off",
               "time_switching_on")

def job_outcomes(records: Sequence[JobRecord]) -> list[JobOutcome]:
    """One outcome per user job: a killed job's copies merged into it (:func:`merge_copies`).

    The (id, metadata, outcome) triples :func:`merge_copies` takes are built only when a
    record's metadata names a parent (a policy resubmitted a job); otherwise the outcomes
    are the records', in order. Runtime complexity: O(n).
    """
    outcomes = []
    append = outcomes.append
    copies = False
    for r in records:
        if r.start is None:
            append(JobOutcome(r.submission_time, None, None, r.requested_resources, False,
                              False, r.fields.deadline))
        else:
            append(JobOutcome(r.submission_time, r.start, r.completion_time,
                              r.requested_resources, r.success, r.final_state in _KILLED,
                              r.fields.deadline, r.alloc))
        if r.metadata and parent_of(r.metadata) is not None:
            copies = True
    if not copies:
        return outcomes
    return merge_copies([(r.job_id, r.metadata, outcome)
                         for r, outcome in zip(records, outcomes, strict=True)])


def simulated_groups(groups: Mapping[str, MachineSet] | None, nb_machines: int
                     ) -> dict[str, MachineSet] | None:
    """The groups cut to the simulated machines (``--mmax``); empty ones dropped."""
    if groups and nb_machines:
        simulated = MachineSet.span(0, nb_machines - 1)
        return {name: g & simulated for name, g in groups.items() if g & simulated}
    return dict(groups) if groups else None


def online_metrics(result: SimResult, tau: float, groups: Mapping[str, MachineSet] | None,
                   copies: bool) -> OnlineMetrics:
    """An empty :class:`OnlineMetrics` for a run whose totals are ``result``'s.

    Feed it each record as it ends (``copies``: a later record may replace an earlier
    one, with dynamic jobs) and give it to :func:`run_metrics`.
    """
    return OnlineMetrics(nb_machines=result.nb_machines, tau=tau,
                         groups=simulated_groups(groups, result.nb_machines), copies=copies)


def run_metrics(result: SimResult, wall: float, tau: float, error: BaseException | None,
             describe: Mapping[str, Any] | None,
             policy_stats: Callable[[], dict[str, Any]] | None,
             nb_decisions: Callable[[], int] | None,
             groups: Mapping[str, MachineSet] | None = None,
             online: OnlineMetrics | None = None) -> dict[str, Any]:
    """``metrics.json``'s content for ``result`` (keys: docs/metrics.md).

    ``describe`` (policy, params, inputs...) comes first; ``groups`` (name -> machines)
    adds utilisation per group; ``policy_stats`` and ``nb_decisions`` are read from the
    driver. ``online``: the figures gathered as the jobs ended (:func:`online_metrics`,
    when the run does not keep its records); else they are taken from
    ``result.records``. Runtime complexity: O(1) with ``online``, else O(records).
    """
    decisions = nb_decisions() if nb_decisions is not None else 0
    metrics: dict[str, Any] = dict(describe or {})
    if online is None:
        online = online_metrics(result, tau, groups, copies=True)
        for record in result.records:
            online.add(record)
    scheduler_time = result.scheduling_time
    nb_records = result.nb_records or len(result.records)
    metrics.update(online.metrics())
    metrics.update({
        "scheduler_time_s": scheduler_time,
        "decisions_per_second": decisions / scheduler_time if scheduler_time > 0 else None,
        "nb_machines": result.nb_machines,
        "nb_job_records": nb_records,
        # submitted or registered but not ended: 0 unless the run stopped early
        "nb_jobs_open": result.nb_jobs - nb_records,
        "nb_messages": result.nb_messages,
        "nb_decisions": decisions,
        "simulated_time_s": result.end_time,
        "wall_time_s": wall,
        "jobs_per_second": nb_records / wall if wall > 0 else None,
        "complete": result.complete and error is None,
        "stopped_by": stopped_by(error),
    })
    if result.energy:  # Batsim's -E totals, as its schedule.csv states them
        metrics.update({key: getattr(result, key) for key in ENERGY_KEYS})
    rejected = online.rejection_reasons()
    if rejected:
        metrics["rejected_by_reason"] = rejected
    if policy_stats is not None:
        try:
            metrics["policy_stats"] = policy_stats()
        except Exception as exc:  # a broken stats() must not hide the run's outputs
            metrics["policy_stats_error"] = f"{type(exc).__name__}: {exc}"
    if error is not None:
        metrics["error"] = ("interrupted" if isinstance(error, KeyboardInterrupt)
                            else f"{type(error).__name__}: {error}")
    return metrics


def rejection_reasons(records: Sequence[JobRecord], nb_machines: int) -> dict[str, int]:
    """Rejected jobs counted by what in the job explains it, for the run's warning.

    ``no_walltime`` (EASY and conservative backfilling reject those by default, as
    batsched does), ``no_machine`` (a job asking for 0 machines), ``too_large`` (more
    machines than the platform has), else ``policy`` (the policy's own choice, e.g. a
    deadline it cannot meet). A missing walltime explains nothing when the run started
    jobs without one (N-step search runs them all and kills the unprofitable ones): those
    rejections are the policy's. Runtime complexity: O(records).

    >>> r = JobRecord("w0!1", "p", 0.0, 2, None, JobState.REJECTED)
    >>> rejection_reasons([r], 4)
    {'no_walltime': 1}
    >>> ran = JobRecord("w0!2", "p", 0.0, 2, None, JobState.COMPLETED_SUCCESSFULLY, start=0.0,
    ...                 runtime=1.0, finish=1.0)
    >>> rejection_reasons([r, ran], 4)
    {'policy': 1}
    """
    reasons: Counter[str] = Counter()
    runs_without_walltime = any(r.start is not None and (r.walltime is None or r.walltime <= 0)
                                for r in records)
    for r in records:
        if r.start is not None:
            continue
        if r.requested_resources <= 0:
            reasons["no_machine"] += 1
        elif r.requested_resources > nb_machines:
            reasons["too_large"] += 1
        elif (r.walltime is None or r.walltime <= 0) and not runs_without_walltime:
            reasons["no_walltime"] += 1
        else:
            reasons["policy"] += 1
    return dict(sorted(reasons.items()))


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` as sorted, indented JSON; the file is replaced whole (no half file)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
    tmp.replace(path)
