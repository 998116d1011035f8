"""EDC -> Batsim decisions: Batsim 4's typed decisions <-> batprotocol's tables, one function each.

``WRITE`` maps a typed decision's class to the function building its table; ``READ``
maps a table name to the function building the typed decision back (for replies
recorded from other EDCs and for a fake Batsim 5). Batsim 4 decisions without a table in
batprotocol 3f3be00 are listed in :data:`UNSUPPORTED` with the reason. Sources: Batsim
ed55a974 ``src/protocol.cpp`` (``from_execute_job``, ``from_call_me_later``...).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from batpolicy.errors import ProtocolError
from batpolicy.protocol import types as t
from batpolicy.protocol.batprotocol import _schema as s
from batpolicy.protocol.batprotocol._fields import (
    Memory,
    call_time_ms,
    hosts_text,
    job_description,
    parse_hosts,
    wire_job,
)

__all__ = ["READ", "UNSUPPORTED", "WRITE"]

Writer = Callable[[Memory, int, Any], tuple[str, Any]]
Reader = Callable[[Memory, int, float, Any], "t.Decision | None"]

#: Batsim 4 decisions with no batprotocol 3f3be00 table, and why.
UNSUPPORTED: Mapping[type, str] = {
    t.SetResourceState: "batprotocol 3f3be00 has no ChangeHostsPStateEvent (Batsim 5 rc2 "
                        "adds one; this codec speaks the public schema only)",
    t.SetJobMetadata: "Batsim 5 has no SET_JOB_METADATA",
    t.ChangeJobState: "Batsim 5 has no CHANGE_JOB_STATE",
    t.Query: "Batsim 5 has no QUERY (use an energy probe)",
    t.Answer: "Batsim 5 has no ANSWER",
    t.ToJobMsg: "Batsim 5 has no TO_JOB_MSG",
    t.ContinueRegistration: "Batsim 5 cannot reopen registration (FinishRegistration is final)",
    t.RegisterProfile: "registering a Batsim 4 JSON profile has no batprotocol form here",
}


def _execute(memory: Memory, index: int, d: t.ExecuteJob) -> tuple[str, Any]:
    if d.additional_io_job is not None:
        raise ProtocolError("Batsim 5 has no additional_io_job", index=index,
                            event_type="ExecuteJobEvent", field="additional_io_job")
    memory.allocations[d.job_id] = d.alloc
    hosts = hosts_text(d.alloc, memory.host_separator)
    placement = s.AllocationPlacement(host_allocation=hosts)
    if d.mapping is not None:  # executor rank -> index in the allocation, as Batsim 4's
        placement = s.AllocationPlacement(
            host_allocation=hosts, executor_placement_type="CustomExecutorToHostMapping",
            executor_placement={"mapping": [d.mapping[r] for r in sorted(d.mapping)]})
    storage = [s.StorageHost(name, h) for name, h in (d.storage_mapping or {}).items()]
    return "ExecuteJobEvent", s.ExecuteJobEvent(d.job_id, placement, storage_placement=storage)


def _reject(memory: Memory, index: int, d: t.RejectJob) -> tuple[str, Any]:
    return "RejectJobEvent", s.RejectJobEvent(d.job_id)


def _kill(memory: Memory, index: int, d: t.KillJob) -> tuple[str, Any]:
    return "KillJobsEvent", s.KillJobsEvent(list(d.job_ids))


def _call_me_later(memory: Memory, index: int, d: t.CallMeLater) -> tuple[str, Any]:
    return "CallMeLaterEvent", s.CallMeLaterEvent(
        memory.new_call(d.at), "OneShot",
        {"time": call_time_ms(d.at), "time_unit": "Millisecond"})


def _register_job(memory: Memory, index: int, d: t.RegisterJob) -> tuple[str, Any]:
    if d.job is None:
        raise ProtocolError("REGISTER_JOB needs the job's description", index=index,
                            event_type="RegisterJobEvent", field="job")
    return "RegisterJobEvent", s.RegisterJobEvent(d.job_id, wire_job(d.job_id, d.job))


def _finish_registration(memory: Memory, index: int, d: t.RegistrationFinished
                         ) -> tuple[str, Any]:
    return "FinishRegistrationEvent", s.EmptyEvent()


#: Typed decision class -> table.
WRITE: dict[type, Writer] = {
    t.ExecuteJob: _execute,
    t.RejectJob: _reject,
    t.KillJob: _kill,
    t.CallMeLater: _call_me_later,
    t.RegisterJob: _register_job,
    t.RegistrationFinished: _finish_registration,
}


def _read_execute(memory: Memory, index: int, at: float, table: s.ExecuteJobEvent
                  ) -> t.Decision:
    alloc = parse_hosts(table.allocation.host_allocation, index=index,
                        field="event.allocation.host_allocation",
                        separator=memory.host_separator)
    mapping = None
    if table.allocation.executor_placement_type == "CustomExecutorToHostMapping":
        mapping = dict(enumerate(table.allocation.executor_placement.get("mapping", [])))
    storage = {p.storage_name: p.host_id for p in table.storage_placement} or None
    return t.ExecuteJob(job_id=table.job_id, alloc=alloc, mapping=mapping,
                        storage_mapping=storage, timestamp=at)


def _read_reject(memory: Memory, index: int, at: float, table: s.RejectJobEvent) -> t.Decision:
    return t.RejectJob(job_id=table.job_id, timestamp=at)


def _read_kill(memory: Memory, index: int, at: float, table: s.KillJobsEvent) -> t.Decision:
    return t.KillJob(job_ids=tuple(table.job_ids), timestamp=at)


def _read_call_me_later(memory: Memory, index: int, at: float, table: s.CallMeLaterEvent
                        ) -> t.Decision:
    if table.when_type != "OneShot":
        raise ProtocolError("only one-shot calls have a Batsim 4 counterpart", index=index,
                            event_type="CallMeLaterEvent", field="event.when_type")
    unit = 1e-3 if table.when.get("time_unit") == "Millisecond" else 1.0
    memory.calls[table.call_me_later_id] = table.when.get("time", 0) * unit
    return t.CallMeLater(at=memory.calls[table.call_me_later_id], timestamp=at)


def _read_register_job(memory: Memory, index: int, at: float, table: s.RegisterJobEvent
                       ) -> t.Decision:
    return t.RegisterJob(job_id=table.job_id, timestamp=at,
                         job=job_description(table.job_id, table.job, at))


def _read_finish_registration(memory: Memory, index: int, at: float, table: Any
                              ) -> t.Decision:
    return t.RegistrationFinished(timestamp=at)


def _read_hello(memory: Memory, index: int, at: float, table: Any) -> None:
    return None


#: Table name -> typed decision (EDC -> Batsim).
READ: dict[str, Reader] = {
    "ExecuteJobEvent": _read_execute,
    "RejectJobEvent": _read_reject,
    "KillJobsEvent": _read_kill,
    "CallMeLaterEvent": _read_call_me_later,
    "RegisterJobEvent": _read_register_job,
    "FinishRegistrationEvent": _read_finish_registration,
    "EDCHelloEvent": _read_hello,
}
