"""Machines as groups of Batsim hosts, and placing a job inside one of them.

Klusáček, Matyska & Rudová 2007, §2: a machine i has R_i CPUs of one speed s_i, and a job
needs R_j CPUs of one machine. Batsim knows hosts, not machines: a *machine* is a group
of hosts of one speed. :func:`machine_groups` reads the groups from the platform view
(``state.platform.groups`` of kind ``"machine"``, interface A of the wave-2 plan) and,
until that view is on every branch, from the hosts' ``group`` / ``machine`` properties or
their cluster (**shim**: ``_groups_from_properties``, removed when the platform view is
merged). Without any of these every host belongs to one machine.

:func:`take_within_one_group` is the allocation rule the queue baselines use when a job
must stay inside one machine (``one_group``); the allocator strategies
(``scheduler.allocation``, ``WithinOneGroup``) can absorb it.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from procset import ProcSet

from batpolicy.scheduler.allocation import take_lowest
from batpolicy.scheduler.intervalset import make, size

__all__ = ["MachineGroup", "fastest_first", "machine_groups", "take_within_one_group"]

_sup = itemgetter(1)


@dataclass(frozen=True, slots=True)
class MachineGroup:
    """A machine: its name, its hosts (Batsim resource ids) and their speed (flop/s)."""

    name: str
    hosts: ProcSet
    speed: float

    @property
    def cpus(self) -> int:
        """Number of hosts (CPUs). Runtime complexity: O(intervals)."""
        return size(self.hosts)


def machine_groups(state: Any) -> list[MachineGroup]:
    """The machines of the platform in order of their first host id.

    Groups of kind ``machine`` when the platform has them; else every group it has
    (clusters, racks: :func:`~batpolicy.scheduler.placement.platform_groups`); else one
    machine of all hosts. A machine's speed is its slowest host's. Runtime: O(h) hosts.
    """
    from batpolicy.scheduler.placement import platform_groups

    platform = state.platform
    groups = list(platform_groups(platform).values())
    chosen = [g for g in groups if g.kind == "machine"] or groups
    if not chosen and platform.nb_machines:
        hosts = ProcSet((0, platform.nb_machines - 1))
        return [MachineGroup("all", hosts, min(platform.speed(h) for h in hosts))]
    found = [MachineGroup(g.name, ProcSet(g.machines), min(platform.speed(h) for h in g.machines))
             for g in chosen if g.machines]
    return sorted(found, key=lambda g: g.hosts.min)


def fastest_first(groups: Sequence[MachineGroup]) -> list[MachineGroup]:
    """Machines by decreasing speed, ties in the order given. Runtime complexity: O(g log g).

    >>> [g.name for g in fastest_first([MachineGroup("a", ProcSet(0), 1.0),
    ...                                 MachineGroup("b", ProcSet(1), 2.0)])]
    ['b', 'a']
    """
    return sorted(groups, key=lambda g: -g.speed)


def _free_within(free_itvs: list, hosts: ProcSet) -> int:
    """Free hosts among ``hosts``: bisection when ``hosts`` is one interval (a machine)."""
    itvs = hosts._itvs  # noqa: SLF001 (procset 1.x representation, see intervalset)
    if len(itvs) != 1:
        return size(make(free_itvs) & hosts)
    lo, hi = itvs[0]
    i = bisect_left(free_itvs, lo, key=_sup)
    count = 0
    for inf, sup in free_itvs[i:]:
        if inf > hi:
            break
        count += min(sup, hi) - max(inf, lo) + 1
    return count


def take_within_one_group(free: ProcSet, res: int,
                          groups: Sequence[MachineGroup]) -> ProcSet | None:
    """The ``res`` lowest free hosts of the first machine (in ``groups`` order) with room.

    Pass :func:`fastest_first` order to take the fastest machine with enough free hosts.
    Runtime complexity: O(g · log i) for g machines of contiguous ids and i free
    intervals, until the first that fits.

    >>> g = fastest_first([MachineGroup("slow", ProcSet((0, 3)), 1e9),
    ...                    MachineGroup("fast", ProcSet((4, 5)), 2e9)])
    >>> str(take_within_one_group(ProcSet((0, 5)), 2, g))
    '4-5'
    >>> str(take_within_one_group(ProcSet((0, 4)), 2, g))
    '0-1'
    >>> take_within_one_group(ProcSet((0, 5)), 5, g) is None
    True
    """
    free_itvs = free._itvs  # noqa: SLF001
    for group in groups:
        if _free_within(free_itvs, group.hosts) >= res:
            return take_lowest(free & group.hosts, res)
    return None
