"""The bandwidth-centric co-allocation model (Jones et al., seed 003, §3.3-§3.7, eq. 1-8).

Pure functions first (eq. 1-2 on Fig. 5, Steps 1-5 with eq. 4 on two saturated links,
eq. 6-7 after several changes, exact with fractions), then the job models in the
embedded simulator with exact times: an end that slides later when a second job shares
a link and earlier when it ends, ``fixed-penalty`` and ``ideal`` on the same case, the
walltime cap, and the penalty columns of ``jobs.csv`` / the mean in ``metrics.json``.
"""

from __future__ import annotations

import csv
import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from batpolicy.errors import ConfigError
from batpolicy.io.outputs import OutputPaths
from batpolicy.io.workload import JobSpec, Workload
from batpolicy.platforms.bandwidth import (
    Residual,
    allot,
    link_demands,
    ppbw_from_bsbw,
    required_bandwidth,
    saturation,
)
from batpolicy.platforms.generators import multicluster, write_platform
from batpolicy.platforms.model import Platform
from batpolicy.platforms.xml import read_platform
from batpolicy.protocol import types as t
from batpolicy.protocol.intervals import MachineSet
from batpolicy.protocol.types import JobState
from batpolicy.simulator import SimOptions, Simulator
from batpolicy.simulator.jobmodels.coalloc import EXTRA_COLUMNS
from batpolicy.simulator.jobmodels.registry import make_job_model
from batpolicy.simulator.run import run_simulation


# ------------------------------------------------------------------------------ eq. 1-5, 8
def test_fig5_example_eq2() -> None:
    ppbw = Fraction(7)
    # six nodes: three on cluster 1, two on cluster 2, one on cluster 3 (Fig. 5)
    assert required_bandwidth(3, 6, ppbw) == (3 * ppbw) * Fraction((6 - 3) * 3, (6 - 1) * 3)
    assert link_demands({"c1": 3, "c2": 2, "c3": 1}, ppbw) == {
        "c1": 3 * ppbw * Fraction(3, 5), "c2": 2 * ppbw * Fraction(4, 5), "c3": ppbw}
    assert link_demands({"c1": 6}, ppbw) == {}  # not co-allocated: no link used


