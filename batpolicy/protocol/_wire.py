"""Wire vocabulary: event types, constrained field types, the interval-set hooks, JSON hygiene.

The field types are :mod:`msgspec` annotations (``Annotated[int, Meta(...)]``): msgspec
checks them in C while it parses (:mod:`batpolicy.protocol._decoders` builds the wire
schema from them). What a type annotation cannot say is checked in the schema's
``__post_init__`` hooks, which raise :class:`FieldError`; msgspec turns it into a
``ValidationError`` whose path names the struct and whose ``__cause__`` is the
``FieldError`` naming the member, and the codec joins both into one
:class:`~batpolicy.errors.ProtocolError` that also names the event's index and type.
"""

from __future__ import annotations

import math
import re
import sys
from enum import Enum
from types import MappingProxyType
from typing import Annotated, Any

from msgspec import Meta

from batpolicy.errors import ProtocolError
from batpolicy.protocol.intervals import MachineSet, format_intervals, parse_intervals
from batpolicy.protocol.types import EventType

__all__ = ["DIGITS", "MAX_NAME", "MAX_TIME", "PATTERN_MEANINGS", "Count", "EventType",
           "FieldError", "Finite", "INT32_MAX", "INT32_MIN", "Int32", "JobId", "Metadata", "Name",
           "Number", "PlainJobId", "Pstate", "Time", "WorkloadName",
           "as_int", "as_time", "check_job_id", "decode_hook", "encode_hook", "find_bad_json",
           "is_job_id", "machine_set", "type_name"]

#: Bounds of a JSON integer Batsim reads with rapidjson's ``GetInt`` (a C ``int``).
INT32_MIN, INT32_MAX = -(2 ** 31), 2 ** 31 - 1
_FLOAT_MAX = sys.float_info.max

#: The latest simulated time accepted, in seconds: 2**53 (285 million years). Batsim's
#: clock is SimGrid's double; beyond 2**53 doubles are more than a second apart, so
#: ``start + runtime``, Batsim's 1e-5 s rounding of CALL_ME_LATER and the six decimals of
#: jobs.csv lose their meaning. No workload Batsim can run reaches it; a hostile peer's
#: ``now`` of 2**80 or 1e308 is refused.
MAX_TIME = float(2 ** 53)
#: Longest name accepted (job ids, profile, workload and machine names), in characters:
#: Batsim copies them from the workload files, where real traces use a few dozen.
MAX_NAME = 4096
#: A finite number, read as a float (JSON integers included, booleans refused).
Finite = Annotated[float, Meta(ge=-_FLOAT_MAX, le=_FLOAT_MAX)]
#: A simulated time: a number in ``[0, MAX_TIME]``, read as a float.
Time = Annotated[float, Meta(ge=0.0, le=MAX_TIME)]
#: A finite number kept as the JSON gave it (integer or float), for raw objects we rebuild.
Number = int | Finite
#: A name Batsim copies from the workload or platform: at most ``MAX_NAME`` characters.
Name = Annotated[str, Meta(max_length=MAX_NAME)]
#: A JSON integer Batsim reads as a C ``int``.
Int32 = Annotated[int, Meta(ge=INT32_MIN, le=INT32_MAX)]
#: A count, id or index: a JSON integer in ``[0, INT32_MAX]``.
Count = Annotated[int, Meta(ge=0, le=INT32_MAX)]
#: A full job id ``workload!name``: exactly one ``!`` (Batsim's protocol: job ids).
JOB_ID_PATTERN = r"^[^!]*![^!]*$"
JobId = Annotated[str, Meta(pattern=JOB_ID_PATTERN, max_length=MAX_NAME)]
#: A job id whose one ``!`` its struct's ``__post_init__`` checks (:func:`check_job_id`):
#: for the two events of nearly every message, where msgspec's pattern check (a call
#: into ``re`` per id) cost three times the rest of the id's decoding.
PlainJobId = Annotated[str, Meta(max_length=MAX_NAME)]
#: A non-negative integer written as a string (pstates, mapping indexes).
DIGITS = r"^[0-9]+\Z"
#: A pstate: a string holding a non-negative integer.
Pstate = Annotated[str, Meta(pattern=DIGITS)]
#: SET_JOB_METADATA's string: Batsim writes it between double quotes in jobs.csv.
_NO_QUOTE = r'^[^"]*\Z'
Metadata = Annotated[str, Meta(pattern=_NO_QUOTE)]
#: A dynamic workload's name: non-empty, without ``!``.
_WORKLOAD = r"^[^!]+\Z"
WorkloadName = Annotated[str, Meta(pattern=_WORKLOAD, max_length=MAX_NAME)]
#: What each pattern above means, for error messages (msgspec's own shows the regex).
PATTERN_MEANINGS = MappingProxyType({
    JOB_ID_PATTERN: "a job id holds exactly one '!' (workload!name)",
    DIGITS: "expected a string holding a non-negative integer",
    _NO_QUOTE: "metadata must not contain a double quote",
    _WORKLOAD: "a workload name is non-empty and holds no '!'",
})


