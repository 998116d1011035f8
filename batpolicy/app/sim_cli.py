"""``batpolicy simulate`` and ``batpolicy fake-batsim``: the embedded simulator's commands.

Both take Batsim's inputs and flags (``-p``, ``-w``, ``--events``, ``-e``,
``--enable-dynamic-jobs``...) and write Batsim's outputs plus ``metrics.json``:

- ``simulate`` runs a policy of ours in-process (same Dispatcher, state and checker as
  the daemon);
- ``fake-batsim`` stands in for Batsim on a ZeroMQ REQ socket, so ``batpolicy serve`` or
  any other Batsim scheduler (pybatsim, batsched) runs without Batsim installed.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from batpolicy.app.io_cli import (
    add_reader_options,
    add_transform_options,
    parse_status,
    transform_spec,
)
from batpolicy.errors import ConfigError

if TYPE_CHECKING:  # imported where used: `batpolicy --help` must not load the simulator
    from batpolicy.io.inputs import InputSpec
    from batpolicy.io.outputs import OutputPaths
    from batpolicy.protocol import types as t
    from batpolicy.scheduler.state import ClusterState
    from batpolicy.simulator.engine.simulator import Simulator
    from batpolicy.simulator.options import SimOptions

__all__ = ["add_commands"]

log = logging.getLogger(__name__)


def _add_inputs(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("inputs (none: the bundled 250-job workload on 128 machines)")
    g.add_argument("-w", "--workload", action="append", default=[], metavar="FILE",
                   help="Batsim JSON workload or SWF trace (.swf, .swf.gz); repeatable, "
                        "named w0, w1, ... in order")
    g.add_argument("-p", "--platform", metavar="XML", help="SimGrid/Batsim platform file")
    g.add_argument("--nb-res", type=int, metavar="N",
                   help="N identical machines instead of a platform file (default for SWF: "
                        "the header's MaxProcs, else MaxNodes)")
    g.add_argument("--events", action="append", default=[], metavar="FILE",
                   help="Batsim external events file (machine_unavailable/available, ...)")
    add_reader_options(g)
    g.add_argument("--extra-machines", type=float, metavar="F",
                   help="grow a platform of N identical machines (--nb-res or the SWF "
                        "header) to N + ceil(F*N), e.g. the alpha of Faure et al. 2020 §IV-B")
    add_transform_options(p.add_argument_group("workload transforms (after the selection)"))


def _add_batsim_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("Batsim flags")
    g.add_argument("--enable-dynamic-jobs", action="store_true",
                   help="let the scheduler register jobs and profiles while it runs")
    g.add_argument("--acknowledge-dynamic-jobs", action="store_true",
                   help="answer each job the scheduler registers with a JOB_SUBMITTED")
    g.add_argument("--enable-profile-reuse", action="store_true",
                   help="let registered jobs use the profiles of other jobs (kept, not "
                        "collected when their job ends)")
    g.add_argument("--enable-compute-sharing", action="store_true",
                   help="let jobs share machines (their tasks then share the CPUs, as "
                        "SimGrid's parallel tasks)")
    g.add_argument("--forward-profiles-on-submission", action="store_true",
                   help="send each job's profile with its JOB_SUBMITTED")
    g.add_argument("--forward-unknown-events", action="store_true",
                   help="send --events entries of types Batsim does not know to the "
                        "scheduler")
    g.add_argument("-E", "--energy", action="store_true",
                   help="model energy as Batsim's -E: power states from the platform's "
                        "wattage_per_state, wattage_off and sleep_pstates properties, "
                        "SET_RESOURCE_STATE and QUERY consumed_energy accepted; writes "
                        "consumed_energy.csv and pstate_changes.csv")
    g.add_argument("--mmax", type=int, metavar="N", help="use the first N machines only")
    g.add_argument("--sched-cfg", default="", metavar="TEXT",
                   help="forwarded to the scheduler in SIMULATION_BEGINS")
    g.add_argument("--zero-latency", action="store_true",
                   help="Batsim's messages take no time and dates are exact closed forms "
                        "(by default Batsim's message timing is modelled on a platform with "
                        "latencies and for Batsim's job model: a JSON workload or compute "
                        "sharing)")
    g.add_argument("--job-model", action="append", default=[], metavar="[WORKLOAD=]MODEL",
                   help="a job model (batpolicy's names: profile, speed, placement, and the "
                        "co-allocation ones). profile: Batsim's profiles "
                        "(default); speed: work done at the slowest allocated machine's "
                        "speed (delays are seconds at 1 Gflop/s); placement: the profile's "
                        "delay on the job's preferred placement, its runtime_other field "
                        "elsewhere; bandwidth: co-allocated jobs slow down as cluster uplinks "
                        "saturate (Jones et al. 2005, §3); fixed-penalty[:F]: co-allocated "
                        "jobs run F times longer; ideal: co-allocation costs nothing. "
                        "WORKLOAD=MODEL (e.g. w1=speed) for one workload; a "
                        "job's job_model field overrides both")


def _add_outputs(p: argparse.ArgumentParser, *, batsim_defaults: bool = False) -> None:
    g = p.add_argument_group("outputs")
    g.add_argument("-o", "--output-dir", default="out", metavar="DIR",
                   help="write jobs.csv, schedule.csv and metrics.json here (default: out)")
    g.add_argument("-e", "--export", metavar="PREFIX",
                   help="Batsim's naming instead: PREFIX_jobs.csv, PREFIX_schedule.csv, "
                        "PREFIX_metrics.json")
    _add_output_switches(g, batsim_defaults=batsim_defaults)
    g.add_argument("--bsld-tau", type=float, default=10.0, metavar="S",
                   help="bounded slowdown threshold tau (default: 10 s)")
    g.add_argument("--record", metavar="FILE",
                   help="write the conversation as a msgpack transcript")
    g.add_argument("--no-progress", action="store_true", help="no progress bar or lines")
    g.add_argument("-q", "--quiet", action="store_true",
                   help="no progress and no summary: only warnings and errors on stderr")


def _add_output_switches(g: Any, *, batsim_defaults: bool) -> None:
    """One switch per optional output of the registry (:mod:`batpolicy.simulator.outputs`).

    ``--NAME`` writes it; with ``batsim_defaults`` (fake-batsim), an output Batsim writes
    unless told not to is on by default and Batsim's flag turns it off.
    """
    from batpolicy.simulator.outputs.registry import registered_outputs

    for name, output in registered_outputs().items():
        where = ", ".join(f"PREFIX_{f}" for f in output.files)
        if batsim_defaults and output.batsim_disable_flag:
            g.add_argument(output.batsim_disable_flag, dest=name, action="store_false",
                           help=f"do not write {where} (written by default, as Batsim does)")
        else:
            g.add_argument(f"--{name.replace('_', '-')}", dest=name, action="store_true",
                           help=output.help)


def _input_spec(args: argparse.Namespace) -> InputSpec:
    from batpolicy.io.inputs import InputSpec

    status = parse_status(args.status)
    return InputSpec(workloads=tuple(args.workload), platform=args.platform,
                     nb_res=args.nb_res, events=tuple(args.events), lenient=args.lenient,
                     max_jobs=args.max_jobs, start=args.start, end=args.end,
                     status_filter=status, transform=transform_spec(args), size=args.size,
                     extra_machines=args.extra_machines, stream=True)


def _sim_options(args: argparse.Namespace, *, dynamic: bool = False) -> SimOptions:
    from batpolicy.simulator.options import SimOptions

    return SimOptions(dynamic_jobs=args.enable_dynamic_jobs or dynamic,
                      acknowledge_dynamic_jobs=args.acknowledge_dynamic_jobs,
                      profile_reuse=args.enable_profile_reuse,
                      compute_sharing=args.enable_compute_sharing,
                      forward_profiles=args.forward_profiles_on_submission,
                      forward_unknown_events=args.forward_unknown_events,
                      mmax=args.mmax, sched_config=args.sched_cfg, energy=args.energy,
                      **_job_models(args.job_model))


def _job_models(specs: list[str]) -> dict[str, Any]:
    """``--job-model`` values as SimOptions fields: the default and per-workload models.

    >>> _job_models(["speed", "w1=placement"])
    {'default_job_model': 'speed', 'job_models': {'w1': 'placement'}}
    """
    from batpolicy.simulator.jobmodels.registry import make_job_model

    default, per_workload = "profile", {}
    for spec in specs:
        workload, sep, name = spec.rpartition("=")
        try:
            make_job_model(name)
        except ConfigError as exc:
            raise ConfigError(f"--job-model {spec!r}: {exc}") from None
        if sep:
            per_workload[workload] = name
        else:
            default = name
    return {"default_job_model": default, "job_models": per_workload}


def _paths(args: argparse.Namespace) -> OutputPaths:
    from batpolicy.io.outputs import OutputPaths
    from batpolicy.simulator.outputs.registry import output_files, registered_outputs

    files = output_files(name for name in registered_outputs() if getattr(args, name, False))
    return OutputPaths.with_prefix(args.export, files=files) if args.export else \
        OutputPaths.in_dir(args.output_dir, files=files)


def _run(args: argparse.Namespace, scheduler: Callable[[t.Request], t.Reply],
         options: SimOptions, describe: dict[str, Any], state: ClusterState | None = None,
         **hooks: Any) -> int:
    from batpolicy.io.inputs import load_inputs
    from batpolicy.provenance import utc_now
    from batpolicy.simulator.latency.driver import make_simulator
    from batpolicy.simulator.run import output_layout, run_simulation

    if not args.bsld_tau > 0:  # max(run, tau) divides: a zero-length job would give 0/0
        raise ConfigError(f"--bsld-tau must be > 0 s, got {args.bsld_tau}")
    started_at = utc_now()
    # fake-batsim with dynamic jobs: the scheduler may register every job itself
    workloads, platform, events = load_inputs(
        _input_spec(args), allow_empty=args.enable_dynamic_jobs and "policy" not in describe)
    if state is not None:  # what Batsim does not forward (e.g. speeds), from the file
        state.platform_file = platform
    nb_jobs = sum(len(w.jobs) for w in workloads)
    extra, groups = output_layout(workloads, platform, options)
    hint = hooks.pop("end_hint", None)
    describe = {**describe, "workloads": [w.source for w in workloads],
                "inputs_skipped": {w.name: dict(sorted(w.skipped.items())) for w in workloads},
                "platform": platform.source or f"{platform.nb_machines} identical machines",
                "provenance": _provenance(args, workloads, platform, describe, started_at)}
    paths = _paths(args)
    # handed over to the simulator, which drops the jobs it submitted: nothing else
    # holds a long trace's jobs
    held = [workloads]
    del workloads

    def simulator(on_record: Callable[[Any], None]) -> Simulator:
        """The run's simulator; with ``end_hint``, moved ends reach the policy's state."""
        sim = make_simulator(held.pop(), platform, events=events, options=options,
                             on_record=on_record, zero_latency=args.zero_latency)
        if hint is not None:
            sim.set_end_hint(hint)
        return sim

    report = run_simulation(
        simulator, scheduler, paths, nb_jobs=nb_jobs, tau=args.bsld_tau,
        extra_columns=extra, groups=groups,
        record=Path(args.record) if args.record else None,
        progress=not (args.no_progress or args.quiet),
        describe=describe, **hooks)
    _warn_rejected(report.metrics, describe)
    if not args.quiet:
        _print_summary(report.metrics)
    written = [*paths.files(energy=options.energy), *([args.record] if args.record else [])]
    log.info("outputs: %s", ", ".join(map(str, written)))
    return 0


#: The options of the workload selection and transforms a run records in its provenance.
_SELECTION = ("nb_res", "max_jobs", "start", "end", "status", "size", "lenient",
              "extra_machines", "load", "weeks", "min_util", "week_index", "sample",
              "sample_jobs", "exact_walltime", "mmax", "job_model", "zero_latency")


def _provenance(args: argparse.Namespace, workloads: list[Any], platform: Any,
                describe: dict[str, Any], started_at: str) -> dict[str, Any]:
    """``metrics.json``'s ``provenance``: code, command line, input files, options, seeds."""
    from batpolicy.provenance import provenance

    inputs = [(w.name, w.source) for w in workloads if w.source and Path(w.source).is_file()]
    if platform.source:
        inputs.append(("platform", platform.source))
    inputs += [("events", path) for path in args.events]
    seeds = {f"param.{k}": v for k, v in describe.get("params", {}).items() if "seed" in k}
    if args.sample is not None or args.sample_jobs is not None:
        seeds["sample_seed"] = args.sample_seed
    return provenance(argv=getattr(args, "argv", None), inputs=inputs, started_at=started_at,
                      options={k: getattr(args, k, None) for k in _SELECTION}, seeds=seeds)


