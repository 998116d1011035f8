"""The embedded simulator's engine: ordering, kills, calls, registration, machines, ends.

Each test drives :class:`Simulator` with a scripted scheduler (a function of the
request) or with ``Dispatcher(policy).handle``, and checks the messages and records
against Batsim 4.2.1's documented behaviour (Batsim 4.2.1's protocol).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from types import SimpleNamespace
from typing import Any

import pytest

from batpolicy.errors import ConfigError, InputError, InvalidDecision
from batpolicy.io.workload import JobSpec, Workload
from batpolicy.platforms.model import Platform
from batpolicy.policies.registry import make_policy
from batpolicy.protocol import types as t
from batpolicy.protocol.codec import encode_reply, encode_request
from batpolicy.protocol.intervals import MachineSet
from batpolicy.protocol.types import JobState
from batpolicy.scheduler.dispatch import Dispatcher
from batpolicy.simulator import EventQueue, SimOptions, Simulator
from batpolicy.simulator.core import CALL, COMPLETION, EXTERNAL, SUBMISSION
from batpolicy.simulator.records import SimJob


def workload(jobs: Iterable[tuple], profiles: dict[str, dict] | None = None,
             name: str = "w0") -> Workload:
    """Jobs as (name, subtime, res, profile, walltime); profiles default to delay<N>."""
    specs, needed = [], {}
    for job_name, subtime, res, profile, walltime in jobs:
        full = f"{name}!{job_name}"
        raw = {"id": full, "subtime": subtime, "res": res, "profile": profile}
        if walltime is not None:
            raw["walltime"] = walltime
        specs.append(JobSpec(full, float(subtime), res, profile, walltime, raw))
        if profile.startswith("delay") and profile[5:]:
            needed[profile] = {"type": "delay", "delay": float(profile[5:])}
    return Workload(name, specs, {**needed, **(profiles or {})})


class Script:
    """A scheduler whose answers come from ``decide(request, script) -> decisions``."""

    def __init__(self, decide: Callable[[t.Request, Script], list[t.Decision]]) -> None:
        self.decide = decide
        self.requests: list[t.Request] = []

    def __call__(self, request: t.Request) -> t.Reply:
        self.requests.append(request)
        if isinstance(request.events[-1], t.SimulationEnds):
            return t.Reply(request.now, ())
        return t.Reply(request.now, tuple(self.decide(request, self)))

    def kinds(self) -> list[tuple[float, list[str]]]:
        """Per message: its time and the event types (NOTIFY kinds spelled out)."""
        out = []
        for request in self.requests:
            names = []
            for event in request.events:
                name = type(event).__name__
                if isinstance(event, t.Notify):
                    name = event.kind
                elif isinstance(event, t.JobCompleted):
                    name = f"JobCompleted:{event.job_id}:{event.job_state.value}"
                elif isinstance(event, t.JobSubmitted):
                    name = f"JobSubmitted:{event.job_id}"
                names.append(name)
            out.append((request.now, names))
        return out


def submitted(request: t.Request) -> list[str]:
    return [e.job_id for e in request.events if isinstance(e, t.JobSubmitted)]


def fcfs_script(extra: Callable[[t.Request, Script], list[t.Decision]] | None = None,
                nb: int = 4) -> Script:
    """Start every submitted job at once on the lowest free machines (tests keep them fitting)."""
    state = {"free": list(range(nb))}

    def decide(request: t.Request, script: Script) -> list[t.Decision]:
        out: list[t.Decision] = []
        for event in request.events:
            if isinstance(event, t.JobCompleted):
                state["free"].extend(event.alloc)
        state["free"].sort()
        for event in request.events:
            if isinstance(event, t.JobSubmitted):
                res = event.job["res"]
                alloc, state["free"] = state["free"][:res], state["free"][res:]
                out.append(t.ExecuteJob(event.job_id, MachineSet(alloc)))
        return out + (extra(request, script) if extra else [])

    return Script(decide)


# ------------------------------------------------------------------------------ core
def test_event_queue_orders_by_time_then_priority_then_insertion() -> None:
    rng = random.Random(7)
    queue = EventQueue()
    fired: list[tuple[float, int, int]] = []

    class Mark:
        def __init__(self, key: tuple[float, int, int]) -> None:
            self.key = key

        def live(self, seq: int) -> bool:
            return True

        def fire(self) -> None:
            fired.append(self.key)

    keys = [(float(rng.randint(0, 3)), rng.choice([SUBMISSION, CALL, EXTERNAL, COMPLETION]), i)
            for i in range(200)]
    for key in keys:  # insertion order = i, the FIFO tie-break
        queue.schedule(Mark(key), key[1], at=key[0])
    while len(queue):
        queue.step()
    assert fired == sorted(keys)


def test_event_queue_skips_stale_entries_without_moving_time() -> None:
    queue = EventQueue()

    class Once:
        current = -1

        def live(self, seq: int) -> bool:
            return seq == self.current

        def fire(self) -> None:
            self.fired_at = queue.now

    event = Once()
    event.current = queue.schedule(event, COMPLETION, at=10.0)
    event.current = queue.schedule(event, COMPLETION, at=4.0)  # the end moved earlier
    late = Once()
    late.current = queue.schedule(late, COMPLETION, at=50.0)
    late.current = -1  # cancelled
    assert queue.peek() == 4.0
    queue.step()
    assert event.fired_at == 4.0
    assert queue.peek() == float("inf")  # both stale entries dropped
    assert queue.now == 4.0
    with pytest.raises(ValueError):
        queue.schedule(event, COMPLETION, at=1.0)


# ------------------------------------------------------------------------------ ordering
def _shuffled_run(seed: int) -> bytes:
    """One run whose inputs are given in an order shuffled by ``seed``."""
    rng = random.Random(seed)
    jobs0 = [(str(i), (i // 4) * 10.0, 1 + i % 3, f"delay{5 + 5 * (i % 2)}", 30.0)
             for i in range(24)]
    jobs1 = [(f"x{i}", (i // 3) * 10.0, 2, "delay10", 20.0) for i in range(12)]
    rng.shuffle(jobs0)
    rng.shuffle(jobs1)
    workloads = [workload(jobs0), workload(jobs1, name="w1")]
    rng.shuffle(workloads)
    events = [SimpleNamespace(timestamp=ts, type=kind, resources=res, data={"type": kind,
                                                                             "timestamp": ts})
              for ts, kind, res in ((15.0, "machine_unavailable", "6-7"),
                                    (45.0, "machine_available", "6-7"),
                                    (25.0, "maintenance", None), (35.0, "other", None))]
    rng.shuffle(events)
    dispatcher = Dispatcher(make_policy("easy"), paranoid=True)
    calls = [20.0, 10.0, 30.0]
    rng.shuffle(calls)  # calls requested in any order after the first one
    calls.insert(0, 10.0)  # (the job submitter sleeps after the first: .core's order)
    out = bytearray()

    def scheduler(request: t.Request) -> t.Reply:
        reply = dispatcher.handle(request)
        out.extend(encode_request(request))
        out.extend(encode_reply(reply))
        if isinstance(request.events[0], t.SimulationBegins):  # plus calls, in any order
            reply = t.Reply(reply.now, reply.decisions + tuple(t.CallMeLater(c) for c in calls))
        return reply

    Simulator(workloads, Platform.homogeneous(8), events=events,
              options=SimOptions(forward_unknown_events=True)).run(scheduler)
    return bytes(out)


def test_shuffled_inputs_give_byte_identical_conversations() -> None:
    """Trio-style deliberate shuffling: no result may depend on the order inputs arrive in."""
    reference = _shuffled_run(0)
    assert b"REQUESTED_CALL" in reference and b"event_machine_unavailable" in reference
    for seed in range(1, 12):
        assert _shuffled_run(seed) == reference, f"seed {seed}"


def test_one_instant_is_one_message_in_batsim_order() -> None:
    """Real Batsim 4.2.1's events at t = 10, in its order: one message.

    Recorded with a pybatsim scheduler asking CALL_ME_LATER(10) in reply to
    SIMULATION_BEGINS and starting each job at once: the actors wake up in the order
    they went to sleep (the event submitter at the start, the waiter at the reply, the
    job submitter after sending job a, job a when it started), then the two goodbyes.
    """
    jobs = [("a", 0, 1, "delay10", None), ("b", 10, 1, "delay10", None),
            ("c", 10, 1, "delay5", None)]
    events = [SimpleNamespace(timestamp=10.0, type="machine_unavailable", resources="3",
                              data={})]
    script = fcfs_script(lambda r, s: [t.CallMeLater(10.0)] if r.now == 0 and
                         isinstance(r.events[0], t.SimulationBegins) else [])
    Simulator([workload(jobs)], Platform.homogeneous(4), events=events).run(script)
    kinds = script.kinds()
    assert kinds[0] == (0.0, ["SimulationBegins"])
    assert kinds[1] == (0.0, ["JobSubmitted:w0!a"])
    assert kinds[2] == (10.0, ["event_machine_unavailable", "RequestedCall",
                               "JobSubmitted:w0!b", "JobSubmitted:w0!c",
                               "JobCompleted:w0!a:COMPLETED_SUCCESSFULLY",
                               "no_more_external_event_to_occur",
                               "no_more_static_job_to_submit"])
    assert kinds[-1][1] == ["SimulationEnds"]
    assert all(e.timestamp == r.now for r in script.requests for e in r.events)


def test_same_instant_submissions_by_full_id_string() -> None:
    jobs = [(name, 0, 1, "delay1", None) for name in ("2", "10", "1", "b", "A")]
    script = fcfs_script(nb=8)
    Simulator([workload(jobs)], Platform.homogeneous(8)).run(script)
    assert submitted(script.requests[1]) == ["w0!1", "w0!10", "w0!2", "w0!A", "w0!b"]


def test_same_instant_completions_in_start_order() -> None:
    jobs = [("late", 0, 1, "delay10", None), ("early", 5, 1, "delay5", None)]
    script = fcfs_script()
    Simulator([workload(jobs)], Platform.homogeneous(4)).run(script)
    at_ten = next(r for r in script.requests if r.now == 10.0)
    assert [e.job_id for e in at_ten.events] == ["w0!late", "w0!early"]


# ------------------------------------------------------------------------------ job ends
def test_walltime_kill_and_return_codes() -> None:
    jobs = [("over", 0, 1, "delay100", 50.0), ("equal", 0, 1, "delay50", 50.0),
            ("under", 0, 1, "delay49", 50.0), ("none", 0, 1, "delay60", None),
            ("fails", 0, 1, "bad", None)]
    profiles = {"bad": {"type": "delay", "delay": 3, "ret": 2}}
    script = fcfs_script(nb=5)
    result = Simulator([workload(jobs, profiles)], Platform.homogeneous(5)).run(script)
    ends = {e.job_id: (r.now, e.job_state, e.return_code) for r in script.requests
            for e in r.events if isinstance(e, t.JobCompleted)}
    assert ends == {"w0!over": (50.0, JobState.COMPLETED_WALLTIME_REACHED, -1),
                    "w0!equal": (50.0, JobState.COMPLETED_WALLTIME_REACHED, -1),
                    "w0!under": (49.0, JobState.COMPLETED_SUCCESSFULLY, 0),
                    "w0!none": (60.0, JobState.COMPLETED_SUCCESSFULLY, 0),
                    "w0!fails": (3.0, JobState.COMPLETED_FAILED, 2)}
    assert not any(isinstance(e, t.JobKilled) for r in script.requests for e in r.events)
    assert (result.nb_jobs_success, result.nb_jobs_killed) == (2, 3)


def test_zero_length_job_ends_in_a_follow_up_message_with_batsim_runtime() -> None:
    jobs = [("z", 3, 2, "delay0", None)]
    script = fcfs_script()
    result = Simulator([workload(jobs)], Platform.homogeneous(4)).run(script)
    at_three = [k for now, k in script.kinds() if now == 3.0]
    # the last submission alone, then the submitter's goodbye (issue 17, case 4)
    assert at_three == [["JobSubmitted:w0!z"],
                        ["no_more_static_job_to_submit",
                         "JobCompleted:w0!z:COMPLETED_SUCCESSFULLY"], ["SimulationEnds"]]
    record = result.job("w0!z")
    assert (record.start, record.runtime, record.finish) == (3.0, 1e-5, 3.0)
    assert result.makespan == 3.0 + 1e-5


# ------------------------------------------------------------------------------ kills
def _kill_at(time: float, *job_ids: str) -> Callable[[t.Request, Script], list[t.Decision]]:
    def extra(request: t.Request, script: Script) -> list[t.Decision]:
        if isinstance(request.events[0], t.SimulationBegins):
            return [t.CallMeLater(time)]
        if any(isinstance(e, t.RequestedCall) for e in request.events):
            return [t.KillJob(tuple(job_ids))]
        return []
    return extra


def test_kill_sequence_completions_then_one_job_killed() -> None:
    jobs = [("a", 0, 1, "delay40", None), ("b", 0, 2, "delay100", 500.0)]
    script = fcfs_script(_kill_at(30.0, "w0!b", "w0!a"))
    result = Simulator([workload(jobs)], Platform.homogeneous(4)).run(script)
    at_kill = [r for r in script.requests if r.now == 30.0]
    assert [type(e).__name__ for e in at_kill[0].events] == ["RequestedCall"]
    ack = at_kill[1].events
    assert [(type(e).__name__, getattr(e, "job_id", None)) for e in ack] == [
        ("JobCompleted", "w0!b"), ("JobCompleted", "w0!a"), ("JobKilled", None)]
    assert all(e.job_state is JobState.COMPLETED_KILLED and e.return_code == -1
               for e in ack[:2])
    assert str(ack[0].alloc) == "1-2"
    killed = ack[2]
    assert killed.job_ids == ("w0!b", "w0!a")
    assert killed.job_progress == {"w0!b": {"profile_name": "delay100", "progress": 0.3},
                                   "w0!a": {"profile_name": "delay40", "progress": 0.75}}
    record = result.job("w0!b")
    assert (record.final_state, record.runtime, record.finish) == (JobState.COMPLETED_KILLED,
                                                                   30.0, 30.0)
    assert result.end_time == 30.0  # the killed jobs' planned ends never fire


def test_a_second_kill_of_the_same_job_is_dropped() -> None:
    jobs = [("a", 0, 1, "delay40", None)]

    def extra(request: t.Request, script: Script) -> list[t.Decision]:
        if submitted(request):
            return [t.CallMeLater(10.0)]
        if any(isinstance(e, t.RequestedCall) for e in request.events):
            return [t.KillJob(("w0!a",)), t.KillJob(("w0!a",))]
        return []

    script = fcfs_script(extra)
    Simulator([workload(jobs)], Platform.homogeneous(2)).run(script)
    ack = next(r for r in script.requests if r.now == 10.0 and
               any(isinstance(e, t.JobKilled) for e in r.events))
    assert [type(e).__name__ for e in ack.events] == ["JobCompleted", "JobKilled"]


@pytest.mark.parametrize(("target", "rule"), [
    ("w0!later", "not submitted yet"),
    ("w0!a", "forgotten"),
    ("w0!never", "no job with this id was ever submitted"),
])
def test_a_decision_on_a_job_not_held_says_whether_it_is_pending_done_or_unknown(
        target: str, rule: str) -> None:
    """The simulator keeps no id of a submitted job: a static id is found in the workload.

    Its submission key tells pending from reported.
    """
    jobs = [("a", 0, 1, "delay5", None), ("b", 10, 1, "delay5", None),
            ("later", 100, 1, "delay5", None)]

    def decide(request: t.Request, script: Script) -> list[t.Decision]:
        if any(isinstance(e, t.JobSubmitted) and e.job_id == "w0!b" for e in request.events):
            return [t.KillJob((target,))]
        return [t.ExecuteJob(e.job_id, MachineSet.of(0)) for e in request.events
                if isinstance(e, t.JobSubmitted)]

    with pytest.raises(InvalidDecision, match=rule) as info:
        Simulator([workload(jobs)], Platform.homogeneous(1)).run(Script(decide))
    assert info.value.job_id == target


def test_killing_a_reported_job_aborts_and_its_machines_are_busy_until_the_kill_acts() -> None:
    jobs = [("a", 0, 1, "delay5", None), ("b", 0, 1, "delay50", None)]

    def kill_done(request: t.Request, script: Script) -> list[t.Decision]:
        if any(isinstance(e, t.JobCompleted) for e in request.events):
            return [t.KillJob(("w0!a",))]
        return []

    with pytest.raises(InvalidDecision, match="forgotten") as info:
        Simulator([workload(jobs)], Platform.homogeneous(2)).run(fcfs_script(kill_done))
    assert info.value.job_id == "w0!a"

    jobs2 = [("b", 0, 1, "delay50", None), ("c", 0, 1, "delay1", None)]
    script = Script(lambda r, s: [t.ExecuteJob("w0!b", MachineSet.of(1)), t.KillJob(("w0!b",)),
                                  t.ExecuteJob("w0!c", MachineSet.of(1))] if submitted(r) else [])
    with pytest.raises(InvalidDecision, match=r"machines 1 are computing w0!b") as info:
        Simulator([workload(jobs2)], Platform.homogeneous(2)).run(script)
    assert info.value.job_id == "w0!c" and info.value.resources == "1"


def test_kill_of_a_never_started_job_aborts() -> None:
    script = Script(lambda r, s: [t.KillJob(("w0!a",))] if submitted(r) else [])
    with pytest.raises(InvalidDecision, match="neither being executed nor completed"):
        Simulator([workload([("a", 0, 1, "delay5", None)])],
                  Platform.homogeneous(1)).run(script)


def test_kill_of_a_job_completed_but_not_yet_reported_is_listed_without_progress() -> None:
    """Batsim's race (Batsim's protocol: batching): the job ended at this instant, not yet reported.

    The simulator delivers every event of an instant before asking, so it never creates
    this race itself; the rule is checked on its bookkeeping directly.
    """
    sim = Simulator([workload([("a", 0, 1, "delay5", None)])], Platform.homogeneous(1))
    done = SimJob("w0!a", "w0", 0.0, 1, None, "delay5", {"type": "delay", "delay": 5}, {})
    done.state = JobState.COMPLETED_SUCCESSFULLY
    sim.jobs["w0!a"] = done
    sim.parts.decisions.apply(t.KillJob(("w0!a",)))
    sim.parts.decisions.perform_kills()
    assert sim.parts.books.outbox == [t.JobKilled(0.0, ("w0!a",), {})]


# ------------------------------------------------------------------------------ calls
def test_call_me_later_in_the_past_or_now_aborts() -> None:
    script = Script(lambda r, s: [t.CallMeLater(r.now)] if submitted(r) else [])
    with pytest.raises(InvalidDecision, match="awaken in the past"):
        Simulator([workload([("a", 4, 1, "delay5", None)])],
                  Platform.homogeneous(1)).run(script)


def test_short_waits_are_rounded_up_and_a_pending_call_delays_the_end() -> None:
    def extra(request: t.Request, script: Script) -> list[t.Decision]:
        if submitted(request):
            return [t.CallMeLater(request.now + 1e-7), t.CallMeLater(100.0)]
        return []

    script = fcfs_script(extra)
    result = Simulator([workload([("a", 4, 1, "delay5", None)])],
                       Platform.homogeneous(1)).run(script)
    calls = [r.now for r in script.requests if any(isinstance(e, t.RequestedCall)
                                                   for e in r.events)]
    assert calls == [round(4 + 1e-5, 6), 100.0]
    assert script.requests[-1].now == 100.0 and result.end_time == 100.0


# ------------------------------------------------------------------------------ registration
def _register(job_id: str, profile: str, subtime: float = 0.0, **job: Any) -> t.RegisterJob:
    return t.RegisterJob(job_id, {"id": job_id, "subtime": subtime, "res": 1,
                                  "profile": profile, "walltime": 100, **job})


def test_dynamic_registration_without_acknowledgement() -> None:
    def decide(request: t.Request, script: Script) -> list[t.Decision]:
        if submitted(request):
            return [t.ExecuteJob("w0!a", MachineSet.of(0)),
                    t.RegisterProfile("dyn", "p", {"type": "delay", "delay": 7}),
                    _register("dyn!1", "p", subtime=0.5),
                    t.ExecuteJob("dyn!1", MachineSet.of(1)), t.SetJobMetadata("dyn!1", "copy"),
                    t.RegistrationFinished()]
        return []

    script = Script(decide)
    result = Simulator([workload([("a", 2, 1, "delay5", None)])], Platform.homogeneous(2),
                       options=SimOptions(dynamic_jobs=True)).run(script)
    assert not any(submitted(r) == ["dyn!1"] for r in script.requests)
    record = result.job("dyn!1")
    assert (record.submission_time, record.start, record.finish, record.metadata) == \
        (0.5, 2.0, 9.0, "copy")
    assert result.nb_jobs == 2


def test_dynamic_registration_with_acknowledgement_and_forwarded_profile() -> None:
    def decide(request: t.Request, script: Script) -> list[t.Decision]:
        if submitted(request) == ["w0!a"]:
            return [t.RegisterProfile("w0", "fresh", {"type": "delay", "delay": 1.1234567}),
                    _register("w0!a-r", "fresh", subtime=2)]
        if submitted(request) == ["w0!a-r"]:
            return [t.RejectJob("w0!a"), t.ExecuteJob("w0!a-r", MachineSet.of(0)),
                    t.RegistrationFinished()]
        return []

    script = Script(decide)
    options = SimOptions(dynamic_jobs=True, acknowledge_dynamic_jobs=True,
                         forward_profiles=True)
    Simulator([workload([("a", 2, 1, "delay5", None)])], Platform.homogeneous(1),
              options=options).run(script)
    ack = script.requests[2]
    assert ack.now == 2.0
    assert ack.events[0] == t.Notify(2.0, "no_more_static_job_to_submit")  # issue 17, case 4
    assert ack.events[1:] == (t.JobSubmitted(2.0, "w0!a-r", {"id": "w0!a-r", "subtime": 2,
                                                         "res": 1, "profile": "fresh",
                                                         "walltime": 100},
                                         {"type": "delay", "delay": 1.123457}),)


@pytest.mark.parametrize("reuse", [False, True])
def test_profile_garbage_collection_after_a_kill(reuse: bool) -> None:
    """Since Batsim 4.0 a finished job's profile is collected unless profile reuse is on."""
    def decide(request: t.Request, script: Script) -> list[t.Decision]:
        if submitted(request):
            return [t.ExecuteJob("w0!a", MachineSet.of(0)), t.KillJob(("w0!a",))]
        if any(isinstance(e, t.JobKilled) for e in request.events):
            return [_register("w0!a-r", "delay50"), t.ExecuteJob("w0!a-r", MachineSet.of(0)),
                    t.RegistrationFinished()]
        return []

    sim = Simulator([workload([("a", 0, 1, "delay50", None)])], Platform.homogeneous(1),
                    options=SimOptions(dynamic_jobs=True, profile_reuse=reuse))
    if reuse:
        assert sim.run(Script(decide)).job("w0!a-r").finish == 50.0
    else:
        with pytest.raises(InvalidDecision, match="garbage-collected"):
            sim.run(Script(decide))


