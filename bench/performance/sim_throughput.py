"""Throughput of the embedded simulator on whole PWA traces (issue 3's speed goal).

What ``batpolicy simulate`` does, timed: every SWF trace of the shared traces folder is
read with :func:`batpolicy.io.swf.read_swf` (the platform is
``Platform.homogeneous(workload.nb_res)``, the header's MaxProcs, else MaxNodes, as the
reader reports it), then each policy runs through
``Simulator([workload], platform).run(Dispatcher(make_policy(name)).handle)`` with the
checker on every reply (not ``paranoid``). Reported per trace and policy: jobs, simulated
seconds (the end time), read seconds, simulation wall seconds, and jobs per wall second
of the simulation (and its process CPU time, which stays meaningful when other work
shares the cores). Reading is timed apart: it is the same for every policy and not part
of the simulator's speed.

Goals on a 2-core machine (issue 3): the whole KTH-SP2 trace (28,489 jobs) with EASY in
under 3 s, the whole RICC-2010 trace (447,794 jobs on 8,192 cores) in under 60 s. For
scale: real Batsim 4.2.1 with batsched's C++ ``easy_bf`` takes about 44 s on KTH. Met at
commit 9b2f252 (one run at a time): KTH 1.9 s, RICC 57 s (was 5.2 s, and 41 s for RICC's
first 50,000 jobs alone); see ``bench/results/sim_throughput.txt``.

Usage::

    python bench/performance/sim_throughput.py                       # every trace, easy and fcfs
    python bench/performance/sim_throughput.py --traces KTH RICC --jobs 2
    python bench/performance/sim_throughput.py --max-jobs 10000      # first 10,000 jobs of each

Each (trace, policy) pair runs once in its own worker process (``--jobs`` workers; the
default 1 keeps timings free of interference; with 2 workers on 2 cores they compete for
memory bandwidth). Results go to ``bench/results/sim_throughput.txt`` with the commit and
the machine (``--output`` to write elsewhere, ``--no-save`` not to write).
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for harness.py
from harness import SHARED_DATA, header, write_results  # noqa: E402  (bench/harness.py)

log = logging.getLogger("sim_throughput")

TRACES = SHARED_DATA / "traces"
POLICIES = ("easy", "fcfs")


def trace_name(path: Path) -> str:
    """Short name of a trace file.

    >>> trace_name(Path("KTH-SP2-1996-2.swf.gz"))
    'KTH-SP2-1996-2'
    """
    return path.name.split(".swf")[0]


def run_one(path: str, policy_name: str, max_jobs: int | None) -> dict[str, Any]:
    """Read one trace and simulate it with one policy; return the counts and timings."""
    from batpolicy.io.swf import read_swf
    from batpolicy.platforms.model import Platform
    from batpolicy.policies.registry import make_policy
    from batpolicy.scheduler.dispatch import Dispatcher
    from batpolicy.simulator import SimOptions, Simulator

    logging.getLogger("batpolicy").setLevel(logging.WARNING)
    began = time.perf_counter()
    workload = read_swf(path, max_jobs=max_jobs)
    read_s = time.perf_counter() - began
    if workload.nb_res is None:
        raise SystemExit(f"{path}: the reader found no platform size")
    platform = Platform.homogeneous(workload.nb_res)
    dispatcher = Dispatcher(make_policy(policy_name))
    began, began_cpu = time.perf_counter(), time.process_time()
    result = Simulator([workload], platform, options=SimOptions()).run(dispatcher.handle)
    sim_s = time.perf_counter() - began
    cpu_s = time.process_time() - began_cpu
    return {"jobs": len(workload.jobs), "machines": workload.nb_res, "read_s": read_s,
            "sim_s": sim_s, "cpu_s": cpu_s, "simulated_s": result.end_time,
            "messages": result.nb_messages,
            "finished": result.nb_jobs_finished, "rejected": result.nb_jobs_rejected}


def _run(task: tuple[str, str, int | None]) -> tuple[str, str, dict[str, Any]]:
    path, policy, max_jobs = task
    return path, policy, run_one(path, policy, max_jobs)


def table(results: dict[tuple[str, str], dict[str, Any]], paths: Sequence[Path],
          policies: Sequence[str]) -> list[str]:
    """One line per (trace, policy), in the order of ``paths`` and ``policies``."""
    lines = [f"{'trace':<36} {'policy':<6} {'machines':>8} {'jobs':>7} {'messages':>8} "
             f"{'simulated s':>12} {'read s':>7} {'wall s':>8} {'cpu s':>8} {'jobs/s':>8}"]
    for path in paths:
        for policy in policies:
            r = results.get((str(path), policy))
            if r is None:
                continue
            lines.append(f"{trace_name(path):<36} {policy:<6} {r['machines']:>8} {r['jobs']:>7} "
                         f"{r['messages']:>8} {r['simulated_s']:>12.0f} {r['read_s']:>7.2f} "
                         f"{r['sim_s']:>8.2f} {r['cpu_s']:>8.2f} {r['jobs'] / r['sim_s']:>8.0f}")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """Run every (trace, policy) pair; print the table and save it."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", nargs="*", default=None,
                        help="trace file name prefixes (default: every trace)")
    parser.add_argument("--policies", nargs="*", default=list(POLICIES))
    parser.add_argument("--max-jobs", type=int, default=0,
                        help="first jobs of each trace (0: whole traces, the default)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="worker processes over the (trace, policy) pairs")
    parser.add_argument("--output", type=Path, default=None)
    parser.add_argument("--no-save", action="store_true", help="print only")
    args, _ = parser.parse_known_args(argv)  # tolerate flags meant for other scripts
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    paths = sorted(p for p in TRACES.iterdir() if p.name.endswith((".swf", ".swf.gz")))
    if args.traces:
        paths = [p for p in paths if any(p.name.startswith(x) for x in args.traces)]
    tasks = [(str(p), policy, args.max_jobs or None) for p in paths for policy in args.policies]
    tasks.sort(key=lambda task: -Path(task[0]).stat().st_size)  # largest first
    results: dict[tuple[str, str], dict[str, Any]] = {}
    began = time.perf_counter()
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn
    with Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn()) as progress, \
            ProcessPoolExecutor(max_workers=max(args.jobs, 1)) as pool:
        bar = progress.add_task("simulations", total=len(tasks))
        for future in as_completed([pool.submit(_run, task) for task in tasks]):
            path, policy, r = future.result()
            results[(path, policy)] = r
            progress.advance(bar)
            progress.console.log(f"{trace_name(Path(path))} {policy}: {r['jobs']} jobs, "
                                 f"read {r['read_s']:.2f} s, simulated in {r['sim_s']:.2f} s")
    elapsed = time.perf_counter() - began
    lines = [f"# Embedded simulator throughput: Simulator(...).run(Dispatcher(policy).handle), "
             f"checker on; {len(tasks)} runs in {elapsed:.0f} s on {args.jobs} worker(s); "
             + (f"first {args.max_jobs} jobs of each trace" if args.max_jobs else "whole traces"),
             "# read s: read_swf (once per run, not in wall s); wall s: the simulation; cpu s: "
             "its process CPU time (close to wall s on an idle machine; on a shared one, the "
             "better estimate); jobs/s = jobs / wall s", "",
             *table(results, paths, args.policies)]
    text = "\n".join(lines)
    sys.stdout.write(header() + "\n" + text + "\n")
    if args.output is not None:
        args.output.write_text(header() + "\n" + text + "\n")
    elif not args.no_save:
        log.info("written to %s", write_results("sim_throughput", [text], keep_earlier=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
