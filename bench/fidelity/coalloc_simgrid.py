"""Co-allocation under SimGrid's network model (real Batsim) vs the bandwidth-centric model.

Seed 003 (Jones, Pang, Stanzione & Ligon) models a co-allocated job's slowdown with its
own bandwidth-centric model (§3.3-§3.7, ``--job-model bandwidth``); no paper compares it
with an independent network model. Here the same jobs (preset
``coalloc-6.1`` with ``profiles=simgrid``: parallel tasks of computation and all-to-all
communication sized from ``T_P``, ``T_C`` and ``PPBW``, see
``io/coalloc_simgrid.py``) run

- beside real Batsim 4.2.1 (SimGrid's ptask_L07 model slows them on the uplinks of a
  generated multi-cluster), against ``batpolicy serve --policy coalloc``;
- in the embedded simulator with ``--job-model bandwidth`` (eq. 1-8) and ``ideal``
  (no slowdown), on the same workload and platform files;
- with ``--offline``: no Batsim; the SimGrid column is the embedded simulator's
  ``ptask`` job model (SimGrid's ptask_L07 model, fair-bottleneck sharing, as Batsim runs
  it: ``simulator/ptask``), and ``--compare FILE`` (a table this script wrote with
  real Batsim) adds how many rows give the same figures.

For each module and BSBW: the average turnaround (s), the mean co-allocation penalty
of the co-allocated jobs (runtime / ``T_E``) and their share. Batsim's and the policy's
schedules differ as soon as one runtime differs, so turnarounds compare whole runs.

Usage (the platform is small: Batsim runs every module to the end in seconds)::

    python bench/fidelity/coalloc_simgrid.py --jobs 2000 --bsbw 300 600 900 1200 --workers 2
    python bench/fidelity/coalloc_simgrid.py --jobs 2000 --bsbw 300 600 900 1200 --workers 2 \
        --offline [--ptask-only] --compare bench/results/coalloc_simgrid.txt \
        --out coalloc_simgrid_offline
"""

from __future__ import annotations

import argparse
import csv
import logging
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for harness.py
from harness import free_port, pool_map, write_results  # noqa: E402  (bench/harness.py)

log = logging.getLogger("coalloc_simgrid")

MODULES = ("ff", "a1", "b1", "b2", "b3", "b4", "none", "noshare")
BATSIM = Path("/opt/batsim-4.2.1/bin/batsim")


@dataclass(frozen=True, slots=True)
class Case:
    """One module at one BSBW, on the files of that BSBW."""

    module: str
    bsbw: float
    platform: Path
    workload: Path
    batsim: Path | None  # None: offline, the ptask model stands in for Batsim
    models_too: bool = True  # offline: also the bandwidth and ideal models


@dataclass(frozen=True, slots=True)
class Measure:
    """Average turnaround, mean penalty of co-allocated jobs, their share, rejections."""

    turnaround: float
    penalty: float
    coallocated: float
    rejected: int


#: A model not run (``--offline --ptask-only``).
_NOT_RUN = Measure(float("nan"), float("nan"), float("nan"), 0)


@dataclass(frozen=True, slots=True)
class Row:
    """What one case measured under each model."""

    case: Case
    simgrid: Measure
    bandwidth: Measure
    ideal: Measure
    wall_s: float


def _measure(rows: list[tuple[str, float | None, float | None, float | None, str]],
             te: dict[str, float], cluster_of: list[str]) -> Measure:
    """``(job, submission, finish, runtime, alloc)`` rows (None when rejected) -> Measure."""
    from batpolicy.protocol.intervals import MachineSet

    tats, penalties, rejected = [], [], 0
    for job, sub, finish, runtime, alloc in rows:
        if finish is None or sub is None or runtime is None:
            rejected += 1
            continue
        tats.append(finish - sub)
        if len({cluster_of[m] for m in MachineSet.parse(alloc)}) > 1:
            penalties.append(runtime / te[job])
    return Measure(statistics.fmean(tats), statistics.fmean(penalties) if penalties else 1.0,
                   len(penalties) / len(tats), rejected)


