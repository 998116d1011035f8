"""Issue 6, item 3: faults of the peer and of the host.

Already covered elsewhere (not repeated here): ``serve`` exiting non-zero within
``--timeout`` when Batsim vanishes (tests/daemon/test_serve.py), ``fake-batsim`` giving
up with one line when no scheduler listens (tests/sim/test_fake_batsim.py), and
``simulate`` with a raising policy leaving its outputs (tests/sim/test_simulate_cli.py).

Here: SIGINT/SIGTERM during ``batpolicy serve --record`` and during ``fake-batsim``;
``fake-batsim`` when its scheduler vanishes mid-run; a policy raising inside ``serve``;
KILL_JOB racing with the job's own completion, and JOB_KILLED listing jobs that had
already completed (Batsim's protocol: decisions), in the dispatcher and through the simulator.
"""

from __future__ import annotations

import json
import logging
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import zmq
from reliability.helpers import Job, Scenario, check_run, simulate, workload

from batpolicy.errors import ConfigError, InvalidDecision, PolicyError
from batpolicy.platforms.model import Platform
from batpolicy.policies.easy import EasyBackfilling
from batpolicy.policies.fcfs import Fcfs
from batpolicy.protocol import types as t
from batpolicy.protocol.codec import encode_request, request_from_obj
from batpolicy.protocol.intervals import MachineSet
from batpolicy.protocol.transcript import read_transcript
from batpolicy.protocol.types import JobState
from batpolicy.scheduler.daemon import EXIT_ERROR, ServeOptions, serve
from batpolicy.scheduler.dispatch import Dispatcher
from batpolicy.scheduler.state import check_invariants
from batpolicy.simulator import SimOptions, Simulator

from clirun import free_port, recorded_inputs
from conftest import TRANSCRIPTS


def _batsim_messages(limit: int, scheduler: str = "easy_bf") -> list[bytes]:
    """Batsim's side of a recorded run whose scheduler (batsched) our policy reproduces."""
    path = TRANSCRIPTS / f"batsched-{scheduler}-walltime120.jsonl"
    if not path.is_file():
        pytest.skip(f"{path} not available")
    out = []
    with path.open() as f:
        for line in f:
            out.append(encode_request(request_from_obj(json.loads(line)["batsim"])))
            if len(out) == limit:
                break
    return out


def _peer(endpoint: str) -> tuple[zmq.Context, zmq.Socket]:
    context = zmq.Context()
    sock = context.socket(zmq.REQ)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(endpoint)
    return context, sock


# ------------------------------------------------------------------ signals
def _popen(argv: list[str]) -> subprocess.Popen[str]:
    """Start a command under test so that SIGINT reaches it, as in a user's terminal.

    A test run started as a background job (``cmd &`` in a script) ignores SIGINT, and an
    ignored signal stays ignored across exec: Python would then install no
    KeyboardInterrupt handler in the child and the SIGINT cases would time out. A signal
    with a handler is reset to its default by exec, so the parent handles SIGINT while it
    starts the child. (Not ``preexec_fn``: forking this multi-threaded process to run
    Python code before exec made these tests flaky.)
    """
    previous = signal.getsignal(signal.SIGINT)
    if previous is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
    finally:
        if previous is signal.SIG_IGN:
            signal.signal(signal.SIGINT, previous)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_serve_interrupted_exits_cleanly_with_the_transcript_flushed(sig: int,
                                                                     tmp_path: Path) -> None:
    messages = _batsim_messages(6)
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    record = tmp_path / "run.msgpack"
    proc = _popen([sys.executable, "-m", "batpolicy", "serve", "--policy", "easy",
                   "--socket-endpoint", endpoint, "--timeout", "30", "--record", str(record)])
    context, peer = _peer(endpoint)
    try:
        for raw in messages:
            peer.send(raw)
            assert peer.poll(20_000, zmq.POLLIN), proc.stderr.read()  # type: ignore[union-attr]
            peer.recv()
        proc.send_signal(sig)  # while it waits for the next message
        status = proc.wait(timeout=10)
        stderr = proc.stderr.read()  # type: ignore[union-attr]
    finally:
        peer.close(0)
        context.term()
        proc.kill()
    assert status == 130
    assert "Traceback" not in stderr
    errors = [line for line in stderr.splitlines() if "ERROR" in line]
    assert len(errors) == 1 and "interrupted" in errors[0], stderr
    assert len(list(read_transcript(record))) == len(messages)  # every exchange is on disk


