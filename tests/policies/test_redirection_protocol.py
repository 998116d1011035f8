"""Redirection end to end against a strict stand-in for Batsim 4.2.1's dynamic-job rules.

``StrictBatsim`` below is *not* the embedded simulator: it is the smallest Batsim that
enforces what matters for kill-and-restart (PROTOCOL.md §1.4, §1.6, §1.10) and aborts
where Batsim aborts: delay jobs on a zero-latency platform, KILL_JOB acknowledged by
JOB_COMPLETED(COMPLETED_KILLED) then JOB_KILLED in the next message at the same time,
REGISTER_JOB / REGISTER_PROFILE with profile garbage collection (without
``--enable-profile-reuse`` a profile is dropped when a job using it ends), ids never
reused, acknowledgements (JOB_SUBMITTED) when asked, ``registration_finished`` needed to
end, and the end-of-simulation conditions.
"""

from __future__ import annotations

import heapq
import itertools
import random
from dataclasses import dataclass, field
from typing import Any

import pytest
from procset import ProcSet

from batpolicy.errors import ConfigError
from batpolicy.policies.registry import make_policy
from batpolicy.protocol import types as t
from batpolicy.scheduler.dispatch import Dispatcher


class BatsimAbort(AssertionError):
    """What real Batsim would die on."""


@dataclass
class SimJob:
    id: str
    subtime: float
    res: int
    walltime: float | None
    profile: str
    state: str = "NOT_SUBMITTED"
    start: float | None = None
    finish: float | None = None
    alloc: ProcSet | None = None
    final: str | None = None
    metadata: str = ""
    desc: dict[str, Any] = field(default_factory=dict)

    @property
    def workload(self) -> str:
        return self.id.split("!")[0]


