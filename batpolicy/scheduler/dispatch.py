"""The one event path: events → state → policy hooks → decisions → checker → state.

Both drivers (:mod:`batpolicy.scheduler.daemon` and the embedded simulator) hand each
Batsim message to :meth:`Dispatcher.handle` and send back what it returns. Policies get
the state only through one :class:`~batpolicy.scheduler.view.PolicyView`, built here; an
exception raised inside a policy (a refused change of that view included) becomes one
:class:`~batpolicy.errors.PolicyError` naming the policy, the event and the policy's line.
"""

from __future__ import annotations

import linecache
import sysconfig
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from batpolicy.errors import BatpolicyError, InvalidDecision, PolicyError, ProtocolError, clip
from batpolicy.protocol import types as t
from batpolicy.scheduler.checker import check_decisions
from batpolicy.scheduler.contract import Policy
from batpolicy.scheduler.conversation import check_order
from batpolicy.scheduler.state import ClusterState, check_invariants
from batpolicy.scheduler.view import PolicyView

#: The two commonest events' types, read once (module globals, not attribute lookups)
_SUBMITTED, _COMPLETED = t.JobSubmitted, t.JobCompleted
Reply = t.Reply


class Dispatcher:
    """Applies a message's events to the state, asks the policy, checks its answer.

    ``paranoid`` runs :func:`~batpolicy.scheduler.state.check_invariants` after every
    message. The time a message takes is the driver's to measure (the simulator's
    ``scheduling_time``, Batsim's ``scheduling_time`` beside ``serve``): timing each hook
    here cost four clock reads per message for a figure no driver reported.
    """

    #: Every reply :meth:`handle` returns was checked (:func:`check_decisions`, the rules
    #: of :mod:`~batpolicy.scheduler.rules`) against the state its message brought up to
    #: date: a driver applying the reply at once, with nothing happened since it sent the
    #: message, may skip checking those rules again (the embedded simulator's EXECUTE_JOB:
    #: :meth:`~batpolicy.simulator.engine.decisions.DecisionApplier.checked_by_scheduler`).
    checks_replies = True

    def __init__(self, policy: Policy, state: ClusterState | None = None, *,
                 paranoid: bool = False) -> None:
        self.policy = policy
        self.state = state if state is not None else ClusterState()
        # a policy that never reads finished jobs lets the state forget them
        self.state.forget_finished = not getattr(policy, "reads_finished_jobs", True)
        #: What the policy sees of :attr:`state`: read-only, built once.
        self.view = view = PolicyView(self.state)
        self.paranoid = paranoid
        self.nb_messages = 0
        self.nb_decisions = 0
        self._hooks: dict[type, Callable[[Any], Any]] = {
            t.SimulationBegins: lambda ev: policy.on_simulation_begins(view),
            t.SimulationEnds: lambda ev: policy.on_simulation_ends(view),
            t.JobKilled: lambda ev: policy.on_job_killed(ev, view),
            t.ResourceStateChanged: lambda ev: policy.on_resources_changed(ev, view),
            t.RequestedCall: lambda ev: policy.on_requested_call(ev.timestamp, view),
        }
        #: The two hooks of nearly every message, None when the policy keeps the base
        #: class's (which decides nothing): such a hook is not called at all.
        self._on_submitted = _overridden(policy, "on_job_submitted")
        self._on_completed = _overridden(policy, "on_job_completed")
        #: ``policy.decide``, bound once (every message calls it); a policy without it
        #: raises its ``AttributeError`` when a message comes, as calling it would
        self._decide = (policy.decide if hasattr(policy, "decide")
                        else lambda now, view: policy.decide(now, view))

    def handle(self, request: t.Request, *,
               _shadow: tuple[t.Reply, str] | None = None) -> t.Reply:
        """Answer one Batsim message. Runtime complexity: that of the policy, plus O(events).

        Each event goes to the state, then to its hook; then ``decide`` answers; then the
        answer is checked and applied. A message that leads to no decision (most of them)
        is the state's transition, the policy's hook and ``decide`` in this one frame, and
        nothing else: no checker, nothing to apply. ``_shadow`` is :meth:`shadow`'s
        (recorded reply, its scheduler's name).
        """
        state = self.state
        now, events = request.now, request.events
        last = state.now
        if now < last or not state.started or (events and events[0].timestamp < last):
            check_order(state.started, last, now, events)  # raises, naming the event and field
        state.now = now
        out: list[t.Decision] = []
        view, on_submitted, on_completed = self.view, self._on_submitted, self._on_completed
        transitions = state.transitions
        for event in events:
            kind = type(event)
            step = transitions.get(kind)
            try:  # state.apply(event), without its frame; it names an unknown type
                job = step(event) if step is not None else state.apply(event)
            except ProtocolError as exc:  # the state names the field, here the event
                raise exc.at(_index(events, event)) from None
            try:
                if kind is _SUBMITTED:  # the two commonest events without a call to _hook
                    produced = (on_submitted(job, view) if on_submitted and job is not None
                                else None)  # None: the acknowledgement of our REGISTER_JOB
                elif kind is _COMPLETED:
                    produced = on_completed(job, view) if on_completed else None
                else:
                    produced = self._hook(event, job)
            except BatpolicyError:
                raise
            except Exception as exc:
                raise self._policy_error(exc, event, _index(events, event), job) from exc
            if produced:
                out.extend(produced)
        if state.ended:
            return Reply(now, ())
        try:
            decided = self._decide(now, view)
            if out or type(decided) is not list:
                out.extend(decided)  # a generator runs here, inside this try
            elif decided:  # no hook decided (nearly always): decide's own list is the answer
                out = decided
        except BatpolicyError:
            raise
        except Exception as exc:
            raise self._policy_error(exc, None, None, None, events) from exc
        if _shadow is not None:
            check_decisions(state, out, self.policy.name)
            recorded, who = _shadow
            self._commit(now, list(recorded.decisions), who)
        elif out or self.paranoid:
            self._commit(now, out, self.policy.name)
        else:
            self.nb_messages += 1  # most messages: nothing to check or apply
            return Reply(now, ())
        return Reply(now, tuple(out))

    def shadow(self, request: t.Request, recorded: t.Reply, *,
               who: str = "recorded scheduler") -> t.Reply:
        """Answer ``request`` but apply another scheduler's ``recorded`` reply instead.

        Our decisions are checked against the state (so they must be valid), then the
        recorded ones are checked and applied: replaying a conversation recorded with
        another scheduler asks our policy what it would do at every step of that run.
        ``who`` names that other scheduler in errors (a pybatsim scheduler run in-process
        is checked this way: :mod:`batpolicy.simulator.pybatsim.driver`).
        """
        return self.handle(request, _shadow=(recorded, who))

    def move_expected_end(self, job_id: str, end: float) -> None:
        """A driver's hint, not a Batsim message: running job ``job_id`` now ends at ``end``.

        Batsim never tells a scheduler when a job will end; only the embedded simulator
        knows (its job models and once-per-instant hook, :mod:`batpolicy.simulator.instant`)
        and, with ``simulate --expected-ends model``, passes each moved planned end here
        (``Simulator.set_end_hint``), after each instant. The state's expected end of the
        job moves (:meth:`ClusterState.move_expected_end`), so the policy's view follows;
        a job the state does not hold as running is left alone. Runtime complexity:
        O(log r) comparisons and one O(r) C-level move, r running jobs.
        """
        state = self.state
        job = state.jobs.get(job_id)
        if job is not None and job.start is not None and job.id in state.running:
            state.move_expected_end(job, end)

    def _commit(self, now: float, out: list[t.Decision], who: str) -> None:
        state = self.state
        if out:  # most replies hold no decision: nothing to check or apply
            check_decisions(state, out, who)
            apply = state.decision_transitions  # apply_decision's table, without its frame
            for decision in out:
                apply[type(decision)](decision)
        if self.paranoid:
            try:
                check_invariants(state)
            except AssertionError as exc:
                raise InvalidDecision(f"state invariant broken after t={now}: {exc}",
                                      policy=who) from None
        self.nb_messages += 1
        self.nb_decisions += len(out)

    def _hook(self, event: t.Event, job: Any) -> Iterable[t.Decision] | None:
        """The hook of an event other than JOB_SUBMITTED and JOB_COMPLETED (see handle)."""
        kind = type(event)
        view = self.view
        if kind is t.Notify:
            if event.kind in (t.NotifyType.EVENT_MACHINE_AVAILABLE,  # type: ignore[union-attr]
                              t.NotifyType.EVENT_MACHINE_UNAVAILABLE):
                return self.policy.on_resources_changed(event, view)
            return self.policy.on_notify(event, view)  # type: ignore[arg-type]
        hook = self._hooks.get(kind)
        return hook(event) if hook is not None else None

    def _policy_error(self, exc: Exception, event: t.Event | None, index: int | None,
                      job: Any, events: tuple[t.Event, ...] = ()) -> PolicyError:
        what = "decide()" if event is None else f"event #{index} {type(event).__name__}"
        if event is None and events:  # decide() failed: name the message's events and jobs
            named = [type(e).__name__ + (f" {e.job_id}" if getattr(e, "job_id", None) else "")
                     for e in events[:3]]
            more = f", +{len(events) - 3} more" if len(events) > 3 else ""
            what += f" after {', '.join(named)}{more}"
        job_id = getattr(job, "id", None) or getattr(event, "job_id", None)
        job_part = f", job '{job_id}'" if job_id else ""
        return PolicyError(f"policy '{self.policy.name}' raised {type(exc).__name__}: {exc} "
                           f"(while handling {what} at t={self.state.now}{job_part}"
                           f"{_where(exc)})")


