"""Workload model shared by every reader (Batsim JSON, SWF) and by the simulator.

Job ids are Batsim's full ids ``workload!name``. Times are float seconds.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from batpolicy.scheduler.jobfields import JobFields, parse_job_fields


@dataclass(slots=True)
class JobSpec:
    """A job as submitted: what a workload file says of it.

    Why this form: readers, generators and transforms build and rewrite workloads before
    any run, with no simulation state; the simulator turns each into a
    :class:`~batpolicy.simulator.records.SimJob` when it submits it.

    ``walltime`` is ``None`` when the job has none (Batsim's ``-1``). ``raw`` is the
    job's JSON object as Batsim would forward it in JOB_SUBMITTED (``id`` rewritten to
    the full id, extra user fields kept). :attr:`fields` are its extra fields, parsed
    once (by the reader that checked them, or at first use).
    """

    id: str
    subtime: float
    res: int
    profile: str
    walltime: float | None = None
    raw: dict[str, Any] = field(default_factory=dict)
    # not an init field: ``dataclasses.replace`` (a transform rewriting ``raw``) resets it
    parsed: JobFields | None = field(default=None, init=False, repr=False, compare=False)
    #: True when the reader knows ``raw`` is already as Batsim re-serialises it (no float
    #: with more than 6 decimals, :func:`~batpolicy.simulator.json_quirks.wire_json`): the
    #: simulator then forwards it as is. Not an init field, reset by ``replace`` as ``parsed``.
    wired: bool = field(default=False, init=False, repr=False, compare=False)

    @property
    def fields(self) -> JobFields:
        """The job's extra fields (:mod:`batpolicy.scheduler.jobfields`), parsed once.

        :class:`~batpolicy.scheduler.jobfields.JobFieldError` if one is malformed.

        >>> JobSpec("w0!1", 0.0, 1, "p", raw={"deadline": 9}).fields.deadline
        9.0
        """
        parsed = self.parsed
        if parsed is None:
            parsed = self.parsed = parse_job_fields(self.raw)
        return parsed

    @property
    def workload(self) -> str:
        """Workload name, the part before ``!``."""
        return self.id.split("!", 1)[0]

    @property
    def name(self) -> str:
        """Job name inside its workload, the part after ``!``."""
        return self.id.split("!", 1)[1]


class JobStream(Protocol):
    """Jobs read as a run takes them: a length and a fresh pass in submission order.

    A streamed SWF trace's :class:`~batpolicy.io.swf_stream.StreamedJobs` (no indexing).
    """

    def __len__(self) -> int:
        """The number of jobs."""
        ...

    def __iter__(self) -> Iterator[JobSpec]:
        """The jobs, in Batsim's submission order."""
        ...


@dataclass(slots=True)
class Workload:
    """Jobs in Batsim submission order (subtime, then full id as a string) and profiles."""

    name: str
    #: A list, or a streamed trace's jobs (:class:`JobStream`).
    jobs: list[JobSpec] | JobStream
    profiles: dict[str, dict[str, Any]]
    nb_res: int | None = None
    source: str | None = None
    skipped: Counter[str] = field(default_factory=Counter)

    def sort(self) -> None:
        """Sort jobs as Batsim submits them: by subtime, then by full id string (§1.5).

        A streamed trace's jobs come in that order already (:mod:`~batpolicy.io.swf_stream`).
        """
        if isinstance(self.jobs, list):
            self.jobs.sort(key=lambda j: (j.subtime, j.id))
