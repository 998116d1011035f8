"""Redirection vs EASY on loaded weeks of real traces: the paper's Fig. 2 sweep.

Faure, Lucarelli, Richard & Trystram, *Online scheduling with redirection for parallel
jobs*, IPDPSW 2020, §IV–V: from each trace, extract weeks (168 h) whose mean utilisation
(in the log's own schedule) is at least 70 %; run FCFS/EASY and FCFS/EASY with
redirection for θ ∈ {1, 2, 5, 10, 15, 25, 50, 100, 125} × α ∈ {0.10, 0.15, 0.20, 0.25}
on the platform grown to m + ⌈α·m⌉ machines (EASY gets the same extra machines, §IV-B);
jobs get their exact run time as walltime (§IV-B); bounded slowdown with τ = 60 s (§II).

Prints, per trace, the ratio EASY / redirection of the mean and of the max bounded
slowdown for every (θ, α) averaged over the weeks (> 1: redirection is better; the
paper's Fig. 2 plots the same comparison, "lower is better", i.e. its axis behaves as
redirection / EASY, so both are printed), and the best (θ, α). Results also go to
``bench/results/redirection_sweep.txt`` with the commit hash and the machine.

Every simulation runs in the embedded simulator (Batsim 4.2.1's semantics on a
zero-latency platform), on a process pool of ``--workers`` processes (default: all cores),
with progress on stderr.

Usage::

    python bench/redirection_sweep.py                       # every trace, 20 weeks each
    python bench/redirection_sweep.py --max-weeks 5 --max-jobs 7000   # the committed run
    python bench/redirection_sweep.py --max-weeks 2 --traces RICC CEA-Curie
    python bench/redirection_sweep.py --theta 10 --alpha 0.15 --max-weeks 1   # quick look

``--max-weeks N`` keeps N loaded weeks per trace, evenly spaced over the trace's loaded
weeks; ``--max-jobs J`` first drops loaded weeks of more than J jobs (simulation time
grows faster than linearly with the queue length of the busiest weeks: a 9,600-job RICC
week takes ~20-30 s per simulation, 40 simulations per week). The whole grid on every
loaded week of every trace (~650,000 jobs x 40 simulations) takes hours on 2 cores.

Traces are read by the product's SWF reader (``read_swf(size="allocated",
keep_wait=True)``: size = allocated processors, else requested ones; the log's wait kept
so that week selection measures the log's own schedule, submit + wait) and the weeks cut
by ``batpolicy.scheduler.io.transform.weeks`` (jobs larger than the platform dropped
first; walltime = run time by ``transform.exact_walltime``), the same code as
``batpolicy workload transform --weeks 1 --min-util 0.7``.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import header, write_results  # bench/harness.py (the script's folder)

from batpolicy.scheduler.io.model import Workload
from batpolicy.scheduler.io.swf import read_swf
from batpolicy.scheduler.io.transform import Week, drop_larger, exact_walltime, weeks

log = logging.getLogger("redirection_sweep")

REPO = Path(__file__).resolve().parents[1]
TRACES = REPO.parent / "shared" / "data" / "traces"
WEEK = 168 * 3600.0
THETAS = (1, 2, 5, 10, 15, 25, 50, 100, 125)
ALPHAS = (0.10, 0.15, 0.20, 0.25)
TAU = 60.0


# ----------------------------------------------------------------------------- traces
def read_trace(path: Path) -> Workload:
    """The usable jobs of an SWF file (plain or gzip), with their log wait times.

    Size: the header's MaxProcs, else MaxNodes, else the largest job (``nb_res``). A job's
    size is its allocated processors (field 5), else its requested ones (field 8); jobs
    with no size, no run time, or larger than the platform are dropped; a missing wait
    counts 0.
    """
    workload = read_swf(path, "w0", size="allocated", keep_wait=True, lenient=True)
    return drop_larger(workload, workload.nb_res or 0)


def loaded_weeks(workload: Workload, threshold: float = 0.7) -> list[Week]:
    """Every week (168 h from the first submission) of utilisation >= threshold in the log.

    A job counts in the utilisation of every week its run (in the log) overlaps, and
    belongs to the workload of the week it was submitted in (``transform.weeks``).
    """
    return weeks(workload, min_util=threshold)


# --------------------------------------------------------------------- simulation
@dataclass(frozen=True, slots=True)
class Task:
    """One simulation: a week of a trace, α, and θ (None: EASY on the grown platform)."""

    trace: str
    week: int
    alpha: float
    theta: float | None


def simulate(task: Task, m: int, week: Workload) -> dict[str, Any]:
    """Run one simulation in the embedded simulator; mean/max BSLD (τ = 60 s) and counters.

    Redirection runs with Batsim's ``--enable-dynamic-jobs --enable-profile-reuse`` (one
    registered profile per source profile, shared by its copies); EASY without.
    """
    from batpolicy.platforms.model import Platform
    from batpolicy.policies.redirection import grown_size
    from batpolicy.policies.redirection.copies import user_job_outcomes
    from batpolicy.policies.registry import make_policy
    from batpolicy.scheduler.dispatch import Dispatcher
    from batpolicy.scheduler.metrics import compute_metrics
    from batpolicy.scheduler.sim import SimOptions, Simulator

    logging.getLogger("batpolicy").setLevel(logging.WARNING)  # one INFO line per run is noise
    total = grown_size(m, task.alpha)
    dynamic = task.theta is not None
    if dynamic:
        policy = make_policy("redirection", {"theta": str(task.theta), "alpha": str(task.alpha),
                                             "grow": "true"})
    else:
        policy = make_policy("easy")
    dispatcher = Dispatcher(policy)
    workload = exact_walltime(week)  # §IV-B: walltime = run time
    began = time.perf_counter()
    options = (SimOptions(dynamic_jobs=True, acknowledge_dynamic_jobs=False,
                          profile_reuse=True, forward_profiles=False)
               if dynamic else SimOptions())
    Simulator([workload], Platform.homogeneous(total), options=options).run(dispatcher.handle)
    metrics = compute_metrics(user_job_outcomes(dispatcher.state.jobs.values()),
                              nb_machines=total, tau=TAU)
    stats = policy.stats()
    return {"mean_bsld": metrics["mean_bounded_slowdown"],
            "max_bsld": metrics["max_bounded_slowdown"], "nb_jobs": metrics["nb_jobs"],
            "nb_redirections": stats.get("nb_redirections", 0),
            "wasted": stats.get("wasted_processor_seconds", 0.0),
            "seconds": time.perf_counter() - began}


def _run(args: tuple[Task, int, Workload]) -> tuple[Task, dict[str, Any]]:
    task, m, week = args
    return task, simulate(task, m, week)


def spread(items: Sequence[Any], nb: int) -> list[Any]:
    """At most ``nb`` items, evenly spaced over ``items`` (first and last included).

    >>> spread(list(range(10)), 4), spread([1, 2], 5), spread([7, 8, 9], 1)
    ([0, 3, 6, 9], [1, 2], [7])
    """
    if nb >= len(items):
        return list(items)
    if nb == 1:
        return [items[0]]
    return [items[round(i * (len(items) - 1) / (nb - 1))] for i in range(nb)]


class _Progress:
    """Simulations done, on stderr: a rich bar on a terminal, else log lines.

    Off a terminal, one line at most every ``every_s`` seconds with the elapsed time and
    an estimate of the time left.
    """

    def __init__(self, total: int, every_s: float = 30.0) -> None:
        self.total, self.done, self.every_s = total, 0, every_s
        self.began = self._last = time.perf_counter()
        self._bar: Any = None
        if sys.stderr.isatty():
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn
            self._bar = Progress("simulations", BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn())
            self._task = self._bar.add_task("simulations", total=total)
            self._bar.start()

    def advance(self, label: str) -> None:
        """Count one finished simulation."""
        self.done += 1
        if self._bar is not None:
            self._bar.advance(self._task)
            return
        now = time.perf_counter()
        if now - self._last >= self.every_s or self.done == self.total:
            self._last = now
            elapsed = now - self.began
            left = elapsed / self.done * (self.total - self.done)
            log.info("%d/%d simulations (%.0f%%), %.0f s elapsed, ~%.0f s left; last: %s",
                     self.done, self.total, 100 * self.done / self.total, elapsed, left, label)

    def close(self) -> None:
        """Remove the bar."""
        if self._bar is not None:
            self._bar.stop()


# ------------------------------------------------------------------------- report
def ratios(results: dict[Task, dict[str, Any]], trace: str, weeks: Sequence[int],
           thetas: Sequence[float], alphas: Sequence[float]) -> list[dict[str, Any]]:
    """Per (θ, α): EASY / redirection of mean and max BSLD, averaged over the weeks.

    >>> r = {Task("t", 0, 0.1, None): {"mean_bsld": 4.0, "max_bsld": 9.0},
    ...      Task("t", 0, 0.1, 5): {"mean_bsld": 2.0, "max_bsld": 10.0, "nb_redirections": 3}}
    >>> row, = ratios(r, "t", [0], [5], [0.1])
    >>> row["mean_ratio"], row["max_ratio"], row["redirections"]
    (2.0, 0.9, 3.0)
    """
    rows = []
    for alpha in alphas:
        for theta in thetas:
            mean_r, max_r, redir = [], [], []
            for week in weeks:
                easy = results.get(Task(trace, week, alpha, None))
                ours = results.get(Task(trace, week, alpha, theta))
                if easy is None or ours is None:
                    continue
                mean_r.append(easy["mean_bsld"] / ours["mean_bsld"])
                max_r.append(easy["max_bsld"] / ours["max_bsld"])
                redir.append(ours.get("nb_redirections", 0))
            if mean_r:
                rows.append({"theta": theta, "alpha": alpha, "weeks": len(mean_r),
                             "mean_ratio": statistics.fmean(mean_r),
                             "max_ratio": statistics.fmean(max_r),
                             "redirections": statistics.fmean(redir)})
    return rows


def report(trace: str, m: int, weeks: list[tuple[int, float, int]],
           rows: list[dict[str, Any]]) -> str:
    """The text block of one trace: the (θ, α) table and the best pair."""
    lines = [f"## {trace}  (m = {m}; {len(weeks)} week(s): "
             + ", ".join(f"#{w} util {u:.0%} {n} jobs" for w, u, n in weeks) + ")",
             "EASY/redir > 1: redirection better (paper's Fig. 2 axis = redir/EASY, lower better)",
             f"{'alpha':>6} {'theta':>6} {'EASY/redir mean':>16} {'EASY/redir max':>15} "
             f"{'redir/EASY mean':>16} {'redir/EASY max':>15} {'redirections':>13}"]
    for r in rows:
        lines.append(f"{r['alpha']:>6.2f} {r['theta']:>6g} {r['mean_ratio']:>16.3f} "
                     f"{r['max_ratio']:>15.3f} {1 / r['mean_ratio']:>16.3f} "
                     f"{1 / r['max_ratio']:>15.3f} {r['redirections']:>13.1f}")
    if rows:
        best = max(rows, key=lambda r: (r["mean_ratio"], r["max_ratio"]))
        both = [r for r in rows if r["mean_ratio"] > 1 and r["max_ratio"] > 1]
        lines.append(f"best (theta, alpha) for mean BSLD: ({best['theta']:g}, {best['alpha']:.2f})"
                     f": EASY/redir mean {best['mean_ratio']:.3f}, max {best['max_ratio']:.3f}")
        if both:
            b = max(both, key=lambda r: min(r["mean_ratio"], r["max_ratio"]))
            lines.append(f"best pair improving both: ({b['theta']:g}, {b['alpha']:.2f}): "
                         f"mean {b['mean_ratio']:.3f}, max {b['max_ratio']:.3f}")
        else:
            lines.append("no pair improves both mean and max BSLD")
    return "\n".join(lines)


#: The paper's §V-B: mean BSLD with tuned parameters, better than EASY by these factors.
PAPER = {"CEA-Curie": "10 % better", "RICC": "40 % better", "Intrepid": "20 % better"}


def summary(per_trace: dict[str, list[dict[str, Any]]]) -> str:
    """One line per trace: the best (θ, α) for mean BSLD and the paper's Curie pair (10, 0.15).

    >>> text = summary({"t": [{"theta": 10, "alpha": 0.15, "weeks": 2, "mean_ratio": 1.25,
    ...                        "max_ratio": 0.5, "redirections": 3.0}]})
    >>> text.splitlines()[2].split()
    ['t', '2', '(10,', '0.15)', '1.250', '0.500', '1.250', '0.500', '-']
    """
    lines = ["## Summary (EASY/redir, > 1: redirection better; averaged over the weeks)",
             f"{'trace':<36} {'weeks':>5} {'best (theta, alpha)':>20} {'mean':>8} {'max':>8} "
             f"{'at (10, 0.15): mean':>20} {'max':>8}  paper (mean BSLD)"]
    for trace, rows in per_trace.items():
        if not rows:
            continue
        best = max(rows, key=lambda r: (r["mean_ratio"], r["max_ratio"]))
        ref = next((r for r in rows if r["theta"] == 10 and abs(r["alpha"] - 0.15) < 1e-9), None)
        paper = next((v for k, v in PAPER.items() if trace.startswith(k)), "-")
        pair = f"({best['theta']:g}, {best['alpha']:.2f})"
        lines.append(f"{trace:<36} {best['weeks']:>5} {pair:>20} {best['mean_ratio']:>8.3f} "
                     f"{best['max_ratio']:>8.3f} "
                     + (f"{ref['mean_ratio']:>20.3f} {ref['max_ratio']:>8.3f}" if ref
                        else f"{'-':>20} {'-':>8}") + f"  {paper}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- main
def main(argv: Sequence[str] | None = None) -> int:
    """Run the sweep; see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", nargs="*", default=None,
                        help="trace files or name prefixes in the shared traces folder "
                             "(default: every trace)")
    parser.add_argument("--max-weeks", type=int, default=20,
                        help="weeks per trace, evenly spaced over its loaded weeks (paper: 20)")
    parser.add_argument("--min-util", type=float, default=0.7, help="week selection threshold")
    parser.add_argument("--theta", type=float, nargs="*", default=list(THETAS))
    parser.add_argument("--alpha", type=float, nargs="*", default=list(ALPHAS))
    parser.add_argument("--max-jobs", type=int, default=None,
                        help="skip weeks with more jobs than this (to bound run time)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--output", type=Path, default=None,
                        help="results file (default: bench/results/redirection_sweep.txt)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")

    paths = sorted(p for p in TRACES.iterdir() if p.suffix in (".swf", ".gz"))
    if args.traces:
        paths = [p for p in paths if any(p.name.startswith(x) or str(p) == x
                                         for x in args.traces)]
    selected: dict[str, tuple[int, list[Week]]] = {}
    for path in paths:
        workload = read_trace(path)
        m = workload.nb_res or 0
        loaded = [w for w in loaded_weeks(workload, args.min_util)
                  if args.max_jobs is None or len(w.workload.jobs) <= args.max_jobs]
        kept = spread(loaded, args.max_weeks)
        name = path.name.split(".swf")[0]
        log.info("%s: m=%d, %d jobs, %d loaded week(s), %d kept", name, m, len(workload.jobs),
                 len(loaded), len(kept))
        if kept:
            selected[name] = (m, kept)

    tasks = []
    for name, (m, kept) in selected.items():
        for week in kept:
            for alpha in args.alpha:
                tasks.append((Task(name, week.index, alpha, None), m, week.workload))
                tasks += [(Task(name, week.index, alpha, theta), m, week.workload)
                          for theta in args.theta]
    tasks.sort(key=lambda item: -len(item[2].jobs))  # longest first: better packing
    results: dict[Task, dict[str, Any]] = {}
    began = time.perf_counter()
    progress = _Progress(len(tasks))
    try:
        with ProcessPoolExecutor(max_workers=args.workers) as pool:
            futures = [pool.submit(_run, item) for item in tasks]
            for future in as_completed(futures):
                task, result = future.result()
                results[task] = result
                progress.advance(f"{task.trace} week {task.week} alpha {task.alpha:g} "
                                 + ("EASY" if task.theta is None else f"theta {task.theta:g}")
                                 + f" ({result['nb_jobs']} jobs, {result['seconds']:.1f} s)")
    finally:
        progress.close()
    elapsed = time.perf_counter() - began

    blocks = [f"# Redirection sweep (Faure et al. 2020, Fig. 2): EASY vs EASY+redirection, "
              f"grown platform, walltime = run time, BSLD tau = {TAU:g} s",
              f"{len(tasks)} simulations in {elapsed:.0f} s on {args.workers} worker(s); "
              f"weeks with utilisation >= {args.min_util:.0%}, at most {args.max_weeks} per trace"
              + (f" and {args.max_jobs} jobs per week" if args.max_jobs else "")
              + " (evenly spaced); embedded simulator (Batsim 4.2.1 semantics, zero latency)"]
    per_trace = {}
    for name, (m, kept) in selected.items():
        rows = ratios(results, name, [w.index for w in kept], args.theta, args.alpha)
        per_trace[name] = rows
        blocks.append(report(name, m, [(w.index, w.utilisation, len(w.workload.jobs))
                                       for w in kept], rows))
    blocks.insert(2, summary(per_trace))
    text = "\n\n".join(blocks)
    sys.stdout.write(header() + "\n" + text + "\n")
    if args.output is None:
        log.info("written to %s", write_results("redirection_sweep", [text]))
    else:
        args.output.write_text(header() + "\n" + text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

