"""One small decode function per wire ``type`` and direction, gathered in two tables.

Each decoder takes an event's ``data`` object and its already checked ``timestamp`` and
returns a typed event or decision from :mod:`batpolicy.protocol.types`; it raises
:class:`~batpolicy.protocol._wire.FieldError` naming the bad field. Member sets are
exact, as Batsim 4.2.1 sends or accepts them (PROTOCOL.md §1.3, §1.4): anything else is
refused, which is also what makes every accepted message re-encode without loss.
Raw JSON that Batsim forwards untouched (jobs, profiles, configuration, kill progress,
forwarded external events) is kept as the very ``dict`` the parser built.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from batpolicy.protocol._wire import (
    EventType,
    FieldError,
    as_int,
    as_intervals,
    as_job_id,
    as_object,
    as_str,
    as_time,
    check_members,
)
from batpolicy.protocol.types import (
    Answer,
    CallMeLater,
    ChangeJobState,
    ContinueRegistration,
    ExecuteJob,
    FromJobMsg,
    JobCompleted,
    JobKilled,
    JobState,
    JobSubmitted,
    KillJob,
    Notify,
    NotifyType,
    Query,
    RegisterJob,
    RegisterProfile,
    RegistrationFinished,
    RejectJob,
    RequestedCall,
    ResourceInfo,
    ResourceStateChanged,
    SetJobMetadata,
    SetResourceState,
    SimulationBegins,
    SimulationEnds,
    ToJobMsg,
)

__all__ = ["Decoder", "REPLY_DECODERS", "REQUEST_DECODERS"]

#: ``decoder(data, timestamp) -> typed event or decision``.
Decoder = Callable[[dict[str, Any], float], Any]

_NONE: frozenset[str] = frozenset()
_JOB_STATES = {state.value: state for state in JobState}
#: Target states CHANGE_JOB_STATE accepts (PROTOCOL.md §1.4).
_CHANGEABLE_STATES = frozenset({"NOT_SUBMITTED", "RUNNING", "COMPLETED_SUCCESSFULLY",
                                "COMPLETED_WALLTIME_REACHED", "COMPLETED_KILLED", "REJECTED"})
_MACHINE_STATES = frozenset({"sleeping", "idle", "computing", "switching_on", "switching_off",
                             "unavailable"})


def _job_ids(value: Any, field: str) -> tuple[str, ...]:
    """An array of job ids as a tuple.

    >>> _job_ids(["w0!1", "w0!2"], "data.job_ids")
    ('w0!1', 'w0!2')
    """
    if type(value) is not list:
        raise FieldError(field, "expected an array of job ids")
    return tuple(as_job_id(job_id, f"{field}[{i}]") for i, job_id in enumerate(value))


def _job_description(job: Any, field: str, *, registration: bool) -> dict[str, Any]:
    """A job object; ``res`` must be a JSON integer >= 0 (PROTOCOL.md §1.7)."""
    job = as_object(job, field)
    if "res" not in job:
        raise FieldError(f"{field}.res", "missing member")
    as_int(job["res"], f"{field}.res", 0)
    if registration:
        for name in ("id", "subtime", "profile"):
            if name not in job:
                raise FieldError(f"{field}.{name}", "missing member (REGISTER_JOB needs it)")
        as_str(job["profile"], f"{field}.profile")
    for name in ("subtime", "walltime"):  # numbers the state computes with, when present
        if name in job:
            as_time(job[name], f"{field}.{name}")
    return job


# ---------------------------------------------------------------------------------------
# Batsim -> scheduler
# ---------------------------------------------------------------------------------------

_BEGINS_MEMBERS = ("nb_resources", "nb_compute_resources", "nb_storage_resources",
                   "allow_compute_sharing", "allow_storage_sharing", "config",
                   "compute_resources", "storage_resources", "workloads", "profiles")
_BEGINS_KNOWN = frozenset(_BEGINS_MEMBERS)
_RESOURCE_MEMBERS = frozenset({"id", "name", "state", "properties", "zone_properties"})


def _resources(value: Any, field: str) -> tuple[ResourceInfo, ...]:
    if type(value) is not list:
        raise FieldError(field, "expected an array of resources")
    resources = []
    for i, item in enumerate(value):
        where = f"{field}[{i}]"
        as_object(item, where)
        check_members(item, _RESOURCE_MEMBERS, prefix=where)
        state = as_str(item["state"], f"{where}.state")
        if state not in _MACHINE_STATES:
            raise FieldError(f"{where}.state", f"unknown machine state {state!r}")
        resources.append(ResourceInfo(as_int(item["id"], f"{where}.id", 0),
                                      as_str(item["name"], f"{where}.name"), state,
                                      as_object(item["properties"], f"{where}.properties"),
                                      as_object(item["zone_properties"],
                                                f"{where}.zone_properties")))
    return tuple(resources)


def _bool(value: Any, field: str) -> bool:
    """A JSON boolean (never a number).

    >>> _bool(False, "data.allow_compute_sharing")
    False
    """
    if type(value) is not bool:
        raise FieldError(field, "expected true or false")
    return value


def simulation_begins(d: dict[str, Any], ts: float) -> SimulationBegins:
    """SIMULATION_BEGINS; unknown members are kept in ``extra``."""
    for name in _BEGINS_MEMBERS:
        if name not in d:
            raise FieldError(f"data.{name}", "missing member")
    workloads = as_object(d["workloads"], "data.workloads")
    for name, path in workloads.items():
        as_str(path, f"data.workloads.{name}")
    profiles = as_object(d["profiles"], "data.profiles")
    for workload, table in profiles.items():
        for name, profile in as_object(table, f"data.profiles.{workload}").items():
            as_object(profile, f"data.profiles.{workload}.{name}")
    extra = {k: v for k, v in d.items() if k not in _BEGINS_KNOWN} if len(d) > 10 else {}
    return SimulationBegins(
        ts,
        as_int(d["nb_resources"], "data.nb_resources", 0),
        as_int(d["nb_compute_resources"], "data.nb_compute_resources", 0),
        as_int(d["nb_storage_resources"], "data.nb_storage_resources", 0),
        _bool(d["allow_compute_sharing"], "data.allow_compute_sharing"),
        _bool(d["allow_storage_sharing"], "data.allow_storage_sharing"),
        as_object(d["config"], "data.config"),
        _resources(d["compute_resources"], "data.compute_resources"),
        _resources(d["storage_resources"], "data.storage_resources"),
        workloads, profiles, extra)


def simulation_ends(d: dict[str, Any], ts: float) -> SimulationEnds:
    """SIMULATION_ENDS: empty data."""
    check_members(d, _NONE)
    return SimulationEnds(ts)


_SUBMITTED_REQUIRED = frozenset({"job_id"})
_SUBMITTED_OPTIONAL = frozenset({"job", "profile"})


def job_submitted(d: dict[str, Any], ts: float) -> JobSubmitted:
    """JOB_SUBMITTED: ``job`` absent with Redis, ``profile`` only with forwarding."""
    check_members(d, _SUBMITTED_REQUIRED, _SUBMITTED_OPTIONAL)
    job_id = as_job_id(d["job_id"], "data.job_id")
    job = profile = None
    if "job" in d:
        job = _job_description(d["job"], "data.job", registration=False)
    if "profile" in d:
        if job is None:
            raise FieldError("data.profile", "a forwarded profile comes only with its job")
        profile = as_object(d["profile"], "data.profile")
    return JobSubmitted(ts, job_id, job, profile)


_COMPLETED = frozenset({"job_id", "job_state", "return_code", "alloc"})


def job_completed(d: dict[str, Any], ts: float) -> JobCompleted:
    """JOB_COMPLETED (4.2.1 sends no ``kill_reason``)."""
    check_members(d, _COMPLETED)
    state = _JOB_STATES.get(d["job_state"]) if type(d["job_state"]) is str else None
    if state is None:
        raise FieldError("data.job_state", f"unknown job state {d['job_state']!r}")
    return JobCompleted(ts, as_job_id(d["job_id"], "data.job_id"), state,
                        as_int(d["return_code"], "data.return_code"),
                        as_intervals(d["alloc"], "data.alloc"))


_KILLED = frozenset({"job_ids", "job_progress"})


def job_killed(d: dict[str, Any], ts: float) -> JobKilled:
    """JOB_KILLED; progress entries (key ``profile_name``) are kept raw."""
    check_members(d, _KILLED)
    job_ids = _job_ids(d["job_ids"], "data.job_ids")
    progress = as_object(d["job_progress"], "data.job_progress")
    for job_id, entry in progress.items():
        as_object(entry, f"data.job_progress.{job_id}")
    return JobKilled(ts, job_ids, progress)


_STATE_CHANGED = frozenset({"resources", "state"})


def resource_state_changed(d: dict[str, Any], ts: float) -> ResourceStateChanged:
    """RESOURCE_STATE_CHANGED: machines and their new pstate (a string)."""
    check_members(d, _STATE_CHANGED)
    return ResourceStateChanged(ts, as_intervals(d["resources"], "data.resources"),
                                as_str(d["state"], "data.state"))


def requested_call(d: dict[str, Any], ts: float) -> RequestedCall:
    """REQUESTED_CALL: empty data."""
    check_members(d, _NONE)
    return RequestedCall(ts)


_TYPE_ONLY = frozenset({"type"})
_TYPE_AND_RESOURCES = frozenset({"type", "resources"})


def _notify_plain(d: dict[str, Any], ts: float) -> Notify:
    check_members(d, _TYPE_ONLY)
    return Notify(ts, d["type"])


def _notify_machines(d: dict[str, Any], ts: float) -> Notify:
    check_members(d, _TYPE_AND_RESOURCES)
    return Notify(ts, d["type"], as_intervals(d["resources"], "data.resources"))


_BATSIM_NOTIFY: Mapping[str, Decoder] = MappingProxyType({
    NotifyType.NO_MORE_STATIC_JOB_TO_SUBMIT.value: _notify_plain,
    NotifyType.NO_MORE_EXTERNAL_EVENT_TO_OCCUR.value: _notify_plain,
    NotifyType.EVENT_MACHINE_UNAVAILABLE.value: _notify_machines,
    NotifyType.EVENT_MACHINE_AVAILABLE.value: _notify_machines,
})


def batsim_notify(d: dict[str, Any], ts: float) -> Notify:
    """NOTIFY from Batsim; any kind it does not know itself is a forwarded external event."""
    kind = as_str(d.get("type"), "data.type")
    decode = _BATSIM_NOTIFY.get(kind)
    if decode is None:  # --forward-unknown-events: data is the whole event object
        return Notify(ts, kind, None, d)
    return decode(d, ts)


_REQUESTS = frozenset({"requests"})
_BATSIM_REQUESTS = frozenset({"estimate_waiting_time"})
_SCHEDULER_REQUESTS = frozenset({"consumed_energy"})


def _requests(d: dict[str, Any], allowed: frozenset[str]) -> dict[str, Any]:
    check_members(d, _REQUESTS)
    requests = as_object(d["requests"], "data.requests")
    if not requests:
        raise FieldError("data.requests", "no request")
    for name, arguments in requests.items():
        if name not in allowed:
            raise FieldError(f"data.requests.{name}",
                             f"unknown request (allowed: {', '.join(sorted(allowed))})")
        as_object(arguments, f"data.requests.{name}")
    return requests


def batsim_query(d: dict[str, Any], ts: float) -> Query:
    """QUERY from Batsim: only ``estimate_waiting_time``."""
    return Query(ts, _requests(d, _BATSIM_REQUESTS))


_ENERGY = frozenset({"consumed_energy"})


def batsim_answer(d: dict[str, Any], ts: float) -> Answer:
    """ANSWER from Batsim: only ``consumed_energy`` (joules)."""
    check_members(d, _ENERGY)
    as_time(d["consumed_energy"], "data.consumed_energy")
    return Answer(ts, d)


_JOB_MSG = frozenset({"job_id", "msg"})


def from_job_msg(d: dict[str, Any], ts: float) -> FromJobMsg:
    """FROM_JOB_MSG (undocumented): a message from a running job's profile."""
    check_members(d, _JOB_MSG)
    return FromJobMsg(ts, as_job_id(d["job_id"], "data.job_id"), d["msg"])


