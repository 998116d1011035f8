"""The co-allocation study at reduced scale: Figs. 9-11, 22-27 and Table 1 of seed 003.

Jones, Pang, Stanzione & Ligon, *Bandwidth-aware co-allocating meta-schedulers for
mini-grid architectures*, IEEE Cluster 2004 / 2005:

- ``dynamic`` (Figs. 9-11, §4.3 setup, preset ``coalloc-4.3``): average turnaround vs
  BSBW for First-fit under the bandwidth-centric model, the same with the fixed penalty
  fed the mean penalty First-fit measured at that BSBW ("Fixed"), Migration only, No
  share and Ideal (First-fit with unlimited links);
- ``modules`` (Figs. 22-27, §6.1 setup, preset ``coalloc-6.1``): A1, B1-B4 and B3 at
  chunk 70/80/85/90 % vs BSBW at LSLT 100 %, and vs LSLT at a low and a high BSBW;
  with Table 1's decision time per module (median and p99 of the Step 4 calls, µs).

Every run is the embedded simulator (``--job-model bandwidth`` unless said) on a
generated multi-cluster (100 nodes per cluster, 1 Gbps uplinks, §4.3 / §6.1), with
``--jobs`` jobs in all (the paper: 4,000,000 / 400,000 per cluster). Convergence is shown
by the mean turnaround of the first and second halves of the jobs (by submission).
Results go to ``bench/results/coalloc_<part>.txt`` with the commit and the command.

Usage::

    python bench/papers/coalloc_figures.py dynamic --clusters 4 --jobs 8000 \
        --bsbw 100 300 500 700 900
    python bench/papers/coalloc_figures.py modules --jobs 8000 --bsbw 200 500 800 --lslt 0.6 1.0 1.2
    python bench/papers/coalloc_figures.py modules --jobs 80000 --only migration-only ideal \
        --out coalloc_anchors                       # the paper's two anchors, converged
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for harness.py
from harness import pool_map, write_results  # noqa: E402  (bench/harness.py)

log = logging.getLogger("coalloc_figures")

MBPS = 1e6 / 8  # byte/s per Mbit/s


@dataclass(frozen=True, slots=True)
class Run:
    """One simulation: a curve label, the policy parameters, the job model, the inputs."""

    label: str
    params: tuple[tuple[str, str], ...]
    model: str
    bsbw_mbps: float
    preset: str
    clusters: int
    jobs: int
    seed: int
    lslt: float = 1.0


@dataclass(slots=True)
class Outcome:
    """What one run measured."""

    run: Run
    turnaround: float
    first_half: float
    second_half: float
    penalty: float
    coallocated: float
    module_median_us: float
    module_p99_us: float
    wall_s: float
    extra: dict[str, Any] = field(default_factory=dict)


def simulate(run: Run) -> Outcome:
    """Run one simulation in this process."""
    import time

    from batpolicy.io.coalloc_traces import coalloc_workload, preset
    from batpolicy.platforms.generators import multicluster, write_platform
    from batpolicy.platforms.xml import read_platform
    from batpolicy.policies.registry import make_policy
    from batpolicy.scheduler.dispatch import Dispatcher
    from batpolicy.simulator import SimOptions, Simulator

    began = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        platform = read_platform(write_platform(
            multicluster(run.clusters, 100, link_bandwidth="1Gbps"), Path(tmp) / "mc.xml"))
    spec = preset(run.preset, clusters=run.clusters, jobs=run.jobs,
                  bsbw=run.bsbw_mbps * MBPS)
    workload = coalloc_workload(spec, seed=run.seed)
    policy = make_policy("coalloc", dict(run.params))
    sim = Simulator([workload], platform, options=SimOptions(default_job_model=run.model))
    result = sim.run(Dispatcher(policy).handle)
    order = {job.id: i for i, job in enumerate(workload.jobs)}
    tats = sorted((order[r.job_id], r.turnaround_time) for r in result.records
                  if r.turnaround_time is not None)
    values = [v for _, v in tats]
    half = len(values) // 2
    model = sim.job_model_stats()
    stats = policy.stats()
    return Outcome(run, statistics.fmean(values), statistics.fmean(values[:half]),
                   statistics.fmean(values[half:]), model.get("mean_coalloc_penalty", 1.0),
                   model.get("coallocated_share", 0.0), 1e3 * stats["module_time_ms.p50"],
                   1e3 * stats["module_time_ms.p99"], time.perf_counter() - began)


def _line(o: Outcome) -> str:
    r = o.run
    return (f"{r.label:<16} bsbw={r.bsbw_mbps:5.0f}Mbps lslt={r.lslt:4.2f} "
            f"tat={o.turnaround:9.1f} s (halves {o.first_half:8.1f} / {o.second_half:8.1f}) "
            f"penalty={o.penalty:6.3f} coalloc={o.coallocated:5.3f} "
            f"step4={o.module_median_us:7.1f}/{o.module_p99_us:7.1f} us  [{o.wall_s:5.1f} s]")


def _run_all(runs: list[Run], workers: int | None, only: list[str] | None = None
             ) -> list[Outcome]:
    if only:
        runs = [r for r in runs if r.label in only]
    return sorted(pool_map(simulate, runs, workers, label="simulations"),
                  key=lambda o: (o.run.label, o.run.bsbw_mbps, o.run.lslt))


def dynamic(args: argparse.Namespace) -> list[str]:
    """Figs. 9-11: First-fit (dynamic), Fixed, Migration only, No share, Ideal vs BSBW."""
    base = dict(preset="coalloc-4.3", clusters=args.clusters, jobs=args.jobs, seed=args.seed)
    runs = [Run("first-fit", (("module", "ff"),), "bandwidth", b, **base) for b in args.bsbw]
    flat = args.bsbw[0]  # the baselines do not depend on BSBW: one run each
    runs += [Run("migration-only", (("module", "none"),), "bandwidth", flat, **base),
             Run("no-share", (("module", "noshare"),), "bandwidth", flat, **base),
             Run("ideal", (("module", "ff"),), "ideal", flat, **base)]
    outcomes = _run_all(runs, args.workers, args.only)
    fixed = [Run("fixed", (("module", "ff"),), f"fixed-penalty:{o.penalty!r}", o.run.bsbw_mbps,
                 **base) for o in outcomes if o.run.label == "first-fit"]
    outcomes += _run_all(fixed, args.workers, args.only)
    lines = [f"# Figs. 9-11 at {args.clusters} clusters x 100 nodes, 1 Gbps links, preset "
             f"coalloc-4.3, {args.jobs} jobs in all, seed {args.seed} (fixed: penalty = "
             "first-fit's measured mean at that BSBW; baselines do not depend on BSBW)"]
    lines += [_line(o) for o in outcomes]
    return lines


def modules(args: argparse.Namespace) -> list[str]:
    """Figs. 22-27 and Table 1: A1, B1-B4, B3 chunks vs BSBW (LSLT 100 %) and vs LSLT."""
    base = dict(preset="coalloc-6.1", clusters=args.clusters, jobs=args.jobs, seed=args.seed)
    algos = [("a1", (("module", "a1"),)), ("b1", (("module", "b1"),)),
             ("b2", (("module", "b2"),)), ("b4", (("module", "b4"),))]
    algos += [(f"b3-{c}", (("module", "b3"), ("chunk", f"0.{c}"))) for c in (70, 80, 85, 90)]
    runs = []
    for label, params in algos:
        for b in args.bsbw:
            for lslt in sorted({1.0, *args.lslt}) if b in (min(args.bsbw), max(args.bsbw)) \
                    else [1.0]:
                runs.append(Run(label, (*params, ("lslt", str(lslt))), "bandwidth", b,
                                lslt=lslt, **base))
    flat = args.bsbw[0]
    runs += [Run("migration-only", (("module", "none"),), "bandwidth", flat, **base),
             Run("ideal", (("module", "ff"),), "ideal", flat, **base)]
    outcomes = _run_all(runs, args.workers, args.only)
    lines = [f"# Figs. 22-27 at {args.clusters} clusters x 100 nodes, 1 Gbps links, preset "
             f"coalloc-6.1, {args.jobs} jobs in all, seed {args.seed}; LSLT sweeps at the "
             "lowest and highest BSBW; paper anchors: migration only 1087 s, ideal 735 s; "
             "step4 = Table 1's decision time of the co-allocation module, median/p99 us "
             "(paper: A1 69.6, B1 0.98, B2 0.89, B3 1.28, B4 1.10 us, C code)"]
    lines += [_line(o) for o in outcomes]
    return lines


def main(argv: list[str] | None = None) -> int:
    """Parse the command line, run the part asked for, print and save the results."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("part", choices=("dynamic", "modules"))
    parser.add_argument("--clusters", type=int, default=4)
    parser.add_argument("--jobs", type=int, default=8000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bsbw", type=float, nargs="+", default=[200, 500, 800],
                        metavar="MBPS")
    parser.add_argument("--lslt", type=float, nargs="+", default=[0.6, 1.0, 1.2])
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--only", nargs="+", metavar="LABEL",
                        help="run only these curves (e.g. migration-only ideal)")
    parser.add_argument("--out", default=None, help="results name (default: coalloc_<part>)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(message)s")
    lines = (dynamic if args.part == "dynamic" else modules)(args)
    command = "python bench/papers/coalloc_figures.py " + " ".join(argv or sys.argv[1:])
    lines.insert(0, f"# command: {command}")
    for line in lines:
        print(line)
    path = write_results(args.out or f"coalloc_{args.part}", lines)
    log.info("results written to %s", path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
