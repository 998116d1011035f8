"""The ``batpolicy`` command line: serve, policies, simulate, fake-batsim, platform.

``simulate`` and ``fake-batsim`` are defined in :mod:`.sim_cli`, ``platform`` in
:mod:`.platforms_cli`, the workload tools in :mod:`.io_cli`, ``plot`` in :mod:`.plot_cli`,
``campaign`` in :mod:`.campaign.cli`.

Every user error ends as one line on stderr and a non-zero status, never a traceback.
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from batpolicy import __version__
from batpolicy.errors import BatpolicyError, ConfigError, PeerTimeout
from batpolicy.policies.registry import POLICIES, available_policies, make_policy, parse_params
from batpolicy.scheduler.stop_signals import Stopped, stop_on_signals
from batpolicy.transport_defaults import DEFAULT_BIND

log = logging.getLogger("batpolicy")

Command = Callable[[argparse.Namespace], int]


def add_policy_options(parser: argparse.ArgumentParser, default: str = "easy") -> None:
    """``--policy NAME`` and repeatable ``--param KEY=VALUE``, fed by the registry."""
    # Plug-ins are looked up only when a name is not one of ours (make_policy): scanning
    # the installed packages' entry points costs ~0.1 s that --help and --version skip.
    parser.add_argument("--policy", default=default, metavar="NAME",
                        help=f"policy to run (default: {default}); one of: "
                        + ", ".join(sorted(POLICIES)) + ", or a plug-in's (batpolicy policies)")
    parser.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                        help="policy parameter, repeatable (see `batpolicy policies`)")
    parser.add_argument("--paranoid", action="store_true",
                        help="check every state invariant after every message (slower)")


def _serve(args: argparse.Namespace) -> int:
    from batpolicy.scheduler.daemon import ServeOptions, serve
    from batpolicy.scheduler.dispatch import Dispatcher
    from batpolicy.scheduler.state import ClusterState

    if args.policy.startswith("pybatsim:"):  # not a policy of ours: say where it runs
        raise ConfigError(f"--policy {args.policy}: a pybatsim scheduler runs in-process "
                          f"with `batpolicy simulate --policy {args.policy}`, and beside Batsim "
                          "(or batpolicy fake-batsim) under pybatsim's own command `pybatsim "
                          f"{args.policy.removeprefix('pybatsim:')}`; serve runs batpolicy's "
                          "policies (docs/pybatsim.md)")
    policy = make_policy(args.policy, parse_params(args.param))
    platform = None
    if args.platform:  # the XML reader only when asked: serve's start-up is Batsim's wait
        from batpolicy.platforms.xml import read_platform

        platform = read_platform(args.platform)
    state = ClusterState(platform)
    options = ServeOptions(endpoint=args.socket_endpoint, timeout_s=args.timeout,
                           record=Path(args.record) if args.record else None,
                           max_message_bytes=args.max_message_size,
                           heartbeat_s=args.heartbeat,
                           wire=_wire(args))
    return serve(Dispatcher(policy, state, paranoid=args.paranoid), options)


def _wire(args: argparse.Namespace) -> object:
    """The wire format of ``--batsim`` (Batsim 5's hello names us and the policy)."""
    from batpolicy.protocol.wires import make_wire

    return make_wire(args.batsim, name=f"batpolicy {args.policy}", version=__version__,
                     features=tuple(args.edc_feature))


def _policies(args: argparse.Namespace) -> int:
    policies = available_policies()
    for name in sorted(policies):
        cls = policies[name]
        summary = (cls.__doc__ or "").strip().splitlines()[0] if cls.__doc__ else ""
        sys.stdout.write(f"{name}\n    {summary}\n")
        for p in cls.parameters:
            sys.stdout.write(f"    --param {p.describe()}\n")
    return 0


class _Version(argparse.Action):
    """``--version``: batpolicy's version and the interpreter's build (which sets its speed)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> None:
        from batpolicy.interpreter import describe

        sys.stdout.write(f"batpolicy {__version__} on {describe()}\n")
        parser.exit()


def build_parser(*, only_serve: bool = False) -> argparse.ArgumentParser:
    """The argument parser of every subcommand (of ``serve`` alone with ``only_serve``).

    ``only_serve`` is for a command line whose first word is ``serve``
    (:func:`_first_is_serve`): the other subcommands' modules (the simulator's, the
    campaign's, the plots') and their options are neither imported nor built, 81 M of the
    daemon's start-up instructions (a sixth of them, 1.6 % of a whole KTH run beside
    Batsim). The ``serve`` parser is the same either way.
    """
    parser = argparse.ArgumentParser(
        prog="batpolicy",
        description="Scheduling policies for the Batsim simulator: a daemon for Batsim "
                    "and an embedded simulator.")
    parser.add_argument("--version", action=_Version, nargs=0,
                        help="show the version and the interpreter running it, and exit")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging")
    parser.add_argument("--log-file", help="also write the log to this file")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    serve = sub.add_parser("serve", help="answer Batsim over ZeroMQ",
                           description="Bind a ZeroMQ REP socket and answer Batsim 4.2 (or "
                                       "Batsim 5 with --batsim 5) until the simulation ends.")
    add_policy_options(serve)
    serve.add_argument("--socket-endpoint", "-s", default=DEFAULT_BIND,
                       help=f"endpoint to bind (default: {DEFAULT_BIND}, this host only, "
                            "where Batsim connects by default; 'tcp://*:28000' listens on "
                            "every interface, e.g. in a container)")
    serve.add_argument("--record", metavar="FILE", help="write the conversation as a msgpack "
                       "transcript (flushed after every message)")
    serve.add_argument("--platform", metavar="FILE", help="the platform file Batsim runs: "
                       "gives policies what Batsim does not forward (speeds, zones, links) "
                       "for files not written by `batpolicy platform`")
    serve.add_argument("--timeout", type=float, default=None, metavar="S",
                       help="exit non-zero if Batsim sends nothing for S seconds")
    serve.add_argument("--batsim", choices=("4", "5", "auto"), default="4",
                       help="protocol: Batsim 4.2's JSON (default), Batsim 5's batprotocol "
                       "(FlatBuffers JSON; give Batsim '--edc-socket-str ENDPOINT 1 \"\"'), "
                       "or told apart by Batsim's first message")
    serve.add_argument("--edc-feature", action="append", default=[], metavar="NAME",
                       help="Batsim 5: a simulation feature to request in the hello "
                       "(dynamic_registration, profile_reuse, acknowledge_dynamic_jobs), "
                       "repeatable; Batsim 4 takes these on its own command line")
    from batpolicy.app.transport_cli import add_transport_options

    add_transport_options(serve, "Batsim")
    serve.set_defaults(run=_serve)
    if only_serve:
        return parser

    policies = sub.add_parser("policies", help="list policies and their parameters")
    policies.set_defaults(run=_policies)

    from batpolicy.app import sim_cli

    sim_cli.add_commands(sub, add_policy_options)
    from batpolicy.app import platforms_cli as platform_cli

    platform_cli.add_command(sub)
    from batpolicy.app.campaign import cli as campaign_cli

    campaign_cli.add_commands(sub)
    from batpolicy.app import plot_cli

    plot_cli.add_commands(sub)
    from batpolicy.app import io_cli as workload_cli

    workload_cli.add_commands(sub)
    return parser


def _first_is_serve(words: Sequence[str]) -> bool:
    """Whether the command line starts with ``serve`` (global options before it build all).

    >>> _first_is_serve(["serve", "--policy", "easy"]), _first_is_serve(["-v", "serve"])
    (True, False)
    """
    return bool(words) and words[0] == "serve"


def _setup_logging(verbose: int, log_file: str | None, quiet: bool = False) -> None:
    # INFO by default (what was run, where the outputs are); -v adds DEBUG, --quiet keeps
    # warnings and errors only. (A single -v used to compute WARNING - 10 = INFO, a no-op.)
    level = logging.DEBUG if verbose else logging.WARNING if quiet else logging.INFO
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_file:
        handlers.append(logging.FileHandler(log_file))
    logging.basicConfig(level=level, format="batpolicy: %(levelname)s: %(message)s",
                        handlers=handlers, force=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``batpolicy`` console script; returns the exit status."""
    words = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(only_serve=_first_is_serve(words))
    args = parser.parse_args(words)
    # as typed, for the provenance a run records
    args.argv = ["batpolicy", *words]
    _setup_logging(args.verbose, args.log_file, quiet=getattr(args, "quiet", False))
    if not getattr(args, "run", None):
        parser.print_help()
        return 2
    try:
        with stop_on_signals():  # SIGINT, SIGTERM, SIGHUP: Stopped, named in the outputs
            return int(args.run(args))
    except PeerTimeout as exc:
        log.error("%s", exc)
        return 3
    except BatpolicyError as exc:
        log.error("%s", exc)
        return 1
    except KeyboardInterrupt as exc:
        log.error("interrupted%s", f" ({exc.signal_name})" if isinstance(exc, Stopped) else "")
        return 130


