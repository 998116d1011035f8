"""Policies with group-aware allocators: exact decisions, and EASY's guarantee kept.

The platform has two clusters, ``a`` = machines 0-3 and ``b`` = 4-7, announced as
SimGrid properties in SIMULATION_BEGINS (``cluster``), as Batsim forwards them. A small
event loop below plays Batsim for random workloads (every job runs exactly its
walltime), so that EASY's promise can be checked: the queue head starts no later than
the shadow time of the reservation it got, whatever the allocator.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from batpolicy.errors import ConfigError
from batpolicy.policies.easy import EasyBackfilling
from batpolicy.policies.registry import POLICIES, make_policy
from batpolicy.policies.toolkit.allocation import ALLOCATORS
from batpolicy.protocol import types as t
from batpolicy.protocol.intervals import MachineSet
from batpolicy.scheduler.dispatch import Dispatcher
from batpolicy.scheduler.state import check_invariants

CLUSTERS = {"a": (0, 3), "b": (4, 7)}


def begins(clusters: dict[str, tuple[int, int]]) -> t.SimulationBegins:
    resources = tuple(t.ResourceInfo(i, f"{name}{i}", properties={"cluster": name})
                      for name, (lo, hi) in clusters.items() for i in range(lo, hi + 1))
    nb = len(resources)
    return t.SimulationBegins(0.0, nb, nb, 0, False, True, {}, resources, (),
                              {"w0": "/w0.json"}, {"w0": {"p": {"type": "delay", "delay": 1}}})


def sub(name: str, at: float, res: int, walltime: float) -> t.JobSubmitted:
    return t.JobSubmitted(at, f"w0!{name}", {"id": f"w0!{name}", "subtime": at, "res": res,
                                            "walltime": walltime, "profile": "p"})


def done(name: str, at: float, alloc: str) -> t.JobCompleted:
    return t.JobCompleted(at, f"w0!{name}", t.JobState.COMPLETED_SUCCESSFULLY, 0,
                          MachineSet.parse(alloc))


def starts(reply: t.Reply) -> dict[str, str]:
    return {d.job_id.split("!")[1]: str(d.alloc) for d in reply.decisions
            if isinstance(d, t.ExecuteJob)}


def rejected(reply: t.Reply) -> list[str]:
    return [d.job_id.split("!")[1] for d in reply.decisions if isinstance(d, t.RejectJob)]


def drive(policy: str, **params: str) -> Dispatcher:
    dispatcher = Dispatcher(make_policy(policy, params), paranoid=True)
    dispatcher.handle(t.Request(0.0, (begins(CLUSTERS),)))
    return dispatcher


def test_every_placing_policy_lists_the_allocator_parameters() -> None:
    for name in ("fcfs", "easy", "dpsa-p", "dpsa-n", "dpsa-w", "redirection"):
        declared = {p.name: p for p in POLICIES[name].parameters}
        assert declared["allocator"].choices == tuple(ALLOCATORS), name
        assert declared["allocator"].default == "lowest" and declared["one_group"].default is False


def test_easy_one_group_reserves_machines_the_head_can_use() -> None:
    d = drive("easy", one_group="true")
    reply = d.handle(t.Request(0.0, (sub("J1", 0.0, 3, 100.0), sub("J2", 0.0, 3, 50.0),
                                     sub("H", 0.0, 2, 100.0), sub("S", 0.0, 1, 1000.0),
                                     sub("T", 0.0, 1, 1000.0))))
    # 2 machines are free (3 and 7) but in two clusters: H waits for b at t=50 and
    # reserves 4-5; S and T (long) backfill on the machines H does not need
    assert starts(reply) == {"J1": "0-2", "J2": "4-6", "S": "3", "T": "7"}
    policy = d.policy
    assert isinstance(policy, EasyBackfilling)
    reservation = policy.last_reservation
    assert reservation is not None
    assert (reservation.job.id, reservation.shadow_time, str(reservation.machines)) == (
        "w0!H", 50.0, "4-5")
    assert starts(d.handle(t.Request(50.0, (done("J2", 50.0, "4-6"),)))) == {"H": "4-5"}


def test_easy_without_groups_starts_the_same_head_at_once() -> None:
    d = drive("easy")
    reply = d.handle(t.Request(0.0, (sub("J1", 0.0, 3, 100.0), sub("J2", 0.0, 3, 50.0),
                                     sub("H", 0.0, 2, 100.0))))
    assert starts(reply) == {"J1": "0-2", "J2": "3-5", "H": "6-7"}


@pytest.mark.parametrize("policy", ["fcfs", "easy", "dpsa-p"])
def test_jobs_larger_than_every_group_are_rejected_with_one_group(policy: str) -> None:
    d = drive(policy, one_group="true")
    reply = d.handle(t.Request(0.0, (sub("big", 0.0, 5, 10.0), sub("ok", 0.0, 4, 10.0))))
    assert rejected(reply) == ["big"] and starts(reply) == {"ok": "0-3"}
    d = drive(policy)  # without the constraint 5 machines fit the platform
    assert starts(d.handle(t.Request(0.0, (sub("big", 0.0, 5, 10.0),)))) == {"big": "0-4"}


def test_fcfs_one_group_waits_for_a_whole_group() -> None:
    d = drive("fcfs", allocator="one-group")
    reply = d.handle(t.Request(0.0, (sub("A", 0.0, 3, 10.0), sub("B", 0.0, 3, 10.0),
                                     sub("C", 0.0, 2, 10.0))))
    assert starts(reply) == {"A": "0-2", "B": "4-6"}  # C (2) fits no cluster: it waits
    assert starts(d.handle(t.Request(10.0, (done("A", 10.0, "0-2"),)))) == {"C": "0-1"}


def test_redirection_hands_its_allocator_to_both_base_policies() -> None:
    policy = make_policy("redirection", {"allocator": "fewest-groups", "one_group": "true",
                                         "redirection_params": "allocator=lowest"})
    principal = policy.principal_policy.placement.allocator  # type: ignore[attr-defined]
    redirection = policy.redirection_policy.placement.allocator  # type: ignore[attr-defined]
    assert (principal.name, principal.one_group) == ("fewest-groups", True)
    assert (redirection.name, redirection.one_group) == ("lowest", True)
    with pytest.raises(ConfigError, match="one of lowest, one-group"):
        make_policy("easy", {"allocator": "random"})


# ---------------------------------------------------------- EASY's guarantee
def play(policy_name: str, jobs: list[tuple[str, float, int, float]],
         **params: str) -> tuple[Dispatcher, dict[str, tuple[float, str]], list[Any]]:
    """Run ``jobs`` (name, submit, res, walltime) to the end; each runs its walltime.

    Returns the dispatcher, each job's (start, allocation), and the reservations EASY
    made: (head id, shadow time) after every message.
    """
    d = drive(policy_name, **params)
    pending = sorted(jobs, key=lambda j: j[1])
    running: dict[str, tuple[float, str]] = {}  # name -> (end, alloc)
    started: dict[str, tuple[float, str]] = {}
    walltime = {name: wall for name, _, _, wall in jobs}
    reservations = []
    while pending or running:
        now = min([p[1] for p in pending[:1]] + [end for end, _ in running.values()])
        events: list[t.Event] = [done(n, now, a) for n, (end, a) in sorted(running.items())
                                 if end == now]
        for event in events:
            del running[event.job_id.split("!")[1]]  # type: ignore[attr-defined]
        while pending and pending[0][1] == now:
            name, at, res, wall = pending.pop(0)
            events.append(sub(name, at, res, wall))
        reply = d.handle(t.Request(now, tuple(events)))
        for name, alloc in starts(reply).items():
            started[name] = (now, alloc)
            running[name] = (now + walltime[name], alloc)
        reservation = getattr(d.policy, "last_reservation", None)
        if reservation is not None:
            reservations.append((reservation.job.id.split("!")[1], reservation.shadow_time))
    return d, started, reservations


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("allocator,one_group", [
    ("lowest", "false"), ("lowest", "true"), ("one-group", "false"),
    ("fewest-groups", "false"), ("preferred-first", "true")])
def test_easy_head_never_starts_after_its_shadow_time(seed: int, allocator: str,
                                                      one_group: str) -> None:
    rng = random.Random(seed)
    jobs = [(f"j{i}", float(rng.randrange(0, 400, 10)), rng.randint(1, 4),
             float(rng.choice((10, 30, 60, 200)))) for i in range(40)]
    d, started, reservations = play("easy", jobs, allocator=allocator, one_group=one_group)
    assert set(started) == {name for name, *_ in jobs}  # everything ran (nothing > 4)
    for head, shadow in reservations:
        assert started[head][0] <= shadow, (head, shadow, started[head])
    groups = [MachineSet.parse(f"{lo}-{hi}") for lo, hi in CLUSTERS.values()]
    for name, (_, alloc) in started.items():
        machines = MachineSet.parse(alloc)
        if one_group == "true" or allocator == "one-group":
            assert any(machines.issubset(g) for g in groups), (name, alloc)
    check_invariants(d.state)


@pytest.mark.parametrize("policy", ["fcfs", "dpsa-p", "dpsa-w"])
@pytest.mark.parametrize("allocator", sorted(ALLOCATORS))
def test_every_policy_runs_every_job_in_one_group(policy: str, allocator: str) -> None:
    rng = random.Random(7)
    jobs = [(f"j{i}", float(rng.randrange(0, 300, 10)), rng.randint(1, 4),
             float(rng.choice((10, 30, 200)))) for i in range(30)]
    d, started, _ = play(policy, jobs, allocator=allocator, one_group="true")
    assert set(started) == {name for name, *_ in jobs}
    groups = [MachineSet.parse(f"{lo}-{hi}") for lo, hi in CLUSTERS.values()]
    for name, (_, alloc) in started.items():
        assert any(MachineSet.parse(alloc).issubset(g) for g in groups), (name, alloc)
