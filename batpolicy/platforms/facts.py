"""What a machine's SimGrid properties say about it: speed, GPU, group, group uplink.

Batsim 4.2.1 forwards, for each compute machine, its host ``<prop>`` s (``properties``,
plus ``role``) and the ``<prop>`` s of the zones around it (``zone_properties``, inner
zones overriding outer ones; a ``<cluster>`` 's props are both). It forwards neither the
host's speed nor the zone it sits in nor any link. So the facts a policy needs are
written as properties by our generators (:mod:`batpolicy.platforms.generators`) and read
here, in the same way from a platform file and from SIMULATION_BEGINS:

============================  ======================================================
property (host or zone)       meaning
============================  ======================================================
``speed``                     flop/s, SimGrid syntax (``"1Gf"``, ``"2.5e9"``)
``gpu``                       ``true`` / ``1`` / ``yes`` when the machine has a GPU
``group``                     name of the machine's group
``group_kind``                ``cluster`` (default), ``rack`` or ``machine``
``uplink_bandwidth``          the group's link to the central switch (``"1Gbps"``)
``uplink_latency``            its latency (``"0s"``, default 0)
``cluster`` / ``rack``        older spelling: group of that kind, when no ``group``
============================  ======================================================

A host property wins over a zone property of the same name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from batpolicy.platforms.model import GROUP_KINDS, Link, Machine, Platform, make_groups
from batpolicy.platforms.units import parse_bandwidth, parse_speed, parse_time

__all__ = ["DEFAULT_SPEED", "PROPS", "Facts", "HostEntry", "build_platform",
           "facts_from_properties"]

#: The property names this module reads.
PROPS = ("speed", "gpu", "group", "group_kind", "uplink_bandwidth", "uplink_latency",
         "cluster", "rack")

_TRUE = frozenset({"1", "true", "yes"})


@dataclass(slots=True)
class Facts:
    """The facts one machine's properties state; None where they say nothing."""

    speed: float | None = None
    gpu: bool = False
    group: str | None = None
    kind: str | None = None
    uplink_bandwidth: float | None = None
    uplink_latency: float | None = None
    rack: str | None = None


def _lookup(name: str, properties: Mapping[str, Any],
            zone_properties: Mapping[str, Any]) -> str | None:
    value = properties.get(name, zone_properties.get(name))
    return None if value is None else str(value)


def facts_from_properties(properties: Mapping[str, Any],
                          zone_properties: Mapping[str, Any]) -> Facts:
    """The facts stated by a machine's properties (host first, then zone).

    Raises ``ValueError`` naming the property when one cannot be read.

    >>> f = facts_from_properties({"speed": "2Gf", "group": "r1", "group_kind": "rack"},
    ...                           {"gpu": "true", "uplink_bandwidth": "1Gbps"})
    >>> f.speed, f.gpu, f.group, f.kind, f.uplink_bandwidth
    (2000000000.0, True, 'r1', 'rack', 125000000.0)
    >>> facts_from_properties({"cluster": "c0"}, {}).group
    'c0'
    """
    def get(name: str) -> str | None:
        return _lookup(name, properties, zone_properties)

    facts = Facts()
    for name, parse in (("speed", parse_speed), ("uplink_bandwidth", parse_bandwidth),
                        ("uplink_latency", parse_time)):
        text = get(name)
        if text is not None:
            try:
                setattr(facts, name, parse(text))
            except ValueError as exc:
                raise ValueError(f"property '{name}': {exc}") from None
    facts.gpu = (get("gpu") or "").strip().lower() in _TRUE
    facts.group = get("group")
    facts.kind = get("group_kind")
    if facts.kind is not None and facts.kind not in GROUP_KINDS:
        raise ValueError(f"property 'group_kind' is {facts.kind!r}, not one of "
                         + ", ".join(GROUP_KINDS))
    cluster, rack = get("cluster"), get("rack")
    facts.rack = rack
    if facts.group is None and (cluster is not None or rack is not None):
        facts.group, facts.kind = (cluster, "cluster") if cluster is not None else (rack, "rack")
    return facts


#: Speed assumed for a machine whose speed nobody states (SimGrid's 1 Gflop/s examples).
DEFAULT_SPEED = 1e9


@dataclass(slots=True)
class HostEntry:
    """One compute host as a reader found it: what Batsim forwards, plus what else is known.

    ``known`` holds facts not forwarded by Batsim (from the file's structure: speed
    attribute, enclosing zone, cabinet, zone uplink), or None when nothing else is known.
    """

    name: str
    properties: dict[str, Any]
    zone_properties: dict[str, Any]
    known: Facts | None = None


def build_platform(hosts: list[HostEntry], storage: list[HostEntry], *,
                   source: str | None = None, links: dict[str, Link] | None = None) -> Platform:
    """The platform of ``hosts`` (in Batsim id order): stated facts first, then known ones.

    Raises ``ValueError`` naming the machine or group whose facts cannot be read or
    disagree (two machines of one group stating different kinds or uplinks).
    """
    machines: list[Machine] = []
    kinds: dict[str, str] = {}
    uplinks: dict[str, tuple[float | None, float]] = {}
    first: dict[str, str] = {}
    for index, host in enumerate(hosts):
        try:
            stated = facts_from_properties(host.properties, host.zone_properties)
        except ValueError as exc:
            raise ValueError(f"machine '{host.name}': {exc}") from None
        known = host.known or Facts()
        group = stated.group if stated.group is not None else known.group
        same = group is not None and group == known.group
        kind = stated.kind or (known.kind if same else None) or "cluster"
        bandwidth = stated.uplink_bandwidth
        latency = stated.uplink_latency
        if bandwidth is None and same:
            bandwidth = known.uplink_bandwidth
        if latency is None:
            latency = (known.uplink_latency if same else None) or 0.0
        speed = stated.speed if stated.speed is not None else known.speed
        machines.append(Machine(
            index, host.name, speed=DEFAULT_SPEED if speed is None else speed,
            cluster=group if kind == "cluster" else None,
            rack=group if kind == "rack" else stated.rack or known.rack,
            gpu=stated.gpu or known.gpu, properties=host.properties,
            zone_properties=host.zone_properties, group=group))
        if group is None:
            continue
        if group not in kinds:
            kinds[group], uplinks[group], first[group] = kind, (bandwidth, latency), host.name
        elif (kinds[group], uplinks[group]) != (kind, (bandwidth, latency)):
            raise ValueError(
                f"group '{group}': machine '{first[group]}' makes it a {kinds[group]} with "
                f"uplink {uplinks[group]}, machine '{host.name}' a {kind} with uplink "
                f"{(bandwidth, latency)} (bandwidth byte/s, latency s)")
    stored = [Machine(len(hosts) + i, h.name, properties=h.properties,
                      zone_properties=h.zone_properties) for i, h in enumerate(storage)]
    return Platform(machines, links=dict(links or {}), storage=stored, source=source,
                    groups=make_groups(machines, kinds, uplinks))
