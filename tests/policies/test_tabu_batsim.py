"""``serve --policy tabu`` beside real Batsim 4.2.1 on machines of several speeds (issue 12).

Klusáček et al. 2007 §2: machines of several CPUs, each of one speed; a job needs R_j
CPUs of one machine and has a deadline. The platform is ``batpolicy platform machines``
(4 machines: 1-8 CPUs, 1-3 GFlop/s); the jobs have ``parallel_homogeneous`` profiles of
``cpu`` flop per host and no communication, so SimGrid runs each for ``cpu / speed`` of
its host, and the embedded simulator's ``--job-model speed`` does the same (its
reference speed only converts ``delay`` profiles, none here). Deadlines are tight
(0.5-1.2 × the run time at 1 GFlop/s), so some jobs are late and tabu has moves to try.

Shown: the same jobs are late in Batsim's jobs.csv as in ``simulate --job-model speed``,
and in fact the very same start times, allocations and finish times (zero-latency
platform). The speeds reach the daemon both from ``--platform`` and from the hosts'
``speed`` properties that Batsim forwards in SIMULATION_BEGINS. Serving ``mt-edf``
instead makes a different set of late jobs here, so the comparison tells tabu apart.

Runs when real Batsim is built (outside the repository); skipped otherwise.
"""

from __future__ import annotations

import csv
import json
import math
import random
from pathlib import Path

import pytest

from batpolicy.app.cli import main
from batpolicy.platforms.xml import read_platform

from clirun import serve_beside_batsim

#: cpus,speed of each machine (``batpolicy platform machines --spec``).
MACHINES = "cpus,speed\n4,1Gf\n2,2Gf\n8,1.5Gf\n1,3Gf\n"
NB_JOBS = 30


def write_workload(path: Path, seed: int = 3) -> dict[str, tuple[float, float]]:
    """30 jobs of 1-4 CPUs with deadlines; returns id -> (flop per host, deadline)."""
    rng = random.Random(seed)
    jobs, profiles, at, truth = [], {}, 0.0, {}
    for i in range(NB_JOBS):
        at = round(at + rng.expovariate(1 / 15.0), 3)
        res = rng.choice([1, 1, 2, 4])
        work = round(rng.uniform(60.0, 400.0), 1)  # seconds at 1 GFlop/s
        deadline = round(at + work * rng.uniform(0.5, 1.2), 3)
        profiles[f"p{i}"] = {"type": "parallel_homogeneous", "cpu": work * 1e9, "com": 0.0}
        jobs.append({"id": str(i), "subtime": at, "res": res, "profile": f"p{i}",
                     "walltime": math.ceil(1.2 * work), "deadline": deadline})
        truth[str(i)] = (work * 1e9, deadline)
    path.write_text(json.dumps({"nb_res": 15, "jobs": jobs, "profiles": profiles}))
    return truth


def _rows(path: Path) -> dict[str, dict[str, str]]:
    with path.open() as f:
        return {r["job_id"].split("!")[-1]: r for r in csv.DictReader(f)}


def _late(rows: dict[str, dict[str, str]], truth: dict[str, tuple[float, float]]) -> set[str]:
    return {j for j, r in rows.items() if float(r["finish_time"]) > truth[j][1]}


@pytest.mark.batsim
def test_serve_tabu_beside_batsim_has_the_late_jobs_of_simulate(tmp_path: Path,
                                                               batsim_prefix: Path) -> None:
    (tmp_path / "machines.csv").write_text(MACHINES)
    platform, workload = tmp_path / "machines.xml", tmp_path / "w.json"
    assert main(["platform", "machines", "--spec", str(tmp_path / "machines.csv"),
                 "-o", str(platform)]) == 0
    truth = write_workload(workload)
    assert main(["simulate", "--policy", "tabu", "--job-model", "speed", "-p", str(platform),
                 "-w", str(workload), "-o", str(tmp_path / "sim"), "-q", "--no-progress"]) == 0
    serve_beside_batsim(batsim_prefix, platform, workload, tmp_path / "b", ["--policy", "tabu"])
    real, ours = _rows(tmp_path / "b_jobs.csv"), _rows(tmp_path / "sim" / "jobs.csv")
    assert len(real) == len(ours) == NB_JOBS
    assert {r["final_state"] for r in real.values()} == {"COMPLETED_SUCCESSFULLY"}
    # SimGrid scaled each run time by its machine's speed (hosts of one machine share it)
    speeds = {m.id: m.speed for m in read_platform(platform).machines}
    used = set()
    for j, row in real.items():
        speed = speeds[int(row["allocated_resources"].split("-")[0].split(" ")[0])]
        used.add(speed)
        assert float(row["execution_time"]) == pytest.approx(truth[j][0] / speed, abs=1e-5)
    assert len(used) >= 3
    # the same jobs are late, and (zero-latency platform) the very same schedule
    late = _late(real, truth)
    assert 0 < len(late) < NB_JOBS
    assert late == _late(ours, truth)
    metrics = json.loads((tmp_path / "sim" / "metrics.json").read_text())
    assert metrics["nb_late_jobs"] == len(late)
    assert metrics["policy_stats"]["nb_moves_accepted"] > 0  # tabu did move jobs
    for j in real:
        assert [real[j][k] for k in ("starting_time", "allocated_resources", "finish_time")] \
            == [ours[j][k] for k in ("starting_time", "allocated_resources", "finish_time")], j