def test_registration_rules_that_abort() -> None:
    cases = [
        (SimOptions(), [_register("w0!x", "delay5")], "dynamic registration is disabled"),
        (SimOptions(dynamic_jobs=True), [_register("w0!a", "delay5")], "already exists"),
        (SimOptions(dynamic_jobs=True), [_register("w0!later", "delay5")], "already exists"),
        (SimOptions(dynamic_jobs=True), [_register("w0!x", "nope")], "does not exist"),
        (SimOptions(dynamic_jobs=True), [_register("w9!x", "p")], "workload 'w9' does not"),
        (SimOptions(dynamic_jobs=True), [_register("w0!x", "delay5", res=1.0)],
         "JSON integer"),
        (SimOptions(dynamic_jobs=True), [t.RegistrationFinished(), _register("w0!x", "delay5")],
         "registration_finished was sent"),
        (SimOptions(dynamic_jobs=True),
         [t.RegisterProfile("w0", "delay5", {"type": "delay", "delay": 1})],
         "already been registered"),
        (SimOptions(dynamic_jobs=True), [t.RegisterProfile("w0", "q", {"type": "smpi"})],
         "not simulated"),
        (SimOptions(), [t.RegistrationFinished()], "dynamic registration is disabled"),
    ]
    for options, decisions, message in cases:
        script = Script(lambda r, s, d=decisions: d if submitted(r) == ["w0!a"] else [])
        jobs = [("a", 0, 1, "delay5", None), ("later", 9, 1, "delay5", None)]
        with pytest.raises(InvalidDecision, match=message):
            Simulator([workload(jobs)], Platform.homogeneous(1), options=options).run(script)


