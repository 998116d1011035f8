"""Which allocations a job prefers: one rule for the simulator and for the policies.

Seed 001 (mixed GPU/CPU racks, N-step search) gives a job a shorter runtime where it
runs best: an MPI job inside one rack, a GPU job on GPU machines. Seed 003 submits each
job to an origin cluster. :func:`is_preferred` is that rule, read from the job's fields
(:mod:`batpolicy.scheduler.jobfields`) and the platform's groups (INTERFACES.md §C):

- ``job_type == "mpi"``: every machine in one group of kind ``rack`` or ``cluster``;
- ``job_type == "gpu"``: every machine has a GPU;
- ``preferred`` set: every machine in that group;
- otherwise (or no such condition): preferred.

A job both of type ``mpi``/``gpu`` and with a ``preferred`` group needs both. The
embedded simulator's placement model (``--job-model placement``) runs a job its
profile's delay where this holds and its ``runtime_other`` elsewhere; a policy that
wants the short runtime asks the same function.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from batpolicy.protocol.intervals import MachineSet

__all__ = ["GROUP_KINDS_FOR_MPI", "PlacementFields", "is_preferred", "platform_groups"]

#: Group kinds an MPI job may stay inside to be on its preferred placement.
GROUP_KINDS_FOR_MPI = frozenset({"rack", "cluster"})


class PlacementFields(Protocol):
    """What :func:`is_preferred` reads of a job (a ``Job`` or ``JobFields``)."""

    job_type: str | None
    preferred: str | None


@dataclass(frozen=True, slots=True)
class _DerivedGroup:
    """Shim: a group read from ``Machine.cluster`` / ``Machine.rack`` (until §A lands)."""

    name: str
    kind: str
    machines: MachineSet


def platform_groups(platform: Any) -> Mapping[str, Any]:
    """The platform's groups by name: ``platform.groups`` (INTERFACES.md §A) if it has any.

    Otherwise (a platform built by hand, or before ``Platform.groups`` existed: SHIM)
    groups are derived from each machine's ``cluster`` (kind ``cluster``) and ``rack``
    (kind ``rack``). Runtime complexity: O(machines) for the shim, O(1) otherwise.

    >>> from batpolicy.platforms.model import Machine, Platform
    >>> plat = Platform([Machine(0, "a", cluster="c0"), Machine(1, "b", cluster="c1")])
    >>> {name: str(g.machines) for name, g in platform_groups(plat).items()}
    {'c0': '0', 'c1': '1'}
    """
    groups = getattr(platform, "groups", None)
    if groups:
        return groups
    found: dict[tuple[str, str], list[int]] = {}
    for machine in platform.machines:
        if machine.cluster is not None:
            found.setdefault(("cluster", machine.cluster), []).append(machine.id)
        if machine.rack is not None:
            found.setdefault(("rack", machine.rack), []).append(machine.id)
    return {name: _DerivedGroup(name, kind, MachineSet(ids)) for (kind, name), ids in found.items()}


def _all_gpu(alloc: Iterable[int], platform: Any) -> bool:
    machines = platform.machines
    return all(machines[m].gpu for m in alloc)


def is_preferred(job: PlacementFields, alloc: MachineSet, platform: Any) -> bool:
    """Whether ``alloc`` is ``job``'s preferred placement (rules in the module docstring).

    Runtime complexity: O(groups × intervals) for MPI jobs, O(res) for GPU jobs.

    >>> from types import SimpleNamespace as Job
    >>> from batpolicy.platforms.model import Machine, Platform
    >>> plat = Platform([Machine(0, "a", rack="r0", gpu=True), Machine(1, "b", rack="r0"),
    ...                  Machine(2, "c", rack="r1")])
    >>> mpi = Job(job_type="mpi", preferred=None)
    >>> [is_preferred(mpi, MachineSet.parse(s), plat) for s in ("0-1", "1-2")]
    [True, False]
    >>> is_preferred(Job(job_type="gpu", preferred=None), MachineSet.of(1), plat)
    False
    >>> is_preferred(Job(job_type="seq", preferred="r1"), MachineSet.of(2), plat)
    True
    """
    job_type = job.job_type
    preferred = job.preferred
    if not alloc:
        return True
    if job_type == "gpu" and not _all_gpu(alloc, platform):
        return False
    if job_type == "mpi" or preferred is not None:
        groups = platform_groups(platform)
        if preferred is not None:
            group = groups.get(preferred)
            if group is None or not alloc.issubset(group.machines):
                return False
        if job_type == "mpi" and not any(
                group.kind in GROUP_KINDS_FOR_MPI and alloc.issubset(group.machines)
                for group in groups.values()):
            return False
    return True
