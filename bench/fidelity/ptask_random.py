"""Random parallel-task workloads with communication: real Batsim vs fake-batsim.

Beyond Batsim's own test suite (``bench/fidelity/batsim_testsuite.py``): seeded random workloads
of ``parallel`` (random cpu vector and com matrix), ``parallel_homogeneous`` (with com),
``parallel_homogeneous_total`` and ``composed`` profiles (sequences repeated), some jobs
cut by their walltime, on generated multi-cluster and rack platforms
(``batpolicy platform multicluster/racks``, uplinks with latency so that the
communications cross shared, latency-bound links), each scheduled by batsched's
``easy_bf``, ``fcfs`` and ``conservative_bf`` beside real Batsim 4.2.1 and beside
``batpolicy fake-batsim``; jobs compared as ``tests/batsim_suite.py`` does (state,
allocation, start and finish within 1e-6 s).

    python bench/fidelity/ptask_random.py --seeds 3 --jobs 40 \
        [--save bench/results/ptask_random.txt]

How Batsim's own messages are modelled (:data:`CAUSE`): as SimGrid does, inside the
parallel-task solver, sharing links with the jobs' tasks.

Needs Batsim built (``/opt/batsim-4.2.1``).
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "tests"))

import batsim_suite  # noqa: E402

PLATFORMS = {
    "multicluster": ["multicluster", "--clusters", "3", "--nodes", "8",
                     "--link-bandwidth", "100MBps", "--link-latency", "50us"],
    "racks": ["racks", "--racks", "4", "--nodes", "6", "--link-bandwidth", "1Gbps",
              "--link-latency", "20us"],
}
ALGORITHMS = ("easy_bf", "fcfs", "conservative_bf")
#: How the simulator times Batsim's own messages (the saved table's header says it).
CAUSE = ("Batsim's internal messages are 1-byte SimGrid communications (ipp.cpp: "
         "mailbox->put(message, 1)), which under ptask_L07 are 2-host parallel tasks "
         "(NetworkL07Model::communicate) in the same fair-bottleneck system as the jobs' "
         "tasks; the simulator's latency driver sends them through its parallel-task model "
         "(PtaskModel.message_network), so a message from a job's first machine to the master "
         "shares the links of the running tasks and slows them for its few nanoseconds, as in "
         "Batsim. Before that (messages timed apart, in closed form), 41/48 runs were "
         "identical and the others 1-2 us apart.")


def random_workload(rng: random.Random, nb_jobs: int, nb_res: int) -> dict:
    """A seeded workload of communicating parallel profiles (module docstring)."""
    profiles: dict[str, dict] = {}
    jobs = []
    t = 0.0
    for i in range(nb_jobs):
        t += rng.expovariate(1 / 8.0)
        res = rng.choice([1, 2, 3, 4, 6, 8, 12])
        res = min(res, nb_res)
        kind = rng.choice(["parallel", "homogeneous", "total", "composed"])
        name = f"p{i}"
        if kind == "parallel":
            profiles[name] = {"type": "parallel",
                              "cpu": [rng.uniform(1e9, 2e10) for _ in range(res)],
                              "com": [0.0 if a == b or rng.random() < 0.3 else
                                      rng.uniform(1e6, 5e8)
                                      for a in range(res) for b in range(res)]}
        elif kind == "homogeneous":
            profiles[name] = {"type": "parallel_homogeneous", "cpu": rng.uniform(1e9, 2e10),
                              "com": rng.uniform(1e6, 3e8)}
        elif kind == "total":
            profiles[name] = {"type": "parallel_homogeneous_total",
                              "cpu": rng.uniform(1e10, 1e11), "com": rng.uniform(1e7, 1e9)}
        else:
            a, b = f"{name}a", f"{name}b"
            profiles[a] = {"type": "parallel_homogeneous", "cpu": rng.uniform(1e9, 5e9),
                           "com": rng.uniform(1e6, 1e8)}
            profiles[b] = {"type": "delay", "delay": round(rng.uniform(0.5, 5), 3)}
            profiles[name] = {"type": "composed", "repeat": rng.randint(1, 3), "seq": [a, b]}
        walltime = round(rng.uniform(5, 60), 1)
        jobs.append({"id": str(i), "subtime": round(t, 3), "res": res, "walltime": walltime,
                     "profile": name})
    return {"nb_res": nb_res, "jobs": jobs, "profiles": profiles}


def _worst(real: Path, fake: Path) -> float | None:
    """Largest start/finish difference of two jobs.csv, None if states or allocations differ."""
    a, b = batsim_suite.read_jobs(real), batsim_suite.read_jobs(fake)
    if a is None or b is None or a.keys() != b.keys():
        return None
    worst = 0.0
    for key, row in a.items():
        other = b[key]
        if (row["final_state"], row["allocated_resources"]) != \
                (other["final_state"], other["allocated_resources"]):
            return None
        for column in ("starting_time", "finish_time"):
            if row[column] and other[column]:
                worst = max(worst, abs(float(row[column]) - float(other[column])))
    return worst


def main(argv: list[str] | None = None) -> int:
    """Generate, run both sides, print one row per run and the counts."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batsim-prefix", type=Path, default=Path("/opt/batsim-4.2.1"))
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--jobs", type=int, default=40)
    ap.add_argument("--work", type=Path, default=None)
    ap.add_argument("--save", type=Path)
    args = ap.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="ptask-random-"))
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    for pname, pargs in PLATFORMS.items():
        platform = work / f"{pname}.xml"
        subprocess.run([sys.executable, "-m", "batpolicy", "platform", *pargs, "-o",
                        str(platform)], check=True, capture_output=True)
        nb_res = 24
        for seed in range(args.seeds):
            workload = work / f"{pname}-seed{seed}.json"
            workload.write_text(json.dumps(random_workload(random.Random(seed), args.jobs,
                                                           nb_res)))
            for algo in ALGORITHMS:
                name = f"{pname}-seed{seed}-{algo}"
                case = batsim_suite.Case(
                    test=name, name=name,
                    batcmd=f"batsim -p {platform} -w {workload} -e {work / name / 'out'}",
                    schedcmd=f"batsched -v {algo}")
                real = batsim_suite.run_case(case, "batsim", work / name / "batsim",
                                             batsim_prefix=args.batsim_prefix, timeout=300)
                fake = batsim_suite.run_case(case, "fake", work / name / "fake",
                                             batsim_prefix=args.batsim_prefix, timeout=300)
                c = batsim_suite.compare(real, fake)
                rows.append((name, c.verdict, real.outcome(), fake.outcome(), c.diffs[:3],
                             real.seconds, fake.seconds, _worst(real.prefix, fake.prefix)))
                print(f"{c.verdict:9} {name}", *c.diffs[:2], sep="\n  " if c.diffs else "",
                      flush=True)
    lines = [f"{'verdict':9} {'batsim':8} {'fake':8} {'batsim s':>9} {'fake s':>7} "
             f"{'worst dt':>9}  run"]
    for name, verdict, r, f, diffs, rs, fs, worst in rows:
        lines.append(f"{verdict:9} {r[:8]:8} {f[:8]:8} {rs:9.2f} {fs:7.2f} "
                     f"{'' if worst is None else f'{worst:.6f}':>9}  {name}")
        lines += [f"{'':57}{d}" for d in diffs]
    same = sum(v == "same" for _, v, *_ in rows)
    close = sum(w is not None and w <= 2.5e-6 for *_, w in rows)
    lines += ["", f"{same}/{len(rows)} runs: same jobs, schedule.csv and outcome "
                  f"({args.jobs} jobs each, seeds 0-{args.seeds - 1})",
              f"{close}/{len(rows)} runs: same states and allocations, every start and finish "
              "within 2 us (worst dt: the largest difference of a printed time, s)"]
    text = "\n".join(lines) + "\n"
    if args.save:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, cwd=HERE).stdout.strip()
        args.save.write_text(f"# commit {commit}; command: python bench/fidelity/ptask_random.py "
                             f"{' '.join(argv if argv is not None else sys.argv[1:])}\n"
                             f"# messages: {CAUSE}\n" + text)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