def test_dynamic_jobs_need_registration_finished_to_end() -> None:
    script = fcfs_script(nb=1)
    with pytest.raises(InvalidDecision, match="registration_finished was never sent"):
        Simulator([workload([("a", 0, 1, "delay5", None)])], Platform.homogeneous(1),
                  options=SimOptions(dynamic_jobs=True)).run(script)


def test_options_need_dynamic_jobs() -> None:
    with pytest.raises(ConfigError):
        SimOptions(acknowledge_dynamic_jobs=True)
    with pytest.raises(ConfigError):
        SimOptions(profile_reuse=True)


# ------------------------------------------------------------------------------ machines
def test_machine_unavailability_keeps_running_jobs_and_refuses_new_ones() -> None:
    events = [SimpleNamespace(timestamp=5.0, type="machine_unavailable", resources="0-1",
                              data={}),
              SimpleNamespace(timestamp=20.0, type="machine_available", resources="0-1",
                              data={}),
              SimpleNamespace(timestamp=7.0, type="unknown_kind", resources=None,
                              data={"type": "unknown_kind", "timestamp": 7.0})]
    jobs = [("a", 0, 1, "delay10", None), ("b", 25, 1, "delay5", None)]
    script = fcfs_script(nb=4)
    result = Simulator([workload(jobs)], Platform.homogeneous(4), events=events).run(script)
    notes = [(r.now, e.kind, str(e.resources)) for r in script.requests for e in r.events
             if isinstance(e, t.Notify)]
    assert notes == [(5.0, "event_machine_unavailable", "0-1"),
                     (20.0, "event_machine_available", "0-1"),
                     (20.0, "no_more_external_event_to_occur", "None"),
                     (25.0, "no_more_static_job_to_submit", "None")]
    assert result.job("w0!a").finish == 10.0  # not killed
    assert result.time_unavailable == 2 * 15.0
    assert result.time_computing == 5.0 + 5.0  # a's last 5 s, on a machine down, excluded

    busy = Script(lambda r, s: [t.ExecuteJob("w0!b", MachineSet.of(0))] if submitted(r) else [])
    with pytest.raises(InvalidDecision, match="unavailable") as info:
        Simulator([workload([("b", 6, 1, "delay5", None)])], Platform.homogeneous(2),
                  events=events[:1]).run(busy)
    assert info.value.job_id == "w0!b" and info.value.resources == "0"


