"""``batpolicy workload``: make workloads (``synth``), list presets, transform any workload.

::

    batpolicy workload synth --preset uniform --seed 7 --param nb_jobs=500 -o w.json
    batpolicy workload presets
    batpolicy workload transform KTH.swf.gz --load 1.5 --weeks 3 --min-util 0.7 -o w.json

Both write a Batsim JSON workload (jobs and profiles; Batsim 4.2.1 reads it with ``-w``).
The transform options (:func:`add_transform_options`) are also ``batpolicy simulate``
options, so a run can transform its input without an intermediate file. Every user error
is one line naming the option or file (a :class:`~batpolicy.errors.BatpolicyError`).
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import TYPE_CHECKING, Any

from batpolicy.errors import ConfigError

if TYPE_CHECKING:  # imported where used: building the parser (every command) loads none
    from batpolicy.io.transform import TransformSpec
    from batpolicy.io.workload import Workload

__all__ = ["SIZES", "add_commands", "add_transform_options", "transform_spec"]

log = logging.getLogger(__name__)

#: The SWF reader's ``size`` choices (:data:`~batpolicy.io.swf.SIZE_FIELDS`,
#: not imported here so that building the parser loads no reader; tests/test_cli.py
#: checks they agree).
SIZES = ("requested", "allocated")


def add_transform_options(g: Any) -> None:
    """The transform options (``--load``, ``--weeks``...) on a parser or argument group."""
    g.add_argument("--load", type=float, metavar="F",
                   help="multiply the load by F: every inter-arrival time divided by F, "
                        "every job kept (applied last)")
    g.add_argument("--weeks", type=int, metavar="N",
                   help="keep a block of N consecutive weeks (168 h each, from the first "
                        "submission) whose utilisation is at least --min-util")
    g.add_argument("--min-util", type=float, default=0.0, metavar="U",
                   help="with --weeks: minimum utilisation of the block, in [0, 1] "
                        "(SWF: in the log's own schedule; default 0)")
    g.add_argument("--week-index", type=int, default=0, metavar="K",
                   help="with --weeks: take the K-th qualifying block (default 0: the first)")
    g.add_argument("--sample", type=float, metavar="FRACTION",
                   help="keep a seeded random FRACTION of the jobs, in (0, 1]")
    g.add_argument("--sample-jobs", type=int, metavar="N", help="keep N jobs drawn at random")
    g.add_argument("--sample-seed", type=int, default=0, metavar="S",
                   help="seed of --sample / --sample-jobs (default 0)")
    g.add_argument("--exact-walltime", action="store_true",
                   help="set every job's walltime to its run time (delay profiles; the "
                        "clairvoyant setting of Faure et al. 2020, §IV-B; applied last)")


def transform_spec(args: argparse.Namespace) -> TransformSpec:
    """The :class:`TransformSpec` of parsed transform options, checked (errors name them)."""
    from batpolicy.io.transform import TransformSpec

    spec = TransformSpec(load=args.load, weeks=args.weeks, min_util=args.min_util,
                         week_index=args.week_index, sample=args.sample,
                         sample_jobs=args.sample_jobs, seed=args.sample_seed,
                         exact_walltime=args.exact_walltime)
    spec.check()
    return spec


def parse_status(text: str | None) -> frozenset[int] | None:
    """``--status``'s SWF status codes (``"0,1"``), or None: keep every status.

    >>> sorted(parse_status("0,1")), parse_status(None)
    ([0, 1], None)
    """
    if not text:
        return None
    try:
        return frozenset(int(s) for s in text.split(","))
    except ValueError:
        raise ConfigError(f"--status wants comma-separated integers, got {text!r}") from None


def add_reader_options(group: Any) -> None:
    """The workload readers' options, declared once for every command that reads a workload.

    The selection (``--max-jobs``, ``--start``, ``--end``) and the SWF reader's ``--status``,
    ``--size`` and ``--lenient``: ``simulate``, ``fake-batsim`` and ``workload transform``
    take them with the same meaning and help.
    """
    group.add_argument("--max-jobs", type=int, metavar="N", help="keep the first N jobs")
    group.add_argument("--start", type=float, metavar="S",
                       help="keep jobs submitted at or after S s (SWF: counted from the "
                            "trace's first submission, the kept jobs then start at 0)")
    group.add_argument("--end", type=float, metavar="S",
                       help="keep jobs submitted before S s (counted as --start)")
    group.add_argument("--status", metavar="LIST",
                       help="SWF: keep only jobs of these status codes, e.g. 1 or 0,1")
    group.add_argument("--size", choices=SIZES, default=SIZES[0],
                       help="SWF: a job's size is its requested processors (field 8, else the "
                            "allocated ones) or its allocated ones (field 5, else requested)")
    group.add_argument("--lenient", action="store_true",
                       help="skip (and count) broken workload lines instead of stopping (a run "
                            "also skips jobs wider than the platform)")


def _read(args: argparse.Namespace, spec: TransformSpec) -> Workload:
    """The input workload of ``transform``, read by its format's reader."""
    from batpolicy.io import read_batsim_workload, read_swf, workload_format

    if workload_format(args.input) == "swf":
        return read_swf(args.input, args.name, lenient=args.lenient, size=args.size,
                        status_filter=parse_status(args.status), keep_wait=spec.weeks is not None)
    if args.status or args.size != SIZES[0]:
        raise ConfigError("--status and --size apply to SWF traces only, "
                          f"not to {args.input}")
    return read_batsim_workload(args.input, args.name, lenient=args.lenient)


