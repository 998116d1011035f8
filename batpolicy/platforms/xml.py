"""Read SimGrid/Batsim platform XML into a :class:`~batpolicy.platforms.model.Platform`.

What Batsim 4.2.1 makes of a platform, and so what this reader does:

- compute machines are every ``<host>`` and every host of a ``<cluster>`` (named
  ``prefix + number + suffix`` for each number of ``radical``, e.g. ``"0-3,8"``), except
  the master host (named ``master_host`` unless told otherwise, or with the property
  ``role=master``) and storage hosts (``role=storage``, kept in ``Platform.storage``);
- machines are numbered in the byte order of their names (``h0, h1, h10, h100, h101,
  ...``: the order Batsim's SIMULATION_BEGINS shows in every recorded transcript);
- a host's ``properties`` are its ``<prop>`` children (a cluster's ``<prop>`` apply to
  each of its hosts) plus ``role`` (``""`` when absent), as Batsim forwards them; its
  ``zone_properties`` the ``<prop>`` of every zone around it, outermost first, inner
  ones overriding (a ``<cluster>`` is a zone, so its ``<prop>`` are both);
- a speed is the host's current pstate (attribute ``pstate``, default 0) of its
  comma-separated speed list, in flop/s (``"1Gf"``, ``"286.087kf"``, ``"16.673E9flops"``).

Groups, speeds, GPU flags and uplinks: see :func:`read_platform`. Routing, topologies and
link sharing are not modelled; links are kept by id with their bandwidth (byte/s) and
latency (s) for the co-allocation models.

>>> import tempfile, pathlib
>>> xml = '''<platform version="4.1"><zone id="z" routing="Full">
...   <cluster id="c" prefix="h" suffix="" radical="0-10" speed="1Gf" bw="1GBps" lat="0"/>
...   <host id="master_host" speed="1Gf"/></zone></platform>'''
>>> path = pathlib.Path(tempfile.mkdtemp()) / "p.xml"
>>> _ = path.write_text(xml)
>>> platform = read_platform(path)
>>> [m.name for m in platform.machines][:4], platform.nb_machines, platform.machines[0].speed
(['h0', 'h1', 'h10', 'h2'], 11, 1000000000.0)
"""

from __future__ import annotations

import xml.parsers.expat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from batpolicy.errors import InputError
from batpolicy.platforms.facts import Facts, HostEntry, build_platform, facts_from_properties
from batpolicy.platforms.model import Link, Platform
from batpolicy.platforms.units import parse_bandwidth, parse_speed, parse_time

__all__ = ["parse_bandwidth", "parse_speed", "parse_time", "read_platform", "require_master"]

_ZONES = {"zone", "AS"}


def _radical(text: str) -> list[int]:
    numbers: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.strip().partition("-")
        first, last = int(lo), int(hi) if hi else int(lo)
        if last < first:
            raise ValueError(f"empty range {part!r}")
        numbers.extend(range(first, last + 1))
    return numbers


@dataclass(slots=True)
class _Node:
    tag: str
    attrs: dict[str, str]
    line: int
    children: list[_Node] = field(default_factory=list)

    def props(self) -> dict[str, str]:
        return {c.attrs.get("id", ""): c.attrs.get("value", "")
                for c in self.children if c.tag == "prop"}


def _parse(path: Path) -> _Node:
    root = _Node("#document", {}, 0)
    stack = [root]
    parser = xml.parsers.expat.ParserCreate()

    def start(tag: str, attrs: dict[str, str]) -> None:
        node = _Node(tag, attrs, parser.CurrentLineNumber)
        stack[-1].children.append(node)
        stack.append(node)

    def end(tag: str) -> None:
        stack.pop()

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    try:
        # SimGrid accepts blank lines before the XML declaration; expat does not
        parser.Parse(path.read_bytes().lstrip(), True)
    except OSError as exc:
        raise InputError(f"cannot read platform file: {exc.strerror or exc}",
                         path=str(path)) from None
    except xml.parsers.expat.ExpatError as exc:
        raise InputError("not well-formed XML: "
                         f"{xml.parsers.expat.ErrorString(exc.code)}",
                         path=str(path), line=exc.lineno) from None
    platforms = [c for c in root.children if c.tag == "platform"]
    if not platforms:
        raise InputError("no <platform> element: not a SimGrid platform file",
                         path=str(path))
    return platforms[0]


