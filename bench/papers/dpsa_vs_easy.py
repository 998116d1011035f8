"""DPSA variants against EASY on every SWF trace: the paper's Fig. 3 table.

Grudenic & Bogunovic, MIPRO 2011, §IV, Fig. 3: change of the average bounded slowdown
(τ = 10 s) of DPSAp, DPSAn and DPSAw against EASY backfilling, per trace; the paper
finds DPSAn better on all 8 of its PWA traces (−0.3 % to −40 %), DPSAw always worse (up
to +145 %), DPSAp better on half. Here: every trace in the shared traces folder, the
four policies ``easy``, ``dpsa-p``, ``dpsa-n``, ``dpsa-w`` (exact search), and besides the
slowdown change, each policy's mean wait and utilisation.

Jobs are read by the product's SWF reader (``batpolicy.io.swf.read_swf``, the
one ``batpolicy simulate`` uses) with ``size="allocated"``: size = allocated processors,
else requested ones; walltime = requested time, else the run time (NASA and the
synthetic traces have no request); a job running past its walltime is stopped there, as
Batsim does; jobs without run time or size are dropped, and so are jobs larger than the
platform (``transform.drop_larger``). The platform is the header's MaxProcs (else
MaxNodes, else the largest job) identical machines; submissions start at 0.
``--max-jobs`` keeps the first jobs of each trace (in Batsim's submission order:
submit time, then job id as a string) to bound run time.

Simulation: the embedded simulator (``batpolicy.simulator``) when it is available,
else a delay-job driver below that talks to the same ``Dispatcher`` as Batsim would
(submissions before completions at one instant, one message per instant). Runs go on a
process pool over all cores, with a progress bar.

Usage::

    python bench/papers/dpsa_vs_easy.py --max-jobs 5000          # quick look
    python bench/papers/dpsa_vs_easy.py --traces KTH SDSC --max-jobs 0   # whole traces

Results go to ``bench/results/dpsa_vs_easy.txt`` with the commit and the machine.
"""

from __future__ import annotations

import argparse
import heapq
import logging
import math
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for harness.py
from harness import header, pool_map, write_results  # noqa: E402  (bench/harness.py)

from batpolicy.io.swf import read_swf  # noqa: E402
from batpolicy.io.transform import drop_larger, head  # noqa: E402
from batpolicy.io.workload import Workload  # noqa: E402

log = logging.getLogger("dpsa_vs_easy")

REPO = Path(__file__).resolve().parents[2]
TRACES = REPO.parent / "shared" / "data" / "traces"
POLICIES = ("easy", "dpsa-p", "dpsa-n", "dpsa-w")
TAU = 10.0


def read_trace(path: Path, max_jobs: int | None = None) -> Workload:
    """The workload of an SWF file (plain or gzip), as the module docstring says.

    ``max_jobs`` (None or 0: all) keeps the first jobs after dropping those larger than
    the platform (``workload.nb_res``).
    """
    workload = read_swf(path, "w0", size="allocated", lenient=True)
    workload = drop_larger(workload, workload.nb_res or 0)
    return head(workload, max_jobs) if max_jobs else workload


def embedded_simulator_available() -> bool:
    """True once ``batpolicy.simulator`` provides ``Simulator`` and ``SimOptions``."""
    try:
        from batpolicy.simulator import SimOptions, Simulator  # noqa: F401
    except ImportError:
        return False
    return True


