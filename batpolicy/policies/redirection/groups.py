"""The two machine groups of redirection and a per-group view of the cluster state.

Faure, Lucarelli, Richard & Trystram, *Online scheduling with redirection for parallel
jobs*, IPDPSW 2020, §III-A: the machines are split into a *principal group* of
(1 − α)·m processors and a *redirection group* of α·m processors, and "both groups can be
scheduled independently". §IV-B: to keep every job of a trace runnable, the platform is
*grown* so that the principal group keeps the original m machines.

Sizes and placement (our choices, documented in ``docs/redirection.md``):

- the redirection group has ⌈α·m⌉ machines (``redirection_group_size``), so that α > 0
  always gives at least one machine; it is the contiguous block of the *highest* ids;
- without growth the principal group is the rest, m − ⌈α·m⌉ machines;
- with growth the platform must already have m + ⌈α·m⌉ machines (``grown_size``) and
  the principal group is its m lowest ids (``principal_size_of_grown`` recovers m).

:class:`GroupView` is how two unmodified base policies share one
:class:`~batpolicy.scheduler.view.PolicyView`: each gets a read-only view that looks
like the view of a smaller cluster holding only its group's machines and jobs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType
from typing import Any, NoReturn

from batpolicy.errors import ConfigError, ReadOnlyError
from batpolicy.protocol.intervals import MachineSet
from batpolicy.scheduler.jobs import Job
from batpolicy.scheduler.view import PolicyView


def redirection_group_size(m: int, alpha: float) -> int:
    """⌈α·m⌉, the number of machines of the redirection group (§III-A).

    Rounded to 9 decimals first, so that 0.15 × 20 (= 3.0000000000000004 in floats) is 3.

    >>> [redirection_group_size(m, a) for m, a in ((20, 0.15), (32, 0.1), (7, 0.0))]
    [3, 4, 0]
    """
    return math.ceil(round(alpha * m, 9))


def grown_size(m: int, alpha: float) -> int:
    """Machines of a platform grown as in §IV-B: m for the principal group plus ⌈α·m⌉.

    >>> grown_size(32, 0.25), grown_size(100, 0.15)
    (40, 115)
    """
    return m + redirection_group_size(m, alpha)


def principal_size_of_grown(total: int, alpha: float) -> int:
    """The m such that ``grown_size(m, alpha) == total``; :class:`ConfigError` if none.

    m + ⌈α·m⌉ is strictly increasing in m, so at most one m fits.
    Runtime complexity: O(1) candidates around total / (1 + α).

    >>> principal_size_of_grown(40, 0.25), principal_size_of_grown(115, 0.15)
    (32, 100)
    """
    guess = int(total / (1.0 + alpha))
    for m in range(max(guess - 2, 0), min(guess + 3, total) + 1):
        if grown_size(m, alpha) == total:
            return m
    below = guess
    while below > 0 and grown_size(below, alpha) > total:
        below -= 1
    while grown_size(below + 1, alpha) < total:
        below += 1
    grown = grown_size(total, alpha)
    raise ConfigError(
        f"grow=true: a platform of {total} machines is not m + ceil(alpha*m) for any m with "
        f"alpha={alpha} (nearest: {grown_size(below, alpha)} or {grown_size(below + 1, alpha)} "
        f"machines). If {total} is the original size, run on {grown} machines "
        f"(batpolicy simulate --nb-res {grown} --param original_size={total})")


def split_machines(nb_machines: int, alpha: float, grow: bool,
                   original: int | None = None) -> tuple[MachineSet, MachineSet]:
    """(principal, redirection) machine ids; the redirection group is the highest ids.

    With ``grow``, the platform must be ``grown_size(m, alpha)`` machines: m is
    ``original`` when given (a platform of another size is refused, naming the size it
    needs), else inferred from ``nb_machines``.

    >>> [str(s) for s in split_machines(20, 0.15, grow=False)]
    ['0-16', '17-19']
    >>> [str(s) for s in split_machines(23, 0.15, grow=True)]
    ['0-19', '20-22']
    >>> [str(s) for s in split_machines(23, 0.15, grow=True, original=20)]
    ['0-19', '20-22']
    >>> [str(s) for s in split_machines(8, 0.0, grow=False)]
    ['0-7', '']
    """
    if grow and original is not None:
        need = grown_size(original, alpha)
        if nb_machines != need:
            raise ConfigError(
                f"grow=true with original_size={original} and alpha={alpha}: the platform "
                f"must have m + ceil(alpha*m) = {need} machines, it has {nb_machines} "
                f"(batpolicy simulate --nb-res {need}; Batsim: a platform of {need} hosts)")
        principal = original
    elif grow:
        principal = principal_size_of_grown(nb_machines, alpha)
    else:
        principal = nb_machines - redirection_group_size(nb_machines, alpha)
    if principal <= 0:
        raise ConfigError(f"alpha={alpha} leaves no machine to the principal group "
                          f"({nb_machines} machines)")
    low = MachineSet.span(0, principal - 1)
    high = MachineSet.span(principal, nb_machines - 1)
    return low, high


class GroupView:
    """A read-only policy view restricted to one group's machines and jobs.

    A base policy written for a whole cluster runs unchanged on one group: everything it
    reads about machines and jobs is filtered to its group; time, configuration,
    profiles, flags and the platform are the whole view's (explicit delegations, listed
    in ``_SHARED``: nothing else of the whole view, let alone of the state, is
    reachable). Machine ids stay global, so its decisions need no translation. Sets are
    immutable and collections read-only, as in :class:`~batpolicy.scheduler.view.PolicyView`.

    ``member`` tells whether a job id belongs to the group. ``pending`` holds jobs the
    wrapper registered in the reply being built (REGISTER_JOB is applied to the state
    only after ``decide``): the view shows them as waiting until the state has them.

    Runtime complexity: ``free``/``unavailable`` one C-level intersection; ``waiting``,
    ``running``, ``running_by_expected_end`` O(n) filters over the whole view's collections.
    """

    __slots__ = ("_GroupView__view", "_GroupView__machines", "_GroupView__member",
                 "_GroupView__pending", "_GroupView__group")

    def __init__(self, view: PolicyView, machines: MachineSet, member: Callable[[str], bool],
                 pending: Mapping[str, Job], group: str) -> None:
        init = object.__setattr__
        init(self, "_GroupView__view", view)
        init(self, "_GroupView__machines", machines)
        init(self, "_GroupView__member", member)
        init(self, "_GroupView__pending", pending)
        init(self, "_GroupView__group", group)

    def __setattr__(self, name: str, value: Any) -> NoReturn:
        raise ReadOnlyError(f"state.{name} is read-only: a policy cannot change the cluster "
                            "state (keep its own data on the policy object)")

    __delattr__ = __setattr__  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"GroupView({self.__group!r}, machines='{self.__machines}')"

    @property
    def group(self) -> str:
        """Name of the group (``principal`` or ``redirection``). Runtime complexity: O(1)."""
        return self.__group

    # ----------------------------------------------------------------- machines
    @property
    def nb_machines(self) -> int:
        """Machines of the group. Runtime complexity: O(1)."""
        return len(self.__machines)

    @property
    def all_machines(self) -> MachineSet:
        """Machine ids of the group (global ids), immutable. Runtime complexity: O(1)."""
        return self.__machines

    @property
    def free(self) -> MachineSet:
        """Free machines of the group (a new, immutable set). Runtime: one C intersection."""
        return self.__view.free & self.__machines

    @property
    def unavailable(self) -> MachineSet:
        """Unavailable machines of the group (a new, immutable set). Runtime: one C intersection."""
        return self.__view.unavailable & self.__machines

    def busy_machines(self) -> MachineSet:
        """Machines of the group allocated to running jobs (a new set). Runtime complexity: O(r)."""
        return self.__view.busy_machines() & self.__machines

    # --------------------------------------------------------------------- jobs
    def profile_of(self, job: Job) -> Mapping[str, Any] | None:
        """The job's profile, read-only, if known. Runtime complexity: O(1)."""
        return self.__view.profile_of(job)

    def _fresh_pending(self) -> Iterator[Job]:
        jobs = self.__view.jobs
        return (job for jid, job in self.__pending.items() if jid not in jobs)

    @property
    def jobs(self) -> Mapping[str, Job]:
        """Every job of the group, pending registrations included. Runtime complexity: O(n)."""
        member = self.__member
        out = {jid: job for jid, job in self.__view.jobs.items() if member(jid)}
        out.update((job.id, job) for job in self._fresh_pending())
        return MappingProxyType(out)

    def job(self, job_id: str) -> Job:
        """The job with this id (a pending registration included). Runtime complexity: O(1)."""
        if job_id in self.__pending and job_id not in self.__view.jobs:
            return self.__pending[job_id]
        if not self.__member(job_id):
            raise KeyError(job_id)
        return self.__view.job(job_id)

    @property
    def waiting(self) -> Mapping[str, Job]:
        """Waiting jobs of the group in submission order. Runtime complexity: O(n)."""
        member = self.__member
        out = {jid: job for jid, job in self.__view.waiting.items() if member(jid)}
        out.update((job.id, job) for job in self._fresh_pending())
        return MappingProxyType(out)

    @property
    def running(self) -> Mapping[str, Job]:
        """Running jobs of the group. Runtime complexity: O(r)."""
        member = self.__member
        return MappingProxyType({jid: job for jid, job in self.__view.running.items()
                                 if member(jid)})

    @property
    def running_by_expected_end(self) -> tuple[Job, ...]:
        """Running jobs of the group by (expected end, rank). Runtime complexity: O(r)."""
        member = self.__member
        return tuple(job for job in self.__view.running_by_expected_end if member(job.id))


#: What a group view reads from the whole view unchanged (time, flags, configuration).
_SHARED = ("now", "started", "ended", "config", "workloads", "profiles",
           "dynamic_jobs_enabled", "dynamic_jobs_acknowledged", "registration_finished",
           "no_more_static_jobs", "no_more_external_events", "pending_calls", "platform")


def _shared(name: str) -> property:
    def _get(self: GroupView) -> Any:
        return getattr(self._GroupView__view, name)  # type: ignore[attr-defined]
    return property(_get, doc=f"The whole view's ``{name}``. Runtime complexity: O(1).")


for _name in _SHARED:
    setattr(GroupView, _name, _shared(_name))
