"""Batsim 4.2.1 JSON codec: bytes <-> typed :class:`Request` / :class:`Reply`, strict and lossless.

Layout
    ``codec.py`` (this module) holds the public API, the envelope's time rules, and the
    translation of every failure into a single :class:`ProtocolError`.
    ``_decoders.py`` holds the wire schema, the one rule book: a msgspec struct per wire
    type and direction, decoded in one C pass as a tagged union on the event's ``type``
    (``REQUEST_DECODERS``: Batsim -> scheduler, ``REPLY_DECODERS``: scheduler -> Batsim),
    each able to build its typed event or decision.
    ``_encoders.py`` holds one encode function per dataclass and two tables,
    ``EVENT_ENCODERS`` and ``DECISION_ENCODERS``; msgspec writes the JSON.
    ``_wire.py`` holds :class:`EventType` and the constrained field types;
    ``_errors.py`` turns msgspec's error paths into ours. No ``if``/``elif`` on type strings.

Direction
    NOTIFY, QUERY and ANSWER exist both ways with different meanings, so a message is
    always decoded as *from Batsim* (:func:`decode_request`) or *from a scheduler*
    (:func:`decode_reply`).

Strictness (Batsim's protocol: messages)
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

Encoding checks every message against the same schema before writing it (msgspec's
``convert`` of the message object, in C; for the commonest replies the same rules
without building structs), so we never send what Batsim would refuse, whoever built
the message, without relying on the scheduler's checker; decisions whose ``timestamp``
is None are stamped with the reply's ``now``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import msgspec

from batpolicy.errors import ProtocolError
from batpolicy.protocol._decoders import (
    REPLY_DECODER,
    REPLY_DECODERS,
    REPLY_SCHEMA,
    REQUEST_DECODER,
    REQUEST_DECODERS,
    REQUEST_SCHEMA,
    WireEvent,
)
from batpolicy.protocol._encoders import DECISION_ENCODERS, EVENT_ENCODERS, Encoder
from batpolicy.protocol._errors import dotted, explain, value_at
from batpolicy.protocol._plain_reply import EMPTY_REPLY as _EMPTY_REPLY
from batpolicy.protocol._plain_reply import ENCODER as _ENCODER
from batpolicy.protocol._plain_reply import plain_reply as _plain_reply
from batpolicy.protocol._wire import (
    MAX_TIME,
    EventType,
    FieldError,
    decode_hook,
    encode_hook,
    find_bad_json,
    is_job_id,
    machine_set,
    type_name,
)
from batpolicy.protocol.intervals import MachineSet
from batpolicy.protocol.types import ExecuteJob, RejectJob, Reply, Request

__all__ = ["REFUSAL_PREFIX", "EventType", "decode_reply", "decode_request", "encode_reply",
           "encode_request", "refusal_reply", "remembering_decoder", "reply_from_obj",
           "reply_to_obj", "request_from_obj", "request_to_obj"]


class _Side(NamedTuple):
    """What one direction of the conversation may carry."""

    sender: str
    decoder: msgspec.json.Decoder
    schema: type
    decoders: Mapping[str, type[WireEvent]]
    encoders: Mapping[type, Encoder]
    other_sender: str
    other_types: frozenset[str]


_FROM_BATSIM = _Side("Batsim", REQUEST_DECODER, REQUEST_SCHEMA, REQUEST_DECODERS,
                     EVENT_ENCODERS, "the scheduler",
                     frozenset(REPLY_DECODERS) - frozenset(REQUEST_DECODERS))
_FROM_SCHEDULER = _Side("the scheduler", REPLY_DECODER, REPLY_SCHEMA, REPLY_DECODERS,
                        DECISION_ENCODERS, "Batsim",
                        frozenset(REQUEST_DECODERS) - frozenset(REPLY_DECODERS))


# ---------------------------------------------------------------------------------------
# JSON that is not JSON
# ---------------------------------------------------------------------------------------


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


def _explain_parse_failure(data: Any, failure: Exception, side: _Side | None = None
                           ) -> ProtocolError:
    """Slow path after msgspec refused a message as JSON: find what and where."""
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
        kind = value_at(obj, ["events", index, "type"]) if index is not None else None
        known = kind if side is not None and type(kind) is str and kind in side.decoders else None
        return ProtocolError(problem, index=index, field=field, event_type=known)
    if side is not None:  # valid JSON msgspec's parser refused (an integer beyond a double):
        try:  # the schema, on the parsed values, says which event and field
            msgspec.convert(obj, side.schema, str_keys=True, dec_hook=decode_hook)
        except msgspec.ValidationError as exc:
            return _refused(exc, obj, side)
        except Exception:  # noqa: BLE001 - only to name the place; the generic error stands
            pass
    huge = _find_huge_int(obj)
    if huge is not None:
        index, path, value = huge
        return ProtocolError(f"integer {str(value)[:24]}... does not fit a double (Batsim's "
                             "numbers are doubles)", index=index, field=path or None)
    return ProtocolError(f"message refused by the JSON parser: {failure}")


def _find_huge_int(obj: Any) -> tuple[int | None, str, int] | None:
    """The first integer too large for a double: (event index, field path, value).

    >>> _find_huge_int({"now": 1, "events": [{"data": {"t": 10 ** 400}}]})[:2]
    (0, 'data.t')
    """
    def walk(value: Any, path: str) -> tuple[str, int] | None:
        if type(value) is int:
            try:
                float(value)
            except OverflowError:
                return path, value
        elif type(value) is dict:
            for key, item in value.items():
                found = walk(item, f"{path}.{key}" if path else str(key))
                if found is not None:
                    return found
        elif type(value) is list:
            for i, item in enumerate(value):
                found = walk(item, f"{path}[{i}]")
                if found is not None:
                    return found
        return None

    if type(obj) is not dict:
        return None
    for key, value in obj.items():
        if key == "events" and type(value) is list:
            for index, event in enumerate(value):
                found = walk(event, "")
                if found is not None:
                    return index, found[0], found[1]
        else:
            found = walk(value, str(key))
            if found is not None:
                return None, found[0], found[1]
    return None


def _dump(obj: dict[str, Any]) -> bytes:
    """Serialise a message; refuse (naming event and field) what JSON cannot carry.

    msgspec writes a NaN or an infinity as ``null`` and fails on nesting deeper than
    the interpreter's recursion limit; the message is walked (:func:`_locate_bad_value`)
    only then, or when its output holds ``null``: almost never.
    """
    try:
        data = _ENCODER.encode(obj)
    except Exception as exc:  # nesting too deep, an object msgspec cannot write
        located = _locate_bad_value(obj)
        if located is not None:
            index, field, problem = located
            raise ProtocolError(f"cannot be encoded as JSON: {problem}", index=index,
                                field=field) from None
        raise ProtocolError(f"cannot be encoded as JSON ({exc})") from exc
    if b"null" in data:  # a real null, or a NaN / infinity msgspec turned into one
        located = _locate_bad_value(obj)
        if located is not None:
            index, field, problem = located
            raise ProtocolError(f"cannot be encoded as JSON: {problem}", index=index,
                                field=field)
    return data


# ---------------------------------------------------------------------------------------
# what the schema refused, in our words
# ---------------------------------------------------------------------------------------

_MESSAGE_MEMBERS = "now, events"
_MESSAGE_KEYS = frozenset({"now", "events"})
_EVENT_MEMBERS = "timestamp, type, data; event fields belong inside 'data'"
_EVENT_KEYS = frozenset({"timestamp", "type", "data"})


def _refused(exc: msgspec.ValidationError, root: Any, side: _Side) -> ProtocolError:
    """One ProtocolError for what the schema refused; ``root`` is the parsed message."""
    steps, message = explain(exc, root)
    if not steps or steps[0] != "events" or len(steps) < 2 or type(steps[1]) is not int:
        field = dotted(steps) or None
        if field is None:
            message = message.replace("expected an object", "a message must be a JSON object")
        elif len(steps) == 1 and message in ("missing member", "unexpected member"):
            if message[0] == "u":
                field = _first_extra(root, _MESSAGE_KEYS, field)
            message += " of the message" + (f" (allowed: {_MESSAGE_MEMBERS})"
                                            if message[0] == "u" else "")
        return ProtocolError(message, field=field)
    index, rest = steps[1], steps[2:]
    event = value_at(root, ["events", index])
    kind = event.get("type") if type(event) is dict else None
    known = kind if type(kind) is str and kind in side.decoders else None
    if not rest:
        message = message.replace("expected an object", "an event must be an object")
    elif len(rest) == 1 and message == "missing member":
        message = "missing member of the event"
    elif len(rest) == 1 and message == "unexpected member":
        rest = [_first_extra(event, _EVENT_KEYS, rest[0])]
        message = f"unexpected member of the event (allowed: {_EVENT_MEMBERS})"
    elif rest == ["type"]:
        message = _unknown_type(kind, side)
    elif len(rest) == 2 and rest[0] == "data" and message == "unexpected member" and known:
        fields = {f.name: f.type for f in msgspec.structs.fields(side.decoders[known])}
        allowed = getattr(fields["data"], "__struct_fields__", ())
        if allowed:
            rest = ["data", _first_extra(event.get("data"), frozenset(allowed), rest[1])]
            message += f" (allowed: {', '.join(sorted(allowed))})"
    return ProtocolError(message, index=index, field=dotted(rest) or None, event_type=known)


def _first_extra(obj: Any, allowed: frozenset[str], found: Any) -> Any:
    """The first unexpected member of ``obj`` in sorted order (msgspec names the first seen).

    >>> _first_extra({"b": 1, "z": 2, "a": 3}, frozenset({"b"}), "z")
    'a'
    """
    if type(obj) is not dict:
        return found
    return min((str(key) for key in obj if key not in allowed), default=found)


def _unknown_type(kind: Any, side: _Side) -> str:
    if type(kind) is not str:
        return f"expected a string, got {type_name(kind)}"
    if kind in side.other_types:
        return f"{kind!r} is sent by {side.other_sender}, never by {side.sender}"
    return f"unknown type {kind[:60]!r} for a message from {side.sender}"


# ---------------------------------------------------------------------------------------
# wire structs -> typed messages
# ---------------------------------------------------------------------------------------


def _timestamp_error(index: int, event: WireEvent, message: str) -> ProtocolError:
    return ProtocolError(message, index=index, field="timestamp",
                         event_type=event.__struct_config__.tag)  # type: ignore[arg-type]


def _typed(now: float, events: list[WireEvent], build: bool = True) -> tuple[Any, ...]:
    """Check the events' times against ``now`` and each other; build the typed events."""
    typed = []
    previous = -math.inf
    for index, event in enumerate(events):
        timestamp = event.timestamp
        if timestamp > now:
            raise _timestamp_error(index, event, f"{timestamp!r} is after the message's now "
                                                 f"{now!r}")
        if timestamp < previous:
            raise _timestamp_error(index, event, f"{timestamp!r} is before the previous "
                                                 f"event's {previous!r} (timestamps must not "
                                                 "decrease)")
        previous = timestamp
        if build:
            try:
                typed.append(event.typed())
            except FieldError as bad:
                raise ProtocolError(bad.message, index=index, field=bad.field,
                                    event_type=event.__struct_config__.tag) from None
    return tuple(typed)