@dataclass(slots=True)
class _Host:
    name: str
    speed: float
    properties: dict[str, Any]
    zone_properties: dict[str, Any]
    zone: str | None
    rack: str | None = None
    line: int | None = None


class _Reader:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.hosts: list[_Host] = []
        self.links: dict[str, Link] = {}
        #: links next to each zone on the inter-zone routes (``<zoneRoute>``)
        self.zone_links: dict[str, set[str]] = {}

    def fail(self, node: _Node, field_name: str, message: str) -> InputError:
        return InputError(f"<{node.tag}>: {message}",
                          path=str(self.path), line=node.line, field=field_name)

    def attr(self, node: _Node, name: str) -> str:
        if name not in node.attrs:
            raise self.fail(node, name, "missing attribute")
        return node.attrs[name]

    def speed(self, node: _Node) -> float:
        speeds = [s for s in self.attr(node, "speed").split(",") if s.strip()]
        try:
            pstate = int(node.attrs.get("pstate", "0"))
            values = [parse_speed(s) for s in speeds]
            if not 0 <= pstate < len(values):
                raise ValueError(f"pstate {pstate} is not one of the {len(values)} speeds")
            return values[pstate]
        except ValueError as exc:
            raise self.fail(node, "speed", str(exc)) from None

    def walk(self, node: _Node, zone_props: dict[str, str], zone: str | None = None) -> None:
        """Hosts, links and zone routes under ``node``; zone properties accumulate inward."""
        for child in node.children:
            if child.tag in _ZONES:
                self.walk(child, {**zone_props, **child.props()}, child.attrs.get("id"))
            elif child.tag == "cabinet":
                self.cluster(child, zone_props, zone=zone)
            elif child.tag in ("host", "peer"):  # a Vivaldi zone's peer is a host
                self.hosts.append(_Host(self.attr(child, "id"), self.speed(child),
                                        child.props(), dict(zone_props), zone,
                                        line=child.line))
            elif child.tag == "cluster":
                self.cluster(child, zone_props)
            elif child.tag == "link":
                self.link(child)
            elif child.tag in ("zoneRoute", "ASroute"):
                self.zone_route(child)

    def cluster(self, node: _Node, zone_props: dict[str, str], *,
                zone: str | None = None) -> None:
        """A ``<cluster>`` (its own zone), or a ``<cabinet>`` (a rack) of the zone ``zone``."""
        name = self.attr(node, "id")
        prefix, suffix = node.attrs.get("prefix", ""), node.attrs.get("suffix", "")
        try:
            numbers = _radical(self.attr(node, "radical"))
        except ValueError as exc:
            raise self.fail(node, "radical", f"not a list of ranges such as '0-31' ({exc})") \
                from None
        speed, props = self.speed(node), node.props()
        if node.tag == "cluster":  # SimGrid gives a cluster's <prop> to its zone and hosts
            zone_props, zone, rack = {**zone_props, **props}, name, None
        else:
            rack = name
        self.hosts.extend(_Host(f"{prefix}{n}{suffix}", speed, dict(props), dict(zone_props),
                                zone, rack, node.line) for n in numbers)

    def link(self, node: _Node) -> None:
        try:
            bandwidth = parse_bandwidth(self.attr(node, "bandwidth"))
            latency = parse_time(node.attrs.get("latency", "0"))
        except ValueError as exc:
            raise self.fail(node, "bandwidth/latency", str(exc)) from None
        link_id = self.attr(node, "id")
        self.links[link_id] = Link(link_id, bandwidth, latency)

    def zone_route(self, node: _Node) -> None:
        """Remember the first link out of ``src`` and the last one into ``dst``."""
        hops = [c.attrs.get("id", "") for c in node.children if c.tag == "link_ctn"]
        for end, link in (("src", hops[0] if hops else ""), ("dst", hops[-1] if hops else "")):
            self.zone_links.setdefault(node.attrs.get(end, ""), set()).add(link)

    def uplink(self, zone: str | None) -> Link | None:
        """The one link every inter-zone route out of ``zone`` starts with, if any."""
        ends = self.zone_links.get(zone or "", set())
        return self.links.get(next(iter(ends))) if len(ends) == 1 else None

    def known(self, host: _Host) -> Facts:
        """What the file says of ``host`` beyond its properties (Batsim forwards none of it)."""
        uplink = self.uplink(host.zone)
        return Facts(speed=host.speed, group=host.zone, kind="cluster", rack=host.rack,
                     uplink_bandwidth=uplink.bandwidth if uplink else None,
                     uplink_latency=uplink.latency if uplink else None)

    def entry(self, host: _Host) -> HostEntry:
        """``host`` as Batsim forwards it (``role`` included), plus what the file knows."""
        try:
            stated = facts_from_properties(host.properties, host.zone_properties).speed
        except ValueError as exc:
            raise InputError(f"host '{host.name}': {exc}", path=str(self.path),
                             line=host.line, field="prop") from None
        if stated is not None and stated != host.speed:
            raise InputError(f"host '{host.name}': property 'speed' says {stated:g} flop/s "
                             f"but the host computes at {host.speed:g}", path=str(self.path),
                             line=host.line, field="speed")
        return HostEntry(host.name, {"role": "", **host.properties},
                         host.zone_properties, self.known(host))


