"""Batsim 4.2.1's checks of the scheduler's decisions, against Batsim's own bookkeeping.

Every function raises :class:`~batpolicy.errors.InvalidDecision` exactly where Batsim
4.2.1 aborts (``src/server.cpp``, ``src/protocol.cpp``; Batsim's protocol: decisions), naming the
decision, the job, the resources and the rule. The rules the daemon's checker applies too
are written once, in :mod:`batpolicy.scheduler.rules`; here they are worded as Batsim's
abort. They read the Batsim side only, never the scheduler's state: a scheduler that
believes something Batsim does not is caught here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from batpolicy.errors import InputError, InvalidDecision
from batpolicy.protocol import types as t
from batpolicy.protocol.intervals import MachineSet
from batpolicy.protocol.types import EventType, JobState
from batpolicy.scheduler import rules
from batpolicy.simulator.options import SimOptions
from batpolicy.simulator.records import ProfileTable, SimJob, SimMachines

__all__ = ["BatsimView", "check_call_me_later", "check_change_job_state", "check_energy",
           "check_execute", "check_io_job", "check_kill", "check_metadata", "check_query",
           "check_register_job",
           "check_register_profile", "check_registration_notify", "check_reject",
           "check_set_resource_state", "check_to_job_msg", "fail"]

_EXECUTE_JOB = EventType.EXECUTE_JOB.value
_REJECT_JOB = EventType.REJECT_JOB.value
_KILL_JOB = EventType.KILL_JOB.value
_CALL_ME_LATER = EventType.CALL_ME_LATER.value
_REGISTER_PROFILE = EventType.REGISTER_PROFILE.value
_REGISTER_JOB = EventType.REGISTER_JOB.value
_SET_JOB_METADATA = EventType.SET_JOB_METADATA.value
_CHANGE_JOB_STATE = EventType.CHANGE_JOB_STATE.value
_SET_RESOURCE_STATE = EventType.SET_RESOURCE_STATE.value
_QUERY = EventType.QUERY.value
_TO_JOB_MSG = EventType.TO_JOB_MSG.value
_NOTIFY = EventType.NOTIFY.value


class BatsimView(Protocol):
    """What the checks read of the Batsim side."""

    now: float
    options: SimOptions
    jobs: dict[str, SimJob]
    tables: dict[str, ProfileTable]
    machines: SimMachines
    registration_finished: bool

    def ever_met(self, job_id: str) -> bool:
        """Whether Batsim met this id (static jobs, registered jobs, deleted ones)."""


def fail(kind: str, rule: str, now: float, job_id: str | None = None,
         resources: object = None) -> InvalidDecision:
    """Build the error for decision ``kind`` breaking ``rule`` at time ``now``.

    >>> str(fail(_REJECT_JOB, "the job must be submitted", 3.0, "w0!1"))
    "job 'w0!1': REJECT_JOB refused at t=3.0 (Batsim 4.2.1 aborts): the job must be submitted"
    """
    return InvalidDecision(f"{kind} refused at t={now} (Batsim 4.2.1 aborts): {rule}",
                           job_id=job_id,
                           resources=None if resources is None else str(resources))


def _known(view: BatsimView, kind: str, job_id: str) -> SimJob:
    job = view.jobs.get(job_id)
    if job is not None:
        return job
    if view.ever_met(job_id):
        rule = ("the job is not submitted yet" if _static_pending(view, job_id) else
                "Batsim has forgotten the job: its end was already reported (since "
                "Batsim 4.0 a job is freed once its JOB_COMPLETED, or its rejection, is sent)")
    else:
        rule = "no job with this id was ever submitted or registered"
    raise fail(kind, rule, view.now, job_id)


def _static_pending(view: BatsimView, job_id: str) -> bool:
    pending = getattr(view, "is_pending_static", None)
    return bool(pending and pending(job_id))


def check_execute(view: BatsimView, d: t.ExecuteJob) -> SimJob:
    """EXECUTE_JOB: a submitted job, free available machines, ``res`` of them.

    Runtime complexity: O(intervals of the allocation).
    """
    job = view.jobs.get(d.job_id)
    if job is None:
        job = _known(view, _EXECUTE_JOB, d.job_id)
    if not rules.may_start(job.state):
        raise fail(_EXECUTE_JOB, f"the job is {job.state.value}, not SUBMITTED (a job starts "
                   "once, and only if submitted and not rejected)", view.now, d.job_id, d.alloc)
    alloc = d.alloc
    options = (d.mapping, d.storage_mapping, d.additional_io_job)
    if options != rules.NO_EXECUTE_OPTIONS and not rules.at_most_one_execute_option(*options):
        raise fail(_EXECUTE_JOB, "'data' holds job_id, alloc and at most one of mapping, "
                   "storage_mapping, additional_io_job", view.now, d.job_id, alloc)
    if not alloc:
        raise fail(_EXECUTE_JOB, "the allocation is empty", view.now, d.job_id, alloc)
    machines = view.machines
    if not machines.exist(alloc):
        raise fail(_EXECUTE_JOB, f"the allocation names machines that do not exist (the "
                   f"platform has machines 0-{machines.n - 1})", view.now, d.job_id, alloc)
    if not machines.all_free(alloc) and not (view.options.compute_sharing
                                             and not machines.unavailable_in(alloc)):
        busy = machines.busy_in(alloc)
        if busy:
            owners = sorted(j.id for j in view.jobs.values()
                            if j.state is JobState.RUNNING and j.alloc is not None
                            and j.alloc & busy)
            raise fail(_EXECUTE_JOB, f"machines {busy} are computing {', '.join(owners)} and "
                       "compute sharing is disabled", view.now, d.job_id, alloc)
        raise fail(_EXECUTE_JOB, f"machines {machines.unavailable_in(alloc)} are unavailable "
                   "(neither idle nor computing)", view.now, d.job_id, alloc)
    if d.mapping is not None:
        ranks = sorted(d.mapping)
        if ranks != list(range(len(ranks))) or any(
                not 0 <= v < len(alloc) for v in d.mapping.values()):
            raise fail(_EXECUTE_JOB, "a mapping gives every executor rank 0..n-1 an index "
                       "within the allocation", view.now, d.job_id, alloc)
    if d.mapping is None and len(alloc) == job.res:  # the usual case: no profile lookup
        return job
    if not rules.allocation_size_ok(job.res, len(alloc), d.mapping, job.profile_data,
                                    view.tables[job.workload].definitions.get):
        size = len(d.mapping) if d.mapping is not None else len(alloc)
        what = "custom mapping" if d.mapping is not None else "allocation"
        raise fail(_EXECUTE_JOB, f"the {what} has {size} machines, the job requests "
                   f"{job.res} (only parallel_homogeneous_total profiles may differ)",
                   view.now, d.job_id, alloc)
    return job


def check_io_job(view: BatsimView, d: t.ExecuteJob, job: SimJob
                 ) -> tuple[str, tuple[int, ...], dict[str, Any] | None]:
    """EXECUTE_JOB's ``additional_io_job`` (``protocol.cpp``, ``handle_execute_job``).

    Returns (profile name, I/O machines in order, the profile to add or None). A given
    ``profile`` needs a name new to the job's workload; without it the name must exist;
    an I/O sequence needs a job sequence of as many elements; the job's model must merge
    I/O tasks (``ptask``), and checks each task can be merged (``check_io_job``).
    Runtime complexity: O(k) for k I/O machines, plus the job's program.
    """
    now = view.now
    model = job.model
    if not model.runs_io_jobs:
        raise fail(_EXECUTE_JOB, f"additional_io_job needs the parallel-task job model "
                   f"(ptask), the job runs on '{model.name}'", now,
                   d.job_id, d.alloc)
    io = d.additional_io_job
    if not isinstance(io, Mapping) or not isinstance(io.get("profile_name"), str):
        raise fail(_EXECUTE_JOB, "additional_io_job needs a string 'profile_name'", now,
                   d.job_id, d.alloc)
    name = io["profile_name"]
    raw_alloc = io.get("alloc")
    try:
        io_alloc = raw_alloc if isinstance(raw_alloc, MachineSet) else \
            MachineSet.parse(raw_alloc)  # type: ignore[arg-type]
    except (TypeError, ValueError, AttributeError) as exc:
        raise fail(_EXECUTE_JOB, f"bad IO allocation {raw_alloc!r} in additional_io_job "
                   f"({exc})", now, d.job_id, d.alloc) from None
    if not view.machines.exist(io_alloc):
        raise fail(_EXECUTE_JOB, f"additional_io_job's alloc names machines that do not exist "
                   f"(the platform has machines 0-{view.machines.n - 1})", now, d.job_id,
                   io_alloc)
    table = view.tables[job.workload]
    profile = io.get("profile")
    if profile is not None:
        if not isinstance(profile, Mapping):
            raise fail(_EXECUTE_JOB, "additional_io_job's 'profile' should be an object", now,
                       d.job_id, d.alloc)
        if table.exists(name):
            raise fail(_EXECUTE_JOB, f"additional_io_job: the given profile name '{name}' "
                       "already exists", now, d.job_id, d.alloc)
        definition: Mapping[str, Any] = profile
    elif not table.usable(name):
        raise fail(_EXECUTE_JOB, f"additional_io_job: the given profile name '{name}' does "
                   "not exist", now, d.job_id, d.alloc)
    else:
        definition = table.definition(name)
    if definition.get("type") in ("composed", "sequence"):
        if job.profile_data.get("type") not in ("composed", "sequence"):
            raise fail(_EXECUTE_JOB, f"additional_io_job: the job io profile is a sequence "
                       f"profile but the original job is '{job.profile_data.get('type')}': "
                       "they must have compatible profiles in order to be merged", now,
                       d.job_id, d.alloc)
        sizes = len(definition.get("seq", ())), len(job.profile_data.get("seq", ()))
        if sizes[0] != sizes[1]:
            raise fail(_EXECUTE_JOB, f"additional_io_job: IO profile sequence size "
                       f"({sizes[0]}) and job profile sequence size ({sizes[1]}) should be "
                       "the same", now, d.job_id, d.alloc)
    try:
        if profile is not None:
            model.check(job.workload, name, {**table.definitions, name: dict(profile)})
        model.check_io_job(job, name, view, definition)
    except InputError as exc:
        raise fail(_EXECUTE_JOB, str(exc), now, d.job_id, d.alloc) from None
    return name, tuple(io_alloc), None if profile is None else dict(profile)


def check_reject(view: BatsimView, d: t.RejectJob) -> SimJob:
    """REJECT_JOB: only a submitted, not started job. Runtime complexity: O(1)."""
    job = _known(view, _REJECT_JOB, d.job_id)
    if not rules.may_be_rejected(job.state):
        raise fail(_REJECT_JOB, f"the job is {job.state.value}; to be rejected a job must be "
                   "submitted and not allocated yet", view.now, d.job_id)
    return job


def check_kill(view: BatsimView, d: t.KillJob) -> list[SimJob]:
    """KILL_JOB: jobs running or complete; returns those whose kill was not yet requested.

    Runtime complexity: O(k) for k ids.
    """
    if not d.job_ids:
        raise fail(_KILL_JOB, "job_ids is empty", view.now)
    out = []
    for job_id in d.job_ids:
        job = _known(view, _KILL_JOB, job_id)
        if job.kill_requested:
            continue  # Batsim discards jobs whose kill was already requested
        if not rules.may_be_killed(job.state):
            raise fail(_KILL_JOB, f"the job is {job.state.value}: it is neither being "
                       "executed nor completed", view.now, job_id)
        out.append(job)
    return out


def check_call_me_later(view: BatsimView, d: t.CallMeLater) -> None:
    """CALL_ME_LATER: strictly after Batsim's current time. Runtime complexity: O(1)."""
    if not rules.awakes_in_future(d.at, view.now):
        raise fail(_CALL_ME_LATER, f"you asked to be awaken in the past (you ask: {d.at}, "
                   f"it is: {view.now})", view.now)


