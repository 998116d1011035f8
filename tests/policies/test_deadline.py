"""Deadline policies (Klusáček et al. 2007): MT-EDF, Tabu search + MoveJob, EDF.

Klusáček, Matyska & Rudová 2007: MT-EDF (Fig. 1), Tabu search with MoveJob (Fig. 2, 3)
and the EDF baseline.

Hand-made plans show the machine MT-EDF chooses, the EDF position and the tie rule, a move
accepted and one rejected as Fig. 3 says (with the round count Fig. 2's loop gives); a
hypothesis property shows Tabu search never ends worse than its MT-EDF start on (U, T);
whole runs through the embedded simulator (paranoid dispatcher, speed-scaled job model)
keep every job inside one machine and count late jobs as the metrics do.
"""

from __future__ import annotations

import csv
import json
import math
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from batpolicy.errors import ConfigError
from batpolicy.io.workload import JobSpec, Workload
from batpolicy.platforms.model import Machine, Platform
from batpolicy.policies.deadline import mt_edf, tabu_search
from batpolicy.policies.registry import make_policy
from batpolicy.policies.toolkit.plan import MachinePlan, Plan, PlannedJob
from batpolicy.protocol import types as t
from batpolicy.protocol.intervals import MachineSet
from batpolicy.scheduler.clock import MockClock
from batpolicy.scheduler.dispatch import Dispatcher
from batpolicy.scheduler.outcomes import JobOutcome, compute_metrics
from batpolicy.simulator import SimOptions, Simulator

from clirun import restore_logging  # noqa: F401  (autouse fixture)


def machines(*specs: tuple[int, float]) -> Plan:
    """Machines of (CPUs, speed factor), hosts numbered in order."""
    out, first = [], 0
    for i, (cpus, speed) in enumerate(specs):
        out.append(MachinePlan(f"m{i}", MachineSet.span(first, first + cpus - 1), speed))
        first += cpus
    return Plan(out)


def pj(name: str, res: int, work: float, deadline: float = math.inf) -> PlannedJob:
    return PlannedJob(name, res, work, deadline=deadline)


def queues(plan: Plan) -> list[list[str]]:
    return [[j.id for j in m.queue] for m in plan.machines]


# ----------------------------------------------------------------------- MT-EDF
def test_mt_edf_machine_choice_edf_position_and_size() -> None:
    plan = machines((1, 0.5), (1, 1.0), (2, 1.0))
    # a: 20 s on the slow m0 (late by 5), 10 s on m1 (on time): m1, and m2 is not tried
    assert mt_edf(plan, pj("a", 1, 10.0, 15.0)) == 1
    # b (deadline 6) is late on m0 (8 s); on m1 it goes before a (Fig. 1 l. 9) and both
    # stay on time (b 0-4, a 4-14 <= 15)
    assert mt_edf(plan, pj("b", 1, 4.0, 6.0)) == 1
    assert queues(plan) == [[], ["b", "a"], []]
    # c needs 2 CPUs: only m2 has them
    assert mt_edf(plan, pj("c", 2, 3.0, 100.0)) == 2
    # d: late on m0 (24 s), on m1 (after b: 4-16) it delays a too; on m2 it goes before
    # c (EDF: 13 < 100) and runs 0-12 on time, c then waits for 2 CPUs: 12-15 <= 100
    assert mt_edf(plan, pj("d", 1, 12.0, 13.0)) == 2
    assert queues(plan) == [[], ["b", "a"], ["d", "c"]]
    assert [(s, e) for _, s, e in plan.machines[2].schedule()] == [(0.0, 12.0), (12.0, 15.0)]
    assert plan.objective() == (0, 0.0)


def test_mt_edf_counts_late_jobs_before_tardiness() -> None:
    plan = machines((1, 1.0), (1, 0.25))
    plan.insert(pj("q", 1, 2.0, 4.5), 0)
    # e on m0: e 0-3.5 (T 0.5), q 3.5-5.5 (T 1): U+2, T+1.5; on the slow m1: 0-14, U+1,
    # T+11. Fig. 1 l. 12 compares U first: m1
    assert mt_edf(plan, pj("e", 1, 3.5, 3.0)) == 1
    assert plan.objective() == (1, 11.0)