def _decode(data: bytes | str, side: _Side) -> tuple[float, tuple[Any, ...]]:
    """Parse and check one message in one C pass, then build its typed events."""
    try:
        message = side.decoder.decode(data)
    except msgspec.ValidationError as exc:
        if str(exc).startswith("Number out of range"):  # the standard parser can say where
            error = _explain_parse_failure(data, exc, side)
            if error.index is not None or error.field is not None:
                raise error from None
        try:
            root = msgspec.json.decode(data)
        except Exception:  # noqa: BLE001 - only to show the offending value
            root = None
        raise _refused(exc, root, side) from None
    except Exception as exc:  # DecodeError, UnicodeDecodeError, TypeError, RecursionError
        raise _explain_parse_failure(data, exc, side) from None
    return message.now, _typed(message.now, message.events)


def _from_obj(obj: Any, side: _Side) -> tuple[float, tuple[Any, ...]]:
    """Check a parsed message (as in the transcripts) against the schema; build it."""
    try:
        message = msgspec.convert(obj, side.schema, str_keys=True, dec_hook=decode_hook)
    except msgspec.ValidationError as exc:
        raise _refused(exc, obj, side) from None
    except RecursionError:
        raise ProtocolError("values nested too deeply") from None
    return message.now, _typed(message.now, message.events)


