"""``PolicyView``: the read-only face of the cluster state that every policy receives.

The dispatcher (:mod:`batpolicy.scheduler.dispatch`) builds one view over its
:class:`~batpolicy.scheduler.state.ClusterState` and passes it to every hook and to
``decide``; both drivers (``serve`` and ``simulate``) go through the dispatcher, so a
policy sees the same object both ways.

What a policy can reach from it is read-only:

- machine sets (:attr:`PolicyView.free`, ``all_machines``, ``unavailable``) are the
  state's own :class:`~batpolicy.protocol.intervals.MachineSet`, immutable: ``free -
  alloc`` gives a new set, and so does ``free -= alloc`` (the state's is untouched);
- job collections are :class:`types.MappingProxyType` (``jobs``, ``waiting``,
  ``running``) or a :class:`~batpolicy.scheduler.readonly.ReadOnlySequence`
  (``running_by_expected_end``); jobs themselves refuse attribute assignment
  (:class:`~batpolicy.scheduler.jobs.Job`) and their allocations are immutable sets;
- configuration, workloads and profiles are read-only mappings; pending calls a tuple;
- the view has no attribute leading to the state: its one slot is name-mangled, and
  setting any attribute of the view raises.

Each of those raises :class:`~batpolicy.errors.ReadOnlyError` (a ``TypeError``), which the
dispatcher reports as a :class:`~batpolicy.errors.PolicyError` naming the policy, the
event and the policy's offending line. This stops accidents, not abuse: Python cannot
hide an object from code determined to reach it (``gc.get_referrers``, frames,
``object.__getattribute__``). Nested values inside ``config``, a profile or a job's
``raw`` description are the state's own and must be treated as read-only.

>>> from batpolicy.scheduler.state import ClusterState
>>> view = PolicyView(ClusterState())
>>> view.now, view.nb_machines, str(view.free)
(0.0, 0, '')
>>> view.now = 5.0
Traceback (most recent call last):
...
batpolicy.errors.ReadOnlyError: state.now is read-only: a policy cannot change the cluster \
state (keep its own data on the policy object)
"""

from __future__ import annotations

from collections.abc import Mapping
from operator import attrgetter
from types import MappingProxyType
from typing import Any, NoReturn

from batpolicy.errors import ReadOnlyError
from batpolicy.platforms.model import Platform
from batpolicy.protocol.intervals import MachineSet
from batpolicy.scheduler.jobs import Job
from batpolicy.scheduler.readonly import ReadOnlyNested, ReadOnlySequence
from batpolicy.scheduler.state import ClusterState

__all__ = ["PolicyView"]


def _read(path: str, doc: str) -> Any:
    """A read-only property of the view: the state's attribute at ``path`` (dotted).

    Its getter is an :func:`operator.attrgetter` (C, no Python frame): what policies read
    on every message (``free``, ``now``, ``nb_machines``) costs an attribute walk, not a
    Python call. Typed ``Any`` so that each use declares the value's type.
    Runtime complexity: O(1).

    >>> class Box:
    ...     __slots__ = ("_PolicyView__state",)
    ...     size: float = _read("real", "The size.")
    >>> box = Box(); box._PolicyView__state = 3 + 4j; box.size, Box.size.__doc__
    (3.0, 'The size.')
    """
    return property(attrgetter("_PolicyView__state." + path), doc=doc)