def test_forwarded_events_only_with_the_flag_and_bad_machine_events_abort() -> None:
    event = SimpleNamespace(timestamp=1.0, type="custom", resources=None,
                            data={"type": "custom", "timestamp": 1.0, "x": 0.33333333})
    for forward in (False, True):
        script = fcfs_script(nb=1)
        Simulator([workload([("a", 0, 1, "delay5", None)])], Platform.homogeneous(1),
                  events=[event], options=SimOptions(forward_unknown_events=forward)).run(script)
        notes = [e for r in script.requests for e in r.events
                 if isinstance(e, t.Notify) and e.kind == "custom"]
        assert notes == ([t.Notify(1.0, "custom", None, {"type": "custom", "timestamp": 1.0,
                                                         "x": 0.333333})] if forward else [])
    twice = [SimpleNamespace(timestamp=ts, type="machine_unavailable", resources="0", data={})
             for ts in (1.0, 2.0)]
    with pytest.raises(InputError, match="already unavailable"):
        Simulator([workload([("a", 0, 1, "delay5", None)])], Platform.homogeneous(2),
                  events=twice).run(fcfs_script(nb=2))


def test_execute_job_rules_name_job_resources_and_rule() -> None:
    cases = [(MachineSet.span(0, 1), "allocation has 2 machines, the job requests 1"),
             (MachineSet.of(5), "do not exist"), (MachineSet(), "empty")]
    for alloc, message in cases:
        script = Script(lambda r, s, a=alloc: [t.ExecuteJob("w0!a", a)] if submitted(r) else [])
        with pytest.raises(InvalidDecision, match=message) as info:
            Simulator([workload([("a", 0, 1, "delay5", None)])],
                      Platform.homogeneous(2)).run(script)
        assert info.value.job_id == "w0!a" and "EXECUTE_JOB refused at t=0.0" in str(info.value)
    twice = Script(lambda r, s: [t.ExecuteJob("w0!a", MachineSet.of(0)), t.RejectJob("w0!a")]
                   if submitted(r) else [])
    with pytest.raises(InvalidDecision, match="REJECT_JOB.*RUNNING"):
        Simulator([workload([("a", 0, 1, "delay5", None)])], Platform.homogeneous(2)).run(twice)
    unknown = Script(lambda r, s: [t.ExecuteJob("w0!zz", MachineSet.of(0))] if submitted(r) else [])
    with pytest.raises(InvalidDecision, match="ever submitted"):
        Simulator([workload([("a", 0, 1, "delay5", None)])], Platform.homogeneous(2)).run(unknown)


