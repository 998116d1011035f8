"""batprotocol's FlatBuffers JSON, table by table, as msgspec structs.

The schema is ``batprotocol.fbs`` at batprotocol 3f3be00 (2024-12-17), the version the
Batsim 5 development snapshot ed55a974 builds with. Batsim writes its messages with
``flatbuffers::GenerateText`` under ``strict_json`` and ``output_default_scalars_in_json``
(batprotocol ``cpp/src/message_builder.cpp``), so every scalar appears even when it
holds its default, enums are written as their names, and a union field ``x`` is two
members: ``x_type`` (the table's name) then ``x`` (the table). Tables the C++ builder
always fills (``profile_allocation_override``, ``storage_placement``, the hello's
features and constraints) are written here too: Batsim ed55a974 reads them without a
null check (``src/protocol.cpp``, ``from_execute_job`` and ``from_edc_hello``).

Decoding keeps members this module does not name (a newer batprotocol may add some; the
FlatBuffers parser on Batsim's side refuses unknown ones, so we never write any).
"""

from __future__ import annotations

from typing import Annotated, Any

from msgspec import Meta, Raw, Struct, field

__all__ = [
    "AllocationPlacement", "CallMeLaterEvent", "EDCHelloEvent", "EventAndTimestamp",
    "ExecuteJobEvent", "Features", "Host", "HostProperty", "JobAndProgress",
    "JobCompletedEvent", "JobSubmittedEvent", "JobsKilledEvent", "KillJobsEvent", "Message",
    "OneShot", "RegisterJobEvent", "RegisterProfileEvent", "RejectJobEvent",
    "RequestedCallEvent", "SchedulingConstraints", "SimulationBeginsEvent",
    "StopCallMeLaterEvent", "StorageHost", "WireJob", "WorkloadAndFilename",
]

_FLOAT_MAX = 1.7976931348623157e308
#: A finite float64.
F64 = Annotated[float, Meta(ge=-_FLOAT_MAX, le=_FLOAT_MAX)]
#: A uint32.
U32 = Annotated[int, Meta(ge=0, le=2 ** 32 - 1)]
#: A uint64.
U64 = Annotated[int, Meta(ge=0, le=2 ** 64 - 1)]


class _Table(Struct, omit_defaults=False, forbid_unknown_fields=False):
    """Base of every table: every member written, unknown members tolerated on reading."""


# ------------------------------------------------------------------ envelope
class EventAndTimestamp(_Table):
    """One event: its timestamp, the union's table name, the table (kept raw)."""

    timestamp: F64
    event_type: str
    event: Raw = field(default_factory=lambda: Raw(b"{}"))


class Message(_Table):
    """Root table: ``now`` and the events in order."""

    now: F64
    events: list[EventAndTimestamp] = field(default_factory=list)


# ------------------------------------------------------------------ shared tables
class WireJob(_Table):
    """``Job``: what a job asks for (no submission time: it is in JobSubmittedEvent)."""

    resource_request: U32 = 0
    walltime: F64 = 0.0
    extra_data: str | None = None
    rigid: bool = True
    profile_id: str | None = None


class HostProperty(_Table):
    """A SimGrid host (or zone) property."""

    key: str
    value: str


class Host(_Table):
    """A host of SimulationBeginsEvent."""

    name: str
    id: U32 = 0
    pstate: U32 = 0
    pstate_count: U32 = 1
    state: str = "SLEEPING"
    properties: list[HostProperty] = field(default_factory=list)
    zone_properties: list[HostProperty] = field(default_factory=list)
    core_count: U32 = 1
    computation_speed: list[F64] = field(default_factory=list)


class WorkloadAndFilename(_Table):
    """A static workload and its file."""

    name: str
    filename: str


# ------------------------------------------------------------------ Batsim -> EDC
class BatsimHelloEvent(_Table):
    """Batsim's first event: the EDC answers with EDCHelloEvent."""

    batprotocol_version: str
    batsim_version: str
    batsim_commit: str | None = None


class SimulationBeginsEvent(_Table):
    """The platform and the static workloads."""

    batsim_execution_context_json: str
    host_number: U32 = 0
    computation_host_number: U32 = 0
    computation_hosts: list[Host] = field(default_factory=list)
    storage_host_number: U32 = 0
    storage_hosts: list[Host] = field(default_factory=list)
    batsim_arguments: list[str] = field(default_factory=list)
    workloads: list[WorkloadAndFilename] = field(default_factory=list)
    profiles: list[dict[str, Any]] | None = None


class JobSubmittedEvent(_Table):
    """A job is submitted (or a registered job acknowledged)."""

    job_id: str
    job: WireJob
    submission_time: F64 = 0.0


class JobCompletedEvent(_Table):
    """A job ended; ``state`` is a FinalJobState name."""

    job_id: str
    state: str = "COMPLETED_SUCCESSFULLY"
    return_code: U32 = 0


