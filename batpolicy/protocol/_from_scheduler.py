"""The wire schema of what a scheduler sends, with Batsim 4.2.1's own validation.

What a type annotation cannot say is checked in ``__post_init__``: at most one optional
member of EXECUTE_JOB and its mapping inside the allocation, a CALL_ME_LATER strictly in
the future, a registered job's description and a registered profile's ``type``.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Union

from msgspec import Meta, Struct

from batpolicy.protocol._schema import (
    ChangeableState,
    Data,
    JobMsg,
    Object,
    WireEvent,
    check_job,
    check_part,
)
from batpolicy.protocol._wire import (
    DIGITS,
    Count,
    FieldError,
    JobId,
    Metadata,
    Number,
    Pstate,
    Time,
    WorkloadName,
    type_name,
)
from batpolicy.protocol.intervals import MachineSet
from batpolicy.protocol.types import (
    Answer,
    CallMeLater,
    ChangeJobState,
    ContinueRegistration,
    ExecuteJob,
    JobState,
    KillJob,
    NotifyType,
    Query,
    RegisterJob,
    RegisterProfile,
    RegistrationFinished,
    RejectJob,
    SetJobMetadata,
    SetResourceState,
    ToJobMsg,
)

#: An executor rank or machine index: a JSON integer or a string holding one.
_Index = Union[Count, Annotated[str, Meta(pattern=DIGITS)]]
_EXECUTE_OPTIONS = ("additional_io_job", "mapping", "storage_mapping")  # sorted


class IoJob(Struct, forbid_unknown_fields=True):
    """EXECUTE_JOB's ``additional_io_job``."""

    alloc: MachineSet
    profile_name: str
    profile: Object = None  # type: ignore[assignment]


class Execute(Data):
    """EXECUTE_JOB: ``job_id``, ``alloc`` and at most one optional member."""

    job_id: JobId
    alloc: MachineSet
    mapping: dict[Count, _Index] = None  # type: ignore[assignment]
    storage_mapping: dict[str, Count] = None  # type: ignore[assignment]
    additional_io_job: Object = None  # type: ignore[assignment]  # kept raw

    def __post_init__(self) -> None:
        if self.mapping is None and self.storage_mapping is None \
                and self.additional_io_job is None:
            return  # the usual case
        given = [name for name in _EXECUTE_OPTIONS if getattr(self, name) is not None]
        if len(given) > 1:
            raise FieldError(given[1], "at most one of mapping, storage_mapping, "
                                       "additional_io_job (Batsim wants 2 or 3 members)")
        if self.mapping is not None:
            self.mapping = _mapping(self.mapping, len(self.alloc))
        elif self.additional_io_job is not None:
            check_part(self.additional_io_job, IoJob, "additional_io_job")


def _mapping(mapping: dict[int, int | str], size: int) -> dict[int, int]:
    """Executor rank -> machine index, ranks exactly 0..n-1, indexes inside the allocation."""
    result = {rank: int(host) for rank, host in mapping.items()}
    if not result:
        raise FieldError("mapping", "empty mapping")
    for rank, host in result.items():
        if host >= size:
            raise FieldError(f"mapping.{rank}",
                             f"machine index {host} is outside the allocation (size {size})")
    if sorted(result) != list(range(len(result))):
        raise FieldError("mapping", "executor ranks must be exactly 0..n-1")
    return result


class ExecuteJobEvent(WireEvent, tag="EXECUTE_JOB"):
    """EXECUTE_JOB."""

    data: Execute

    def typed(self) -> ExecuteJob:
        """Start a job."""
        d = self.data
        return ExecuteJob(d.job_id, d.alloc, d.mapping, d.storage_mapping, d.additional_io_job,
                          self.timestamp)


class JobIdOnly(Data):
    """Exactly ``job_id``."""

    job_id: JobId


class RejectJobEvent(WireEvent, tag="REJECT_JOB"):
    """REJECT_JOB."""

    data: JobIdOnly

    def typed(self) -> RejectJob:
        """Reject a job."""
        return RejectJob(self.data.job_id, self.timestamp)


class Kill(Data):
    """KILL_JOB: exactly a non-empty ``job_ids``."""

    job_ids: Annotated[list[JobId], Meta(min_length=1)]


class KillJobEvent(WireEvent, tag="KILL_JOB"):
    """KILL_JOB."""

    data: Kill

    def typed(self) -> KillJob:
        """Kill jobs."""
        return KillJob(tuple(self.data.job_ids), self.timestamp)


class WakeUp(Data):
    """CALL_ME_LATER: exactly ``timestamp``."""

    timestamp: Time


class CallMeLaterEvent(WireEvent, tag="CALL_ME_LATER"):
    """CALL_ME_LATER, strictly after the decision's time."""

    data: WakeUp

    def __post_init__(self) -> None:
        at = self.data.timestamp
        if at <= self.timestamp:
            raise FieldError("data.timestamp", f"{at!r} is not after the decision's time "
                                               f"{self.timestamp!r} (Batsim aborts: 'awaken "
                                               "in the past')")

    def typed(self) -> CallMeLater:
        """Ask for a REQUESTED_CALL."""
        return CallMeLater(self.data.timestamp, self.timestamp)