class StrictBatsim:
    """Batsim 4.2.1's rules for delay jobs, dynamic jobs and kills (see module doc)."""

    def __init__(self, nb_machines: int, jobs: list[dict[str, Any]],
                 profiles: dict[str, dict[str, Any]], *, dynamic: bool = True, ack: bool = False,
                 reuse: bool = False, forward: bool = False,
                 begins_profiles: bool = True, submissions_first: bool = False) -> None:
        self.nb = nb_machines
        self.submissions_first = submissions_first
        self.dynamic, self.ack, self.reuse, self.forward = dynamic, ack, reuse, forward
        self.begins_profiles = begins_profiles
        self.profiles: dict[str, dict[str, Any]] = {"w0": dict(profiles)}
        self.collected: set[tuple[str, str]] = set()
        self.jobs: dict[str, SimJob] = {}
        self.ever: set[str] = set()
        self.free = ProcSet((0, nb_machines - 1))
        self.heap: list[tuple[float, int, int, str, str]] = []  # time, kind, seq, type, job
        self.seq = itertools.count()
        for desc in jobs:
            job = SimJob(f"w0!{desc['id']}", float(desc["subtime"]), desc["res"],
                         desc.get("walltime"), desc["profile"], desc=dict(desc))
            job.desc["id"] = job.id
            self.jobs[job.id] = job
            self.ever.add(job.id)
            self._push(job.subtime, 1, "submit", job.id)
        self.nb_static = len(jobs)
        self.submitted_static = 0
        self.registration_finished = False
        self.immediate: list[t.Event] = []
        self.messages: list[tuple[t.Request, t.Reply]] = []
        self.now = 0.0

    def _push(self, at: float, kind: int, what: str, job_id: str) -> None:
        heapq.heappush(self.heap, (at, kind, next(self.seq), what, job_id))

    # ------------------------------------------------------------------ loop
    def run(self, handle: Any, limit: int = 10_000) -> None:
        res = tuple(t.ResourceInfo(i, f"h{i}") for i in range(self.nb))
        config = {"dynamic-jobs-enabled": self.dynamic, "dynamic-jobs-acknowledged": self.ack,
                  "profile-reuse-enabled": self.reuse,
                  "profiles-forwarded-on-submission": self.forward}
        profiles = {"w0": dict(self.profiles["w0"])} if self.begins_profiles else {}
        self._send(handle, [t.SimulationBegins(0.0, self.nb, self.nb, 0, False, True, config, res,
                                               (), {"w0": "/w0.json"}, profiles)])
        for _ in range(limit):
            if self.immediate:
                events, self.immediate = self.immediate, []
            elif self.heap:
                events = self._next_instant()
            else:
                self._check_end()
                self._send(handle, [t.SimulationEnds(self.now)])
                return
            self._send(handle, events)
        raise BatsimAbort("too many messages")

    def _next_instant(self) -> list[t.Event]:
        at = self.heap[0][0]
        self.now = at
        batch = []
        while self.heap and self.heap[0][0] == at:
            batch.append(heapq.heappop(self.heap))
        completions = [b for b in batch if b[3] == "end"]
        submissions = sorted((b for b in batch if b[3] == "submit"), key=lambda b: b[4])
        ends: list[t.Event] = [self._complete(self.jobs[b[4]], at) for b in completions]
        subs: list[t.Event] = []
        for _, _, _, _, jid in submissions:
            job = self.jobs[jid]
            job.state = "SUBMITTED"
            prof = self.profiles["w0"][job.profile] if self.forward else None
            subs.append(t.JobSubmitted(at, jid, dict(job.desc), prof))
            self.submitted_static += 1
        if submissions and self.submitted_static == self.nb_static:
            subs.append(t.Notify(at, "no_more_static_job_to_submit"))
        # Batsim 4.2.1 may deliver an instant's submissions before its completions (§1.9)
        return subs + ends if self.submissions_first else ends + subs

    def _complete(self, job: SimJob, at: float, killed: bool = False) -> t.JobCompleted:
        job.finish = at
        job.state = "DONE"
        if killed:
            job.final = "COMPLETED_KILLED"
        elif job.walltime is not None and job.walltime <= self._delay(job):
            job.final = "COMPLETED_WALLTIME_REACHED"
        else:
            job.final = "COMPLETED_SUCCESSFULLY"
        self.free |= job.alloc
        if not self.reuse:  # profile GC (§1.6): later REGISTER_JOBs may not name it;
            # jobs already parsed keep their profile (the transcripts show it)
            self.collected.add((job.workload, job.profile))
        return t.JobCompleted(at, job.id, t.JobState(job.final), -1 if killed else 0, job.alloc)

    def _delay(self, job: SimJob) -> float:
        return float(self.profiles[job.workload][job.profile]["delay"])

    def _send(self, handle: Any, events: list[t.Event]) -> None:
        request = t.Request(self.now, tuple(events))
        reply = handle(request)
        self.messages.append((request, reply))
        for decision in reply.decisions:
            self._apply(decision)

    def _check_end(self) -> None:
        if self.dynamic and not self.registration_finished:
            raise BatsimAbort("dynamic jobs enabled and no registration_finished: Batsim "
                              "would wait forever")
        stuck = [j.id for j in self.jobs.values() if j.state in ("SUBMITTED", "RUNNING")]
        if stuck:
            raise BatsimAbort(f"simulation cannot end, jobs not finished: {stuck}")

    # -------------------------------------------------------------- decisions
    def _apply(self, d: t.Decision) -> None:
        if isinstance(d, t.ExecuteJob):
            job = self._known(d.job_id)
            if job.state != "SUBMITTED":
                raise BatsimAbort(f"EXECUTE_JOB of {job.id} in state {job.state}")
            if not d.alloc <= self.free or len(d.alloc) != job.res:
                raise BatsimAbort(f"bad allocation {d.alloc} for {job.id}")
            self.free -= d.alloc
            job.state, job.start, job.alloc = "RUNNING", self.now, d.alloc
            run = self._delay(job)
            if job.walltime is not None:
                run = min(run, job.walltime)
            self._push(self.now + run, 0, "end", job.id)
        elif isinstance(d, t.RejectJob):
            job = self._known(d.job_id)
            job.state, job.final = "DONE", "REJECTED"
        elif isinstance(d, t.KillJob):
            progress = {}
            for jid in d.job_ids:
                job = self._known(jid)
                if job.state != "RUNNING":
                    raise BatsimAbort(f"KILL_JOB of {jid} in state {job.state}")
                self.heap = [e for e in self.heap if not (e[3] == "end" and e[4] == jid)]
                heapq.heapify(self.heap)
                self.immediate.append(self._complete(job, self.now, killed=True))
                progress[jid] = {"profile_name": job.profile, "progress": 0.5}
            self.immediate.append(t.JobKilled(self.now, tuple(d.job_ids), progress))
        elif isinstance(d, t.RegisterProfile):
            if not self.dynamic:
                raise BatsimAbort("REGISTER_PROFILE without dynamic jobs")
            table = self.profiles.setdefault(d.workload_name, {})
            if d.profile_name in table:
                raise BatsimAbort(f"profile {d.workload_name}!{d.profile_name} registered twice")
            table[d.profile_name] = dict(d.profile)
        elif isinstance(d, t.RegisterJob):
            if not self.dynamic or self.registration_finished:
                raise BatsimAbort(f"REGISTER_JOB {d.job_id} not allowed now")
            if d.job_id in self.ever:
                raise BatsimAbort(f"REGISTER_JOB {d.job_id}: id already used")
            wl = d.job_id.split("!")[0]
            desc = dict(d.job or {})
            if wl not in self.profiles or desc["profile"] not in self.profiles[wl]:
                raise BatsimAbort(f"REGISTER_JOB {d.job_id}: unknown profile {desc['profile']}")
            if (wl, desc["profile"]) in self.collected:
                raise BatsimAbort(f"REGISTER_JOB {d.job_id}: profile {desc['profile']} was "
                                  "garbage-collected (no --enable-profile-reuse)")
            job = SimJob(d.job_id, float(desc["subtime"]), desc["res"],
                         None if desc.get("walltime", -1) < 0 else desc["walltime"],
                         desc["profile"], state="SUBMITTED", desc=desc)
            self.jobs[job.id] = job
            self.ever.add(job.id)
            if self.ack:
                self.immediate.append(t.JobSubmitted(self.now, job.id, desc))
        elif isinstance(d, t.SetJobMetadata):
            job = self._known(d.job_id)
            if job.state == "DONE" or '"' in d.metadata:
                raise BatsimAbort(f"SET_JOB_METADATA on {d.job_id} refused")
            job.metadata = d.metadata
        elif isinstance(d, t.RegistrationFinished):
            if not self.dynamic:
                raise BatsimAbort("registration_finished without dynamic jobs")
            self.registration_finished = True
        else:
            raise BatsimAbort(f"unexpected decision {d}")

    def _known(self, job_id: str) -> SimJob:
        job = self.jobs.get(job_id)
        if job is None or job.state == "NOT_SUBMITTED":
            raise BatsimAbort(f"unknown job {job_id}")
        return job