def check_register_profile(view: BatsimView, d: t.RegisterProfile) -> None:
    """REGISTER_PROFILE: dynamic jobs on, a name never registered in that workload."""
    if not view.options.dynamic_jobs:
        raise fail(_REGISTER_PROFILE, "dynamic registration is disabled "
                   "(--enable-dynamic-jobs)", view.now)
    table = view.tables.get(d.workload_name)
    if table is not None and table.exists(d.profile_name):
        collected = " (it was garbage-collected, its name still exists)" \
            if d.profile_name in table.collected else ""
        raise fail(_REGISTER_PROFILE, f"profile '{d.profile_name}' of workload "
                   f"'{d.workload_name}' has already been registered{collected}", view.now)
    if not isinstance(d.profile, Mapping) or not isinstance(d.profile.get("type"), str):
        raise fail(_REGISTER_PROFILE, f"profile '{d.profile_name}' has no 'type'", view.now)


def check_register_job(view: BatsimView, d: t.RegisterJob) -> dict[str, Any]:
    """REGISTER_JOB: dynamic jobs on and not finished, a new id, a usable profile.

    Returns the job's description. Runtime complexity: O(1).
    """
    now, job_id = view.now, d.job_id
    if not view.options.dynamic_jobs:
        raise fail(_REGISTER_JOB, "dynamic registration is disabled (--enable-dynamic-jobs)",
                   now, job_id)
    if view.registration_finished:
        raise fail(_REGISTER_JOB, "registration_finished was sent (send continue_registration "
                   "first)", now, job_id)
    if not rules.well_formed_job_id(job_id):
        raise fail(_REGISTER_JOB, "a job id is 'workload!name' with exactly one '!'", now,
                   job_id)
    if view.ever_met(job_id):
        raise fail(_REGISTER_JOB, "a job with this id already exists (Batsim remembers every "
                   "id it met, finished jobs included)", now, job_id)
    desc = d.job
    if not isinstance(desc, dict):
        raise fail(_REGISTER_JOB, "the job description is missing (Redis is not modelled)",
                   now, job_id)
    workload, name = job_id.split("!", 1)
    if str(desc.get("id")) not in (job_id, name):
        raise fail(_REGISTER_JOB, f"the description's id {desc.get('id')!r} is not the job's",
                   now, job_id)
    for key in ("subtime", "res", "profile"):
        if key not in desc:
            raise fail(_REGISTER_JOB, f"the job description has no '{key}'", now, job_id)
    res = desc["res"]
    if not rules.res_ok(res):
        raise fail(_REGISTER_JOB, f"res={res!r}: it must be a JSON integer >= 0", now, job_id)
    subtime = desc["subtime"]
    if not isinstance(subtime, (int, float)) or isinstance(subtime, bool):
        raise fail(_REGISTER_JOB, f"subtime={subtime!r} is not a number", now, job_id)
    walltime = desc.get("walltime", -1)
    if not rules.walltime_ok(walltime):
        raise fail(_REGISTER_JOB, f"walltime={walltime!r}: a number > 0, or -1 for none",
                   now, job_id)
    table = view.tables.get(workload)
    if table is None:
        raise fail(_REGISTER_JOB, f"workload '{workload}' does not exist (REGISTER_PROFILE "
                   "creates it)", now, job_id)
    profile = str(desc["profile"])
    if not table.exists(profile):
        raise fail(_REGISTER_JOB, f"profile '{profile}' does not exist in workload "
                   f"'{workload}' (register it first)", now, job_id)
    if not table.usable(profile):
        raise fail(_REGISTER_JOB, f"profile '{profile}' existed some time ago but is no longer "
                   "accessible: Batsim garbage-collected it when the last job using it ended "
                   "(run with profile_reuse, or register a fresh profile)", now, job_id)
    return desc