def _warn_rejected(metrics: dict[str, Any], describe: dict[str, Any]) -> None:
    """One warning when jobs were rejected: how many, why, and what would run them."""
    reasons = metrics.get("rejected_by_reason") or {}
    if not reasons:
        return
    total = sum(reasons.values())
    policy = describe.get("policy")
    who = f"policy '{policy}'" if policy else "the scheduler"
    hints = {
        "no_walltime": "without a walltime (" + (
            "--param no_walltime=run runs them, " if "no_walltime" in describe.get("params", {})
            else "") + ("a policy that needs none, e.g. --policy fcfs, or " if policy
                        else "") + "--exact-walltime sets walltime = run time)",
        "no_machine": "asking for 0 machines (fix the workload's res)",
        "too_large": "larger than the platform (a larger platform, or --lenient drops them)",
        "policy": "by the policy's own rules (see its parameters: batpolicy policies)",
    }
    why = "; ".join(f"{n} {hints[reason]}" for reason, n in reasons.items())
    log.warning("%s rejected %d of %d jobs: %s", who, total, metrics.get("nb_jobs", total), why)


#: The metrics summary printed on stdout at the end of a run: (key, label, format).
SUMMARY = (("nb_jobs", "jobs", "{:d}"), ("nb_jobs_success", "succeeded", "{:d}"),
           ("nb_jobs_killed", "killed", "{:d}"), ("nb_jobs_rejected", "rejected", "{:d}"),
           ("makespan", "makespan (s)", "{:.1f}"),
           ("mean_waiting_time", "mean waiting time (s)", "{:.1f}"),
           ("mean_turnaround_time", "mean turnaround (s)", "{:.1f}"),
           ("mean_bounded_slowdown", "mean bounded slowdown", "{:.3f}"),
           ("max_bounded_slowdown", "max bounded slowdown", "{:.3f}"),
           ("utilization", "utilisation", "{:.3f}"),
           ("wall_time_s", "wall time (s)", "{:.2f}"),
           ("jobs_per_second", "jobs per second", "{:.0f}"))