# ---------------------------------------------------------------------------------------
# The hand-made workload: 10 machines, alpha = 0.2 -> principal 0-7, redirection 8-9.
#   w0!0 (2 machines, 900 s, walltime 1000) and w0!1 (6 machines, 100 s) fill the
#   principal group at t=0; three 1-machine jobs arrive at 10, 20, 30 and must wait, each
#   raising both counters; after the third, w0!0's counter is 3 > theta = 2 and w0!0 is
#   the only candidate that fits the redirection group (w0!1 needs 6 > 2 machines).
# ---------------------------------------------------------------------------------------
PROFILES = {"long": {"type": "delay", "delay": 900.0}, "wide": {"type": "delay", "delay": 100.0},
            "short": {"type": "delay", "delay": 50.0}}
JOBS = [
    {"id": 0, "subtime": 0.0, "res": 2, "walltime": 1000.0, "profile": "long"},
    {"id": 1, "subtime": 0.0, "res": 6, "walltime": 120.0, "profile": "wide"},
    {"id": 2, "subtime": 10.0, "res": 1, "walltime": 60.0, "profile": "short"},
    {"id": 3, "subtime": 20.0, "res": 1, "walltime": 60.0, "profile": "short"},
    {"id": 4, "subtime": 30.0, "res": 1, "walltime": 60.0, "profile": "short"},
]
PARAMS = {"theta": "2", "alpha": "0.2"}

