"""Wire vocabulary and field checks shared by the Batsim JSON decoders and encoders.

Every check raises :class:`FieldError` (a field path and a message). The codec catches it
around each event and turns it into one :class:`~batpolicy.errors.ProtocolError` that
also carries the event's index and type, so the helpers never need to know where they are.
"""

from __future__ import annotations

import math
from enum import Enum
from typing import Any

from batpolicy.errors import ProtocolError
from batpolicy.protocol.intervals import MachineSet, parse_intervals

__all__ = ["EventType", "FieldError", "INT32_MAX", "INT32_MIN", "as_int", "as_intervals",
           "as_job_id", "as_object", "as_str", "as_time", "check_members", "find_bad_json",
           "type_name", "wire_str"]

#: Bounds of a JSON integer Batsim reads with rapidjson's ``GetInt`` (a C ``int``).
INT32_MIN, INT32_MAX = -(2 ** 31), 2 ** 31 - 1
_INT64_MIN, _UINT64_MAX = -(2 ** 63), 2 ** 64 - 1


class EventType(str, Enum):  # noqa: UP042 - str() stays the member name, like types.JobState
    """Every ``type`` string of the Batsim 4.2.1 JSON protocol, both directions."""

    # Batsim -> scheduler
    SIMULATION_BEGINS = "SIMULATION_BEGINS"
    SIMULATION_ENDS = "SIMULATION_ENDS"
    JOB_SUBMITTED = "JOB_SUBMITTED"
    JOB_COMPLETED = "JOB_COMPLETED"
    JOB_KILLED = "JOB_KILLED"
    RESOURCE_STATE_CHANGED = "RESOURCE_STATE_CHANGED"
    REQUESTED_CALL = "REQUESTED_CALL"
    FROM_JOB_MSG = "FROM_JOB_MSG"
    # both directions (different meaning in each)
    NOTIFY = "NOTIFY"
    QUERY = "QUERY"
    ANSWER = "ANSWER"
    # scheduler -> Batsim
    EXECUTE_JOB = "EXECUTE_JOB"
    REJECT_JOB = "REJECT_JOB"
    KILL_JOB = "KILL_JOB"
    CALL_ME_LATER = "CALL_ME_LATER"
    SET_RESOURCE_STATE = "SET_RESOURCE_STATE"
    REGISTER_JOB = "REGISTER_JOB"
    REGISTER_PROFILE = "REGISTER_PROFILE"
    SET_JOB_METADATA = "SET_JOB_METADATA"
    CHANGE_JOB_STATE = "CHANGE_JOB_STATE"
    TO_JOB_MSG = "TO_JOB_MSG"


class FieldError(Exception):
    """One bad field of one event: ``field`` is a dotted path such as ``data.job.res``."""

    def __init__(self, field: str | None, message: str) -> None:
        super().__init__(field, message)
        self.field = field
        self.message = message

    def __str__(self) -> str:
        return f"field '{self.field}': {self.message}" if self.field else self.message


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


def wire_str(value: str) -> str:
    """The plain string of a string or of a string enum member.

    >>> from batpolicy.protocol.types import JobState
    >>> wire_str(JobState.REJECTED), wire_str("x")
    ('REJECTED', 'x')
    """
    return value.value if isinstance(value, Enum) else value


def as_time(value: Any, field: str) -> float:
    """A finite JSON number (never a boolean) as a float.

    >>> as_time(3, "now")
    3.0
    >>> try:
    ...     as_time(True, "now")
    ... except FieldError as exc:
    ...     print(exc)
    field 'now': expected a number, got boolean
    """
    kind = type(value)
    if kind is float:
        if math.isfinite(value):
            return value
        raise FieldError(field, f"{value!r} is not a finite number")
    if kind is int:
        result = float(value)
        if math.isfinite(result):
            return result
        raise FieldError(field, "number too large")
    raise FieldError(field, f"expected a number, got {type_name(value)}")


