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

from collections.abc import Mapping
from typing import Any

import msgspec

from batpolicy.errors import ProtocolError
from batpolicy.protocol import types as t
from batpolicy.protocol.batprotocol import _decisions, _events
from batpolicy.protocol.batprotocol import _schema as s
from batpolicy.protocol.batprotocol._fields import (
    Memory,
    call_time_ms,
    hosts_text,
    job_description,
    parse_hosts,
    signed_return_code,
    strip_nul,
)
from batpolicy.protocol.batprotocol.handshake import EdcIdentity

__all__ = ["UNSUPPORTED_DECISIONS", "Batsim5Codec", "call_time_ms", "hosts_text",
           "job_description", "parse_hosts", "signed_return_code", "strip_nul"]

_DECODER = msgspec.json.Decoder(s.Message)
_ENCODER = msgspec.json.Encoder()
_TABLE_DECODERS = {name: msgspec.json.Decoder(cls) for name, cls in s.FROM_BATSIM.items()}
_REPLY_DECODERS = {name: msgspec.json.Decoder(cls) for name, cls in s.FROM_EDC.items()}
#: Batsim 4 decisions with no batprotocol 3f3be00 table, and why.
UNSUPPORTED_DECISIONS = _decisions.UNSUPPORTED


def _table(index: int, ev: s.EventAndTimestamp,
           decoders: Mapping[str, msgspec.json.Decoder]) -> Any:
    """The table of one event, decoded with its type's decoder; one ProtocolError if not."""
    decoder = decoders.get(ev.event_type)
    if decoder is None:
        raise ProtocolError("event type not supported by batpolicy's Batsim 5 codec",
                            index=index, event_type=ev.event_type, field="event_type")
    try:
        return decoder.decode(ev.event)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise ProtocolError(str(exc), index=index, event_type=ev.event_type,
                            field="event") from None


def _message(now: float, events: list[s.EventAndTimestamp]) -> bytes:
    """A whole message, NUL-terminated as Batsim writes and reads them."""
    return _ENCODER.encode(s.Message(now=now, events=events)) + b"\0"


def _event(at: float, kind: str, table: Any) -> s.EventAndTimestamp:
    return s.EventAndTimestamp(at, kind, msgspec.Raw(_ENCODER.encode(table)))


class Batsim5Codec:
    """One conversation with Batsim 5 over batprotocol JSON.

    ``identity`` is the EDC hello we send (name, version, requested features); the
    same features fill the Batsim 4 ``config`` of SIMULATION_BEGINS, so policies that
    read ``dynamic-jobs-enabled`` and the like behave as beside Batsim 4.
    """

    def __init__(self, identity: EdcIdentity, host_separator: str = ",") -> None:
        self.identity = identity
        self.memory = Memory(host_separator=host_separator, config=identity.batsim4_config())

    @property
    def host_separator(self) -> str:
        """"," for the snapshot (ed55a974), " " for v5.0.0-rc2 (set by the handshake)."""
        return self.memory.host_separator

    @host_separator.setter
    def host_separator(self, value: str) -> None:
        self.memory.host_separator = value

    @staticmethod
    def parse(raw: bytes) -> s.Message:
        """The envelope of a batprotocol JSON message; ProtocolError if it is not one."""
        try:
            return _DECODER.decode(strip_nul(raw))
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise ProtocolError(f"not a batprotocol JSON message: {exc}") from None

    # ------------------------------------------------------------ Batsim -> EDC
    def decode_request(self, raw: bytes) -> t.Request:
        """A Batsim 5 message as the typed Request of Batsim 4."""
        message = self.parse(raw)
        memory, events = self.memory, []
        for index, ev in enumerate(message.events):
            table = _table(index, ev, _TABLE_DECODERS)
            typed = _events.READ[ev.event_type](memory, index, ev.timestamp, table)
            if typed is not None:
                events.append(typed)
        return t.Request(now=message.now, events=tuple(events))

    def encode_request(self, request: t.Request) -> bytes:
        """A typed Request as Batsim 5 would send it (for a fake Batsim 5)."""
        events = []
        for index, ev in enumerate(request.events):
            write = _events.WRITE.get(type(ev))
            if write is None:
                raise ProtocolError(f"{type(ev).__name__} has no batprotocol 3f3be00 form",
                                    index=index, event_type=type(ev).__name__)
            events.append(_event(ev.timestamp, *write(self.memory, index, ev)))
        return _message(request.now, events)

    # ------------------------------------------------------------ EDC -> Batsim
    def hello_reply(self, now: float) -> bytes:
        """The answer to BatsimHelloEvent: one EDCHelloEvent."""
        return _message(now, [_event(now, "EDCHelloEvent", self.identity.hello())])

    def encode_reply(self, reply: t.Reply) -> bytes:
        """The typed Reply as a batprotocol JSON message (NUL-terminated)."""
        events = []
        for index, d in enumerate(reply.decisions):
            write = _decisions.WRITE.get(type(d))
            if write is None:
                reason = _decisions.UNSUPPORTED.get(type(d), "no batprotocol counterpart")
                raise ProtocolError(f"{type(d).__name__} cannot be sent to Batsim 5: {reason}",
                                    index=index, event_type=type(d).__name__)
            at = reply.now if d.timestamp is None else d.timestamp
            events.append(_event(at, *write(self.memory, index, d)))
        return _message(reply.now, events)

    def decode_reply(self, raw: bytes) -> t.Reply:
        """An EDC's batprotocol reply as a typed Reply (hello events are skipped).

        For tests, transcripts and a fake Batsim 5: what an EDC decided, in our terms.
        """
        message = self.parse(raw)
        decisions = []
        for index, ev in enumerate(message.events):
            table = _table(index, ev, _REPLY_DECODERS)
            read = _decisions.READ.get(ev.event_type)
            if read is None:
                raise ProtocolError("decision without a Batsim 4 counterpart", index=index,
                                    event_type=ev.event_type)
            decision = read(self.memory, index, ev.timestamp, table)
            if decision is not None:
                decisions.append(decision)
        return t.Reply(now=message.now, decisions=tuple(decisions))