class _SilentScheduler:
    """A REP socket that answers the first ``answers`` messages from the recorded run."""

    def __init__(self, endpoint: str, answers: int) -> None:
        self.context = zmq.Context()
        self.sock = self.context.socket(zmq.REP)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.bind(endpoint)
        self.dispatcher = Dispatcher(EasyBackfilling())
        self.answers = answers
        self.received = 0

    def serve_until_silent(self) -> None:
        from batpolicy.protocol.codec import decode_request, encode_reply
        while self.received <= self.answers:
            assert self.sock.poll(20_000, zmq.POLLIN), "fake-batsim sent nothing"
            request = decode_request(self.sock.recv())
            self.received += 1
            if self.received <= self.answers:
                self.sock.send(encode_reply(self.dispatcher.handle(request)))

    def vanish(self) -> None:
        self.sock.close(0)
        self.context.term()


def _fake_batsim(inputs: list[str], endpoint: str, out: Path,
                 timeout: str) -> subprocess.Popen[str]:
    return _popen([sys.executable, "-m", "batpolicy", "fake-batsim", *inputs, "-s", endpoint,
                   "--timeout", timeout, "-o", str(out), "--quiet"])


def _metrics(out: Path) -> dict[str, Any]:
    return json.loads((out / "metrics.json").read_text())


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_fake_batsim_interrupted_writes_its_outputs_and_exits_nonzero(sig: int,
                                                                      tmp_path: Path) -> None:
    inputs = recorded_inputs("walltime120")  # may skip: before any socket exists
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    scheduler = _SilentScheduler(endpoint, answers=3)
    out = tmp_path / "out"
    proc = _fake_batsim(inputs, endpoint, out, "30")
    try:
        scheduler.serve_until_silent()  # fake-batsim now waits for the 4th reply
        proc.send_signal(sig)
        status = proc.wait(timeout=10)
        stderr = proc.stderr.read()  # type: ignore[union-attr]
    finally:
        scheduler.vanish()
        proc.kill()
    assert status == 130 and "Traceback" not in stderr, stderr
    assert len([line for line in stderr.splitlines() if "ERROR" in line]) == 1, stderr
    metrics = _metrics(out)
    assert metrics["complete"] is False and metrics["error"] == "interrupted"
    assert metrics["stopped_by"] == signal.Signals(sig).name  # issue 31, item 12
    assert metrics["provenance"]["argv"][:2] == ["batpolicy", "fake-batsim"]
    assert (out / "jobs.csv").is_file() and (out / "schedule.csv").is_file()


def test_fake_batsim_exits_at_once_when_the_scheduler_vanishes(tmp_path: Path) -> None:
    inputs = recorded_inputs("walltime120")  # may skip: before any socket exists
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    scheduler = _SilentScheduler(endpoint, answers=3)
    out = tmp_path / "out"
    proc = _fake_batsim(inputs, endpoint, out, "1.5")
    try:
        scheduler.serve_until_silent()
        scheduler.vanish()  # the scheduler is gone, its last request unanswered
        began = time.monotonic()
        status = proc.wait(timeout=15)
        elapsed = time.monotonic() - began
        stderr = proc.stderr.read()  # type: ignore[union-attr]
    finally:
        proc.kill()
    assert status != 0 and elapsed < 5, (status, elapsed)
    errors = [line for line in stderr.splitlines() if "ERROR" in line]
    # its closed connection is noticed before the 1.5 s timeout (the socket monitor)
    assert len(errors) == 1 and "the scheduler closed its connection" in errors[0], stderr
    assert "Traceback" not in stderr
    assert _metrics(out)["complete"] is False and _metrics(out)["stopped_by"] == "peer lost"


