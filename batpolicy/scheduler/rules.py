"""Batsim 4.2.1's decision rules, written once: the daemon's checker and the simulator use them.

Each rule is a pure predicate over the facts both sides have (a job's state, its ``res``,
its profile, an allocation's size, the clock): ``True`` when Batsim accepts, ``False`` when
Batsim 4.2.1 aborts. The caller turns a ``False`` into its own error:
:mod:`batpolicy.scheduler.checker` raises an :class:`~batpolicy.errors.InvalidDecision`
naming the policy, :mod:`batpolicy.simulator.engine.validation` one worded as Batsim's abort.
What only one side can know (which machine is busy with which job, which profile was
garbage-collected) stays with that side.

Sources: Batsim's protocol documentation (what Batsim validates per decision, job ids,
workload fields) and Batsim 4.2.1's ``src/server.cpp`` (decisions against its state),
``src/protocol.cpp`` (the message shape) and ``src/jobs.cpp`` (a job's description).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from batpolicy.protocol.types import JobState
from batpolicy.scheduler.jobs import JobStatus

__all__ = ["FINAL_STATES", "NO_EXECUTE_OPTIONS", "SIZE_FREE_PROFILE", "STATE_OF_STATUS",
           "TRANSITIONS", "allocation_size_ok", "at_most_one_execute_option", "awakes_in_future",
           "may_be_killed", "may_be_rejected", "may_start", "metadata_ok", "res_ok",
           "size_free", "state_of_status", "transition_allowed", "walltime_ok",
           "well_formed_job_id"]

#: The profile type whose allocation may have another size than ``res`` (server.cpp
#: ``server_on_execute_job``: PARALLEL_HOMOGENEOUS_TOTAL_AMOUNT).
SIZE_FREE_PROFILE = "parallel_homogeneous_total"
#: Profile types that run a sequence of sub-profiles (Batsim's SEQUENCE; ``composed``
#: is its JSON name).
_SEQUENCES = frozenset({"composed", "sequence"})

#: Batsim's final job states (``Job::is_complete``, jobs.cpp).
FINAL_STATES = frozenset({JobState.COMPLETED_SUCCESSFULLY, JobState.COMPLETED_FAILED,
                          JobState.COMPLETED_WALLTIME_REACHED, JobState.COMPLETED_KILLED})
#: CHANGE_JOB_STATE's allowed moves (server.cpp ``server_on_change_job_state``).
TRANSITIONS: dict[JobState, frozenset[JobState]] = {
    JobState.SUBMITTED: frozenset({JobState.RUNNING, JobState.REJECTED}),
    JobState.RUNNING: FINAL_STATES,
}

#: The Batsim job state a scheduler-side status stands for (a completed job: any final one).
STATE_OF_STATUS = {JobStatus.WAITING: JobState.SUBMITTED, JobStatus.RUNNING: JobState.RUNNING,
                    JobStatus.COMPLETED: JobState.COMPLETED_SUCCESSFULLY,
                    JobStatus.REJECTED: JobState.REJECTED}


def state_of_status(status: JobStatus) -> JobState:
    """The Batsim job state a scheduler-side status stands for (a completed job: any final).

    >>> state_of_status(JobStatus.WAITING).value
    'SUBMITTED'
    """
    return STATE_OF_STATUS[status]


def may_start(state: JobState) -> bool:
    """EXECUTE_JOB needs a SUBMITTED job: a job starts once, never after a rejection.

    server.cpp ``server_on_execute_job``: "Cannot execute job ...: its state is not
    JOB_STATE_SUBMITTED" (Batsim's protocol: decisions).
    """
    return state is JobState.SUBMITTED


def may_be_rejected(state: JobState) -> bool:
    """REJECT_JOB needs a SUBMITTED job ("submitted and not allocated yet").

    server.cpp ``server_on_reject_job`` (Batsim's protocol: decisions).
    """
    return state is JobState.SUBMITTED


def may_be_killed(state: JobState) -> bool:
    """KILL_JOB needs a job being executed or already complete.

    server.cpp ``server_on_kill_jobs``: "refers to a job not being executed nor completed"
    (Batsim's protocol: decisions, dynamic jobs).

    >>> may_be_killed(JobState.RUNNING), may_be_killed(JobState.SUBMITTED)
    (True, False)
    """
    return state is JobState.RUNNING or state in FINAL_STATES


def transition_allowed(current: JobState, target: JobState) -> bool:
    """CHANGE_JOB_STATE: SUBMITTED to RUNNING/REJECTED, RUNNING to a final state.

    server.cpp ``server_on_change_job_state`` (Batsim's protocol: decisions).

    >>> transition_allowed(JobState.SUBMITTED, JobState.REJECTED)
    True
    >>> transition_allowed(JobState.RUNNING, JobState.REJECTED)
    False
    """
    return target in TRANSITIONS.get(current, ())


#: The options of an EXECUTE_JOB that has none (nearly every one): a check may skip
#: :func:`at_most_one_execute_option` when ``(mapping, storage_mapping, additional_io_job)``
#: equals it.
NO_EXECUTE_OPTIONS = (None, None, None)


def at_most_one_execute_option(mapping: object, storage_mapping: object,
                               additional_io_job: object) -> bool:
    """EXECUTE_JOB's ``data`` holds at most one of mapping, storage_mapping, additional_io_job.

    protocol.cpp ``handle_execute_job`` (Batsim's protocol: decisions).
    """
    return ((mapping is not None) + (storage_mapping is not None)
            + (additional_io_job is not None)) <= 1


def size_free(profile: Mapping[str, Any] | None,
              definition: Callable[[str], Mapping[str, Any] | None]) -> bool:
    """Whether a job with this profile may get another number of machines than ``res``.

    Only a ``parallel_homogeneous_total`` profile, or a sequence of them, may: server.cpp
    ``server_on_execute_job`` ("Only PARALLEL_HOMOGENEOUS_TOTAL_AMOUNT profile, or a
    sequence of those profile"; Batsim's protocol: decisions). ``definition`` gives a sub-profile's
    JSON by name (``None`` if unknown).

    >>> defs = {"t": {"type": "parallel_homogeneous_total"}, "d": {"type": "delay"}}
    >>> size_free({"type": "composed", "seq": ["t", "t"]}, defs.get)
    True
    >>> size_free({"type": "composed", "seq": ["t", "d"]}, defs.get), size_free(None, defs.get)
    (False, False)
    """
    if not profile:
        return False
    kind = profile.get("type")
    if kind == SIZE_FREE_PROFILE:
        return True
    if kind in _SEQUENCES:
        return all((definition(str(s)) or {}).get("type") == SIZE_FREE_PROFILE
                   for s in profile.get("seq", ()))
    return False


def allocation_size_ok(res: int, nb_machines: int, mapping: Mapping[int, int] | None,
                       profile: Mapping[str, Any] | None,
                       definition: Callable[[str], Mapping[str, Any] | None]) -> bool:
    """EXECUTE_JOB gives ``res`` executors: a custom mapping's size, else the machine count.

    A size-free profile (:func:`size_free`) is exempt. server.cpp ``server_on_execute_job``
    (the two asserts on ``requested_nb_res``; Batsim's protocol: decisions).

    >>> allocation_size_ok(4, 2, None, {"type": "delay"}, {}.get)
    False
    >>> allocation_size_ok(4, 2, {0: 0, 1: 0, 2: 1, 3: 1}, {"type": "delay"}, {}.get)
    True
    """
    size = len(mapping) if mapping is not None else nb_machines
    return size == res or size_free(profile, definition)


def awakes_in_future(at: float, now: float) -> bool:
    """CALL_ME_LATER must name a time strictly after Batsim's clock.

    server.cpp ``server_on_call_me_later``: "You asked to be awaken in the past!"
    (Batsim's protocol: decisions).
    """
    return at > now


def well_formed_job_id(job_id: str) -> bool:
    """A job id is ``workload!name`` with exactly one ``!``.

    jobs.cpp ``JobIdentifier`` ("should be formatted as two '!'-separated parts";
    Batsim's protocol: job ids).

    >>> well_formed_job_id("w0!1"), well_formed_job_id("w0!1!2"), well_formed_job_id("1")
    (True, False, False)
    """
    return job_id.count("!") == 1


def res_ok(res: object) -> bool:
    """A job's ``res`` is a JSON integer >= 0 (jobs.cpp ``Job::from_json``).

    >>> res_ok(2), res_ok(True), res_ok(-1), res_ok(2.0)
    (True, False, False, False)
    """
    return isinstance(res, int) and not isinstance(res, bool) and res >= 0


def walltime_ok(walltime: object) -> bool:
    """A job's ``walltime`` is a finite number > 0, or -1 for none.

    jobs.cpp ``Job::from_json``: "should either be -1 (no walltime) or a strictly positive
    number" (Batsim's protocol: workloads, walltimes).

    >>> walltime_ok(-1), walltime_ok(10.5), walltime_ok(0), walltime_ok("5")
    (True, True, False, False)
    """
    if isinstance(walltime, bool) or not isinstance(walltime, (int, float)):
        return False
    return walltime == -1 or (walltime > 0 and math.isfinite(walltime))


def metadata_ok(metadata: str) -> bool:
    """SET_JOB_METADATA's string may not hold a double quote (it goes into jobs.csv).

    protocol.cpp ``handle_set_job_metadata`` (Batsim's protocol: decisions).
    """
    return '"' not in metadata
