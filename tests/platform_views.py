"""Helpers of the platform tests: the embedded simulator's SIMULATION_BEGINS, views."""

from __future__ import annotations

from typing import Any

from batpolicy.platforms.model import Platform
from batpolicy.protocol import types as t
from batpolicy.simulator.engine.simulator import Simulator


def simulator_begins(platform: Platform) -> t.SimulationBegins:
    """The SIMULATION_BEGINS the embedded simulator sends for ``platform``."""
    seen: list[t.Request] = []

    def scheduler(request: t.Request) -> t.Reply:
        seen.append(request)
        return t.Reply(request.now, ())

    Simulator([], platform).run(scheduler)
    event = seen[0].events[0]
    assert isinstance(event, t.SimulationBegins)
    return event


def forwarded(platform: Platform) -> list[tuple[Any, ...]]:
    """What Batsim forwards of each machine: name, properties, zone properties."""
    return [(m.name, m.properties, m.zone_properties) for m in platform.machines + platform.storage]


def summary(platform: Platform) -> dict[str, tuple[str, str, float | None, set[float], set[bool]]]:
    """Each group as (kind, machine ids, uplink byte/s, speeds, GPU flags)."""
    return {name: (g.kind, str(g.machines), g.uplink_bandwidth,
                   {platform.speed(i) for i in g.machines},
                   {platform.machines[i].gpu for i in g.machines})
            for name, g in platform.groups.items()}