# ------------------------------------------------------------------ a policy that raises
class _Raising(Fcfs):
    """FCFS that raises on the submission of job ``w0!3`` (hook) or at t >= 500 (decide)."""

    name = "raising"
    where = "hook"

    def on_job_submitted(self, job: Any, view: Any) -> None:
        if self.where == "hook" and job.id.endswith("!3"):
            raise KeyError("deliberate failure")
        return super().on_job_submitted(job, view)

    def decide(self, now: float, view: Any) -> list[t.Decision]:
        if self.where == "decide" and now >= 500:
            raise ZeroDivisionError("deliberate failure")
        return super().decide(now, view)


@pytest.mark.parametrize("where", ["hook", "decide"])
def test_serve_with_a_raising_policy_names_it_keeps_the_transcript_and_fails(
        where: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    messages = _batsim_messages(10_000, "fcfs")
    policy = _Raising()
    policy.where = where
    endpoint = f"ipc://{tmp_path}/s.sock"
    record = tmp_path / "run.msgpack"
    result: dict[str, int] = {}
    thread = threading.Thread(target=lambda: result.setdefault("status", serve(
        Dispatcher(policy, paranoid=True), ServeOptions(endpoint, timeout_s=10, record=record))))
    with caplog.at_level(logging.INFO, logger="batpolicy"):
        thread.start()
        context, peer = _peer(endpoint)
        sent = 0
        try:
            for raw in messages:
                peer.send(raw)
                sent += 1
                answered = False
                refused = False
                while thread.is_alive() and not answered:
                    if peer.poll(20, zmq.POLLIN):
                        refused = b"batpolicy refused" in peer.recv()  # Batsim would stop
                        answered = True
                if not answered or refused:
                    break
        finally:
            peer.close(0)
            context.term()
            thread.join(10)
    assert result["status"] == EXIT_ERROR
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and all(r.exc_info is None for r in caplog.records), errors
    assert "policy 'raising'" in errors[0] and "deliberate failure" in errors[0]
    if where == "hook":
        assert "JobSubmitted" in errors[0] and "w0!3" in errors[0], errors[0]
    else:
        # decide() answers a whole message: the error names its events and their jobs
        assert "decide() after Job" in errors[0] and "w0!" in errors[0], errors[0]
    exchanges = list(read_transcript(record))
    assert len(exchanges) == sent  # the failed request is kept, with no reply
    assert exchanges[-1][1] is None and all(reply is not None for _, reply in exchanges[:-1])


# ------------------------------------------------------------------ kill races
def _begins(nb: int) -> t.SimulationBegins:
    resources = tuple(t.ResourceInfo(i, f"h{i}") for i in range(nb))
    return t.SimulationBegins(0.0, nb, nb, 0, False, True, {}, resources, (),
                              {"w0": "/w0.json"}, {"w0": {"p": {"type": "delay", "delay": 10}}})


def _submitted(name: str, at: float, res: int = 1) -> t.JobSubmitted:
    return t.JobSubmitted(at, f"w0!{name}", {"id": f"w0!{name}", "subtime": at, "res": res,
                                            "walltime": 10, "profile": "p"})


class _Killer(Fcfs):
    """FCFS that kills every running job named in ``to_kill`` at its next decision."""

    name = "killer"
    reads_finished_jobs = True  # the tests read the ended jobs' states through d.state

    def __init__(self) -> None:
        super().__init__()
        self.to_kill: list[str] = []
        self.killed_events: list[t.JobKilled] = []

    def on_job_killed(self, event: t.JobKilled, view: Any) -> None:
        self.killed_events.append(event)

    def decide(self, now: float, view: Any) -> list[t.Decision]:
        out: list[t.Decision] = []
        if self.to_kill:
            out.append(t.KillJob(tuple(self.to_kill)))
            self.to_kill = []
        return out + super().decide(now, view)


def test_job_killed_listing_a_job_that_completed_first_is_handled_as_batsim_sends_it() -> None:
    policy = _Killer()
    d = Dispatcher(policy, paranoid=True)
    d.handle(t.Request(0.0, (_begins(2),)))
    reply = d.handle(t.Request(0.0, (_submitted("1", 0.0), _submitted("2", 0.0))))
    assert {x.job_id for x in reply.decisions} == {"w0!1", "w0!2"}
    policy.to_kill = ["w0!1", "w0!2"]
    # at t=10 something else happens; the policy kills both jobs at that very instant
    reply = d.handle(t.Request(10.0, (_submitted("3", 10.0),)))
    assert any(isinstance(x, t.KillJob) for x in reply.decisions)
    # but w0!1 had completed on its own at t=10: Batsim sends its JOB_COMPLETED first,
    # w0!2's COMPLETED_KILLED, then one JOB_KILLED listing both, progress for w0!2 only
    d.handle(t.Request(10.0, (
        t.JobCompleted(10.0, "w0!1", JobState.COMPLETED_SUCCESSFULLY, 0, MachineSet.of(0)),
        t.JobCompleted(10.0, "w0!2", JobState.COMPLETED_KILLED, -1, MachineSet.of(1)),
        t.JobKilled(10.0, ("w0!1", "w0!2"), {"w0!2": {"profile_name": "p", "progress": 1.0}}))))
    jobs = d.state.jobs
    assert jobs["w0!1"].final_state is JobState.COMPLETED_SUCCESSFULLY
    assert jobs["w0!2"].final_state is JobState.COMPLETED_KILLED
    assert not jobs["w0!1"].kill_requested and not jobs["w0!2"].kill_requested
    assert policy.killed_events[-1].job_ids == ("w0!1", "w0!2")
    assert jobs["w0!3"].allocation is not None  # the freed machines were used at once
    check_invariants(d.state)


def test_killing_a_job_whose_completion_was_already_reported_is_refused() -> None:
    policy = _Killer()
    d = Dispatcher(policy, paranoid=True)
    d.handle(t.Request(0.0, (_begins(1),)))
    d.handle(t.Request(0.0, (_submitted("1", 0.0),)))
    policy.to_kill = ["w0!1"]  # Batsim 4 has freed the job: it aborts on such a kill
    with pytest.raises(InvalidDecision, match="w0!1"):
        d.handle(t.Request(10.0, (
            t.JobCompleted(10.0, "w0!1", JobState.COMPLETED_SUCCESSFULLY, 0, MachineSet.of(0)),)))


class _KillAtEnd(EasyBackfilling):
    """EASY that, on starting a job, also asks Batsim to kill it exactly at its walltime.

    The KILL_JOB is stamped at the job's end, so Batsim sleeps until then and the job's
    own completion (at the same instant) races with the kill.
    """

    name = "kill-at-end"

    def decide(self, now: float, view: Any) -> list[t.Decision]:
        out = super().decide(now, view)
        ends = sorted((now + view.jobs[d.job_id].walltime, d.job_id) for d in out
                      if isinstance(d, t.ExecuteJob))
        if ends:
            at, job_id = ends[0]
            out.append(t.KillJob((job_id,), timestamp=at))
        return out


def test_kill_racing_with_completion_through_the_simulator() -> None:
    """Every job's walltime equals its runtime, and is killed at that instant: all end once."""
    scenario = Scenario(4, tuple(Job(str(i), 3 * i, 1 + i % 3, 10 + i, 10 + i)
                                 for i in range(8)))
    policy = _KillAtEnd()
    dispatcher = Dispatcher(policy, paranoid=True)
    sim = Simulator([workload(scenario)], Platform.homogeneous(4), options=SimOptions())
    result = sim.run(dispatcher.handle)
    assert result.complete
    kills = [job for job in dispatcher.state.jobs.values() if job.kill_requested]
    assert not kills  # every JOB_KILLED cleared its jobs' kill flag
    by_id = {r.job_id: r for r in result.records}
    assert len(by_id) == len(result.records) == 8
    for r in result.records:  # the job ended on its own (walltime) or by the kill: once
        assert r.final_state in (JobState.COMPLETED_WALLTIME_REACHED, JobState.COMPLETED_KILLED)
        assert r.finish == r.start + r.walltime


def test_policy_error_type_is_policy_error() -> None:
    """A raising hook surfaces as PolicyError (what serve and simulate print as one line)."""
    policy = _Raising()
    d = Dispatcher(policy)
    d.handle(t.Request(0.0, (_begins(2),)))
    with pytest.raises(PolicyError, match=r"policy 'raising'.*JobSubmitted.*w0!3"):
        d.handle(t.Request(1.0, (_submitted("3", 1.0),)))


# ------------------------------------------------------------------ machines failing
def test_machines_failing_under_running_jobs_keep_the_schedule_consistent() -> None:
    """Every policy: machines 0-1 fail at t=5 under running jobs and return at t=50."""
    from reliability.helpers import Window

    from batpolicy.policies.registry import POLICIES

    jobs = tuple(Job(str(i), i, 1 + i % 2, 20, 30) for i in range(10))
    scenario = Scenario(4, jobs, (Window(0, 1, 5, 50),))
    for name in sorted(POLICIES):
        check_run(simulate(name, scenario))


_REQUEUE_FLAGS = {"dynamic_jobs": True, "acknowledge_dynamic_jobs": True}


@pytest.mark.parametrize("reuse", [True, False], ids=["profile-reuse", "fresh-profiles"])
def test_easy_requeues_the_jobs_of_failed_machines(reuse: bool) -> None:
    from reliability.helpers import Window

    # w0!0 on 0-1 and w0!1 on 2-3 at t=0; machines 0-1 fail at t=5, back at t=40
    scenario = Scenario(4, (Job("0", 0, 2, 20, 30), Job("1", 0, 2, 20, 30),
                            Job("2", 1, 2, 10, 30)), (Window(0, 1, 5, 40),))
    run = simulate("easy", scenario, {"on_unavailable": "requeue"}, profile_reuse=reuse,
                   **_REQUEUE_FLAGS)
    check_run(run)  # no job on a down machine, each job ends once, copies included
    by_id = {r.job_id: r for r in run.records}
    assert by_id["w0!0"].final_state is JobState.COMPLETED_KILLED and by_id["w0!0"].finish == 5
    assert by_id["w0!1"].final_state is JobState.COMPLETED_SUCCESSFULLY  # on 2-3: kept
    assert run.registered == ["w0!0.r"]
    copy = by_id["w0!0.r"]
    assert copy.metadata == "parent=w0!0" and copy.submission_time == 0
    assert copy.final_state is JobState.COMPLETED_SUCCESSFULLY and copy.finish - copy.start == 20
    assert not copy.alloc & MachineSet.span(0, 1) or copy.start >= 40
    assert run.policy.evacuation.requeued == 1


def test_easy_kill_mode_kills_without_copies_and_refuses_requeue_without_flags() -> None:
    from reliability.helpers import Window

    scenario = Scenario(4, (Job("0", 0, 2, 20, 30), Job("1", 0, 2, 20, 30)),
                        (Window(2, 2, 5, 10),))
    run = simulate("easy", scenario, {"on_unavailable": "kill"})
    check_run(run)
    states = {r.job_id: r.final_state for r in run.records}
    assert states == {"w0!0": JobState.COMPLETED_SUCCESSFULLY,
                      "w0!1": JobState.COMPLETED_KILLED}
    assert not run.registered
    with pytest.raises(ConfigError, match="--acknowledge-dynamic-jobs"):
        simulate("easy", scenario, {"on_unavailable": "requeue"})


def test_a_job_completing_in_the_message_of_its_machines_failure_is_not_killed() -> None:
    from reliability.helpers import Window

    # w0!0 ends at t=5 exactly when its machine fails: nothing to kill (Batsim would abort
    # on a kill of a job whose completion it reported)
    scenario = Scenario(2, (Job("0", 0, 1, 5, 10), Job("1", 0, 1, 50, 60)),
                        (Window(0, 0, 5, 8),))
    for mode in ("kill", "requeue"):
        flags = _REQUEUE_FLAGS if mode == "requeue" else {}
        run = simulate("easy", scenario, {"on_unavailable": mode}, **flags)
        check_run(run)
        assert {r.final_state for r in run.records} == {JobState.COMPLETED_SUCCESSFULLY}