def drive(handle: Any, m: int, workload: Workload) -> None:
    """Play delay jobs to ``handle`` as Batsim 4.2.1 would (stand-in for the simulator).

    At one instant: submissions (in submission order), then completions (in start order),
    in one message; each EXECUTE_JOB schedules the completion at the job's delay, or at
    its walltime if that comes first.
    """
    from batpolicy.protocol import types as t
    from batpolicy.protocol.intervals import MachineSet

    resources = tuple(t.ResourceInfo(i, f"h{i}") for i in range(m))
    handle(t.Request(0.0, (t.SimulationBegins(0.0, m, m, 0, False, False, {}, resources, (),
                                              {"w0": "/w0.json"}, {}),)))
    by_id = {j.id: j for j in workload.jobs}
    runtime = {j.id: min(workload.profiles[j.profile]["delay"], j.walltime or math.inf)
               for j in workload.jobs}
    heap: list[tuple[float, int, int, str]] = [(j.subtime, 0, i, j.id)
                                               for i, j in enumerate(workload.jobs)]
    heapq.heapify(heap)
    allocs: dict[str, MachineSet] = {}
    started = 0
    now = 0.0
    while heap:
        now = heap[0][0]
        events: list[Any] = []
        while heap and heap[0][0] == now:
            _, kind, _, jid = heapq.heappop(heap)
            if kind == 0:
                events.append(t.JobSubmitted(now, jid, by_id[jid].raw))
            else:
                events.append(t.JobCompleted(now, jid, t.JobState.COMPLETED_SUCCESSFULLY, 0,
                                             allocs.pop(jid)))
        reply = handle(t.Request(now, tuple(events)))
        for d in reply.decisions:
            if isinstance(d, t.ExecuteJob):
                allocs[d.job_id] = d.alloc
                started += 1
                heapq.heappush(heap, (now + runtime[d.job_id], 1, started, d.job_id))
    handle(t.Request(now, (t.SimulationEnds(now),)))


def simulate(policy_name: str, m: int, workload: Workload, driver: str) -> dict[str, Any]:
    """One run: mean bounded slowdown (τ = 10 s), mean wait, utilisation, policy stats."""
    from batpolicy.policies.registry import make_policy
    from batpolicy.scheduler.dispatch import Dispatcher
    from batpolicy.scheduler.jobs import JobStatus
    from batpolicy.scheduler.outcomes import JobOutcome, compute_metrics

    logging.getLogger("batpolicy").setLevel(logging.WARNING)
    policy = make_policy(policy_name)
    dispatcher = Dispatcher(policy)
    began = time.perf_counter()
    if driver == "sim":
        from batpolicy.platforms.model import Platform
        from batpolicy.simulator import SimOptions, Simulator

        Simulator([workload], Platform.homogeneous(m), options=SimOptions()).run(
            dispatcher.handle)
    else:
        drive(dispatcher.handle, m, workload)
    outcomes = [JobOutcome(j.subtime, j.start, j.finish, j.res, True)
                if j.status is JobStatus.COMPLETED else JobOutcome(j.subtime, None, None, j.res,
                                                                  False)
                for j in dispatcher.state.jobs.values()]
    metrics = compute_metrics(outcomes, nb_machines=m, tau=TAU)
    return {"bsld": metrics["mean_bounded_slowdown"], "wait": metrics["mean_waiting_time"],
            "util": metrics["utilization"], "jobs": metrics["nb_jobs"],
            "finished": metrics["nb_jobs_finished"], "stats": policy.stats(),
            "seconds": time.perf_counter() - began}


def _run(args: tuple[str, str, int, Workload, str]) -> tuple[str, str, dict[str, Any]]:
    trace, policy, m, workload, driver = args
    return trace, policy, simulate(policy, m, workload, driver)


def change(ours: float, easy: float) -> str:
    """Relative change in percent, as Fig. 3 plots it (negative: better than EASY).

    >>> change(9.0, 10.0), change(25.0, 10.0)
    ('-10.0 %', '+150.0 %')
    """
    return f"{(ours - easy) / easy * 100:+.1f} %" if easy else "n/a"


