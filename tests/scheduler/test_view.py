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

from batpolicy.app import cli
from batpolicy.errors import PolicyError, ReadOnlyError
from batpolicy.policies import registry
from batpolicy.policies.base import Policy
from batpolicy.policies.fcfs import Fcfs
from batpolicy.protocol import types as t
from batpolicy.protocol.intervals import MachineSet
from batpolicy.scheduler.dispatch import Dispatcher
from batpolicy.scheduler.state import check_invariants
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
def _free_update(job: Any, view: Any) -> None:
    view.free.update(MachineSet.of(0))  # MUTATION free.update

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
    running.allocation |= MachineSet.of(7)  # MUTATION job.allocation

def _view_attr(job: Any, view: Any) -> None:
    view.free = MachineSet()  # MUTATION view.free

def _view_now(job: Any, view: Any) -> None:
    view.now = 0.0  # MUTATION view.now

def _state_escape(job: Any, view: Any) -> None:
    view._state.machines.free = MachineSet()  # MUTATION view._state


#: (mutation, words the error must contain)
MUTATIONS: list[tuple[Callable[[Any, Any], None], tuple[str, ...]]] = [
    (_free_update, ("'MachineSet' object has no attribute 'update'",)),
    (_waiting_del, ("mappingproxy",)),
    (_jobs_set, ("mappingproxy",)),
    (_running_add, ("ReadOnlySequence", "add")),
    (_config_set, ("mappingproxy",)),
    (_profiles_set, ("mappingproxy",)),
    (_job_attr, ("job 'w0!b'", "attribute 'status' is read-only")),
    (_job_alloc, ("attribute 'allocation' is read-only",)),
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

    def on_job_submitted(self, job, view):  # type: ignore[no-untyped-def]
        """FCFS's hook; the mutation when 'b' arrives (if asked in the hook)."""
        if self.where == "hook" and job.id == "w0!b":
            self.mutation(job, view)
        return super().on_job_submitted(job, view)

    def decide(self, now, view):  # type: ignore[no-untyped-def]
        """FCFS's decisions; the mutation once 'b' waits (if asked in decide)."""
        if self.where == "decide" and "w0!b" in view.jobs:
            self.mutation(view.job("w0!b"), view)
        return super().decide(now, view)


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
    check_invariants(state)


def test_the_view_offers_everything_a_policy_reads_and_nothing_to_write() -> None:
    dispatcher = Dispatcher(Fcfs(), paranoid=True)
    dispatcher.handle(t.Request(0.0, (begins(8),)))
    dispatcher.handle(t.Request(0.0, (sub("a", 0.0, 3), sub("b", 0.0, 6))))
    view = dispatcher.view
    assert isinstance(view, PolicyView)
    assert (view.now, view.nb_machines, str(view.free), str(view.all_machines)) == (
        0.0, 8, "3-7", "0-7")
    assert view.free is dispatcher.state.free  # the state's own set: immutable, no copy
    assert type(view.free) is MachineSet and type(view.unavailable) is MachineSet
    less = view.free - MachineSet.of(3)  # operators give a new set
    assert type(less) is MachineSet and str(less) == "4-7" and str(view.free) == "3-7"
    free = view.free
    free -= MachineSet.of(4)  # the classic in-place corruption binds the policy's name anew
    assert str(free) == "3 5-7" and str(view.free) == str(dispatcher.state.free) == "3-7"
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
    """Allocates, then 'records' its allocation by assigning the view's free set."""

    name = "abusive"

    def decide(self, now, view):  # type: ignore[no-untyped-def]
        """Start every waiting job on the lowest free ids, 'forgetting' them on the view."""
        out, free = [], view.free
        for job in view.waiting.values():
            alloc = MachineSet.span(free.min(), free.min() + job.res - 1)
            view.free = free - alloc  # MUTATION: an attempt to change the state
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
    assert f"test_view.py:{line} `view.free = free - alloc" in errors[0], errors[0]
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["complete"] is False and "state.free is read-only" in metrics["error"]


def test_machine_sets_and_jobs_survive_pickling_and_copies() -> None:
    import copy
    import pickle

    from batpolicy.scheduler.jobs import Job

    alloc = MachineSet.of((0, 3), 7)
    job = Job("w0!1", 0.0, 5, 10.0, "p", seq=0, allocation=alloc, start=2.0)
    back = pickle.loads(pickle.dumps(job))
    assert type(back) is Job and back.start == 2.0 and str(back.allocation) == "0-3 7"
    assert type(back.allocation) is MachineSet and back.allocation == alloc
    with pytest.raises(ReadOnlyError, match="attribute 'allocation' is read-only"):
        back.allocation -= MachineSet.of(7)
    copied = copy.copy(alloc)
    copied -= MachineSet.of(7)  # a new set: the original is untouched
    assert type(copied) is MachineSet and str(copied) == "0-3" and str(alloc) == "0-3 7"
