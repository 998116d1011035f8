"""The wire schema of what Batsim sends: one struct per ``type`` (Batsim's protocol: events).

Three events carry objects whose members are open: SIMULATION_BEGINS (unknown members
are kept in ``extra``; its raw parts, config, workloads and profiles, are kept as
given), and a NOTIFY from Batsim (a kind Batsim does not know itself is a forwarded
external event, kept whole); their ``typed()`` checks them with
:func:`~batpolicy.protocol._schema.check_part`.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import ClassVar

from msgspec import Struct

from batpolicy.protocol._schema import (
    Data,
    JobMsg,
    MachineState,
    Object,
    WireEvent,
    check_job,
    check_part,
)
from batpolicy.protocol._wire import (
    Count,
    FieldError,
    Int32,
    JobId,
    Name,
    Number,
    PlainJobId,
    check_job_id,
    type_name,
)
from batpolicy.protocol.intervals import MachineSet
from batpolicy.protocol.types import (
    Answer,
    FromJobMsg,
    JobCompleted,
    JobKilled,
    JobState,
    JobSubmitted,
    Notify,
    NotifyType,
    Query,
    RequestedCall,
    ResourceInfo,
    ResourceStateChanged,
    SimulationBegins,
    SimulationEnds,
)


class WireResource(Struct, forbid_unknown_fields=True):
    """One machine of SIMULATION_BEGINS."""

    id: Count
    name: Name
    state: MachineState
    properties: Object
    zone_properties: Object


class Begins(Struct):
    """SIMULATION_BEGINS' known members (others are kept in ``extra``)."""

    nb_resources: Count
    nb_compute_resources: Count
    nb_storage_resources: Count
    allow_compute_sharing: bool
    allow_storage_sharing: bool
    config: Object
    compute_resources: list[WireResource]
    storage_resources: list[WireResource]
    workloads: dict[Name, str]
    profiles: dict[Name, dict[Name, Object]]

    KNOWN: ClassVar[frozenset[str]]


Begins.KNOWN = frozenset(Begins.__struct_fields__)


def _resources(resources: list[WireResource]) -> tuple[ResourceInfo, ...]:
    return tuple(ResourceInfo(r.id, r.name, r.state, r.properties, r.zone_properties)
                 for r in resources)


class SimulationBeginsEvent(WireEvent, tag="SIMULATION_BEGINS"):
    """SIMULATION_BEGINS: its raw parts (config, workloads, profiles) are kept as given."""

    data: Object

    def typed(self) -> SimulationBegins:
        """The platform, configuration and workloads."""
        d = self.data
        b = check_part(d, Begins, "data")
        extra = {k: v for k, v in d.items() if k not in Begins.KNOWN} if len(d) > 10 else {}
        return SimulationBegins(self.timestamp, b.nb_resources, b.nb_compute_resources,
                                b.nb_storage_resources, b.allow_compute_sharing,
                                b.allow_storage_sharing, d["config"],
                                _resources(b.compute_resources),
                                _resources(b.storage_resources), d["workloads"], d["profiles"],
                                extra)


class SimulationEndsEvent(WireEvent, tag="SIMULATION_ENDS"):
    """SIMULATION_ENDS: empty data."""

    data: Data

    def typed(self) -> SimulationEnds:
        """The last event."""
        return SimulationEnds(self.timestamp)


class Submitted(Data):
    """JOB_SUBMITTED: ``job`` absent with Redis, ``profile`` only with forwarding."""

    job_id: PlainJobId
    job: Object = None  # type: ignore[assignment]  # absent, never null
    profile: Object = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        check_job_id(self.job_id)
        if self.job is not None:
            check_job(self.job, "job", registration=False)
        elif self.profile is not None:
            raise FieldError("profile", "a forwarded profile comes only with its job")


class JobSubmittedEvent(WireEvent, tag="JOB_SUBMITTED"):
    """JOB_SUBMITTED."""

    data: Submitted

    def typed(self) -> JobSubmitted:
        """The submission."""
        d = self.data
        return JobSubmitted(self.timestamp, d.job_id, d.job, d.profile)


class Completed(Data):
    """JOB_COMPLETED (4.2.1 sends no ``kill_reason``)."""

    job_id: PlainJobId
    job_state: JobState
    return_code: Int32
    alloc: MachineSet

    def __post_init__(self) -> None:
        check_job_id(self.job_id)


