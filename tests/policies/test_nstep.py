"""N-step look-ahead (Wu & Chen, seed 001): utility, the §3 example, branch-and-bound."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from batpolicy.platforms.model import Group, Machine, Platform
from batpolicy.policies.nstep import NStep
from batpolicy.policies.nstep.search import (
    ANY,
    GPU,
    MPI,
    PendingJob,
    Snapshot,
    best_prefix,
    greedy_chain,
)
from batpolicy.protocol.types import JobState
from batpolicy.testing import simulate


def racks(nb_racks: int, nodes: int, gpu_racks: int = 0) -> Platform:
    """``nb_racks`` racks of ``nodes`` machines, the first ``gpu_racks`` with GPUs."""
    machines, groups = [], {}
    for r in range(nb_racks):
        ids = list(range(r * nodes, (r + 1) * nodes))
        for i in ids:
            machines.append(Machine(i, f"rack{r}_{i}", gpu=r < gpu_racks, group=f"rack{r}",
                                    rack=f"rack{r}"))
        from batpolicy.protocol.intervals import MachineSet
        groups[f"rack{r}"] = Group(f"rack{r}", "rack", MachineSet(ids))
    return Platform(machines, groups=groups)


def job(name: str, arrive: float, res: int, kind: str, t_pref: float, t_other: float,
        umax: float = 1000.0) -> PendingJob:
    return PendingJob(name, arrive, res, kind, t_pref, t_other, umax)


def test_greedy_chain_picks_highest_expected_utility_first() -> None:
    # 2 racks of 4, all free at t = 20. a (arrived at 10): MPI 4, pref 100 -> 1000-100-10 = 890;
    # b: arrived at 0, MPI 4, pref 50 -> 1000-50-20 = 930: b first, then a in the other rack.
    snap = Snapshot(20.0, (4, 4), (False, False), (),
                    (job("a", 10, 4, MPI, 100, 300), job("b", 0, 4, MPI, 50, 300)))
    chain = greedy_chain(snap, hard=False)
    assert [(s.job.id, s.take, s.preferred, s.utility) for s in chain] == [
        ("b", (4, 0), True, 930.0), ("a", (0, 4), True, 890.0)]


def test_soft_waits_for_a_release_step0_does_not() -> None:
    # §3's example: J (MPI, 4 machines) could run now across two racks (runtime 300,
    # E(U) = 700); the job running on rack 0 ends at t = 10, after which J fits in rack 0
    # (runtime 100, E(U) = 1000 - 100 - 10 = 890). Soft delays J; step-0 starts it now.
    snap = Snapshot(0.0, (2, 2), (False, False), ((10.0, (2, 0)),),
                    (job("J", 0, 4, MPI, 100, 300),))
    k, chain, _ = best_prefix(snap, depth=7)
    assert (k, len(chain)) == (0, 1)
    k0, _, _ = best_prefix(snap, depth=0)
    assert k0 == 1


def _example_jobs() -> list[dict[str, object]]:
    """The §3 example in the simulator: 2 racks of 4 machines.

    r0 (MPI) takes 2 machines of rack 0 and ends at 10, r1 (no preference) 2 of rack 1
    (the emptiest). J arrives at 1 needing 4 machines: 2 are free in each rack.
    """
    return [{"id": "r0", "subtime": 0, "res": 2, "runtime": 10, "job_type": "mpi"},
            {"id": "r1", "subtime": 0, "res": 2, "runtime": 500},
            {"id": "J", "subtime": 1, "res": 4, "runtime": 100, "runtime_other": 300,
             "job_type": "mpi"}]


def test_soft_and_step0_in_the_simulator() -> None:
    platform = racks(2, 4)
    soft = simulate("nstep", _example_jobs(), machines=platform, params={"mode": "soft"})
    step0 = simulate("nstep", _example_jobs(), machines=platform, params={"mode": "step0"})
    assert soft.start("J") == 10.0 and soft.machines("J") == [0, 1, 2, 3]  # all in rack 0
    assert step0.start("J") == 1.0 and step0.machines("J") == [2, 3, 6, 7]  # across racks


def test_utility_of_a_hand_made_schedule() -> None:
    # FIFO on 1 rack of 2: a (0, 2 machines, 30 s) then b (5, 2 machines, 20 s) at 30.
    # U(a) = 1000 - 30 = 970, U(b) = 500 - (50 - 5) = 455: average (970 + 455) / 2.
    jobs = [{"id": "a", "subtime": 0, "res": 2, "runtime": 30},
            {"id": "b", "subtime": 5, "res": 2, "runtime": 20, "umax": 500}]
    s = simulate(NStep({"mode": "none"}), jobs, machines=racks(1, 2))
    assert (s.start("b"), s.finish("b")) == (30.0, 50.0)
    policy = NStep({"mode": "none"})
    simulate(policy, jobs, machines=racks(1, 2))
    assert policy.stats()["average_utility"] == (970 + 455) / 2


def test_a_job_that_can_earn_nothing_is_killed_at_last() -> None:
    # b waits 100 s behind a; its U_max 90 minus its 20 s runtime is gone by t = 70.
    jobs = [{"id": "a", "subtime": 0, "res": 1, "runtime": 100},
            {"id": "b", "subtime": 0, "res": 1, "runtime": 20, "umax": 90}]
    policy = NStep({"mode": "none"})
    s = simulate(policy, jobs, machines=racks(1, 1))
    assert s.state("b") is JobState.REJECTED and s.start("b") is None
    stats = policy.stats()
    assert stats["nb_killed_at_last"] == 1 and stats["average_utility"] == (1000 - 100) / 2


def test_hard_only_runs_jobs_on_preferred_machines() -> None:
    # GPU job on a platform whose GPU rack is busy: hard waits, soft runs it elsewhere.
    jobs = [{"id": "g0", "subtime": 0, "res": 2, "runtime": 50, "job_type": "gpu"},
            {"id": "g1", "subtime": 1, "res": 2, "runtime": 10, "runtime_other": 40,
             "job_type": "gpu"}]
    platform = racks(2, 2, gpu_racks=1)
    hard = simulate("nstep", jobs, machines=platform, params={"mode": "hard"})
    soft = simulate("nstep", jobs, machines=platform, params={"mode": "soft", "depth": 0})
    assert hard.start("g1") == 50.0 and hard.machines("g1") == [0, 1]
    assert soft.start("g1") == 1.0 and soft.machines("g1") == [2, 3]


pending_jobs = st.lists(st.builds(
    PendingJob, id=st.uuids().map(str), arrive=st.integers(0, 50).map(float),
    res=st.integers(1, 4), kind=st.sampled_from([MPI, GPU, ANY]),
    t_pref=st.integers(5, 60).map(float), t_other=st.integers(60, 120).map(float),
    umax=st.integers(100, 400).map(float)), min_size=1, max_size=5)
running_jobs = st.lists(st.tuples(st.integers(51, 150).map(float),
                                  st.tuples(st.integers(0, 2), st.integers(0, 2),
                                            st.integers(0, 2))), max_size=3)


@settings(max_examples=150, deadline=None)
@given(pending=pending_jobs, running=running_jobs, free=st.tuples(
    st.integers(0, 4), st.integers(0, 4), st.integers(0, 4)))
def test_branch_and_bound_chooses_the_same_k_as_exhaustive(pending, running, free) -> None:
    snap = Snapshot(50.0, free, (True, False, False), tuple(sorted(running)), tuple(pending))
    k, chain, plain = best_prefix(snap, depth=4)
    kb, chain_b, pruned = best_prefix(snap, depth=4, prune=True)
    assert (kb, chain_b) == (k, chain)
    assert pruned.nodes <= plain.nodes


def test_branch_and_bound_visits_fewer_nodes_overall() -> None:
    import random

    rng = random.Random(3)
    plain = pruned = 0
    for _ in range(60):
        pending = tuple(job(str(i), rng.randint(0, 50), rng.randint(1, 4),
                            rng.choice([MPI, GPU, ANY]), rng.randint(5, 60),
                            rng.randint(60, 120), rng.randint(100, 400)) for i in range(5))
        running = tuple(sorted((float(rng.randint(51, 150)),
                                (rng.randint(0, 2), rng.randint(0, 2), rng.randint(0, 2)))
                               for _ in range(3)))
        snap = Snapshot(50.0, (2, 3, 1), (True, False, False), running, pending)
        k1, _, a = best_prefix(snap, depth=5)
        k2, _, b = best_prefix(snap, depth=5, prune=True)
        assert k1 == k2
        plain, pruned = plain + a.nodes, pruned + b.nodes
    assert pruned < plain


def test_searches_run_on_snapshots_and_stats_reach_metrics(tmp_path: Path) -> None:
    from batpolicy.app.cli import main

    platform = tmp_path / "racks.xml"
    assert main(["platform", "racks", "--racks", "4", "--nodes", "6", "--gpu-racks", "1",
                 "-o", str(platform)]) == 0
    out = tmp_path / "out"
    assert main(["simulate", "--policy", "nstep", "--param", "prune=true", "-p",
                 str(platform), "--max-jobs", "60", "--lenient", "--paranoid", "-o",
                 str(out), "-q"]) == 0
    stats = json.loads((out / "metrics.json").read_text())["policy_stats"]
    assert stats["nstep_mode"] == "soft" and stats["nb_searches"] > 0
    assert stats["nb_jobs_utility"] + 0 > 0 and stats["average_utility"] > 0


def test_nstep_presets_load_their_streams_as_asked() -> None:
    from batpolicy.io.presets import preset
    from batpolicy.io.synth import generate

    workload = generate(preset("nstep-exp1"), seed=3)
    kinds = [j.raw["job_type"] for j in workload.jobs]
    assert kinds.count("mpi") == kinds.count("gpu") == 150 and workload.nb_res == 24
    mpi = [j for j in workload.jobs if j.raw["job_type"] == "mpi"]
    assert {j.res for j in mpi} == {2, 3, 4, 5, 6}
    assert all(j.raw["runtime_other"] == pytest.approx(1.5 * float(
        workload.profiles[j.profile]["delay"]), abs=1.0) for j in mpi)
