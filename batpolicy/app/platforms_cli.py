"""``batpolicy platform multicluster|racks|machines``: write a SimGrid platform file.

See :mod:`batpolicy.platforms.generators` for the shapes (Jones et al. 2005 §3.1 Fig. 4;
Wu & Chen §3.1; Klusáček et al. 2007 §2) and what the files state for policies.
"""

from __future__ import annotations

import argparse
import logging
from typing import TYPE_CHECKING, Any

from batpolicy.errors import ConfigError

if TYPE_CHECKING:  # imported where used: building the parser (every command) loads none
    from batpolicy.platforms import generators as gen

__all__ = ["add_command"]

log = logging.getLogger(__name__)


def _common(parser: argparse.ArgumentParser, bandwidth: str) -> None:
    parser.add_argument("-o", "--output", required=True, metavar="FILE",
                        help="platform file to write")
    parser.add_argument("--link-bandwidth", default=bandwidth, metavar="BW",
                        help=f"each group's uplink to the central switch, SimGrid units "
                             f"(default: {bandwidth}; e.g. 1Gbps, 125MBps)")
    parser.add_argument("--link-latency", default="0s", metavar="T",
                        help="the uplinks' latency (default: 0s, so Batsim's times stay "
                             "exact)")
    _power(parser)


#: Power options: (dest, default, help). Defaults: Batsim's energy platforms' node.
_POWER_OPTIONS = (
    ("idle_watts", "W", "power of an idle node (default: %(default)s, as Batsim's energy "
     "platforms)"),
    ("computing_watts", "W", "power of a fully loaded node (default: %(default)s)"),
    ("sleep_watts", "W", "power of a sleeping node, also wattage_off (default: "
     "%(default)s)"),
    ("switch_off_time", "S", "seconds to switch a node off (default: %(default)s)"),
    ("switch_off_energy", "J", "joules a switch-off costs (default: %(default)s)"),
    ("switch_on_time", "S", "seconds to switch a node on (default: %(default)s)"),
    ("switch_on_energy", "J", "joules a switch-on costs (default: %(default)s)"),
)


def _power(parser: argparse.ArgumentParser) -> None:
    from batpolicy.platforms.power_figures import DEFAULT_POWER

    group = parser.add_argument_group(
        "power (for Batsim's -E / simulate --energy; off unless asked)",
        "Give the nodes a computation pstate, a sleep pstate and Batsim's virtual "
        "switch-off/switch-on pstates (wattage_per_state, wattage_off, sleep_pstates). "
        "Defaults: the node of Batsim's cluster_energy_128.xml; any figure given implies "
        "--power.")
    group.add_argument("--power", action="store_true",
                       help="write the power properties with the default figures")
    for dest, unit, text in _POWER_OPTIONS:
        group.add_argument("--" + dest.replace("_", "-"), type=float, metavar=unit,
                           help=text % {"default": getattr(DEFAULT_POWER, dest)})


def _power_spec(args: argparse.Namespace) -> Any:
    """The power figures asked for, or ``None`` (no power option given)."""
    figures = {dest: getattr(args, dest, None) for dest, _, _ in _POWER_OPTIONS}
    if not getattr(args, "power", False) and all(v is None for v in figures.values()):
        return None
    from batpolicy.platforms.power_figures import power_spec

    return power_spec(**figures)


def _speed(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--speed", default="1Gf", metavar="F",
                        help="speed of every node, SimGrid units (default: 1Gf)")


def _write(args: argparse.Namespace, groups: list[gen.GroupSpec], what: str) -> int:
    from batpolicy.platforms import generators as gen

    power = _power_spec(args)
    path = gen.write_platform(groups, args.output, power=power)
    nodes = sum(g.nodes for g in groups)
    log.info("wrote %s: %s, %d compute hosts%s", path, what, nodes,
             " with power pstates" if power is not None else "")
    return 0


def _multicluster(args: argparse.Namespace) -> int:
    from batpolicy.platforms import generators as gen

    groups = gen.multicluster(args.clusters, args.nodes, link_bandwidth=args.link_bandwidth,
                              link_latency=args.link_latency, speed=args.speed)
    return _write(args, groups, f"{args.clusters} clusters of {args.nodes} nodes")