def test_mt_edf_ties_go_to_the_first_machine_and_equal_deadlines_stay_fifo() -> None:
    plan = machines((1, 1.0), (1, 1.0))
    assert mt_edf(plan, pj("x", 1, 10.0, 4.0)) == 0  # late by 6 on both: the first
    assert mt_edf(plan, pj("y", 1, 1.0, 50.0)) == 0  # on time on m0 (after x): first
    assert mt_edf(plan, pj("z", 1, 1.0, 4.0)) == 1  # on m0 after x (same deadline): late
    plan.insert_edf(pj("w", 1, 1.0, 4.0), 0)
    assert queues(plan)[0] == ["x", "w", "y"]  # d_{l-1} <= d_l: after the equal deadline


# ------------------------------------------------------------------ MoveJob, TS
def test_move_job_accepted_when_it_removes_a_late_job() -> None:
    plan = machines((1, 1.0), (1, 1.0))
    plan.insert(pj("x", 1, 10.0, 10.0), 0)
    plan.insert(pj("y", 1, 10.0, 12.0), 0)  # ends at 20: late by 8
    stats = tabu_search(plan, rounds=1)
    assert (stats.moves_tried, stats.moves_accepted) == (1, 1)
    assert queues(plan) == [["x"], ["y"]] and plan.objective() == (0, 0.0)


def test_move_job_accepted_on_fewer_late_jobs_even_with_more_tardiness() -> None:
    plan = machines((1, 1.0), (1, 0.1))
    for job in (pj("a", 1, 10.0, 10.0), pj("b", 1, 10.0, 19.0), pj("c", 1, 1.0, 20.0)):
        plan.insert(job, 0)  # b ends 20 (T 1), c ends 21 (T 1): U = 2, T = 2
    stats = tabu_search(plan, rounds=1)
    # the first of the equally tardy jobs, b, moves to the slow m1: 100 s, late by 81;
    # c is then on time: U 2 -> 1 although T 2 -> 81 (Fig. 3 l. 15, U first)
    assert stats.moves_accepted == 1
    assert queues(plan) == [["a", "c"], ["b"]] and plan.objective() == (1, 81.0)


def test_move_job_rejected_puts_the_job_back_then_it_becomes_tabu() -> None:
    plan = machines((1, 1.0), (1, 0.25))
    plan.insert(pj("x", 1, 10.0, 10.0), 0)
    plan.insert(pj("y", 1, 10.0, 12.0), 0)  # late by 8 here, by 28 on the slow m1
    before = plan.machines[0].schedule()
    stats = tabu_search(plan, rounds=1)
    assert (stats.moves_tried, stats.moves_accepted) == (1, 0)
    assert plan.machines[0].schedule() == before and queues(plan)[1] == []
    # the full loop: round 1 rejects m1 (Fig. 3 l. 21-23); round 2 finds no candidate:
    # y becomes tabu (l. 7-9); round 3: m0 has no non-tabu tardy job, leaves
    # schedule_avail (Fig. 2 l. 17); round 4: m1 neither; schedule_avail is empty
    stats = tabu_search(plan, rounds=100)
    assert (stats.rounds, stats.moves_tried, stats.moves_accepted) == (4, 1, 0)
    assert plan.machines[0].schedule() == before


def test_time_bound_stops_the_search_and_keeps_the_start() -> None:
    plan = machines((1, 1.0), (1, 1.0))
    plan.insert(pj("x", 1, 10.0, 10.0), 0)
    plan.insert(pj("y", 1, 10.0, 12.0), 0)
    stats = tabu_search(plan, rounds=100, clock=MockClock(step=1.0), time_bound=0.5)
    assert stats.stopped_by_time and stats.rounds == 0 and queues(plan) == [["x", "y"], []]


