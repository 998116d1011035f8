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

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from procset import ProcSet

from batpolicy.scheduler.allocation import take_lowest
from batpolicy.scheduler.intervalset import size

__all__ = ["MachineGroup", "machine_groups", "take_within_one_group"]


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

    Runtime complexity: O(h) in the number of hosts.
    """
    platform = getattr(state, "platform", None)
    groups = getattr(platform, "groups", None)
    if groups:
        machines = [g for g in groups.values() if getattr(g, "kind", "") == "machine"]
        if machines:
            return [MachineGroup(g.name, g.machines,
                                 min(platform.speed(h) for h in g.machines))  # type: ignore[union-attr]
                    for g in machines]
    return _groups_from_properties(state.resources)


def _groups_from_properties(resources: Sequence[Any]) -> list[MachineGroup]:
    """Shim until the platform view: group hosts by ``group``/``machine`` property, else cluster.

    >>> from types import SimpleNamespace as R
    >>> hosts = [R(id=0, properties={"group": "m1"}, cluster=None, speed=2e9),
    ...          R(id=1, properties={"group": "m0"}, cluster=None, speed=1e9),
    ...          R(id=2, properties={"group": "m1"}, cluster=None, speed=2e9)]
    >>> [(g.name, str(g.hosts), g.speed) for g in _groups_from_properties(hosts)]
    [('m1', '0 2', 2000000000.0), ('m0', '1', 1000000000.0)]
    """
    members: dict[str, list[int]] = {}
    speeds: dict[str, float] = {}
    for r in resources:
        props = r.properties or {}
        key = props.get("group") or props.get("machine") or r.cluster or "all"
        key = str(key)
        members.setdefault(key, []).append(r.id)
        speeds[key] = min(speeds.get(key, r.speed), r.speed)
    return [MachineGroup(name, ProcSet(*ids), speeds[name]) for name, ids in members.items()]


def take_within_one_group(free: ProcSet, res: int,
                          groups: Sequence[MachineGroup]) -> ProcSet | None:
    """The ``res`` lowest free hosts of the fastest machine that has them free; None if none.

    Ties between equally fast machines go to the one listed first.
    Runtime complexity: O(g · i) for g machines and i free intervals.

    >>> g = [MachineGroup("slow", ProcSet((0, 3)), 1e9), MachineGroup("fast", ProcSet((4, 5)), 2e9)]
    >>> str(take_within_one_group(ProcSet((0, 5)), 2, g))
    '4-5'
    >>> str(take_within_one_group(ProcSet((0, 4)), 2, g))
    '0-1'
    >>> take_within_one_group(ProcSet((0, 5)), 5, g) is None
    True
    """
    best: MachineGroup | None = None
    best_free = ProcSet()
    for group in groups:
        if best is not None and group.speed <= best.speed:
            continue
        here = free & group.hosts
        if size(here) >= res:
            best, best_free = group, here
    return None if best is None else take_lowest(best_free, res)