def run_case(case: Case) -> Row:
    """Batsim + ``serve`` in a thread, then the embedded simulator twice, same files."""
    from batpolicy.io.batsim_json import read_batsim_workload
    from batpolicy.platforms.xml import read_platform
    from batpolicy.policies.registry import make_policy
    from batpolicy.scheduler.daemon import ServeOptions, serve
    from batpolicy.scheduler.dispatch import Dispatcher
    from batpolicy.simulator.jobmodels.coalloc import profile_runtime

    began = time.perf_counter()
    params = {"module": case.module}
    platform = read_platform(case.platform)
    cluster_of = [""] * len(platform.machines)
    for group in platform.groups.values():
        for m in group.machines:
            cluster_of[m] = group.name
    workload = read_batsim_workload(case.workload)
    te = {j.name: profile_runtime(workload.profiles[j.profile], workload.profiles, j.res,
                                  platform.machines[0].speed) for j in workload.jobs}
    if case.batsim is None:
        measures = [_simulated(workload, platform, params, model, te, cluster_of)
                    if model == "ptask" or case.models_too else _NOT_RUN
                    for model in ("ptask", "bandwidth", "ideal")]
        return Row(case, *measures, time.perf_counter() - began)
    with tempfile.TemporaryDirectory(prefix="coalloc_simgrid_") as tmp:
        port = free_port()
        options = ServeOptions(endpoint=f"tcp://127.0.0.1:{port}", timeout_s=600)
        dispatcher = Dispatcher(make_policy("coalloc", params))
        status: list[int] = []
        thread = threading.Thread(target=lambda: status.append(serve(dispatcher, options)))
        thread.start()
        try:
            batsim = subprocess.run(
                [str(case.batsim), "-p", str(case.platform), "-w", str(case.workload), "-e",
                 f"{tmp}/out", "-s", f"tcp://127.0.0.1:{port}", "-q"],
                capture_output=True, text=True)
        finally:
            thread.join(timeout=600)
        if batsim.returncode != 0 or status != [0]:
            raise SystemExit(f"{case.module} at {case.bsbw} Mbps: batsim exit "
                             f"{batsim.returncode}, serve {status}: {batsim.stderr[-500:]}")
        with open(f"{tmp}/out_jobs.csv") as f:
            real = [(r["job_id"], float(r["submission_time"]),
                     float(r["finish_time"]) if r["finish_time"] else None,
                     float(r["execution_time"]) if r["execution_time"] else None,
                     r["allocated_resources"]) for r in csv.DictReader(f)]
    measures = [_measure(real, te, cluster_of)]
    measures += [_simulated(workload, platform, params, model, te, cluster_of)
                 for model in ("bandwidth", "ideal")]
    return Row(case, *measures, time.perf_counter() - began)


def _simulated(workload: object, platform: object, params: dict[str, str], model: str,
               te: dict[str, float], cluster_of: list[str]) -> Measure:
    """The embedded simulator (message latencies as Batsim's if any) with job model ``model``."""
    from batpolicy.policies.registry import make_policy
    from batpolicy.scheduler.dispatch import Dispatcher
    from batpolicy.simulator import SimOptions
    from batpolicy.simulator.latency.driver import make_simulator

    sim = make_simulator([workload], platform,  # type: ignore[list-item, arg-type]
                         options=SimOptions(default_job_model=model))
    result = sim.run(Dispatcher(make_policy("coalloc", params)).handle)
    rows = [(r.name, r.submission_time, r.completion_time if r.start is not None else None,
             r.completion_time - r.start if r.start is not None else None,
             str(r.alloc) if r.alloc is not None else "") for r in result.records]
    return _measure(rows, te, cluster_of)


def _inputs(args: argparse.Namespace, folder: Path) -> list[Case]:
    """The platform and, per BSBW, the workload files (through the product's generators)."""
    from batpolicy.io.batsim_json import write_batsim_workload
    from batpolicy.io.presets import build_workload, preset
    from batpolicy.platforms.generators import multicluster, write_platform

    platform = write_platform(multicluster(args.clusters, args.nodes,
                                           link_bandwidth=args.link_bandwidth),
                              folder / "mc.xml")
    cases = []
    lo, hi = args.node_range
    for bsbw in args.bsbw:
        spec = preset("coalloc-6.1", clusters=args.clusters, jobs=args.jobs, nodes_min=lo,
                      nodes_max=hi, bsbw_mbps=bsbw, profiles=args.profiles,
                      comm_phase=args.comm_phase)
        workload = write_batsim_workload(build_workload(spec, args.seed),
                                         folder / f"w{bsbw:g}.json")
        cases += [Case(m, bsbw, platform, workload, args.batsim, not args.ptask_only)
                  for m in args.modules]
    return cases


def _fmt(m: Measure) -> str:
    return f"{m.turnaround:8.1f} {m.penalty:6.3f} {m.coallocated:5.3f}"