def _print_summary(metrics: dict[str, Any]) -> None:
    """The run's main figures as a two-column table on stdout (the command's output).

    Rejected jobs stand out; with no job run, the means and maxima over the jobs that
    ran read "no job ran" instead of zeros that would look like results.
    """
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{metrics.get('policy', 'scheduler')}: metrics summary",
                  show_header=False)
    table.add_column(style="bold")
    table.add_column(justify="right")
    none_ran = metrics.get("nb_jobs_finished") == 0
    for key, label, fmt in SUMMARY:
        value = metrics.get(key)
        if value is None:
            continue
        if none_ran and key.startswith(("mean_", "max_")):
            table.add_row(label, "no job ran")
        elif key == "nb_jobs_rejected" and value:
            table.add_row(label, f"{value:d}", style="bold yellow")
        else:
            table.add_row(label, fmt.format(value))
    Console(highlight=False).print(table)


def _simulate(args: argparse.Namespace) -> int:
    from batpolicy.policies.registry import make_policy, parse_params
    from batpolicy.scheduler.dispatch import Dispatcher
    from batpolicy.simulator.pybatsim.loader import is_pybatsim

    if is_pybatsim(args.policy):  # an unmodified pybatsim scheduler, in-process
        from batpolicy.app.pybatsim_cli import simulate_pybatsim

        return simulate_pybatsim(args, _run, _sim_options)
    policy = make_policy(args.policy, parse_params(args.param))
    if policy.needs_energy and not args.energy:  # else Batsim's refusal at the first switch
        raise ConfigError(f"policy '{args.policy}' switches machines off and on: it needs "
                          "the energy model, -E/--energy, and a platform with power states "
                          "(batpolicy platform multicluster|racks ... --power writes one)")
    dynamic = policy.needs_dynamic_jobs
    if dynamic and not args.enable_dynamic_jobs:
        log.info("policy '%s' registers jobs: simulating with --enable-dynamic-jobs",
                 args.policy)
    dispatcher = Dispatcher(policy, paranoid=args.paranoid)
    # the simulator's planned ends reach the policy's state through its dispatcher
    hint = dispatcher.move_expected_end if args.expected_ends == "model" else None
    return _run(args, dispatcher.handle, _sim_options(args, dynamic=dynamic),
                {"policy": args.policy, "params": dict(policy.params),
                 "job_model": args.job_model or ["profile"],
                 "expected_ends": args.expected_ends}, dispatcher.state,
                policy_stats=policy.stats, nb_decisions=lambda: dispatcher.nb_decisions,
                end_hint=hint)


