"""Batsim 4.2.1 JSON codec: bytes <-> typed :class:`Request` / :class:`Reply`, strict and lossless.

Layout
    ``codec.py`` (this module) holds the public API, the JSON backend (orjson, or the
    standard library if orjson cannot be imported), the envelope checks and the one loop
    that turns any failure inside an event into a single :class:`ProtocolError`.
    ``_wire.py`` holds :class:`EventType`, the field checks and their ``FieldError``.
    ``_decoders.py`` holds one decode function per wire type and two tables,
    ``REQUEST_DECODERS`` (Batsim -> scheduler) and ``REPLY_DECODERS`` (scheduler -> Batsim).
    ``_encoders.py`` holds one encode function per dataclass and two tables,
    ``EVENT_ENCODERS`` and ``DECISION_ENCODERS``. No ``if``/``elif`` on type strings.

Direction
    NOTIFY, QUERY and ANSWER exist both ways with different meanings, so a message is
    always decoded as *from Batsim* (:func:`decode_request`) or *from a scheduler*
    (:func:`decode_reply`).

Strictness (PROTOCOL.md §1.2–1.4, §3)
    The envelope is an object with exactly ``now`` (finite number) and ``events``
    (array); each event has exactly ``timestamp`` (finite number, <= ``now``, never
    decreasing), ``type`` (known for that direction) and ``data`` (object). Booleans are
    not numbers, counts and codes are JSON integers, job ids hold exactly one ``!``, and
    each type's ``data`` has exactly the members Batsim 4.2.1 sends or accepts.

Losslessness
    For every accepted message ``x``, ``request_to_obj(request_from_obj(x)) == x`` (and
    the same for replies) as Python objects, up to two normalisations: numbers compare
    numerically (``10`` and ``10.0``) and interval sets are written canonically (Batsim
    always sends them so). Raw JSON that Batsim forwards is kept untouched.

Errors
    Every failure — non-UTF-8 bytes, broken JSON, NaN, wrong types, missing or extra
    members — raises exactly one :class:`~batpolicy.errors.ProtocolError` naming the event
    index, its type and the dotted field; nothing else escapes.

Encoding validates its own output with the decoders, so we never send what Batsim would
refuse; decisions whose ``timestamp`` is None are stamped with the reply's ``now``. A reply
the decision checker already accepted (``encode_reply(reply, checked=True)``, the daemon's
case) skips that second pass for the decisions whose validity the checker's rules imply.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, NamedTuple

from batpolicy.errors import ProtocolError
from batpolicy.protocol._decoders import REPLY_DECODERS, REQUEST_DECODERS, Decoder
from batpolicy.protocol._encoders import DECISION_ENCODERS, EVENT_ENCODERS, Encoder
from batpolicy.protocol._wire import EventType, FieldError, as_time, find_bad_json, type_name
from batpolicy.protocol.types import ExecuteJob, RejectJob, Reply, Request

try:
    import orjson
except ImportError:  # pragma: no cover - orjson is a declared dependency
    orjson = None  # type: ignore[assignment]

__all__ = ["EventType", "decode_reply", "decode_request", "encode_reply", "encode_request",
           "reply_from_obj", "reply_to_obj", "request_from_obj", "request_to_obj"]

_ENVELOPE = frozenset({"now", "events"})
_EVENT = frozenset({"timestamp", "type", "data"})


class _Side(NamedTuple):
    """What one direction of the conversation may carry."""

    sender: str
    decoders: Mapping[str, Decoder]
    encoders: Mapping[type, Encoder]
    other_sender: str
    other_types: frozenset[str]


_FROM_BATSIM = _Side("Batsim", REQUEST_DECODERS, EVENT_ENCODERS, "the scheduler",
                     frozenset(REPLY_DECODERS) - frozenset(REQUEST_DECODERS))
_FROM_SCHEDULER = _Side("the scheduler", REPLY_DECODERS, DECISION_ENCODERS, "Batsim",
                        frozenset(REQUEST_DECODERS) - frozenset(REPLY_DECODERS))


# ---------------------------------------------------------------------------------------
# JSON backend
# ---------------------------------------------------------------------------------------


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:40]} is not finite")
    return value


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not valid JSON")


if orjson is not None:
    _loads = orjson.loads
    _dumps = orjson.dumps
    #: Make orjson refuse what plain JSON has no form for instead of converting it.
    _STRICT: int | None = (orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
                           | orjson.OPT_PASSTHROUGH_SUBCLASS)
else:  # pragma: no cover - exercised only where orjson is missing
    _STRICT = None

    def _loads(data: Any) -> Any:
        if isinstance(data, bytes | bytearray | memoryview):
            data = bytes(data).decode("utf-8")
        return json.loads(data, parse_float=_finite_float, parse_constant=_reject_constant)

    def _dumps(obj: Any, option: int | None = None) -> bytes:
        return json.dumps(obj, separators=(",", ":"), ensure_ascii=False,
                          allow_nan=False).encode("utf-8")


def _short(path: str) -> str:
    """A field path cut to a readable length.

    >>> _short("data.msg" + "[0]" * 100)
    'data.msg[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]...'
    """
    return path if len(path) <= 70 else path[:68] + "..."


def _locate_bad_value(obj: Any) -> tuple[int | None, str | None, str] | None:
    """Where a parsed message holds a value JSON cannot carry: (index, field, problem)."""
    if type(obj) is not dict:
        return None
    try:
        for key, value in obj.items():
            if key == "events" and type(value) is list:
                for index, event in enumerate(value):
                    found = find_bad_json(event)
                    if found is not None:
                        return index, _short(found[0]) or None, found[1]
            else:
                found = find_bad_json(value, str(key))
                if found is not None:
                    return None, _short(found[0]), found[1]
    except RecursionError:
        return None, None, "values nested too deeply"
    return None


def _explain_parse_failure(data: Any, failure: Exception) -> ProtocolError:
    """Slow path after the fast parser refused a message: find what and where."""
    if isinstance(data, bytes | bytearray | memoryview):
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            return ProtocolError(f"message is not valid UTF-8 (byte {exc.start}: {exc.reason})")
    elif isinstance(data, str):
        text = data
    else:
        return ProtocolError(f"a message must be bytes or str, got {type(data).__name__}")
    try:  # the standard parser accepts NaN, Infinity and huge numbers, so we can name them
        obj = json.loads(text, parse_constant=float)
    except json.JSONDecodeError as exc:
        return ProtocolError(f"message is not valid JSON: {exc.msg} at line {exc.lineno} "
                             f"column {exc.colno} (char {exc.pos})")
    except (ValueError, RecursionError) as exc:
        return ProtocolError(f"message is not valid JSON: {exc}")
    located = _locate_bad_value(obj)
    if located is not None:
        index, field, problem = located
        return ProtocolError(problem, index=index, field=field)
    return ProtocolError(f"message refused by the JSON parser: {failure}")


def _parse(data: bytes | str) -> Any:
    try:
        return _loads(data)
    except Exception as exc:  # orjson.JSONDecodeError, TypeError for a wrong input type
        raise _explain_parse_failure(data, exc) from None


def _dump(obj: dict[str, Any]) -> bytes:
    """Serialise a message; refuse (naming event and field) what JSON cannot carry.

    orjson refuses non-string keys, integers beyond 64 bits, lone surrogates and (with
    the pass-through options) dataclasses, datetimes and subclasses of the JSON types;
    the only thing it lets through is a NaN or infinity, which it writes as ``null``. So
    the message is walked (:func:`_locate_bad_value`) only when orjson refused it or
    when its output holds ``null``: almost never, where walking every message before
    dumping cost a fifth of ``encode_reply``. (orjson writes enum members and UUIDs by
    value, where the walk refused them: both are plain JSON on the wire.)
    """
    try:
        data = _dumps(obj, option=_STRICT)
    except Exception as exc:  # orjson: nesting too deep, integer out of range...
        located = _locate_bad_value(obj)
        if located is not None:
            index, field, problem = located
            raise ProtocolError(f"cannot be encoded as JSON: {problem}", index=index,
                                field=field) from None
        raise ProtocolError(f"cannot be encoded as JSON ({exc})") from exc
    if b"null" in data:  # a real null, or a NaN / infinity orjson turned into one
        located = _locate_bad_value(obj)
        if located is not None:
            index, field, problem = located
            raise ProtocolError(f"cannot be encoded as JSON: {problem}", index=index,
                                field=field)
    return data


# ---------------------------------------------------------------------------------------
# objects <-> typed messages
# ---------------------------------------------------------------------------------------


def _envelope(obj: Any, side: _Side) -> tuple[float, list[Any]]:
    if type(obj) is not dict:
        raise ProtocolError(f"a message must be a JSON object, got {type_name(obj)}")
    if obj.keys() != _ENVELOPE:
        missing = sorted(_ENVELOPE - obj.keys())
        if missing:
            raise ProtocolError("missing member of the message", field=missing[0])
        extra = sorted(map(str, obj.keys() - _ENVELOPE))
        raise ProtocolError("unexpected member of the message (allowed: now, events)",
                            field=extra[0])
    try:
        now = as_time(obj["now"], "now")
    except FieldError as bad:
        raise ProtocolError(bad.message, field=bad.field) from None
    events = obj["events"]
    if type(events) is not list:
        raise ProtocolError(f"expected an array, got {type_name(events)}", field="events")
    return now, events


def _unknown_type(kind: Any, side: _Side) -> FieldError:
    if type(kind) is not str:
        return FieldError("type", f"expected a string, got {type_name(kind)}")
    if kind in side.other_types:
        return FieldError("type", f"{kind!r} is sent by {side.other_sender}, "
                                  f"never by {side.sender}")
    return FieldError("type", f"unknown type {kind[:60]!r} for a message from {side.sender}")


def _decode_events(obj: Any, side: _Side) -> tuple[float, tuple[Any, ...]]:
    """Check the envelope and decode every event in order."""
    now, events = _envelope(obj, side)
    decoders = side.decoders
    decoded = []
    previous = -math.inf
    for index, event in enumerate(events):
        kind = None
        try:
            if type(event) is not dict:
                raise FieldError(None, f"an event must be an object, got {type_name(event)}")
            if event.keys() != _EVENT:
                _check_event_members(event)
            kind = event["type"]
            decoder = decoders.get(kind) if type(kind) is str else None
            if decoder is None:
                raise _unknown_type(kind, side)
            timestamp = as_time(event["timestamp"], "timestamp")
            if timestamp > now:
                raise FieldError("timestamp", f"{timestamp!r} is after the message's now {now!r}")
            if timestamp < previous:
                raise FieldError("timestamp", f"{timestamp!r} is before the previous event's "
                                              f"{previous!r} (timestamps must not decrease)")
            data = event["data"]
            if type(data) is not dict:
                raise FieldError("data", f"expected an object, got {type_name(data)}")
            decoded.append(decoder(data, timestamp))
            previous = timestamp
        except FieldError as bad:
            raise ProtocolError(bad.message, index=index, field=bad.field,
                                event_type=_known(kind, decoders)) from None
        except Exception as exc:  # a gap in the checks: still one ProtocolError
            raise ProtocolError(f"cannot decode ({type(exc).__name__}: {exc})", index=index,
                                field="data", event_type=_known(kind, decoders)) from exc
    return now, tuple(decoded)


def _known(kind: Any, decoders: Mapping[str, Decoder]) -> str | None:
    return kind if type(kind) is str and kind in decoders else None


def _check_event_members(event: dict[str, Any]) -> None:
    missing = sorted(_EVENT - event.keys())
    if missing:
        raise FieldError(missing[0], "missing member of the event")
    extra = sorted(map(str, event.keys() - _EVENT))
    raise FieldError(extra[0], "unexpected member of the event (allowed: timestamp, type, "
                               "data; event fields belong inside 'data')")


def _to_obj(now: float, items: tuple[Any, ...], side: _Side) -> dict[str, Any]:
    encoders = side.encoders
    events = []
    for index, item in enumerate(items):
        try:
            encode = encoders.get(type(item))
            if encode is None:
                raise FieldError(None, f"a {type(item).__name__} is not something "
                                       f"{side.sender} sends")
            kind, data = encode(item)
            timestamp = item.timestamp
            events.append({"timestamp": now if timestamp is None else timestamp,
                           "type": kind, "data": data})
        except FieldError as bad:
            raise ProtocolError(bad.message, index=index, field=bad.field,
                                event_type=type(item).__name__) from None
        except Exception as exc:
            raise ProtocolError(f"cannot encode ({type(exc).__name__}: {exc})", index=index,
                                event_type=type(item).__name__) from exc
    return {"now": now, "events": events}


def request_from_obj(obj: Any) -> Request:
    """Decode a parsed message from Batsim (a dict as in the transcripts) into a Request."""
    now, events = _decode_events(obj, _FROM_BATSIM)
    return Request(now, events)


def reply_from_obj(obj: Any) -> Reply:
    """Decode a parsed message from a scheduler into a Reply."""
    now, decisions = _decode_events(obj, _FROM_SCHEDULER)
    return Reply(now, decisions)


def request_to_obj(request: Request) -> dict[str, Any]:
    """The JSON object of a Request (events without timestamp get ``now``), unchecked."""
    if not isinstance(request, Request):
        raise ProtocolError(f"expected a Request, got {type(request).__name__}")
    return _to_obj(request.now, request.events, _FROM_BATSIM)


def reply_to_obj(reply: Reply) -> dict[str, Any]:
    """The JSON object of a Reply (decisions without timestamp get ``now``), unchecked."""
    if not isinstance(reply, Reply):
        raise ProtocolError(f"expected a Reply, got {type(reply).__name__}")
    return _to_obj(reply.now, reply.decisions, _FROM_SCHEDULER)


def decode_request(data: bytes | str) -> Request:
    """Decode one message received from Batsim."""
    return request_from_obj(_parse(data))


def decode_reply(data: bytes | str) -> Reply:
    """Decode one message sent by a scheduler."""
    return reply_from_obj(_parse(data))


def _encode(message: Request | Reply, side: _Side, checked: bool = False) -> bytes:
    items = message.events if isinstance(message, Request) else message.decisions
    obj = _to_obj(message.now, items, side)
    if checked and _checker_settled(items):
        _envelope(obj, side)  # ``now`` is not the checker's business
    else:
        _decode_events(obj, side)  # the decoders are the one rule book: we send what we accept
    return _dump(obj)


def _checker_settled(decisions: tuple[Any, ...]) -> bool:
    """True if the checker's acceptance already makes every decision valid on the wire.

    An undated REJECT_JOB, or an undated EXECUTE_JOB without its optional fields, that
    :func:`batpolicy.scheduler.checker.check_decisions` accepted names a job Batsim
    submitted (its id decoded from Batsim's own message, or checked on registration) and a
    non-empty :class:`MachineSet` of the platform's machines: decoding it back cannot fail
    (tests/protocol/test_checked_encoding.py checks that property on random decisions).
    Anything else (a dated decision, a mapping, another type) is decoded back as always.
    Runtime complexity: O(decisions).
    """
    for decision in decisions:
        kind = type(decision)
        if decision.timestamp is not None:
            return False
        if kind is ExecuteJob:
            if (decision.mapping is not None or decision.storage_mapping is not None
                    or decision.additional_io_job is not None):
                return False
        elif kind is not RejectJob:
            return False
    return True


def encode_request(request: Request) -> bytes:
    """Encode a message as Batsim would send it; refuse what a scheduler must refuse."""
    if not isinstance(request, Request):
        raise ProtocolError(f"expected a Request, got {type(request).__name__}")
    return _encode(request, _FROM_BATSIM)


def encode_reply(reply: Reply, *, checked: bool = False) -> bytes:
    """Encode a reply, stamping undated decisions with ``reply.now``; refuse what Batsim refuses.

    ``checked=True`` says every decision already passed
    :func:`~batpolicy.scheduler.checker.check_decisions` against the state, as the
    :class:`~batpolicy.scheduler.dispatch.Dispatcher`'s replies do: undated plain
    EXECUTE_JOB and REJECT_JOB decisions (nearly every reply) are then not decoded back,
    since the checker's rules already imply the decoders' (:func:`_checker_settled`);
    a reply holding anything else is still checked whole. The bytes are the same.
    """
    if not isinstance(reply, Reply):
        raise ProtocolError(f"expected a Reply, got {type(reply).__name__}")
    return _encode(reply, _FROM_SCHEDULER, checked)
