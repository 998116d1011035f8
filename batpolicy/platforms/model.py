"""Platform model: the machines a scheduler can allocate, in named groups, as policies see them.

A :class:`Platform` is an ordered list of compute :class:`Machine` whose position is
its Batsim resource id. Machines belong to named :class:`Group` s: a *cluster* (the
clusters of a multi-cluster, each linked to a central switch by one uplink: Jones et
al. 2005, §3.1, Fig. 4), a *rack* (racks of machines, one of them with GPUs: Wu & Chen,
§1 and §3.1), or a *machine* (several CPUs of one speed: Klusáček et al. 2007, §2,
"all CPUs within one machine has the same speed s_i"). Every machine carries its speed
(flop/s), a GPU flag and the SimGrid properties Batsim forwards for it.

The same view is built from a SimGrid file (:func:`batpolicy.platforms.xml.read_platform`)
and from Batsim's SIMULATION_BEGINS (:func:`batpolicy.platforms.begins.platform_from_begins`),
so that a policy sees one platform whether ``serve`` or ``simulate`` drives it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from batpolicy.protocol.intervals import MachineSet

__all__ = ["GROUP_KINDS", "Group", "Link", "Machine", "Platform", "make_groups"]

#: The kinds of group a machine may belong to.
GROUP_KINDS = ("cluster", "rack", "machine")

@dataclass(frozen=True, slots=True)
class Group:
    """Machines sharing a cluster, a rack or a multi-CPU machine; read-only.

    ``machines`` are Batsim resource ids; ``uplink_bandwidth`` (byte/s) and
    ``uplink_latency`` (s) describe the group's link to the central switch, when it has
    one; ``properties`` are the zone properties every machine of the group has.
    """

    name: str
    kind: str
    machines: MachineSet
    uplink_bandwidth: float | None = None
    uplink_latency: float = 0.0
    properties: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.properties, MappingProxyType):
            object.__setattr__(self, "properties", MappingProxyType(dict(self.properties)))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Group):
            return NotImplemented
        return (self.name, self.kind, self.machines, self.uplink_bandwidth,
                self.uplink_latency, dict(self.properties)) == (
                other.name, other.kind, other.machines, other.uplink_bandwidth,
                other.uplink_latency, dict(other.properties))

    def __hash__(self) -> int:
        return hash((self.name, self.kind, str(self.machines)))


@dataclass(slots=True)
class Machine:
    """One compute resource; ``id`` is its Batsim resource id (0-based, dense).

    ``properties`` and ``zone_properties`` are what Batsim 4.2.1 forwards in
    SIMULATION_BEGINS (``role`` included); ``group`` names the machine's :class:`Group`;
    ``cluster`` and ``rack`` repeat the group's name when it is of that kind (or a
    ``<cabinet>``'s id for ``rack``), for the code written before groups.
    """

    id: int
    name: str
    speed: float = 1e9
    cluster: str | None = None
    rack: str | None = None
    gpu: bool = False
    properties: dict[str, Any] = field(default_factory=dict)
    zone_properties: dict[str, Any] = field(default_factory=dict)
    group: str | None = None


@dataclass(slots=True)
class Link:
    """A network link (used by the co-allocation bandwidth model); bandwidth in byte/s."""

    id: str
    bandwidth: float
    latency: float = 0.0


@dataclass(slots=True)
class Platform:
    """Compute machines in Batsim id order, their groups, and the links if known.

    Two platforms are equal when a policy sees the same thing in both: machines,
    groups and storage; ``links`` and ``source`` (known only from a file) are not
    compared.
    """

    machines: list[Machine]
    links: dict[str, Link] = field(default_factory=dict, compare=False)
    cluster_links: dict[str, str] = field(default_factory=dict, compare=False)
    storage: list[Machine] = field(default_factory=list)
    source: str | None = field(default=None, compare=False)
    groups: Mapping[str, Group] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.groups, MappingProxyType):
            self.groups = MappingProxyType(dict(self.groups))
        self._by_machine: dict[int, Group] = {}
        for group in self.groups.values():
            for machine_id in group.machines:
                self._by_machine[machine_id] = group

    # slots=True with a private cache: declared here so __post_init__ may set it
    _by_machine: dict[int, Group] = field(default_factory=dict, init=False, repr=False,
                                          compare=False)

    @property
    def nb_machines(self) -> int:
        """Number of compute machines."""
        return len(self.machines)

    def group_of(self, machine_id: int) -> Group | None:
        """The group of machine ``machine_id``, or None when it has none. O(1).

        >>> platform = Platform.homogeneous(2)
        >>> platform.group_of(1) is None
        True
        """
        return self._by_machine.get(machine_id)

    def speed(self, machine_id: int) -> float:
        """The speed of machine ``machine_id`` in flop/s. O(1)."""
        return self.machines[machine_id].speed

    def clusters(self) -> dict[str | None, list[int]]:
        """Machine ids grouped by cluster, in id order."""
        groups: dict[str | None, list[int]] = {}
        for m in self.machines:
            groups.setdefault(m.cluster, []).append(m.id)
        return groups

    @classmethod
    def homogeneous(cls, nb_machines: int, *, speed: float = 1e9, prefix: str = "h") -> Platform:
        """A single cluster of ``nb_machines`` identical machines named ``h0``, ``h1``, ...

        >>> Platform.homogeneous(3).machines[2].name
        'h2'
        """
        return cls([Machine(i, f"{prefix}{i}", speed=speed, properties={"role": ""})
                    for i in range(nb_machines)])


def make_groups(machines: Iterable[Machine], kinds: Mapping[str, str],
                uplinks: Mapping[str, tuple[float | None, float]]) -> dict[str, Group]:
    """The groups of ``machines`` (by ``Machine.group``), in order of first machine id.

    ``kinds`` and ``uplinks`` give each group's kind and (bandwidth, latency); a group's
    properties are the zone properties all its machines share.

    >>> ms = [Machine(0, "a", group="g"), Machine(1, "b"), Machine(2, "c", group="g")]
    >>> g = make_groups(ms, {"g": "rack"}, {})["g"]
    >>> g.kind, str(g.machines), g.uplink_bandwidth
    ('rack', '0 2', None)
    """
    members: dict[str, list[Machine]] = {}
    for machine in machines:
        if machine.group is not None:
            members.setdefault(machine.group, []).append(machine)
    groups: dict[str, Group] = {}
    for name, group_machines in members.items():
        shared = dict(group_machines[0].zone_properties)
        for machine in group_machines[1:]:
            shared = {k: v for k, v in shared.items() if machine.zone_properties.get(k) == v}
        bandwidth, latency = uplinks.get(name, (None, 0.0))
        groups[name] = Group(name, kinds.get(name, "cluster"),
                             MachineSet([m.id for m in group_machines]),
                             bandwidth, latency, shared)
    return groups