# ---------------------------------------------------------------------------------------
# typed messages -> objects -> bytes
# ---------------------------------------------------------------------------------------


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


def _encode(now: float, items: tuple[Any, ...], side: _Side) -> bytes:
    """The bytes of a message, checked against the wire schema before they are written.

    The message object is checked as it is (msgspec's ``convert``, in C; machine sets
    checked as sets), then written: no second parse of our own output. A reply of
    undated plain EXECUTE_JOB and REJECT_JOB decisions (nearly every reply) passes
    :func:`_plainly_valid` instead, which applies the same rules without building the
    schema's structs.
    """
    obj = _to_obj(now, items, side)
    if side is _FROM_BATSIM or not _plainly_valid(now, items):
        try:
            message = msgspec.convert(obj, side.schema, str_keys=True, dec_hook=decode_hook)
        except msgspec.ValidationError as exc:
            raise _refused(exc, obj, side) from None
        _typed(message.now, message.events, build=side is _FROM_BATSIM)  # times; open objects
    return _dump(obj)


def _plainly_valid(now: Any, decisions: tuple[Any, ...]) -> bool:
    """True if the schema would accept this reply, seen without building its structs.

    Only for the commonest reply: a float ``now`` within ``Time``'s bounds and undated
    decisions that are each a REJECT_JOB or an EXECUTE_JOB without its optional
    members; their members are checked with the schema's own rules (the job-id pattern
    of ``JobId``, the machine-set hook). Anything else, or any doubt, answers False and
    the whole schema checks the message (and names what is wrong). Runtime complexity:
    O(decisions).

    >>> _plainly_valid(-0.5, ())  # before time 0: the schema says why
    False

    >>> from batpolicy.protocol.intervals import MachineSet, format_intervals
    >>> _plainly_valid(3.0, (ExecuteJob("w!1", MachineSet.of(0)), RejectJob("w!2")))
    True
    >>> _plainly_valid(3.0, (ExecuteJob("w!1", MachineSet()),))  # empty: the schema says why
    False
    """
    if type(now) is not float or not 0.0 <= now <= MAX_TIME:  # the schema's Time (NaN fails)
        return False
    for decision in decisions:
        kind = type(decision)
        if decision.timestamp is not None:
            return False
        if kind is ExecuteJob:
            if (decision.mapping is not None or decision.storage_mapping is not None
                    or decision.additional_io_job is not None
                    or type(decision.alloc) is not MachineSet):
                return False
            try:
                machine_set(decision.alloc)  # the hook's own rules, called without the hook
            except ValueError:
                return False
        elif kind is not RejectJob:
            return False
        if not is_job_id(decision.job_id):
            return False
    return True


