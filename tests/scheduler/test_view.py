"""A policy cannot corrupt the state it is given: every change fails at the policy's line.

Each test policy below tries one kind of change (a machine set, a mapping, the running
jobs' sequence, a job attribute, a view attribute) from a hook or from ``decide``; the
dispatcher must raise one :class:`PolicyError` naming the policy, what was refused and
the policy's own file and line, and the state must be untouched. ``batpolicy simulate``
must report it as one line without a traceback.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from procset import ProcSet

from batpolicy.errors import PolicyError, ReadOnlyError
from batpolicy.policies import registry
from batpolicy.policies.base import Policy
from batpolicy.policies.fcfs import Fcfs
from batpolicy.protocol import types as t
from batpolicy.scheduler import cli
from batpolicy.scheduler.dispatch import Dispatcher
from batpolicy.scheduler.readonly import FrozenProcSet
from batpolicy.scheduler.view import PolicyView

from clirun import restore_logging  # noqa: F401  (autouse fixture)

DATA = Path(__file__).resolve().parents[2] / "batpolicy" / "data"


def begins(nb: int) -> t.SimulationBegins:
    resources = tuple(t.ResourceInfo(i, f"h{i}") for i in range(nb))
    return t.SimulationBegins(0.0, nb, nb, 0, False, True, {"dynamic-jobs-enabled": False},
                              resources, (), {"w0": "/w0.json"},
                              {"w0": {"p": {"type": "delay", "delay": 10.0}}})


def sub(name: str, at: float, res: int) -> t.JobSubmitted:
    return t.JobSubmitted(at, f"w0!{name}", {"id": f"w0!{name}", "subtime": at, "res": res,
                                            "walltime": 100.0, "profile": "p"})


# Each mutation is one line of a policy; the test finds that line in this file's source.
def _free_isub(job: Any, view: Any) -> None:
    free = view.free
    free -= ProcSet(0)  # MUTATION free

def _free_update(job: Any, view: Any) -> None:
    view.free.update(ProcSet(0))  # MUTATION free.update

def _waiting_del(job: Any, view: Any) -> None:
    del view.waiting[job.id]  # MUTATION waiting

def _jobs_set(job: Any, view: Any) -> None:
    view.jobs["w0!ghost"] = job  # MUTATION jobs

def _running_add(job: Any, view: Any) -> None:
    view.running_by_expected_end.add(job)  # MUTATION running_by_expected_end

def _config_set(job: Any, view: Any) -> None:
    view.config["dynamic-jobs-enabled"] = True  # MUTATION config

def _profiles_set(job: Any, view: Any) -> None:
    view.profiles["w0"]["p"] = {}  # MUTATION profiles

def _job_attr(job: Any, view: Any) -> None:
    job.status = None  # MUTATION job.status

def _job_alloc(job: Any, view: Any) -> None:
    running = next(iter(view.running.values()))
    running.allocation |= ProcSet(7)  # MUTATION job.allocation

def _view_attr(job: Any, view: Any) -> None:
    view.free = ProcSet()  # MUTATION view.free

def _view_now(job: Any, view: Any) -> None:
    view.now = 0.0  # MUTATION view.now

def _state_escape(job: Any, view: Any) -> None:
    view._state._free = ProcSet()  # MUTATION view._state


#: (mutation, words the error must contain)
MUTATIONS: list[tuple[Callable[[Any, Any], None], tuple[str, ...]]] = [
    (_free_isub, ("state.free is read-only", "ReadOnlyError")),
    (_free_update, ("state.free is read-only",)),
    (_waiting_del, ("mappingproxy",)),
    (_jobs_set, ("mappingproxy",)),
    (_running_add, ("ReadOnlySequence", "add")),
    (_config_set, ("mappingproxy",)),
    (_profiles_set, ("mappingproxy",)),
    (_job_attr, ("job 'w0!b'", "attribute 'status' is read-only")),
    (_job_alloc, ("job.allocation is read-only",)),
    (_view_attr, ("state.free is read-only",)),
    (_view_now, ("state.now is read-only",)),
    (_state_escape, ("'_state'",)),
]


def _line_of(mutation: Callable[..., None]) -> int:
    lines, first = inspect.getsourcelines(mutation)
    return first + next(i for i, text in enumerate(lines) if "# MUTATION" in text)


class _Mutating(Fcfs):
    """FCFS that tries one forbidden change when job 'b' is submitted, or in decide()."""

    name = "mutating"

    def __init__(self, mutation: Callable[[Any, Any], None], where: str) -> None:
        super().__init__()
        self.mutation, self.where = mutation, where

    def on_job_submitted(self, job, state):  # type: ignore[no-untyped-def]
        """FCFS's hook; the mutation when 'b' arrives (if asked in the hook)."""
        if self.where == "hook" and job.id == "w0!b":
            self.mutation(job, state)
        return super().on_job_submitted(job, state)

    def decide(self, now, state):  # type: ignore[no-untyped-def]
        """FCFS's decisions; the mutation once 'b' waits (if asked in decide)."""
        if self.where == "decide" and "w0!b" in state.jobs:
            self.mutation(state.job("w0!b"), state)
        return super().decide(now, state)


