"""Generate SimGrid platforms that Batsim 4.2.1 loads, with the facts policies need as props.

Three shapes, one writer:

- :func:`multicluster`: ``m`` clusters of ``n`` single-processor nodes, each cluster
  with its own ideal internal switch and one dedicated link to a central ideal switch
  (Jones, Pang, Stanzione & Ligon 2005, §3.1, Fig. 4; §4.3: 100 nodes, 1000 Mbps);
- :func:`racks`: racks of machines, the first ``gpu_racks`` of them with GPUs
  (Wu & Chen, §1 and §3.1: "each element in the vector represents a rack", a GPU rack);
- :func:`machines`: machines of different CPU counts and speeds, one host per CPU
  (Klusáček, Matyska & Rudová 2007, §2: "all CPUs within one machine has the same speed
  s_i; different machines may have different speeds").

Every group is a SimGrid ``<cluster>`` whose gateway reaches a central ``switch`` router
through the group's uplink; the master host Batsim needs sits beside the switch. Links
have zero latency unless asked (so Batsim's times stay exact, docs/simulator.md) and the
internal ones a huge bandwidth. The group, its kind, the speed, the GPU flag and the
uplink are written as the ``<cluster>`` 's ``<prop>`` s, which Batsim forwards in
SIMULATION_BEGINS (:mod:`batpolicy.platforms.facts`): a policy sees the same platform
beside Batsim as in the embedded simulator.

With ``power`` (a :class:`~batpolicy.platforms.power_figures.PowerSpec`), every host
also gets the power pstates and figures Batsim's ``-E`` reads
(:mod:`batpolicy.platforms.power_figures`); without, the file is as before.

Hosts are named ``<group>_<number>``; group names have no ``_`` and generated ones
zero-padded indexes (``cluster07``), so Batsim's numbering (byte order of host names)
keeps each group's machines contiguous and the groups in name order.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import quoteattr

from batpolicy.errors import ConfigError, InputError
from batpolicy.platforms.model import GROUP_KINDS
from batpolicy.platforms.power_figures import PowerSpec
from batpolicy.platforms.units import parse_bandwidth, parse_speed, parse_time

__all__ = ["GroupSpec", "machines", "multicluster", "racks", "read_machines_csv",
           "to_xml", "write_platform"]

#: Bandwidth of the links inside a group and of the master's link: never a bottleneck.
IDEAL_BANDWIDTH = "1000GBps"
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-")


@dataclass(frozen=True, slots=True)
class GroupSpec:
    """One group to generate: ``nodes`` hosts of one ``speed`` (SimGrid syntax)."""

    name: str
    kind: str
    nodes: int
    speed: str = "1Gf"
    gpu: bool = False
    uplink_bandwidth: str = "1Gbps"
    uplink_latency: str = "0s"


def _check_unit(option: str, value: str, parse: object) -> str:
    try:
        parse(value)  # type: ignore[operator]
    except ValueError as exc:
        raise ConfigError(f"{option}: {exc}") from None
    return value


def _check_speed(option: str, value: str) -> str:
    """A SimGrid speed that a job can finish at: parsed and > 0 (a 0 divides by zero)."""
    try:
        if not parse_speed(value) > 0:
            raise ValueError(f"a speed must be positive, got {value!r}")
    except ValueError as exc:
        raise ConfigError(f"{option}: {exc}") from None
    return value


def _positive(option: str, value: int) -> int:
    if value <= 0:
        raise ConfigError(f"{option} must be a positive number, got {value}")
    return value


def _names(prefix: str, count: int) -> list[str]:
    width = len(str(count - 1))
    return [f"{prefix}{i:0{width}d}" for i in range(count)]


def multicluster(clusters: int, nodes: int, *, link_bandwidth: str = "1Gbps",
                 link_latency: str = "0s", speed: str = "1Gf") -> list[GroupSpec]:
    """``clusters`` clusters of ``nodes`` nodes, each with one link to the central switch.

    >>> [(g.name, g.nodes, g.uplink_bandwidth) for g in multicluster(2, 3)]
    [('cluster0', 3, '1Gbps'), ('cluster1', 3, '1Gbps')]
    """
    _positive("--clusters", clusters)
    _positive("--nodes", nodes)
    _check_unit("--link-bandwidth", link_bandwidth, parse_bandwidth)
    _check_unit("--link-latency", link_latency, parse_time)
    _check_speed("--speed", speed)
    return [GroupSpec(name, "cluster", nodes, speed, False, link_bandwidth, link_latency)
            for name in _names("cluster", clusters)]


def racks(nb_racks: int, nodes: int, *, gpu_racks: int = 1, link_bandwidth: str = "10Gbps",
          link_latency: str = "0s", speed: str = "1Gf") -> list[GroupSpec]:
    """``nb_racks`` racks of ``nodes`` machines; the first ``gpu_racks`` have GPUs.

    >>> [(g.name, g.kind, g.gpu) for g in racks(3, 2, gpu_racks=1)]
    [('rack0', 'rack', True), ('rack1', 'rack', False), ('rack2', 'rack', False)]
    """
    _positive("--racks", nb_racks)
    _positive("--nodes", nodes)
    if not 0 <= gpu_racks <= nb_racks:
        raise ConfigError(f"--gpu-racks must be between 0 and --racks ({nb_racks}), "
                          f"got {gpu_racks}")
    _check_unit("--link-bandwidth", link_bandwidth, parse_bandwidth)
    _check_unit("--link-latency", link_latency, parse_time)
    _check_speed("--speed", speed)
    return [GroupSpec(name, "rack", nodes, speed, i < gpu_racks, link_bandwidth, link_latency)
            for i, name in enumerate(_names("rack", nb_racks))]


def machines(rows: Sequence[tuple[str | None, int, str, bool]], *,
             link_bandwidth: str = "10Gbps", link_latency: str = "0s") -> list[GroupSpec]:
    """One group of kind ``machine`` per ``(name or None, cpus, speed, gpu)`` row.

    Unnamed machines are called ``m0``, ``m1``, ... (zero-padded).

    >>> [(g.name, g.nodes, g.speed) for g in machines([(None, 4, "2Gf", False),
    ...                                                (None, 1, "1Gf", False)])]
    [('m0', 4, '2Gf'), ('m1', 1, '1Gf')]
    """
    if not rows:
        raise ConfigError("no machine given")
    _check_unit("--link-bandwidth", link_bandwidth, parse_bandwidth)
    _check_unit("--link-latency", link_latency, parse_time)
    default = _names("m", len(rows))
    return [GroupSpec(name or default[i], "machine", cpus, speed, gpu, link_bandwidth,
                      link_latency) for i, (name, cpus, speed, gpu) in enumerate(rows)]


def read_machines_csv(path: str | Path) -> list[tuple[str | None, int, str, bool]]:
    """Rows ``(name, cpus, speed, gpu)`` of a CSV with columns ``cpus,speed[,name][,gpu]``.

    Raises :class:`~batpolicy.errors.InputError` naming file, line and column.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read machine list: {exc.strerror or exc}",
                         path=str(path)) from None
    reader = csv.DictReader(line for line in text.splitlines() if line.strip())
    missing = {"cpus", "speed"} - set(reader.fieldnames or ())
    if missing:
        raise InputError(f"missing column(s) {', '.join(sorted(missing))} (the header must "
                         "name cpus and speed; name and gpu are optional)", path=str(path),
                         line=1)
    rows: list[tuple[str | None, int, str, bool]] = []
    for row in reader:
        line = reader.line_num

        def fail(column: str, message: str, line: int = line) -> InputError:
            return InputError(message, path=str(path), line=line, field=column)

        try:
            cpus = int(row["cpus"] or "")
        except ValueError:
            raise fail("cpus", f"not a whole number: {row['cpus']!r}") from None
        if cpus <= 0:
            raise fail("cpus", f"a machine needs at least one CPU, got {cpus}")
        speed = (row["speed"] or "").strip()
        try:
            if parse_speed(speed) <= 0:
                raise ValueError(f"speed must be positive: {speed!r}")
        except ValueError as exc:
            raise fail("speed", str(exc)) from None
        gpu = (row.get("gpu") or "").strip().lower()
        if gpu not in ("", "0", "1", "true", "false", "yes", "no"):
            raise fail("gpu", f"not a yes/no value: {gpu!r}")
        rows.append(((row.get("name") or "").strip() or None, cpus, speed,
                     gpu in ("1", "true", "yes")))
    return rows


