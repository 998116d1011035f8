"""Klusáček, Matyska & Rudová 2007, Fig. 4 and 5: late jobs per load, and decision times.

Setting (§4, :mod:`batpolicy.io.deadline_grid`, ``TABU4``): 150 machines of
random CPU count and speed, 1,500 jobs (parallel and sequential) with deadlines, 7 load
levels (1 = busiest) × ``--seeds`` data sets, run on the embedded simulator (profiles are
``parallel_homogeneous``: run time = work / machine speed). Policies: ``fcfs``, ``edf``,
``easy`` (queue-based; each keeps a job inside one machine when it has a ``one_group``
parameter, otherwise it says so in the table), ``mt-edf`` and ``tabu`` (MT-EDF + Tabu
search, ``rounds=100``).

Fig. 4 (left): mean number of late jobs per load (min–max and quartiles over the seeds;
the paper's ordering checked on the means and seed by seed); (right): mean
scheduling time per job (the scheduler's process CPU time over the run / 1,500 jobs; the
wall time beside it, inflated on a shared machine). Issue target: median per-job time of
``tabu`` < 2 ms, where the per-job time of a decision that received arrivals is its CPU
time divided by the number of arrivals.

Fig. 5: decision CPU time against the number of waiting jobs (queue or schedule size),
split into decisions that received arrivals (adding jobs, plus TS) and the others
(selecting the jobs to start): median per size bucket.

Two sources of runs:

- in process (default): this script simulates every (policy, level, seed) itself and
  measures each decision's process CPU time (Fig. 4 right, Fig. 5);
- ``--from-campaign DIR``: the runs of ``batpolicy campaign
  bench/campaigns/deadline_fig4.toml`` (the product's runner, each run on its seed's
  machines): late jobs and tardiness only (a campaign keeps wall-clock figures apart).

Usage::

    python bench/papers/deadline_fig4.py                       # 7 levels x 20 seeds x 5 policies
    python bench/papers/deadline_fig4.py --seeds 3 --levels 1 4 7 --workers 2
    python bench/papers/deadline_fig4.py --from-campaign bench/campaigns/results/deadline_fig4

Results: ``bench/results/<name>.txt`` (commit and command on top) and, if matplotlib is
installed, ``bench/results/<name>.png`` (default name ``deadline_fig4``).
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for harness.py
from harness import RESULTS, pool_map, write_results  # noqa: E402  (bench/harness.py)

POLICIES = ("fcfs", "edf", "easy", "mt-edf", "tabu")
BUCKETS = (0, 10, 30, 100, 300, 1000, 3000)
#: Fig. 4's claim as ordered steps (fewest late jobs first): tabu never worse than its
#: MT-EDF start, the schedule-based policies below EDF, EDF below the FIFO queues.
PAPER_ORDER = (("tabu", "<=", "mt-edf"), ("mt-edf", "<", "edf"), ("edf", "<", "easy"),
               ("easy", "<", "fcfs"))


def _params(name: str, rounds: int, time_bound_ms: float) -> dict[str, str]:
    from batpolicy.policies.registry import POLICIES as REGISTRY

    declared = {p.name for p in REGISTRY[name].parameters}
    params = {"one_group": "true"} if "one_group" in declared else {}
    if name == "tabu":
        params.update(rounds=str(rounds), time_bound_ms=str(time_bound_ms))
    return params


def run_one(task: tuple[str, int, int, int, float]) -> dict[str, Any]:
    """Simulate one (policy, level, seed); late jobs, tardiness and decision times."""
    from batpolicy.io.deadline_grid import TABU4, grid_platform, grid_workload
    from batpolicy.policies.registry import make_policy
    from batpolicy.protocol import types as t
    from batpolicy.scheduler.dispatch import Dispatcher
    from batpolicy.simulator import Simulator

    name, level, seed, rounds, bound = task
    platform = grid_platform(TABU4, seed)
    workload = grid_workload(TABU4, seed, level, platform)
    params = _params(name, rounds, bound)
    dispatcher = Dispatcher(make_policy(name, params))
    per_job: list[float] = []
    samples: list[tuple[int, bool, float]] = []  # (waiting jobs, arrivals?, CPU seconds)
    total = [0.0, 0.0]  # CPU, wall

    def handle(request: t.Request) -> t.Reply:
        arrivals = sum(isinstance(e, t.JobSubmitted) for e in request.events)
        began, wall = time.process_time(), time.perf_counter()
        reply = dispatcher.handle(request)
        spent = time.process_time() - began
        total[0] += spent
        total[1] += time.perf_counter() - wall
        if arrivals:
            per_job.append(spent / arrivals)
        samples.append((len(dispatcher.state.waiting), arrivals > 0, spent))
        return reply

    Simulator([workload], platform).run(handle)
    late, tardiness = 0, 0.0
    for job in dispatcher.state.jobs.values():
        if job.finish is not None and job.finish > job.raw["deadline"]:
            late += 1
            tardiness += job.finish - job.raw["deadline"]
    return {"policy": name, "level": level, "seed": seed, "late": late,
            "tardiness": tardiness, "one_group": "one_group" in params,
            "time_per_job": total[0] / len(workload.jobs),
            "wall_per_job": total[1] / len(workload.jobs),
            "per_job": per_job, "samples": samples}


def _bucket(size: int) -> int:
    return max(b for b in BUCKETS if b <= size)


def report_spread(by: dict[tuple[str, int], list[dict[str, Any]]], policies: list[str],
                  levels: list[int]) -> list[str]:
    """Late jobs per policy and level: median [Q1-Q3] over the seeds (inclusive quartiles)."""
    lines = ["", "Late jobs, median [Q1-Q3] over seeds", ""]
    lines.append("level " + "".join(f"{p:>24}" for p in policies))
    for level in levels:
        cells = []
        for p in policies:
            lates = sorted(r["late"] for r in by[(p, level)])
            if len(lates) < 2:
                cells.append("-")
                continue
            q1, med, q3 = statistics.quantiles(lates, n=4, method="inclusive")
            cells.append(f"{med:7.1f} [{q1:6.1f}-{q3:6.1f}]")
        lines.append(f"{level:5d} " + "".join(f"{c:>24}" for c in cells))
    return lines


def report_order_per_seed(by: dict[tuple[str, int], list[dict[str, Any]]],
                          policies: list[str], levels: list[int]) -> list[str]:
    """How often each step of Fig. 4's ordering holds seed by seed, per level.

    Steps of :data:`PAPER_ORDER` (tabu <= mt-edf < edf < easy < fcfs); a cell is the
    seeds where the step holds / the seeds that have a run of every policy.
    """
    steps = [(a, op, b) for a, op, b in PAPER_ORDER if a in policies and b in policies]
    if not steps:
        return []
    lines = ["", "The paper's ordering seed by seed: seeds where the step holds / seeds", ""]
    lines.append("level " + "".join(f"{f'{a} {op} {b}':>18}" for a, op, b in steps)
                 + f"{'all steps':>12}")
    for level in levels:
        late = {p: {r["seed"]: r["late"] for r in by[(p, level)]} for p in policies}
        seeds = sorted(set.intersection(*(set(late[p]) for p in policies)))
        cells, every = [], set(seeds)
        for a, op, b in steps:
            held = {k for k in seeds if (late[a][k] <= late[b][k] if op == "<="
                                         else late[a][k] < late[b][k])}
            every &= held
            cells.append(f"{len(held)} / {len(seeds)}")
        lines.append(f"{level:5d} " + "".join(f"{c:>18}" for c in cells)
                     + f"{f'{len(every)} / {len(seeds)}':>12}")
    return lines


def report_late(runs: list[dict[str, Any]], policies: list[str], levels: list[int]) -> list[str]:
    """The Fig. 4 (left) table: late jobs per policy and level; mean tardiness beside."""
    by = defaultdict(list)
    for r in runs:
        by[(r["policy"], r["level"])].append(r)
    lines = ["", "Fig. 4 (left): late jobs, mean [min-max] over seeds; level 1 = busiest", ""]
    lines.append("level " + "".join(f"{p:>22}" for p in policies))
    for level in levels:
        cells = []
        for p in policies:
            lates = [r["late"] for r in by[(p, level)]]
            cells.append(f"{statistics.mean(lates):8.1f} [{min(lates):4d}-{max(lates):4d}]"
                         if lates else "-")
        lines.append(f"{level:5d} " + "".join(f"{c:>22}" for c in cells))
    spanning = sorted({r["policy"] for r in runs if not r["one_group"] and r["policy"]
                       not in ("mt-edf", "tabu")})
    if spanning:
        lines.append(f"(no one_group parameter on this branch, jobs may span machines: "
                     f"{', '.join(spanning)})")
    lines += report_spread(by, policies, levels)
    lines += ["", "Total tardiness T (hours), mean over seeds", ""]
    lines.append("level " + "".join(f"{p:>12}" for p in policies))
    for level in levels:
        lines.append(f"{level:5d} " + "".join(
            f"{statistics.mean(r['tardiness'] for r in by[(p, level)]) / 3600:12.1f}"
            if by[(p, level)] else f"{'-':>12}" for p in policies))
    lines += ["", "Ordering of the mean late jobs per level (fewest first):", ""]
    for level in levels:
        means = {p: statistics.mean(r["late"] for r in by[(p, level)])
                 for p in policies if by[(p, level)]}
        ranked = sorted(means.items(), key=lambda kv: kv[1])
        text = f"{ranked[0][0]} {ranked[0][1]:.1f}"
        for (_, before), (p, v) in zip(ranked, ranked[1:], strict=False):
            text += f" {'=' if v == before else '<'} {p} {v:.1f}"
        lines.append(f"{level:5d}  {text}")
    lines += report_order_per_seed(by, policies, levels)
    if "tabu" in policies and "mt-edf" in policies:
        lines += ["", "tabu vs its MT-EDF start, per (level, seed): fewer / as many / more "
                  "late jobs", ""]
        for level in levels:
            ts = {r["seed"]: r["late"] for r in by[("tabu", level)]}
            ms = {r["seed"]: r["late"] for r in by[("mt-edf", level)]}
            both = sorted(set(ts) & set(ms))
            lines.append(f"{level:5d}  {sum(ts[k] < ms[k] for k in both):3d} / "
                         f"{sum(ts[k] == ms[k] for k in both):3d} / "
                         f"{sum(ts[k] > ms[k] for k in both):3d}")
    return lines


def report_times(runs: list[dict[str, Any]], policies: list[str], levels: list[int]) -> list[str]:
    """Fig. 4 (right): the per-job times; Fig. 5: decision time by waiting jobs."""
    by = defaultdict(list)
    for r in runs:
        by[(r["policy"], r["level"])].append(r)
    lines = ["", "Fig. 4 (right): scheduling time per job, ms of process CPU time (the "
              "machine is shared): mean = all decisions of a run / jobs, averaged over runs "
              "(wall-time mean beside); median and p99 of (decision with arrivals / "
              "arrivals)", ""]
    lines.append(f"{'policy':<8} {'level':>5} {'mean':>8} {'wall':>8} {'median':>8} {'p99':>8}")
    for p in policies:
        for level in levels:
            rs = by[(p, level)]
            if not rs:
                continue
            per_job = sorted(x for r in rs for x in r["per_job"])
            p99 = per_job[int(0.99 * (len(per_job) - 1))] if per_job else 0.0
            lines.append(f"{p:<8} {level:5d} "
                         f"{1000 * statistics.mean(r['time_per_job'] for r in rs):8.3f} "
                         f"{1000 * statistics.mean(r['wall_per_job'] for r in rs):8.3f} "
                         f"{1000 * statistics.median(per_job):8.3f} {1000 * p99:8.3f}")
        all_jobs = [x for level in levels for r in by[(p, level)] for x in r["per_job"]]
        if all_jobs:
            lines.append(f"{p:<8} {'all':>5} {'':8} {'':8} "
                         f"{1000 * statistics.median(all_jobs):8.3f}")
    lines += ["", "Fig. 5: median decision CPU time (ms) by waiting jobs; add = decisions "
              "with arrivals, select = the others", ""]
    lines.append(f"{'policy':<8} {'kind':<7}" + "".join(f"{'>=' + str(b):>9}" for b in BUCKETS))
    for p in policies:
        for kind, flag in (("add", True), ("select", False)):
            cells = defaultdict(list)
            for r in (r for r in runs if r["policy"] == p):
                for size, arrived, spent in r["samples"]:
                    if arrived == flag:
                        cells[_bucket(size)].append(spent)
            lines.append(f"{p:<8} {kind:<7}" + "".join(
                f"{1000 * statistics.median(cells[b]):9.3f}" if cells[b] else f"{'-':>9}"
                for b in BUCKETS))
    return lines


def plot(runs: list[dict[str, Any]], policies: list[str], levels: list[int],
         name: str) -> Path | None:
    """Fig. 4 as a PNG: late jobs per level with the seeds' spread, CPU time per job.

    Campaign runs have no CPU times: their right panel is the total tardiness. ``None``
    without matplotlib.
    """
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for p in policies:
        means, lows, highs, times = [], [], [], []
        for level in levels:
            lates = [r["late"] for r in runs if r["policy"] == p and r["level"] == level]
            means.append(statistics.mean(lates))
            lows.append(min(lates))
            highs.append(max(lates))
            times.append(statistics.mean(
                1000 * r["time_per_job"] if "time_per_job" in r else r["tardiness"] / 3600
                for r in runs if r["policy"] == p and r["level"] == level))
        left.plot(levels, means, marker="o", label=p)
        left.fill_between(levels, lows, highs, alpha=0.15)
        right.plot(levels, times, marker="o", label=p)
    left.set(xlabel="load level (1 = busiest)", ylabel="late jobs (U)", title="Fig. 4 left")
    if all("time_per_job" in r for r in runs):
        right.set(xlabel="load level", ylabel="CPU ms per job", title="Fig. 4 right",
                  yscale="log")
    else:
        right.set(xlabel="load level", ylabel="total tardiness (h)", title="tardiness T",
                  yscale="log")
    left.legend()
    path = RESULTS / f"{name}.png"
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return path


def campaign_runs(folder: Path) -> list[dict[str, Any]]:
    """The runs of a finished (or partial) deadline_fig4 campaign, as :func:`run_one`'s.

    Late jobs and tardiness from ``results.csv`` (the metrics' ``nb_late_jobs`` and
    ``total_tardiness``); ``bound_hits`` is tabu's ``nb_time_bound_hits``.
    """
    with (folder / "results.csv").open() as f:
        rows = [r for r in csv.DictReader(f) if r["status"] == "ok"]
    return [{"policy": r["policy"], "level": int(r["preset.level"]), "seed": int(r["seed"]),
             "late": int(r["nb_late_jobs"]), "tardiness": float(r["total_tardiness"]),
             "one_group": r.get("param.one_group") == "True" or r["policy"] in ("mt-edf", "tabu"),
             "bound_hits": int(float(r.get("stat.nb_time_bound_hits") or 0))}
            for r in rows]


def main(argv: list[str] | None = None) -> int:
    """Run the grid of simulations (or read a campaign's) and write the tables."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--levels", type=int, nargs="+", default=list(range(1, 8)))
    parser.add_argument("--policies", nargs="+", default=list(POLICIES))
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--time-bound-ms", type=float, default=0.0)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--name", default="deadline_fig4")
    parser.add_argument("--from-campaign", type=Path, metavar="DIR",
                        help="tabulate a deadline_fig4 campaign's results instead of running")
    parser.add_argument("--campaign-commit", metavar="HASH",
                        help="the commit the campaign ran at (written in the header)")
    args = parser.parse_args(argv)
    command = "python bench/papers/deadline_fig4.py " + " ".join(argv if argv is not None
                                                          else sys.argv[1:])
    if args.from_campaign is not None:
        runs = [r for r in campaign_runs(args.from_campaign)
                if r["policy"] in args.policies and r["level"] in args.levels]
        seeds = sorted({r["seed"] for r in runs})
        hits = [r["bound_hits"] for r in runs if r["policy"] == "tabu"]
        at = f" at commit {args.campaign_commit}" if args.campaign_commit else ""
        lines = [f"# batpolicy campaign bench/campaigns/deadline_fig4.toml{at}; {command}",
                 f"# {len(runs)} runs, seeds {seeds[0]}-{seeds[-1]} ({len(seeds)}) x levels "
                 f"{args.levels}; tabu as in the campaign file; time bound hit in "
                 f"{sum(h > 0 for h in hits)} of {len(hits)} tabu runs "
                 f"({sum(hits)} searches)", *report_late(runs, args.policies, args.levels)]
    else:
        tasks = [(p, level, seed, args.rounds, args.time_bound_ms) for level in args.levels
                 for seed in range(1, args.seeds + 1) for p in args.policies]
        runs = list(pool_map(run_one, tasks, args.workers, label="simulations"))
        lines = [f"# {command}", f"# {args.seeds} seeds x levels {args.levels}; tabu rounds="
                 f"{args.rounds} time_bound_ms={args.time_bound_ms}",
                 *report_late(runs, args.policies, args.levels),
                 *report_times(runs, args.policies, args.levels)]
    path = write_results(args.name, lines)
    print("\n".join(lines))
    png = plot(runs, args.policies, args.levels, args.name)
    print(f"written: {path}" + (f", {png}" if png else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