REQUEST_DECODERS: Mapping[str, Decoder] = MappingProxyType({
    EventType.SIMULATION_BEGINS.value: simulation_begins,
    EventType.SIMULATION_ENDS.value: simulation_ends,
    EventType.JOB_SUBMITTED.value: job_submitted,
    EventType.JOB_COMPLETED.value: job_completed,
    EventType.JOB_KILLED.value: job_killed,
    EventType.RESOURCE_STATE_CHANGED.value: resource_state_changed,
    EventType.REQUESTED_CALL.value: requested_call,
    EventType.NOTIFY.value: batsim_notify,
    EventType.QUERY.value: batsim_query,
    EventType.ANSWER.value: batsim_answer,
    EventType.FROM_JOB_MSG.value: from_job_msg,
})


# ---------------------------------------------------------------------------------------
# scheduler -> Batsim (with Batsim 4.2.1's own validation, PROTOCOL.md §1.4)
# ---------------------------------------------------------------------------------------

_EXECUTE_REQUIRED = frozenset({"job_id", "alloc"})
_EXECUTE_OPTIONAL = frozenset({"mapping", "storage_mapping", "additional_io_job"})


def _index(value: Any, field: str) -> int:
    """An executor rank or machine index: a JSON integer or a string of one.

    >>> _index("3", "data.mapping.0"), _index(3, "data.mapping.0")
    (3, 3)
    """
    if type(value) is str and value.isascii() and value.isdigit():
        value = int(value)
    return as_int(value, field, 0)


