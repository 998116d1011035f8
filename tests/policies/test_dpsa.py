"""DPSA policies (Grudenic & Bogunovic 2011) driven message by message, and on workloads.

Hand-built Batsim events go through ``Dispatcher(policy).handle``; a small delay-job
driver (``run``) plays whole workloads the way Batsim would (completions, then
submissions, at each instant). Covered: the paper's Fig. 1 scenario for EASY and DPSA,
the three tie rules, Fig. 2 l. 23's mapping, the exhaustive search and its bounds, the
statistics, and two properties on random workloads — the head job's reservation is never
delayed when runtimes equal walltimes, and every job finishes.
"""

from __future__ import annotations

import heapq
import json
import math
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from batpolicy.errors import ConfigError
from batpolicy.policies.base import Policy
from batpolicy.policies.dpsa import Dpsa, DpsaN, DpsaW
from batpolicy.policies.registry import make_policy
from batpolicy.protocol import types as t
from batpolicy.protocol.intervals import MachineSet
from batpolicy.scheduler.clock import MockClock
from batpolicy.scheduler.dispatch import Dispatcher

from clirun import restore_logging  # noqa: F401  (autouse fixture)

VARIANTS = ("dpsa-p", "dpsa-n", "dpsa-w")


def begins(nb: int) -> t.SimulationBegins:
    resources = tuple(t.ResourceInfo(i, f"h{i}") for i in range(nb))
    return t.SimulationBegins(0.0, nb, nb, 0, False, True, {}, resources, (),
                              {"w0": "/w0.json"}, {"w0": {"p": {"type": "delay", "delay": 1.0}}})


def sub(name: str, at: float, res: int, walltime: float | None) -> t.JobSubmitted:
    return t.JobSubmitted(at, f"w0!{name}", {"id": f"w0!{name}", "subtime": at, "res": res,
                                            "walltime": -1 if walltime is None else walltime,
                                            "profile": "p"})


def done(name: str, at: float, alloc: str) -> t.JobCompleted:
    return t.JobCompleted(at, f"w0!{name}", t.JobState.COMPLETED_SUCCESSFULLY, 0,
                          MachineSet.parse(alloc))


def started(reply: t.Reply) -> dict[str, str]:
    return {d.job_id.split("!")[1]: str(d.alloc) for d in reply.decisions
            if isinstance(d, t.ExecuteJob)}


class Driver:
    """A paranoid Dispatcher fed by hand."""

    def __init__(self, policy: str | Policy, nb: int, **params: Any) -> None:
        self.policy = make_policy(policy, params) if isinstance(policy, str) else policy
        self.dispatcher = Dispatcher(self.policy, paranoid=True)
        self.send(0.0, begins(nb))

    def send(self, now: float, *events: t.Event) -> dict[str, str]:
        return started(self.dispatcher.handle(t.Request(now, events)))


# ------------------------------------------------------------------- workload driver
@dataclass(frozen=True, slots=True)
class Spec:
    """A delay job: submitted at ``subtime``, runs ``runtime`` (≤ walltime) seconds."""

    name: str
    subtime: float
    res: int
    walltime: float
    runtime: float


@dataclass
class Run:
    """Start times and the reservations seen after every message."""

    start: dict[str, float]
    finish: dict[str, float]
    rejected: set[str]
    reservations: list[tuple[float, str, float]]  # (now, head job, shadow time)


