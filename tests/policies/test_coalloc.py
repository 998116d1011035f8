"""Policy ``coalloc`` (seed 003 §4-§5) end to end in the embedded simulator, paranoid.

A generated multi-cluster (3 clusters of 4 nodes: cluster0 = 0-3, cluster1 = 4-7,
cluster2 = 8-11; 800 bit/s = 100 byte/s uplinks) and hand-made jobs with ``origin`` and
``ppbw``; every allocation below is worked out by hand from §5's template (LA, then
MIG, then the module) over the FPFS walk of §4.1.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from batpolicy.errors import ConfigError
from batpolicy.io.coalloc_traces import coalloc_workload, preset
from batpolicy.io.workload import JobSpec, Workload
from batpolicy.platforms.generators import multicluster, write_platform
from batpolicy.platforms.xml import read_platform
from batpolicy.policies.registry import make_policy
from batpolicy.protocol.types import JobState
from batpolicy.scheduler.dispatch import Dispatcher
from batpolicy.simulator import SimOptions, Simulator

OK = JobState.COMPLETED_SUCCESSFULLY


def mc(tmp_path: Path, clusters: int = 3, nodes: int = 4, bandwidth: str = "800bps") -> Any:
    return read_platform(write_platform(multicluster(clusters, nodes, link_bandwidth=bandwidth),
                                        tmp_path / f"mc{clusters}x{nodes}.xml"))


def workload(jobs: list[tuple[str, float, int, float, str, float]]) -> Workload:
    """(name, subtime, res, runtime, origin, ppbw) -> a workload."""
    specs, profiles = [], {}
    for name, sub, res, delay, origin, ppbw in jobs:
        profiles[f"d{delay:g}"] = {"type": "delay", "delay": delay}
        raw = {"id": f"w0!{name}", "subtime": sub, "res": res, "profile": f"d{delay:g}",
               "origin": origin, "ppbw": ppbw, "comp_share": 0.5}
        specs.append(JobSpec(f"w0!{name}", sub, res, f"d{delay:g}", None, raw))
    return Workload("w0", specs, profiles)


def run(tmp_path: Path, jobs: list[Any], model: str = "ideal", **params: str
        ) -> tuple[dict[str, tuple[float | None, float | None, str]], Any]:
    policy = make_policy("coalloc", params)
    sim = Simulator([workload(jobs)], mc(tmp_path), options=SimOptions(default_job_model=model))
    result = sim.run(Dispatcher(policy, paranoid=True).handle)
    assert result.complete
    return ({r.name: (r.start, r.finish, str(r.alloc) if r.alloc is not None else "")
             for r in result.records}, policy)


#: A fills cluster0 but 1 node; B (origin cluster0) migrates to the cluster with the
#: fewest free nodes that fits: cluster1 (4) and cluster2 (4) tie -> cluster1; C (origin
#: cluster2, 2 nodes) runs locally; D (origin cluster0, 2 nodes) cannot go local (1 free)
#: and migrates: cluster1 and cluster2 both have 2 free: the first, cluster1.
STEPS = [("A", 0.0, 3, 100.0, "cluster0", 0.0), ("B", 1.0, 2, 100.0, "cluster0", 0.0),
         ("C", 2.0, 2, 100.0, "cluster2", 0.0), ("D", 3.0, 2, 100.0, "cluster0", 0.0)]


def test_local_then_migration_to_the_fewest_free_nodes(tmp_path: Path) -> None:
    jobs = [*STEPS, ("E", 4.0, 1, 100.0, "cluster1", 0.0)]
    records, policy = run(tmp_path, jobs, module="none")
    assert records["A"] == (0.0, 100.0, "0-2")      # LA
    assert records["B"] == (1.0, 101.0, "4-5")      # MIG: 4 vs 4 free, platform order
    assert records["C"] == (2.0, 102.0, "8-9")      # LA
    assert records["D"] == (3.0, 103.0, "6-7")      # MIG: cluster1 and cluster2 have 2
    assert records["E"] == (4.0, 104.0, "3")        # cluster1 full: MIG to cluster0 (1
    #                                                 free), not cluster2 (2 free)
    stats = policy.stats()
    assert (stats["nb_started_local"], stats["nb_started_migrated"],
            stats["nb_started_coallocated"]) == (2, 3, 0)


def test_first_fit_coallocates_largest_free_first_fpfs(tmp_path: Path) -> None:
    # after A, B, C: free = cluster0 {3}, cluster1 {6, 7}, cluster2 {10, 11}
    jobs = [*STEPS[:3], ("F", 3.0, 5, 50.0, "cluster0", 0.0),
            ("G", 4.0, 6, 50.0, "cluster0", 0.0), ("H", 5.0, 1, 50.0, "cluster1", 0.0)]
    records, _ = run(tmp_path, jobs, module="ff")
    # F spans cluster1 (2, first of the two largest), cluster2 (2), cluster0 (1)
    assert records["F"] == (3.0, 53.0, "3 6-7 10-11")
    # G (6) waits; H (1) arrives at 5 while nothing is free; at 53 F's 5 nodes are
    # free: G (6) does not fit and FPFS passes it; H runs at home (cluster1, LA)
    assert records["H"] == (53.0, 103.0, "6")
    # at 100 A releases 0-2: cluster0 has 4, cluster2 2, cluster1 1 -> G on 4 + 2
    assert records["G"] == (100.0, 150.0, "0-3 10-11")
    # module=none never co-allocates: F and G, larger than any cluster, are rejected
    records, policy = run(tmp_path, jobs, module="none")
    assert records["F"] == records["G"] == (None, None, "")
    assert records["H"] == (5.0, 55.0, "6") and policy.stats()["nb_rejected"] == 2


def test_noshare_keeps_jobs_home_and_rejects_what_can_never_run(tmp_path: Path) -> None:
    jobs = [*STEPS[:2], ("X", 2.0, 5, 10.0, "cluster1", 0.0),
            ("Y", 2.0, 1, 10.0, "nowhere", 0.0)]
    records, policy = run(tmp_path, jobs, module="noshare")
    assert records["B"] == (100.0, 200.0, "0-1")     # waits for cluster0, no migration
    assert records["X"] == (None, None, "")          # 5 > cluster1's 4 nodes: rejected
    assert records["Y"] == (None, None, "")          # unknown origin
    assert policy.stats()["nb_rejected"] == 2


def test_b3_refuses_small_chunks_and_lslt_keeps_a_saturated_link_out(tmp_path: Path) -> None:
    # S (5 nodes, PPBW 150): no cluster has 5 -> largest free first: cluster0 4 + cluster1
    # 1 (0-4); eq. 1 = 4 x 150 x 1/4 = 150 on cluster0's link, 1 x 150 x 4/4 = 150 on
    # cluster1's: both links at level 1.5. U (3, origin cluster2) runs at home (8-10).
    # V (4 nodes) then sees cluster1 {5, 6, 7} (level 1.5) and cluster2 {11} (level 0).
    jobs = [("S", 0.0, 5, 100.0, "cluster0", 150.0), ("U", 1.0, 3, 10.0, "cluster2", 10.0),
            ("V", 2.0, 4, 10.0, "cluster0", 10.0)]
    records, _ = run(tmp_path, jobs, module="b1")
    assert records["S"][2] == "0-4" and records["U"][2] == "8-10"
    # B1 at 100 %: cluster1 is beyond the LSLT, cluster2 alone has 1 node: V waits for U
    # to end (11) and migrates to cluster2
    assert records["V"] == (11.0, 21.0, "8-11")
    records, _ = run(tmp_path, jobs, module="b1", lslt="2")   # 1.5 <= 2: eligible
    assert records["V"] == (2.0, 12.0, "5-7 11")
    # B3 at chunk 0.8 wants ceil(3.2) = 4 nodes of V on one cluster: refuses
    records, _ = run(tmp_path, jobs, module="b3", lslt="2", chunk="0.8")
    assert records["S"][2] == "0-4" and records["V"] == (11.0, 21.0, "8-11")
    records, _ = run(tmp_path, jobs, module="b3", lslt="2", chunk="0.75")  # 3 of 4 fit
    assert records["V"] == (2.0, 12.0, "5-7 11")
    # B3 at 0.85 would need 5 of S on one cluster of 4: S can never start, rejected
    records, _ = run(tmp_path, jobs, module="b3", lslt="2", chunk="0.85")
    assert records["S"] == (None, None, "") and records["V"] == (2.0, 12.0, "0-3")


def test_a1_never_saturates_a_link_beyond_the_lslt(tmp_path: Path) -> None:
    # W (6 nodes, PPBW 60) cannot fit one cluster; on 4 + 2 eq. 1 is 4 x 60 x 2/5 = 96
    # per link (<= 100): A1 accepts; with PPBW 70 it is 112 > 100 on 4+2, and 3+3 gives
    # 3 x 70 x 3/5 = 126: no mapping fits even on idle links: W is rejected
    records, policy = run(tmp_path, [("W", 0.0, 6, 10.0, "cluster0", 60.0)], module="a1",
                          model="bandwidth")
    assert records["W"] == (0.0, 10.0, "0-5")   # no slowdown: the link is not saturated
    assert policy.stats()["nb_started_coallocated"] == 1
    jobs = [("W", 0.0, 6, 10.0, "cluster0", 70.0), ("Z", 1.0, 1, 5.0, "cluster0", 0.0)]
    records, policy = run(tmp_path, jobs, module="a1", model="bandwidth")
    assert records["W"] == (None, None, "") and policy.stats()["nb_rejected"] == 1
    records, _ = run(tmp_path, jobs, module="a1", lslt="1.2", model="bandwidth")
    # at 120 %, 4 + 2 (112) fits: it then runs slowed by 100/112 on its communication
    assert records["W"][2] == "0-5" and records["W"][1] > 10.0


@pytest.mark.parametrize("module", ["ff", "a1", "b1", "b2", "b3", "b4", "none", "noshare"])
def test_every_module_runs_a_generated_workload_to_the_end(tmp_path: Path, module: str
                                                           ) -> None:
    spec = preset("coalloc-6.1", clusters=4, jobs=150, bsbw=62.5e6)
    work = coalloc_workload(spec, seed=3)
    policy = make_policy("coalloc", {"module": module})
    sim = Simulator([work], mc(tmp_path, 4, 100, "1Gbps"),
                    options=SimOptions(default_job_model="bandwidth"))
    result = sim.run(Dispatcher(policy, paranoid=True).handle)
    assert result.complete and result.nb_jobs_success == 150
    stats = policy.stats()
    placed = stats["nb_started_local"] + stats["nb_started_migrated"] + \
        stats["nb_started_coallocated"]
    assert placed == 150
    if module in ("none", "noshare"):
        assert stats["nb_started_coallocated"] == 0 and stats["nb_module_calls"] == 0
    if module == "noshare":
        assert stats["nb_started_migrated"] == 0


def test_parameters_are_checked() -> None:
    with pytest.raises(ConfigError, match="lslt"):
        make_policy("coalloc", {"lslt": "0"})
    with pytest.raises(ConfigError, match="chunk"):
        make_policy("coalloc", {"chunk": "1.5"})
    with pytest.raises(ConfigError, match="module"):
        make_policy("coalloc", {"module": "zz"})


def test_simulate_command_with_the_bandwidth_model(tmp_path: Path) -> None:
    from batpolicy.app.cli import main
    from batpolicy.io.coalloc_traces import write_workload_json

    from clirun import read_jobs, restore_logging  # noqa: F401  (autouse fixture)

    platform = write_platform(multicluster(4, 100, link_bandwidth="1Gbps"), tmp_path / "mc.xml")
    work = write_workload_json(coalloc_workload(preset("coalloc-6.1", jobs=300,
                                                       bsbw=100e6), seed=2), tmp_path / "w.json")
    common = ["simulate", "--policy", "coalloc", "--param", "module=ff", "-p", str(platform),
              "-w", str(work), "-q"]
    assert main([*common, "--job-model", "bandwidth", "-o", str(tmp_path / "bw")]) == 0
    jobs = read_jobs(tmp_path / "bw" / "jobs.csv")
    metrics = json.loads((tmp_path / "bw" / "metrics.json").read_text())
    spans = [row for row in jobs.values() if int(row["coalloc_clusters"]) > 1]
    assert spans and metrics["job_model_stats"]["nb_coallocated"] == len(spans)
    mean = sum(float(r["coalloc_penalty"]) for r in spans) / len(spans)
    assert metrics["job_model_stats"]["mean_coalloc_penalty"] == pytest.approx(mean, rel=1e-5)
    assert mean > 1.0  # 800 Mbps jobs on 1 Gbps links: some co-allocated jobs slow down
    assert main([*common, "--job-model", "fixed-penalty:2", "-o",
                 str(tmp_path / "fx")]) == 0
    fixed = read_jobs(tmp_path / "fx" / "jobs.csv")
    assert {r["coalloc_penalty"] for r in fixed.values() if int(r["coalloc_clusters"]) > 1} \
        == {"2.000000"}