def _check(groups: Sequence[GroupSpec]) -> None:
    seen: set[str] = set()
    for group in groups:
        if not group.name or not set(group.name) <= _NAME_CHARS:
            raise ConfigError(f"group name {group.name!r}: use letters, digits, '.' and '-' "
                              "only (host names are <group>_<number>)")
        if group.name in seen or group.name in ("core", "switch", "master_host"):
            raise ConfigError(f"group name {group.name!r} is used twice or reserved")
        if group.kind not in GROUP_KINDS:
            raise ConfigError(f"group {group.name!r}: kind {group.kind!r} is not one of "
                              + ", ".join(GROUP_KINDS))
        _positive(f"group {group.name!r}: nodes", group.nodes)
        _check_speed(f"group {group.name!r}: speed", group.speed)
        seen.add(group.name)


def to_xml(groups: Sequence[GroupSpec], *, master_speed: str = "1Gf",
           power: PowerSpec | None = None) -> str:
    """The SimGrid platform file (version 4.1) of ``groups``, as a string.

    With ``power``, the hosts' power pstates and figures (module docstring).
    """
    _check(groups)
    if power is not None:
        power.check()
    q = quoteattr
    ideal = q(IDEAL_BANDWIDTH)
    out = ['<?xml version="1.0"?>',
           '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">',
           "<!-- written by `batpolicy platform`: every group is a <cluster> linked to the",
           "     central switch by its uplink; the props state what Batsim forwards -->",
           *([] if power is None else [power.comment()]),
           '<platform version="4.1">',
           '<zone id="platform" routing="Full">',
           '  <zone id="core" routing="Full">',
           *_master(master_speed, power),
           '    <router id="switch"/>',
           f'    <link id="master_link" bandwidth={ideal} latency="0s"/>',
           '    <route src="master_host" dst="switch"><link_ctn id="master_link"/></route>',
           "  </zone>"]
    for group in groups:
        props = {"group": group.name, "group_kind": group.kind, "speed": group.speed,
                 "gpu": "true" if group.gpu else "false",
                 "uplink_bandwidth": group.uplink_bandwidth,
                 "uplink_latency": group.uplink_latency}
        speeds = power.speeds(group.speed) if power is not None else group.speed
        if power is not None:
            props.update(power.properties())
        out.append(f'  <cluster id={q(group.name)} prefix={q(group.name + "_")} '
                   f'suffix="" radical="0-{group.nodes - 1}" speed={q(speeds)} '
                   f'bw={ideal} lat="0s" bb_bw={ideal} bb_lat="0s" loopback_bw={ideal} '
                   f'loopback_lat="0s" router_id={q(group.name + "_router")}>')
        out.extend(f"    <prop id={q(k)} value={q(v)}/>" for k, v in props.items())
        out.append("  </cluster>")
        out.append(f'  <link id={q(group.name + "_uplink")} '
                   f'bandwidth={q(group.uplink_bandwidth)} latency={q(group.uplink_latency)}/>')
    for group in groups:
        out.append(f'  <zoneRoute src={q(group.name)} dst="core" '
                   f'gw_src={q(group.name + "_router")} gw_dst="switch">'
                   f'<link_ctn id={q(group.name + "_uplink")}/></zoneRoute>')
    for i, a in enumerate(groups):
        for b in groups[i + 1:]:
            out.append(f'  <zoneRoute src={q(a.name)} dst={q(b.name)} '
                       f'gw_src={q(a.name + "_router")} gw_dst={q(b.name + "_router")}>'
                       f'<link_ctn id={q(a.name + "_uplink")}/>'
                       f'<link_ctn id={q(b.name + "_uplink")}/></zoneRoute>')
    out += ["</zone>", "</platform>", ""]
    return "\n".join(out)


def _master(speed: str, power: PowerSpec | None) -> list[str]:
    """The master host's element (with its power figures on an energy platform)."""
    if power is None:
        return [f'    <host id="master_host" speed={quoteattr(speed)}/>']
    return [f'    <host id="master_host" speed={quoteattr(speed)}>',
            *(f"      <prop id={quoteattr(k)} value={quoteattr(v)}/>"
              for k, v in power.master_properties().items()),
            "    </host>"]


def write_platform(groups: Sequence[GroupSpec], path: str | Path, *,
                   power: PowerSpec | None = None) -> Path:
    """Write :func:`to_xml` of ``groups`` (with ``power``) to ``path``; return the path.

    The folder is created if missing, as ``simulate -o`` does.
    """
    path = Path(path)
    text = to_xml(groups, power=power)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path