class JobAndProgress(_Table):
    """A killed job and its progress (a KillProgressWrapper, kept as JSON)."""

    job_id: str
    wrapper: dict[str, Any]


class JobsKilledEvent(_Table):
    """Acknowledges a KillJobsEvent."""

    job_ids: list[str]
    progresses: list[JobAndProgress]


class RequestedCallEvent(_Table):
    """A CallMeLater fired."""

    call_me_later_id: str
    last_periodic_call: bool = False


class EmptyEvent(_Table):
    """SimulationEnds, AllStaticJobsHaveBeenSubmitted, FinishRegistration... (no member)."""


# ------------------------------------------------------------------ EDC -> Batsim
class Features(_Table):
    """``EDCRequestedSimulationFeatures``: what Batsim 4 took on its command line."""

    dynamic_registration: bool = False
    profile_reuse: bool = False
    acknowledge_dynamic_jobs: bool = False
    forward_profiles_on_job_submission: bool = False
    forward_profiles_on_jobs_killed: bool = False
    forward_profiles_on_simulation_begins: bool = False
    forward_unknown_external_events: bool = False


class SchedulingConstraints(_Table):
    """``EDCSchedulingConstraints`` (batprotocol's defaults)."""

    compute_sharing: bool = False
    storage_sharing: bool = True
    job_allocation_validation_strategy: str = "MatchJobRequestExactly"


class EDCHelloEvent(_Table):
    """The EDC's answer to BatsimHelloEvent: who it is and the features it wants."""

    batprotocol_version: str
    decision_component_name: str
    decision_component_version: str
    decision_component_commit: str = ""
    requested_simulation_features: Features = field(default_factory=Features)
    scheduling_constraints: SchedulingConstraints = field(default_factory=SchedulingConstraints)


class AllocationPlacement(_Table):
    """Hosts of a job and where its SimGrid executors go (a union, kept as JSON)."""

    host_allocation: str
    executor_placement_type: str = "PredefinedExecutorPlacementStrategyWrapper"
    executor_placement: dict[str, Any] = field(
        default_factory=lambda: {"strategy": "SpreadOverHostsFirst"})


class StorageHost(_Table):
    """A storage name placed on a host id."""

    storage_name: str
    host_id: U32 = 0


class ExecuteJobEvent(_Table):
    """Start a job."""

    job_id: str
    allocation: AllocationPlacement
    profile_allocation_override: list[dict[str, Any]] = field(default_factory=list)
    storage_placement: list[StorageHost] = field(default_factory=list)


class RejectJobEvent(_Table):
    """Reject a submitted job."""

    job_id: str


class KillJobsEvent(_Table):
    """Kill running jobs."""

    job_ids: list[str]


class OneShot(_Table):
    """A one-shot temporal trigger at an absolute time, in whole seconds or milliseconds."""

    time: U64 = 0
    time_unit: str = "Second"


class CallMeLaterEvent(_Table):
    """Ask for a RequestedCallEvent (one-shot or periodic)."""

    call_me_later_id: str
    when_type: str
    when: dict[str, Any]


class StopCallMeLaterEvent(_Table):
    """Cancel a CallMeLater."""

    call_me_later_id: str


class RegisterJobEvent(_Table):
    """Register a dynamic job."""

    job_id: str
    job: WireJob


class RegisterProfileEvent(_Table):
    """Register a dynamic profile (``profile`` is a ProfileAndId, kept as JSON)."""

    profile: dict[str, Any]


#: Batsim -> EDC tables this codec reads, by union name.
FROM_BATSIM: dict[str, type[_Table]] = {
    "BatsimHelloEvent": BatsimHelloEvent,
    "SimulationBeginsEvent": SimulationBeginsEvent,
    "SimulationEndsEvent": EmptyEvent,
    "JobSubmittedEvent": JobSubmittedEvent,
    "JobCompletedEvent": JobCompletedEvent,
    "JobsKilledEvent": JobsKilledEvent,
    "RequestedCallEvent": RequestedCallEvent,
    "AllStaticJobsHaveBeenSubmittedEvent": EmptyEvent,
    "AllStaticExternalEventsHaveBeenInjectedEvent": EmptyEvent,
}

#: EDC -> Batsim tables this codec reads (replies recorded from other EDCs), by union name.
FROM_EDC: dict[str, type[_Table]] = {
    "EDCHelloEvent": EDCHelloEvent,
    "ExecuteJobEvent": ExecuteJobEvent,
    "RejectJobEvent": RejectJobEvent,
    "KillJobsEvent": KillJobsEvent,
    "CallMeLaterEvent": CallMeLaterEvent,
    "StopCallMeLaterEvent": StopCallMeLaterEvent,
    "RegisterJobEvent": RegisterJobEvent,
    "RegisterProfileEvent": RegisterProfileEvent,
    "FinishRegistrationEvent": EmptyEvent,
    "ForceSimulationStopEvent": EmptyEvent,
}