@pytest.mark.parametrize("where", ["hook", "decide"])
@pytest.mark.parametrize("mutation,words", MUTATIONS, ids=[m.__name__ for m, _ in MUTATIONS])
def test_a_mutation_fails_at_the_policy_line_naming_the_policy(
        mutation: Callable[[Any, Any], None], words: tuple[str, ...], where: str) -> None:
    dispatcher = Dispatcher(_Mutating(mutation, where), paranoid=True)
    dispatcher.handle(t.Request(0.0, (begins(8),)))
    dispatcher.handle(t.Request(0.0, (sub("a", 0.0, 3),)))  # 'a' runs on 0-2
    state = dispatcher.state
    before = (str(state.free), list(state.waiting), list(state.jobs), dict(state.config),
              state.job("w0!a").status, str(state.job("w0!a").allocation), state.now)
    with pytest.raises(PolicyError) as caught:
        dispatcher.handle(t.Request(5.0, (sub("b", 5.0, 2),)))
    message = str(caught.value)
    assert message.startswith("policy 'mutating' raised ")
    for word in words:
        assert word in message, message
    assert f"test_view.py:{_line_of(mutation)} `" in message, message  # the policy's line
    assert "\n" not in message
    assert (str(state.free), [j for j in state.waiting if j != "w0!b"],
            [j for j in state.jobs if j != "w0!b"], dict(state.config),
            state.job("w0!a").status, str(state.job("w0!a").allocation)) == before[:6]
    state.check()


def test_the_view_offers_everything_a_policy_reads_and_nothing_to_write() -> None:
    dispatcher = Dispatcher(Fcfs(), paranoid=True)
    dispatcher.handle(t.Request(0.0, (begins(8),)))
    dispatcher.handle(t.Request(0.0, (sub("a", 0.0, 3), sub("b", 0.0, 6))))
    view = dispatcher.view
    assert isinstance(view, PolicyView)
    assert (view.now, view.nb_machines, str(view.free), str(view.all_machines)) == (
        0.0, 8, "3-7", "0-7")
    assert isinstance(view.free, FrozenProcSet) and isinstance(view.unavailable, FrozenProcSet)
    less = view.free - ProcSet(3)  # ordinary operators give a new, normal set
    assert type(less) is ProcSet and str(less) == "4-7" and str(view.free) == "3-7"
    less -= ProcSet(4)  # ... which the policy may change at will
    assert str(less) == "5-7" and str(dispatcher.state.free) == "3-7"
    assert list(view.waiting) == ["w0!b"] and list(view.running) == ["w0!a"]
    assert [j.id for j in view.running_by_expected_end] == ["w0!a"]
    assert view.running_by_expected_end[0] is view.job("w0!a")
    assert isinstance(view.jobs, MappingProxyType) and isinstance(view.config, MappingProxyType)
    assert view.profiles["w0"]["p"]["delay"] == 10.0
    assert view.profile_of(view.job("w0!a"))["type"] == "delay"  # type: ignore[index]
    assert str(view.busy_machines()) == "0-2" and view.pending_calls == ()
    assert [m.id for m in view.platform.machines] == list(range(8))
    assert not hasattr(view, "_state") and not hasattr(view, "__dict__")
    assert "ClusterState" not in repr(view) and "state" not in dir(view)
    with pytest.raises(ReadOnlyError):
        view.new_attribute = 1  # type: ignore[attr-defined]


class _Abusive(Policy):
    """Allocates, then removes its allocation from the state's free set in place."""

    name = "abusive"

    def decide(self, now, state):  # type: ignore[no-untyped-def]
        """Start every waiting job on the lowest free ids, 'forgetting' them in place."""
        out, free = [], state.free
        for job in state.waiting.values():
            alloc = ProcSet((free.min, free.min + job.res - 1))
            free -= alloc  # MUTATION: the classic corruption, in place on the state
            out.append(t.ExecuteJob(job.id, alloc))
        return out


def test_simulate_reports_the_mutation_on_one_line_without_traceback(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    policies = MappingProxyType({**registry.POLICIES, _Abusive.name: _Abusive})
    monkeypatch.setattr(registry, "POLICIES", policies)
    monkeypatch.setattr(cli, "POLICIES", policies)
    out = tmp_path / "out"
    status = cli.main(["simulate", "--policy", "abusive",
                       "-w", str(DATA / "example_workload_hpc_seed1_jobs250.json"),
                       "-p", str(DATA / "zero_lat_cluster128.xml"), "-o", str(out),
                       "--no-progress"])
    err = capsys.readouterr().err
    assert status != 0 and "Traceback" not in err
    errors = [line for line in err.splitlines() if "ERROR" in line]
    line = _line_of(_Abusive.decide)
    assert len(errors) == 1, err
    assert "policy 'abusive'" in errors[0] and "state.free is read-only" in errors[0]
    assert f"test_view.py:{line} `free -= alloc" in errors[0], errors[0]
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["complete"] is False and "state.free is read-only" in metrics["error"]


def test_frozen_sets_and_jobs_survive_pickling_and_copies() -> None:
    import copy
    import pickle

    from batpolicy.scheduler.jobs import Job
    from batpolicy.scheduler.readonly import freeze

    frozen = freeze(ProcSet((0, 3), 7), "job.allocation")
    job = Job("w0!1", 0.0, 5, 10.0, "p", seq=0, allocation=frozen, start=2.0)
    back = pickle.loads(pickle.dumps(job))
    assert type(back) is Job and back.start == 2.0 and str(back.allocation) == "0-3 7"
    assert isinstance(back.allocation, FrozenProcSet)
    with pytest.raises(ReadOnlyError, match="job.allocation is read-only"):
        back.allocation -= ProcSet(7)
    mutable = copy.copy(frozen)  # copies are the caller's own, mutable sets
    mutable -= ProcSet(7)
    assert type(mutable) is ProcSet and str(mutable) == "0-3" and str(frozen) == "0-3 7"