class SetState(Data):
    """SET_RESOURCE_STATE: exactly ``resources`` and ``state``."""

    resources: MachineSet
    state: Pstate


class SetResourceStateEvent(WireEvent, tag="SET_RESOURCE_STATE"):
    """SET_RESOURCE_STATE."""

    data: SetState

    def typed(self) -> SetResourceState:
        """Switch machines' pstate."""
        return SetResourceState(self.data.resources, self.data.state, self.timestamp)


class Register(Data):
    """REGISTER_JOB: ``job_id`` and, without Redis, ``job``."""

    job_id: JobId
    job: Object = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self.job is not None:
            check_job(self.job, "job", registration=True)


class RegisterJobEvent(WireEvent, tag="REGISTER_JOB"):
    """REGISTER_JOB."""

    data: Register

    def typed(self) -> RegisterJob:
        """Register a dynamic job."""
        return RegisterJob(self.data.job_id, self.data.job, self.timestamp)


class Profile(Data):
    """REGISTER_PROFILE: workload, profile name and the profile (with its ``type``)."""

    workload_name: WorkloadName
    profile_name: str
    profile: Object

    def __post_init__(self) -> None:
        if "type" not in self.profile:
            raise FieldError("profile.type", "missing member")
        if type(self.profile["type"]) is not str:
            raise FieldError("profile.type",
                             f"expected a string, got {type_name(self.profile['type'])}")


class RegisterProfileEvent(WireEvent, tag="REGISTER_PROFILE"):
    """REGISTER_PROFILE."""

    data: Profile

    def typed(self) -> RegisterProfile:
        """Register a profile."""
        d = self.data
        return RegisterProfile(d.workload_name, d.profile_name, d.profile, self.timestamp)


class RegistrationNotify(Data, tag_field="type"):
    """NOTIFY from the scheduler: only registration_finished / continue_registration."""

    DECISION: ClassVar[type]


class FinishedNotify(RegistrationNotify, tag=NotifyType.REGISTRATION_FINISHED.value):
    """NOTIFY registration_finished."""

    DECISION = RegistrationFinished


class ContinueNotify(RegistrationNotify, tag=NotifyType.CONTINUE_REGISTRATION.value):
    """NOTIFY continue_registration."""

    DECISION = ContinueRegistration


class SchedulerNotifyEvent(WireEvent, tag="NOTIFY"):
    """NOTIFY from the scheduler."""

    data: Union[FinishedNotify, ContinueNotify]

    def typed(self) -> RegistrationFinished | ContinueRegistration:
        """Close or reopen dynamic registration."""
        return self.data.DECISION(self.timestamp)


class MetadataData(Data):
    """SET_JOB_METADATA: exactly ``job_id`` and a ``metadata`` string without '"'."""

    job_id: JobId
    metadata: Metadata


class SetJobMetadataEvent(WireEvent, tag="SET_JOB_METADATA"):
    """SET_JOB_METADATA."""

    data: MetadataData

    def typed(self) -> SetJobMetadata:
        """Write a job's metadata."""
        return SetJobMetadata(self.data.job_id, self.data.metadata, self.timestamp)


class ChangeState(Data):
    """CHANGE_JOB_STATE: a target state Batsim allows, optional ``kill_reason``."""

    job_id: JobId
    job_state: ChangeableState
    kill_reason: str = None  # type: ignore[assignment]


class ChangeJobStateEvent(WireEvent, tag="CHANGE_JOB_STATE"):
    """CHANGE_JOB_STATE."""

    data: ChangeState

    def typed(self) -> ChangeJobState:
        """Change a job's state."""
        d = self.data
        return ChangeJobState(d.job_id, JobState(d.job_state), d.kill_reason, self.timestamp)


class EnergyRequest(Struct, forbid_unknown_fields=True):
    """The one request a scheduler may send (needs Batsim's -E)."""

    consumed_energy: Object


class SchedulerQuery(Data):
    """QUERY from the scheduler: only ``consumed_energy``."""

    requests: EnergyRequest


class SchedulerQueryEvent(WireEvent, tag="QUERY"):
    """QUERY from the scheduler."""

    data: SchedulerQuery

    def typed(self) -> Query:
        """The question."""
        return Query(self.timestamp, {"consumed_energy": self.data.requests.consumed_energy})


class WaitingTime(Struct, forbid_unknown_fields=True):
    """The estimate of a job's waiting time."""

    job_id: JobId
    estimated_waiting_time: Number


class Waiting(Data):
    """ANSWER from the scheduler: ``estimate_waiting_time`` of a job."""

    estimate_waiting_time: WaitingTime


class SchedulerAnswerEvent(WireEvent, tag="ANSWER"):
    """ANSWER from the scheduler."""

    data: Waiting

    def typed(self) -> Answer:
        """The answer."""
        w = self.data.estimate_waiting_time
        return Answer(self.timestamp, {"estimate_waiting_time": {
            "job_id": w.job_id, "estimated_waiting_time": w.estimated_waiting_time}})


class ToJobMsgEvent(WireEvent, tag="TO_JOB_MSG"):
    """TO_JOB_MSG."""

    data: JobMsg

    def typed(self) -> ToJobMsg:
        """A message to a job."""
        return ToJobMsg(self.data.job_id, self.data.msg, self.timestamp)