def _mapping(value: Any, size: int) -> dict[int, int]:
    mapping = as_object(value, "data.mapping")
    result = {_index(rank, f"data.mapping.{rank}"): _index(host, f"data.mapping.{rank}")
              for rank, host in mapping.items()}
    if not result:
        raise FieldError("data.mapping", "empty mapping")
    for rank, host in result.items():
        if host >= size:
            raise FieldError(f"data.mapping.{rank}",
                             f"machine index {host} is outside the allocation (size {size})")
    if sorted(result) != list(range(len(result))):
        raise FieldError("data.mapping", "executor ranks must be exactly 0..n-1")
    return result


def _storage_mapping(value: Any) -> dict[str, int]:
    mapping = as_object(value, "data.storage_mapping")
    for label, resource in mapping.items():
        as_int(resource, f"data.storage_mapping.{label}", 0)
    return mapping


def _io_job(value: Any) -> dict[str, Any]:
    job = as_object(value, "data.additional_io_job")
    check_members(job, frozenset({"alloc", "profile_name"}), frozenset({"profile"}),
                  prefix="data.additional_io_job")
    as_intervals(job["alloc"], "data.additional_io_job.alloc")
    as_str(job["profile_name"], "data.additional_io_job.profile_name")
    if "profile" in job:
        as_object(job["profile"], "data.additional_io_job.profile")
    return job