def _plain(obj: dict[str, Any]) -> dict[str, Any]:
    """A message object with its machine sets written as interval strings (plain JSON)."""
    try:
        return msgspec.to_builtins(obj, enc_hook=encode_hook, str_keys=True)
    except Exception as exc:  # an object JSON has no form for
        raise ProtocolError(f"cannot be written as JSON ({type(exc).__name__}: {exc})") from exc


def request_from_obj(obj: Any) -> Request:
    """Decode a parsed message from Batsim (a dict as in the transcripts) into a Request."""
    return Request(*_from_obj(obj, _FROM_BATSIM))


def reply_from_obj(obj: Any) -> Reply:
    """Decode a parsed message from a scheduler into a Reply."""
    return Reply(*_from_obj(obj, _FROM_SCHEDULER))


def request_to_obj(request: Request) -> dict[str, Any]:
    """The JSON object of a Request (events without timestamp get ``now``), unchecked."""
    if not isinstance(request, Request):
        raise ProtocolError(f"expected a Request, got {type(request).__name__}")
    return _plain(_to_obj(request.now, request.events, _FROM_BATSIM))


def reply_to_obj(reply: Reply) -> dict[str, Any]:
    """The JSON object of a Reply (decisions without timestamp get ``now``), unchecked."""
    if not isinstance(reply, Reply):
        raise ProtocolError(f"expected a Reply, got {type(reply).__name__}")
    return _plain(_to_obj(reply.now, reply.decisions, _FROM_SCHEDULER))