def test_eq8_makes_a_bisected_job_need_its_bsbw() -> None:
    for n in (2, 10, 50, 90):
        assert required_bandwidth(n // 2, n, ppbw_from_bsbw(Fraction(500), n)) == 500
    assert ppbw_from_bsbw(1000.0, 1) == 0.0


def test_saturation_eq3() -> None:
    assert saturation(100.0, 50.0) == 2.0       # not saturated
    assert saturation(100.0, 400.0) == 0.25     # saturated
    assert saturation(None, 400.0) == float("inf")


def test_step3_corrects_the_most_saturated_link_first() -> None:
    # link A: 100 for 200 + 200 (eq. 3: 0.25); link B: 100 for 100 + 100 (0.5); C unlimited
    demands = {"j1": {"A": 200.0, "B": 100.0}, "j2": {"A": 200.0, "C": 50.0},
               "j3": {"B": 100.0, "C": 50.0}}
    capacity = {"A": 100.0, "B": 100.0, "C": None}
    # A first: j1 and j2 at 0.25; B keeps 100 - 100 x 0.25 = 75 for j3: eq. 4 gives 0.75
    assert allot(demands, capacity) == {"j1": 0.25, "j2": 0.25, "j3": 0.75}
    # B first would have given j1, j3 0.5 and left nothing for j2 on A: the order matters
    # a job unconstrained everywhere keeps full speed; one on no link too
    assert allot({**demands, "j4": {"C": 1e9}, "j5": {}}, capacity)["j4"] == 1.0
    assert allot({"j5": {}}, capacity) == {"j5": 1.0}


def test_allotment_never_exceeds_a_link_and_is_the_same_ratio_on_every_link() -> None:
    demands = {"a": {"x": 300.0, "y": 60.0}, "b": {"x": 100.0, "z": 10.0},
               "c": {"y": 90.0, "z": 95.0}, "d": {"z": 40.0}}
    capacity = {"x": 200.0, "y": 100.0, "z": 100.0}
    factors = allot(demands, capacity)
    for link, cap in capacity.items():
        used = sum(factors[j] * d[link] for j, d in demands.items() if link in d)
        assert used <= cap + 1e-9
    assert factors["a"] == factors["b"] == 0.5  # x: 200 / 400
    # then y: 100 - 30 = 70 left for c's 90 (7/9); z: 100 - 5 = 95 for c and d's 135
    # (19/27): z is now the most saturated, so c and d both get 19/27, and y keeps room
    assert factors["c"] == factors["d"] == pytest.approx(19 / 27)


# ------------------------------------------------------------------------------ eq. 6-7
def test_residual_times_after_several_changes_exact() -> None:
    r = Residual.start(Fraction(100), Fraction(1, 2), now=Fraction(0))
    assert (r.tp, r.tc) == (50, 50)
    assert r.advance(Fraction(0), Fraction(1, 2)) == 150   # co-allocated at half speed
    # t=30: a fifth done (30/150): T_P^R = 40, T_C^R = 80 at half speed -> 160 at 1/4
    assert r.advance(Fraction(30), Fraction(1, 4)) == 230
    assert (r.tp, r.tc) == (40, 160)
    # t=130: half of the 200 s left done: T_P^R = 20, T_C^R = 80 at 1/4 -> 20 at full speed
    assert r.advance(Fraction(130), Fraction(1)) == 170
    assert (r.tp, r.tc, r.remaining) == (20, 20, 40)
    # nothing changes between events: the end stands
    assert r.advance(Fraction(150), Fraction(1)) == 170
    with pytest.raises(ValueError):
        r.advance(Fraction(150), 0.0)


# ------------------------------------------------------------------------------ in the simulator
#: 3 clusters x 4 nodes (c0: 0-3, c1: 4-7, c2: 8-11), 800 bit/s = 100 byte/s per uplink.
def mc_platform(tmp_path: Path, clusters: int = 3, nodes: int = 4,
                bandwidth: str = "800bps") -> Platform:
    path = write_platform(multicluster(clusters, nodes, link_bandwidth=bandwidth),
                          tmp_path / "mc.xml")
    return read_platform(path)


def workload(jobs: list[tuple[str, float, int, float, dict[str, Any]]],
             walltime: float | None = None) -> Workload:
    specs, profiles = [], {}
    for name, sub, res, delay, fields in jobs:
        profile = f"d{delay:g}"
        profiles[profile] = {"type": "delay", "delay": delay}
        raw = {"id": f"w0!{name}", "subtime": sub, "res": res, "profile": profile, **fields}
        specs.append(JobSpec(f"w0!{name}", sub, res, profile, walltime, raw))
    return Workload("w0", specs, profiles)


class Placer:
    """Starts each job at its submission on a given allocation; records completions."""

    def __init__(self, allocs: dict[str, MachineSet]) -> None:
        self.allocs = allocs
        self.ends: dict[str, tuple[float, JobState]] = {}

    def __call__(self, request: t.Request) -> t.Reply:
        out: list[t.Decision] = []
        for event in request.events:
            if isinstance(event, t.JobSubmitted):
                out.append(t.ExecuteJob(event.job_id, self.allocs[event.job_id]))
            elif isinstance(event, t.JobCompleted):
                self.ends[event.job_id] = (event.timestamp, event.job_state)
        return t.Reply(request.now, tuple(out))


#: A: 4 nodes on c0 + c1 (2 + 2), PPBW 75: eq. 1 = 2 x 75 x 2/3 = 100 per link, exactly
#: full. B, from t=20: 2 nodes on c0 + c2, PPBW 100: 100 per link. c0 then carries 200
#: for 100: both at half speed (K = 0.5). Hand-worked ends: at t=20 A has 80 s of its
#: 100 left (40 + 40 at full speed) -> 40 + 80 = end 140; B: 20 + 40 -> end 80. At t=80
#: B ends; A did 60 of its 120 s: 20 + 40 left, communication at full speed again: 20 +
#: 20 -> end 120 (earlier than 140). Penalties: A 120/100, B 60/40.
TWO_JOBS = [("A", 0.0, 4, 100.0, {"ppbw": 75.0, "comp_share": 0.5}),
            ("B", 20.0, 2, 40.0, {"ppbw": 100.0, "comp_share": 0.5})]
TWO_ALLOCS = {"w0!A": MachineSet.of((0, 1), (4, 5)), "w0!B": MachineSet.of(2, 8)}


def simulate(tmp_path: Path, model: str, jobs: list[Any] = TWO_JOBS,
             allocs: dict[str, MachineSet] = TWO_ALLOCS, walltime: float | None = None,
             ) -> tuple[Placer, Simulator]:
    placer = Placer(allocs)
    sim = Simulator([workload(jobs, walltime)], mc_platform(tmp_path),
                    options=SimOptions(default_job_model=model))
    sim.run(placer)
    return placer, sim


def test_an_end_slides_later_then_earlier_when_the_other_job_ends(tmp_path: Path) -> None:
    placer, sim = simulate(tmp_path, "bandwidth")
    ok = JobState.COMPLETED_SUCCESSFULLY
    assert placer.ends == {"w0!B": (80.0, ok), "w0!A": (120.0, ok)}
    stats = sim.job_model_stats()
    assert stats["nb_coallocated"] == 2
    assert stats["mean_coalloc_penalty"] == pytest.approx((1.2 + 1.5) / 2)
    assert stats["nb_allotments"] == 3  # t=0 (A starts), t=20 (B starts), t=80 (B ends)


def test_a_job_on_one_cluster_or_without_ppbw_is_not_slowed(tmp_path: Path) -> None:
    jobs = [*TWO_JOBS, ("C", 20.0, 2, 40.0, {"ppbw": 1e6})]  # C inside c2: no link
    placer, _ = simulate(tmp_path, "bandwidth", jobs, {**TWO_ALLOCS, "w0!C": MachineSet.of(9, 10)})
    assert placer.ends["w0!C"][0] == 60.0 and placer.ends["w0!A"][0] == 120.0
    quiet = [TWO_JOBS[0], ("B", 20.0, 2, 40.0, {})]  # B has no ppbw: uses no bandwidth
    placer, _ = simulate(tmp_path, "bandwidth", quiet)
    assert placer.ends == {"w0!A": (100.0, JobState.COMPLETED_SUCCESSFULLY),
                           "w0!B": (60.0, JobState.COMPLETED_SUCCESSFULLY)}


def test_fixed_penalty_and_ideal_on_the_same_case(tmp_path: Path) -> None:
    placer, _ = simulate(tmp_path, "fixed-penalty:1.5")
    assert {k: v[0] for k, v in placer.ends.items()} == {"w0!A": 150.0, "w0!B": 80.0}
    placer, sim = simulate(tmp_path, "ideal")
    assert {k: v[0] for k, v in placer.ends.items()} == {"w0!A": 100.0, "w0!B": 60.0}
    assert sim.job_model_stats()["mean_coalloc_penalty"] == 1.0
    with pytest.raises(ConfigError, match="fixed-penalty"):
        make_job_model("fixed-penalty:fast")
    with pytest.raises(ConfigError, match="takes no argument"):
        make_job_model("ideal:2")


def test_the_walltime_caps_a_slowed_job(tmp_path: Path) -> None:
    placer, _ = simulate(tmp_path, "bandwidth", walltime=110.0)
    assert placer.ends["w0!A"] == (110.0, JobState.COMPLETED_WALLTIME_REACHED)
    assert placer.ends["w0!B"] == (80.0, JobState.COMPLETED_SUCCESSFULLY)


def test_penalty_columns_in_jobs_csv_and_mean_in_metrics(tmp_path: Path) -> None:
    platform = mc_platform(tmp_path)
    paths = OutputPaths.in_dir(tmp_path / "out")
    run_simulation(lambda on_record: Simulator(
        [workload(TWO_JOBS)], platform, options=SimOptions(default_job_model="bandwidth"),
        on_record=on_record), Placer(TWO_ALLOCS), paths, progress=False,
        extra_columns=EXTRA_COLUMNS)
    rows = {r["job_id"]: r for r in csv.DictReader(paths.jobs.open())}
    assert (rows["A"]["finish_time"], rows["A"]["coalloc_clusters"],
            rows["A"]["coalloc_penalty"]) == ("120.000000", "2", "1.200000")
    assert rows["B"]["coalloc_penalty"] == "1.500000"
    metrics = json.loads(paths.metrics.read_text())
    assert metrics["job_model_stats"]["mean_coalloc_penalty"] == pytest.approx(1.35)