def _index(events: tuple[t.Event, ...], event: t.Event) -> int:
    """The position of ``event`` (the object itself) in ``events``, to name it in an error."""
    return next(i for i, e in enumerate(events) if e is event)


def _overridden(policy: Policy, hook: str) -> Callable[..., Any] | None:
    """``policy``'s bound ``hook``, or None when its class keeps :class:`Policy`'s no-op.

    A hook set on the instance counts as overridden; a policy without the hook gets a
    caller that raises its ``AttributeError`` when the event comes, as calling it would.
    Runtime complexity: O(1).
    """
    if hook not in getattr(policy, "__dict__", ()) and \
            getattr(type(policy), hook, None) is getattr(Policy, hook):
        return None
    if not hasattr(policy, hook):
        return lambda *args: getattr(policy, hook)(*args)
    return getattr(policy, hook)  # type: ignore[no-any-return]


_STDLIB = sysconfig.get_paths()["stdlib"]
#: Files whose frames are never "the policy's line": the read-only machinery itself.
_MACHINERY = frozenset(str(Path(__file__).with_name(name)) for name in
                       ("view.py", "readonly.py", "jobs.py", "dispatch.py"))


def _where(exc: BaseException) -> str:
    """``, at FILE:LINE `source```: the innermost frame of the policy's own code.

    Frames of the standard library, of installed packages and of the read-only machinery
    are skipped, so a refused ``free -= alloc`` points at the policy's line, not at the
    frozen set's method.
    """
    found = None
    tb = exc.__traceback__
    while tb is not None:
        path = tb.tb_frame.f_code.co_filename
        if path not in _MACHINERY and not path.startswith(_STDLIB) and not path.startswith("<") \
                and ("site-packages" not in path or "batpolicy" in path):
            found = (path, tb.tb_lineno)
        tb = tb.tb_next
    if found is None:
        return ""
    path, line = found
    source = linecache.getline(path, line).strip()
    try:  # relative to the working directory when below it: shorter, still clickable
        shown = Path(path).relative_to(Path.cwd())
    except ValueError:
        shown = Path(path)
    return f", at {shown}:{line}" + (f" `{clip(source, 120)}`" if source else "")
