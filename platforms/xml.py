"""Read SimGrid/Batsim platform XML into a :class:`~batpolicy.platforms.model.Platform`.

What Batsim 4.2.1 makes of a platform, and so what this reader does:

- compute machines are every ``<host>`` and every host of a ``<cluster>`` (named
  ``prefix + number + suffix`` for each number of ``radical``, e.g. ``"0-3,8"``), except
  the master host (named ``master_host`` unless told otherwise, or with the property
  ``role=master``) and storage hosts (``role=storage``, kept in ``Platform.storage``);
- machines are numbered in the byte order of their names (``h0, h1, h10, h100, h101,
  ...``: the order Batsim's SIMULATION_BEGINS shows in every recorded transcript);
- a host's ``properties`` are its ``<prop>`` children (a cluster's ``<prop>`` apply to
  each of its hosts), its ``zone_properties`` the ``<prop>`` of the zone that directly
  contains it (none for cluster hosts);
- a speed is the host's current pstate (attribute ``pstate``, default 0) of its
  comma-separated speed list, in flop/s (``"1Gf"``, ``"286.087kf"``, ``"16.673E9flops"``).

Routing, topologies and link sharing are not modelled; links are kept by id with their
bandwidth (byte/s) and latency (s) for the co-allocation models.

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

import re
import xml.parsers.expat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from batpolicy.errors import InputError
from batpolicy.platforms.model import Link, Machine, Platform

__all__ = ["parse_bandwidth", "parse_speed", "parse_time", "read_platform"]

_ZONES = {"zone", "AS"}
_SI = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
       "Z": 1e21, "Y": 1e24}
_NUMBER = r"([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"
_SPEED = re.compile(_NUMBER + r"\s*([kMGTPEZY]?)(f|flops)?$")
_BANDWIDTH = re.compile(_NUMBER + r"\s*(k|[kMGTPEZY]?)(i?)(Bps|bps)?$")
_TIME = {"": 1.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, "ps": 1e-12,
         "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
_TIME_RE = re.compile(_NUMBER + r"\s*(s|ms|us|ns|ps|m|h|d|w)?$")


def parse_speed(text: str) -> float:
    """A SimGrid speed in flop/s.

    >>> parse_speed("286.087kf"), parse_speed("16.673E9flops"), parse_speed("0")
    (286087.0, 16673000000.0, 0.0)
    """
    match = _SPEED.match(text.strip())
    if match is None:
        raise ValueError(f"not a SimGrid speed: {text!r} (e.g. '1Gf', '286.087kf')")
    return float(match.group(1)) * _SI[match.group(2)]


def parse_bandwidth(text: str) -> float:
    """A SimGrid bandwidth in byte/s (``bps`` is bits, ``Ki``/``Mi``... binary).

    >>> parse_bandwidth("125MBps"), parse_bandwidth("8kbps"), parse_bandwidth("1KiBps")
    (125000000.0, 1000.0, 1024.0)
    """
    match = _BANDWIDTH.match(text.strip().replace("Ki", "ki"))
    if match is None:
        raise ValueError(f"not a SimGrid bandwidth: {text!r} (e.g. '125MBps')")
    value, prefix, binary, unit = match.groups()
    prefix = "k" if prefix == "ki" else prefix
    scale = 1024.0 ** ("kMGTPEZY".index(prefix) + 1) if binary and prefix else _SI[prefix]
    return float(value) * scale / (8.0 if unit == "bps" else 1.0)


def parse_time(text: str) -> float:
    """A SimGrid latency in seconds.

    >>> parse_time("2s"), parse_time("0"), parse_time("1ms")
    (2.0, 0.0, 0.001)
    """
    match = _TIME_RE.match(text.strip())
    if match is None:
        raise ValueError(f"not a SimGrid time: {text!r} (e.g. '50us')")
    return float(match.group(1)) * _TIME[match.group(2) or ""]


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
    cluster: str | None
    properties: dict[str, Any]
    zone_properties: dict[str, Any]
    rack: str | None = None
    line: int | None = None


class _Reader:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.hosts: list[_Host] = []
        self.links: dict[str, Link] = {}

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
        for child in node.children:
            if child.tag in _ZONES:
                self.walk(child, child.props(), child.attrs.get("id"))
            elif child.tag == "cabinet":
                self.cluster(child, zone=zone, zone_props=zone_props)
            elif child.tag == "host":
                self.hosts.append(_Host(self.attr(child, "id"), self.speed(child), None,
                                        child.props(), dict(zone_props), line=child.line))
            elif child.tag == "cluster":
                self.cluster(child)
            elif child.tag == "link":
                self.link(child)

    def cluster(self, node: _Node, *, zone: str | None = None,
                zone_props: dict[str, str] | None = None) -> None:
        """A ``<cluster>``, or a ``<cabinet>`` (a rack) of the cluster zone ``zone``."""
        name = self.attr(node, "id")
        prefix, suffix = node.attrs.get("prefix", ""), node.attrs.get("suffix", "")
        try:
            numbers = _radical(self.attr(node, "radical"))
        except ValueError as exc:
            raise self.fail(node, "radical", f"not a list of ranges such as '0-31' ({exc})") \
                from None
        speed, props = self.speed(node), node.props()
        cluster, rack = (name, None) if zone_props is None else (zone, name)
        self.hosts.extend(_Host(f"{prefix}{n}{suffix}", speed, cluster, dict(props),
                                dict(zone_props or {}), rack, node.line) for n in numbers)

    def link(self, node: _Node) -> None:
        try:
            bandwidth = parse_bandwidth(self.attr(node, "bandwidth"))
            latency = parse_time(node.attrs.get("latency", "0"))
        except ValueError as exc:
            raise self.fail(node, "bandwidth/latency", str(exc)) from None
        link_id = self.attr(node, "id")
        self.links[link_id] = Link(link_id, bandwidth, latency)


def read_platform(path: str | Path, *, master_host: str = "master_host") -> Platform:
    """The compute machines of a SimGrid platform file, in Batsim's resource id order.

    Raises :class:`~batpolicy.errors.InputError` naming file, line and attribute on a
    malformed file, and when it has no compute machine or two hosts of one name.
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
        (storage if role == "storage" else compute).append(host)
    if not compute:
        raise InputError("no compute host (only master/storage hosts)",
                         path=str(path))
    compute.sort(key=lambda h: h.name.encode())

    def machine(index: int, h: _Host) -> Machine:
        return Machine(index, h.name, speed=h.speed, cluster=h.cluster,
                       gpu=h.properties.get("gpu", "").lower() in ("1", "true", "yes"),
                       rack=h.rack or h.properties.get("rack"), properties=h.properties,
                       zone_properties=h.zone_properties)

    return Platform([machine(i, h) for i, h in enumerate(compute)], links=reader.links,
                    storage=[machine(i, h) for i, h in enumerate(storage)], source=str(path))
