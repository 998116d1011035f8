"""``batpolicy campaign FILE.toml``: run a campaign locally or on a Dask cluster."""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any

from batpolicy.errors import ConfigError

log = logging.getLogger(__name__)


def _campaign(args: argparse.Namespace) -> int:
    from batpolicy.app.campaign.checks import validate
    from batpolicy.app.campaign.executors import make_executor
    from batpolicy.app.campaign.runner import pending, prepare_output, run_campaign
    from batpolicy.app.campaign.spec import load_campaign
    from batpolicy.policies.registry import available_policies
    from batpolicy.scheduler.stop_signals import Stopped
    from batpolicy.simulator.pybatsim.loader import is_pybatsim

    campaign = load_campaign(args.file, args.output)
    policies = available_policies()
    unknown = sorted({s.policy for s in campaign.runs if not is_pybatsim(s.policy)}
                     - set(policies))
    if unknown:
        raise ConfigError(f"{args.file}: unknown policy {', '.join(unknown)} "
                          f"(known: {', '.join(sorted(policies))})")
    prepare_output(campaign.output, create=not args.dry_run)  # before checking every input
    validate(campaign)  # every run's inputs, before the first run
    todo = pending(campaign, force=args.force)
    if args.dry_run:
        for spec in campaign.runs:
            state = "todo" if spec in todo else "done"
            sys.stdout.write(f"{spec.run_id}  {state}  {spec.policy}  "
                             f"{dict(spec.params)}  {[*spec.workloads]}  seed={spec.seed}\n")
        sys.stdout.write(f"{len(campaign.runs)} runs, {len(todo)} to do, output "
                         f"{campaign.output}\n")
        return 0
    log.info("campaign '%s': %d runs (%d to do) -> %s", campaign.name, len(campaign.runs),
             len(todo), campaign.output)
    try:
        report = run_campaign(campaign, make_executor(args.dask, args.workers),
                              progress=not args.no_progress, force=args.force)
    except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM: one line, the table is written
        finished = len(campaign.runs) - len(pending(campaign))
        signal = f" ({exc.signal_name})" if isinstance(exc, Stopped) else ""
        log.error("campaign interrupted%s: %d of %d runs finished, in %s; the same command "
                  "runs the rest", signal, finished, len(campaign.runs),
                  campaign.output / "results.csv")
        return 130
    sys.stdout.write(f"{report.total} runs: {report.skipped} already done, {report.ran} run "
                     f"now, {report.failed} failed; table: {report.table}\n")
    return 1 if report.failed else 0


def add_commands(sub: Any) -> None:
    """Add ``campaign`` to the ``batpolicy`` subcommands."""
    p = sub.add_parser(
        "campaign", help="run a grid of simulations (process pool or Dask cluster)",
        description="Run every simulation of a campaign file (policies x parameters x "
                    "workloads x seeds) in the embedded simulator, skipping runs finished with "
                    "the policy's current code, and write one results table (results.csv). "
                    "Every run's inputs are checked before the first run.")
    p.add_argument("file", metavar="FILE.toml", help="the campaign file")
    p.add_argument("--dask", metavar="ADDRESS",
                   help="run on an existing Dask cluster (e.g. tcp://sched:8786) instead of "
                        "a local process pool")
    p.add_argument("-j", "--workers", type=int, metavar="N",
                   help="local processes (default: every core)")
    p.add_argument("-o", "--output-dir", "--output", dest="output", metavar="DIR",
                   help="results folder (default: the file's [campaign] output, else "
                        "./campaign-results/<name> under the current folder)")
    p.add_argument("--dry-run", action="store_true", help="list the runs, run nothing")
    p.add_argument("--force", action="store_true",
                   help="rerun every run, finished ones included (by default a finished "
                        "run is rerun only when its policy's code changed)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar or lines")
    p.set_defaults(run=_campaign)