JOBS = st.lists(st.tuples(st.integers(1, 4), st.floats(1.0, 50.0), st.floats(0.5, 80.0)),
                min_size=1, max_size=25)
MACHINES = st.lists(st.tuples(st.integers(1, 4), st.sampled_from([0.5, 1.0, 2.0])),
                    min_size=1, max_size=5)


@settings(max_examples=80, deadline=None)
@given(specs=MACHINES, jobs=JOBS, rounds=st.integers(1, 60), ordered=st.booleans())
def test_tabu_never_worse_than_its_mt_edf_start(specs: list, jobs: list, rounds: int,
                                                ordered: bool) -> None:
    plan = machines(*specs)
    for m in plan.machines:
        m.ordered = ordered
    for i, (res, work, slack) in enumerate(jobs):
        mt_edf(plan, pj(f"j{i}", res, work, work + slack))
    u0, t0 = plan.objective()
    placed = sorted(j.id for _, j in plan.planned())
    tabu_search(plan, rounds, tabu_size=3)
    u1, t1 = plan.objective()
    assert u1 < u0 or (u1 == u0 and t1 <= t0 + 1e-6)
    assert sorted(j.id for _, j in plan.planned()) == placed
    plan.check()
    for m in plan.machines:  # every resource schedule stays in EDF order
        deadlines = [j.deadline for j in m.queue]
        assert deadlines == sorted(deadlines)


# ----------------------------------------------------------------------- EDF
def begins(groups: list[tuple[int, float]]) -> t.SimulationBegins:
    resources, rid = [], 0
    for g, (cpus, speed) in enumerate(groups):
        for _ in range(cpus):
            resources.append(t.ResourceInfo(rid, f"h{rid}", "idle",
                                            {"group": f"m{g}", "speed": str(speed)}))
            rid += 1
    return t.SimulationBegins(0.0, rid, rid, 0, False, True, {}, tuple(resources), (),
                              {"w0": "/w0.json"}, {"w0": {"p": {"type": "delay", "delay": 5.0}}})


def sub(name: str, res: int, deadline: float | None, at: float = 0.0) -> t.JobSubmitted:
    raw = {"id": f"w0!{name}", "subtime": at, "res": res, "walltime": 10, "profile": "p"}
    if deadline is not None:
        raw["deadline"] = deadline
    return t.JobSubmitted(at, raw["id"], raw)


def started(reply: t.Reply) -> dict[str, str]:
    return {d.job_id.split("!")[1]: str(d.alloc) for d in reply.decisions
            if isinstance(d, t.ExecuteJob)}


def test_edf_starts_by_deadline_and_the_head_blocks() -> None:
    d = Dispatcher(make_policy("edf"), paranoid=True)
    d.handle(t.Request(0.0, (begins([(4, 1e9)]),)))
    reply = d.handle(t.Request(0.0, (sub("late", 1, 90), sub("none", 1, None),
                                     sub("urgent", 3, 20), sub("wide", 4, 50))))
    # urgent (20) starts; wide (50) needs all 4 hosts and blocks late (90) and none (inf)
    assert started(reply) == {"urgent": "0-2"}
    reply = d.handle(t.Request(5.0, (t.JobCompleted(5.0, "w0!urgent",
                                                    t.JobState.COMPLETED_SUCCESSFULLY, 0,
                                                    MachineSet.span(0, 2)),)))
    assert started(reply) == {"wide": "0-3"}


def test_edf_one_group_takes_the_fastest_machine_with_room_and_rejects_too_wide() -> None:
    d = Dispatcher(make_policy("edf", {"one_group": "true"}), paranoid=True)
    d.handle(t.Request(0.0, (begins([(2, 1e9), (2, 2e9), (3, 1e9)]),)))
    reply = d.handle(t.Request(0.0, (sub("a", 2, 10), sub("b", 2, 20), sub("c", 3, 30),
                                     sub("big", 4, 5))))
    assert started(reply) == {"a": "2-3", "b": "0-1", "c": "4-6"}
    assert [x.job_id for x in reply.decisions if isinstance(x, t.RejectJob)] == ["w0!big"]


