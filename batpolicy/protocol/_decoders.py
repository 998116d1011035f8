"""The two directions of the wire schema: ``type`` -> struct tables and the msgspec decoders.

A message from Batsim decodes with :data:`REQUEST_DECODER`, one from a scheduler with
:data:`REPLY_DECODER`: one C pass checks the envelope (exactly ``now`` and ``events``),
every event (a tagged union on ``type``) and every member, calling the schema's hooks
(:mod:`._from_batsim`, :mod:`._from_scheduler`). Both tables together cover every
:class:`~batpolicy.protocol._wire.EventType`; NOTIFY, QUERY and ANSWER are in both with
a different struct each.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Union

import msgspec
from msgspec import Struct

from batpolicy.protocol import _from_batsim as b
from batpolicy.protocol import _from_scheduler as s
from batpolicy.protocol._schema import WireEvent
from batpolicy.protocol._wire import Time, decode_hook

__all__ = ["REPLY_DECODER", "REPLY_DECODERS", "REPLY_SCHEMA", "REQUEST_DECODER",
           "REQUEST_DECODERS", "REQUEST_SCHEMA", "WireEvent"]




def _table(*events: type[WireEvent]) -> Mapping[str, type[WireEvent]]:
    return MappingProxyType({event.__struct_config__.tag: event for event in events})


#: Wire ``type`` -> its struct, for messages from Batsim.
REQUEST_DECODERS = _table(
    b.SimulationBeginsEvent, b.SimulationEndsEvent, b.JobSubmittedEvent, b.JobCompletedEvent,
    b.JobKilledEvent, b.ResourceStateChangedEvent, b.RequestedCallEvent, b.BatsimNotifyEvent,
    b.BatsimQueryEvent, b.BatsimAnswerEvent, b.FromJobMsgEvent)
#: Wire ``type`` -> its struct, for messages from a scheduler.
REPLY_DECODERS = _table(
    s.ExecuteJobEvent, s.RejectJobEvent, s.KillJobEvent, s.CallMeLaterEvent,
    s.SetResourceStateEvent, s.RegisterJobEvent, s.RegisterProfileEvent, s.SchedulerNotifyEvent,
    s.SetJobMetadataEvent, s.ChangeJobStateEvent, s.SchedulerQueryEvent, s.SchedulerAnswerEvent,
    s.ToJobMsgEvent)


class _Request(Struct, forbid_unknown_fields=True):
    now: Time
    events: list[Union[tuple(REQUEST_DECODERS.values())]]  # type: ignore[valid-type]


class _Reply(Struct, forbid_unknown_fields=True):
    now: Time
    events: list[Union[tuple(REPLY_DECODERS.values())]]  # type: ignore[valid-type]


#: The schema of a whole message (exactly ``now`` and ``events``) from Batsim / a scheduler.
REQUEST_SCHEMA: type[Struct] = _Request
REPLY_SCHEMA: type[Struct] = _Reply
REQUEST_DECODER = msgspec.json.Decoder(_Request, dec_hook=decode_hook)
REPLY_DECODER = msgspec.json.Decoder(_Reply, dec_hook=decode_hook)
