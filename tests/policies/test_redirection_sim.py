"""Redirection end to end in the embedded simulator (Batsim 4.2.1's rules, zero latency).

``Simulator`` + ``Dispatcher(paranoid=True)``: the simulator aborts where Batsim aborts
(ids never reused, REGISTER_JOB after registration_finished, profile garbage collection
without ``--enable-profile-reuse``, machines allocated twice...), the dispatcher checks
every state invariant after every message. Times are checked exactly.

The hand-made workload (10 machines, α = 0.2: principal group 0-7, redirection group
8-9): w0!0 (2 machines, 900 s, walltime 1000) and w0!1 (6 machines, 100 s) fill the
principal group at t=0; three 1-machine jobs arrive at 10, 20 and 30 and must wait, each
raising both counters (size filter: 2 ≥ 1 and 6 ≥ 1); after the third, w0!0's counter is
3 > θ = 2 and w0!0 is the only candidate that fits the redirection group (w0!1 needs 6).
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass
from typing import Any

import msgspec
import pytest

from batpolicy.errors import ConfigError
from batpolicy.io.workload import JobSpec, Workload
from batpolicy.platforms.model import Platform
from batpolicy.policies.redirection import Redirection
from batpolicy.policies.registry import make_policy
from batpolicy.protocol import types as t
from batpolicy.protocol.types import JobState
from batpolicy.scheduler.dispatch import Dispatcher
from batpolicy.simulator import JobRecord, SimOptions, Simulator

KILLED, OK = JobState.COMPLETED_KILLED, JobState.COMPLETED_SUCCESSFULLY

PROFILES = {"long": {"type": "delay", "delay": 900.0}, "wide": {"type": "delay", "delay": 100.0},
            "short": {"type": "delay", "delay": 50.0}}
#: (name, subtime, res, walltime, profile)
JOBS = [("0", 0.0, 2, 1000.0, "long"), ("1", 0.0, 6, 120.0, "wide"),
        ("2", 10.0, 1, 60.0, "short"), ("3", 20.0, 1, 60.0, "short"),
        ("4", 30.0, 1, 60.0, "short")]
PARAMS = {"theta": "2", "alpha": "0.2"}

#: (start, finish, final state, allocation), worked out by hand: t=30 the third waiting
#: submission (with no_more_static_job_to_submit) -> KILL_JOB w0!0; its acknowledgement
#: (same t) frees 0-1: w0!2 -> 0, w0!3 -> 1, the copy -> 8-9 from scratch; t=80 w0!2 and
#: w0!3 end, w0!4 starts on 0; t=100 w0!1 ends; t=130 w0!4 ends; the copy ends at 930.
EXPECTED = {
    "w0!0": (0.0, 30.0, KILLED, "0-1"),
    "w0!1": (0.0, 100.0, OK, "2-7"),
    "w0!2": (30.0, 80.0, OK, "0"),
    "w0!3": (30.0, 80.0, OK, "1"),
    "w0!4": (80.0, 130.0, OK, "0"),
    "redir!w0.0": (30.0, 930.0, OK, "8-9"),
}


def workload(jobs: list[tuple[str, float, int, float, str]],
             profiles: dict[str, dict[str, Any]]) -> Workload:
    specs = [JobSpec(f"w0!{name}", sub, res, prof, wall,
                     {"id": f"w0!{name}", "subtime": sub, "res": res, "walltime": wall,
                      "profile": prof}) for name, sub, res, wall, prof in jobs]
    out = Workload("w0", specs, dict(profiles))
    out.sort()
    return out


@dataclass
class Run:
    """One simulation: the conversation, the records by id, the policy."""

    messages: list[tuple[t.Request, t.Reply]]
    records: dict[str, JobRecord]
    policy: Any
    complete: bool

    def schedule(self) -> dict[str, tuple[Any, ...]]:
        return {r.job_id: (r.start, r.completion_time, r.final_state, str(r.alloc))
                for r in self.records.values()}

    def decisions(self, kind: type) -> list[tuple[float, Any]]:
        return [(req.now, d) for req, rep in self.messages for d in rep.decisions
                if isinstance(d, kind)]

    def events(self, kind: type) -> list[tuple[float, Any]]:
        return [(req.now, e) for req, _ in self.messages for e in req.events
                if isinstance(e, kind)]


def run(params: dict[str, str] | None = None, jobs: list[tuple] | None = None,
        profiles: dict[str, Any] | None = None, nb: int = 10, *, strip_profiles: bool = False,
        **options: Any) -> Run:
    """Simulate with the redirection policy; ``options`` are SimOptions (Batsim's flags).

    ``strip_profiles`` removes the profile table from SIMULATION_BEGINS (as a Batsim with
    Redis, or older than 4.2, would send it).
    """
    options.setdefault("dynamic_jobs", True)
    policy = make_policy("redirection", {**PARAMS, **(params or {})})
    dispatcher = Dispatcher(policy, paranoid=True)
    messages: list[tuple[t.Request, t.Reply]] = []

    def scheduler(request: t.Request) -> t.Reply:
        if strip_profiles and isinstance(request.events[0], t.SimulationBegins):
            begins = msgspec.structs.replace(request.events[0], profiles={})
            request = t.Request(request.now, (begins, *request.events[1:]))
        reply = dispatcher.handle(request)
        messages.append((request, reply))
        return reply

    sim = Simulator([workload(jobs or JOBS, profiles or PROFILES)], Platform.homogeneous(nb),
                    options=SimOptions(**options))
    result = sim.run(scheduler)
    return Run(messages, {r.job_id: r for r in result.records}, policy, result.complete)


# ------------------------------------------------------------- the redirected job
@pytest.mark.parametrize("ack", [False, True], ids=["no-ack", "ack"])
def test_long_job_redirected_after_theta_submissions(ack: bool) -> None:
    sim = run(acknowledge_dynamic_jobs=ack)
    assert sim.complete and sim.schedule() == EXPECTED
    assert sim.decisions(t.KillJob) == [(30.0, t.KillJob(("w0!0",)))]
    (at, reg), = sim.decisions(t.RegisterJob)
    assert at == 30.0 and reg.job_id == "redir!w0.0"
    assert reg.job["subtime"] == 0.0 and reg.job["res"] == 2 and reg.job["walltime"] == 1000.0
    assert sim.records["redir!w0.0"].metadata == "parent=w0!0"
    assert sim.records["w0!0"].metadata == "redirected_to=redir!w0.0"
    # Batsim keeps the original's submission time for the copy: waiting 30, turnaround 930
    assert sim.records["redir!w0.0"].submission_time == 0.0
    assert sim.records["redir!w0.0"].turnaround_time == 930.0
    stats = sim.policy.stats()
    assert stats["nb_redirections"] == 1
    assert stats["wasted_processor_seconds"] == 60.0  # 2 machines x 30 s
    user = stats["user_jobs"]
    assert user["nb_jobs"] == 5 and user["nb_jobs_killed"] == 0  # w0!0 once, as its copy
    assert user["mean_waiting_time"] == pytest.approx((30 + 0 + 20 + 10 + 50) / 5)
    assert user["max_turnaround_time"] == 930.0
    acks = [e.job_id for _, e in sim.events(t.JobSubmitted) if e.job_id.startswith("redir!")]
    assert acks == (["redir!w0.0"] if ack else [])


def test_acknowledgement_changes_nothing_but_one_message() -> None:
    no_ack, with_ack = run(acknowledge_dynamic_jobs=False), run(acknowledge_dynamic_jobs=True)
    assert no_ack.schedule() == with_ack.schedule() == EXPECTED
    assert len(with_ack.messages) == len(no_ack.messages) + 1
    # the acknowledgement arrives alone, at the copy's registration time, and changes nothing
    (at, ack), = [(req.now, rep) for req, rep in with_ack.messages
                  if any(isinstance(e, t.JobSubmitted) and e.job_id == "redir!w0.0"
                         for e in req.events)]
    assert at == 30.0 and ack.decisions == ()


def test_threshold_is_strict() -> None:
    """θ = 3: three submissions give a counter of 3, which does not exceed θ."""
    sim = run({"theta": "3"})
    assert sim.decisions(t.KillJob) == [] and sim.policy.stats()["nb_redirections"] == 0
    assert sim.records["w0!0"].final_state is OK and sim.records["w0!0"].start == 0.0


# ---------------------------------------------------------------------- filters
#: Three 3-machine submissions with a long walltime: they count against the 6-machine
#: w0!1 only under the size filter (q_k ≥ q_j: 2 ≥ 3 fails for w0!0), and against both
#: running jobs under the walltime filter (w_j = 5000 ≥ 1000 and 120).
WIDE_LONG = JOBS[:2] + [(f"{i}", 10.0 * (i - 1), 3, 5000.0, "short") for i in (2, 3, 4)]


@pytest.mark.parametrize("filter_kind,jobs,redirected", [
    ("size", JOBS, True),           # 1-machine submissions: q_k >= 1 for both
    ("walltime", JOBS, False),      # w_j = 60 < w_k: nothing counts
    ("size", WIDE_LONG, False),     # only w0!1 counts, and it does not fit the group
    ("walltime", WIDE_LONG, True),  # w0!0 counts 3 times
])
def test_both_filters(filter_kind: str, jobs: list[tuple], redirected: bool) -> None:
    sim = run({"filter": filter_kind}, jobs)
    assert sim.complete
    if not redirected:
        assert sim.decisions(t.KillJob) == []
        assert sim.records["w0!0"].final_state is OK
        return
    assert sim.decisions(t.KillJob) == [(30.0, t.KillJob(("w0!0",)))]
    copy = sim.records["redir!w0.0"]
    assert (copy.start, copy.completion_time, str(copy.alloc)) == (30.0, 930.0, "8-9")
    if jobs is WIDE_LONG:
        # 3-machine jobs wait for w0!1 (ends at 100); EASY then starts two of them on 0-5
        assert [(sim.records[f"w0!{i}"].start, str(sim.records[f"w0!{i}"].alloc))
                for i in (2, 3, 4)] == [(100.0, "0-2"), (100.0, "3-5"), (150.0, "0-2")]


# ------------------------------------------------------------ conflict policies
#: Four jobs fill the 15 principal machines of a 20-machine platform (α = 0.25: 15-19 is
#: the redirection group); six submissions at t=10 in one message give the counters
#: A 3, B 5, C 6 and F 6 (F, 6 machines wide, does not fit the 5-machine group).
CONFLICT_JOBS = [("A", 0.0, 2, 1000.0, "d1000"), ("B", 1.0, 3, 2000.0, "d2000"),
                 ("C", 2.0, 4, 300.0, "d300"), ("F", 3.0, 6, 5000.0, "d5000"),
                 ("s1", 10.0, 3, 9.0, "d9"), ("s2", 10.0, 3, 9.0, "d9"),
                 ("s3", 10.0, 4, 9.0, "d9"), ("s4", 10.0, 1, 9.0, "d9"),
                 ("s5", 10.0, 1, 9.0, "d9"), ("s6", 10.0, 1, 9.0, "d9")]
CONFLICT_PROFILES = {f"d{n}": {"type": "delay", "delay": float(n)}
                     for n in (1000, 2000, 300, 5000, 9)}


@pytest.mark.parametrize("rule,victim,length,alloc", [
    ("walltime", "B", 2000.0, "15-17"),  # largest walltime (the default)
    ("oldest", "A", 1000.0, "15-16"),    # earliest start
    ("counter", "C", 300.0, "15-18"),    # highest counter among those that fit
])
def test_conflict_policies(rule: str, victim: str, length: float, alloc: str) -> None:
    sim = run({"theta": "2", "alpha": "0.25", "conflict": rule}, CONFLICT_JOBS,
              CONFLICT_PROFILES, nb=20)
    assert sim.decisions(t.KillJob) == [(10.0, t.KillJob((f"w0!{victim}",)))]
    original, copy = sim.records[f"w0!{victim}"], sim.records[f"redir!w0.{victim}"]
    assert original.final_state is KILLED and original.completion_time == 10.0
    assert (copy.start, copy.completion_time, str(copy.alloc)) == (10.0, 10.0 + length, alloc)
    assert sim.policy.stats()["nb_redirections"] == 1  # counters reset: nobody else goes


# --------------------------------------------------------------- counters reset
#: L1 (walltime 1000) and L2 (800) both reach counter 3 at t=30; L1 goes (largest
#: walltime) and every counter is reset, so L2 needs three more waiting submissions
#: (40, 50, 60) and is killed at 60, not at 40 as it would be without the reset.
RESET_JOBS = [("L1", 0.0, 2, 1000.0, "d900"), ("L2", 0.0, 2, 800.0, "d700"),
              ("W", 0.0, 4, 500.0, "d400")] + \
             [(f"s{n}", float(n), 1, 60.0, "d50") for n in (10, 20, 30, 40, 50, 60)]
RESET_PROFILES = {f"d{n}": {"type": "delay", "delay": float(n)} for n in (900, 700, 400, 50)}


def test_counters_reset_after_a_redirection() -> None:
    sim = run({"theta": "2", "alpha": "0.2"}, RESET_JOBS, RESET_PROFILES)
    assert [(at, d.job_ids) for at, d in sim.decisions(t.KillJob)] == [
        (30.0, ("w0!L1",)), (60.0, ("w0!L2",))]
    # the second copy waits for the first to leave the 2-machine redirection group
    assert sim.records["redir!w0.L1"].start == 30.0
    assert sim.records["redir!w0.L2"].start == 930.0
    assert sim.records["redir!w0.L2"].completion_time == 1630.0
    assert sim.policy.stats()["wasted_processor_seconds"] == 2 * 30.0 + 2 * 60.0


def test_without_reset_the_second_job_would_go_earlier() -> None:
    """The same workload with θ=5: no job goes at 30 (counters 3), L1 goes at 60 (6 > 5)."""
    sim = run({"theta": "5", "alpha": "0.2"}, RESET_JOBS, RESET_PROFILES)
    assert [(at, d.job_ids) for at, d in sim.decisions(t.KillJob)] == [(60.0, ("w0!L1",))]


# ------------------------------------------------------- registration_finished
def test_registration_finished_once_in_the_reply_that_registers_the_last_copy() -> None:
    sim = run()
    (at, _), = sim.decisions(t.RegistrationFinished)
    assert at == 30.0
    index = next(i for i, (_, rep) in enumerate(sim.messages)
                 if any(isinstance(d, t.RegistrationFinished) for d in rep.decisions))
    request, reply = sim.messages[index]
    # the last submission triggered the kill; no_more_static_job_to_submit came in the next
    # message, with the kill's acknowledgement (as Batsim: issue 17, case 4): registration
    # may only finish once the copy is registered, in the reply to that message
    notify, = [i for i, (req, _) in enumerate(sim.messages)
               if any(isinstance(e, t.Notify) for e in req.events)]
    assert notify == index
    assert any(isinstance(e, t.JobKilled) for e in request.events)
    kinds = [type(d) for d in reply.decisions]
    assert kinds.index(t.RegisterJob) < kinds.index(t.RegistrationFinished) == len(kinds) - 1
    assert sim.complete


def test_registration_finished_at_the_notify_when_nothing_is_pending() -> None:
    sim = run({"theta": "100"})
    assert sim.policy.stats()["nb_redirections"] == 0
    (at, _), = sim.decisions(t.RegistrationFinished)
    (notify_at, notify), = sim.events(t.Notify)
    assert notify.kind == "no_more_static_job_to_submit" and at == notify_at == 30.0
    assert sim.complete and sim.schedule()["w0!0"] == (0.0, 900.0, OK, "0-1")


def test_registration_finished_after_redirections_long_before_the_end() -> None:
    """Two redirections, the last static job at 60: finished once, at 60, then nothing."""
    sim = run({"theta": "2", "alpha": "0.2"}, RESET_JOBS, RESET_PROFILES)
    (at, _), = sim.decisions(t.RegistrationFinished)
    assert at == 60.0 and sim.complete
    assert max(r.completion_time for r in sim.records.values()) == 1630.0


# --------------------------------------------------------------------- profiles
@pytest.mark.parametrize("reuse,forward,workload_name,nb_profiles,profile", [
    (False, False, "redir", 1, "w0.0"),           # neither: fresh profile from BEGINS' table
    (False, True, "redir", 1, "w0.0"),            # fresh profile from the forwarded one
    (True, False, "redir", 1, "w0.long"),         # shared per source profile
    (True, False, "@original", 0, "long"),        # the original profile, nothing registered
    (False, True, "@original", 1, "long.0.r"),    # like the chaos-dynack-fwd transcript
])
def test_copy_profiles_reuse_forwarded_or_neither(reuse: bool, forward: bool,
                                                  workload_name: str, nb_profiles: int,
                                                  profile: str) -> None:
    sim = run({"copy_workload": workload_name}, profile_reuse=reuse, forward_profiles=forward)
    assert len(sim.decisions(t.RegisterProfile)) == nb_profiles
    (_, reg), = sim.decisions(t.RegisterJob)
    assert reg.job["profile"] == profile
    expected = dict(EXPECTED)
    copy_id = "w0!0.r" if workload_name == "@original" else "redir!w0.0"
    expected[copy_id] = expected.pop("redir!w0.0")
    assert sim.schedule() == expected


def test_neither_reuse_nor_forwarding_is_said_at_simulation_begins(
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="batpolicy.policies.redirection"):
        run()
    begins = [r.message for r in caplog.records if "principal group" in r.message]
    assert len(begins) == 1
    assert "neither --enable-profile-reuse nor --forward-profiles-on-submission" in begins[0]
    assert "profile table of SIMULATION_BEGINS" in begins[0]


def test_without_any_profile_source_refused_at_simulation_begins() -> None:
    """No reuse, no forwarding, and no profile table: a clear error before any job."""
    with pytest.raises(ConfigError, match="SIMULATION_BEGINS gave no profile of workload"):
        run(strip_profiles=True)
    assert run(strip_profiles=True, forward_profiles=True).schedule() == EXPECTED


#: The pattern twice: w0!5 (2 machines, long) starts at 120 on 1-2, w0!6 fills the
#: principal group at 125, three 1-machine jobs at 140, 150, 160 push w0!5's counter to 3.
TWO_COPIES = JOBS + [("5", 120.0, 2, 1000.0, "long"), ("6", 125.0, 6, 120.0, "wide"),
                     ("7", 140.0, 1, 60.0, "short"), ("8", 150.0, 1, 60.0, "short"),
                     ("9", 160.0, 1, 60.0, "short")]


@pytest.mark.parametrize("reuse", [False, True])
def test_two_copies_of_one_profile(reuse: bool) -> None:
    sim = run(jobs=TWO_COPIES, profile_reuse=reuse)
    assert [d.job_id for _, d in sim.decisions(t.RegisterJob)] == ["redir!w0.0", "redir!w0.5"]
    profiles = [d.profile_name for _, d in sim.decisions(t.RegisterProfile)]
    assert profiles == (["w0.long"] if reuse else ["w0.0", "w0.5"])
    assert sim.policy.stats()["nb_redirections"] == 2
    assert sim.records["redir!w0.5"].start == 930.0  # after the first copy


# ---------------------------------------------------- without dynamic jobs, α = 0
def test_without_dynamic_jobs_refuses_by_default() -> None:
    with pytest.raises(ConfigError, match="--enable-dynamic-jobs"):
        run(dynamic_jobs=False)


def test_without_dynamic_jobs_falls_back_to_easy_on_all_machines(
        caplog: pytest.LogCaptureFixture) -> None:
    sim = run({"on_unsupported": "fallback"}, dynamic_jobs=False)
    assert "falling back to 'easy' on all 10 machines" in caplog.text
    easy = Simulator([workload(JOBS, PROFILES)], Platform.homogeneous(10)).run(
        Dispatcher(make_policy("easy"), paranoid=True).handle)
    assert sim.schedule() == {r.job_id: (r.start, r.completion_time, r.final_state,
                                         str(r.alloc)) for r in easy.records}
    assert sim.policy.stats()["nb_redirections"] == 0
    assert sim.decisions(t.RegistrationFinished) == []


def test_needs_dynamic_jobs_only_with_a_redirection_group() -> None:
    assert Redirection().needs_dynamic_jobs
    plain = run({"alpha": "0"}, dynamic_jobs=False)  # no group: nothing to register
    assert plain.complete and plain.decisions(t.KillJob) == []
    assert plain.records["w0!0"].final_state is OK


# ------------------------------------------------------------- random workloads
def random_jobs(seed: int, nb: int, machines: int) -> tuple[list[tuple], dict[str, Any]]:
    rng = random.Random(seed)
    jobs, profiles, at = [], {}, 0.0
    for i in range(nb):
        at += rng.choice([0.0, 0.0, rng.expovariate(1 / 20)])  # some simultaneous arrivals
        length = float(rng.choice([5, 30, 100, 600, 2000]))
        profiles[f"d{length:g}"] = {"type": "delay", "delay": length}
        walltime = rng.choice([length, 2 * length, length / 2])  # exact, over, under
        jobs.append((str(i), round(at, 3), rng.randint(1, machines // 2), walltime,
                     f"d{length:g}"))
    return jobs, profiles


@pytest.mark.parametrize("seed", range(10))
def test_random_workloads_respect_batsim_rules_and_count_each_job_once(seed: int) -> None:
    rng = random.Random(1000 + seed)
    jobs, profiles = random_jobs(seed, 120, 24)
    params = {"theta": str(rng.choice([0, 1, 3, 8])), "alpha": str(rng.choice([0.1, 0.25, 0.4])),
              "filter": rng.choice(["size", "walltime", "both", "none"]),
              "conflict": rng.choice(["walltime", "oldest", "counter"]),
              "copy_workload": rng.choice(["redir", "@original"])}
    reuse = params["copy_workload"] == "@original" or rng.random() < 0.5
    sim = run(params, jobs, profiles, nb=24, acknowledge_dynamic_jobs=rng.random() < 0.5,
              profile_reuse=reuse, forward_profiles=rng.random() < 0.5)
    assert sim.complete  # any Batsim abort or checker refusal fails above
    stats = sim.policy.stats()
    copies = {i: r for i, r in sim.records.items() if r.metadata.startswith("parent=")}
    assert len(copies) == stats["nb_redirections"]
    assert len(sim.decisions(t.RegistrationFinished)) == 1
    redirection = sim.policy.redirection_machines
    wasted = 0.0
    for copy in copies.values():
        original = sim.records[copy.metadata.removeprefix("parent=")]
        assert original.final_state is KILLED
        assert copy.submission_time == original.submission_time
        assert copy.alloc <= redirection and copy.requested_resources <= len(redirection)
        wasted += (original.completion_time - original.start) * original.requested_resources
    assert stats["wasted_processor_seconds"] == pytest.approx(wasted)
    for job_id, record in sim.records.items():
        if job_id not in copies and record.alloc is not None:
            assert not record.alloc & redirection  # originals never use the redirection group
    assert stats["user_jobs"]["nb_jobs"] == len(jobs)
    assert stats["user_jobs"]["nb_jobs_killed"] == 0  # every kill was followed by its copy


def test_random_workloads_do_redirect() -> None:
    jobs, profiles = random_jobs(1, 120, 24)
    sim = run({"theta": "0", "alpha": "0.1"}, jobs, profiles, nb=24)
    assert sim.policy.stats()["nb_redirections"] >= 5