# ------------------------------------------------------- whole simulated runs
def grid(seed: int) -> tuple[Platform, list[MachineSet]]:
    """Machines of 1-8 CPUs and three speeds; hosts carry their machine as ``group``."""
    rng = random.Random(seed)
    hosts, groups = [], []
    for g in range(6):
        cpus, speed = rng.choice((1, 2, 4, 8)), rng.choice((1e9, 1.5e9, 2e9))
        first = len(hosts)
        for c in range(cpus):
            hosts.append(Machine(first + c, f"m{g}c{c}", speed=speed,
                                 properties={"group": f"m{g}", "speed": str(speed)}))
        groups.append(MachineSet.of((first, len(hosts) - 1)))
    return Platform(hosts), groups


def deadline_workload(seed: int, n: int = 150, mean_gap: float = 4.0) -> Workload:
    rng = random.Random(seed)
    specs, profiles, at = [], {}, 0.0
    for i in range(n):
        at = round(at + rng.expovariate(1 / mean_gap), 3)
        work = rng.randint(2, 80)
        profiles[f"d{work}"] = {"type": "delay", "delay": float(work)}
        raw = {"id": f"w0!{i}", "subtime": at, "res": rng.choice((1, 1, 1, 2, 4, 8)),
               "walltime": 2 * work, "profile": f"d{work}",
               "deadline": round(at + work * rng.uniform(1.1, 4.0), 3)}
        if i % 17 == 0:
            del raw["deadline"]  # a few jobs without a deadline
        specs.append(JobSpec(raw["id"], at, raw["res"], raw["profile"], float(2 * work), raw=raw))
    workload = Workload("w0", specs, profiles)
    workload.sort()
    return workload


@pytest.mark.parametrize("policy,params", [
    ("mt-edf", {}), ("mt-edf", {"ordered": "false"}), ("mt-edf", {"runtime": "walltime"}),
    ("tabu", {}), ("tabu", {"rounds": "5", "tabu_size": "2"}),
    ("edf", {"one_group": "true"}),
])
@pytest.mark.parametrize("seed", [1, 2])
def test_whole_run_keeps_jobs_in_one_machine(policy: str, params: dict, seed: int) -> None:
    platform, groups = grid(seed)
    pol = make_policy(policy, params)
    dispatcher = Dispatcher(pol, paranoid=True)
    result = Simulator([deadline_workload(seed)], platform,
                       options=SimOptions(default_job_model="speed")).run(dispatcher.handle)
    jobs = dispatcher.state.jobs
    too_wide = {j.id for j in jobs.values() if j.res > max(len(g) for g in groups)}
    assert {j.id for j in jobs.values() if j.finish is None} == too_wide
    for job in jobs.values():
        if job.allocation is not None:
            assert any(job.allocation.issubset(g) for g in groups), job.id
    outcomes = [JobOutcome(j.subtime, j.start, j.finish, j.res, True,
                           deadline=j.raw.get("deadline")) for j in jobs.values()]
    late = compute_metrics(outcomes, nb_machines=result.nb_machines)["nb_late_jobs"]
    assert 0 < late < len(jobs)
    if policy != "edf":  # the policy's U_C (§3) is the metrics' count
        assert pol.stats()["nb_completed_late"] == late