def console() -> None:
    """The process's entry (the ``batpolicy`` script, ``python -m batpolicy``): main, exit.

    Every output is closed when :func:`main` returns. What the collector still tracks
    then is frozen (:func:`gc.freeze`), so the interpreter's last collection at exit
    skips a finished run's objects: a simulator's events refer back to it, so its whole
    graph (jobs, records, queues) waits for that collection, which walked and freed it
    one object at a time (0.75 s after RICC-2010's first 200,000 jobs) for memory the
    process hands back anyway. Only here, never in :func:`main`: a process that calls
    :func:`main` and goes on (the tests) must keep collecting.

    Before anything imports numpy, ``OPENBLAS_NUM_THREADS`` defaults to 1 (a value the
    user set is kept). numpy's bundled OpenBLAS otherwise starts a thread per core at
    import and spins it: 0.22 s of CPU for the import instead of 0.12 s on this 2-core
    machine, about 1 % of ``serve``'s whole KTH run beside Batsim, and one idle thread
    per core in every campaign worker. Nothing in batpolicy calls BLAS (numpy serves
    element-wise scans and sums only).
    """
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        status = main()
        sys.stdout.flush()
    except BrokenPipeError:  # `batpolicy policies | head`: the reader has gone, say nothing
        # (Python's recipe: stdout to devnull, so that the flush at exit does not raise too)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        status = 1
    gc.freeze()
    raise SystemExit(status)


if __name__ == "__main__":
    console()
