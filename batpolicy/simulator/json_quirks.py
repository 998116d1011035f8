"""Batsim's JSON writer quirks that the messages must reproduce.

Batsim 4.2.1 re-serialises every JSON object it forwards (jobs, profiles, forwarded
events) and every number it writes with at most 6 decimals, rounded.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from msgspec.structs import replace

from batpolicy.io.rapidjson_number import rapidjson_float
from batpolicy.protocol.intervals import MachineSet, parse_intervals
from batpolicy.protocol.types import CallMeLater, Reply

__all__ = ["ReadReply", "as_machine_set", "batsim_reads", "batsim_reads_reply",
           "batsim_reads_text", "read_by_text", "round_progress", "text_readings", "wire_json",
           "wire_time"]


def wire_time(value: float) -> float:
    """``round(value, 6)``, as Batsim writes a time; an integral float is returned as is.

    Same result as ``round(value, 6)`` for every value: an integral float has no
    fractional digits to round. ``round(x, 6)`` goes through a correctly rounded decimal
    conversion (0.26-0.46 µs on 2026-11-24); the test is 0.02 µs, and a simulation's
    times are mostly integral (SWF seconds). About six per job: the two messages' ``now``,
    the job's submission and completion stamps, its subtime and walltime.

    >>> wire_time(57.245384205516594), wire_time(1e6), wire_time(3)
    (57.245384, 1000000.0, 3)
    """
    if type(value) is float and value.is_integer():
        return value
    return round(value, 6)


def wire_json(value: Any) -> Any:
    """``value`` as Batsim re-serialises it: floats rounded to 6 decimals; no copy if unchanged.

    >>> wire_json({"subtime": 57.245384205516594, "res": 8, "x": [0.1234567]})
    {'subtime': 57.245384, 'res': 8, 'x': [0.123457]}
    """
    kind = type(value)
    if kind is float:
        return wire_time(value)
    if kind is dict:
        out = None
        for key, item in value.items():
            sub = type(item)
            if sub is float:  # a job's subtime and walltime: rounded here, no call per number
                if item.is_integer():  # as wire_time: nothing to round
                    continue
                new = round(item, 6)
                if new == item:
                    continue
            elif sub is dict or sub is list:
                new = wire_json(item)
                if new is item:  # unchanged: returned as is
                    continue
            else:
                continue
            if out is None:
                out = dict(value)
            out[key] = new
        return value if out is None else out
    if kind is list:
        new_list = [wire_json(item) for item in value]
        return value if new_list == value else new_list
    return value


def round_progress(entry: dict[str, Any]) -> dict[str, Any]:
    """Round progress values to Batsim's 6 decimals.

    >>> round_progress({"profile_name": "p", "progress": 0.56490791})
    {'profile_name': 'p', 'progress': 0.564908}
    """
    out = dict(entry)
    if "progress" in out:
        out["progress"] = round(out["progress"], 6)
    if isinstance(out.get("current_task"), dict):
        out["current_task"] = round_progress(out["current_task"])
    return out


def as_machine_set(resources: Any) -> MachineSet:
    """A MachineSet from a MachineSet, a Batsim interval-set string or machine ids.

    >>> str(as_machine_set("0-2 5")), str(as_machine_set([7, 8]))
    ('0-2 5', '7-8')
    """
    if isinstance(resources, MachineSet):
        return resources
    if isinstance(resources, str):
        return parse_intervals(resources, field="resources")
    return MachineSet(resources)


def batsim_reads(value: float | int) -> float | int:
    """``value`` as Batsim reads it from a scheduler's message.

    Batsim 4.2.1 parses the scheduler's messages with RapidJSON's default flags
    (``Document::Parse``, ``protocol.cpp``), as it does workloads
    (:func:`~batpolicy.io.rapidjson_number.rapidjson_float`): a 16- or 17-digit text is
    not always read as the correctly rounded double (batsched's ``now + 5``, written
    ``10.000060999999999``, is 10.000061 to Batsim: fuzz seed 3203).

    Where the text is not known (an in-process scheduler) it is taken to be the
    shortest that reads back as ``value``, ``repr``'s, as msgspec and Python's json
    write it; a reply whose text is known is read from it (:func:`batsim_reads_text`:
    RapidJSON's ``Writer``, batsched's, does not always write ``repr``'s 17 digits). A
    significand of at most 15 digits and an exponent within 1e±22 read back exactly
    (RapidJSON's fast path), so only the longer texts are parsed again. An integral
    value is returned as is.

    >>> batsim_reads(5.000061 + 5), batsim_reads(15.000102), batsim_reads(3.0), batsim_reads(7)
    (10.000061, 15.000102, 3.0, 7)
    """
    if type(value) is not float or value.is_integer():
        return value  # an int (a Python scheduler's), or an integral double: exact
    text = repr(value)
    if len(text) <= 16 and "e" not in text:
        return value
    return rapidjson_float(text)


def batsim_reads_reply(reply: Any) -> Any:
    """A scheduler's reply with its times as Batsim reads them (:func:`batsim_reads`).

    ``now``, every decision's ``timestamp`` and a CALL_ME_LATER's ``at``; the reply itself
    when none changes (the common case: times Batsim sent, echoed), or when it is a
    :class:`ReadReply` (its times were read from the text the scheduler sent).
    """
    if type(reply) is ReadReply:
        return reply
    now = reply.now
    if type(now) is float and not now.is_integer():  # batsim_reads' own first test, inline:
        now = batsim_reads(now)  # an integral time (most replies) is read as it is
    return _read_times(reply, now, batsim_reads)


def _read_times(reply: Any, now: float | int, read: Callable[[Any], Any]) -> Any:
    """``reply`` with ``now`` and its decisions' times through ``read``; itself if unchanged."""
    decisions = reply.decisions
    changed = None
    for i, decision in enumerate(decisions):
        stamp = decision.timestamp
        current = decision
        if stamp is not None:
            new = read(stamp)
            if new != stamp:
                current = replace(current, timestamp=new)
        if type(decision) is CallMeLater:
            at = read(decision.at)
            if at != decision.at:
                current = replace(current, at=at)
        if current is not decision:
            if changed is None:
                changed = list(decisions)
            changed[i] = current
    if now == reply.now and changed is None:
        return reply
    return replace(reply, now=now, decisions=tuple(changed) if changed else decisions)


class ReadReply(Reply, frozen=True):
    """A reply whose times are already Batsim's reading of the text the scheduler sent.

    Made by :func:`batsim_reads_text`; :func:`batsim_reads_reply` leaves it as it is.
    """


#: A number whose reading may depend on its text, not only on its value: over 15
#: significant digits (16 characters with the point) or an exponent.
_LONG_TEXT = re.compile(r"\d[\d.]{15}|\d[eE]")
_LONG_BYTES = re.compile(rb"\d[\d.]{15}|\d[eE]")


def read_by_text(data: bytes | str) -> bool:
    """Whether Batsim's reading of a message's numbers may depend on their text.

    True when ``data`` holds a number of over 15 digits or with an exponent (or
    something in a string that looks like one); a shorter number is read by RapidJSON's
    fast path as the correctly rounded double, whatever the text. Runtime: O(len(data)).

    >>> read_by_text('{"now":17.000015}'), read_by_text(b'{"now":17.000014999999999}')
    (False, True)
    """
    pattern = _LONG_TEXT if isinstance(data, str) else _LONG_BYTES
    return pattern.search(data) is not None


def text_readings(data: bytes | str) -> dict[float, float]:
    """The numbers of a message that Batsim reads otherwise than Python: {Python's: Batsim's}.

    Batsim 4.2.1 parses a scheduler's message with RapidJSON's default flags
    (:func:`~batpolicy.io.rapidjson_number.rapidjson_float`), from its text: two texts of
    one double can read as two doubles. batsched writes its doubles with RapidJSON's
    ``Writer`` (Grisu2, ``internal/dtoa.h``), whose 17 digits are not always the ones
    closest to the double: ``now + 5`` at 17.0000149999999976 is written
    ``17.000014999999999`` (Python's shortest text is ``...998``), which Batsim reads as
    17.000015000000001 (fuzz seed 5239). Empty unless :func:`read_by_text`.
    Runtime: O(len(data)).

    >>> text_readings(b'{"now":17.000014999999999,"events":[]}')
    {17.000014999999998: 17.000015}
    >>> text_readings('{"now":17.000015,"events":[]}')
    {}
    """
    if not read_by_text(data):
        return {}
    readings: dict[float, float] = {}

    def read(literal: str) -> float:
        value = float(literal)
        batsims = rapidjson_float(literal)
        if batsims != value:
            readings[value] = batsims
        return value

    json.loads(data, parse_float=read)
    return readings


def batsim_reads_text(reply: Reply, data: bytes | str) -> ReadReply:
    """``reply``, decoded from ``data``, with its times as Batsim reads ``data``.

    ``now``, every decision's ``timestamp`` and a CALL_ME_LATER's ``at``, each read from
    its text (:func:`text_readings`), not from :func:`batsim_reads`' guess of the text
    (the shortest one, Python's ``repr``). A double written twice in one message is
    written alike (the writer's digits are a function of the double).
    """
    readings = text_readings(data)
    if readings:
        reply = _read_times(reply, readings.get(reply.now, reply.now),
                            lambda x: readings.get(x, x))
    return ReadReply(reply.now, reply.decisions)
