"""Redirection policy, driven message by message with hand-built Batsim events.

Covers Algorithm 2 (both filters, every conflict policy, counters reset), Algorithm 1's
"starts at once, counts nothing" branch, the group views, platform growth, parameters,
and the corner cases of kill-and-restart (a job that ends before its kill, a profile
that cannot be re-registered).
"""

from __future__ import annotations

from typing import Any

import pytest

from batpolicy.errors import ConfigError
from batpolicy.policies.easy import EasyBackfilling
from batpolicy.policies.fcfs import Fcfs
from batpolicy.policies.redirection import Redirection, grown_size
from batpolicy.policies.registry import make_policy
from batpolicy.protocol import types as t
from batpolicy.protocol.intervals import MachineSet
from batpolicy.scheduler.clock import MockClock
from batpolicy.scheduler.dispatch import Dispatcher

CONFIG = {"dynamic-jobs-enabled": True, "dynamic-jobs-acknowledged": False,
          "profile-reuse-enabled": False, "profiles-forwarded-on-submission": False}
PROFILES = {"w0": {"p": {"type": "delay", "delay": 10_000.0},
                   "seq": {"type": "composed", "seq": ["p"]}}}


def begins(nb: int, config: dict[str, Any] | None = None) -> t.SimulationBegins:
    resources = tuple(t.ResourceInfo(i, f"h{i}") for i in range(nb))
    return t.SimulationBegins(0.0, nb, nb, 0, False, True, {**CONFIG, **(config or {})},
                              resources, (), {"w0": "/w0.json"}, PROFILES)


def sub(name: str, at: float, res: int, walltime: float, profile: str = "p") -> t.JobSubmitted:
    return t.JobSubmitted(at, f"w0!{name}", {"id": f"w0!{name}", "subtime": at, "res": res,
                                            "walltime": walltime, "profile": profile})


class Driver:
    """A Dispatcher fed by hand; remembers every reply."""

    def __init__(self, nb: int, config: dict[str, Any] | None = None, **params: str) -> None:
        self.policy = make_policy("redirection", params)
        assert isinstance(self.policy, Redirection)
        self.dispatcher = Dispatcher(self.policy, paranoid=True)
        self.replies: list[t.Reply] = []
        self.send(0.0, begins(nb, config))

    def send(self, now: float, *events: t.Event) -> list[t.Decision]:
        reply = self.dispatcher.handle(t.Request(now, events))
        self.replies.append(reply)
        return list(reply.decisions)

    @property
    def state(self) -> Any:
        return self.dispatcher.state


def started(decisions: list[t.Decision]) -> dict[str, str]:
    return {d.job_id: str(d.alloc) for d in decisions if isinstance(d, t.ExecuteJob)}


def kills(decisions: list[t.Decision]) -> list[str]:
    return [j for d in decisions if isinstance(d, t.KillJob) for j in d.job_ids]


# ------------------------------------------------------------------------ filters
@pytest.mark.parametrize("kind,expected", [
    ("size", {"w0!K1": 2, "w0!K2": 1}),      # q_k >= q_j (§III-B)
    ("walltime", {"w0!K1": 1, "w0!K2": 1}),  # w_j >= w_k (Alg. 2, l. 3)
    ("both", {"w0!K1": 1}),
    ("none", {"w0!K1": 2, "w0!K2": 2}),
])
def test_filters(kind: str, expected: dict[str, int]) -> None:
    d = Driver(10, theta="100", alpha="0.2", filter=kind)  # principal 0-7, full below
    assert started(d.send(0.0, sub("K1", 0.0, 5, 100.0), sub("K2", 0.0, 3, 1000.0))) == {
        "w0!K1": "0-4", "w0!K2": "5-7"}
    d.send(1.0, sub("ja", 1.0, 4, 2000.0))  # size: K1 (5 >= 4);  walltime: K1 and K2
    d.send(2.0, sub("jb", 2.0, 1, 50.0))    # size: K1 and K2;    walltime: neither
    assert d.policy.counters.snapshot() == expected


def test_filter_default_is_size() -> None:
    assert Redirection().params["filter"] == "size"