def check_metadata(view: BatsimView, d: t.SetJobMetadata) -> SimJob:
    """SET_JOB_METADATA: a job Batsim still holds; no double quote. O(1)."""
    job = _known(view, _SET_JOB_METADATA, d.job_id)
    if not rules.metadata_ok(d.metadata):
        raise fail(_SET_JOB_METADATA, "metadata may not contain a double quote", view.now,
                   d.job_id)
    return job


def check_change_job_state(view: BatsimView, d: t.ChangeJobState) -> SimJob:
    """CHANGE_JOB_STATE: SUBMITTED to RUNNING/REJECTED, RUNNING to COMPLETED_*. O(1)."""
    job = _known(view, _CHANGE_JOB_STATE, d.job_id)
    if not rules.transition_allowed(job.state, d.job_state):
        raise fail(_CHANGE_JOB_STATE, f"a job cannot go from {job.state.value} to "
                   f"{d.job_state.value} (only SUBMITTED to RUNNING/REJECTED and RUNNING to "
                   "COMPLETED_*)", view.now, d.job_id)
    return job


def check_registration_notify(view: BatsimView, kind: str) -> None:
    """NOTIFY registration_finished / continue_registration: dynamic jobs must be on."""
    if not view.options.dynamic_jobs:
        raise fail(f"{_NOTIFY} {kind}", "dynamic registration is disabled "
                   "(--enable-dynamic-jobs)", view.now)