#: (start, finish, final state, allocation) of every job, worked out by hand:
#: t=30 the kill; its ack (same t) frees 0-1: w0!2 -> 0, w0!3 -> 1, the copy -> 8-9;
#: t=80 w0!2 and w0!3 end, w0!4 starts on 0; t=100 w0!1 ends; t=130 w0!4 ends;
#: the copy runs its full 900 s from 30: ends at 930.
EXPECTED = {
    "w0!0": (0.0, 30.0, "COMPLETED_KILLED", "0-1"),
    "w0!1": (0.0, 100.0, "COMPLETED_SUCCESSFULLY", "2-7"),
    "w0!2": (30.0, 80.0, "COMPLETED_SUCCESSFULLY", "0"),
    "w0!3": (30.0, 80.0, "COMPLETED_SUCCESSFULLY", "1"),
    "w0!4": (80.0, 130.0, "COMPLETED_SUCCESSFULLY", "0"),
    "redir!w0.0": (30.0, 930.0, "COMPLETED_SUCCESSFULLY", "8-9"),
}


def run(params: dict[str, str] | None = None, jobs: list[dict[str, Any]] | None = None,
        profiles: dict[str, Any] | None = None, nb: int = 10,
        **batsim: Any) -> tuple[StrictBatsim, Dispatcher]:
    policy = make_policy("redirection", {**PARAMS, **(params or {})})
    dispatcher = Dispatcher(policy, paranoid=True)
    sim = StrictBatsim(nb, jobs if jobs is not None else JOBS, profiles or PROFILES, **batsim)
    sim.run(dispatcher.handle)
    return sim, dispatcher


def schedule(sim: StrictBatsim) -> dict[str, tuple[Any, ...]]:
    return {j.id: (j.start, j.finish, j.final, str(j.alloc)) for j in sim.jobs.values()}


def decisions_of(sim: StrictBatsim, kind: type) -> list[tuple[float, Any]]:
    return [(req.now, d) for req, rep in sim.messages for d in rep.decisions
            if isinstance(d, kind)]


@pytest.mark.parametrize("ack", [False, True], ids=["no-ack", "ack"])
def test_long_job_redirected_after_theta_submissions(ack: bool) -> None:
    sim, dispatcher = run(ack=ack)
    assert schedule(sim) == EXPECTED
    kills = decisions_of(sim, t.KillJob)
    assert kills == [(30.0, t.KillJob(("w0!0",)))]
    (at, reg), = decisions_of(sim, t.RegisterJob)
    assert at == 30.0 and reg.job_id == "redir!w0.0"
    assert reg.job["subtime"] == 0.0 and reg.job["res"] == 2 and reg.job["walltime"] == 1000.0
    assert sim.jobs["redir!w0.0"].metadata == "parent=w0!0"
    assert sim.jobs["w0!0"].metadata == "redirected_to=redir!w0.0"
    stats = dispatcher.policy.stats()
    assert stats["nb_redirections"] == 1
    assert stats["wasted_processor_seconds"] == 60.0  # 2 machines x 30 s
    user = stats["user_jobs"]
    assert user["nb_jobs"] == 5  # w0!0 counted once, as its copy
    # waiting of w0!0 = 30 (original submission to copy start); turnaround 930
    waits = [30.0, 0.0, 20.0, 10.0, 50.0]  # w0!0: copy start 30 - submission 0
    assert user["mean_waiting_time"] == pytest.approx(sum(waits) / 5)
    assert user["max_turnaround_time"] == 930.0
    acks = [ev for req, _ in sim.messages for ev in req.events
            if isinstance(ev, t.JobSubmitted) and ev.job_id.startswith("redir!")]
    assert len(acks) == (1 if ack else 0)


def test_acknowledgement_changes_nothing_but_one_message() -> None:
    no_ack, _ = run(ack=False)
    with_ack, _ = run(ack=True)
    assert schedule(no_ack) == schedule(with_ack)
    assert len(with_ack.messages) == len(no_ack.messages) + 1