# ------------------------------------------------------------------------------ time
def test_decisions_apply_at_their_timestamp_when_later_than_batsim_clock() -> None:
    """Batsim sleeps until a decision's time: a reply's ``now`` rounded up moves the start."""
    jobs = [("a", 1.0000004, 1, "delay10", None)]
    script = Script(lambda r, s: [t.ExecuteJob("w0!a", MachineSet.of(0))] if submitted(r) else [])
    result = Simulator([workload(jobs)], Platform.homogeneous(1)).run(script)
    assert script.requests[1].now == 1.0
    assert result.job("w0!a").start == 1.0000004  # rounded down: Batsim's clock wins
    jobs = [("a", 1.0000006, 1, "delay10", None)]
    script = Script(lambda r, s: [t.ExecuteJob("w0!a", MachineSet.of(0))] if submitted(r) else [])
    result = Simulator([workload(jobs)], Platform.homogeneous(1)).run(script)
    assert script.requests[1].now == 1.000001
    assert result.job("w0!a").start == 1.000001  # rounded up: Batsim waits for it


def test_a_later_reply_now_is_scheduling_time_injected_into_the_simulation() -> None:
    def scheduler(request: t.Request) -> t.Reply:
        if submitted(request) == ["w0!a"]:
            return t.Reply(request.now + 3.0, (t.ExecuteJob("w0!a", MachineSet.of(0)),))
        if submitted(request) == ["w0!b"]:
            return t.Reply(request.now, (t.ExecuteJob("w0!b", MachineSet.of(1)),))
        return t.Reply(request.now, ())

    result = Simulator([workload([("a", 2, 1, "delay10", None), ("b", 4, 1, "delay1", None)])],
                       Platform.homogeneous(2)).run(scheduler)
    assert result.job("w0!a").start == 5.0
    assert result.job("w0!a").finish == 15.0


