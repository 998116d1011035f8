"""The one job model of batpolicy: a job as the scheduler knows it, from submission to end."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from procset import ProcSet

from batpolicy.protocol.types import JobState


class JobStatus(str, Enum):
    """Where a job is in its life, as the scheduler sees it."""

    WAITING = "waiting"
    RUNNING = "running"
    COMPLETED = "completed"
    REJECTED = "rejected"


@dataclass(slots=True, eq=False)
class Job:
    """A submitted job. Policies read it; only :class:`ClusterState` changes it.

    ``walltime`` is ``None`` when the job has none. ``expected_end`` is the end the
    scheduler plans with: ``start + walltime`` (infinite without walltime) unless a
    driver that knows better (speed-scaled or bandwidth-shared execution) moves it.
    ``seq`` is the job's submission rank, a stable FCFS tie-break.

    ``deadline`` ... ``job_model`` are the extra fields of the job's JSON object
    (:mod:`batpolicy.scheduler.jobfields`; ``None`` when absent): an absolute deadline,
    the job type (``"mpi"``, ``"gpu"``...), the origin and preferred groups, the
    computation share K, the bandwidth need per processor (byte/s), the runtime off the
    preferred placement, and the embedded simulator's job model for it.
    """

    id: str
    subtime: float
    res: int
    walltime: float | None
    profile: str
    seq: int
    raw: dict[str, Any] | None = None
    profile_data: dict[str, Any] | None = None
    dynamic: bool = False
    status: JobStatus = JobStatus.WAITING
    allocation: ProcSet | None = None
    start: float | None = None
    expected_end: float = math.inf
    finish: float | None = None
    final_state: JobState | None = None
    return_code: int | None = None
    metadata: str = ""
    kill_requested: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    deadline: float | None = None
    job_type: str | None = None
    origin: str | None = None
    comp_share: float | None = None
    ppbw: float | None = None
    preferred: str | None = None
    runtime_other: float | None = None
    job_model: str | None = None

    @property
    def workload(self) -> str:
        """Workload name (before ``!``)."""
        return self.id.split("!", 1)[0]

    @property
    def name(self) -> str:
        """Job name inside its workload (after ``!``)."""
        return self.id.split("!", 1)[-1]

    @property
    def planned_walltime(self) -> float:
        """Walltime used for planning: ``inf`` when the job has none."""
        return math.inf if self.walltime is None else self.walltime