class _SocketScheduler:
    """The scheduler at the other end of a REQ socket: encode, send, wait, decode.

    The reply's times are read from its text as Batsim reads them
    (:func:`~batpolicy.simulator.json_quirks.batsim_reads_text`).
    """

    def __init__(self, endpoint: str, timeout_s: float | None, max_message_bytes: int,
                 heartbeat_s: float | None) -> None:
        from batpolicy.protocol.codec import decode_reply, encode_request
        from batpolicy.protocol.transport import RequestSocket
        from batpolicy.simulator.json_quirks import batsim_reads_text

        self.socket = RequestSocket(endpoint, timeout_s=timeout_s,
                                    max_message_bytes=max_message_bytes,
                                    heartbeat_s=heartbeat_s).open()
        self._encode, self._decode = encode_request, decode_reply
        self._read = batsim_reads_text

    def __call__(self, request: t.Request) -> t.Reply:
        data = self.socket.request(self._encode(request))
        return self._read(self._decode(data), data)

    def close(self) -> None:
        """Close the socket."""
        self.socket.close()


def _fake_batsim(args: argparse.Namespace) -> int:
    if args.platform:  # Batsim aborts on a platform without a master host; so do we
        from batpolicy.platforms.xml import require_master
        require_master(args.platform)
    scheduler: Any
    if args.batsim == "5":  # batprotocol: the EDC's hello sets the dynamic-job flags
        from batpolicy.protocol.batprotocol.peer import Batsim5Peer

        scheduler = Batsim5Peer(args.socket_endpoint, args.timeout)
    else:
        scheduler = _SocketScheduler(args.socket_endpoint, args.timeout, args.max_message_size,
                                     args.heartbeat)
    log.info("fake-batsim: connecting to the scheduler at %s", args.socket_endpoint)
    try:
        if args.batsim == "5":
            for flag, wanted in scheduler.open().batsim4_flags().items():
                setattr(args, flag, getattr(args, flag) or wanted)
        return _run(args, scheduler, _sim_options(args),
                    {"scheduler": f"external at {args.socket_endpoint}"})
    finally:
        scheduler.close()


