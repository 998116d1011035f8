"""The wire schema's common parts: the event struct, strict data objects, raw-part checks.

Every wire ``type`` is a msgspec struct (:mod:`._from_batsim`, :mod:`._from_scheduler`)
decoded in one C pass as a tagged union on the event's ``type``
(:mod:`._decoders`): strict types (booleans are not numbers, counts and codes are JSON
integers within a C ``int``, job ids hold exactly one ``!``, interval sets parse,
enumerations are closed) and exact member sets, as Batsim 4.2.1 sends or accepts them
(Batsim's protocol: events, decisions). What a type annotation cannot say is checked in
``__post_init__``, raising :class:`~batpolicy.protocol._wire.FieldError`. Each event
struct's ``typed()`` builds the event or decision of :mod:`batpolicy.protocol.types`.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec
from msgspec import Struct

from batpolicy.protocol._errors import dotted, explain
from batpolicy.protocol._wire import (
    INT32_MAX,
    MAX_NAME,
    MAX_TIME,
    FieldError,
    JobId,
    Time,
    as_int,
    as_time,
    decode_hook,
    type_name,
)

__all__ = ["ChangeableState", "Data", "JobMsg", "MachineState", "Object", "WireEvent", "check_job",
           "check_part"]

Object = dict[str, Any]
MachineState = Literal["sleeping", "idle", "computing", "switching_on", "switching_off",
                       "unavailable"]
#: Target states CHANGE_JOB_STATE accepts (Batsim's protocol: decisions).
ChangeableState = Literal["NOT_SUBMITTED", "RUNNING", "COMPLETED_SUCCESSFULLY",
                          "COMPLETED_WALLTIME_REACHED", "COMPLETED_KILLED", "REJECTED"]


def check_part(value: Any, schema: type, prefix: str) -> Any:
    """``value`` (already parsed) checked against ``schema``; errors name ``prefix``.

    >>> class WakeUp(Data):
    ...     at: float
    >>> check_part({"at": 3}, WakeUp, "data").at
    3.0
    >>> try:
    ...     check_part({"at": 1, "again": True}, WakeUp, "data")
    ... except FieldError as exc:
    ...     print(exc)
    field 'data.again': unexpected member
    """
    try:
        return msgspec.convert(value, schema, str_keys=True, dec_hook=decode_hook)
    except msgspec.ValidationError as exc:
        steps, message = explain(exc, value)
        field = dotted(steps)
        raise FieldError(f"{prefix}.{field}" if field else prefix, message) from None


def check_job(job: Object, field: str, *, registration: bool) -> None:
    """A job description: ``res`` a JSON integer >= 0; ``subtime``/``walltime`` numbers.

    The description is Batsim's raw job object (kept whole, extra user fields
    included), so it is checked member by member (Batsim's protocol: workloads).
    """
    if "res" not in job:
        raise FieldError(f"{field}.res", "missing member")
    res = job["res"]
    if type(res) is not int or not 0 <= res <= INT32_MAX:  # as_int's rule, without the call
        as_int(res, f"{field}.res", 0)  # raises, naming what is wrong
    if registration:
        for name in ("id", "subtime", "profile"):
            if name not in job:
                raise FieldError(f"{field}.{name}", "missing member (REGISTER_JOB needs it)")
        if type(job["profile"]) is not str:
            raise FieldError(f"{field}.profile",
                             f"expected a string, got {type_name(job['profile'])}")
    # subtime and walltime, numbers the state computes with, when present (no loop)
    if "subtime" in job:
        value = job["subtime"]
        if type(value) is not float or not -MAX_TIME <= value <= MAX_TIME:
            as_time(value, f"{field}.subtime")  # raises unless an integer within bounds
    if "walltime" in job:
        value = job["walltime"]
        if type(value) is not float or not -MAX_TIME <= value <= MAX_TIME:
            as_time(value, f"{field}.walltime")
    if "profile" in job:  # no function call on this path: one per JOB_SUBMITTED counts
        profile = job["profile"]
        if type(profile) is not str or profile[MAX_NAME:]:  # a slice is empty up to MAX_NAME
            raise FieldError(f"{field}.profile", f"expected a string, got {type_name(profile)}"
                             if type(profile) is not str else
                             f"a profile name of {len(profile)} characters (at most {MAX_NAME})")


class Data(Struct, forbid_unknown_fields=True):
    """An event's ``data`` with exactly the members listed (empty here)."""


class WireEvent(Struct, tag_field="type", forbid_unknown_fields=True):
    """One event: ``timestamp``, ``type`` (the tag) and ``data``, nothing else."""

    timestamp: Time

    def typed(self) -> Any:
        """The event or decision of :mod:`batpolicy.protocol.types`."""
        raise NotImplementedError


class JobMsg(Data):
    """FROM_JOB_MSG / TO_JOB_MSG (undocumented): a message from or to a job's profile."""

    job_id: JobId
    msg: Any