def test_planned_starts_are_kept_when_estimates_are_exact() -> None:
    """Exact estimates (runtime=profile, --job-model speed): jobs start as planned.

    The plan knows every run time, so with one machine and all jobs known at once, each
    job starts exactly at its planned start.
    """
    platform = Platform([Machine(i, f"h{i}", speed=2e9, properties={"group": "m"})
                         for i in range(4)])
    jobs = [(0, 4, 10.0, 100.0), (1, 2, 6.0, 4.0), (2, 1, 8.0, 50.0), (3, 3, 2.0, 9.0)]
    profiles = {f"d{w}": {"type": "delay", "delay": w} for _, _, w, _ in jobs}
    specs = [JobSpec(f"w0!{i}", 0.0, res, f"d{w}", 100.0,
                     raw={"id": f"w0!{i}", "subtime": 0.0, "res": res, "walltime": 100.0,
                          "profile": f"d{w}", "deadline": dl}) for i, res, w, dl in jobs]
    pol = make_policy("mt-edf")
    dispatcher = Dispatcher(pol, paranoid=True)
    Simulator([Workload("w0", specs, profiles)], platform,
              options=SimOptions(default_job_model="speed")).run(dispatcher.handle)
    got = {j.name: (j.start, j.finish) for j in dispatcher.state.jobs.values()}
    # EDF order 1 (dl 4), 3 (9), 2 (50), 0 (100); at speed 2 durations 3, 1, 4, 5;
    # ordered starts: 1 at 0 (2 CPUs), 3 needs 3 CPUs: at 3; 2 not before 3: 3 (1 CPU)
    # beside 3 only if 3 + 1 <= 4: yes; 0 needs 4 CPUs: after 2 ends at 7
    assert got == {"1": (0.0, 3.0), "3": (3.0, 4.0), "2": (3.0, 7.0), "0": (7.0, 12.0)}


def test_tabu_time_bound_through_the_policy_clock() -> None:
    platform, _ = grid(3)
    pol = make_policy("tabu", {"time_bound_ms": "1", "rounds": "1000"})
    pol.clock = MockClock(step=0.0006)  # the second reading after the start exceeds 1 ms
    dispatcher = Dispatcher(pol, paranoid=True)
    Simulator([deadline_workload(3, mean_gap=1.0)], platform,
              options=SimOptions(default_job_model="speed")).run(dispatcher.handle)
    stats = pol.stats()
    # one reading starts the clock, one per round: the second round is never reached
    assert stats["nb_searches"] > 0 and stats["nb_time_bound_hits"] > 0
    assert stats["nb_rounds"] <= stats["nb_searches"]


# ------------------------------------------------------------ command line
GRID_XML = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
<zone id="AS0" routing="Full">
{clusters}
    <cluster id="master" prefix="master_host" suffix="" radical="0-0" speed="1Gf" bw="100GBps"
        lat="0us" bb_bw="1000GBps" bb_lat="0us"><prop id="role" value="master" /></cluster>
