"""Batsim's JSON writer quirks that the messages must reproduce.

Batsim 4.2.1 re-serialises every JSON object it forwards (jobs, profiles, forwarded
events) and every number it writes with at most 6 decimals, rounded.
"""

from __future__ import annotations

from typing import Any

from batpolicy.protocol.intervals import MachineSet, parse_intervals

__all__ = ["as_machine_set", "round_progress", "wire_json", "wire_time"]


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