class PolicyView:
    """Everything a policy may read about the run; nothing it could change the run with.

    Runtime complexity: every property is O(1) (machine sets are the state's own,
    immutable; a mapping proxy wraps the live dict), except :meth:`busy_machines` (O(r)
    running jobs).
    """

    __slots__ = ("_PolicyView__state", "_PolicyView__running")

    # The view is the state's companion: its hot properties read the state's private
    # fields directly (one attribute access instead of a second property call).
    def __init__(self, state: ClusterState) -> None:
        object.__setattr__(self, "_PolicyView__state", state)
        object.__setattr__(self, "_PolicyView__running", None)

    def __setattr__(self, name: str, value: Any) -> NoReturn:
        raise ReadOnlyError(f"state.{name} is read-only: a policy cannot change the cluster "
                            "state (keep its own data on the policy object)")

    __delattr__ = __setattr__  # type: ignore[assignment]

    def __repr__(self) -> str:
        state = self.__state
        return (f"PolicyView(now={state.now}, free='{state.free}', "
                f"waiting={len(state.waiting)}, running={len(state.running)})")

    # ------------------------------------------------------------------ time, flags
    now: float = _read(
        "now", "Simulated time of the message being handled. Runtime complexity: O(1).")

    started: bool = _read("started", "SIMULATION_BEGINS was received. Runtime complexity: O(1).")

    ended: bool = _read("ended", "SIMULATION_ENDS was received. Runtime complexity: O(1).")

    @property
    def config(self) -> Mapping[str, Any]:
        """Batsim's configuration from SIMULATION_BEGINS, read-only. Runtime complexity: O(1)."""
        return MappingProxyType(self.__state.config)

    @property
    def workloads(self) -> Mapping[str, str]:
        """Workload name → file, read-only. Runtime complexity: O(1)."""
        return MappingProxyType(self.__state.workloads)

    @property
    def profiles(self) -> Mapping[str, Mapping[str, Any]]:
        """Profiles by workload then name, read-only on both levels. Runtime complexity: O(1)."""
        return ReadOnlyNested(self.__state.profiles)

    def profile_of(self, job: Job) -> Mapping[str, Any] | None:
        """The job's profile, read-only, if known. Runtime complexity: O(1)."""
        profile = self.__state.profile_of(job)
        return None if profile is None else MappingProxyType(profile)

    dynamic_jobs_enabled: bool = _read(
        "dynamic_jobs_enabled", "Batsim accepts REGISTER_JOB / REGISTER_PROFILE. O(1).")

    dynamic_jobs_acknowledged: bool = _read(
        "dynamic_jobs_acknowledged",
        "Batsim echoes a JOB_SUBMITTED for every registered job. O(1).")

    registration_finished: bool = _read(
        "registration_finished", "REGISTRATION_FINISHED was sent (and not reopened). O(1).")

    no_more_static_jobs: bool = _read(
        "no_more_static_jobs", "Batsim said every static job was submitted. O(1).")

    no_more_external_events: bool = _read(
        "no_more_external_events", "Batsim said no external event remains. O(1).")

    @property
    def pending_calls(self) -> tuple[float, ...]:
        """Dates of the CALL_ME_LATER not fired yet. Runtime complexity: O(c)."""
        return tuple(self.__state.pending_calls)

    # --------------------------------------------------------------------- machines
    nb_machines: int = _read(
        "machines.count", "Number of compute machines. Runtime complexity: O(1).")

    all_machines: MachineSet = _read(
        "machines.all", "Every compute machine id (immutable). Runtime complexity: O(1).")

    free: MachineSet = _read(
        "machines.free", "Idle, available machines (immutable: ``free - alloc`` is new). O(1).")

    unavailable: MachineSet = _read(
        "machines.unavailable", "Machines made unavailable by external events (immutable). O(1).")

    def busy_machines(self) -> MachineSet:
        """Machines allocated to running jobs (a new set). Runtime complexity: O(r)."""
        return self.__state.busy_machines()

    platform: Platform = _read(
        "machines.platform", "Machines with speed, GPU flag and group (groups read-only). O(1).")

    # ------------------------------------------------------------------------- jobs
    @property
    def jobs(self) -> Mapping[str, Job]:
        """Every job submitted or registered, by id, read-only.

        Finished ones only for a policy that declares ``reads_finished_jobs`` (the
        default). Runtime complexity: O(1).
        """
        return MappingProxyType(self.__state._jobs)  # noqa: SLF001

    @property
    def waiting(self) -> Mapping[str, Job]:
        """Waiting jobs in submission order, read-only. Runtime complexity: O(1)."""
        return MappingProxyType(self.__state._waiting)  # noqa: SLF001

    @property
    def running(self) -> Mapping[str, Job]:
        """Running jobs by id, read-only. Runtime complexity: O(1)."""
        return MappingProxyType(self.__state._running)  # noqa: SLF001

    @property
    def running_by_expected_end(self) -> ReadOnlySequence:
        """Running jobs by (expected end, submission rank), read-only. Runtime complexity: O(1)."""
        items = self.__state._running_by_end  # noqa: SLF001
        cached = self.__running
        if cached is None or cached[0] is not items:  # the state keeps one sorted list
            cached = (items, ReadOnlySequence(items, "state.running_by_expected_end"))
            object.__setattr__(self, "_PolicyView__running", cached)
        return cached[1]

    def job(self, job_id: str) -> Job:
        """The job with this full id (``KeyError`` if unknown). Runtime complexity: O(1)."""
        return self.__state.job(job_id)