# ------------------------------------------------------------------------------ the end
def test_the_end_is_its_own_message_and_needs_an_empty_reply() -> None:
    script = fcfs_script(nb=1)
    result = Simulator([workload([("a", 0, 1, "delay5", None)])],
                       Platform.homogeneous(1)).run(script)
    assert script.requests[-1].events == (t.SimulationEnds(5.0),)
    # BEGINS, the submission, its submitter's goodbye (issue 17, case 4), the end, ENDS
    assert result.complete and result.nb_messages == len(script.requests) == 5

    def greedy(request: t.Request) -> t.Reply:
        if isinstance(request.events[0], t.SimulationEnds):
            return t.Reply(request.now, (t.CallMeLater(99.0),))
        return script(request)

    script = fcfs_script(nb=1)
    with pytest.raises(InvalidDecision, match="SIMULATION_ENDS must hold no event"):
        Simulator([workload([("a", 0, 1, "delay5", None)])], Platform.homogeneous(1)).run(greedy)


def test_a_scheduler_that_never_decides_is_reported_not_waited_for() -> None:
    sim = Simulator([workload([("a", 0, 1, "delay5", None)])], Platform.homogeneous(1))
    with pytest.raises(InvalidDecision, match="never started nor rejected") as info:
        sim.run(Script(lambda r, s: []))
    assert info.value.job_id == "w0!a"
    with pytest.raises(ConfigError, match="runs once"):
        sim.run(Script(lambda r, s: []))


