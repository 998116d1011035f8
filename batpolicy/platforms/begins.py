"""The platform a policy sees, built from Batsim's SIMULATION_BEGINS.

Batsim 4.2.1 announces each compute machine with its name, its host properties
(``properties``, with ``role``) and the properties of the zones around it
(``zone_properties``); see :mod:`batpolicy.platforms.facts` for the properties that
state a machine's speed, GPU, group and group uplink. Platforms written by
``batpolicy platform`` state all of them, so the view built here equals the one
:func:`~batpolicy.platforms.xml.read_platform` reads from the file.

Other files leave facts unstated (the speed attribute, the zone around a host, links):
Batsim does not forward them. When the platform file is known (``simulate`` always
knows it; ``serve --platform FILE``), pass it as ``reference``: what the properties do
not state is taken from it, so the view again equals the file's.
"""

from __future__ import annotations

from batpolicy.errors import ConfigError, ProtocolError
from batpolicy.platforms.facts import Facts, HostEntry, build_platform
from batpolicy.platforms.model import Machine, Platform
from batpolicy.protocol import types as t

__all__ = ["platform_from_begins"]


def _reference_facts(machine: Machine, reference: Platform) -> Facts:
    group = reference.group_of(machine.id)
    return Facts(speed=machine.speed, gpu=machine.gpu, group=machine.group,
                 kind=group.kind if group else None, rack=machine.rack,
                 uplink_bandwidth=group.uplink_bandwidth if group else None,
                 uplink_latency=group.uplink_latency if group else None)


def platform_from_begins(event: t.SimulationBegins, reference: Platform | None = None
                         ) -> Platform:
    """The platform announced by ``event``; unstated facts from ``reference`` if given.

    Raises :class:`~batpolicy.errors.ProtocolError` when a machine's properties cannot
    be read, and :class:`~batpolicy.errors.ConfigError` when ``reference`` does not
    describe the machines Batsim announced (another file).
    Runtime complexity: O(machines).
    """
    if reference is not None:
        names = [m.name for m in reference.machines] + [None] * len(event.compute_resources)
        for index, info in enumerate(event.compute_resources):
            if names[index] != info.name:  # (Batsim's --mmax keeps the first machines)
                raise ConfigError(
                    f"platform file {reference.source or ''} does not describe Batsim's "
                    f"machines: resource {index} is {info.name!r} in SIMULATION_BEGINS but "
                    f"{names[index] or 'absent'!r} in the file")

    def entry(index: int, info: t.ResourceInfo) -> HostEntry:
        known = None if reference is None else _reference_facts(reference.machines[index],
                                                                 reference)
        return HostEntry(info.name, dict(info.properties), dict(info.zone_properties), known)

    try:
        return build_platform([entry(i, r) for i, r in enumerate(event.compute_resources)],
                              [HostEntry(r.name, dict(r.properties), dict(r.zone_properties))
                               for r in event.storage_resources],
                              source=reference.source if reference else None,
                              links=reference.links if reference else None)
    except ValueError as exc:
        raise ProtocolError(str(exc), field="compute_resources",
                            event_type="SIMULATION_BEGINS") from None