def run(policy: str | Policy, nb: int, specs: list[Spec], **params: Any) -> Run:
    """Play ``specs`` on ``nb`` machines as Batsim would with delay profiles."""
    pol = make_policy(policy, params) if isinstance(policy, str) else policy
    dispatcher = Dispatcher(pol, paranoid=True)
    dispatcher.handle(t.Request(0.0, (begins(nb),)))
    heap: list[tuple[float, int, str]] = [(s.subtime, 1, s.name) for s in specs]
    heapq.heapify(heap)
    by_name = {s.name: s for s in specs}
    allocs: dict[str, str] = {}
    out = Run({}, {}, set(), [])
    while heap:
        now = heap[0][0]
        batch = []
        while heap and heap[0][0] == now:
            batch.append(heapq.heappop(heap))
        events: list[t.Event] = []
        for _, kind, name in sorted(batch):  # completions (0) before submissions (1)
            spec = by_name[name]
            if kind == 0:
                out.finish[name] = now
                events.append(t.JobCompleted(now, f"w0!{name}", t.JobState.COMPLETED_SUCCESSFULLY,
                                             0, MachineSet.parse(allocs[name])))
            else:
                events.append(sub(name, now, spec.res, spec.walltime))
        reply = dispatcher.handle(t.Request(now, tuple(events)))
        for d in reply.decisions:
            name = d.job_id.split("!")[1]  # type: ignore[union-attr]
            if isinstance(d, t.ExecuteJob):
                out.start[name] = now
                allocs[name] = str(d.alloc)
                heapq.heappush(heap, (now + by_name[name].runtime, 0, name))
            elif isinstance(d, t.RejectJob):
                out.rejected.add(name)
        reservation = getattr(pol, "last_reservation", None)
        if reservation is not None:
            out.reservations.append((now, reservation.job.name, reservation.shadow_time))
    dispatcher.handle(t.Request(heap[0][0] if heap else 1e9, (t.SimulationEnds(1e9),)))
    return out


FIG1 = [Spec("R1", 0, 4, 2, 2), Spec("R2", 0, 6, 7, 7),
        Spec("J1", 1, 10, 2, 2), Spec("J2", 1, 3, 5, 5), Spec("J3", 1, 2, 5, 5),
        Spec("J4", 1, 2, 5, 5)]


# ------------------------------------------------------------------------ Fig. 1
def test_fig1_easy() -> None:
    r = run("easy", 10, FIG1)
    assert r.start == {"R1": 0, "R2": 0, "J2": 2, "J1": 7, "J3": 9, "J4": 9}


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("search", ["exact", "exhaustive"])
def test_fig1_dpsa_starts_j3_and_j4_instead_of_j2(variant: str, search: str) -> None:
    r = run(variant, 10, FIG1, search=search)
    assert r.start == {"R1": 0, "R2": 0, "J3": 2, "J4": 2, "J1": 7, "J2": 9}
    assert ("J1", 7.0) in {(job, shadow) for _, job, shadow in r.reservations}


def test_fig1_message_by_message() -> None:
    d = Driver("dpsa-p", 10)
    assert d.send(0.0, sub("R1", 0, 4, 2), sub("R2", 0, 6, 7)) == {"R1": "0-3", "R2": "4-9"}
    assert d.send(1.0, *(sub(n, 1, r, w) for n, r, w in [("J1", 10, 2), ("J2", 3, 5),
                                                         ("J3", 2, 5), ("J4", 2, 5)])) == {}
    reply = d.send(2.0, done("R1", 2.0, "0-3"))
    assert reply == {"J3": "0-1", "J4": "2-3"}  # Fig. 2, l. 23: reserved machines (0-9)
    assert d.policy.last_reservation.shadow_time == 7.0  # type: ignore[attr-defined]


# --------------------------------------------------------------------- tie rules
@pytest.mark.parametrize("variant,expected", [
    ("dpsa-p", {"C", "D"}),       # highest priority first: C (then D) beats A, E
    ("dpsa-n", {"A", "B", "C"}),  # smallest first: A, B (size 1) then C (2, before D)
    ("dpsa-w", {"E"}),            # widest first: E (4)
])
def test_tie_rules(variant: str, expected: set[str]) -> None:
    d = Driver(variant, 8)
    d.send(0.0, sub("R", 0, 4, 100))
    # H needs all 8 machines: reserved at 100, all 4 free machines until then; every
    # subset below fills them: {C, D}, {A, B, C}, {A, B, D}, {E}, ...
    out = d.send(1.0, sub("H", 1, 8, 10), sub("C", 1, 2, 10), sub("D", 1, 2, 10),
                 sub("A", 1, 1, 10), sub("E", 1, 4, 10), sub("B", 1, 1, 10))
    assert set(out) == expected