def test_registration_finished_once_after_the_last_restart() -> None:
    sim, _ = run()
    finished = decisions_of(sim, t.RegistrationFinished)
    assert len(finished) == 1
    # the last submission (t=30) comes with no_more_static_job_to_submit and triggers the
    # kill: registration may only finish in the reply that registers the copy
    index = next(i for i, (req, rep) in enumerate(sim.messages)
                 if any(isinstance(d, t.RegistrationFinished) for d in rep.decisions))
    request, reply = sim.messages[index]
    assert request.now == 30.0 and any(isinstance(e, t.JobKilled) for e in request.events)
    kinds = [type(d) for d in reply.decisions]
    assert kinds.index(t.RegisterJob) < kinds.index(t.RegistrationFinished)
    notify_index = next(i for i, (req, _) in enumerate(sim.messages)
                        if any(isinstance(e, t.Notify) for e in req.events))
    assert notify_index == index - 1


def test_registration_finished_at_the_notify_when_nothing_is_pending() -> None:
    sim, dispatcher = run({"theta": "100"})
    assert dispatcher.policy.stats()["nb_redirections"] == 0
    (at, _), = decisions_of(sim, t.RegistrationFinished)
    notify_at = next(req.now for req, _ in sim.messages
                     if any(isinstance(e, t.Notify) for e in req.events))
    assert at == notify_at == 30.0


@pytest.mark.parametrize("reuse,forward,workload,nb_profiles,profile", [
    (False, False, "redir", 1, "w0.0"),           # fresh profile from SIMULATION_BEGINS
    (False, True, "redir", 1, "w0.0"),            # fresh profile from the forwarded one
    (True, False, "redir", 1, "w0.long"),         # shared per source profile
    (True, False, "@original", 0, "long"),        # the original profile, nothing registered
    (False, True, "@original", 1, "long.0.r"),    # like the chaos-dynack-fwd transcript
])
def test_copy_profile_strategies_pass_batsim_rules(reuse: bool, forward: bool, workload: str,
                                                   nb_profiles: int, profile: str) -> None:
    sim, _ = run({"copy_workload": workload}, reuse=reuse, forward=forward)
    assert len(decisions_of(sim, t.RegisterProfile)) == nb_profiles
    (_, reg), = decisions_of(sim, t.RegisterJob)
    assert reg.job["profile"] == profile
    expected = dict(EXPECTED)
    copy_id = "w0!0.r" if workload == "@original" else "redir!w0.0"
    expected[copy_id] = expected.pop("redir!w0.0")
    assert schedule(sim) == expected


TWO_COPIES = JOBS + [
    # the same pattern again: w0!5 (2 machines, long) starts at 120 on 1-2, w0!6 fills the
    # rest at 130, three 1-machine jobs at 140, 150, 160 push w0!5's counter to 3 > 2.
    {"id": 5, "subtime": 120.0, "res": 2, "walltime": 1000.0, "profile": "long"},
    {"id": 6, "subtime": 125.0, "res": 6, "walltime": 120.0, "profile": "wide"},
    {"id": 7, "subtime": 140.0, "res": 1, "walltime": 60.0, "profile": "short"},
    {"id": 8, "subtime": 150.0, "res": 1, "walltime": 60.0, "profile": "short"},
    {"id": 9, "subtime": 160.0, "res": 1, "walltime": 60.0, "profile": "short"},
]


@pytest.mark.parametrize("reuse", [False, True])
def test_two_copies_of_one_profile(reuse: bool) -> None:
    sim, dispatcher = run(jobs=TWO_COPIES, reuse=reuse)
    regs = [d for _, d in decisions_of(sim, t.RegisterJob)]
    assert [d.job_id for d in regs] == ["redir!w0.0", "redir!w0.5"]
    profiles = [d.profile_name for _, d in decisions_of(sim, t.RegisterProfile)]
    assert profiles == (["w0.long"] if reuse else ["w0.0", "w0.5"])
    assert dispatcher.policy.stats()["nb_redirections"] == 2
    # the second copy waits for the first to leave the 2-machine redirection group
    assert sim.jobs["redir!w0.5"].start == 930.0