def as_int(value: Any, field: str, minimum: int = INT32_MIN) -> int:
    """A JSON integer (not a float, not a boolean) within ``[minimum, INT32_MAX]``.

    >>> as_int(4, "data.job.res", 0)
    4
    >>> try:
    ...     as_int(4.0, "data.job.res", 0)
    ... except FieldError as exc:
    ...     print(exc)
    field 'data.job.res': expected a JSON integer, got 4.0
    """
    if type(value) is not int:
        shown = repr(value) if type(value) is float else type_name(value)
        raise FieldError(field, f"expected a JSON integer, got {shown}")
    if value < minimum or value > INT32_MAX:
        raise FieldError(field, f"{value} is out of range [{minimum}, {INT32_MAX}]")
    return value


def as_str(value: Any, field: str) -> str:
    """A JSON string.

    >>> as_str("idle", "data.state")
    'idle'
    """
    if type(value) is not str:
        raise FieldError(field, f"expected a string, got {type_name(value)}")
    return value


def as_object(value: Any, field: str) -> dict[str, Any]:
    """A JSON object (kept as is, not copied).

    >>> as_object({"a": 1}, "data.job")
    {'a': 1}
    """
    if type(value) is not dict:
        raise FieldError(field, f"expected an object, got {type_name(value)}")
    return value


def as_job_id(value: Any, field: str) -> str:
    """A full job id ``workload!name``: a string with exactly one ``!`` (PROTOCOL.md §1.5).

    >>> as_job_id("w0!12", "data.job_id")
    'w0!12'
    >>> try:
    ...     as_job_id("w0!a!b", "data.job_id")
    ... except FieldError as exc:
    ...     print(exc)
    field 'data.job_id': job id 'w0!a!b' must contain exactly one '!' (workload!name)
    """
    if type(value) is not str:
        raise FieldError(field, f"expected a job id string 'workload!name', got {type_name(value)}")
    if value.count("!") != 1:
        raise FieldError(field,
                         f"job id {value[:80]!r} must contain exactly one '!' (workload!name)")
    return value


def as_intervals(value: Any, field: str) -> MachineSet:
    """A non-empty Batsim interval set such as ``"0-3 7"`` (PROTOCOL.md §1.12).

    >>> str(as_intervals("1 2 4-8", "data.alloc"))
    '1-2 4-8'
    """
    if type(value) is not str:
        raise FieldError(field, "expected an interval-set string such as '0-3 7', "
                                f"got {type_name(value)}")
    if not value.strip():
        raise FieldError(field, "empty interval set (at least one resource is needed)")
    try:
        resources = parse_intervals(value, field=None)  # type: ignore[arg-type]  # we name it
    except ProtocolError as exc:
        raise FieldError(field, str(exc)) from None
    if resources.max() > INT32_MAX:
        raise FieldError(field, f"resource id {resources.max()} is out of range")
    return resources


def check_members(data: dict[str, Any], required: frozenset[str],
                  optional: frozenset[str] = frozenset(), prefix: str = "data") -> None:
    """Check an object's member names: all of ``required``, others only from ``optional``.

    >>> check_members({"job_id": "w!1"}, frozenset({"job_id"}))
    >>> try:
    ...     check_members({"job_id": "w!1", "x": 1}, frozenset({"job_id"}))
    ... except FieldError as exc:
    ...     print(exc)
    field 'data.x': unexpected member (allowed: job_id)
    """
    keys = data.keys()
    if keys == required:
        return
    dot = f"{prefix}." if prefix else ""
    missing = required - keys
    if missing:
        raise FieldError(dot + sorted(missing)[0], "missing member")
    extra = keys - required - optional
    if extra:
        allowed = ", ".join(sorted(required | optional)) or "none"
        raise FieldError(dot + sorted(map(str, extra))[0],
                         f"unexpected member (allowed: {allowed})")


def find_bad_json(value: Any, path: str = "") -> tuple[str, str] | None:
    """First place where ``value`` is not plain, finite JSON: ``(path, problem)`` or None.

    Used off the hot path: to locate what the JSON parser refused, and before encoding.

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
        if _INT64_MIN <= value <= _UINT64_MAX:
            return None
        return path, "integer out of the 64-bit range"
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
    return path, f"a {kind.__name__} is not a JSON value"
