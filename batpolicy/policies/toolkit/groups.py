"""Machines as groups of Batsim hosts, and placing a job inside one of them.

Klusáček, Matyska & Rudová 2007, §2: a machine i has R_i CPUs of one speed s_i, and a job
needs R_j CPUs of one machine. Batsim knows hosts, not machines: a *machine* is a group
of hosts of one speed. :func:`machine_groups` reads the groups from the platform view
(``view.platform.groups`` of kind ``"machine"``, interface A of the wave-2 plan) and,
until that view is on every branch, from the hosts' ``group`` / ``machine`` properties or
their cluster (**shim**: ``_groups_from_properties``, removed when the platform view is
merged). Without any of these every host belongs to one machine.

:func:`take_within_one_group` is the allocation rule the queue baselines use when a job
must stay inside one machine (``one_group``); the allocator strategies
(``toolkit.allocation``, ``WithinOneGroup``) can absorb it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from batpolicy.policies.toolkit.allocation import take_lowest
from batpolicy.protocol.intervals import MachineSet

__all__ = ["MachineGroup", "fastest_first", "machine_groups", "take_within_one_group"]


@dataclass(frozen=True, slots=True)
class MachineGroup:
    """A machine: its name, its hosts (Batsim resource ids) and their speed (flop/s)."""

    name: str
    hosts: MachineSet
    speed: float

    @property
    def cpus(self) -> int:
        """Number of hosts (CPUs). Runtime complexity: O(1)."""
        return len(self.hosts)


def machine_groups(view: Any) -> list[MachineGroup]:
    """The machines of the platform in order of their first host id.

    Groups of kind ``machine`` when the platform has them; else every group it has
    (clusters, racks: :func:`~batpolicy.platforms.placement.platform_groups`); else one
    machine of all hosts. A machine's speed is its slowest host's. Runtime: O(h) hosts.
    """
    from batpolicy.platforms.placement import platform_groups

    platform = view.platform
    groups = list(platform_groups(platform).values())
    chosen = [g for g in groups if g.kind == "machine"] or groups
    if not chosen and platform.nb_machines:
        hosts = MachineSet.span(0, platform.nb_machines - 1)
        return [MachineGroup("all", hosts, min(platform.speed(h) for h in hosts))]
    found = [MachineGroup(g.name, g.machines, min(platform.speed(h) for h in g.machines))
             for g in chosen if g.machines]
    return sorted(found, key=lambda g: g.hosts.min())


def fastest_first(groups: Sequence[MachineGroup]) -> list[MachineGroup]:
    """Machines by decreasing speed, ties in the order given. Runtime complexity: O(g log g).

    >>> [g.name for g in fastest_first([MachineGroup("a", MachineSet.of(0), 1.0),
    ...                                 MachineGroup("b", MachineSet.of(1), 2.0)])]
    ['b', 'a']
    """
    return sorted(groups, key=lambda g: -g.speed)


def take_within_one_group(free: MachineSet, res: int,
                          groups: Sequence[MachineGroup]) -> MachineSet | None:
    """The ``res`` lowest free hosts of the first machine (in ``groups`` order) with room.

    Pass :func:`fastest_first` order to take the fastest machine with enough free hosts.
    Runtime complexity: one C-level intersection count per machine, until the first that
    fits.

    >>> g = fastest_first([MachineGroup("slow", MachineSet.span(0, 3), 1e9),
    ...                    MachineGroup("fast", MachineSet.span(4, 5), 2e9)])
    >>> str(take_within_one_group(MachineSet.span(0, 5), 2, g))
    '4-5'
    >>> str(take_within_one_group(MachineSet.span(0, 4), 2, g))
    '0-1'
    >>> take_within_one_group(MachineSet.span(0, 5), 5, g) is None
    True
    """
    for group in groups:
        if free.intersection_cardinality(group.hosts) >= res:
            return take_lowest(free & group.hosts, res)
    return None