class JobCompletedEvent(WireEvent, tag="JOB_COMPLETED"):
    """JOB_COMPLETED."""

    data: Completed

    def typed(self) -> JobCompleted:
        """The completion."""
        d = self.data
        return JobCompleted(self.timestamp, d.job_id, d.job_state, d.return_code, d.alloc)


class Killed(Data):
    """JOB_KILLED; progress entries (key ``profile_name``) are kept raw."""

    job_ids: list[JobId]
    job_progress: dict[str, Object]


class JobKilledEvent(WireEvent, tag="JOB_KILLED"):
    """JOB_KILLED."""

    data: Killed

    def typed(self) -> JobKilled:
        """The acknowledgement of a KILL_JOB."""
        return JobKilled(self.timestamp, tuple(self.data.job_ids), self.data.job_progress)


class StateChanged(Data):
    """Machines and their new pstate (a string)."""

    resources: MachineSet
    state: str


class ResourceStateChangedEvent(WireEvent, tag="RESOURCE_STATE_CHANGED"):
    """RESOURCE_STATE_CHANGED."""

    data: StateChanged

    def typed(self) -> ResourceStateChanged:
        """The acknowledgement of a SET_RESOURCE_STATE."""
        return ResourceStateChanged(self.timestamp, self.data.resources, self.data.state)


class RequestedCallEvent(WireEvent, tag="REQUESTED_CALL"):
    """REQUESTED_CALL: empty data."""

    data: Data

    def typed(self) -> RequestedCall:
        """The answer to a CALL_ME_LATER."""
        return RequestedCall(self.timestamp)


class NotifyPlain(Data):
    """A NOTIFY from Batsim with only its kind."""

    type: str


class NotifyMachines(Data):
    """A NOTIFY from Batsim about machines (un)availability."""

    type: str
    resources: MachineSet


#: The NOTIFY kinds Batsim itself sends, and the members each has.
_BATSIM_NOTIFY: Mapping[str, type] = MappingProxyType({
    NotifyType.NO_MORE_STATIC_JOB_TO_SUBMIT.value: NotifyPlain,
    NotifyType.NO_MORE_EXTERNAL_EVENT_TO_OCCUR.value: NotifyPlain,
    NotifyType.EVENT_MACHINE_UNAVAILABLE.value: NotifyMachines,
    NotifyType.EVENT_MACHINE_AVAILABLE.value: NotifyMachines,
})


class BatsimNotifyEvent(WireEvent, tag="NOTIFY"):
    """NOTIFY from Batsim; a kind it does not know itself is a forwarded external event."""

    data: Object

    def typed(self) -> Notify:
        """Batsim's own notification, or the forwarded event whole."""
        d = self.data
        kind = d.get("type")
        if type(kind) is not str:
            raise FieldError("data.type", f"expected a string, got {type_name(kind)}")
        schema = _BATSIM_NOTIFY.get(kind)
        if schema is None:  # --forward-unknown-events: data is the whole event object
            return Notify(self.timestamp, kind, None, d)
        return Notify(self.timestamp, kind, getattr(check_part(d, schema, "data"),
                                                    "resources", None))


class WaitingTimeRequest(Struct, forbid_unknown_fields=True):
    """The one request Batsim sends."""

    estimate_waiting_time: Object


class BatsimQuery(Data):
    """QUERY from Batsim: only ``estimate_waiting_time``."""

    requests: WaitingTimeRequest


class BatsimQueryEvent(WireEvent, tag="QUERY"):
    """QUERY from Batsim."""

    data: BatsimQuery

    def typed(self) -> Query:
        """The question."""
        return Query(self.timestamp, {"estimate_waiting_time":
                                      self.data.requests.estimate_waiting_time})


class Energy(Data):
    """ANSWER from Batsim: only ``consumed_energy`` (joules)."""

    consumed_energy: Number


class BatsimAnswerEvent(WireEvent, tag="ANSWER"):
    """ANSWER from Batsim."""

    data: Energy

    def typed(self) -> Answer:
        """The answer."""
        return Answer(self.timestamp, {"consumed_energy": self.data.consumed_energy})


class FromJobMsgEvent(WireEvent, tag="FROM_JOB_MSG"):
    """FROM_JOB_MSG."""

    data: JobMsg

    def typed(self) -> FromJobMsg:
        """The job's message."""
        return FromJobMsg(self.timestamp, self.data.job_id, self.data.msg)
