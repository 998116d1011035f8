"""``Machines``: the compute machines of a run, their availability and power state.

One part of :class:`~batpolicy.scheduler.state.ClusterState`, which owns the jobs and
tells this part which machines its running jobs hold. Batsim's rules followed here
(Batsim's protocol: decisions): a machine starts a job only when it is available and in a computing
power state (``idle`` or ``computing``); NOTIFY ``event_machine_unavailable`` /
``event_machine_available`` change availability without touching running jobs; a
SET_RESOURCE_STATE to one of the host's ``sleep_pstates`` (Batsim's ``pstate.cpp``) takes
the machine out of service until RESOURCE_STATE_CHANGED says it is awake again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from batpolicy.errors import ProtocolError
from batpolicy.platforms.begins import platform_from_begins
from batpolicy.platforms.model import Platform
from batpolicy.protocol import types as t
from batpolicy.protocol.intervals import MachineSet

__all__ = ["COMPUTING_POWER_STATES", "Machines", "Resource"]

#: Power states in which Batsim lets a machine compute (Batsim's protocol: decisions, EXECUTE_JOB).
COMPUTING_POWER_STATES = frozenset({"idle", "computing"})


@dataclass(slots=True)
class Resource:
    """One compute machine; ``id`` is its Batsim resource id."""

    id: int
    name: str
    properties: dict[str, Any] = field(default_factory=dict)
    zone_properties: dict[str, Any] = field(default_factory=dict)
    power_state: str = "idle"
    available: bool = True
    speed: float = 1e9
    cluster: str | None = None
    rack: str | None = None
    gpu: bool = False


def sleep_pstates(properties: Mapping[str, Any]) -> frozenset[str]:
    """The sleep pstates of Batsim's ``sleep_pstates`` host property (``sleep:off:on,...``).

    >>> sorted(sleep_pstates({"sleep_pstates": "3:4:5, 6:7:8"}))
    ['3', '6']
    >>> sleep_pstates({})
    frozenset()
    """
    text = properties.get("sleep_pstates")
    if not text:
        return frozenset()
    return frozenset(part.split(":")[0].strip() for part in str(text).split(","))


class Machines:
    """Machine ids, their :class:`Resource` records and the sets policies read.

    ``free``, ``unavailable`` and ``all`` are immutable sets rebound on every change
    (a policy holding ``view.free`` keeps the set of that instant). ``count`` is the
    number of compute machines (``len(resources)``), an attribute so that the view reads
    it without a call.
    """

    __slots__ = ("resources", "count", "platform", "all", "free", "unavailable")

    def __init__(self) -> None:
        self.resources: list[Resource] = []
        self.count = 0
        #: machines in groups with speeds and GPU flags, from SIMULATION_BEGINS
        self.platform = Platform([])
        self.all = MachineSet()
        self.free = MachineSet()
        self.unavailable = MachineSet()

    def begin(self, ev: t.SimulationBegins, platform_file: Platform | None) -> None:
        """Take the machines SIMULATION_BEGINS announces (ids must be 0..n-1 in order)."""
        for expected_id, info in enumerate(ev.compute_resources):
            if info.id != expected_id:
                raise ProtocolError(f"compute resource ids must be 0..n-1 in order, got {info.id} "
                                    f"at position {expected_id}", field="compute_resources")
        self.platform = platform_from_begins(ev, platform_file)
        self.resources = []
        for info, machine in zip(ev.compute_resources, self.platform.machines, strict=True):
            state = info.state
            self.resources.append(Resource(
                id=info.id, name=info.name, properties=dict(info.properties),
                zone_properties=dict(info.zone_properties),
                power_state="idle" if state == "unavailable" else state,
                available=state != "unavailable", speed=machine.speed,
                cluster=machine.cluster, rack=machine.rack, gpu=machine.gpu))
        resources = self.resources
        self.count = len(resources)
        self.all = MachineSet.span(0, len(resources) - 1)
        self.unavailable = MachineSet([r.id for r in resources if not r.available])
        self.free = MachineSet([r.id for r in resources
                                if r.available and r.power_state in COMPUTING_POWER_STATES])

    def set_unavailable(self, machines: MachineSet) -> None:
        """Mark machines unavailable: running jobs keep them, nothing new starts there."""
        machines = machines & self.all
        for rid in machines:
            self.resources[rid].available = False
        self.unavailable |= machines
        self.free -= machines

    def set_available(self, machines: MachineSet, busy: MachineSet) -> None:
        """Mark machines available again; those idle (not in ``busy``) become free."""
        machines = machines & self.all
        for rid in machines:
            self.resources[rid].available = True
        self.unavailable -= machines
        self.free |= MachineSet([r for r in machines - busy
                                 if self.resources[r].power_state in COMPUTING_POWER_STATES])

    def state_changed(self, ev: t.ResourceStateChanged, busy: MachineSet) -> None:
        """A switch ended: a machine in a sleep pstate is ``sleeping``, else ``idle``.

        Waking machines (available, not in ``busy``) become free.
        """
        woken = []
        resources = self.resources
        for rid in ev.resources:
            if 0 <= rid < len(resources):
                resource = resources[rid]
                if ev.state in sleep_pstates(resource.properties):
                    resource.power_state = "sleeping"
                else:
                    resource.power_state = "idle"
                    woken.append(rid)
        if woken:
            self.free |= MachineSet(woken) - self.unavailable - busy

    def switch_requested(self, d: t.SetResourceState) -> None:
        """Machines sent to a sleep pstate are switching off: nothing starts there any more."""
        resources = self.resources
        going = [rid for rid in d.resources if 0 <= rid < len(resources)
                 and d.state in sleep_pstates(resources[rid].properties)]
        for rid in going:
            resources[rid].power_state = "switching_off"
        if going:
            self.free -= MachineSet(going)

    def check(self, busy: MachineSet) -> None:
        """Verify the machine invariants given the machines running jobs hold.

        free and busy are disjoint; free + busy + unavailable-idle = all, but for machines
        out of a computing power state; no free machine is unavailable.
        Runtime complexity: O(n).
        """
        if busy & self.free:
            raise AssertionError(f"machines {busy & self.free} are both free and busy")
        idle_unavailable = self.unavailable - busy
        if (self.free | busy | idle_unavailable) != self.all and self.resources:
            missing = self.all - (self.free | busy | idle_unavailable)
            powered_off = [r for r in missing if self.resources[r].power_state
                           not in COMPUTING_POWER_STATES]
            if len(powered_off) != len(missing):
                raise AssertionError(f"machines {missing} are neither free, busy nor unavailable")
        if self.free & self.unavailable:
            raise AssertionError(f"machines {self.free & self.unavailable} free but unavailable")
