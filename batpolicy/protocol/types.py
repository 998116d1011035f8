"""Typed Batsim 4.2 messages, both directions (Batsim's protocol: events, decisions).

Pure data: frozen records and enums, no I/O, no JSON. The codec
(:mod:`batpolicy.protocol.codec`) is the only place that knows the wire spelling.
The records are frozen :class:`msgspec.Struct` classes: hashable when their fields are,
compared field by field, built by a C ``__init__`` (a frozen dataclass runs a Python
one, about 0.5 µs more per record; the drivers build about ten per job) and created
without generating code at import.

*Events* travel from Batsim to the scheduler and always carry the ``timestamp`` at
which Batsim stamped them. *Decisions* travel from the scheduler to Batsim; a policy
builds them without a timestamp and the codec stamps them with the reply's ``now``.
Decisions decoded from a recorded reply keep the timestamp they had.

Raw JSON objects that Batsim forwards untouched (job descriptions with their extra
user fields, profiles, configuration) are kept as plain ``dict`` so that nothing is
lost on re-encoding.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Union

from msgspec import Struct, field

from batpolicy.protocol.intervals import MachineSet

__all__ = ["BATSIM_NOTIFY_KINDS", "Answer", "CallMeLater", "ChangeJobState",
           "ContinueRegistration", "Decision", "Event", "EventType", "ExecuteJob", "FromJobMsg",
           "JobCompleted", "JobKilled", "JobState", "JobSubmitted", "KillJob", "Notify",
           "NotifyType", "Query", "RegisterJob", "RegisterProfile", "RegistrationFinished",
           "RejectJob", "Reply", "Request", "RequestedCall", "ResourceInfo",
           "ResourceStateChanged", "SetJobMetadata", "SetResourceState", "SimulationBegins",
           "SimulationEnds", "ToJobMsg"]


class EventType(str, Enum):  # noqa: UP042 - str() stays the member name, like types.JobState
    """Every ``type`` string of the Batsim 4.2.1 JSON protocol, both directions."""

    # Batsim -> scheduler
    SIMULATION_BEGINS = "SIMULATION_BEGINS"
    SIMULATION_ENDS = "SIMULATION_ENDS"
    JOB_SUBMITTED = "JOB_SUBMITTED"
    JOB_COMPLETED = "JOB_COMPLETED"
    JOB_KILLED = "JOB_KILLED"
    RESOURCE_STATE_CHANGED = "RESOURCE_STATE_CHANGED"
    REQUESTED_CALL = "REQUESTED_CALL"
    FROM_JOB_MSG = "FROM_JOB_MSG"
    # both directions (different meaning in each)
    NOTIFY = "NOTIFY"
    QUERY = "QUERY"
    ANSWER = "ANSWER"
    # scheduler -> Batsim
    EXECUTE_JOB = "EXECUTE_JOB"
    REJECT_JOB = "REJECT_JOB"
    KILL_JOB = "KILL_JOB"
    CALL_ME_LATER = "CALL_ME_LATER"
    SET_RESOURCE_STATE = "SET_RESOURCE_STATE"
    REGISTER_JOB = "REGISTER_JOB"
    REGISTER_PROFILE = "REGISTER_PROFILE"
    SET_JOB_METADATA = "SET_JOB_METADATA"
    CHANGE_JOB_STATE = "CHANGE_JOB_STATE"
    TO_JOB_MSG = "TO_JOB_MSG"


class JobState(str, Enum):
    """Final (and intermediate) job states of Batsim 4.2 (``JOB_COMPLETED.job_state``)."""

    NOT_SUBMITTED = "NOT_SUBMITTED"
    SUBMITTED = "SUBMITTED"
    RUNNING = "RUNNING"
    COMPLETED_SUCCESSFULLY = "COMPLETED_SUCCESSFULLY"
    COMPLETED_FAILED = "COMPLETED_FAILED"
    COMPLETED_WALLTIME_REACHED = "COMPLETED_WALLTIME_REACHED"
    COMPLETED_KILLED = "COMPLETED_KILLED"
    REJECTED = "REJECTED"


class NotifyType(str, Enum):
    """The NOTIFY kinds Batsim 4.2.1 sends or accepts."""

    NO_MORE_STATIC_JOB_TO_SUBMIT = "no_more_static_job_to_submit"
    NO_MORE_EXTERNAL_EVENT_TO_OCCUR = "no_more_external_event_to_occur"
    EVENT_MACHINE_UNAVAILABLE = "event_machine_unavailable"
    EVENT_MACHINE_AVAILABLE = "event_machine_available"
    REGISTRATION_FINISHED = "registration_finished"
    CONTINUE_REGISTRATION = "continue_registration"


#: The NOTIFY kinds Batsim 4.2.1 sends itself (``src/server.cpp``); any other one from
#: Batsim is an external event it forwards (``--forward-unknown-events``).
BATSIM_NOTIFY_KINDS = frozenset({NotifyType.NO_MORE_STATIC_JOB_TO_SUBMIT.value,
                                 NotifyType.NO_MORE_EXTERNAL_EVENT_TO_OCCUR.value,
                                 NotifyType.EVENT_MACHINE_UNAVAILABLE.value,
                                 NotifyType.EVENT_MACHINE_AVAILABLE.value})


# ---------------------------------------------------------------------------------------
# Batsim -> scheduler
# ---------------------------------------------------------------------------------------


class ResourceInfo(Struct, frozen=True):
    """One machine as announced in SIMULATION_BEGINS."""

    id: int
    name: str
    state: str = "idle"
    properties: dict[str, Any] = field(default_factory=dict)
    zone_properties: dict[str, Any] = field(default_factory=dict)


class SimulationBegins(Struct, frozen=True):
    """First event of every simulation: the platform, configuration and workloads."""

    timestamp: float
    nb_resources: int
    nb_compute_resources: int
    nb_storage_resources: int
    allow_compute_sharing: bool
    allow_storage_sharing: bool
    config: dict[str, Any]
    compute_resources: tuple[ResourceInfo, ...]
    storage_resources: tuple[ResourceInfo, ...]
    workloads: dict[str, str]
    profiles: dict[str, dict[str, Any]]
    extra: dict[str, Any] = field(default_factory=dict)


class SimulationEnds(Struct, frozen=True):
    """Last event: the scheduler replies with no events, then closes."""

    timestamp: float


class JobSubmitted(Struct, frozen=True):
    """A job is submitted (or a dynamic registration is acknowledged).

    ``job`` is the job's JSON as in the workload, extra user fields included; it is
    ``None`` with Redis. ``profile`` is present only with
    ``--forward-profiles-on-submission``.
    """

    timestamp: float
    job_id: str
    job: dict[str, Any] | None = None
    profile: dict[str, Any] | None = None


class JobCompleted(Struct, frozen=True):
    """A job ended: normally, failed, at its walltime, or killed."""

    timestamp: float
    job_id: str
    job_state: JobState
    return_code: int
    alloc: MachineSet


class JobKilled(Struct, frozen=True):
    """Acknowledges one KILL_JOB; ``job_progress`` has entries only for jobs really killed."""

    timestamp: float
    job_ids: tuple[str, ...]
    job_progress: dict[str, Any] = field(default_factory=dict)


class ResourceStateChanged(Struct, frozen=True):
    """Acknowledges SET_RESOURCE_STATE once every machine reached pstate ``state``."""

    timestamp: float
    resources: MachineSet
    state: str


class RequestedCall(Struct, frozen=True):
    """Answer to a CALL_ME_LATER."""

    timestamp: float


class Notify(Struct, frozen=True):
    """A NOTIFY from Batsim.

    ``kind`` is one of :class:`NotifyType` values, or, for an external event forwarded
    with ``--forward-unknown-events``, that event's own ``type``; ``data`` is then the
    whole event object. ``resources`` is set for machine (un)availability.
    """

    timestamp: float
    kind: str
    resources: MachineSet | None = None
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def is_forwarded_external_event(self) -> bool:
        """True for an unknown external event forwarded by Batsim."""
        return self.kind not in _NOTIFY_VALUES


#: The NOTIFY kinds Batsim itself sends; any other kind is a forwarded external event.
_NOTIFY_VALUES = frozenset({NotifyType.NO_MORE_STATIC_JOB_TO_SUBMIT.value,
                            NotifyType.NO_MORE_EXTERNAL_EVENT_TO_OCCUR.value,
                            NotifyType.EVENT_MACHINE_UNAVAILABLE.value,
                            NotifyType.EVENT_MACHINE_AVAILABLE.value})


class Query(Struct, frozen=True):
    """A QUERY; from Batsim ``estimate_waiting_time``, from the scheduler ``consumed_energy``."""

    timestamp: float | None
    requests: dict[str, Any]


class Answer(Struct, frozen=True):
    """An ANSWER; from Batsim ``consumed_energy``, from the scheduler ``estimate_waiting_time``."""

    timestamp: float | None
    data: dict[str, Any]


class FromJobMsg(Struct, frozen=True):
    """Undocumented: a message sent by a running job's profile to the scheduler."""

    timestamp: float
    job_id: str
    msg: Any