class FieldError(ValueError):
    """One bad member: ``field`` is a dotted path relative to the object that checks it.

    A ``ValueError`` so that msgspec, when a schema hook raises it, reports it as a
    ``ValidationError`` at that object's path (keeping it as ``__cause__``).
    """

    def __init__(self, field: str | None, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message

    def __str__(self) -> str:
        return f"field '{self.field}': {self.message}" if self.field else self.message


def check_job_id(job_id: str) -> None:
    """Raise :class:`FieldError` (member ``job_id``) unless ``job_id`` is ``JobId``'s.

    ``JOB_ID_PATTERN`` matches exactly the strings holding one ``!`` (``[^!]`` matches
    newlines too, so ``$`` before a final newline changes nothing).

    >>> check_job_id("w0!1")
    >>> try:
    ...     check_job_id("w0!1!2")
    ... except FieldError as exc:
    ...     print(exc)
    field 'job_id': a job id holds exactly one '!' (workload!name)
    """
    if job_id.count("!") != 1:
        raise FieldError("job_id", PATTERN_MEANINGS[JOB_ID_PATTERN])


def is_job_id(job_id: object) -> bool:
    """True if ``job_id`` is a ``JobId``: a string of one ``!``, at most :data:`MAX_NAME` long.

    The codec's plain paths (``codec._plainly_valid``, ``_plain_reply.plain_reply``) check
    a reply's ids with it instead of the schema's pattern, as :func:`check_job_id` does for
    received ids.

    >>> is_job_id("w0!1"), is_job_id("w0"), is_job_id("w!" + "x" * MAX_NAME), is_job_id(1)
    (True, False, False, False)
    """
    return type(job_id) is str and job_id.count("!") == 1 and len(job_id) <= MAX_NAME


def type_name(value: object) -> str:
    """JSON name of a value's type, for error messages.

    >>> type_name(True), type_name(1.5), type_name(None), type_name([]), type_name({})
    ('boolean', 'number', 'null', 'array', 'object')
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def as_time(value: Any, field: str) -> float:
    """A JSON number within ``±MAX_TIME`` (never a boolean) as a float, for raw objects.

    >>> as_time(3, "job.subtime")
    3.0
    >>> try:
    ...     as_time(True, "job.subtime")
    ... except FieldError as exc:
    ...     print(exc)
    field 'job.subtime': expected a number, got boolean
    """
    kind = type(value)
    if kind is float:
        if -MAX_TIME <= value <= MAX_TIME:
            return value
        if math.isfinite(value):
            raise FieldError(field, f"{value!r} is beyond the {MAX_TIME:.0f} s a time may be")
        raise FieldError(field, f"{value!r} is not a finite number")
    if kind is int:
        if -MAX_TIME <= value <= MAX_TIME:
            return float(value)
        raise FieldError(field, f"{value} is beyond the {MAX_TIME:.0f} s a time may be")
    raise FieldError(field, f"expected a number, got {type_name(value)}")


def as_int(value: Any, field: str, minimum: int = INT32_MIN) -> int:
    """A JSON integer (not a float, not a boolean) within ``[minimum, INT32_MAX]``.

    >>> as_int(4, "job.res", 0)
    4
    >>> try:
    ...     as_int(4.0, "job.res", 0)
    ... except FieldError as exc:
    ...     print(exc)
    field 'job.res': expected a JSON integer, got 4.0
    """
    if type(value) is not int:
        shown = repr(value) if type(value) is float else type_name(value)
        raise FieldError(field, f"expected a JSON integer, got {shown}")
    if value < minimum or value > INT32_MAX:
        raise FieldError(field, f"{value} is out of range [{minimum}, {INT32_MAX}]")
    return value


def machine_set(value: Any) -> MachineSet:
    """A non-empty Batsim interval set (Batsim's protocol: interval sets) of ids a C ``int`` holds.

    From the wire, a string such as ``"0-3 7"``; when the codec checks a message it is
    about to send, the :class:`MachineSet` the decision holds (same rules, no parsing).

    A string of one run (``"a-b"`` or ``"a"``: what Batsim writes for nearly every
    allocation) is read by one C-level match; anything else, or a run the match finds
    wrong (bounds reversed, an id beyond ``INT32_MAX``), is parsed by
    :func:`~batpolicy.protocol.intervals.parse_intervals`, which says why it refuses.

    >>> [str(machine_set(v)) for v in ("1 2 4-8", MachineSet.of(3), "5-9")]
    ['1-2 4-8', '3', '5-9']
    """
    if type(value) is str:
        run = _ONE_RUN(value)
        if run is not None:
            first, last = run.groups()
            a = int(first)
            b = a if last is None else int(last)
            if a <= b <= INT32_MAX:
                return MachineSet(range(a, b + 1))
    elif type(value) is MachineSet and value and value.max() <= INT32_MAX:
        return value  # a decision's own set, checked before it is sent
    return _parsed_machine_set(value)


#: One run of ids, ``a`` or ``a-b``, nothing around it (the regex of ``parse_intervals``
#: accepts every string this matches; ten digits cover ``INT32_MAX``).
_ONE_RUN = re.compile(r"(\d{1,10})(?:-(\d{1,10}))?", re.ASCII).fullmatch


def _parsed_machine_set(value: Any) -> MachineSet:
    """:func:`machine_set` for any value, every string through ``parse_intervals``."""
    if type(value) is MachineSet:
        resources = value
    elif type(value) is str:
        if not value.strip():
            raise ValueError("empty interval set (at least one resource is needed)")
        try:
            resources = parse_intervals(value, field=None)  # type: ignore[arg-type]  # msgspec names it
        except ProtocolError as exc:
            raise ValueError(str(exc)) from None
    else:
        raise TypeError("expected an interval-set string such as '0-3 7', "
                        f"got {type_name(value)}")
    if not resources:
        raise ValueError("empty interval set (at least one resource is needed)")
    if resources.max() > INT32_MAX:
        raise ValueError(f"resource id {resources.max()} is out of range")
    return resources


def decode_hook(kind: type, value: Any) -> Any:
    """Msgspec's ``dec_hook``: the schema's one custom type, :class:`MachineSet`."""
    if kind is MachineSet:
        return machine_set(value)
    raise NotImplementedError(f"no wire form for {kind!r}")


def encode_hook(value: Any) -> Any:
    """Msgspec's ``enc_hook``: a :class:`MachineSet` is written as its interval string."""
    if type(value) is MachineSet:
        return format_intervals(value)
    raise TypeError(f"a {type(value).__name__} is not a JSON value")


def find_bad_json(value: Any, path: str = "") -> tuple[str, str] | None:
    """First place where ``value`` is not plain, finite JSON: ``(path, problem)`` or None.

    Used off the hot path: to locate what the JSON parser refused, and after encoding a
    NaN or infinity (which msgspec writes as ``null``).

    >>> find_bad_json({"a": [1, 2.5, "x"]}) is None
    True
    >>> find_bad_json({"job": {"walltime": float("nan")}})
    ('job.walltime', 'nan is not a finite number')
    """
    kind = type(value)
    if kind is str:
        if value.isascii():
            return None
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return path, "string holds a lone surrogate (not valid UTF-8)"
        return None
    if value is None or kind is bool:
        return None
    if kind is float:
        return None if math.isfinite(value) else (path, f"{value!r} is not a finite number")
    if kind is int:
        return None
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str:
                return path, f"object key {key!r} is not a string"
            found = find_bad_json(item, f"{path}.{key}" if path else key)
            if found is not None:
                return found
        return None
    if kind is list or kind is tuple:
        for position, item in enumerate(value):
            found = find_bad_json(item, f"{path}[{position}]")
            if found is not None:
                return found
        return None
    if isinstance(value, Enum) or kind is MachineSet:
        return None  # written by value / as an interval string
    return path, f"a {kind.__name__} is not a JSON value"