def table(results: dict[tuple[str, str], dict[str, Any]], traces: dict[str, tuple[int, int]],
          policies: Sequence[str]) -> list[str]:
    """The Fig. 3 table (BSLD change against EASY), then mean wait and utilisation."""
    variants = [p for p in policies if p != "easy"]
    lines = ["## Change of mean bounded slowdown (tau = 10 s) against EASY "
             "(Fig. 3; negative = better)",
             f"{'trace':<36} {'m':>6} {'jobs':>7} {'EASY bsld':>10} "
             + " ".join(f"{v:>10}" for v in variants)]
    for trace, (m, n) in traces.items():
        easy = results.get((trace, "easy"))
        if easy is None:
            continue
        cells = [change(results[(trace, v)]["bsld"], easy["bsld"]) if (trace, v) in results
                 else "-" for v in variants]
        lines.append(f"{trace:<36} {m:>6} {n:>7} {easy['bsld']:>10.2f} "
                     + " ".join(f"{c:>10}" for c in cells))
    lines += ["", "## Mean bounded slowdown / mean wait (s) / utilisation, per policy",
              f"{'trace':<36} " + " ".join(f"{p:>26}" for p in policies)]
    for trace in traces:
        cells = []
        for p in policies:
            r = results.get((trace, p))
            cells.append(f"{r['bsld']:>8.2f} {r['wait']:>9.0f} {r['util']:>6.1%}" if r else "-")
        lines.append(f"{trace:<36} " + " ".join(f"{c:>26}" for c in cells))
    lines += ["", "## DPSA decisions: count, median / p99 decision time (ms), jobs started "
              "by the search; simulation wall time (s)",
              f"{'trace':<36} " + " ".join(f"{p:>32}" for p in policies)]
    for trace in traces:
        cells = []
        for p in policies:
            r = results.get((trace, p))
            if r is None:
                cells.append("-")
                continue
            s = r["stats"]
            cells.append(f"{s.get('nb_dpsa_decisions', 0):>6} "
                         f"{s.get('decision_time_ms.p50', 0):>6.2f}/"
                         f"{s.get('decision_time_ms.p99', 0):<6.2f} "
                         f"{s.get('nb_started_by_search', 0):>6} {r['seconds']:>6.0f}s")
        lines.append(f"{trace:<36} " + " ".join(f"{c:>32}" for c in cells))
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """Run every (trace, policy); print and write the tables."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trace-dir", type=Path, default=TRACES,
                        help=f"folder of SWF traces (default: {TRACES})")
    parser.add_argument("--traces", nargs="*", default=None,
                        help="trace file name prefixes (default: every trace)")
    parser.add_argument("--max-jobs", type=int, default=10_000,
                        help="first jobs of each trace (0: whole traces)")
    parser.add_argument("--policies", nargs="*", default=list(POLICIES))
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--driver", choices=("sim", "delay"), default=None,
                        help="sim: the embedded simulator (default when present); delay: "
                             "this script's delay-job driver")
    parser.add_argument("--output", type=Path, default=None)
    args, _ = parser.parse_known_args(argv)  # tolerate flags meant for other scripts
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    driver = args.driver or ("sim" if embedded_simulator_available() else "delay")
    if "easy" not in args.policies:
        args.policies.insert(0, "easy")
    paths = sorted(p for p in args.trace_dir.iterdir() if p.suffix in (".swf", ".gz"))
    if args.traces:
        paths = [p for p in paths if any(p.name.startswith(x) for x in args.traces)]
    traces: dict[str, tuple[int, int]] = {}
    tasks = []
    for path in paths:
        workload = read_trace(path, args.max_jobs or None)
        m = workload.nb_res or 0
        name = path.name.split(".swf")[0]
        traces[name] = (m, len(workload.jobs))
        log.info("%s: %d machines, %d jobs", name, m, len(workload.jobs))
        tasks += [(name, p, m, workload, driver) for p in args.policies]
    tasks.sort(key=lambda item: -len(item[3].jobs) * (2 if item[1] == "dpsa-n" else 1))
    results: dict[tuple[str, str], dict[str, Any]] = {}
    began = time.perf_counter()
    for trace, policy, result in pool_map(_run, tasks, args.workers, "simulations"):
        results[(trace, policy)] = result
        log.info("%s %s: bsld %.2f in %.0f s", trace, policy, result["bsld"], result["seconds"])
    elapsed = time.perf_counter() - began
    lines = [f"# DPSA vs EASY (Grudenic & Bogunovic 2011, Fig. 3): {len(tasks)} simulations "
             f"in {elapsed:.0f} s on {args.workers} worker(s); driver: "
             + ("embedded simulator" if driver == "sim" else "delay-job driver (bench)")
             + "; " + (f"first {args.max_jobs} jobs of each trace" if args.max_jobs
                       else "whole traces")
             + "; walltime = requested time (else run time); exact search", "",
             *table(results, traces, args.policies)]
    text = "\n".join(lines)
    sys.stdout.write(header() + "\n" + text + "\n")
    if args.output is None:
        log.info("written to %s", write_results("dpsa_vs_easy", [text]))
    else:
        args.output.write_text(header() + "\n" + text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
