"""Job fields beyond Batsim's core: deadlines, job types, groups, bandwidth needs.

Batsim 4.2.1 forwards a job's whole JSON object in JOB_SUBMITTED, extra keys included,
so a workload can carry what the policies of the seed papers need and ``serve`` sees it
exactly as ``simulate`` does. The names (INTERFACES.md §C):

============== ======== ============================================================
field          type     meaning
============== ======== ============================================================
deadline       number   absolute deadline (s); late jobs and tardiness (seed 002)
job_type       string   e.g. ``"mpi"`` (one group), ``"gpu"`` (GPU machines), ``"seq"``
origin         string   the group the job was submitted to (seed 003)
comp_share     number   computation share K in [0, 1] of the runtime (seed 003 §3.2)
ppbw           number   bandwidth need per processor, byte/s (seed 003 §3.2)
preferred      string   the group the job prefers (seed 001)
runtime_other  number   runtime off the preferred placement, s (seed 001)
job_model      string   the embedded simulator's job model for this job
============== ======== ============================================================

A missing field (or JSON ``null``) is ``None``. :func:`parse_job_fields` checks the
types; readers turn its :class:`JobFieldError` into an error naming file, job and field.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

__all__ = ["EMPTY_FIELDS", "FIELD_NAMES", "JobFieldError", "JobFields", "fields_used",
           "parse_job_fields"]


class JobFieldError(ValueError):
    """An extra job field of the wrong type or range; ``field`` names it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True, slots=True)
class JobFields:
    """The extra fields of one job (``None`` when absent)."""

    deadline: float | None = None
    job_type: str | None = None
    origin: str | None = None
    comp_share: float | None = None
    ppbw: float | None = None
    preferred: str | None = None
    runtime_other: float | None = None
    job_model: str | None = None

    def get(self, name: str) -> Any:
        """The value of field ``name``. Runtime complexity: O(1)."""
        return getattr(self, name)


#: Field names in their canonical order (the order of the extra ``jobs.csv`` columns).
FIELD_NAMES: tuple[str, ...] = tuple(f.name for f in fields(JobFields))
_NAME_SET = frozenset(FIELD_NAMES)
_STRINGS = frozenset({"job_type", "origin", "preferred", "job_model"})
#: The fields of a job that has none of them.
EMPTY_FIELDS = JobFields()


def _number(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value) or value < 0:
        raise JobFieldError(name, f"'{name}' must be a finite number >= 0, got {value!r}")
    if name == "comp_share" and value > 1:
        raise JobFieldError(name, f"'comp_share' must be in [0, 1], got {value!r}")
    return float(value)


def parse_job_fields(raw: dict[str, Any] | None) -> JobFields:
    """The extra fields of a job's JSON object; :class:`JobFieldError` names a bad one.

    Runtime complexity: O(1) (one set test when the job has none).

    >>> parse_job_fields({"id": "w0!1", "res": 2, "deadline": 50, "job_type": "mpi"})
    JobFields(deadline=50.0, job_type='mpi', origin=None, comp_share=None, ppbw=None, \
preferred=None, runtime_other=None, job_model=None)
    >>> parse_job_fields({"comp_share": 1.5})  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    JobFieldError: 'comp_share' must be in [0, 1], got 1.5
    """
    if not raw or _NAME_SET.isdisjoint(raw):
        return EMPTY_FIELDS
    values: dict[str, Any] = {}
    for name in FIELD_NAMES:
        value = raw.get(name)
        if value is None:
            continue
        if name in _STRINGS:
            if not isinstance(value, str) or not value:
                raise JobFieldError(name, f"'{name}' must be a non-empty string, got {value!r}")
            values[name] = value
        else:
            values[name] = _number(name, value)
    return JobFields(**values)


def fields_used(raws: Any) -> tuple[str, ...]:
    """The field names any of these job objects carries, in canonical order.

    Runtime complexity: O(n) jobs.

    >>> fields_used([{"id": 1}, {"deadline": 3, "origin": "c0"}, {"deadline": None}])
    ('deadline', 'origin')
    """
    seen: set[str] = set()
    for raw in raws:
        if raw and not _NAME_SET.isdisjoint(raw):
            seen.update(name for name in FIELD_NAMES if raw.get(name) is not None)
            if len(seen) == len(FIELD_NAMES):
                break
    return tuple(name for name in FIELD_NAMES if name in seen)