def execute_job(d: dict[str, Any], ts: float) -> ExecuteJob:
    """EXECUTE_JOB: 2 or 3 members (job_id, alloc, at most one optional field)."""
    if len(d) == 2 and "alloc" in d and "job_id" in d:  # the usual case
        return ExecuteJob(as_job_id(d["job_id"], "data.job_id"),
                          as_intervals(d["alloc"], "data.alloc"), timestamp=ts)
    check_members(d, _EXECUTE_REQUIRED, _EXECUTE_OPTIONAL)
    if len(d) > 3:
        second = sorted(d.keys() & _EXECUTE_OPTIONAL)[1]
        raise FieldError(f"data.{second}", "at most one of mapping, storage_mapping, "
                                           "additional_io_job (Batsim wants 2 or 3 members)")
    alloc = as_intervals(d["alloc"], "data.alloc")
    mapping = _mapping(d["mapping"], len(alloc)) if "mapping" in d else None
    storage = _storage_mapping(d["storage_mapping"]) if "storage_mapping" in d else None
    io_job = _io_job(d["additional_io_job"]) if "additional_io_job" in d else None
    return ExecuteJob(as_job_id(d["job_id"], "data.job_id"), alloc, mapping, storage, io_job,
                      timestamp=ts)


_JOB_ID = frozenset({"job_id"})