def check_set_resource_state(view: BatsimView, d: t.SetResourceState) -> None:
    """SET_RESOURCE_STATE: needs Batsim's ``-E``; acknowledged at once (no power model)."""
    check_energy(view, _SET_RESOURCE_STATE, d.resources)


def check_query(view: BatsimView, d: t.Query) -> None:
    """QUERY: ``consumed_energy`` is the only request Batsim 4.2.1 answers (with ``-E``)."""
    if set(d.requests) != {"consumed_energy"}:
        raise fail(_QUERY, f"only 'consumed_energy' can be queried, not {sorted(d.requests)}",
                   view.now)
    check_energy(view, _QUERY)


def check_to_job_msg(view: BatsimView, d: t.ToJobMsg) -> None:
    """TO_JOB_MSG: the job must exist (its message is then ignored: no profile reads it)."""
    _known(view, _TO_JOB_MSG, d.job_id)


def check_energy(view: BatsimView, kind: str, resources: MachineSet | None = None) -> None:
    """SET_RESOURCE_STATE and the energy QUERY need Batsim's ``-E``."""
    if not view.options.energy:
        raise fail(kind, "Batsim runs without energy support (-E/--energy)", view.now,
                   resources=resources)
    if resources is not None and not view.machines.exist(resources):
        raise fail(kind, "the resources do not exist", view.now, resources=resources)
