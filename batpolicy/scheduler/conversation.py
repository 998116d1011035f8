"""Batsim's conversation order: what a message may say given the messages before it.

The codec checks each message alone (types, fields, timestamps not decreasing within it);
these rules span messages (Batsim's protocol: turn-taking), following Batsim 4.2.1's
``src/server.cpp``: one SIMULATION_BEGINS, first; a clock that never goes back; a job
that completes after it started; NOTIFY types Batsim itself sends, unless it forwards
external events. Each raises one :class:`~batpolicy.errors.ProtocolError` naming the
event and field; the daemon answers it with a refusal that stops Batsim.
"""

from __future__ import annotations

import re
from typing import Any

from batpolicy.errors import ProtocolError
from batpolicy.protocol import types as t

__all__ = ["check_begins_once", "check_completion", "check_notify_kind",
           "check_order", "wire_name"]


def check_order(started: bool, last_now: float, now: float,
                events: tuple[t.Event, ...]) -> None:
    """Refuse a message that breaks the conversation's order in time (Batsim's turn-taking).

    Batsim's first message holds SIMULATION_BEGINS first (src/server.cpp sends it alone,
    at time 0); its clock never goes back, so a message's ``now`` and its first event's
    timestamp are never before the previous message's ``now`` (timestamps do not
    decrease within a message: the codec checks that). Called only when a cheap test
    of those facts failed, or before SIMULATION_BEGINS; a message that passes returns.
    """
    if not started:
        if not events or type(events[0]) is not t.SimulationBegins:
            kind = wire_name(events[0]) if events else None
            raise ProtocolError(f"the first message must begin with SIMULATION_BEGINS, "
                                f"got {kind or 'no event'}", index=0 if events else None,
                                field="type" if events else "events")
        return
    if now < last_now:
        raise ProtocolError(f"now {now!r} is before the previous message's now {last_now!r} "
                            "(Batsim's time never goes back)", field="now")
    if events and events[0].timestamp < last_now:
        raise ProtocolError(f"{events[0].timestamp!r} is before the previous message's now "
                            f"{last_now!r} (Batsim's time never goes back)", index=0,
                            field="timestamp", event_type=wire_name(events[0]))


def wire_name(event: t.Event) -> str:
    """The event's type as errors name it: its class name in capitals.

    >>> wire_name(t.RequestedCall(1.0))
    'REQUESTED_CALL'
    """
    return re.sub(r"(?<!^)(?=[A-Z])", "_", type(event).__name__).upper()


def check_begins_once(started: bool) -> None:
    """Batsim sends SIMULATION_BEGINS once, in its first message (``src/server.cpp``)."""
    if started:
        raise ProtocolError("a second SIMULATION_BEGINS (Batsim sends exactly one, in its "
                            "first message)", field="type", event_type="SIMULATION_BEGINS")


def check_completion(ev: t.JobCompleted, start: float) -> None:
    """A job completes at or after its ``start``."""
    if ev.timestamp < start:
        raise ProtocolError(f"job '{ev.job_id}' completes at {ev.timestamp!r}, before it "
                            f"started at {start!r}", field="timestamp",
                            event_type="JOB_COMPLETED")


def check_notify_kind(kind: Any, config: dict[str, Any]) -> None:
    """Refuse a NOTIFY of a type Batsim does not send unless it forwards external events.

    Batsim forwards such events only with ``--forward-unknown-events``, which
    SIMULATION_BEGINS' config says.
    """
    if kind not in t.BATSIM_NOTIFY_KINDS and not config.get("forward-unknown-events", False):
        raise ProtocolError(f"unknown NOTIFY type {kind!r}: Batsim forwards other events "
                            "only with --forward-unknown-events, which SIMULATION_BEGINS' "
                            "config says is off", field="data.type", event_type="NOTIFY")
