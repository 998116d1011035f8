"""Job fields beyond Batsim's core: deadlines, job types, groups, bandwidth needs.

Batsim 4.2.1 forwards a job's whole JSON object in JOB_SUBMITTED, extra keys included,
so a workload can carry what the policies of the seed papers need and ``serve`` sees it
exactly as ``simulate`` does (INTERFACES.md §C).

The fields are declared once, here, as the fields of :class:`JobFields`: each with its
name, its type, its meaning and its parser (the field's metadata). Everything else is
derived from that one table: :data:`FIELD_NAMES` (the extra ``jobs.csv`` columns),
:func:`parse_job_fields`, the scheduler's :class:`~batpolicy.scheduler.jobs.Job`
attributes of the same names, and :func:`describe_fields` (the table for documents)::

    >>> for name, kind, meaning in describe_fields():
    ...     print(f"{name:<14} {kind:<7} {meaning}")
    deadline       number  absolute deadline (s); late jobs and tardiness (seed 002)
    job_type       string  e.g. "mpi" (one group), "gpu" (GPU machines), "seq"
    origin         string  the group the job was submitted to (seed 003)
    comp_share     number  computation share K in [0, 1] of the runtime (seed 003 §3.2)
    ppbw           number  bandwidth need per processor, byte/s (seed 003 §3.2)
    preferred      string  the group the job prefers (seed 001)
    runtime_other  number  runtime off the preferred placement, s (seed 001)
    job_model      string  the embedded simulator's job model for this job

A missing field (or JSON ``null``) is ``None``. :func:`parse_job_fields` checks the
types; readers turn its :class:`JobFieldError` into an error naming file, job and field.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

__all__ = ["EMPTY_FIELDS", "FIELD_NAMES", "JobFieldError", "JobFields", "describe_fields",
           "fields_used", "parse_job_fields"]


class JobFieldError(ValueError):
    """An extra job field of the wrong type or range; ``field`` names it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def _text(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise JobFieldError(name, f"'{name}' must be a non-empty string, got {value!r}")
    return value


def _number(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value) or value < 0:
        raise JobFieldError(name, f"'{name}' must be a finite number >= 0, got {value!r}")
    return float(value)


def _share(name: str, value: Any) -> float:
    share = _number(name, value)
    if share > 1:
        raise JobFieldError(name, f"'{name}' must be in [0, 1], got {value!r}")
    return share


def _declare(parse: Callable[[str, Any], Any], meaning: str) -> Any:
    """One extra field: ``None`` when absent, its parser and meaning in the metadata."""
    kind = "string" if parse is _text else "number"
    return field(default=None, metadata={"parse": parse, "type": kind, "meaning": meaning})


@dataclass(frozen=True, slots=True)
class JobFields:
    """The extra fields of one job (``None`` when absent): THE declaration of those fields."""

    deadline: float | None = _declare(
        _number, "absolute deadline (s); late jobs and tardiness (seed 002)")
    job_type: str | None = _declare(
        _text, 'e.g. "mpi" (one group), "gpu" (GPU machines), "seq"')
    origin: str | None = _declare(_text, "the group the job was submitted to (seed 003)")
    comp_share: float | None = _declare(
        _share, "computation share K in [0, 1] of the runtime (seed 003 §3.2)")
    ppbw: float | None = _declare(
        _number, "bandwidth need per processor, byte/s (seed 003 §3.2)")
    preferred: str | None = _declare(_text, "the group the job prefers (seed 001)")
    runtime_other: float | None = _declare(
        _number, "runtime off the preferred placement, s (seed 001)")
    job_model: str | None = _declare(_text, "the embedded simulator's job model for this job")

    def get(self, name: str) -> Any:
        """The value of field ``name``. Runtime complexity: O(1)."""
        return getattr(self, name)

    def items(self) -> tuple[tuple[str, Any], ...]:
        """``(name, value)`` of the fields this job carries, in canonical order. O(1).

        >>> JobFields(deadline=5.0, origin="c0").items()
        (('deadline', 5.0), ('origin', 'c0'))
        """
        return tuple((name, value) for name in FIELD_NAMES
                     if (value := getattr(self, name)) is not None)


#: Field names in their canonical order (the order of the extra ``jobs.csv`` columns).
FIELD_NAMES: tuple[str, ...] = tuple(f.name for f in fields(JobFields))
#: The same names as a set: a job has extra fields unless it is disjoint from it.
FIELD_NAME_SET = frozenset(FIELD_NAMES)
_PARSERS: tuple[tuple[str, Callable[[str, Any], Any]], ...] = tuple(
    (f.name, f.metadata["parse"]) for f in fields(JobFields))
#: The fields of a job that has none of them.
EMPTY_FIELDS = JobFields()


def describe_fields() -> list[tuple[str, str, str]]:
    """``(name, type, meaning)`` of every extra field, in canonical order (for documents)."""
    return [(f.name, f.metadata["type"], f.metadata["meaning"]) for f in fields(JobFields)]


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
    if not raw or FIELD_NAME_SET.isdisjoint(raw):
        return EMPTY_FIELDS
    values: dict[str, Any] = {}
    for name, parse in _PARSERS:
        value = raw.get(name)
        if value is not None:
            values[name] = parse(name, value)
    return JobFields(**values)


def fields_used(raws: Any) -> tuple[str, ...]:
    """The field names any of these job objects carries, in canonical order.

    Runtime complexity: O(n) jobs.

    >>> fields_used([{"id": 1}, {"deadline": 3, "origin": "c0"}, {"deadline": None}])
    ('deadline', 'origin')
    """
    seen: set[str] = set()
    for raw in raws:
        if raw and not FIELD_NAME_SET.isdisjoint(raw):
            seen.update(name for name in FIELD_NAMES if raw.get(name) is not None)
            if len(seen) == len(FIELD_NAMES):
                break
    return tuple(name for name in FIELD_NAMES if name in seen)