def test_long_jobs_use_only_unreserved_machines_and_short_ones_reserved_first() -> None:
    d = Driver("dpsa-p", 8)
    d.send(0.0, sub("R", 0, 4, 10))  # 0-3 until 10
    # H (6) reserved at 10 on 0-5: free now 4-7, of which 4-5 reserved (availability 9)
    out = d.send(1.0, sub("H", 1, 6, 5), sub("L", 1, 1, 50), sub("S", 1, 3, 9))
    assert out == {"L": "6", "S": "4-5 7"}  # S: reserved 4-5, then 7
    assert str(d.policy.last_reservation.machines) == "0-5"  # type: ignore[attr-defined]


def test_a_long_job_waits_rather_than_delay_the_head() -> None:
    d = Driver("dpsa-p", 8)
    d.send(0.0, sub("R", 0, 4, 10))
    # L (3 wide, walltime 50) would fit now but only 2 free machines are not reserved
    assert d.send(1.0, sub("H", 1, 6, 5), sub("L", 1, 3, 50), sub("S", 1, 2, 9)) == {"S": "4-5"}


def test_job_without_walltime_is_long() -> None:
    d = Driver("dpsa-n", 8)
    d.send(0.0, sub("R", 0, 4, 10))
    out = d.send(1.0, sub("H", 1, 6, 5), sub("X", 1, 2, None), sub("Y", 1, 3, None))
    assert out == {"X": "6-7"}


def test_heads_start_and_oversized_jobs_are_rejected() -> None:
    d = Driver("dpsa-w", 4)
    reply = d.dispatcher.handle(t.Request(0.0, (sub("big", 0, 5, 1), sub("zero", 0, 0, 1),
                                                sub("a", 0, 2, 1), sub("b", 0, 2, 1))))
    assert [type(x).__name__ for x in reply.decisions] == ["RejectJob", "RejectJob",
                                                           "ExecuteJob", "ExecuteJob"]
    assert started(reply) == {"a": "0-1", "b": "2-3"}
    assert d.policy.last_reservation is None  # type: ignore[attr-defined]


# ------------------------------------------------------------ search and statistics
def test_exhaustive_cut_is_counted_and_keeps_the_best_so_far() -> None:
    d = Driver("dpsa-p", 8, search="exhaustive", max_nodes="2", time_bound_ms="0")
    d.send(0.0, sub("R", 0, 4, 100))
    out = d.send(1.0, sub("H", 1, 8, 10), sub("C", 1, 3, 10), sub("A", 1, 2, 10),
                 sub("B", 1, 2, 10))
    assert out == {"C": "4-6"}  # root, then {C}: cut before {A, B}
    stats = d.policy.stats()
    assert stats["nb_search_cut"] == 1 and stats["search_cut_share"] == 1.0
    assert stats["nb_dpsa_decisions"] == 1 and stats["nb_started_by_search"] == 1


def test_exhaustive_time_bound_uses_the_policy_clock() -> None:
    policy = make_policy("dpsa-p", {"search": "exhaustive", "time_bound_ms": "1",
                                    "max_nodes": "0"})
    policy.clock = MockClock(step=1.0)  # every reading one second later: cut at once
    d = Driver(policy, 40)
    d.send(0.0, sub("R", 0, 20, 100))
    d.send(1.0, sub("H", 1, 40, 10), *(sub(f"j{i}", 1, 1 + i % 3, 10) for i in range(30)))
    assert policy.stats()["nb_search_cut"] == 1


def test_stats_report_decision_times_in_ms() -> None:
    policy = make_policy("dpsa-n")
    policy.clock = MockClock(step=0.002)  # readings 2 ms apart: begin, fill (l. 9), end
    run(policy, 10, FIG1)
    stats = policy.stats()
    assert stats["nb_dpsa_decisions"] >= 1 and stats["nb_search_cut"] == 0
    assert stats["decision_time_ms.p50"] == pytest.approx(4.0)
    assert stats["decision_time_ms.p99"] == pytest.approx(4.0)
    assert stats["fill_time_ms.p50"] == pytest.approx(2.0)
    assert stats["decision_time_ms.count"] == stats["nb_dpsa_decisions"]
    assert stats["dpsa_variant"] == "dpsa-n" and stats["dpsa_search"] == "exact"


