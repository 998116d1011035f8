"""The one job model of batpolicy: a job as the scheduler knows it, from submission to end.

A :class:`Job` is read-only once built: assigning one of its attributes raises
:class:`~batpolicy.errors.ReadOnlyError` naming the job and the attribute, so a policy
cannot change a job behind the state's back. :class:`~batpolicy.scheduler.state.ClusterState`
changes jobs through the slot setters of :func:`job_setter`, which cost no more than a
plain assignment (a guarding ``__setattr__`` would slow every assignment).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import fields
from enum import Enum
from typing import Any, NoReturn

from msgspec import Struct, defstruct

from batpolicy.errors import ReadOnlyError
from batpolicy.protocol.intervals import MachineSet
from batpolicy.protocol.types import JobState
from batpolicy.scheduler.jobfields import JobFields


class JobStatus(str, Enum):
    """Where a job is in its life, as the scheduler sees it."""

    WAITING = "waiting"
    RUNNING = "running"
    COMPLETED = "completed"
    REJECTED = "rejected"


class _JobCore(Struct, eq=False):
    """A submitted job. Policies read it; only :class:`~.state.ClusterState` changes it.

    ``walltime`` is ``None`` when the job has none. ``expected_end`` is the end the
    scheduler plans with: ``start + walltime`` (infinite without walltime) unless a
    driver that knows better (speed-scaled or bandwidth-shared execution) moves it.
    ``seq`` is the job's submission rank, a stable FCFS tie-break.

    After ``planned_walltime`` come the extra fields of the job's JSON object, one
    attribute each, named and typed as :class:`~batpolicy.scheduler.jobfields.JobFields`
    declares them (``deadline``, ``job_type``, ``origin``, ``comp_share``, ``ppbw``,
    ``preferred``, ``runtime_other``, ``job_model``; ``None`` when absent): plain slots,
    read at the cost of any attribute, added below from that one declaration.
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
    allocation: MachineSet | None = None
    start: float | None = None
    expected_end: float = math.inf
    finish: float | None = None
    final_state: JobState | None = None
    return_code: int | None = None
    metadata: str = ""
    kill_requested: bool = False
    #: Walltime used for planning: ``inf`` when the job has none. A slot set once when
    #: the job is built (:meth:`Job.__post_init__`), not a property: EASY and the plans
    #: read it for every job they consider, and a property is a Python call per read.
    planned_walltime: float = math.inf

    @property
    def workload(self) -> str:
        """Workload name (before ``!``)."""
        return self.id.split("!", 1)[0]

    @property
    def name(self) -> str:
        """Job name inside its workload (after ``!``)."""
        return self.id.split("!", 1)[-1]


#: The extra fields, declared once in jobfields.py, after the core ones (None by default).
_JobFields = defstruct("_JobFields", [(f.name, f.type, None) for f in fields(JobFields)],
                       bases=(_JobCore,), module=__name__, eq=False)


class Job(_JobFields):  # type: ignore[valid-type,misc]
    """A submitted job, read-only to all but :class:`~.state.ClusterState` (see the module doc).

    Why this form: it is the scheduler's belief about a job, built from the JOB_SUBMITTED
    it received (``serve`` and ``simulate`` alike), which the policies read; Batsim's own
    record of the job (the simulator's ``SimJob``) is kept apart so that the checks catch
    a scheduler believing something Batsim does not. A msgspec ``Struct``: its C
    ``__init__`` fills every slot without a Python frame (a dataclass's generated
    ``__init__`` cost one Python call assigning all 27 slots, per JOB_SUBMITTED).

    >>> job = Job("w0!1", 0.0, 4, 100.0, "p", seq=0)
    >>> job.res, job.name, job.planned_walltime
    (4, '1', 100.0)
    >>> job.res = 2
    Traceback (most recent call last):
    ...
    batpolicy.errors.ReadOnlyError: job 'w0!1': attribute 'res' is read-only (only the \
cluster state changes jobs; keep policy data on the policy)
    """

    def __post_init__(self) -> None:
        walltime = self.walltime
        _set_planned_walltime(self, math.inf if walltime is None else walltime)

    def __setattr__(self, name: str, value: Any) -> NoReturn:
        raise ReadOnlyError(f"job '{self.id}': attribute '{name}' is read-only (only the "
                            "cluster state changes jobs; keep policy data on the policy)")

    __delattr__ = __setattr__  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        return _rebuild, (type(self), tuple(getattr(self, f) for f in _FIELDS))


#: What Job(...) takes, in order (planned_walltime follows walltime: not passed).
_FIELDS = tuple(name for name in Job.__struct_fields__ if name != "planned_walltime")
_set_planned_walltime = _JobCore.planned_walltime.__set__  # type: ignore[attr-defined]


def _rebuild(cls: type[Job], values: tuple[Any, ...]) -> Job:
    return cls(**dict(zip(_FIELDS, values, strict=True)))


def job_setter(name: str) -> Callable[[Job, Any], None]:
    """The slot setter of a :class:`Job` attribute: how :class:`~.state.ClusterState` changes jobs.

    Runtime complexity: O(1); calling the setter costs about a plain assignment.

    >>> job = Job("w0!1", 0.0, 4, 100.0, "p", seq=0)
    >>> job_setter("start")(job, 5.0); job.start
    5.0
    """
    if name not in Job.__struct_fields__:
        raise AttributeError(f"Job has no attribute '{name}'")
    return getattr(Job, name).__set__  # type: ignore[no-any-return]