def request_decoder(decoder: msgspec.json.Decoder = REQUEST_DECODER
                    ) -> Callable[[bytes | str], Request]:
    """:func:`decode_request` bound to ``decoder``, one Python frame per message.

    ``decoder`` is :data:`REQUEST_DECODER` or one of :func:`remembering_decoder`, which
    accepts and refuses exactly the same messages. No partial's keyword merge and no
    lookup of the decoder per message.
    """
    decode_wire = decoder.decode

    def decode_request(data: bytes | str) -> Request:
        """Decode one message received from Batsim.

        One C pass of the schema's decoder, then the typed events; a message it refuses is
        decoded again by :func:`_decode` (with the schema's own decoder), which raises the
        one error naming what is wrong.

        A message of one event dated at or before ``now`` (nearly every message) builds
        its event directly: :func:`_typed`'s checks of times between events have nothing
        to compare, and a :class:`FieldError` of ``typed()`` goes to :func:`_typed`,
        which names it as for any message.
        """
        try:
            message = decode_wire(data)
        except Exception:  # noqa: BLE001 - _decode's handlers name it
            return Request(*_decode(data, _FROM_BATSIM))
        now, events = message.now, message.events
        if len(events) == 1:
            event = events[0]
            if event.timestamp <= now:
                try:
                    return Request(now, (event.typed(),))
                except FieldError:
                    pass  # _typed raises the error naming the event and field
        return Request(now, _typed(now, events))

    return decode_request


#: Decode one message received from Batsim (:func:`request_decoder`'s, with the schema's
#: own decoder).
decode_request = request_decoder()


#: Sent allocations a :func:`remembering_decoder` holds at most (a peer that never echoes
#: them canonically would otherwise grow it with every job).
_REMEMBERED_MAX = 1 << 16


def remembering_decoder(sent: dict[str, MachineSet]) -> msgspec.json.Decoder:
    """A decoder of Batsim's messages that takes back the allocations this side sent.

    ``sent`` maps the interval string of each EXECUTE_JOB allocation written by
    :func:`encode_reply` (``sent=``) to its :class:`MachineSet`. Batsim echoes that string
    in the job's JOB_COMPLETED (``alloc``: ``src/server.cpp`` passes the allocation's
    ``to_string_hyphen(" ")``, the canonical form
    :func:`~batpolicy.protocol.intervals.format_intervals` writes, to
    ``append_job_completed``, ``src/protocol.cpp``), so the set comes from ``sent`` instead
    of being parsed and built again, and the
    entry is dropped. Any other value goes through the schema's hook
    (:func:`~batpolicy.protocol._wire.decode_hook`). Equivalent to
    :data:`REQUEST_DECODER`: a string in ``sent`` was written by
    :func:`~batpolicy.protocol.intervals.format_intervals` from a non-empty set of ids at
    most ``INT32_MAX`` (the encoder's checks), which the hook accepts and parses back into
    an equal set. Runtime complexity: O(1) per remembered allocation.
    """
    take = sent.pop

    def hook(kind: type, value: Any) -> Any:
        if type(value) is str and kind is MachineSet:
            known = take(value, None)
            if known is not None:
                return known
            if len(sent) > _REMEMBERED_MAX:
                sent.clear()
        return decode_hook(kind, value)

    return msgspec.json.Decoder(REQUEST_SCHEMA, dec_hook=hook)


