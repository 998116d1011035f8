"""Workload model shared by every reader (Batsim JSON, SWF) and by the simulator.

Job ids are Batsim's full ids ``workload!name``. Times are float seconds.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class JobSpec:
    """A job as submitted: what a workload file says of it.

    ``walltime`` is ``None`` when the job has none (Batsim's ``-1``). ``raw`` is the
    job's JSON object as Batsim would forward it in JOB_SUBMITTED (``id`` rewritten to
    the full id, extra user fields kept).
    """

    id: str
    subtime: float
    res: int
    profile: str
    walltime: float | None = None
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def workload(self) -> str:
        """Workload name, the part before ``!``."""
        return self.id.split("!", 1)[0]

    @property
    def name(self) -> str:
        """Job name inside its workload, the part after ``!``."""
        return self.id.split("!", 1)[1]


@dataclass(slots=True)
class Workload:
    """Jobs in Batsim submission order (subtime, then full id as a string) and profiles."""

    name: str
    jobs: list[JobSpec]
    profiles: dict[str, dict[str, Any]]
    nb_res: int | None = None
    source: str | None = None
    skipped: Counter[str] = field(default_factory=Counter)

    def sort(self) -> None:
        """Sort jobs as Batsim submits them: by subtime, then by full id string (§1.5)."""
        self.jobs.sort(key=lambda j: (j.subtime, j.id))