def _agreement(rows: list[Row], path: Path) -> list[str]:
    """How many rows give the SimGrid figures of table ``path`` (made with real Batsim)."""
    reference: dict[tuple[str, float], tuple[float, float, float]] = {}
    for line in path.read_text().splitlines():
        parts = line.replace("|", " ").split()
        if line.startswith("#") or len(parts) < 5 or parts[0] not in MODULES:
            continue
        reference[(parts[0], float(parts[1]))] = (float(parts[2]), float(parts[3]),
                                                   float(parts[4]))
    same, worst, compared = 0, 0.0, 0
    for r in rows:
        ref = reference.get((r.case.module, r.case.bsbw))
        if ref is None:
            continue
        compared += 1
        ours = (round(r.simgrid.turnaround, 1), round(r.simgrid.penalty, 3),
                round(r.simgrid.coallocated, 3))
        same += ours == ref
        worst = max(worst, abs(ours[0] - ref[0]) / ref[0])
    return [f"# agreement with {path.name} (real Batsim): {same}/{compared} rows give the same "
            f"SimGrid figures to the printed digit; largest turnaround difference "
            f"{100 * worst:.2f} %"]


def main(argv: list[str] | None = None) -> int:
    """Run every module at every BSBW under the three models; print and save the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clusters", type=int, default=4)
    parser.add_argument("--nodes", type=int, default=20, help="nodes per cluster")
    parser.add_argument("--node-range", type=int, nargs=2, default=[2, 10], metavar=("LO", "HI"))
    parser.add_argument("--link-bandwidth", default="1Gbps")
    parser.add_argument("--jobs", type=int, default=400)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--comm-phase", type=float, default=10.0)
    parser.add_argument("--profiles", default="simgrid", choices=("simgrid", "simgrid-mean"),
                        help="simgrid-mean: PPBW as the mean rate over the whole run")
    parser.add_argument("--bsbw", type=float, nargs="+", default=[300, 600, 1200],
                        metavar="MBPS")
    parser.add_argument("--modules", nargs="+", default=list(MODULES), choices=MODULES)
    parser.add_argument("--batsim", type=Path, default=BATSIM)
    parser.add_argument("--offline", action="store_true",
                        help="no Batsim: the ptask job model in the SimGrid column")
    parser.add_argument("--ptask-only", action="store_true",
                        help="with --offline: the ptask model only (no bandwidth, ideal)")
    parser.add_argument("--compare", type=Path, default=None,
                        help="a table of this script made with real Batsim: agreement rows")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--out", default="coalloc_simgrid")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(message)s")
    if args.offline:
        args.batsim = None
    elif not args.batsim.is_file():
        raise SystemExit(f"no Batsim at {args.batsim}: build it with ../shared/batsim/build.sh")
    with tempfile.TemporaryDirectory(prefix="coalloc_simgrid_in_") as tmp:
        cases = _inputs(args, Path(tmp))
        rows = sorted(pool_map(run_case, cases, args.workers, label="cases"),
                      key=lambda r: (r.case.bsbw, MODULES.index(r.case.module)))
    command = "python bench/fidelity/coalloc_simgrid.py " + " ".join(argv or sys.argv[1:])
    lo, hi = args.node_range
    lines = [f"# command: {command}",
             f"# {args.clusters} clusters x {args.nodes} nodes, {args.link_bandwidth} uplinks; "
             f"preset coalloc-6.1 profiles={args.profiles}, nodes UNIF[{lo}, {hi}], "
             f"{args.jobs} jobs, seed {args.seed}, comm_phase {args.comm_phase:g} s; "
             + ("SimGrid column: the embedded simulator's ptask model (SimGrid's ptask_L07, "
                "no Batsim)" if args.offline else "Batsim 4.2.1 (SimGrid ptask_L07)")
             + " vs embedded simulator, same files",
             "# per model: tat = average turnaround (s), pen = mean penalty of co-allocated "
             "jobs (runtime / T_E), co = their share of the jobs run; rej = rejected jobs",
             f"# {'module':<8} {'bsbw':>5} | {'SimGrid: tat':>14} {'pen':>6} {'co':>5} | "
             f"{'bandwidth: tat':>14} {'pen':>6} {'co':>5} | {'ideal: tat':>14} "
             f"{'co':>5} | rej | wall"]
    for r in rows:
        lines.append(f"{r.case.module:<10} {r.case.bsbw:5.0f} | {'':6}{_fmt(r.simgrid)} | "
                     f"{'':6}{_fmt(r.bandwidth)} | {'':6}{r.ideal.turnaround:8.1f} "
                     f"{r.ideal.coallocated:5.3f} | {r.simgrid.rejected:3d} | "
                     f"{r.wall_s:5.1f} s")
    if args.compare is not None:
        lines += _agreement(rows, args.compare)
    for line in lines:
        print(line)
    path = write_results(args.out, lines)
    log.info("results written to %s", path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
