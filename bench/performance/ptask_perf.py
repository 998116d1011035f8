"""Speed of the parallel-task model: a 10,000-job communicating workload on 512 hosts.

Writes a 512-host multi-cluster platform (8 clusters of 64, uplinks of 1 Gbps and 50 us)
and a seeded workload of ``parallel_homogeneous``, ``parallel_homogeneous_total``,
``parallel`` (8 machines at most, so the matrices stay small) and ``composed``
profiles, all moving data; then times ``batpolicy simulate --policy easy`` (batsched's
``easy_bf``, decision for decision) and real Batsim 4.2.1 + batsched ``easy_bf`` on the
same inputs, and checks both wrote the same jobs.

    python bench/performance/ptask_perf.py [--jobs 10000] [--rounds 2] [--skip-batsim] [--save FILE]
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "tests"))

import batsim_suite  # noqa: E402


def workload(rng: random.Random, nb_jobs: int, nb_res: int) -> dict:
    """Communicating parallel-task jobs arriving at a load the 512 hosts sustain."""
    profiles: dict[str, dict] = {}
    jobs = []
    t = 0.0
    for i in range(nb_jobs):
        t += rng.expovariate(1 / 1.5)
        res = rng.choice([1, 2, 4, 8, 16, 32, 64])
        kind = rng.choice(["homogeneous", "total", "parallel", "composed"])
        name = f"p{i}"
        if kind == "parallel" and res <= 8:
            profiles[name] = {"type": "parallel",
                              "cpu": [rng.uniform(1e10, 1e11) for _ in range(res)],
                              "com": [0.0 if a == b else rng.uniform(1e6, 1e8)
                                      for a in range(res) for b in range(res)]}
        elif kind == "total":
            profiles[name] = {"type": "parallel_homogeneous_total",
                              "cpu": rng.uniform(1e11, 1e12), "com": rng.uniform(1e8, 1e9)}
        elif kind == "composed":
            a = f"{name}a"
            profiles[a] = {"type": "parallel_homogeneous", "cpu": rng.uniform(1e10, 3e10),
                           "com": rng.uniform(1e5, 1e7)}
            profiles[name] = {"type": "composed", "repeat": rng.randint(1, 4), "seq": [a]}
        else:
            profiles[name] = {"type": "parallel_homogeneous", "cpu": rng.uniform(1e10, 1e11),
                              "com": rng.uniform(1e5, 1e7)}
        jobs.append({"id": str(i), "subtime": round(t, 3), "res": res,
                     "walltime": round(rng.uniform(100, 400), 1), "profile": name})
    return {"nb_res": nb_res, "jobs": jobs, "profiles": profiles}


def _cpu() -> float:
    """CPU seconds (user + system) of the waited-for child processes so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> int:
    """Generate the inputs, time both sides alternately, compare, save the figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=10000)
    ap.add_argument("--rounds", type=int, default=1, help="alternated runs of each side")
    ap.add_argument("--batsim-prefix", type=Path, default=Path("/opt/batsim-4.2.1"))
    ap.add_argument("--work", type=Path, default=None)
    ap.add_argument("--skip-batsim", action="store_true")
    ap.add_argument("--save", type=Path, default=None)
    args = ap.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="ptask-perf-"))
    work.mkdir(parents=True, exist_ok=True)
    platform, wl = work / "mc512.xml", work / f"ptask{args.jobs}.json"
    subprocess.run([sys.executable, "-m", "batpolicy", "platform", "multicluster",
                    "--clusters", "8", "--nodes", "64", "--link-bandwidth", "1Gbps",
                    "--link-latency", "50us", "-o", str(platform)], check=True,
                   capture_output=True)
    wl.write_text(json.dumps(workload(random.Random(0), args.jobs, 512)))
    case = batsim_suite.Case(test="perf", name="perf",
                             batcmd=f"batsim -p {platform} -w {wl} -e {work / 'b' / 'out'}",
                             schedcmd="batsched -v easy_bf")
    ours_s: list[tuple[float, float]] = []
    real_s: list[tuple[float, float]] = []
    real = None
    for _ in range(args.rounds):
        cpu, began = _cpu(), time.perf_counter()
        subprocess.run([sys.executable, "-m", "batpolicy", "simulate", "--policy", "easy",
                        "-p", str(platform), "-w", str(wl), "-o", str(work / "ours"),
                        "--quiet"], check=True)
        ours_s.append((time.perf_counter() - began, _cpu() - cpu))
        print(f"simulate --policy easy: {ours_s[-1][0]:.1f} s wall, {ours_s[-1][1]:.1f} s CPU",
              flush=True)
        if args.skip_batsim:
            continue
        cpu = _cpu()
        real = batsim_suite.run_case(case, "batsim", work / "batsim",
                                     batsim_prefix=args.batsim_prefix, timeout=7200)
        real_s.append((real.seconds, _cpu() - cpu))
        print(f"Batsim + batsched easy_bf: {real_s[-1][0]:.1f} s wall, {real_s[-1][1]:.1f} s "
              f"CPU ({real.outcome()})", flush=True)
    lines = [f"simulate --policy easy (ptask model): wall {_fmt(ours_s, 0)}, CPU "
             f"{_fmt(ours_s, 1)}"]
    if real is not None:
        ref = batsim_suite.read_jobs(real.prefix) or {}
        with open(work / "ours" / "jobs.csv", newline="") as f:
            mine = {(r.get("workload_name", ""), r["job_id"]): r for r in csv.DictReader(f)}
        differ = [k for k in ref if k not in mine or any(
            abs(float(ref[k][c]) - float(mine[k][c])) > 1e-6
            for c in batsim_suite.TIME_COLUMNS) or
            ref[k]["allocated_resources"] != mine[k]["allocated_resources"]]
        lines += [f"Batsim 4.2.1 + batsched easy_bf: wall {_fmt(real_s, 0)}, CPU "
                  f"{_fmt(real_s, 1)} ({real.outcome()})",
                  f"ratio Batsim / simulate: wall {_ratio(real_s, ours_s, 0):.2f}x, CPU "
                  f"{_ratio(real_s, ours_s, 1):.2f}x (medians)",
                  f"jobs differing from Batsim's (allocation, or start/finish > 1e-6 s): "
                  f"{len(differ)}/{len(ref)}"]
    print("\n".join(lines))
    if args.save:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, cwd=HERE).stdout.strip()
        args.save.write_text(f"# commit {commit}; command: python bench/performance/ptask_perf.py "
                             f"{' '.join(argv if argv is not None else sys.argv[1:])}\n"
                             f"# {args.jobs} communicating parallel-task jobs on 512 hosts "
                             f"(8 clusters x 64, 1 Gbps / 50 us uplinks), {args.rounds} "
                             "alternated runs per side; CPU = user + system of the processes "
                             "(Batsim and batsched together)\n" + "\n".join(lines) + "\n")
    return 0


def _fmt(runs: list[tuple[float, float]], i: int) -> str:
    return " / ".join(f"{r[i]:.1f} s" for r in runs)


def _ratio(a: list[tuple[float, float]], b: list[tuple[float, float]], i: int) -> float:
    return statistics.median(r[i] for r in a) / statistics.median(r[i] for r in b)


if __name__ == "__main__":
    sys.exit(main())