def add_commands(sub: Any, add_policy_options: Callable[[argparse.ArgumentParser], None]) -> None:
    """Add ``simulate`` and ``fake-batsim`` to the ``batpolicy`` subcommands."""
    simulate = sub.add_parser(
        "simulate", help="run a policy on a workload without Batsim",
        description="Simulate a workload with one of our policies in-process, as Batsim "
                    "4.2.1 would (with its message latencies if the platform has some); "
                    "write Batsim's jobs.csv and schedule.csv and a metrics.json.")
    add_policy_options(simulate)
    _add_inputs(simulate)
    _add_batsim_flags(simulate)
    simulate.add_argument(
        "--expected-ends", choices=("walltime", "model"), default="walltime",
        help="what the policy plans with: walltime (start + walltime, all a Batsim "
             "scheduler knows; default) or model (the end the job model and any instant "
             "model planned, capped by the walltime: a hint Batsim never gives)")
    _add_outputs(simulate)
    simulate.set_defaults(run=_simulate)

    fake = sub.add_parser(
        "fake-batsim", help="stand in for Batsim on the socket (no Batsim needed)",
        description="Play Batsim 4.2.1 over ZeroMQ for any Batsim scheduler (batpolicy "
                    "serve, pybatsim, batsched): connect, simulate, write Batsim's outputs.")
    _add_inputs(fake)
    _add_batsim_flags(fake)
    _add_outputs(fake, batsim_defaults=True)
    fake.add_argument("-s", "--socket-endpoint", default="tcp://localhost:28000",
                      help="the scheduler's endpoint (default: tcp://localhost:28000)")
    fake.add_argument("--timeout", type=float, default=None, metavar="S",
                      help="exit non-zero if the scheduler does not answer within S seconds")
    fake.add_argument("--batsim", choices=("4", "5"), default="4",
                      help="protocol to play: Batsim 4.2's JSON (default) or Batsim 5's "
                      "batprotocol in FlatBuffers JSON (initialisation and hellos first)")
    from batpolicy.app.transport_cli import add_transport_options

    add_transport_options(fake, "scheduler")
    fake.set_defaults(run=_fake_batsim)