</zone>
</platform>
"""
CLUSTER = """    <cluster id="{name}" prefix="{name}h" suffix="" radical="0-{last}" speed="{speed}f"
        bw="100GBps" lat="0us" bb_bw="1000GBps" bb_lat="0us">
        <prop id="group" value="{name}" /><prop id="speed" value="{speed}" /></cluster>"""


def test_simulate_tabu_from_the_command_line(tmp_path: Path) -> None:
    """``batpolicy simulate --policy tabu --job-model speed`` on XML machines.

    Machines are clusters whose hosts carry ``group`` and ``speed`` properties.
    """
    from batpolicy.app.cli import main

    clusters = "\n".join(CLUSTER.format(name=f"m{i}", last=cpus - 1, speed=speed)
                         for i, (cpus, speed) in enumerate([(2, 1e9), (4, 2e9), (1, 3e9)]))
    (tmp_path / "grid.xml").write_text(GRID_XML.format(clusters=clusters))
    workload = deadline_workload(5, n=60)
    jobs = []
    for spec in workload.jobs:
        raw = dict(spec.raw, id=spec.name, res=min(spec.res, 4))
        jobs.append(raw)
    (tmp_path / "w.json").write_text(json.dumps({"nb_res": 7, "jobs": jobs,
                                                 "profiles": workload.profiles}))
    out = tmp_path / "out"
    assert main(["simulate", "--policy", "tabu", "--param", "rounds=20", "--job-model", "speed",
                 "--platform", str(tmp_path / "grid.xml"), "-w", str(tmp_path / "w.json"),
                 "-o", str(out), "--no-progress", "-q"]) == 0
    rows = list(csv.DictReader((out / "jobs.csv").read_text().splitlines()))
    assert len(rows) == 60
    machines = [MachineSet.span(0, 1), MachineSet.span(2, 5), MachineSet.of(6)]
    for row in rows:
        alloc = MachineSet.parse(row["allocated_resources"])
        assert any(alloc.issubset(m) for m in machines), row
    stats = json.loads((out / "metrics.json").read_text())["policy_stats"]
    assert stats["nb_placed"] == 60 and stats["nb_searches"] > 0


@pytest.mark.parametrize("policy,params,message", [
    ("tabu", {"rounds": "-1"}, "'rounds' = -1"),
    ("tabu", {"tabu_size": "0"}, "'tabu_size' = 0"),
    ("mt-edf", {"reference_speed": "0"}, "'reference_speed' must be > 0"),
    ("mt-edf", {"runtime": "magic"}, "'runtime'"),
])
def test_bad_parameters_are_one_clear_error(policy: str, params: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        make_policy(policy, params)


@pytest.mark.parametrize("policy,params,late,tardiness", [
    # b (dl 3.5) on m0 0-4 (T 0.5); a on the fast m1 0-5; c after b on m0 4-6
    ("mt-edf", {}, 1, 0.5),
    # moving b to m1 (b 0-2, a 2-7: a late by 1) is worse on T: rejected, same schedule
    ("tabu", {}, 1, 0.5),
    # EDF order b, a, c: b on the fastest m1 0-2, a on m0 0-10 (T 4), c on m1 2-3
    ("edf", {"one_group": "true"}, 1, 4.0),
])
def test_simulate_metrics_count_late_jobs_and_tardiness_of_deadline_policies(
        tmp_path: Path, policy: str, params: dict, late: int, tardiness: float) -> None:
    """metrics.json's ``nb_late_jobs`` / ``total_tardiness`` (U, T of §3) on a hand-made case.

    Machines m0 (1 CPU, 1 GFlop/s) and m1 (1 CPU, 2 GFlop/s); at t=0 a (10 s of work at
    1 GFlop/s, deadline 6), b (4 s, 3.5) and c (2 s, 20); d (1 s, no deadline) at 100.
    """
    from batpolicy.app.cli import main

    clusters = "\n".join(CLUSTER.format(name=f"m{i}", last=0, speed=speed)
                         for i, speed in enumerate([1e9, 2e9]))
    (tmp_path / "grid.xml").write_text(GRID_XML.format(clusters=clusters))
    jobs = [{"id": name, "subtime": at, "res": 1, "walltime": 100, "profile": f"d{work}",
             **({"deadline": dl} if dl is not None else {})}
            for name, at, work, dl in [("a", 0, 10, 6.0), ("b", 0, 4, 3.5), ("c", 0, 2, 20.0),
                                       ("d", 100, 1, None)]]
    profiles = {f"d{w}": {"type": "delay", "delay": w} for w in (10, 4, 2, 1)}
    (tmp_path / "w.json").write_text(json.dumps({"nb_res": 2, "jobs": jobs,
                                                 "profiles": profiles}))
    out = tmp_path / "out"
    argv = ["simulate", "--policy", policy, "--job-model", "speed", "-p",
            str(tmp_path / "grid.xml"), "-w", str(tmp_path / "w.json"), "-o", str(out),
            "--no-progress", "-q"]
    assert main(argv + [f"--param={k}={v}" for k, v in params.items()]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["nb_jobs_with_deadline"] == 3
    assert (metrics["nb_late_jobs"], metrics["total_tardiness"]) == (late, tardiness)
    assert metrics["max_tardiness"] == tardiness
    assert metrics["mean_tardiness"] == pytest.approx(tardiness / 3)
    if policy != "edf":  # the policy's own U_C, T_C (§3) agree
        stats = metrics["policy_stats"]
        assert (stats["nb_completed_late"], stats["total_completed_tardiness"]) == (late, tardiness)
    if policy == "tabu":  # the one move tried (b to m1) was rejected
        assert (stats["nb_moves_tried"], stats["nb_moves_accepted"]) == (1, 0)
