"""One small encode function per event and decision class, gathered in two tables.

Each encoder takes a typed object and returns ``(wire type, data object)``; the codec
adds ``timestamp`` and the envelope. Encoders only translate: the codec checks the whole
message against the wire schema before msgspec writes it
(:func:`batpolicy.protocol.codec.encode_reply`), so the rules live in one place,
:mod:`batpolicy.protocol._decoders`. Machine sets stay
:class:`~batpolicy.protocol.intervals.MachineSet` objects until written: the schema's
hook checks them as they are, without writing and parsing a string.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from enum import Enum
from types import MappingProxyType
from typing import Any

from batpolicy.protocol._wire import EventType, FieldError
from batpolicy.protocol.intervals import MachineSet
from batpolicy.protocol.types import (
    BATSIM_NOTIFY_KINDS,
    Answer,
    CallMeLater,
    ChangeJobState,
    ContinueRegistration,
    ExecuteJob,
    FromJobMsg,
    JobCompleted,
    JobKilled,
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

__all__ = ["DECISION_ENCODERS", "EVENT_ENCODERS", "Encoder"]

#: ``encoder(obj) -> (wire type, data)``.
Encoder = Callable[[Any], tuple[str, dict[str, Any]]]

_SIMULATION_BEGINS = EventType.SIMULATION_BEGINS.value
_NOTIFY = EventType.NOTIFY.value
_QUERY = EventType.QUERY.value
_ANSWER = EventType.ANSWER.value
# the most frequent messages' types, read once (Enum.value is two Python calls)
_JOB_SUBMITTED = EventType.JOB_SUBMITTED.value
_JOB_COMPLETED = EventType.JOB_COMPLETED.value
_EXECUTE_JOB = EventType.EXECUTE_JOB.value
_REJECT_JOB = EventType.REJECT_JOB.value
_BATSIM_NOTIFY_KINDS = BATSIM_NOTIFY_KINDS  # everything else is a forwarded event


def wire_str(value: str) -> str:
    """The plain string of a string or of a string enum member.

    >>> from batpolicy.protocol.types import JobState
    >>> wire_str(JobState.REJECTED), wire_str("x")
    ('REJECTED', 'x')
    """
    return value.value if isinstance(value, Enum) else value


def _machines(resources: Any) -> MachineSet:
    """A decision's machines as a :class:`MachineSet` (any iterable of ids is accepted)."""
    return resources if type(resources) is MachineSet else MachineSet(resources)


def _resource(machine: ResourceInfo) -> dict[str, Any]:
    return {"id": machine.id, "name": machine.name, "state": machine.state,
            "properties": machine.properties, "zone_properties": machine.zone_properties}


# ---------------------------------------------------------------------------------------
# Batsim -> scheduler
# ---------------------------------------------------------------------------------------


def simulation_begins(e: SimulationBegins) -> tuple[str, dict[str, Any]]:
    """SIMULATION_BEGINS, with the ``extra`` members put back."""
    data: dict[str, Any] = {
        "nb_resources": e.nb_resources,
        "nb_compute_resources": e.nb_compute_resources,
        "nb_storage_resources": e.nb_storage_resources,
        "allow_compute_sharing": e.allow_compute_sharing,
        "allow_storage_sharing": e.allow_storage_sharing,
        "config": e.config,
        "compute_resources": [_resource(m) for m in e.compute_resources],
        "storage_resources": [_resource(m) for m in e.storage_resources],
        "workloads": e.workloads,
        "profiles": e.profiles,
    }
    for name, value in e.extra.items():
        if name in data:
            raise FieldError(f"extra.{name}", "repeats a member SimulationBegins already has")
        data[name] = value
    return _SIMULATION_BEGINS, data


def simulation_ends(e: SimulationEnds) -> tuple[str, dict[str, Any]]:
    """SIMULATION_ENDS."""
    return EventType.SIMULATION_ENDS.value, {}


def job_submitted(e: JobSubmitted) -> tuple[str, dict[str, Any]]:
    """JOB_SUBMITTED; ``job`` and ``profile`` only when present."""
    data: dict[str, Any] = {"job_id": e.job_id}
    if e.job is not None:
        data["job"] = e.job
    if e.profile is not None:
        data["profile"] = e.profile
    return _JOB_SUBMITTED, data


def job_completed(e: JobCompleted) -> tuple[str, dict[str, Any]]:
    """JOB_COMPLETED."""
    return _JOB_COMPLETED, {"job_id": e.job_id, "job_state": wire_str(e.job_state),
                                           "return_code": e.return_code,
                                           "alloc": _machines(e.alloc)}


def job_killed(e: JobKilled) -> tuple[str, dict[str, Any]]:
    """JOB_KILLED."""
    return EventType.JOB_KILLED.value, {"job_ids": list(e.job_ids),
                                        "job_progress": e.job_progress}


def resource_state_changed(e: ResourceStateChanged) -> tuple[str, dict[str, Any]]:
    """RESOURCE_STATE_CHANGED."""
    return EventType.RESOURCE_STATE_CHANGED.value, {"resources": _machines(e.resources),
                                                    "state": e.state}


def requested_call(e: RequestedCall) -> tuple[str, dict[str, Any]]:
    """REQUESTED_CALL."""
    return EventType.REQUESTED_CALL.value, {}


def batsim_notify(e: Notify) -> tuple[str, dict[str, Any]]:
    """NOTIFY from Batsim: its own kinds rebuilt, forwarded external events as kept."""
    kind = wire_str(e.kind)
    if kind in _BATSIM_NOTIFY_KINDS:
        data: dict[str, Any] = {"type": kind}
        if e.resources is not None:
            data["resources"] = _machines(e.resources)
        return _NOTIFY, data
    if e.data.get("type") == kind:
        return _NOTIFY, e.data
    return _NOTIFY, {**e.data, "type": kind}


