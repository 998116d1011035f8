"""The zero-latency driver: Batsim 4.2.1's message loop on a platform whose links take no time.

Messages, as Batsim 4.2.1 sends them on a zero-latency platform:

1. SIMULATION_BEGINS alone, at time 0;
2. then, instant by instant, every event of the instant in one message, in the order of
   :mod:`.core`'s priorities, stamped with the instant rounded to 6 decimals (Batsim's
   JSON writer); the reply's decisions are applied at that instant;
3. what the decisions cause at the same instant (JOB_COMPLETED(COMPLETED_KILLED) then
   JOB_KILLED for a KILL_JOB; the JOB_SUBMITTED acknowledging a REGISTER_JOB; the
   completion of a job of zero length; RESOURCE_STATE_CHANGED) in a follow-up message
   at the same time;
4. SIMULATION_ENDS alone once nothing can happen any more (Batsim's protocol: end of simulation).

Batsim sometimes splits one instant over two messages (issue #67, Batsim's protocol: batching);
the simulator never does, which is the faithful reading of "everything of one instant
is batched" and changes nothing for a scheduler that decides after each message.

:class:`ZeroLatencyDriver` is one of the engine's two drivers (the other is
:class:`~.latency.driver.LatencyDriver`): it decides *when* things happen and talks through
the parts of :class:`~.parts.Parts`; it is also the target of the heap events
(:class:`~.actors.Reactions`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from batpolicy.protocol import types as t
from batpolicy.simulator.actors import EndOfInput, ExternalEventOccurs, Resume, Submitter
from batpolicy.simulator.core import BYE, DECISION, END_OF_INPUT, EXTERNAL, SUBMISSION
from batpolicy.simulator.engine.server import Scheduler
from batpolicy.simulator.json_quirks import wire_time
from batpolicy.simulator.records import SimJob

if TYPE_CHECKING:
    from batpolicy.simulator.engine.parts import Parts

__all__ = ["ZeroLatencyDriver"]

_NO_MORE_JOBS = t.NotifyType.NO_MORE_STATIC_JOB_TO_SUBMIT.value


class ZeroLatencyDriver:
    """Batsim's message loop on a zero-latency platform (module docstring).

    Runtime complexity: O(log n) heap work per event, plus the parts' and the
    scheduler's own cost.
    """

    __slots__ = ("_parts", "_books", "_queue", "_bye_pending", "_bye_at", "_advancing",
                 "_external", "_next_external", "_asleep_later", "_checked", "_submitter")

    def __init__(self, parts: Parts, external_events: list[Any]) -> None:
        self._parts = parts
        self._books = books = parts.books
        self._queue = queue = parts.queue
        self._bye_pending = False
        self._bye_at = 0.0  # when the pending goodbye was received
        self._advancing = False
        self._asleep_later = False
        self._checked = False  # the scheduler checks its replies (run, _exchange)
        #: The job submitter's wake-up: stateless, so one object serves every batch.
        self._submitter = Submitter(self)
        first = books.static.next
        if first is not None:
            queue.schedule(self._submitter, SUBMISSION, at=max(first.subtime, 0.0))
        elif not books.static_done:
            queue.schedule(EndOfInput(self, _NO_MORE_JOBS), END_OF_INPUT)
        self._external = _batches(external_events)
        self._next_external = 0
        if self._external:
            self._schedule_external()
        if external_events:
            last = max(float(external_events[-1].timestamp), 0.0)
            queue.schedule(EndOfInput(self, t.NotifyType.NO_MORE_EXTERNAL_EVENT_TO_OCCUR.value),
                           END_OF_INPUT, at=last)

    # ---------------------------------------------------------------- the message loop
    def run(self, scheduler: Scheduler) -> None:
        """Simulate until SIMULATION_ENDS, asking ``scheduler`` at every message.

        Raises :class:`~batpolicy.errors.InvalidDecision` where Batsim would abort, and when the
        simulation can never end (Batsim would wait forever).
        """
        parts = self._parts
        queue, books, ends, server = self._queue, self._books, parts.ends, parts.server
        outbox = books.outbox
        self._checked = parts.decisions.checked_by_scheduler(scheduler)
        parts.messages.tick(0.0)  # SUBMITTER_HELLO
        self._exchange(scheduler, (server.simulation_begins(),), first=True)
        while True:
            now = queue.now
            queue.fire_due(now)  # what the last decisions caused at this instant
            if outbox:
                self._exchange(scheduler, tuple(outbox))
                continue
            if ends.dirty:  # once per instant, after its starts and ends (.instant)
                ends.end_of_instant()
                continue
            if books.can_end():
                server.end(scheduler)
                break
            instant = queue.peek()
            if instant == math.inf:
                raise server.stuck()
            queue.fire_due(instant)

    def _exchange(self, scheduler: Scheduler, events: tuple[t.Event, ...],
                  first: bool = False) -> None:
        """Send one message, delete the jobs it reports (Batsim 4), apply the reply.

        Each decision applies at its timestamp (the reply's ``now`` if it has none) or
        at Batsim's clock if that is later; Batsim is ready again at the reply's ``now``.
        Events happening meanwhile wait for the next message, as in Batsim.

        ``first``: the reply to SIMULATION_BEGINS. Batsim's server receives the job
        submitter's SUBMITTER_HELLO, then this reply's first message (its first decision,
        or SCHED_READY), and only then the jobs submitted at t = 0 (the submitter sends
        them once its HELLO is received): they come between the first and second
        decisions (issue 17, case 2: batsched ``submitter``).
        """
        parts = self._parts
        queue = self._queue
        self._books.outbox.clear()
        now = queue.now  # wire_time's own test inline: an integral time (SWF) is as is
        stamp = now if type(now) is float and now.is_integer() else wire_time(now)
        reply = parts.server.ask(scheduler, t.Request(stamp, events))
        decisions = parts.decisions
        handlers = decisions.handlers
        messages = parts.messages
        # checked by the scheduler against this message, applied now: not checked again
        decisions.checked = self._checked
        for decision in reply.decisions:
            handler = handlers.get(type(decision))
            if handler is None:
                decisions.apply(decision)  # raises: not a decision Batsim accepts
            stamp = decision.timestamp
            if stamp is None:
                stamp = reply.now
            if stamp > queue.now:
                decisions.checked = False  # time passes first: what was checked may change
                messages.sleep_until(queue.now, stamp)
                self._advance_to(stamp)
            if messages.tick(queue.now) == 2 and first:
                self._submit_at_start(asleep_after_decision=True)
                handler(decision)  # type: ignore[misc]
                self._submitter_sleeps()
                continue
            handler(decision)  # type: ignore[misc]
        decisions.checked = False
        if reply.now > queue.now:
            self._advance_to(reply.now)
        elif decisions.kills:
            decisions.perform_kills()
        if self._bye_pending:  # issue 17, case 4: received before what the reply causes
            queue.schedule(EndOfInput(self, _NO_MORE_JOBS), BYE)
        if messages.tick(queue.now) <= 2 and first:  # SCHED_READY
            self._submit_at_start()

    def _advance_to(self, at: float) -> None:
        """Let simulated time run until ``at`` (Batsim sleeping before a decision)."""
        decisions = self._parts.decisions
        if decisions.kills:
            decisions.perform_kills()
        resume = Resume(self)
        queue = self._queue
        queue.schedule(resume, DECISION, at=at)
        ends = self._parts.ends
        self._advancing = True
        while not resume.fired:
            if ends.dirty and queue.peek() > queue.now:
                ends.end_of_instant()
            queue.step()
        self._advancing = False

    # ---------------------------------------------------------------- heap events
    def on_submission_time(self, asleep_after_decision: bool = False) -> None:
        """Submit every static job due now, in (subtime, full id) order (Batsim's job ids).

        Then the submitter sleeps until its next batch (:mod:`.core`: its wake-up comes
        after those of the actors already asleep); ``asleep_after_decision``: only once
        the decision being received is applied (:meth:`_submitter_sleeps`).
        Runtime complexity: O(k) for k jobs submitted.
        """
        due = self._books.static.take_due(self._queue.now)
        if not due:
            return  # already submitted by _submit_at_start
        energy = self._parts.energy
        if energy is not None:
            energy.first_submission()
        self._parts.server.submit_static(due)
        if asleep_after_decision:
            self._asleep_later = True
        else:
            self._sleep()

    def _submitter_sleeps(self) -> None:
        """The submitter sleeps once the decision being received is applied, if it must.

        A no-op unless :meth:`on_submission_time` sent a batch during that decision.
        """
        if self._asleep_later:
            self._asleep_later = False
            self._sleep()

    def _sleep(self) -> None:
        """The job submitter, its batch sent, sleeps until the next one or says goodbye."""
        queue = self._queue
        after = self._books.static.next  # a long trace's submitted jobs are not held
        if after is not None:
            queue.schedule(self._submitter, SUBMISSION, at=after.subtime)
        else:
            queue.schedule(EndOfInput(self, _NO_MORE_JOBS), END_OF_INPUT)

    def _submit_at_start(self, asleep_after_decision: bool = False) -> None:
        """The jobs due at t = 0, if the submitter has not sent them yet.

        Batsim's server receives them after the first decision of the reply to
        SIMULATION_BEGINS, once it handled it: the actor that decision created (a
        CALL_ME_LATER's waiter) went to sleep before the submitter does
        (``asleep_after_decision``; a recorded real Batsim + pybatsim run: at t = 10 the
        REQUESTED_CALL asked then comes before the JOB_SUBMITTED of that date).
        """
        first = self._books.static.next
        if self._queue.now == 0.0 and first is not None and first.subtime <= 0.0:
            self.on_submission_time(asleep_after_decision)

    def on_end_of_input(self, kind: str) -> None:
        """A submitter is done: NOTIFY ``kind`` (no more static job / external event).

        Batsim's job submitter says goodbye once its last batch is received; if that
        batch is the last event of its instant and the scheduler is ready, Batsim has
        already sent it, so the NOTIFY comes in the next message, at the same time
        (issue 17, case 4); otherwise it joins the instant's message.
        """
        books = self._books
        out = books.outbox
        if kind == _NO_MORE_JOBS:
            if not self._bye_pending and not self._advancing and out \
                    and isinstance(out[-1], t.JobSubmitted):
                self._bye_pending = True
                self._bye_at = self._queue.now
                return
            if self._bye_pending:  # received before what the reply caused: first, stamped
                # when received (a reply whose now is later moved the clock since)
                self._bye_pending = False
                books.static_done = True
                out.insert(0, t.Notify(wire_time(self._bye_at), kind))
                return
            books.static_done = True
        else:
            books.events_done = True
        out.append(t.Notify(wire_time(self._queue.now), kind))

    def on_call(self) -> None:
        """A CALL_ME_LATER is due: REQUESTED_CALL."""
        books = self._books
        books.waiters -= 1
        books.outbox.append(t.RequestedCall(wire_time(self._queue.now)))

    def _schedule_external(self) -> None:
        """Batsim's event submitter goes to sleep until its next batch (``event_submitter.cpp``).

        It does so once it sent the previous batch, which puts its wake-up after those
        of the actors already asleep then (:mod:`.core`'s creation order).
        """
        batch = self._external[self._next_external]
        self._next_external += 1
        self._queue.schedule(ExternalEventOccurs(self, batch), EXTERNAL,
                             at=max(float(batch[0].timestamp), 0.0))

    def on_external_event(self, batch: list[Any]) -> None:
        """The external events of one date (``--events`` files) occur now, in file order."""
        server = self._parts.server
        for event in batch:
            server.external_event(event)
        if self._next_external < len(self._external):
            self._schedule_external()

    def on_job_end(self, job: SimJob) -> None:
        """A job reaches its planned end (JOB_COMPLETED joins the instant's message)."""
        self._parts.server.job_end(job)
        reported = job.model.job_reported
        if reported is not None:  # the job's actor ends now (no message latency)
            reported(job, self._queue.now)


def _batches(events: list[Any]) -> list[list[Any]]:
    """The external events grouped by date, as Batsim's event submitter sends them.

    A date at or before 0 counts as 0 (the submitter's first sleep is then a no-op).
    """
    batches: list[list[Any]] = []
    last = None
    for event in events:
        at = max(float(event.timestamp), 0.0)
        if at == last:
            batches[-1].append(event)
        else:
            batches.append([event])
            last = at
    return batches