Event = Union[SimulationBegins, SimulationEnds, JobSubmitted, JobCompleted, JobKilled,
              ResourceStateChanged, RequestedCall, Notify, Query, Answer, FromJobMsg]


# ---------------------------------------------------------------------------------------
# scheduler -> Batsim
# ---------------------------------------------------------------------------------------


class ExecuteJob(Struct, frozen=True):
    """Start ``job_id`` on ``alloc``; at most one of the optional fields (Batsim rule)."""

    job_id: str
    alloc: MachineSet
    mapping: dict[int, int] | None = None
    storage_mapping: dict[str, int] | None = None
    additional_io_job: dict[str, Any] | None = None
    timestamp: float | None = None


class RejectJob(Struct, frozen=True):
    """Reject a submitted, not yet started job."""

    job_id: str
    timestamp: float | None = None


class KillJob(Struct, frozen=True):
    """Kill running jobs; acknowledged by JOB_COMPLETED(COMPLETED_KILLED) then JOB_KILLED."""

    job_ids: tuple[str, ...]
    timestamp: float | None = None


class CallMeLater(Struct, frozen=True):
    """Ask for a REQUESTED_CALL at simulated time ``at`` (strictly in the future)."""

    at: float
    timestamp: float | None = None


class SetResourceState(Struct, frozen=True):
    """Switch machines to pstate ``state`` (needs Batsim's ``-E``)."""

    resources: MachineSet
    state: str
    timestamp: float | None = None