# ------------------------------------------------- Algorithm 1, l. 2: no count
def test_a_job_that_starts_at_once_counts_nothing() -> None:
    d = Driver(10, theta="0", alpha="0.2")
    d.send(0.0, sub("long", 0.0, 2, 1000.0))
    # 6 free principal machines, empty queue: 'a' starts at once (Alg. 1, l. 2-3) and
    # counts nothing; 'b', in the same message, no longer fits and counts (l. 4-5)
    out = d.send(5.0, sub("a", 5.0, 6, 10.0), sub("b", 5.0, 1, 10.0))
    assert started(out) == {"w0!a": "2-7"}
    assert kills(out) == ["w0!long"]  # counter 1 > theta 0: only 'b' counted


def test_no_count_without_pressure() -> None:
    d = Driver(10, theta="0", alpha="0.2")
    d.send(0.0, sub("long", 0.0, 2, 1000.0))
    out = d.send(5.0, sub("a", 5.0, 3, 10.0))
    assert started(out) == {"w0!a": "2-4"} and not kills(out)
    assert d.policy.counters.snapshot() == {}


# ----------------------------------------------------------- conflict policies
def conflict_scene(rule: str) -> tuple[Driver, list[t.Decision]]:
    """Four running jobs over threshold at once, each chosen by a different rule.

    A (2 wide, walltime 1000, started 0), B (3, 2000, started 1), C (4, 300, started 2)
    and F (6 wide: too big for the 5-machine redirection group) fill the 15 principal
    machines; six submissions in one message give counters A 3, B 5, C 6, F 6.
    """
    d = Driver(20, theta="2", alpha="0.25", conflict=rule)  # principal 0-14, redir 15-19
    for at, (name, res, wall) in enumerate([("A", 2, 1000.0), ("B", 3, 2000.0),
                                            ("C", 4, 300.0), ("F", 6, 5000.0)]):
        assert started(d.send(float(at), sub(name, float(at), res, wall)))
    batch = [sub("s1", 10.0, 3, 9.0), sub("s2", 10.0, 3, 9.0), sub("s3", 10.0, 4, 9.0),
             sub("s4", 10.0, 1, 9.0), sub("s5", 10.0, 1, 9.0), sub("s6", 10.0, 1, 9.0)]
    return d, d.send(10.0, *batch)


@pytest.mark.parametrize("rule,victim", [("walltime", "w0!B"), ("oldest", "w0!A"),
                                         ("counter", "w0!C")])
def test_conflict_policies(rule: str, victim: str) -> None:
    d, out = conflict_scene(rule)
    assert kills(out) == [victim]
    assert d.policy.counters.snapshot() == {}  # Alg. 2, l. 10: every counter reset


def test_default_conflict_is_largest_walltime() -> None:
    assert Redirection().params["conflict"] == "walltime"


def test_counters_reset_then_count_again() -> None:
    d, out = conflict_scene("walltime")
    assert kills(out) == ["w0!B"]
    d.send(11.0, sub("s7", 11.0, 1, 9.0))
    # B's kill is not acknowledged yet: B is excluded; the others start again from 0
    assert d.policy.counters.snapshot() == {"w0!A": 1, "w0!C": 1, "w0!F": 1}


def test_one_redirection_per_message() -> None:
    d, out = conflict_scene("walltime")
    assert len(kills(out)) == 1


# ------------------------------------------------------------------ kill paths
def test_restart_registers_queues_and_starts_the_copy() -> None:
    d, out = conflict_scene("walltime")
    assert kills(out) == ["w0!B"]
    assert t.SetJobMetadata("w0!B", "redirected_to=redir!w0.B") in out
    out = d.send(10.0, t.JobCompleted(10.0, "w0!B", t.JobState.COMPLETED_KILLED, -1,
                                      MachineSet.span(2, 4)),
                 t.JobKilled(10.0, ("w0!B",), {"w0!B": {"profile_name": "p", "progress": .1}}))
    kinds = [type(x).__name__ for x in out]
    assert kinds[:3] == ["RegisterProfile", "RegisterJob", "SetJobMetadata"]
    assert started(out)["redir!w0.B"] == "15-17"
    assert d.state.job("redir!w0.B").subtime == 1.0  # the original's submission time
    assert d.state.job("redir!w0.B").metadata == "parent=w0!B"
    stats = d.policy.stats()
    assert stats["nb_redirections"] == 1
    assert stats["wasted_processor_seconds"] == pytest.approx(9.0 * 3)  # ran 1 -> 10 on 3


