"""Batsim 5's batprotocol (FlatBuffers JSON) <-> the typed events and decisions of Batsim 4.

One :class:`Batsim5Codec` per conversation: batprotocol leaves out what Batsim 4 repeated
in every message (a JobCompletedEvent has no allocation, a RequestedCallEvent names the
call instead of its time), so the codec remembers what it needs from the decisions it
encoded. Policies, the state and the checker see exactly the events of Batsim 4.

Mapping (Batsim ed55a974 ``src/protocol.cpp`` and ``src/server.cpp``, batprotocol
3f3be00 ``batprotocol.fbs``):

=============================================  =========================================
Batsim 5 (batprotocol)                         Batsim 4 typed event / decision
=============================================  =========================================
SimulationBeginsEvent                          SimulationBegins (``config`` from the hello)
JobSubmittedEvent (``job``, submission_time)   JobSubmitted (``job``: id, subtime, res,
                                               walltime or -1, profile, extra_data's fields)
JobCompletedEvent (no allocation)              JobCompleted (the allocation we sent)
JobsKilledEvent                                JobKilled (``job_progress`` per killed job)
RequestedCallEvent                             RequestedCall
AllStaticJobsHaveBeenSubmittedEvent            Notify no_more_static_job_to_submit
AllStaticExternalEventsHaveBeenInjectedEvent   Notify no_more_external_event_to_occur
SimulationEndsEvent                            SimulationEnds
ExecuteJobEvent                                ExecuteJob (``mapping``: a custom executor
                                               placement; ``storage_mapping``: storage
                                               placement)
RejectJobEvent / KillJobsEvent                 RejectJob / KillJob
CallMeLaterEvent (OneShot, whole ms)           CallMeLater (``at`` rounded up to the ms)
RegisterJobEvent / FinishRegistrationEvent     RegisterJob / RegistrationFinished
=============================================  =========================================

Batsim 4 decisions batprotocol 3f3be00 has no table for (SET_RESOURCE_STATE,
SET_JOB_METADATA, CHANGE_JOB_STATE, QUERY, ANSWER, TO_JOB_MSG, continue_registration,
REGISTER_PROFILE of a Batsim 4 profile) raise one :class:`ProtocolError` naming the
decision; so do Batsim 5 events without a Batsim 4 counterpart (probes, periodic calls).

Host sets are written ``1-12,14-17`` for the snapshot (intervalset's ``to_string_hyphen``
default separator, which Batsim ed55a974 and its EDCs use), ``1-12 14-17`` for rc2 (whose
``src/protocol.cpp`` asks for spaces again, as Batsim 4).

Framing: Batsim sends its JSON as a NUL-terminated C string and parses ours with
``flatbuffers::Parser::Parse(const char *)`` (batprotocol ``cpp/src/util.cpp``), so every
message we send ends with one NUL byte.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import msgspec

from batpolicy.errors import ProtocolError
from batpolicy.protocol import types as t
from batpolicy.protocol.batprotocol import _schema as s
from batpolicy.protocol.batprotocol.handshake import EdcIdentity
from batpolicy.protocol.intervals import MachineSet, format_intervals, parse_intervals

__all__ = ["Batsim5Codec", "UNSUPPORTED_DECISIONS"]

_DECODER = msgspec.json.Decoder(s.Message)
_ENCODER = msgspec.json.Encoder()
_TABLE_DECODERS = {name: msgspec.json.Decoder(cls) for name, cls in s.FROM_BATSIM.items()}
_REPLY_DECODERS = {name: msgspec.json.Decoder(cls) for name, cls in s.FROM_EDC.items()}

_NOTIFY_OF = {
    "AllStaticJobsHaveBeenSubmittedEvent": t.NotifyType.NO_MORE_STATIC_JOB_TO_SUBMIT.value,
    "AllStaticExternalEventsHaveBeenInjectedEvent":
        t.NotifyType.NO_MORE_EXTERNAL_EVENT_TO_OCCUR.value,
}

#: Batsim 4 decisions with no batprotocol 3f3be00 table, and what a user can do instead.
UNSUPPORTED_DECISIONS: Mapping[type, str] = {
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


def hosts_text(hosts: MachineSet, separator: str = ",") -> str:
    """A host set as Batsim 5 writes it (intervalset's ``to_string_hyphen``).

    The snapshot and its EDCs use its default separator, a comma; rc2 passes a space
    (Batsim 4's).

    >>> hosts_text(MachineSet.of((1, 12), (14, 17), 20)), hosts_text(MachineSet.of(1, 3), " ")
    ('1-12,14-17,20', '1 3')
    """
    text = format_intervals(hosts)
    return text if separator == " " else text.replace(" ", separator)


def parse_hosts(text: str, *, field: str, index: int, separator: str = ",") -> MachineSet:
    """A host set in Batsim 5's form (ProtocolError naming ``field``).

    >>> parse_hosts("1-12,14-17", field="f", index=0) == MachineSet.of((1, 12), (14, 17))
    True
    """
    other = " " if separator == "," else ","
    if other in text:
        raise ProtocolError(f"hosts {text[:80]!r}: this Batsim 5 separates intervals with "
                            f"{'commas' if separator == ',' else 'spaces'}",
                            index=index, field=field)
    return parse_intervals(text.replace(separator, " "), field=field, index=index)


def _strip_nul(raw: bytes) -> bytes:
    r"""The JSON text of a message: Batsim's C strings end with one NUL byte.

    >>> _strip_nul(b'{"now":0.0}\x00'), _strip_nul(b'{}')
    (b'{"now":0.0}', b'{}')
    """
    return raw[:-1] if raw[-1:] == b"\0" else raw


def call_time_ms(at: float) -> int:
    """A CallMeLater time in whole milliseconds, never before ``at``.

    batprotocol's OneShot holds an integer time; rounding up keeps Batsim 4's promise
    that the call comes at or after ``at`` (Batsim 5 fires a call in the past at once).

    >>> call_time_ms(10.0), call_time_ms(0.0015), call_time_ms(1e-7)
    (10000, 2, 1)
    """
    ms = at * 1000.0
    whole = round(ms)
    return whole if abs(ms - whole) < 1e-6 else math.ceil(ms)


def signed_return_code(code: int) -> int:
    """A return code as Batsim 4 gave it.

    Batsim 5 writes its C ``int`` into batprotocol's ``uint32``: a walltime-killed job's -1
    arrives as 4294967295.

    >>> signed_return_code(4294967295), signed_return_code(3)
    (-1, 3)
    """
    return code - 2 ** 32 if code >= 2 ** 31 else code


def _properties(props: list[s.HostProperty]) -> dict[str, str]:
    return {p.key: p.value for p in props}


def _resource(host: s.Host) -> t.ResourceInfo:
    return t.ResourceInfo(id=host.id, name=host.name, state=host.state.lower(),
                          properties=_properties(host.properties),
                          zone_properties=_properties(host.zone_properties))


def _host(info: t.ResourceInfo) -> s.Host:
    return s.Host(name=info.name, id=info.id, state=info.state.upper(),
                  properties=[s.HostProperty(str(k), str(v)) for k, v in info.properties.items()],
                  zone_properties=[s.HostProperty(str(k), str(v))
                                   for k, v in info.zone_properties.items()])


def job_description(job_id: str, job: s.WireJob, submission_time: float) -> dict[str, Any]:
    """The Batsim 4 job object of a batprotocol Job.

    ``walltime`` <= 0 means "none" in Batsim 5 (its EASY EDC rejects such jobs), -1 in
    Batsim 4. The members of ``extra_data`` (a JSON object as a string, Batsim 5's place
    for user fields) join the object as Batsim 4's extra job fields did, without
    replacing the protocol's own.

    >>> job_description("w0!1", s.WireJob(4, 60.0, '{"deadline": 90}', True, "w0!p"), 5.0)
    {'id': 'w0!1', 'subtime': 5.0, 'res': 4, 'walltime': 60.0, 'profile': 'p', 'deadline': 90}
    """
    profile = job.profile_id or ""
    desc: dict[str, Any] = {"id": job_id, "subtime": submission_time,
                            "res": job.resource_request,
                            "walltime": job.walltime if job.walltime > 0 else -1,
                            "profile": profile.partition("!")[2] or profile}
    if job.extra_data:
        try:
            extra = json.loads(job.extra_data)
        except ValueError:
            extra = None
        if isinstance(extra, dict):
            for key, value in extra.items():
                desc.setdefault(key, value)
        else:
            desc["extra_data"] = job.extra_data
    return desc


def _wire_job(job_id: str, desc: Mapping[str, Any]) -> s.WireJob:
    walltime = desc.get("walltime", -1)
    profile = str(desc.get("profile", ""))
    workload = job_id.partition("!")[0]
    known = {"id", "subtime", "res", "walltime", "profile"}
    extra = {k: v for k, v in desc.items() if k not in known}
    return s.WireJob(resource_request=int(desc["res"]),
                     walltime=float(walltime) if walltime and walltime > 0 else -1.0,
                     extra_data=json.dumps(extra, sort_keys=True) if extra else "",
                     profile_id=profile if "!" in profile else f"{workload}!{profile}")


def _progress_to_v4(wrapper: Mapping[str, Any]) -> dict[str, Any]:
    """A KillProgressWrapper as Batsim 4's job_progress entry (``profile_name`` keys)."""
    kind = wrapper.get("kill_progress_type")
    body = wrapper.get("kill_progress") or {}
    out: dict[str, Any] = {"profile_name": str(body.get("profile_id", "")).partition("!")[2]}
    if kind == "KillProgressSequentialProfile":
        out["current_task_index"] = body.get("current_task_index", 0)
        out["current_task"] = _progress_to_v4(body.get("current_task_progress") or {})
    else:
        out["progress"] = body.get("progress", 0.0)
    return out


def _progress_to_v5(job_id: str, entry: Mapping[str, Any]) -> dict[str, Any]:
    """Batsim 4's job_progress entry as a KillProgressWrapper (inverse of _progress_to_v4)."""
    profile = f"{job_id.partition('!')[0]}!{entry.get('profile_name', '')}"
    if "current_task" in entry:
        return {"kill_progress_type": "KillProgressSequentialProfile", "kill_progress": {
            "profile_id": profile, "current_repetition": 0,
            "current_task_index": entry.get("current_task_index", 0),
            "current_task_progress": _progress_to_v5(job_id, entry["current_task"])}}
    return {"kill_progress_type": "KillProgressAtomicProfile",
            "kill_progress": {"profile_id": profile, "progress": entry.get("progress", 0.0)}}


class Batsim5Codec:
    """One conversation with Batsim 5 over batprotocol JSON.

    ``identity`` is the EDC hello we send (name, version, requested features); the
    same features fill the Batsim 4 ``config`` of SIMULATION_BEGINS, so policies that
    read ``dynamic-jobs-enabled`` and the like behave as beside Batsim 4.
    """

    def __init__(self, identity: EdcIdentity, host_separator: str = ",") -> None:
        self.identity = identity
        #: "," for the snapshot (ed55a974), " " for v5.0.0-rc2 (set by the handshake).
        self.host_separator = host_separator
        self._allocations: dict[str, MachineSet] = {}
        self._calls: dict[str, float] = {}
        self._next_call = 0

    # ------------------------------------------------------------ Batsim -> EDC
    def parse(self, raw: bytes) -> s.Message:
        """The envelope of a batprotocol JSON message; ProtocolError if it is not one."""
        try:
            return _DECODER.decode(_strip_nul(raw))
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise ProtocolError(f"not a batprotocol JSON message: {exc}") from None

    def decode_request(self, raw: bytes) -> t.Request:
        """A Batsim 5 message as the typed Request of Batsim 4."""
        message = self.parse(raw)
        events = [self._event(i, ev) for i, ev in enumerate(message.events)]
        return t.Request(now=message.now, events=tuple(e for e in events if e is not None))

    def _table(self, index: int, ev: s.EventAndTimestamp,
               decoders: Mapping[str, msgspec.json.Decoder]) -> Any:
        decoder = decoders.get(ev.event_type)
        if decoder is None:
            raise ProtocolError("event type not supported by batpolicy's Batsim 5 codec",
                                index=index, event_type=ev.event_type, field="event_type")
        try:
            return decoder.decode(ev.event)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise ProtocolError(str(exc), index=index, event_type=ev.event_type,
                                field="event") from None

    def _event(self, index: int, ev: s.EventAndTimestamp) -> t.Event | None:
        table = self._table(index, ev, _TABLE_DECODERS)
        at = ev.timestamp
        kind = ev.event_type
        if kind == "JobSubmittedEvent":
            return t.JobSubmitted(timestamp=at, job_id=table.job_id,
                                  job=job_description(table.job_id, table.job,
                                                      table.submission_time))
        if kind == "JobCompletedEvent":
            try:
                state = t.JobState[table.state]
            except KeyError:
                raise ProtocolError(f"unknown final job state {table.state!r}", index=index,
                                    event_type=kind, field="event.state") from None
            return t.JobCompleted(timestamp=at, job_id=table.job_id, job_state=state,
                                  return_code=signed_return_code(table.return_code),
                                  alloc=self._allocations.pop(table.job_id, MachineSet()))
        if kind in _NOTIFY_OF:
            return t.Notify(timestamp=at, kind=_NOTIFY_OF[kind])
        if kind == "RequestedCallEvent":
            self._calls.pop(table.call_me_later_id, None)
            return t.RequestedCall(timestamp=at)
        if kind == "JobsKilledEvent":
            progress = {p.job_id: _progress_to_v4(p.wrapper) for p in table.progresses}
            for job_id in table.job_ids:
                self._allocations.pop(job_id, None)
            return t.JobKilled(timestamp=at, job_ids=tuple(table.job_ids), job_progress=progress)
        if kind == "SimulationBeginsEvent":
            return self._begins(at, table)
        if kind == "SimulationEndsEvent":
            return t.SimulationEnds(timestamp=at)
        raise ProtocolError("BatsimHelloEvent after the handshake", index=index,
                            event_type=kind)

    def _begins(self, at: float, table: s.SimulationBeginsEvent) -> t.SimulationBegins:
        try:
            context = json.loads(table.batsim_execution_context_json)
        except ValueError:
            context = table.batsim_execution_context_json
        return t.SimulationBegins(
            timestamp=at, nb_resources=table.host_number,
            nb_compute_resources=table.computation_host_number,
            nb_storage_resources=table.storage_host_number,
            allow_compute_sharing=False, allow_storage_sharing=True,
            config={**self.identity.batsim4_config(), "batsim-execution-context": context},
            compute_resources=tuple(_resource(h) for h in table.computation_hosts),
            storage_resources=tuple(_resource(h) for h in table.storage_hosts),
            workloads={w.name: w.filename for w in table.workloads}, profiles={})

    # ------------------------------------------------------------ EDC -> Batsim
    def encode_reply(self, reply: t.Reply) -> bytes:
        """The typed Reply as a batprotocol JSON message (NUL-terminated)."""
        events = [self._decision(i, d, reply.now) for i, d in enumerate(reply.decisions)]
        return _ENCODER.encode(s.Message(now=reply.now, events=events)) + b"\0"

    def hello_reply(self, now: float) -> bytes:
        """The answer to BatsimHelloEvent: one EDCHelloEvent."""
        event = s.EventAndTimestamp(now, "EDCHelloEvent",
                                    msgspec.Raw(_ENCODER.encode(self.identity.hello())))
        return _ENCODER.encode(s.Message(now=now, events=[event])) + b"\0"

    def _decision(self, index: int, d: t.Decision, now: float) -> s.EventAndTimestamp:
        at = now if d.timestamp is None else d.timestamp
        kind, table = self._table_of(index, d)
        return s.EventAndTimestamp(at, kind, msgspec.Raw(_ENCODER.encode(table)))

    def _table_of(self, index: int, d: t.Decision) -> tuple[str, Any]:
        if type(d) is t.ExecuteJob:
            self._allocations[d.job_id] = d.alloc
            placement = s.AllocationPlacement(
                host_allocation=hosts_text(d.alloc, self.host_separator))
            if d.mapping is not None:
                placement = s.AllocationPlacement(
                    host_allocation=placement.host_allocation,
                    executor_placement_type="CustomExecutorToHostMapping",
                    executor_placement={"mapping": [d.mapping[r] for r in sorted(d.mapping)]})
            storage = [s.StorageHost(name, host)
                       for name, host in (d.storage_mapping or {}).items()]
            if d.additional_io_job is not None:
                raise ProtocolError("Batsim 5 has no additional_io_job", index=index,
                                    event_type="ExecuteJobEvent", field="additional_io_job")
            return "ExecuteJobEvent", s.ExecuteJobEvent(d.job_id, placement,
                                                        storage_placement=storage)
        if type(d) is t.RejectJob:
            return "RejectJobEvent", s.RejectJobEvent(d.job_id)
        if type(d) is t.KillJob:
            return "KillJobsEvent", s.KillJobsEvent(list(d.job_ids))
        if type(d) is t.CallMeLater:
            call_id = f"batpolicy-{self._next_call}"
            self._next_call += 1
            self._calls[call_id] = d.at
            return "CallMeLaterEvent", s.CallMeLaterEvent(
                call_id, "OneShot", {"time": call_time_ms(d.at), "time_unit": "Millisecond"})
        if type(d) is t.RegisterJob:
            if d.job is None:
                raise ProtocolError("REGISTER_JOB needs the job's description", index=index,
                                    event_type="RegisterJobEvent", field="job")
            return "RegisterJobEvent", s.RegisterJobEvent(d.job_id, _wire_job(d.job_id, d.job))
        if type(d) is t.RegistrationFinished:
            return "FinishRegistrationEvent", s.EmptyEvent()
        reason = UNSUPPORTED_DECISIONS.get(type(d), "no batprotocol counterpart")
        raise ProtocolError(f"{type(d).__name__} cannot be sent to Batsim 5: {reason}",
                            index=index, event_type=type(d).__name__)

    # ------------------------------------------------------------ replies, read back
    def decode_reply(self, raw: bytes) -> t.Reply:
        """An EDC's batprotocol reply as a typed Reply (hello events are skipped).

        For tests and transcripts: what Batsim 5's own EDCs decided, in our terms.
        """
        message = self.parse(raw)
        decisions: list[t.Decision] = []
        for index, ev in enumerate(message.events):
            table = self._table(index, ev, _REPLY_DECODERS)
            decision = self._typed_decision(index, ev.event_type, table, ev.timestamp)
            if decision is not None:
                decisions.append(decision)
        return t.Reply(now=message.now, decisions=tuple(decisions))

    def _typed_decision(self, index: int, kind: str, table: Any, at: float) -> t.Decision | None:
        if kind == "ExecuteJobEvent":
            alloc = parse_hosts(table.allocation.host_allocation, index=index,
                                field="event.allocation.host_allocation",
                                separator=self.host_separator)
            mapping = None
            if table.allocation.executor_placement_type == "CustomExecutorToHostMapping":
                mapping = dict(enumerate(table.allocation.executor_placement.get("mapping", [])))
            storage = {p.storage_name: p.host_id for p in table.storage_placement} or None
            return t.ExecuteJob(job_id=table.job_id, alloc=alloc, mapping=mapping,
                                storage_mapping=storage, timestamp=at)
        if kind == "RejectJobEvent":
            return t.RejectJob(job_id=table.job_id, timestamp=at)
        if kind == "KillJobsEvent":
            return t.KillJob(job_ids=tuple(table.job_ids), timestamp=at)
        if kind == "CallMeLaterEvent":
            if table.when_type != "OneShot":
                raise ProtocolError("only one-shot calls have a Batsim 4 counterpart",
                                    index=index, event_type=kind, field="event.when_type")
            unit = 1e-3 if table.when.get("time_unit") == "Millisecond" else 1.0
            self._calls[table.call_me_later_id] = table.when.get("time", 0) * unit
            return t.CallMeLater(at=self._calls[table.call_me_later_id], timestamp=at)
        if kind == "RegisterJobEvent":
            return t.RegisterJob(job_id=table.job_id, timestamp=at,
                                 job=job_description(table.job_id, table.job, at))
        if kind == "FinishRegistrationEvent":
            return t.RegistrationFinished(timestamp=at)
        if kind == "EDCHelloEvent":
            return None
        raise ProtocolError("decision without a Batsim 4 counterpart", index=index,
                            event_type=kind)

    # ------------------------------------------------------------ Batsim side
    def encode_request(self, request: t.Request) -> bytes:
        """A typed Request as Batsim 5 would send it (for a fake Batsim 5)."""
        events = []
        for index, ev in enumerate(request.events):
            kind, table = self._batsim_table(index, ev)
            events.append(s.EventAndTimestamp(ev.timestamp, kind,
                                              msgspec.Raw(_ENCODER.encode(table))))
        return _ENCODER.encode(s.Message(now=request.now, events=events)) + b"\0"

    def _batsim_table(self, index: int, ev: t.Event) -> tuple[str, Any]:
        if type(ev) is t.JobSubmitted:  # Batsim 5 stamps the submission when it happens
            return "JobSubmittedEvent", s.JobSubmittedEvent(
                ev.job_id, _wire_job(ev.job_id, ev.job or {}), ev.timestamp)
        if type(ev) is t.JobCompleted:
            return "JobCompletedEvent", s.JobCompletedEvent(ev.job_id, ev.job_state.value,
                                                            ev.return_code % 2 ** 32)
        if type(ev) is t.Notify and ev.kind in _NOTIFY_OF.values():
            name = next(k for k, v in _NOTIFY_OF.items() if v == ev.kind)
            return name, s.EmptyEvent()
        if type(ev) is t.RequestedCall:  # the earliest call due, by the id the EDC gave
            due = [(at, call) for call, at in self._calls.items() if at <= ev.timestamp]
            call = min(due)[1] if due else "batpolicy"
            self._calls.pop(call, None)
            return "RequestedCallEvent", s.RequestedCallEvent(call)
        if type(ev) is t.JobKilled:
            return "JobsKilledEvent", s.JobsKilledEvent(list(ev.job_ids), [
                s.JobAndProgress(job, _progress_to_v5(job, p))
                for job, p in ev.job_progress.items()])
        if type(ev) is t.SimulationEnds:
            return "SimulationEndsEvent", s.EmptyEvent()
        if type(ev) is t.SimulationBegins:
            hosts = [_host(r) for r in ev.compute_resources]
            storage = [_host(r) for r in ev.storage_resources]
            return "SimulationBeginsEvent", s.SimulationBeginsEvent(
                batsim_execution_context_json="{}", host_number=len(hosts) + len(storage),
                computation_host_number=len(hosts), computation_hosts=hosts,
                storage_host_number=len(storage), storage_hosts=storage,
                workloads=[s.WorkloadAndFilename(k, v) for k, v in ev.workloads.items()])
        raise ProtocolError(f"{type(ev).__name__} has no batprotocol 3f3be00 form here",
                            index=index, event_type=type(ev).__name__)
