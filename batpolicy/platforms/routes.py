"""Network routes of a SimGrid platform, as SimGrid 3.32 computes them, for Batsim's messages.

Batsim 4.2.1 sends every internal message (a submission, a decision, a completion) to its
``server`` actor on the master host as a 1-byte SimGrid communication (``ipp.cpp``,
``send_message``), under the ``ptask_L07`` host model (``batsim.cpp``). Such a message
takes the sum of the route's link latencies plus one byte over the route's narrowest
link (L07 bounds the rate by ``TCP_gamma / (2 latency)`` too). This module finds those
routes in the platform file the way SimGrid does (``NetZoneImpl::get_global_route``):

- a ``Full`` zone routes with its ``route`` / ``zoneRoute`` (``ASroute``) elements,
  symmetrical unless ``symmetrical="NO"``; two hosts (or a host and itself) with no
  route element have no link between them: the message is instant (measured with
  Batsim 4.2.1 on ``properties_example.xml``: no loopback is added under ``ptask_L07``);
- a zone with ``routing="None"`` cannot route: SimGrid aborts, and so does this module;
- a ``cluster`` (flat topology) or a ``routing="Cluster"`` zone (``cabinet``, ``host_link``,
  ``backbone``): host -> host is the source's private link, the backbone, the
  destination's private link (``ClusterZone::get_local_route``); the loopback link
  (``loopback_lat``/``loopback_bw``) to itself if the cluster has one; the router
  (``PREFIX ID _router SUFFIX``) is reached without a private link;
- a ``Vivaldi`` zone (``VivaldiZone::get_local_route``, a ``StarZone``): the source's
  links up and the destination's links down (a ``peer``'s ``link_ID_UP`` of ``bw_out``
  and ``link_ID_DOWN`` of ``bw_in``, or a ``host_link``; none for a plain ``host``),
  plus a latency of the hosts' distance in milliseconds: ``sqrt(dx^2 + dy^2) + |z_src|
  + |z_dst|`` from their ``coordinates`` (a :data:`COORDINATES` hop, latency without a
  link); a host without coordinates makes SimGrid abort, and this module too;
- between zones, the common ancestor's zone route from ``gw_src`` to ``gw_dst``, and
  the routes inside each side to and from those gateways.

Not modelled (:class:`UnsupportedRoute`): dragonfly, fat-tree and torus clusters,
Floyd/Dijkstra routing, zones inside a Vivaldi zone.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from batpolicy.platforms.units import parse_bandwidth, parse_speed, parse_time

__all__ = ["COORDINATES", "Hop", "Routes", "UnsupportedRoute", "read_routes"]

#: SimGrid 3.32's default ``network/TCP-gamma``.
TCP_GAMMA = 4194304.0


class UnsupportedRoute(Exception):
    """The platform uses a routing this module does not reproduce."""


@dataclass(frozen=True, slots=True)
class Hop:
    """One link of a route: latency (s), bandwidth (byte/s), name and sharing policy.

    ``name`` is the link's SimGrid name (a ``SPLITDUPLEX`` link's two directions are
    ``NAME_UP`` and ``NAME_DOWN``, ``sg_platf_new_link``), what tells two routes share
    it; ``sharing`` is ``SHARED``, ``FATPIPE`` or :data:`COORDINATES` (no link: the
    latency of two Vivaldi coordinates, infinite bandwidth).
    """

    latency: float
    bandwidth: float
    name: str = ""
    sharing: str = "SHARED"


#: The sharing of a hop that is no link: a Vivaldi zone's coordinate latency.
COORDINATES = "COORDINATES"

#: The network model's implicit loopback link (``NetworkL07Model``, ``network/loopback-bw``
#: 10 GB/s, ``network/loopback-lat`` 0, FATPIPE), which ``FullZone::do_seal`` gives every
#: host of a Full zone that has no route to itself.
LOOPBACK = Hop(0.0, 10e9, "__loopback__", "FATPIPE")


@dataclass(slots=True)
class _Zone:
    id: str
    routing: str
    parent: _Zone | None = None
    children: list[_Zone] = field(default_factory=list)
    hosts: set[str] = field(default_factory=set)
    routers: set[str] = field(default_factory=set)
    # Full routing: (src, dst) -> (links, gw_src, gw_dst)
    routes: dict[tuple[str, str], tuple[list[Hop], str | None, str | None]] = \
        field(default_factory=dict)
    # cluster routing
    private: dict[str, Hop] = field(default_factory=dict)
    private_down: dict[str, Hop] = field(default_factory=dict)  # SPLITDUPLEX DOWN halves
    loopback: dict[str, Hop] = field(default_factory=dict)
    limiter: dict[str, Hop] = field(default_factory=dict)
    backbone: Hop | None = None
    is_cluster: bool = False
    # Vivaldi routing: host -> (x, y, height) in milliseconds
    coords: dict[str, tuple[float, float, float]] = field(default_factory=dict)


class Routes:
    """Routes of one platform file between its hosts. Runtime complexity: O(depth) a route.

    The platform does not change once read: a point's chain of zones and each route to or
    from a gateway are computed once.
    """

    def __init__(self, root: _Zone, zone_of: dict[str, _Zone]) -> None:
        self._root = root
        self._zone_of = zone_of
        self._chains: dict[str, list[_Zone]] = {}
        self._legs: dict[tuple[str, str], list[Hop]] = {}
        #: host name -> (speed of its first pstate in flop/s, core count)
        self.host_cpu: dict[str, tuple[float, int]] = {}

    def hosts(self) -> set[str]:
        """Every host name of the platform."""
        return {name for name, zone in self._zone_of.items() if name in zone.hosts}

    def route(self, src: str, dst: str) -> list[Hop]:
        """The links a message from host ``src`` to host ``dst`` crosses."""
        return self._global(src, dst)

    def links(self, src: str, dst: str) -> list[Hop]:
        """The links of ``src`` -> ``dst`` as a parallel task uses them.

        As :meth:`route`, plus the model's loopback (:data:`LOOPBACK`) from a host of a
        Full zone to itself when the zone has no route for it (``FullZone::do_seal``).
        A host missing from the platform raises :class:`KeyError`.
        """
        if src == dst:
            zone = self._zone_of[src]
            if not zone.is_cluster and zone.routing == "Full" and (src, src) not in zone.routes \
                    and not zone.children:
                return [LOOPBACK]
        return self._global(src, dst)

    def message_time(self, src: str, dst: str, size: float = 1.0) -> tuple[float, float]:
        """(latency, transfer time) of a ``size``-byte message: L07's two phases."""
        hops = self.route(src, dst)
        latency = 0.0
        for hop in hops:
            latency += hop.latency
        rate = min((hop.bandwidth for hop in hops), default=float("inf"))
        if latency > 0:
            rate = min(rate, TCP_GAMMA / (2.0 * latency * size))
        return latency, (size / rate if rate != float("inf") else 0.0)

    # ------------------------------------------------------------------ SimGrid's algorithm
    def _netzone_chain(self, point: str) -> list[_Zone]:
        chain = self._chains.get(point)
        if chain is None:
            zone: _Zone | None = self._zone_of[point]
            chain = []
            while zone is not None:
                chain.append(zone)
                zone = zone.parent
            chain = self._chains[point] = chain[::-1]  # root first
        return chain

    def _leg(self, src: str, dst: str) -> list[Hop]:
        """``_global(src, dst)`` for a route to or from a gateway, computed once."""
        found = self._legs.get((src, dst))
        if found is None:
            found = self._legs[(src, dst)] = self._global(src, dst)
        return found

    def _global(self, src: str, dst: str) -> list[Hop]:
        a, b = self._netzone_chain(src), self._netzone_chain(dst)
        depth = 0
        while depth < min(len(a), len(b)) and a[depth] is b[depth]:
            depth += 1
        common = a[depth - 1]
        if depth == len(a) and depth == len(b):  # both directly in the common zone
            return self._local(common, src, dst)[0]
        src_point = a[depth].id if depth < len(a) else src
        dst_point = b[depth].id if depth < len(b) else dst
        links, gw_src, gw_dst = self._local(common, src_point, dst_point)
        if gw_src is None or gw_dst is None:
            raise UnsupportedRoute(f"zone route {src_point} -> {dst_point} has no gateways")
        before = self._leg(src, gw_src) if src != gw_src else []
        after = self._leg(gw_dst, dst) if gw_dst != dst else []
        return before + links + after

    def _local(self, zone: _Zone, src: str, dst: str
               ) -> tuple[list[Hop], str | None, str | None]:
        if zone.is_cluster:
            return self._cluster_local(zone, src, dst), None, None
        if zone.routing == "None":
            raise UnsupportedRoute(f"zone {zone.id} has no routing: SimGrid aborts (there "
                                   "can't be a route in an Empty zone)")
        if zone.routing == "Full":
            found = zone.routes.get((src, dst))
            if found is not None:
                return found
            return [], None, None  # no route element: no link, an instant message
        if zone.routing == "Vivaldi":
            return self._vivaldi_local(zone, src, dst), None, None
        raise UnsupportedRoute(f"zone {zone.id}: routing {zone.routing!r} is not modelled")

    @staticmethod
    def _cluster_local(zone: _Zone, src: str, dst: str) -> list[Hop]:
        """``StarZone::get_local_route``: source's links up, destination's links down.

        Each link once: a host to itself without loopback crosses its link once.
        """
        if src == dst and src in zone.loopback:
            return [zone.loopback[src]]
        hops: list[Hop] = []
        if src not in zone.routers:
            if src in zone.limiter:
                hops.append(zone.limiter[src])
            if src in zone.private:
                hops.append(zone.private[src])
        if zone.backbone is not None:
            hops.append(zone.backbone)
        if dst not in zone.routers:
            down = zone.private_down.get(dst) or zone.private.get(dst)
            if down is not None and down not in hops:
                hops.append(down)
            limiter = zone.limiter.get(dst)
            if limiter is not None and limiter not in hops:
                hops.append(limiter)
        return hops


    @staticmethod
    def _vivaldi_local(zone: _Zone, src: str, dst: str) -> list[Hop]:
        """``VivaldiZone::get_local_route``: the star's links, then the coordinates' latency.

        ``StarZone::get_local_route`` adds the source's links up and the destination's
        links down (each link once); the latency grows by the euclidean distance of the
        first two coordinates plus both heights, in milliseconds.
        """
        for point in (src, dst):
            if point not in zone.hosts:
                raise UnsupportedRoute(f"zone {zone.id}: a route through {point} (a zone or "
                                       "router inside a Vivaldi zone) is not modelled")
            if point not in zone.coords:
                raise UnsupportedRoute(f"zone {zone.id}: host {point} has no Vivaldi "
                                       "coordinates (SimGrid aborts: 'Please specify the "
                                       "Vivaldi coordinates')")
        hops: list[Hop] = []
        if src in zone.private:
            hops.append(zone.private[src])
        down = zone.private_down.get(dst) or zone.private.get(dst)
        if down is not None and down not in hops:
            hops.append(down)
        (x1, y1, z1), (x2, y2, z2) = zone.coords[src], zone.coords[dst]
        distance = math.sqrt((x1 - x2) * (x1 - x2) + (y1 - y2) * (y1 - y2)) + abs(z1) + abs(z2)
        if distance > 0:
            hops.append(Hop(distance / 1000.0, math.inf, f"coordinates {src} {dst}",
                            COORDINATES))
        return hops