def _racks(args: argparse.Namespace) -> int:
    from batpolicy.platforms import generators as gen

    groups = gen.racks(args.racks, args.nodes, gpu_racks=args.gpu_racks,
                       link_bandwidth=args.link_bandwidth, link_latency=args.link_latency,
                       speed=args.speed)
    return _write(args, groups, f"{args.racks} racks of {args.nodes} nodes, "
                                f"{args.gpu_racks} with GPUs")


def _machines(args: argparse.Namespace) -> int:
    from batpolicy.platforms import generators as gen

    if (args.spec is None) == (args.preset is None):
        raise ConfigError("platform machines: give --spec CSV or --preset NAME (one of them)")
    if args.spec is not None:
        groups = gen.machines(gen.read_machines_csv(args.spec),
                              link_bandwidth=args.link_bandwidth,
                              link_latency=args.link_latency)
        return _write(args, groups, f"{len(groups)} multi-CPU machines")
    from batpolicy.io.presets import parse_overrides, preset

    spec = preset(args.preset, **parse_overrides(args.preset, args.param))
    make = getattr(spec, "platform", None)
    if make is None:
        raise ConfigError(f"preset {args.preset!r} is drawn for no particular platform; "
                          f"use --spec")
    groups = gen.machines(make(args.seed), link_bandwidth=args.link_bandwidth,
                          link_latency=args.link_latency)
    return _write(args, groups, f"{len(groups)} machines of preset {args.preset} "
                                f"seed {args.seed}")


def add_command(sub: Any) -> None:
    """Register ``platform`` and its three generators on the CLI's subparsers ``sub``."""
    platform = sub.add_parser("platform", help="write a SimGrid platform file for Batsim",
                              description="Write a SimGrid platform that Batsim 4.2.1 loads; "
                                          "groups, speeds, GPUs and uplinks are stated as "
                                          "properties so policies see them beside Batsim.")
    kinds = platform.add_subparsers(dest="platform_kind", metavar="KIND", required=True)

    multi = kinds.add_parser("multicluster", help="clusters, one link each to a central "
                             "switch (Jones et al. 2005, Fig. 4)")
    multi.add_argument("--clusters", type=int, required=True, metavar="M",
                       help="how many clusters (cluster0, cluster1, ...)")
    multi.add_argument("--nodes", type=int, required=True, metavar="N",
                       help="nodes per cluster")
    _speed(multi)
    _common(multi, "1Gbps")
    multi.set_defaults(run=_multicluster)

    racks = kinds.add_parser("racks", help="racks of machines, some with GPUs (Wu & Chen)")
    racks.add_argument("--racks", type=int, required=True, metavar="R",
                       help="how many racks (rack0, rack1, ...)")
    racks.add_argument("--nodes", type=int, required=True, metavar="N", help="machines per rack")
    racks.add_argument("--gpu-racks", type=int, default=1, metavar="G",
                       help="how many racks (the first ones) have GPUs (default: 1)")
    _speed(racks)
    _common(racks, "10Gbps")
    racks.set_defaults(run=_racks)

    machines = kinds.add_parser("machines", help="machines of different CPU counts and speeds "
                                "(Klusáček et al. 2007, §2)")
    machines.add_argument("--spec", metavar="CSV",
                          help="CSV whose header row names the columns cpus,speed and "
                               "optionally name,gpu; then one row per machine (e.g. the "
                               "header 'cpus,speed' and the row '4,2Gf')")
    machines.add_argument("--preset", metavar="NAME",
                          help="instead of --spec: the machines a workload preset draws for "
                               "its seed (tabu-4), so that `workload synth --preset NAME "
                               "--seed S` has its platform")
    machines.add_argument("--seed", type=int, default=0, metavar="S",
                          help="with --preset: the seed (default 0, as workload synth)")
    machines.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                          help="with --preset: a preset parameter, repeatable "
                               "(e.g. nb_machines=20)")
    _common(machines, "10Gbps")
    machines.set_defaults(run=_machines)