#: What issue 4 asks metrics.json to carry for DPSA (plus the variant and search names).
ISSUE_STATS = {"nb_dpsa_decisions": int, "decision_time_ms.p50": float,
               "decision_time_ms.p99": float, "nb_search_cut": int,
               "search_cut_share": float, "dpsa_variant": str, "dpsa_search": str}


@pytest.mark.parametrize("search", ["exact", "exhaustive"])
@pytest.mark.parametrize("variant", VARIANTS)
def test_stats_are_flat_json_with_the_same_keys_in_both_modes(variant: str, search: str) -> None:
    policy = make_policy(variant, {"search": search, "max_nodes": "3"})
    policy.clock = MockClock(step=0.0005)
    rng = random.Random(variant + search)
    specs = [Spec(f"j{i}", i // 3, rng.randint(1, 12), w, rng.randint(1, w))
             for i, w in enumerate(rng.randint(1, 30) for _ in range(80))]
    run(policy, 12, specs)
    stats = policy.stats()
    assert json.loads(json.dumps(stats, allow_nan=False)) == stats  # finite, JSON-native
    assert all(isinstance(v, (int, float, str)) and not isinstance(v, bool)
               for v in stats.values())  # flat: no nested dicts or lists
    for key, kind in ISSUE_STATS.items():
        assert isinstance(stats[key], kind), key
    assert set(stats) == set(make_policy(variant).stats())  # same keys, exact or not
    assert stats["dpsa_variant"] == variant and stats["dpsa_search"] == search
    assert stats["nb_dpsa_decisions"] > 0 and stats["nb_searches"] > 0
    assert 0 < stats["decision_time_ms.p50"] <= stats["decision_time_ms.p99"]
    assert stats["decision_time_ms.p99"] <= stats["decision_time_ms.max"]
    assert 0 <= stats["nb_search_cut"] <= stats["nb_searches"]
    assert stats["search_cut_share"] == stats["nb_search_cut"] / stats["nb_searches"]
    if search == "exact":
        assert stats["nb_search_cut"] == 0 and stats["search_nodes_mean"] == 0.0
    else:  # 3 nodes cannot explore 12 machines' worth of choices every time
        assert stats["nb_search_cut"] > 0 and stats["search_nodes_mean"] <= 3


def test_stats_start_at_zero() -> None:
    stats = make_policy("dpsa-w").stats()
    assert stats["nb_dpsa_decisions"] == 0 and stats["decision_time_ms.p50"] == 0.0
    assert stats["search_cut_share"] == 0.0 and json.dumps(stats, allow_nan=False)


def test_simulate_writes_the_stats_into_metrics_json(tmp_path: Path) -> None:
    from batpolicy.app.cli import main

    out = tmp_path / "out"
    assert main(["simulate", "--policy", "dpsa-n", "--param", "search=exhaustive",
                 "--param", "time_bound_ms=50", "-o", str(out), "--no-progress", "-q"]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    stats = metrics["policy_stats"]
    assert stats["dpsa_variant"] == "dpsa-n" and stats["dpsa_search"] == "exhaustive"
    assert stats["nb_dpsa_decisions"] > 0
    for key in ISSUE_STATS:
        assert key in stats


def test_parameters() -> None:
    assert isinstance(make_policy("dpsa-p"), Dpsa)
    assert isinstance(make_policy("dpsa-n"), DpsaN)
    assert isinstance(make_policy("dpsa-w"), DpsaW)
    assert make_policy("dpsa-p").params["search"] == "exact"
    with pytest.raises(ConfigError, match="search"):
        make_policy("dpsa-p", {"search": "greedy"})
    with pytest.raises(ConfigError, match=">= 0"):
        make_policy("dpsa-w", {"max_nodes": "-1"})


# ------------------------------------------------------------ random workloads
@st.composite
def workloads(draw: st.DrawFn, exact_runtime: bool) -> tuple[int, list[Spec]]:
    nb = draw(st.integers(4, 16))
    n = draw(st.integers(1, 30))
    specs, at = [], 0
    for i in range(n):
        at += draw(st.integers(0, 6))
        wall = draw(st.integers(1, 40))
        runtime = wall if exact_runtime else draw(st.integers(1, wall))
        specs.append(Spec(f"j{i}", at, draw(st.integers(1, nb)), wall, runtime))
    return nb, specs


@pytest.mark.parametrize("variant", VARIANTS)
@settings(max_examples=60, deadline=None)
@given(workload=workloads(exact_runtime=True))
def test_head_reservation_is_never_delayed(variant: str, workload: tuple) -> None:
    nb, specs = workload
    r = run(variant, nb, specs)
    first: dict[str, float] = {}
    last: dict[str, float] = {}
    for now, job, shadow in r.reservations:
        assert shadow >= now
        assert shadow <= last.get(job, math.inf), f"{job}'s reservation moved later at {now}"
        first.setdefault(job, shadow)
        last[job] = shadow
    for job, shadow in first.items():
        assert r.start[job] <= shadow


@pytest.mark.parametrize("variant", VARIANTS)
@settings(max_examples=40, deadline=None)
@given(workload=workloads(exact_runtime=False))
def test_no_job_starves(variant: str, workload: tuple) -> None:
    nb, specs = workload
    r = run(variant, nb, specs)
    assert set(r.finish) == {s.name for s in specs}
    for s in specs:
        assert r.finish[s.name] == r.start[s.name] + s.runtime


@settings(max_examples=40, deadline=None)
@given(workload=workloads(exact_runtime=False))
def test_exhaustive_and_exact_schedules_agree(workload: tuple) -> None:
    nb, specs = workload
    for variant in VARIANTS:
        exact = run(variant, nb, specs)
        paper = run(variant, nb, specs, search="exhaustive", time_bound_ms="0", max_nodes="0")
        assert exact.start == paper.start


@settings(max_examples=40, deadline=None)
@given(workload=workloads(exact_runtime=False))
def test_keeping_the_reservation_between_releases_changes_no_decision(workload: tuple) -> None:
    nb, specs = workload
    for variant in VARIANTS:
        full = make_policy(variant)
        full.incremental = False  # type: ignore[attr-defined]
        assert run(variant, nb, specs).start == run(full, nb, specs).start


def test_dpsa_never_uses_fewer_machines_at_a_decision_than_easy_would() -> None:
    # Fig. 1 again: at t=2, EASY uses 3 of the 4 free machines, DPSA all 4
    easy, dpsa = run("easy", 10, FIG1), run("dpsa-p", 10, FIG1)
    used = {name: sum(s.res for s in FIG1 if r.start.get(s.name) == 2) for name, r in
            (("easy", easy), ("dpsa", dpsa))}
    assert used == {"easy": 3, "dpsa": 4}


# ----------------------------------------------------- through the embedded simulator
@pytest.mark.parametrize("variant", VARIANTS)
def test_random_workload_on_the_embedded_simulator(variant: str) -> None:
    sim = pytest.importorskip("batpolicy.simulator")
    from batpolicy.io.workload import JobSpec, Workload
    from batpolicy.platforms.model import Platform

    rng = random.Random(variant)
    specs, profiles, at = [], {}, 0
    for i in range(300):
        at += rng.randint(0, 30)
        wall = rng.randint(10, 600)
        run_s = rng.randint(1, wall)
        profiles[f"d{run_s}"] = {"type": "delay", "delay": float(run_s)}
        raw = {"id": f"w0!{i}", "subtime": at, "res": rng.choice((1, 1, 2, 4, 8, 13, 32)),
               "walltime": wall, "profile": f"d{run_s}"}
        specs.append(JobSpec(raw["id"], at, raw["res"], raw["profile"], float(wall), raw=raw))
    workload = Workload("w0", specs, profiles, nb_res=32)
    workload.sort()
    policy = make_policy(variant)
    dispatcher = Dispatcher(policy, paranoid=True)
    sim.Simulator([workload], Platform.homogeneous(32), options=sim.SimOptions()).run(
        dispatcher.handle)
    jobs = dispatcher.state.jobs
    assert len(jobs) == 300 and all(j.finish is not None for j in jobs.values())
    # the same workload through this file's driver gives the same schedule
    ours = run(variant, 32, [Spec(s.name, s.subtime, s.res, s.walltime or 0.0,
                                  profiles[s.profile]["delay"]) for s in specs])
    assert ours.start == {j.name: j.start for j in jobs.values()}
    assert policy.stats()["nb_dpsa_decisions"] > 0