def test_records_stream_out_and_partial_results_survive_an_error() -> None:
    seen = []
    jobs = [("a", 0, 1, "delay5", None), ("b", 10, 1, "delay5", None)]

    def decide(request: t.Request, script: Script) -> list[t.Decision]:
        if submitted(request) == ["w0!a"]:
            return [t.ExecuteJob("w0!a", MachineSet.of(0))]
        if submitted(request) == ["w0!b"]:
            return [t.ExecuteJob("w0!b", MachineSet.of(7))]
        return []

    sim = Simulator([workload(jobs)], Platform.homogeneous(2), on_record=seen.append)
    with pytest.raises(InvalidDecision):
        sim.run(Script(decide))
    partial = sim.result()
    assert [r.job_id for r in seen] == ["w0!a"] == [r.job_id for r in partial.records]
    assert not partial.complete and partial.nb_jobs == 2 and partial.makespan == 5.0


def test_easy_end_to_end_is_consistent() -> None:
    rng = random.Random(3)
    jobs = [(str(i), round(rng.uniform(0, 500), 3), rng.randint(1, 16),
             f"delay{rng.randint(1, 80)}", float(rng.choice([40, 100, 200])))
            for i in range(300)]
    dispatcher = Dispatcher(make_policy("easy"), paranoid=True)
    result = Simulator([workload(jobs)], Platform.homogeneous(16)).run(dispatcher.handle)
    assert result.complete and result.nb_jobs == 300 == len(result.records)
    assert [r.finish for r in result.records] == sorted(r.finish for r in result.records)
    busy = sum(r.runtime * len(r.alloc) for r in result.records)
    assert result.time_computing == pytest.approx(busy)


def test_execute_job_with_two_options_aborts_as_batsim() -> None:
    """protocol.cpp handle_execute_job: at most one of mapping, storage_mapping, io job."""
    script = Script(lambda r, s: [t.ExecuteJob(j, MachineSet.of(0), mapping={0: 0},
                                               storage_mapping={"pfs": 0})
                                  for j in submitted(r)])
    with pytest.raises(InvalidDecision, match="at most one of mapping"):
        Simulator([workload([("a", 0, 1, "delay5", None)])],
                  Platform.homogeneous(1)).run(script)