def query(e: Query) -> tuple[str, dict[str, Any]]:
    """QUERY (either direction)."""
    return _QUERY, {"requests": e.requests}


def answer(e: Answer) -> tuple[str, dict[str, Any]]:
    """ANSWER (either direction)."""
    return _ANSWER, e.data


def from_job_msg(e: FromJobMsg) -> tuple[str, dict[str, Any]]:
    """FROM_JOB_MSG."""
    return EventType.FROM_JOB_MSG.value, {"job_id": e.job_id, "msg": e.msg}


EVENT_ENCODERS: Mapping[type, Encoder] = MappingProxyType({
    SimulationBegins: simulation_begins,
    SimulationEnds: simulation_ends,
    JobSubmitted: job_submitted,
    JobCompleted: job_completed,
    JobKilled: job_killed,
    ResourceStateChanged: resource_state_changed,
    RequestedCall: requested_call,
    Notify: batsim_notify,
    Query: query,
    Answer: answer,
    FromJobMsg: from_job_msg,
})


# ---------------------------------------------------------------------------------------
# scheduler -> Batsim
# ---------------------------------------------------------------------------------------


def execute_job(d: ExecuteJob) -> tuple[str, dict[str, Any]]:
    """EXECUTE_JOB; mapping keys become strings, as JSON requires."""
    alloc = d.alloc  # (_machines inlined: one EXECUTE_JOB per job, on serve's hot path)
    if type(alloc) is not MachineSet:
        alloc = MachineSet(alloc)
    data: dict[str, Any] = {"job_id": d.job_id, "alloc": alloc}
    if d.mapping is not None:
        data["mapping"] = {str(rank): host for rank, host in d.mapping.items()}
    if d.storage_mapping is not None:
        data["storage_mapping"] = d.storage_mapping
    if d.additional_io_job is not None:
        data["additional_io_job"] = d.additional_io_job
    return _EXECUTE_JOB, data


def reject_job(d: RejectJob) -> tuple[str, dict[str, Any]]:
    """REJECT_JOB."""
    return _REJECT_JOB, {"job_id": d.job_id}


def kill_job(d: KillJob) -> tuple[str, dict[str, Any]]:
    """KILL_JOB."""
    return EventType.KILL_JOB.value, {"job_ids": list(d.job_ids)}


def call_me_later(d: CallMeLater) -> tuple[str, dict[str, Any]]:
    """CALL_ME_LATER: the wake-up time travels as ``data.timestamp``."""
    return EventType.CALL_ME_LATER.value, {"timestamp": d.at}


def set_resource_state(d: SetResourceState) -> tuple[str, dict[str, Any]]:
    """SET_RESOURCE_STATE."""
    return EventType.SET_RESOURCE_STATE.value, {"resources": _machines(d.resources),
                                                "state": d.state}


def register_job(d: RegisterJob) -> tuple[str, dict[str, Any]]:
    """REGISTER_JOB; no ``job`` member when the job is None (Redis)."""
    data: dict[str, Any] = {"job_id": d.job_id}
    if d.job is not None:
        data["job"] = d.job
    return EventType.REGISTER_JOB.value, data


def register_profile(d: RegisterProfile) -> tuple[str, dict[str, Any]]:
    """REGISTER_PROFILE."""
    return EventType.REGISTER_PROFILE.value, {"workload_name": d.workload_name,
                                              "profile_name": d.profile_name,
                                              "profile": d.profile}


def registration_finished(d: RegistrationFinished) -> tuple[str, dict[str, Any]]:
    """NOTIFY registration_finished."""
    return _NOTIFY, {"type": NotifyType.REGISTRATION_FINISHED.value}


def continue_registration(d: ContinueRegistration) -> tuple[str, dict[str, Any]]:
    """NOTIFY continue_registration."""
    return _NOTIFY, {"type": NotifyType.CONTINUE_REGISTRATION.value}


def set_job_metadata(d: SetJobMetadata) -> tuple[str, dict[str, Any]]:
    """SET_JOB_METADATA."""
    return EventType.SET_JOB_METADATA.value, {"job_id": d.job_id, "metadata": d.metadata}


def change_job_state(d: ChangeJobState) -> tuple[str, dict[str, Any]]:
    """CHANGE_JOB_STATE; ``kill_reason`` only when given."""
    data: dict[str, Any] = {"job_id": d.job_id, "job_state": wire_str(d.job_state)}
    if d.kill_reason is not None:
        data["kill_reason"] = d.kill_reason
    return EventType.CHANGE_JOB_STATE.value, data


def to_job_msg(d: ToJobMsg) -> tuple[str, dict[str, Any]]:
    """TO_JOB_MSG."""
    return EventType.TO_JOB_MSG.value, {"job_id": d.job_id, "msg": d.msg}


DECISION_ENCODERS: Mapping[type, Encoder] = MappingProxyType({
    ExecuteJob: execute_job,
    RejectJob: reject_job,
    KillJob: kill_job,
    CallMeLater: call_me_later,
    SetResourceState: set_resource_state,
    RegisterJob: register_job,
    RegisterProfile: register_profile,
    RegistrationFinished: registration_finished,
    ContinueRegistration: continue_registration,
    SetJobMetadata: set_job_metadata,
    ChangeJobState: change_job_state,
    Query: query,
    Answer: answer,
    ToJobMsg: to_job_msg,
})