def require_master(path: str | Path, *, master_host: str = "master_host") -> None:
    r"""Raise :class:`~batpolicy.errors.InputError` unless the file has Batsim's master host.

    Batsim 4.2.1 aborts without one (``Machines::create_machines``, ``src/machines.cpp``:
    ``"Cannot find the \"master\" role in the platform file"``): a host named
    ``master_host`` (its ``-m``) or with the property ``role=master``.
    """
    path = Path(path)
    reader = _Reader(path)
    reader.walk(_parse(path), {})
    if not any(h.name == master_host or h.properties.get("role") == "master"
               for h in reader.hosts):
        raise InputError(f"no master host: Batsim needs a host named {master_host!r} or with "
                         "the property role=master", path=str(path))


def read_platform(path: str | Path, *, master_host: str = "master_host") -> Platform:
    """The compute machines of a SimGrid platform file, in Batsim's resource id order.

    Each machine's group, speed, GPU flag and group uplink come from its properties
    (:mod:`batpolicy.platforms.facts`), else from the file: the zone or ``<cluster>``
    around it, its speed attribute, the one link all routes out of its zone start with.
    Raises :class:`~batpolicy.errors.InputError` naming file, line and attribute on a
    malformed file, and when it has no compute machine, two hosts of one name, or a
    compute host whose speed is not positive (the job models divide by it).
    """
    path = Path(path)
    reader = _Reader(path)
    reader.walk(_parse(path), {})
    compute: list[_Host] = []
    storage: list[_Host] = []
    seen: set[str] = set()
    for host in reader.hosts:
        if host.name in seen:
            raise InputError(f"two hosts are named {host.name!r}", path=str(path),
                             line=host.line, field="id")
        seen.add(host.name)
        role = host.properties.get("role", "")
        if host.name == master_host or role == "master":
            continue
        # a job's work would never end: the job models divide by the speed
        if role != "storage" and not host.speed > 0:
            raise InputError(f"host {host.name!r} computes at {host.speed:g} flop/s: a "
                             "compute host's speed must be positive", path=str(path),
                             line=host.line, field="speed")
        (storage if role == "storage" else compute).append(host)
    if not compute:
        raise InputError("no compute host (only master/storage hosts)",
                         path=str(path))
    compute.sort(key=lambda h: h.name.encode())
    storage.sort(key=lambda h: h.name.encode())
    try:
        return build_platform([reader.entry(h) for h in compute],
                              [reader.entry(h) for h in storage],
                              source=str(path), links=reader.links)
    except ValueError as exc:
        raise InputError(str(exc), path=str(path), field="prop") from None