def test_without_dynamic_jobs_refuses_by_default() -> None:
    with pytest.raises(ConfigError, match="--enable-dynamic-jobs"):
        run(dynamic=False)


def test_without_dynamic_jobs_falls_back_to_easy_on_all_machines(
        caplog: pytest.LogCaptureFixture) -> None:
    sim, dispatcher = run({"on_unsupported": "fallback"}, dynamic=False)
    assert "falling back to 'easy' on all 10 machines" in caplog.text
    easy = StrictBatsim(10, JOBS, PROFILES, dynamic=False)
    easy.run(Dispatcher(make_policy("easy"), paranoid=True).handle)
    assert schedule(sim) == schedule(easy)
    assert dispatcher.policy.stats()["nb_redirections"] == 0


def test_unknown_profiles_refused_at_simulation_begins() -> None:
    with pytest.raises(ConfigError, match="SIMULATION_BEGINS gave no profile"):
        run(begins_profiles=False)
    sim, _ = run(begins_profiles=False, forward=True)  # forwarded profiles suffice
    assert sim.jobs["redir!w0.0"].finish == 930.0


def random_jobs(seed: int, nb: int, machines: int) -> tuple[list[dict[str, Any]],
                                                            dict[str, dict[str, Any]]]:
    rng = random.Random(seed)
    jobs, profiles, at = [], {}, 0.0
    for i in range(nb):
        at += rng.choice([0.0, 0.0, rng.expovariate(1 / 20)])  # some simultaneous arrivals
        run = float(rng.choice([5, 30, 100, 600, 2000]))
        profiles[f"d{run:g}"] = {"type": "delay", "delay": run}
        walltime = rng.choice([run, 2 * run, run / 2])  # exact, over- and under-estimated
        jobs.append({"id": i, "subtime": round(at, 3), "res": rng.randint(1, machines // 2),
                     "walltime": walltime, "profile": f"d{run:g}"})
    return jobs, profiles


@pytest.mark.parametrize("seed", range(12))
def test_random_workloads_respect_batsim_rules_and_count_each_job_once(seed: int) -> None:
    rng = random.Random(1000 + seed)
    jobs, profiles = random_jobs(seed, 120, 24)
    params = {"theta": str(rng.choice([0, 1, 3, 8])), "alpha": str(rng.choice([0.1, 0.25, 0.4])),
              "filter": rng.choice(["size", "walltime", "both", "none"]),
              "conflict": rng.choice(["walltime", "oldest", "counter"]),
              "copy_workload": rng.choice(["redir", "@original"])}
    reuse = params["copy_workload"] == "@original" or rng.random() < 0.5
    policy = make_policy("redirection", params)
    dispatcher = Dispatcher(policy, paranoid=True)
    sim = StrictBatsim(24, jobs, profiles, ack=rng.random() < 0.5, reuse=reuse,
                       forward=rng.random() < 0.5, submissions_first=rng.random() < 0.5)
    sim.run(dispatcher.handle)  # any Batsim abort or checker refusal fails here
    stats = policy.stats()
    copies = {j.id: j for j in sim.jobs.values() if j.metadata.startswith("parent=")}
    assert len(copies) == stats["nb_redirections"]
    assert len(decisions_of(sim, t.RegistrationFinished)) == 1
    redirection = policy.redirection_machines
    for copy in copies.values():
        original = sim.jobs[copy.metadata.removeprefix("parent=")]
        assert original.final == "COMPLETED_KILLED" and copy.subtime == original.subtime
        assert copy.alloc <= redirection and copy.res <= len(redirection)
    for job in sim.jobs.values():
        if job.id not in copies and job.alloc is not None:
            assert not job.alloc & redirection  # originals never touch the redirection group
    assert stats["user_jobs"]["nb_jobs"] == len(jobs)
    assert stats["user_jobs"]["nb_jobs_killed"] == 0  # every kill was followed by its copy


def test_random_workloads_do_redirect() -> None:
    jobs, profiles = random_jobs(1, 120, 24)
    _, dispatcher = run({"theta": "0", "alpha": "0.1"}, jobs, profiles, nb=24)
    assert dispatcher.policy.stats()["nb_redirections"] >= 5