def decode_reply(data: bytes | str) -> Reply:
    """Decode one message sent by a scheduler."""
    return Reply(*_decode(data, _FROM_SCHEDULER))


def encode_request(request: Request) -> bytes:
    """Encode a message as Batsim would send it; refuse what a scheduler must refuse."""
    if not isinstance(request, Request):
        raise ProtocolError(f"expected a Request, got {type(request).__name__}")
    return _encode(request.now, request.events, _FROM_BATSIM)


def encode_reply(reply: Reply, *, checked: bool = False,
                 sent: dict[str, MachineSet] | None = None) -> bytes:
    """Encode a reply, stamping undated decisions with ``reply.now``; refuse what Batsim refuses.

    Every reply is checked against the wire schema, whoever built it: ``checked`` (set
    by callers whose decisions passed the scheduler's own checker) changes neither the
    checks nor the bytes. ``sent`` (string -> set) is given the interval string of each
    plain EXECUTE_JOB's allocation, for :func:`remembering_decoder`. The encoding itself
    is :func:`reply_encoder`'s.
    """
    return (_ENCODE_REPLY if sent is None else reply_encoder(sent))(reply)


def reply_encoder(sent: dict[str, MachineSet] | None = None) -> Callable[[Reply], bytes]:
    """The encoder of replies for one conversation's ``sent`` table (:func:`encode_reply`).

    One Python frame per reply (no partial's keyword merge); a reply without decisions
    (most of them) is written there, around one C call of the encoder, a plain one by
    :func:`~batpolicy.protocol._plain_reply.plain_reply`, any other by :func:`_encode`.
    """
    head, tail = _EMPTY_REPLY
    dump = _ENCODER.encode

    def encode(reply: Reply) -> bytes:
        """Encode one reply of this conversation (see :func:`encode_reply`)."""
        if type(reply) is not Reply and not isinstance(reply, Reply):
            raise ProtocolError(f"expected a Reply, got {type(reply).__name__}")
        now, decisions = reply.now, reply.decisions
        if type(now) is float and 0.0 <= now <= MAX_TIME:  # the schema's Time (NaN fails)
            if not decisions:
                return head + dump(now) + tail  # most replies
            data = _plain_reply(now, decisions, sent)
            if data is not None:
                return data
        return _encode(now, decisions, _FROM_SCHEDULER)

    return encode


#: :func:`encode_reply`'s encoder when no ``sent`` table is given.
_ENCODE_REPLY = reply_encoder()


#: The NOTIFY type a refusal reply carries begins with this (then the reason).
REFUSAL_PREFIX = "batpolicy refused this conversation: "


def refusal_reply(reason: str, now: float = 0.0) -> bytes:
    """A reply that makes Batsim 4.2.1 stop at once, printing ``reason``, instead of waiting.

    Batsim 4.2.1 has no event by which a scheduler ends a simulation, and it waits for
    the reply to every message forever (``src/network.cpp``: a blocking ``zmq_msg_recv``).
    It parses each reply at once (``JsonProtocolReader::parse_and_apply_message``,
    ``src/protocol.cpp``), and a NOTIFY of a type it does not know stops it:
    ``xbt_assert(false, "Unknown NOTIFY type received ('%s').")`` logs that line, type
    included, and aborts the process. So the reply is one NOTIFY whose type is
    :data:`REFUSAL_PREFIX` followed by ``reason``: Batsim's last log line says why. Its
    outputs are not finalized (an assertion aborts; only a broken connection flushes
    them). Built directly, not through :func:`encode_reply`, which refuses exactly this.

    >>> refusal_reply("message #3: bad", 5.0)[:60]
    b'{"now":5.0,"events":[{"timestamp":5.0,"type":"NOTIFY","data"'
    """
    text = REFUSAL_PREFIX + " ".join(str(reason).split())[:400]
    if not (type(now) is float and 0.0 <= now <= MAX_TIME):
        now = 0.0
    return _ENCODER.encode({"now": now, "events": [
        {"timestamp": now, "type": EventType.NOTIFY.value, "data": {"type": text}}]})
