"""Batsim -> EDC events: batprotocol's tables <-> Batsim 4's typed events, one function each.

``READ`` maps a table name to the function building the typed event (None for an event
the policies need not see); ``WRITE`` maps a typed event's class to the function building
its table (for a fake Batsim 5). Sources: Batsim ed55a974 ``src/protocol.cpp``
(``to_job``, ``to_simulation_begins``) and ``src/server.cpp`` (what each event carries).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from batpolicy.errors import ProtocolError
from batpolicy.protocol import types as t
from batpolicy.protocol.batprotocol import _schema as s
from batpolicy.protocol.batprotocol._fields import (
    NOTIFY_OF,
    TABLE_OF_NOTIFY,
    Memory,
    host,
    job_description,
    progress_to_v4,
    progress_to_v5,
    resource,
    signed_return_code,
    wire_job,
)
from batpolicy.protocol.intervals import MachineSet

__all__ = ["READ", "WRITE"]

Reader = Callable[[Memory, int, float, Any], "t.Event | None"]
Writer = Callable[[Memory, int, Any], tuple[str, Any]]


def _submitted(memory: Memory, index: int, at: float, table: s.JobSubmittedEvent) -> t.Event:
    return t.JobSubmitted(timestamp=at, job_id=table.job_id,
                          job=job_description(table.job_id, table.job, table.submission_time))


def _completed(memory: Memory, index: int, at: float, table: s.JobCompletedEvent) -> t.Event:
    try:
        state = t.JobState[table.state]
    except KeyError:
        raise ProtocolError(f"unknown final job state {table.state!r}", index=index,
                            event_type="JobCompletedEvent", field="event.state") from None
    return t.JobCompleted(timestamp=at, job_id=table.job_id, job_state=state,
                          return_code=signed_return_code(table.return_code),
                          alloc=memory.allocations.pop(table.job_id, MachineSet()))


def _killed(memory: Memory, index: int, at: float, table: s.JobsKilledEvent) -> t.Event:
    for job_id in table.job_ids:
        memory.allocations.pop(job_id, None)
    return t.JobKilled(timestamp=at, job_ids=tuple(table.job_ids),
                       job_progress={p.job_id: progress_to_v4(p.wrapper)
                                     for p in table.progresses})


def _requested_call(memory: Memory, index: int, at: float,
                    table: s.RequestedCallEvent) -> t.Event:
    memory.calls.pop(table.call_me_later_id, None)
    return t.RequestedCall(timestamp=at)


def _notify(kind: str) -> Reader:
    def read(memory: Memory, index: int, at: float, table: Any) -> t.Event:
        return t.Notify(timestamp=at, kind=kind)
    return read


def _begins(memory: Memory, index: int, at: float, table: s.SimulationBeginsEvent) -> t.Event:
    try:
        context = json.loads(table.batsim_execution_context_json)
    except ValueError:
        context = table.batsim_execution_context_json
    return t.SimulationBegins(
        timestamp=at, nb_resources=table.host_number,
        nb_compute_resources=table.computation_host_number,
        nb_storage_resources=table.storage_host_number,
        allow_compute_sharing=False, allow_storage_sharing=True,
        config={**memory.config, "batsim-execution-context": context},
        compute_resources=tuple(resource(h) for h in table.computation_hosts),
        storage_resources=tuple(resource(h) for h in table.storage_hosts),
        workloads={w.name: w.filename for w in table.workloads}, profiles={})


def _ends(memory: Memory, index: int, at: float, table: Any) -> t.Event:
    return t.SimulationEnds(timestamp=at)


def _hello_again(memory: Memory, index: int, at: float, table: Any) -> t.Event:
    raise ProtocolError("BatsimHelloEvent after the handshake", index=index,
                        event_type="BatsimHelloEvent")


#: Table name -> typed event (Batsim -> EDC).
READ: dict[str, Reader] = {
    "JobSubmittedEvent": _submitted,
    "JobCompletedEvent": _completed,
    "JobsKilledEvent": _killed,
    "RequestedCallEvent": _requested_call,
    "SimulationBeginsEvent": _begins,
    "SimulationEndsEvent": _ends,
    "BatsimHelloEvent": _hello_again,
    **{table: _notify(kind) for table, kind in NOTIFY_OF.items()},
}


def _write_submitted(memory: Memory, index: int, ev: t.JobSubmitted) -> tuple[str, Any]:
    # Batsim 5 stamps the submission when it happens (server_on_job_submitted)
    return "JobSubmittedEvent", s.JobSubmittedEvent(ev.job_id, wire_job(ev.job_id, ev.job or {}),
                                                    ev.timestamp)


def _write_completed(memory: Memory, index: int, ev: t.JobCompleted) -> tuple[str, Any]:
    return "JobCompletedEvent", s.JobCompletedEvent(ev.job_id, ev.job_state.value,
                                                    ev.return_code % 2 ** 32)


def _write_killed(memory: Memory, index: int, ev: t.JobKilled) -> tuple[str, Any]:
    return "JobsKilledEvent", s.JobsKilledEvent(list(ev.job_ids), [
        s.JobAndProgress(job, progress_to_v5(job, p)) for job, p in ev.job_progress.items()])


def _write_requested_call(memory: Memory, index: int, ev: t.RequestedCall) -> tuple[str, Any]:
    due = [(at, call) for call, at in memory.calls.items() if at <= ev.timestamp]
    call = min(due)[1] if due else "batpolicy"  # the earliest call due, by the EDC's id
    memory.calls.pop(call, None)
    return "RequestedCallEvent", s.RequestedCallEvent(call)


def _write_notify(memory: Memory, index: int, ev: t.Notify) -> tuple[str, Any]:
    table = TABLE_OF_NOTIFY.get(ev.kind)
    if table is None:
        raise ProtocolError(f"NOTIFY {ev.kind!r} has no batprotocol 3f3be00 form",
                            index=index, event_type="NOTIFY")
    return table, s.EmptyEvent()


def _write_begins(memory: Memory, index: int, ev: t.SimulationBegins) -> tuple[str, Any]:
    hosts = [host(r) for r in ev.compute_resources]
    storage = [host(r) for r in ev.storage_resources]
    return "SimulationBeginsEvent", s.SimulationBeginsEvent(
        batsim_execution_context_json="{}", host_number=len(hosts) + len(storage),
        computation_host_number=len(hosts), computation_hosts=hosts,
        storage_host_number=len(storage), storage_hosts=storage,
        workloads=[s.WorkloadAndFilename(k, v) for k, v in ev.workloads.items()])


def _write_ends(memory: Memory, index: int, ev: t.SimulationEnds) -> tuple[str, Any]:
    return "SimulationEndsEvent", s.EmptyEvent()


#: Typed event class -> table (a fake Batsim 5's messages).
WRITE: dict[type, Writer] = {
    t.JobSubmitted: _write_submitted,
    t.JobCompleted: _write_completed,
    t.JobKilled: _write_killed,
    t.RequestedCall: _write_requested_call,
    t.Notify: _write_notify,
    t.SimulationBegins: _write_begins,
    t.SimulationEnds: _write_ends,
}
