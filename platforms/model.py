"""Platform model: the machines a scheduler can allocate, with what policies need of them.

A :class:`Platform` is an ordered list of compute :class:`Machine` whose position is
its Batsim resource id. Machines carry a speed (flop/s), the cluster (SimGrid zone or
``<cluster>``) they belong to, a rack, a GPU flag and free-form SimGrid properties, so
multi-cluster, rack/GPU and heterogeneous-speed policies read one model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class Machine:
    """One compute resource; ``id`` is its Batsim resource id (0-based, dense)."""

    id: int
    name: str
    speed: float = 1e9
    cluster: str | None = None
    rack: str | None = None
    gpu: bool = False
    properties: dict[str, Any] = field(default_factory=dict)
    zone_properties: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Link:
    """A network link (used by the co-allocation bandwidth model); bandwidth in byte/s."""

    id: str
    bandwidth: float
    latency: float = 0.0


@dataclass(slots=True)
class Platform:
    """Compute machines in Batsim id order, plus the links between clusters if known."""

    machines: list[Machine]
    links: dict[str, Link] = field(default_factory=dict)
    cluster_links: dict[str, str] = field(default_factory=dict)
    storage: list[Machine] = field(default_factory=list)
    source: str | None = None

    @property
    def nb_machines(self) -> int:
        """Number of compute machines."""
        return len(self.machines)

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
        return cls([Machine(i, f"{prefix}{i}", speed=speed) for i in range(nb_machines)])