def _transform(args: argparse.Namespace) -> int:
    from batpolicy.io.batsim_json import write_batsim_workload
    from batpolicy.io.transform import apply, head, time_window

    spec = transform_spec(args)
    if args.max_jobs is not None and args.max_jobs < 0:
        raise ConfigError(f"--max-jobs must be >= 0, got {args.max_jobs}")
    if args.nb_res is not None and args.nb_res < 1:
        raise ConfigError(f"--nb-res must be >= 1, got {args.nb_res}")
    log.info("reading %s", args.input)
    workload = _read(args, spec)
    if args.nb_res is not None:
        workload.nb_res = args.nb_res
    if args.start is not None or args.end is not None:
        workload = time_window(workload, args.start, args.end)
    if args.max_jobs is not None:
        workload = head(workload, args.max_jobs)
    before = len(workload.jobs)
    workload = apply(workload, spec)
    write_batsim_workload(workload, args.output)
    log.info("wrote %s: %d of %d jobs, %d profiles, nb_res %s", args.output,
             len(workload.jobs), before, len(workload.profiles), workload.nb_res)
    return 0


def _synth(args: argparse.Namespace) -> int:
    from batpolicy.io.batsim_json import write_batsim_workload
    from batpolicy.io.presets import build_workload, parse_overrides, preset

    spec = preset(args.preset, **parse_overrides(args.preset, args.param))
    workload = build_workload(spec, args.seed)
    write_batsim_workload(workload, args.output)
    groups = getattr(spec, "groups", ())
    streams = f" in {len(groups)} streams of " + ", ".join(str(g.nb_jobs) for g in groups) \
        + " (the preset's job count is per stream)" if len(groups) > 1 else ""
    log.info("wrote %s: %d jobs%s, %d profiles, nb_res %s (preset %s, seed %d)", args.output,
             len(workload.jobs), streams, len(workload.profiles), workload.nb_res,
             args.preset, args.seed)
    return 0


def _presets(args: argparse.Namespace) -> int:
    from batpolicy.io.presets import PRESETS

    for name in sorted(PRESETS):
        entry = PRESETS[name]
        sys.stdout.write(f"{name}\n    {entry.summary}\n")
        for key, default in entry.parameters.items():
            sys.stdout.write(f"    --param {key}=VALUE  (default: {default})\n")
    return 0


def add_commands(sub: Any) -> None:
    """Add ``workload`` (``synth``, ``presets``, ``transform``) to the subcommands."""
    workload = sub.add_parser("workload", help="generate or transform workloads",
                              description="Generate synthetic workloads and transform "
                                          "existing ones (SWF or Batsim JSON) into Batsim "
                                          "JSON workloads.")
    commands = workload.add_subparsers(dest="workload_command", metavar="SUBCOMMAND")

    synth = commands.add_parser("synth", help="a seeded synthetic workload from a preset",
                                description="Generate a synthetic workload: the same preset, "
                                            "parameters and seed give the same bytes.")
    # no `choices`: the names would load the generators for every command; preset()
    # refuses an unknown name with the list of presets
    synth.add_argument("--preset", required=True, metavar="NAME",
                       help="a preset's name (see `batpolicy workload presets`)")
    synth.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    synth.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                       help="preset parameter, repeatable")
    synth.add_argument("-o", "--output", required=True, metavar="FILE",
                       help="Batsim JSON workload to write")
    synth.set_defaults(run=_synth)

    presets = commands.add_parser("presets", help="list presets and their parameters")
    presets.set_defaults(run=_presets)

    transform = commands.add_parser(
        "transform", help="transform a workload (load, weeks, sample, window)",
        description="Read an SWF trace or a Batsim JSON workload, apply the transforms "
                    "(window and --max-jobs first, then weeks, sample, load) and write a "
                    "Batsim JSON workload whose first job is submitted at 0.")
    transform.add_argument("input", metavar="WORKLOAD",
                           help="SWF trace (.swf, .swf.gz) or Batsim JSON workload")
    transform.add_argument("-o", "--output", required=True, metavar="FILE",
                           help="Batsim JSON workload to write")
    transform.add_argument("--name", default="w0", help="workload name (default w0)")
    transform.add_argument("--nb-res", type=int, metavar="N",
                           help="platform size written as nb_res (and used by --weeks)")
    add_reader_options(transform)
    add_transform_options(transform)
    transform.set_defaults(run=_transform)

    workload.set_defaults(run=lambda args: _usage(workload))


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2