def test_a_job_that_ends_before_its_kill_is_not_restarted() -> None:
    d, out = conflict_scene("walltime")
    assert kills(out) == ["w0!B"]
    out = d.send(10.0, t.JobCompleted(10.0, "w0!B", t.JobState.COMPLETED_SUCCESSFULLY, 0,
                                      MachineSet.span(2, 4)),
                 t.JobKilled(10.0, ("w0!B",), {}),
                 t.Notify(10.0, "no_more_static_job_to_submit"))
    assert not any(isinstance(x, t.RegisterJob) for x in out)
    assert out[-1] == t.RegistrationFinished()
    assert d.policy.stats()["nb_redirections_moot"] == 1
    assert d.policy.stats()["nb_redirections"] == 0


def test_registration_waits_for_a_pending_kill() -> None:
    d, out = conflict_scene("walltime")
    out = d.send(10.5, t.Notify(10.5, "no_more_static_job_to_submit"))
    assert not any(isinstance(x, t.RegistrationFinished) for x in out)  # B's copy pending
    out = d.send(10.5, t.JobCompleted(10.5, "w0!B", t.JobState.COMPLETED_KILLED, -1,
                                      MachineSet.span(2, 4)),
                 t.JobKilled(10.5, ("w0!B",), {"w0!B": {"profile_name": "p", "progress": .1}}))
    assert [type(x) for x in out].count(t.RegistrationFinished) == 1
    assert isinstance(out[-1], t.RegistrationFinished)
    later = d.send(20.0, t.JobCompleted(20.0, "w0!A", t.JobState.COMPLETED_SUCCESSFULLY, 0,
                                        MachineSet.span(0, 1)))
    assert t.RegistrationFinished() not in later  # exactly once


def test_never_kills_a_job_whose_copy_cannot_be_registered() -> None:
    d = Driver(10, theta="0", alpha="0.2")
    d.send(0.0, sub("c", 0.0, 2, 1000.0, profile="seq"), sub("f", 0.0, 6, 1000.0))
    out = d.send(1.0, sub("x", 1.0, 1, 10.0))
    assert kills(out) == []  # 'c' uses a composed profile; 'f' is too wide
    assert d.policy.counters["w0!c"] == 1


def test_copy_workload_original_with_profile_reuse() -> None:
    d = Driver(10, {"profile-reuse-enabled": True}, theta="0", alpha="0.2",
               copy_workload="@original")
    d.send(0.0, sub("c", 0.0, 2, 1000.0, profile="seq"), sub("f", 0.0, 6, 1000.0))
    assert kills(d.send(1.0, sub("x", 1.0, 1, 10.0))) == ["w0!c"]  # any profile works
    out = d.send(1.0, t.JobCompleted(1.0, "w0!c", t.JobState.COMPLETED_KILLED, -1,
                                     MachineSet.span(0, 1)), t.JobKilled(1.0, ("w0!c",), {}))
    reg, = [x for x in out if isinstance(x, t.RegisterJob)]
    assert reg.job_id == "w0!c.r" and reg.job["profile"] == "seq"
    assert not any(isinstance(x, t.RegisterProfile) for x in out)