class RegisterJob(Struct, frozen=True):
    """Register a dynamic job ``wl!name`` (needs ``--enable-dynamic-jobs``)."""

    job_id: str
    job: dict[str, Any] | None
    timestamp: float | None = None


class RegisterProfile(Struct, frozen=True):
    """Register a profile in a (possibly new) dynamic workload."""

    workload_name: str
    profile_name: str
    profile: dict[str, Any]
    timestamp: float | None = None


class RegistrationFinished(Struct, frozen=True):
    """NOTIFY registration_finished: no more dynamic jobs will be registered."""

    timestamp: float | None = None


class ContinueRegistration(Struct, frozen=True):
    """NOTIFY continue_registration: dynamic registration is open again."""

    timestamp: float | None = None


class SetJobMetadata(Struct, frozen=True):
    """Write ``metadata`` (no double quote allowed) in the job's jobs.csv row."""

    job_id: str
    metadata: str
    timestamp: float | None = None


class ChangeJobState(Struct, frozen=True):
    """Change a job's state in Batsim's bookkeeping without running anything."""

    job_id: str
    job_state: JobState
    kill_reason: str | None = None
    timestamp: float | None = None


class ToJobMsg(Struct, frozen=True):
    """Undocumented: a message to a running job's profile."""

    job_id: str
    msg: Any
    timestamp: float | None = None


Decision = Union[ExecuteJob, RejectJob, KillJob, CallMeLater, SetResourceState, RegisterJob,
                 RegisterProfile, RegistrationFinished, ContinueRegistration, SetJobMetadata,
                 ChangeJobState, Query, Answer, ToJobMsg]


class Request(Struct, frozen=True):
    """A whole message from Batsim: its ``now`` and its events in order."""

    now: float
    events: tuple[Event, ...]


class Reply(Struct, frozen=True):
    """A whole message from the scheduler: its ``now`` and its decisions in order."""

    now: float
    decisions: tuple[Decision, ...]
