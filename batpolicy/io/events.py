"""Batsim external events files (``--events``, Batsim's protocol: external events).

One JSON object per line, in any order: ``{"timestamp": 10, "type":
"machine_unavailable", "resources": "0-4 6"}``. ``machine_unavailable`` and
``machine_available`` need ``resources`` (an interval set); any other type is a generic
event that Batsim forwards whole (with ``--forward-unknown-events``) as the data of a
NOTIFY, so it is kept whole in :attr:`ExternalEvent.data`. Blank lines are skipped.
``timestamp`` must be a finite number >= 0, as Batsim asserts. Numbers are read as
Batsim's rapidjson reads them (:mod:`.rapidjson_number`).

Events come back sorted by timestamp; the sort is stable, so events of one instant keep
the file's order (Batsim's recorded transcript ``chaos-generic-events-walltime120``
delivers ``machine_available`` then ``user_specific_type`` at t=300, their file order).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from batpolicy.errors import InputError, ProtocolError
from batpolicy.io.rapidjson_number import rapidjson_float
from batpolicy.protocol.intervals import MachineSet, parse_intervals

__all__ = ["ExternalEvent", "MACHINE_EVENT_TYPES", "read_events"]

#: The event types Batsim itself acts on; every other type is generic.
MACHINE_EVENT_TYPES = frozenset({"machine_available", "machine_unavailable"})


@dataclass(frozen=True, slots=True)
class ExternalEvent:
    """One external event: when, what, which machines (machine events only), the whole object.

    >>> ExternalEvent(5.0, "custom", None, {"timestamp": 5, "type": "custom"}).is_machine_event
    False
    """

    timestamp: float
    type: str
    resources: MachineSet | None
    data: dict[str, Any] = field(default_factory=dict)
    #: Where it was read (file, 1-based line), so a later error can name them.
    source: str | None = field(default=None, compare=False)
    line: int | None = field(default=None, compare=False)

    @property
    def is_machine_event(self) -> bool:
        """Whether Batsim acts on it (machine (un)availability) rather than forwarding it."""
        return self.type in MACHINE_EVENT_TYPES


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not valid JSON")


def _event(line: str, where: str, lineno: int) -> ExternalEvent:
    try:
        obj = json.loads(line, parse_constant=_reject_constant, parse_float=rapidjson_float)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg} (column {exc.colno})", path=where,
                         line=lineno) from None
    except ValueError as exc:
        raise InputError(f"invalid JSON: {exc}", path=where, line=lineno) from None
    if not isinstance(obj, dict):
        raise InputError("an event must be a JSON object", path=where, line=lineno)
    kind = obj.get("type")
    if not isinstance(kind, str) or not kind:
        raise InputError("an event needs a non-empty string 'type'", path=where, line=lineno,
                         field="type")
    ts = obj.get("timestamp")
    if isinstance(ts, bool) or not isinstance(ts, (int, float)) or not math.isfinite(ts) \
            or ts < 0:
        raise InputError(f"'timestamp' must be a finite number >= 0, got {ts!r}", path=where,
                         line=lineno, field="timestamp")
    resources = None
    if kind in MACHINE_EVENT_TYPES:
        try:
            resources = parse_intervals(obj.get("resources"), field="resources")
        except ProtocolError as exc:
            raise InputError(f"{kind} needs 'resources', an interval set such as '0-4 6': "
                             f"{exc}", path=where, line=lineno, field="resources") from None
    return ExternalEvent(float(ts), kind, resources, obj, where, lineno)


def read_events(path: str | Path) -> list[ExternalEvent]:
    """Read a Batsim events file, sorted by timestamp (stable: file order within an instant).

    Runtime complexity: O(n log n) in the number of events.
    """
    path = Path(path)
    where = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read the events file: {exc.strerror or exc}",
                         path=where) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc.reason} at byte {exc.start})",
                         path=where) from None
    events = [_event(line, where, lineno)
              for lineno, line in enumerate(text.split("\n"), 1) if line.strip()]
    events.sort(key=lambda e: e.timestamp)
    return events