# ---------------------------------------------------------------- group views
def test_group_views_split_machines_and_jobs() -> None:
    d, _ = conflict_scene("walltime")
    policy = d.policy
    assert str(policy.principal_machines) == "0-14"
    assert str(policy.redirection_machines) == "15-19"
    d.send(10.0, t.JobCompleted(10.0, "w0!B", t.JobState.COMPLETED_KILLED, -1,
                                MachineSet.span(2, 4)),
           t.JobKilled(10.0, ("w0!B",), {}))
    principal, redirection = policy._views["principal"], policy._views["redirection"]
    assert principal.nb_machines == 15 and redirection.nb_machines == 5
    assert set(redirection.running) == {"redir!w0.B"}
    assert "redir!w0.B" not in principal.running and "w0!A" in principal.running
    assert [j.id for j in redirection.running_by_expected_end] == ["redir!w0.B"]
    assert str(redirection.free) == "18-19" and not principal.free & MachineSet.span(15, 19)
    assert all(not j.id.startswith("redir!") for j in principal.waiting.values())
    assert principal.config == d.state.config  # everything else is the whole view's
    with pytest.raises(TypeError):  # ... read-only: no path back to the state's own dict
        principal.config["dynamic-jobs-enabled"] = False  # type: ignore[index]
    assert not hasattr(principal, "_state") and not hasattr(principal, "busy")


def test_base_policies_are_chosen_by_name() -> None:
    policy = make_policy("redirection", {"principal_policy": "fcfs",
                                         "redirection_params": "order=sjf"})
    assert isinstance(policy.principal_policy, Fcfs)
    assert isinstance(policy.redirection_policy, EasyBackfilling)
    assert policy.redirection_policy.params["order"] == "sjf"


@pytest.mark.parametrize("params,match", [
    ({"alpha": "1.0"}, "alpha"), ({"theta": "-1"}, "theta"),
    ({"principal_policy": "redirection"}, "itself"), ({"principal_policy": "nope"}, "unknown"),
    ({"principal_params": "order"}, "KEY=VALUE"), ({"filter": "speed"}, "filter"),
    ({"original_size": "20"}, "only goes with grow=true"),
    ({"original_size": "-1", "grow": "true"}, "original_size"),
])
def test_bad_parameters(params: dict[str, str], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        make_policy("redirection", params)


def test_clock_reaches_both_base_policies() -> None:
    policy = make_policy("redirection")
    clock = MockClock()
    policy.clock = clock
    assert policy.principal_policy.clock is clock and policy.redirection_policy.clock is clock


# ---------------------------------------------------------------------- growth
def test_grow_keeps_the_original_size_for_the_principal_group() -> None:
    assert grown_size(20, 0.15) == 23
    d = Driver(23, alpha="0.15", grow="true")
    assert str(d.policy.principal_machines) == "0-19"
    assert str(d.policy.redirection_machines) == "20-22"
    out = d.send(1.0, sub("wide", 1.0, 20, 10.0))  # as wide as the original platform
    assert started(out) == {"w0!wide": "0-19"}


def test_grow_refuses_a_platform_that_was_not_grown() -> None:
    with pytest.raises(ConfigError, match="not m \\+ ceil") as info:
        Driver(22, alpha="0.5", grow="true")  # 14+7=21, 15+8=23: no m gives 22
    assert "--nb-res 33" in str(info.value)  # if 22 is the original size: 22 + 11


def test_grow_with_the_original_size_names_the_platform_it_needs() -> None:
    d = Driver(23, alpha="0.15", grow="true", original_size="20")
    assert str(d.policy.principal_machines) == "0-19"
    with pytest.raises(ConfigError, match="= 23 machines, it has 20.*--nb-res 23"):
        Driver(20, alpha="0.15", grow="true", original_size="20")


def test_grow_says_how_it_read_the_platform(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("INFO"):
        Driver(23, alpha="0.15", grow="true")
    assert "read as an original platform of 20 grown by 3" in caplog.text
    assert "--nb-res 27 --param original_size=23" in caplog.text


def test_without_growth_jobs_wider_than_the_principal_group_are_rejected(
        caplog: pytest.LogCaptureFixture) -> None:
    d = Driver(10, alpha="0.2")
    out = d.send(1.0, sub("wide", 1.0, 9, 10.0))
    assert out == [t.RejectJob("w0!wide")]
    assert "grow=true" in caplog.text


def test_stats_shape() -> None:
    d, _ = conflict_scene("walltime")
    stats = d.policy.stats()
    assert {"nb_redirections", "wasted_processor_seconds", "user_jobs",
            "principal_group", "redirection_group"} <= set(stats)
    assert stats["user_jobs"]["bsld_tau"] == 60.0