def _coordinates(node: ET.Element, zone: _Zone, name: str) -> None:
    """A Vivaldi host's ``coordinates`` attribute: three numbers (``vivaldi::Coords``)."""
    text = node.get("coordinates")
    if text is None:
        return
    try:
        values = tuple(float(v) for v in text.split(" "))
    except ValueError:
        raise UnsupportedRoute(f"host {name}: invalid coordinates {text!r}") from None
    if len(values) != 3:
        raise UnsupportedRoute(f"host {name}: coordinates {text!r} must have 3 dimensions")
    zone.coords[name] = values  # type: ignore[assignment]


def _radical(text: str) -> list[int]:
    numbers: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.strip().partition("-")
        numbers.extend(range(int(lo), int(hi or lo) + 1))
    return numbers


class _Builder:
    def __init__(self) -> None:
        self.links: dict[str, tuple[Hop, Hop]] = {}  # name -> (UP, DOWN); one Hop twice
        self.zone_of: dict[str, _Zone] = {}
        self.hosts: dict[str, tuple[float, int]] = {}  # name -> (speed, core count)

    def zone(self, node: ET.Element, parent: _Zone | None) -> _Zone:
        """A ``zone`` (``AS``) element and everything in it."""
        zone = _Zone(node.get("id", ""), node.get("routing", "None"), parent)
        if parent is not None:
            parent.children.append(zone)
            self.zone_of[zone.id] = parent
        zone.is_cluster = zone.routing == "Cluster"
        for child in node:
            tag = child.tag
            if tag in ("zone", "AS"):
                self.zone(child, zone)
            elif tag == "cluster":
                self.cluster(child, zone)
            elif tag == "host":
                name = child.get("id", "")
                zone.hosts.add(name)
                self.zone_of[name] = zone
                self.hosts[name] = (_speed(child.get("speed", "1f")),
                                    int(child.get("core", "1")))
                if zone.routing == "Vivaldi":
                    _coordinates(child, zone, name)
            elif tag == "peer" and zone.routing == "Vivaldi":
                self.peer(child, zone)
            elif tag == "router":
                zone.routers.add(child.get("id", ""))
                self.zone_of[child.get("id", "")] = zone
            elif tag == "link":
                self.link(child)
            elif tag == "backbone":
                zone.backbone = self.hop(child, "latency", "bandwidth", child.get("id", ""))
            elif tag == "cabinet":
                hop = self.hop(child, "lat", "bw", "")
                speed = _speed(child.get("speed", "1f"))
                for i in _radical(child.get("radical", "")):
                    name = f"{child.get('prefix', '')}{i}{child.get('suffix', '')}"
                    zone.hosts.add(name)
                    zone.private[name] = Hop(hop.latency, hop.bandwidth, f"link_{name}_UP")
                    zone.private_down[name] = Hop(hop.latency, hop.bandwidth,
                                                  f"link_{name}_DOWN")
                    self.zone_of[name] = zone
                    self.hosts[name] = (speed, 1)
            elif tag == "host_link":
                name = child.get("id", "")
                for key in ("up", "down"):
                    if child.get(key, "") not in self.links:
                        raise UnsupportedRoute(f"host_link of {name}: link "
                                               f"'{child.get(key, '')}' is not declared")
                zone.private[name] = self.links[child.get("up", "")][0]
                zone.private_down[name] = self.links[child.get("down", "")][1]
            elif tag in ("route", "zoneRoute", "ASroute"):
                self.route(child, zone)
            elif tag in ("bypassRoute", "bypassZoneRoute", "bypassASroute"):
                raise UnsupportedRoute(f"{tag} is not modelled")
        if zone.routing not in ("Full", "None", "Cluster", "Vivaldi"):
            raise UnsupportedRoute(f"zone {zone.id}: routing {zone.routing!r} is not modelled")
        return zone

    def peer(self, node: ET.Element, zone: _Zone) -> None:
        """A ``peer`` (``sg_platf_new_peer``): a host, its coordinates, two links of its own.

        ``VivaldiZone::set_peer_link``: ``link_ID_UP`` of ``bw_out`` and ``link_ID_DOWN`` of
        ``bw_in``, no latency (the peer's ``lat`` is not read).
        """
        name = node.get("id", "")
        zone.hosts.add(name)
        self.zone_of[name] = zone
        self.hosts[name] = (_speed(node.get("speed", "1f")), 1)
        _coordinates(node, zone, name)
        zone.private[name] = Hop(0.0, parse_bandwidth(node.get("bw_out", "0")),
                                 f"link_{name}_UP")
        zone.private_down[name] = Hop(0.0, parse_bandwidth(node.get("bw_in", "0")),
                                      f"link_{name}_DOWN")

    def hop(self, node: ET.Element, lat: str, bw: str, name: str,
            sharing: str = "SHARED") -> Hop:
        """A link from an element's latency and bandwidth attributes."""
        return Hop(parse_time(node.get(lat, "0")), parse_bandwidth(node.get(bw, "0")), name,
                   sharing)

    def link(self, node: ET.Element) -> None:
        """A ``link`` element; a ``SPLITDUPLEX`` one is two links, ``_UP`` and ``_DOWN``."""
        name = node.get("id", "")
        policy = node.get("sharing_policy", "SHARED").upper()
        if policy in ("SPLITDUPLEX", "FULLDUPLEX"):
            self.links[name] = (self.hop(node, "latency", "bandwidth", f"{name}_UP"),
                                self.hop(node, "latency", "bandwidth", f"{name}_DOWN"))
        else:
            hop = self.hop(node, "latency", "bandwidth", name,
                           "FATPIPE" if policy == "FATPIPE" else "SHARED")
            self.links[name] = (hop, hop)

    def route(self, node: ET.Element, zone: _Zone) -> None:
        """A ``route`` / ``zoneRoute`` element, and its reverse if symmetrical.

        A ``link_ctn`` of a SPLITDUPLEX link names its ``direction``; the reverse
        route crosses the other direction (``RoutedZone::get_link_list_impl``).
        """
        forward, backward = [], []
        for ctn in node:
            if ctn.tag != "link_ctn":
                continue
            link = ctn.get("id", "")
            if link not in self.links:
                raise UnsupportedRoute(f"route {node.get('src')} -> {node.get('dst')} crosses "
                                       f"link '{link}', which is not declared before it")
            up, down = self.links[link]
            if ctn.get("direction", "UP").upper() == "DOWN":
                forward.append(down)
                backward.append(up)
            else:
                forward.append(up)
                backward.append(down)
        src, dst = node.get("src", ""), node.get("dst", "")
        gw_src, gw_dst = node.get("gw_src"), node.get("gw_dst")
        zone.routes[(src, dst)] = (forward, gw_src, gw_dst)
        if node.get("symmetrical", "YES").upper() == "YES" and (dst, src) not in zone.routes:
            zone.routes[(dst, src)] = (backward[::-1], gw_dst, gw_src)

    def cluster(self, node: ET.Element, parent: _Zone) -> None:
        """A ``cluster`` element: hosts with private links, backbone, loopback, limiter.

        Link names and sharing policies as ``sg_platf_new_cluster_flat`` makes them.
        """
        topology = node.get("topology", "FLAT").upper()
        if topology != "FLAT":
            raise UnsupportedRoute(f"cluster {node.get('id')}: {topology} topology is not "
                                   "modelled")
        cid = node.get("id", "")
        zone = _Zone(cid, "Cluster", parent, is_cluster=True)
        parent.children.append(zone)
        self.zone_of[zone.id] = parent
        prefix, suffix = node.get("prefix", ""), node.get("suffix", "")
        policy = node.get("sharing_policy", "SPLITDUPLEX").upper()
        speed, cores = _speed(node.get("speed", "1f")), int(node.get("core", "1"))
        if node.get("bb_bw") or float(parse_time(node.get("bb_lat", "0"))) > 0:
            bb_policy = node.get("bb_sharing_policy", "SHARED").upper()
            zone.backbone = Hop(parse_time(node.get("bb_lat", "0")),
                                parse_bandwidth(node.get("bb_bw", "0")), f"{cid}_backbone",
                                "FATPIPE" if bb_policy == "FATPIPE" else "SHARED")
        for i in _radical(node.get("radical", "")):
            name = f"{prefix}{i}{suffix}"
            link_id = f"{cid}_link_{i}"
            zone.hosts.add(name)
            self.hosts[name] = (speed, cores)
            if policy in ("SPLITDUPLEX", "FULLDUPLEX"):
                zone.private[name] = self.hop(node, "lat", "bw", f"{link_id}_UP")
                zone.private_down[name] = self.hop(node, "lat", "bw", f"{link_id}_DOWN")
            else:
                zone.private[name] = self.hop(node, "lat", "bw", link_id,
                                              "FATPIPE" if policy == "FATPIPE" else "SHARED")
            if node.get("loopback_bw") or node.get("loopback_lat"):
                zone.loopback[name] = Hop(parse_time(node.get("loopback_lat", "0")),
                                          parse_bandwidth(node.get("loopback_bw", "0")),
                                          f"{link_id}_loopback", "FATPIPE")
            if node.get("limiter_link"):
                zone.limiter[name] = Hop(0.0, parse_bandwidth(node.get("limiter_link")),
                                         f"{link_id}_limiter")
            self.zone_of[name] = zone
        router = node.get("router_id") or f"{prefix}{zone.id}_router{suffix}"
        zone.routers.add(router)
        self.zone_of[router] = zone


def _speed(text: str) -> float:
    """A host's first pstate speed (flop/s) from a ``speed`` attribute."""
    return parse_speed(text.split(",")[0].strip())


def read_routes(path: str | Path) -> Routes:
    """The routes of platform file ``path``; :class:`UnsupportedRoute` if not modelled."""
    try:
        root = ET.fromstring(Path(path).read_text().lstrip())
    except ET.ParseError as exc:
        raise UnsupportedRoute(f"cannot parse {path}: {exc}") from None
    builder = _Builder()
    zones = [child for child in root if child.tag in ("zone", "AS")]
    if len(zones) != 1:
        raise UnsupportedRoute("the platform must have one root zone")
    top = builder.zone(zones[0], None)
    routes = Routes(top, builder.zone_of)
    routes.host_cpu = builder.hosts
    return routes
