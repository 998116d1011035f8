"""What a message costs serve, counted: a message that leads to no decision is nearly free.

Issue 44 asks that the path of a message that leads to no decision cost almost nothing:
one decode, no view or checker work, no record that nobody reads; then the same for
EASY's common case. These tests count, with spies, what one such message runs (never
time): no :class:`~batpolicy.scheduler.view.PolicyView` is built after the dispatcher's
own, the checker is not called, no :class:`~batpolicy.scheduler.checker.Scratch` is built
for a reply of plain starts, no decision is applied, and the Python functions one message
runs stay within a small budget. A change that makes such a message dearer fails here and
must say why in the budget it raises. That the shortcuts answer the full path's bytes is
``test_fast_paths.py``'s (and, whole KTH, ``bench/performance/serve_stages.py``'s).
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

import pytest

from batpolicy.errors import InvalidDecision
from batpolicy.policies.registry import make_policy
from batpolicy.protocol import types as t
from batpolicy.protocol.intervals import MachineSet
from batpolicy.scheduler import checker, dispatch, view
from batpolicy.scheduler.checker import check_decisions
from batpolicy.scheduler.dispatch import Dispatcher
from batpolicy.scheduler.jobs import Job
from batpolicy.scheduler.state import ClusterState

NB = 4


def _begins(nb: int = NB) -> t.Request:
    resources = tuple(t.ResourceInfo(i, f"h{i}", "idle") for i in range(nb))
    return t.Request(0.0, (t.SimulationBegins(0.0, nb, nb, 0, False, True, {}, resources, (),
                                              {"w0": "/w0.json"}, {"w0": {}}),))


def _submitted(now: float, name: str, res: int, walltime: float = 100.0) -> t.Request:
    job = {"id": f"w0!{name}", "subtime": now, "res": res, "walltime": walltime,
           "profile": "p"}
    return t.Request(now, (t.JobSubmitted(now, f"w0!{name}", job),))


def _completed(now: float, name: str, alloc: MachineSet) -> t.Request:
    return t.Request(now, (t.JobCompleted(now, f"w0!{name}", t.JobState.COMPLETED_SUCCESSFULLY,
                                          0, alloc),))


class _Spies:
    """Counts of what the dispatcher builds and calls while the spies are in place."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, dispatcher: Dispatcher) -> None:
        self.counts: Counter[str] = Counter()
        counts = self.counts

        def counted(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
            def spy(*args: Any, **kwargs: Any) -> Any:
                counts[name] += 1
                return fn(*args, **kwargs)
            return spy

        monkeypatch.setattr(dispatch, "check_decisions",
                            counted("check_decisions", dispatch.check_decisions))
        monkeypatch.setattr(checker.Scratch, "__init__",
                            counted("Scratch", checker.Scratch.__init__))
        monkeypatch.setattr(view.PolicyView, "__init__",
                            counted("PolicyView", view.PolicyView.__init__))
        state = dispatcher.state
        for kind, apply in list(state.decision_transitions.items()):
            state.decision_transitions[kind] = counted("applied", apply)


def _fcfs_with_a_waiting_head() -> Dispatcher:
    """FCFS on 4 machines: job a runs on 0-2, job b (2 machines) waits at the head."""
    dispatcher = Dispatcher(make_policy("fcfs"))
    dispatcher.handle(_begins())
    assert len(dispatcher.handle(_submitted(1.0, "a", 3)).decisions) == 1
    assert not dispatcher.handle(_submitted(2.0, "b", 2)).decisions
    return dispatcher


def test_a_message_without_decision_builds_no_view_and_runs_no_checker(
        monkeypatch: pytest.MonkeyPatch) -> None:
    dispatcher = _fcfs_with_a_waiting_head()
    spies = _Spies(monkeypatch, dispatcher)
    view_before = dispatcher.view
    assert not dispatcher.handle(_submitted(3.0, "c", 1)).decisions  # fits, queued behind b
    assert not dispatcher.handle(_submitted(4.0, "d", 2)).decisions
    assert spies.counts == {}  # no view, no checker, no Scratch, nothing applied
    assert dispatcher.view is view_before


def test_a_start_is_checked_without_a_scratch_and_applied_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    dispatcher = _fcfs_with_a_waiting_head()
    spies = _Spies(monkeypatch, dispatcher)
    reply = dispatcher.handle(_completed(10.0, "a", MachineSet.span(0, 2)))
    assert [d.job_id for d in reply.decisions] == ["w0!b"]  # the head starts
    assert spies.counts == {"check_decisions": 1, "applied": 1}
    assert dispatcher.state.job("w0!b").allocation == MachineSet.span(0, 1)


def test_easy_common_messages_build_no_scratch(monkeypatch: pytest.MonkeyPatch) -> None:
    """EASY: a job that starts at once, one that waits, a completion that starts nothing."""
    dispatcher = Dispatcher(make_policy("easy"))
    dispatcher.handle(_begins())
    spies = _Spies(monkeypatch, dispatcher)
    assert len(dispatcher.handle(_submitted(1.0, "a", 3, 50.0)).decisions) == 1
    assert spies.counts == {"check_decisions": 1, "applied": 1}
    spies.counts.clear()
    assert not dispatcher.handle(_submitted(2.0, "b", 4, 50.0)).decisions  # reserved at 51
    assert not dispatcher.handle(_submitted(3.0, "c", 1, 100.0)).decisions  # would delay b
    assert spies.counts == {}
    assert dispatcher.handle(_submitted(4.0, "d", 1, 10.0)).decisions[0].job_id == "w0!d"
    assert spies.counts == {"check_decisions": 1, "applied": 1}  # backfilled, no Scratch


def _python_calls(fn: Callable[..., Any], *args: Any) -> Counter[str]:
    """The Python functions ``fn(*args)`` runs, ``fn`` included, by qualified name."""
    seen: Counter[str] = Counter()

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            seen[frame.f_code.co_qualname] += 1

    sys.setprofile(profile)
    try:
        fn(*args)
    finally:
        sys.setprofile(None)
    return seen


#: Python functions one message may run inside Dispatcher.handle (FCFS, no decision).
#: Raise a budget only with a reason: these are the messages most of a run is made of.
#: handle; the transition, the job and its __post_init__; the hook; decide; can_ever_run
SUBMISSION_THAT_WAITS = 7
#: handle; the transition (_on_completed, _complete); decide
COMPLETION_THAT_STARTS_NOTHING = 4


def test_a_message_without_decision_stays_within_its_budget_of_calls() -> None:
    dispatcher = _fcfs_with_a_waiting_head()
    submitted = _submitted(3.0, "c", 1)
    calls = _python_calls(dispatcher.handle, submitted)
    assert sum(calls.values()) <= SUBMISSION_THAT_WAITS, calls
    assert not any("check" in name or "Scratch" in name or "View" in name for name in calls)
    small = Dispatcher(make_policy("fcfs"))  # a completion that frees too little:
    small.handle(_begins())
    small.handle(_submitted(1.0, "x", 1))
    small.handle(_submitted(1.0, "y", 2))
    small.handle(_submitted(2.0, "z", 4))  # waits for all four machines
    completion = _completed(5.0, "x", MachineSet.of(0))  # y still runs: z still waits
    calls = _python_calls(small.handle, completion)
    assert not small.state.job("w0!z").start and sum(calls.values()) <= \
        COMPLETION_THAT_STARTS_NOTHING, calls


def _replies() -> Iterator[tuple[ClusterState, list[t.Decision]]]:
    """States and replies at the edges of the plain-start shortcut, accepted or not."""
    state = ClusterState()
    state.apply(_begins().events[0])
    for name, res in (("a", 1), ("b", 2), ("c", 1)):
        state.apply(_submitted(1.0, name, res).events[0])
    state.apply_decision(t.ExecuteJob("w0!c", MachineSet.of(3)))  # c runs on 3
    state.now = 1.0
    a, b = MachineSet.of(0), MachineSet.of(1, 2)
    for decisions in (
            [t.ExecuteJob("w0!a", a)],
            [t.ExecuteJob("w0!a", a), t.ExecuteJob("w0!b", b)],
            [t.ExecuteJob("w0!a", a), t.ExecuteJob("w0!a", MachineSet.of(1))],  # twice
            [t.ExecuteJob("w0!a", a), t.ExecuteJob("w0!b", MachineSet.of(0, 1))],  # 0 twice
            [t.ExecuteJob("w0!c", MachineSet.of(0))],  # running already
            [t.ExecuteJob("w0!a", MachineSet.of(3))],  # busy
            [t.ExecuteJob("w0!b", a)],  # too few machines for b
            [t.ExecuteJob("w0!a", MachineSet.of(0, 1))],  # more than a asks, no mapping
            [t.ExecuteJob("w0!a", MachineSet())],
            [t.ExecuteJob("w0!x", a)],  # unknown
            [t.ExecuteJob("w0!a", a, mapping={0: 0})],  # an option: rule by rule
            [t.RejectJob("w0!a"), t.ExecuteJob("w0!b", b)],
            [t.ExecuteJob("w0!b", b), t.RejectJob("w0!b")]):
        yield state, decisions


@pytest.mark.parametrize(("state", "decisions"), list(_replies()))
def test_the_plain_start_shortcut_accepts_only_what_the_rules_accept(
        state: ClusterState, decisions: list[t.Decision]) -> None:
    shortcut = checker._plain_starts(state, decisions)
    scratch = checker.Scratch(state)  # the rule-by-rule path, as check_decisions runs it
    try:
        for decision in decisions:
            checker._RULES[type(decision)](scratch, decision, "")
            scratch.record(decision)
    except InvalidDecision:
        accepted = False
    else:
        accepted = True
    assert not shortcut or accepted, decisions  # never accepts what a rule refuses
    if accepted:
        check_decisions(state, decisions)  # and check_decisions agrees, shortcut or not
    else:
        with pytest.raises(InvalidDecision):
            check_decisions(state, decisions)


def test_a_job_allocates_no_record_nobody_reads() -> None:
    """A job holds its slots and nothing else: no per-job dict (the removed ``extra``)."""
    job = Job("w0!1", 0.0, 2, None, "p", seq=0)
    assert not hasattr(job, "__dict__") and not hasattr(job, "extra")
    assert job.planned_walltime == float("inf")  # a slot, set once, read without a call
    assert not _python_calls(getattr, job, "planned_walltime")
