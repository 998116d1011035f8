"""``batpolicy plot``: the command line of :mod:`batpolicy.app.plot`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from batpolicy.errors import ConfigError


def _plot(args: argparse.Namespace) -> int:
    from batpolicy.app import plot

    paths = [Path(p) for p in args.paths]
    first = paths[0]
    out = Path(args.output) if args.output else None
    kinds = sum(bool(k) for k in (args.gantt, args.heatmap, args.line, args.dist, args.bars,
                                  args.scatter))
    if kinds != 1:
        raise ConfigError("choose one of --gantt, --heatmap X Y, --line X, --dist, --bars, "
                          "--scatter X Y")
    if (args.heatmap or args.line or args.bars) and not args.metric:
        raise ConfigError("--heatmap, --line and --bars need --metric NAME (a results.csv "
                          "column)")
    if args.gantt:
        done = plot.gantt(first, out or _default(first, "gantt"), platform=args.platform)
    elif args.dist:
        done = plot.distributions(paths, out or _default(first, "distributions"),
                                  tau=args.tau)
    elif args.bars:
        done = plot.bars(first, args.metric, out or _default(first, f"{args.metric}_bars"),
                         baseline=args.baseline, by=args.by, where=args.where)
    elif args.scatter:
        x, y = args.scatter
        done = plot.tradeoff(paths, x, y, out or _default(first, f"{y}_vs_{x}"), by=args.by,
                             order=args.order, panel=args.panel, where=args.where,
                             log_y=args.log_y, title=args.title)
    elif args.line:
        done = plot.sweep(first, args.line, args.metric,
                          out or _default(first, f"{args.metric}_vs_{args.line}"),
                          by=args.by, where=args.where, log_y=args.log_y, title=args.title)
    else:
        x, y = args.heatmap
        done = plot.heatmap(first, x, y, args.metric,
                            out or _default(first, f"{args.metric}_{x}_{y}"),
                            policy=args.policy, where=args.where, title=args.title)
    sys.stdout.write(f"{done}\n")
    return 0


def _default(path: Path, name: str) -> Path:
    folder = path if path.is_dir() else path.parent
    return folder / "plots" / f"{name}.png"


def add_commands(sub: Any) -> None:
    """Add ``plot`` to the ``batpolicy`` subcommands."""
    p = sub.add_parser(
        "plot", help="Gantt chart of a run; distributions, sweeps, heatmaps of a campaign",
        description="Draw a run (its folder or jobs.csv) or a campaign (its results folder) "
                    "as PNG or SVG; needs the plot extra (matplotlib).")
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="a run folder / jobs.csv, or a campaign results folder")
    kind = p.add_argument_group("what to draw (one)")
    kind.add_argument("--gantt", action="store_true", help="Gantt chart of one run")
    kind.add_argument("--dist", action="store_true",
                      help="waiting time and bounded slowdown CDFs per policy")
    kind.add_argument("--line", metavar="PARAM", help="a metric against one parameter")
    kind.add_argument("--heatmap", nargs=2, metavar=("X", "Y"),
                      help="a metric over two parameters")
    kind.add_argument("--bars", action="store_true",
                      help="a metric per workload, one bar per policy")
    kind.add_argument("--scatter", nargs=2, metavar=("X", "Y"),
                      help="one point per run, Y against X (e.g. consumed_joules "
                           "mean_bounded_slowdown), a panel per workload; several results "
                           "tables may be given")
    p.add_argument("--by", default="policy", metavar="COLUMN",
                   help="--bars: one bar, --line: one line, --scatter: one curve per value "
                        "of this column (default: policy; e.g. label, or mode for "
                        "param.mode)")
    p.add_argument("--order", metavar="COLUMN",
                   help="--scatter: join each curve's points in the order of this column "
                        "and tag them with its value (e.g. idle_timeout); runs without it "
                        "are drawn as stars")
    p.add_argument("--panel", default="workload", metavar="COLUMN",
                   help="--scatter: one panel per value of this column (default: workload)")
    p.add_argument("--where", action="append", default=[], metavar="COLUMN=V[,V...]",
                   help="--line, --heatmap, --bars, --scatter: only the runs whose COLUMN is "
                        "one of the values, an empty one matching runs without it "
                        "(repeatable; e.g. --where param.lslt=1.0, keeps LSLT 1.0 and the runs "
                        "without LSLT)")
    p.add_argument("--log-y", action="store_true",
                   help="--line, --scatter: logarithmic y axis")
    p.add_argument("--title", help="--line, --heatmap, --scatter: the figure's title")
    p.add_argument("--baseline", metavar="POLICY",
                   help="--bars: plot the change in %% against this policy")
    p.add_argument("--metric", help="results.csv column, e.g. mean_bounded_slowdown")
    p.add_argument("--policy", help="heatmap: only this policy's runs")
    p.add_argument("--platform", metavar="XML", help="gantt: draw this platform's groups")
    p.add_argument("--tau", type=float, default=10.0, help="--dist: bounded slowdown tau")
    p.add_argument("-o", "--output", metavar="FILE.png|svg",
                   help="default: PATH/plots/<what>.png")
    p.set_defaults(run=_plot)