def reject_job(d: dict[str, Any], ts: float) -> RejectJob:
    """REJECT_JOB: exactly ``job_id``."""
    check_members(d, _JOB_ID)
    return RejectJob(as_job_id(d["job_id"], "data.job_id"), timestamp=ts)


_JOB_IDS = frozenset({"job_ids"})


def kill_job(d: dict[str, Any], ts: float) -> KillJob:
    """KILL_JOB: exactly a non-empty ``job_ids``."""
    check_members(d, _JOB_IDS)
    job_ids = _job_ids(d["job_ids"], "data.job_ids")
    if not job_ids:
        raise FieldError("data.job_ids", "no job to kill (the array must not be empty)")
    return KillJob(job_ids, timestamp=ts)


_TIMESTAMP = frozenset({"timestamp"})


def call_me_later(d: dict[str, Any], ts: float) -> CallMeLater:
    """CALL_ME_LATER: exactly ``timestamp``, strictly after the decision's time."""
    check_members(d, _TIMESTAMP)
    at = as_time(d["timestamp"], "data.timestamp")
    if at <= ts:
        raise FieldError("data.timestamp", f"{at!r} is not after the decision's time {ts!r} "
                                           "(Batsim aborts: 'awaken in the past')")
    return CallMeLater(at, timestamp=ts)


def _pstate(value: Any, field: str) -> str:
    """A pstate: a string holding a non-negative integer.

    >>> _pstate("42", "data.state")
    '42'
    """
    state = as_str(value, field)
    if not (state.isascii() and state.isdigit()):
        raise FieldError(field, f"pstate {state[:40]!r} is not a string holding an integer")
    return state


def set_resource_state(d: dict[str, Any], ts: float) -> SetResourceState:
    """SET_RESOURCE_STATE: exactly ``resources`` and ``state``."""
    check_members(d, _STATE_CHANGED)
    return SetResourceState(as_intervals(d["resources"], "data.resources"),
                            _pstate(d["state"], "data.state"), timestamp=ts)


_REGISTER_JOB_OPTIONAL = frozenset({"job"})


def register_job(d: dict[str, Any], ts: float) -> RegisterJob:
    """REGISTER_JOB: ``job_id`` and, without Redis, ``job``."""
    check_members(d, _JOB_ID, _REGISTER_JOB_OPTIONAL)
    job = None
    if "job" in d:
        job = _job_description(d["job"], "data.job", registration=True)
    return RegisterJob(as_job_id(d["job_id"], "data.job_id"), job, timestamp=ts)


_REGISTER_PROFILE = frozenset({"workload_name", "profile_name", "profile"})


def register_profile(d: dict[str, Any], ts: float) -> RegisterProfile:
    """REGISTER_PROFILE: workload, profile name and the profile (with its ``type``)."""
    check_members(d, _REGISTER_PROFILE)
    workload = as_str(d["workload_name"], "data.workload_name")
    if "!" in workload or not workload:
        raise FieldError("data.workload_name", f"bad workload name {workload!r}")
    profile = as_object(d["profile"], "data.profile")
    if "type" not in profile:
        raise FieldError("data.profile.type", "missing member")
    as_str(profile["type"], "data.profile.type")
    return RegisterProfile(workload, as_str(d["profile_name"], "data.profile_name"), profile,
                           timestamp=ts)


_SCHEDULER_NOTIFY = MappingProxyType({
    NotifyType.REGISTRATION_FINISHED.value: RegistrationFinished,
    NotifyType.CONTINUE_REGISTRATION.value: ContinueRegistration,
})


