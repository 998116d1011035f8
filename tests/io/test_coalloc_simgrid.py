"""SimGrid parallel-task profiles of co-allocation jobs (seed 003 §3.3, eq. 1 and 8).

The bytes each profile puts on a cluster's uplink during a communication phase must be
eq. 1's ``BW_i`` times the phase; the computation must add up to ``T_E``; the embedded
simulator must read the same ``T_E`` from these profiles as from the delay ones.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from batpolicy.errors import BatpolicyError
from batpolicy.io.coalloc_simgrid import job_profiles, simgrid_profiles
from batpolicy.io.presets import build_workload, parse_overrides, preset
from batpolicy.platforms.bandwidth import ppbw_from_bsbw, required_bandwidth
from batpolicy.platforms.generators import multicluster, write_platform
from batpolicy.platforms.xml import read_platform
from batpolicy.policies.registry import make_policy
from batpolicy.scheduler.dispatch import Dispatcher
from batpolicy.simulator import SimOptions, Simulator
from batpolicy.simulator.jobmodels.coalloc import profile_runtime

SPEED = 2e9


def uplink_bytes(profile: dict, nodes: int, on_cluster: int) -> float:
    """Bytes a SHARED uplink carries for one phase, both directions of crossing pairs.

    ``com`` bytes go from each node to each other node (Batsim's parallel_homogeneous).
    """
    return 2 * on_cluster * (nodes - on_cluster) * profile["com"]


@pytest.mark.parametrize(("nodes", "on_cluster"), [(2, 1), (6, 3), (10, 3), (37, 1)])
def test_communication_phase_puts_eq1_bandwidth_on_each_uplink(nodes: int,
                                                               on_cluster: int) -> None:
    ppbw = ppbw_from_bsbw(500e6 / 8, nodes)
    profiles = job_profiles("j", 300.0, nodes, 0.7, ppbw, speed=SPEED, comm_phase=10.0)
    comm = profiles["j_c"]
    phase = comm["cpu"] / SPEED  # the phase's length at full speed
    assert phase == pytest.approx(90.0 / profiles["j"]["repeat"])
    assert uplink_bytes(comm, nodes, on_cluster) / phase == pytest.approx(
        required_bandwidth(on_cluster, nodes, ppbw), rel=1e-12)


def test_computation_adds_up_to_te_with_tp_and_tc_shares() -> None:
    profiles = job_profiles("j", 123.4, 8, 0.7, 1e6, speed=SPEED, comm_phase=7.0)
    top = profiles["j"]
    assert top["repeat"] == round(0.3 * 123.4 / 7.0)
    assert profile_runtime(top, profiles, 8, SPEED) == pytest.approx(123.4, rel=1e-12)
    t_p = top["repeat"] * profiles["j_p"]["cpu"] / SPEED
    assert t_p == pytest.approx(0.7 * 123.4) and profiles["j_p"]["com"] == 0


@pytest.mark.parametrize(("nodes", "share", "ppbw"), [(1, 0.7, 1e6), (5, 1.0, 1e6),
                                                      (5, 0.7, 0.0)])
def test_jobs_without_inter_node_traffic_get_one_computation(nodes: int, share: float,
                                                             ppbw: float) -> None:
    assert job_profiles("j", 50.0, nodes, share, ppbw, speed=SPEED) == {
        "j": {"type": "parallel_homogeneous", "cpu": 50.0 * SPEED, "com": 0}}


def test_bad_values_are_one_clear_error() -> None:
    with pytest.raises(BatpolicyError, match="comp_share"):
        job_profiles("j", 10.0, 4, 1.5, 1e6)
    with pytest.raises(BatpolicyError, match="profiles must be delay, simgrid or simgrid-mean"):
        preset("coalloc-6.1", jobs=5, profiles="smpi")
    with pytest.raises(BatpolicyError, match="comm_phase"):
        preset("coalloc-6.1", jobs=5, profiles="simgrid", comm_phase=0.0)
    delay = build_workload(preset("coalloc-6.1", jobs=3), 1)
    for job in delay.jobs:
        del job.raw["ppbw"]
    with pytest.raises(BatpolicyError, match="ppbw"):
        simgrid_profiles(delay)


def test_preset_option_keeps_jobs_and_fields() -> None:
    params = parse_overrides("coalloc-4.3", ["jobs=20", "profiles=simgrid", "nodes_min=2",
                                             "nodes_max=9", "speed=2e9"])
    sim = build_workload(preset("coalloc-4.3", **params), 3)
    delay = build_workload(preset("coalloc-4.3", jobs=20, nodes_min=2, nodes_max=9), 3)
    assert [(j.name, j.subtime, j.res) for j in sim.jobs] == \
        [(j.name, j.subtime, j.res) for j in delay.jobs]
    assert sim.nb_res == delay.nb_res == max(j.res for j in delay.jobs)
    for a, b in zip(sim.jobs, delay.jobs, strict=True):
        assert {k: v for k, v in a.raw.items() if k != "profile"} == \
            {k: v for k, v in b.raw.items() if k != "profile"}
        te = delay.profiles[b.profile]["delay"]
        assert profile_runtime(sim.profiles[a.profile], sim.profiles, a.res, 2e9) == \
            pytest.approx(te, rel=1e-9)


def test_embedded_bandwidth_model_reads_the_same_te(tmp_path: Path) -> None:
    """The same jobs as delay or SimGrid profiles: the same bandwidth-model schedule."""
    platform = read_platform(write_platform(multicluster(3, 20, link_bandwidth="1Gbps"),
                                            tmp_path / "mc.xml"))
    common = dict(clusters=3, jobs=80, nodes_min=2, nodes_max=10, bsbw_mbps=1500.0)
    means = []
    for profiles in ("delay", "simgrid"):
        workload = build_workload(preset("coalloc-6.1", profiles=profiles, **common), 5)
        policy = make_policy("coalloc", {"module": "ff"})
        sim = Simulator([workload], platform,
                        options=SimOptions(default_job_model="bandwidth"))
        result = sim.run(Dispatcher(policy, paranoid=True).handle)
        assert result.complete
        means.append(statistics.fmean(r.turnaround_time for r in result.records))
        stats = sim.job_model_stats()
        assert stats["nb_coallocated"] > 0 and stats["mean_coalloc_penalty"] > 1.0
    assert means[1] == pytest.approx(means[0], rel=1e-6)


def test_mean_variant_moves_ppbw_times_te_per_node() -> None:
    """``simgrid-mean``: over the run a node moves PPBW x T_E bytes (T_E / T_C times more)."""
    ppbw = ppbw_from_bsbw(500e6 / 8, 6)
    eq1 = job_profiles("j", 200.0, 6, 0.7, ppbw, speed=SPEED)
    mean = job_profiles("j", 200.0, 6, 0.7, ppbw, speed=SPEED, mean=True)
    repeat = mean["j"]["repeat"]
    per_node = repeat * 2 * (6 - 1) * mean["j_c"]["com"]  # sent + received, all phases
    assert per_node == pytest.approx(ppbw * 200.0, rel=1e-12)
    assert mean["j_c"]["com"] == pytest.approx(eq1["j_c"]["com"] / 0.3, rel=1e-12)
    assert {k: v for k, v in mean["j_c"].items() if k != "com"} == \
        {k: v for k, v in eq1["j_c"].items() if k != "com"}
