"""Mutated Batsim messages: real messages from the recorded transcripts, broken on purpose.

:func:`base_messages` picks Batsim-side messages of every kind from
``shared/data/transcripts/*.jsonl`` (real Batsim 4.2.1 output). :func:`mutants` breaks
them one way at a time, seeded, so a run is reproducible: a field removed, a wrong type,
an extreme number, NaN or an infinity, a huge string, an unknown event type, non-UTF-8
bytes, truncated JSON, flipped bytes, deep nesting, timestamps out of order.
Each mutant says how it was made (``Mutant.how``), for the failure message.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

#: Replacement values of the wrong type, or at the edge of what a type can hold.
ODD_VALUES: tuple[Any, ...] = (
    None, True, False, 0, -1, 1, 2 ** 31, 2 ** 63, -(2 ** 63) - 1, 10 ** 400, 1e308, -1e308,
    5e-324, -0.0, 0.5, "", "x", "0-3", "w0!1", "!", "1e3", "NaN", "\u0000", "\U0010ffff",
    [], [1], {}, {"a": 1}, [[[[]]]], "é" * 50,
)
#: Tokens Python's JSON accepts but Batsim's (and strict JSON) does not.
NON_JSON_NUMBERS = ("NaN", "Infinity", "-Infinity", "1e999", "-1e999")
#: Event types Batsim 4.2.1 never sends, or sends the other way, or in Batsim 5 spelling.
ODD_TYPES = ("FOO", "", "job_submitted", "EXECUTE_JOB", "KILL_JOB", "REGISTER_JOB",
             "JobSubmittedEvent", "SIMULATION_BEGINS ", "NOTIFY\u0000", "\u00e9v\u00e9nement")


class Mutant(NamedTuple):
    """A message to throw at the decoder, how it was made, and the event it targets."""

    raw: bytes
    how: str
    event: int | None
    structural: bool  # still valid JSON: the error must name a field


def base_messages(folder: Path, per_type: int = 3, seed: int = 0) -> list[dict[str, Any]]:
    """Batsim-side messages holding every event type seen, ``per_type`` examples each.

    SIMULATION_BEGINS messages are kept to their first 4 resources (the mutations
    are the same, the messages 10x shorter).
    """
    rng = random.Random(seed)
    by_type: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(folder.glob("*.jsonl")):
        with path.open() as f:
            for line in f:
                message = json.loads(line)["batsim"]
                kinds = {e["type"] + (":" + e["data"].get("type", "") if e["type"] == "NOTIFY"
                                      else "") for e in message["events"]}
                for kind in kinds:
                    by_type.setdefault(kind, []).append(message)
    out = []
    for kind in sorted(by_type):
        found = by_type[kind]
        for message in rng.sample(found, min(per_type, len(found))):
            message = copy.deepcopy(message)
            for event in message["events"]:
                if event["type"] == "SIMULATION_BEGINS":
                    data = event["data"]
                    data["compute_resources"] = data["compute_resources"][:4]
                    data["nb_resources"] = data["nb_compute_resources"] = 4
            out.append(message)
    return out


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path to a member or item inside ``obj`` (dicts and lists), depth first."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield prefix + (key,)
            yield from _paths(value, prefix + (key,))
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            yield prefix + (i,)
            yield from _paths(value, prefix + (i,))


def _parent(obj: Any, path: tuple[Any, ...]) -> Any:
    for key in path[:-1]:
        obj = obj[key]
    return obj


def _event_of(path: tuple[Any, ...]) -> int | None:
    return path[1] if len(path) >= 2 and path[0] == "events" else None


def _dump(obj: Any) -> bytes:
    return json.dumps(obj, allow_nan=True).encode()


def mutants(messages: list[dict[str, Any]], count: int, seed: int = 1) -> Iterator[Mutant]:
    """``count`` mutants of ``messages``, one mutation each, reproducible for a seed."""
    rng = random.Random(seed)
    ops = (_remove, _retype, _retype, _extreme, _nan_token, _huge_string, _unknown_type,
           _non_utf8, _truncate, _flip_bytes, _deep, _reorder, _add_member)
    for i in range(count):
        message = copy.deepcopy(messages[i % len(messages)])
        yield ops[rng.randrange(len(ops))](message, rng)


def _pick(message: dict[str, Any], rng: random.Random) -> tuple[Any, ...]:
    paths = list(_paths(message))
    return paths[rng.randrange(len(paths))]


def _remove(message: dict[str, Any], rng: random.Random) -> Mutant:
    path = _pick(message, rng)
    del _parent(message, path)[path[-1]]
    return Mutant(_dump(message), f"removed {path}", _event_of(path), True)


def _retype(message: dict[str, Any], rng: random.Random) -> Mutant:
    path = _pick(message, rng)
    value = rng.choice(ODD_VALUES)
    _parent(message, path)[path[-1]] = value
    return Mutant(_dump(message), f"{path} = {value!r:.40}", _event_of(path), True)


def _extreme(message: dict[str, Any], rng: random.Random) -> Mutant:
    numeric = [p for p in _paths(message) if isinstance(_parent(message, p)[p[-1]], (int, float))
               and not isinstance(_parent(message, p)[p[-1]], bool)]
    if not numeric:
        return _retype(message, rng)
    path = rng.choice(numeric)
    value = rng.choice((-1, -1e-9, 2 ** 64, -(2 ** 64), 1e300, -1e300, 1e-300, 0, 10 ** 30))
    _parent(message, path)[path[-1]] = value
    return Mutant(_dump(message), f"{path} = {value!r}", _event_of(path), True)


def _nan_token(message: dict[str, Any], rng: random.Random) -> Mutant:
    path = _pick(message, rng)
    marker = "__NON_JSON_NUMBER__"
    _parent(message, path)[path[-1]] = marker
    token = rng.choice(NON_JSON_NUMBERS)
    raw = _dump(message).replace(f'"{marker}"'.encode(), token.encode())
    return Mutant(raw, f"{path} = {token}", _event_of(path), False)


def _huge_string(message: dict[str, Any], rng: random.Random) -> Mutant:
    path = _pick(message, rng)
    size = rng.choice((10_000, 1_000_000))
    value = rng.choice(("w0!", "", "0-")) + "7" * size
    _parent(message, path)[path[-1]] = value
    return Mutant(_dump(message), f"{path} = <{size} chars>", _event_of(path), True)


def _unknown_type(message: dict[str, Any], rng: random.Random) -> Mutant:
    events = message["events"]
    if not events:
        return _retype(message, rng)
    index = rng.randrange(len(events))
    kind = rng.choice(ODD_TYPES)
    events[index]["type"] = kind
    return Mutant(_dump(message), f"events[{index}].type = {kind!r}", index, True)


def _non_utf8(message: dict[str, Any], rng: random.Random) -> Mutant:
    raw = bytearray(_dump(message))
    at = rng.randrange(len(raw) + 1)
    bad = rng.choice((b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\x80"))
    raw[at:at] = bad
    if rng.random() < 0.2:
        raw = bytearray(bytes(raw).decode("utf-8", "replace").encode("utf-16"))
    return Mutant(bytes(raw), f"non-UTF-8 {bad!r} at byte {at}", None, False)


def _truncate(message: dict[str, Any], rng: random.Random) -> Mutant:
    raw = _dump(message)
    at = rng.randrange(len(raw))
    return Mutant(raw[:at], f"truncated at byte {at} of {len(raw)}", None, False)


def _flip_bytes(message: dict[str, Any], rng: random.Random) -> Mutant:
    raw = bytearray(_dump(message))
    for _ in range(rng.randint(1, 4)):
        at = rng.randrange(len(raw))
        raw[at] = rng.randrange(256)
    return Mutant(bytes(raw), "flipped bytes", None, False)


def _deep(message: dict[str, Any], rng: random.Random) -> Mutant:
    path = _pick(message, rng)
    depth = rng.choice((100, 2000, 100_000))
    marker = "__DEEP__"
    _parent(message, path)[path[-1]] = marker
    raw = _dump(message).replace(f'"{marker}"'.encode(), b"[" * depth + b"1" + b"]" * depth)
    return Mutant(raw, f"{path} nested {depth} deep", _event_of(path), False)


def _reorder(message: dict[str, Any], rng: random.Random) -> Mutant:
    events = message["events"]
    if len(events) >= 2 and rng.random() < 0.5:
        rng.shuffle(events)
        for e in events:
            e["timestamp"] = rng.choice((0.0, message["now"], message["now"] + 1))
        return Mutant(_dump(message), "events shuffled, timestamps moved", None, True)
    message["now"] = rng.choice((-1.0, 0.0, message["now"] - 1, message["now"] + 1e9))
    return Mutant(_dump(message), f"now = {message['now']}", None, True)


def _add_member(message: dict[str, Any], rng: random.Random) -> Mutant:
    objects = [p for p in _paths(message) if isinstance(_parent(message, p)[p[-1]], dict)]
    path = rng.choice(objects) if objects else ()
    obj = _parent(message, path)[path[-1]] if path else message
    obj[rng.choice(("extra", "now", "type", "data", "job_id", "\u00e9"))] = rng.choice(ODD_VALUES)
    return Mutant(_dump(message), f"member added at {path}", _event_of(path), True)