def scheduler_notify(d: dict[str, Any], ts: float) -> RegistrationFinished | ContinueRegistration:
    """NOTIFY from the scheduler: only registration_finished / continue_registration."""
    check_members(d, _TYPE_ONLY)
    decision = _SCHEDULER_NOTIFY.get(d["type"]) if type(d["type"]) is str else None
    if decision is None:
        raise FieldError("data.type", f"{d['type']!r} is not a NOTIFY Batsim accepts "
                                      "(registration_finished, continue_registration)")
    return decision(timestamp=ts)


_METADATA = frozenset({"job_id", "metadata"})


def set_job_metadata(d: dict[str, Any], ts: float) -> SetJobMetadata:
    """SET_JOB_METADATA: exactly ``job_id`` and a ``metadata`` string without '"'."""
    check_members(d, _METADATA)
    metadata = as_str(d["metadata"], "data.metadata")
    if '"' in metadata:
        raise FieldError("data.metadata", "metadata must not contain a double quote")
    return SetJobMetadata(as_job_id(d["job_id"], "data.job_id"), metadata, timestamp=ts)


_CHANGE_STATE = frozenset({"job_id", "job_state"})
_KILL_REASON = frozenset({"kill_reason"})


def change_job_state(d: dict[str, Any], ts: float) -> ChangeJobState:
    """CHANGE_JOB_STATE: a target state Batsim allows, optional ``kill_reason``."""
    check_members(d, _CHANGE_STATE, _KILL_REASON)
    state = d["job_state"]
    if type(state) is not str or state not in _CHANGEABLE_STATES:
        raise FieldError("data.job_state", f"{state!r} is not a state CHANGE_JOB_STATE accepts "
                                           f"({', '.join(sorted(_CHANGEABLE_STATES))})")
    reason = as_str(d["kill_reason"], "data.kill_reason") if "kill_reason" in d else None
    return ChangeJobState(as_job_id(d["job_id"], "data.job_id"), _JOB_STATES[state], reason,
                          timestamp=ts)


def scheduler_query(d: dict[str, Any], ts: float) -> Query:
    """QUERY from the scheduler: only ``consumed_energy`` (needs Batsim's -E)."""
    return Query(ts, _requests(d, _SCHEDULER_REQUESTS))


_WAITING = frozenset({"estimate_waiting_time"})
_WAITING_MEMBERS = frozenset({"job_id", "estimated_waiting_time"})


def scheduler_answer(d: dict[str, Any], ts: float) -> Answer:
    """ANSWER from the scheduler: ``estimate_waiting_time`` of a job."""
    check_members(d, _WAITING)
    answer = as_object(d["estimate_waiting_time"], "data.estimate_waiting_time")
    check_members(answer, _WAITING_MEMBERS, prefix="data.estimate_waiting_time")
    as_job_id(answer["job_id"], "data.estimate_waiting_time.job_id")
    as_time(answer["estimated_waiting_time"], "data.estimate_waiting_time.estimated_waiting_time")
    return Answer(ts, d)


def to_job_msg(d: dict[str, Any], ts: float) -> ToJobMsg:
    """TO_JOB_MSG (undocumented): a message to a running job's profile."""
    check_members(d, _JOB_MSG)
    return ToJobMsg(as_job_id(d["job_id"], "data.job_id"), d["msg"], timestamp=ts)


REPLY_DECODERS: Mapping[str, Decoder] = MappingProxyType({
    EventType.EXECUTE_JOB.value: execute_job,
    EventType.REJECT_JOB.value: reject_job,
    EventType.KILL_JOB.value: kill_job,
    EventType.CALL_ME_LATER.value: call_me_later,
    EventType.SET_RESOURCE_STATE.value: set_resource_state,
    EventType.REGISTER_JOB.value: register_job,
    EventType.REGISTER_PROFILE.value: register_profile,
    EventType.NOTIFY.value: scheduler_notify,
    EventType.SET_JOB_METADATA.value: set_job_metadata,
    EventType.CHANGE_JOB_STATE.value: change_job_state,
    EventType.QUERY.value: scheduler_query,
    EventType.ANSWER.value: scheduler_answer,
    EventType.TO_JOB_MSG.value: to_job_msg,
})
