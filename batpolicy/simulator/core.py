"""The discrete-event core of the embedded simulator: one heap, one push, one ``step()``.

Shaped after SimPy's ``core.py``: :meth:`EventQueue.schedule` is the only place that
pushes onto the heap, :meth:`EventQueue.step` the only place that moves :attr:`now`.
Heap entries are ``(time, priority, seq, event)``. ``seq`` grows with every push, so
two events of equal time and priority fire in the order they were scheduled, and it
doubles as the entry's identity: an event whose time moves is simply scheduled again,
and the stale entry is skipped when popped (lazy deletion, see :class:`Event`).

Tie-break priorities at one instant
-----------------------------------
Batsim 4.2.1 hands the scheduler everything that happens at one simulated instant in
the order its SimGrid actors wake up. Each of those actors (the job submitter, the event
submitter, a job's executor, a CALL_ME_LATER waiter) waits in a ``sleep_for``, and
SimGrid 3.32 ends the actions due at one date in the order they were created: its
``ptask_L07`` model walks the started actions in creation order
(``HostL07Model::update_actions_state``) and counts a sleep within ``sg_surf_precision``
(1e-9 s) of its end as ended (``Action::update_max_duration``). The actors then run,
and their messages reach the server, in that order. A sleep is created when its actor
starts waiting: the job submitter's right after it sent the previous batch
(``job_submitter.cpp``), the event submitter's likewise (``event_submitter.cpp``), a
job's when it starts (``do_delay_task``: one sleep for the whole delay, or until the
walltime; a sequence sleeps once per task, :class:`~.actors.NextTask`), a waiter's
when its CALL_ME_LATER is received. So the wake-ups of one
instant (:data:`SUBMISSION`, :data:`CALL`, :data:`EXTERNAL`, :data:`COMPLETION`: one
priority) fire in the order they were scheduled, which is ``seq``'s. Examples, all in
recorded Batsim conversations:

- a submission before the completion of a job started after the previous batch was
  sent (``chaos-samesubmit``, t = 20 ... 60); a completion first when the job started
  before that (KTH-SP2 with pybatsim's easyBackfill, t = 614523: job 63, started at
  614502, ends as job 65 comes, whose submitter slept since 614516; the submitter
  recording of issue 17, t = 57.25);
- a ``REQUESTED_CALL`` before an external event whose submitter went to sleep after
  the CALL_ME_LATER came (``chaos-events-paper800``, t = 400);
- external events in the order of their file (``chaos-generic-events-walltime120``,
  t = 300), those of one date in one batch;
- completions of one instant in the order the jobs started (every instant with several
  completions in the transcripts).

``no_more_static_job_to_submit`` and ``no_more_external_event_to_occur`` come after
everything else of their instant (:data:`END_OF_INPUT`). Events caused by the
scheduler's own decisions (kill acknowledgements, registration acknowledgements,
completions of zero-length jobs) come in a follow-up message at the same time, as in
Batsim; they are not tie-broken here.
"""

from __future__ import annotations

import math
from heapq import heappop, heappush
from typing import Protocol

__all__ = ["BYE", "CALL", "COMPLETION", "DECISION", "END_OF_INPUT", "EXTERNAL", "SUBMISSION",
           "Event", "EventQueue"]

SUBMISSION = 1
"""Static job submissions: a wake-up (the module docstring's creation order)."""

CALL = 1
"""REQUESTED_CALL: a wake-up (the module docstring's creation order)."""

EXTERNAL = 1
"""External events (machine (un)availability, forwarded events): a wake-up."""

COMPLETION = 1
"""Job completions (success, failure, walltime): a wake-up."""

BYE = 0
"""The job submitter's goodbye received before what the reply causes (issue 17, case 4)."""

DECISION = 1.25
"""Decisions stamped later than Batsim's clock: after the wake-ups of their instant.

Batsim applies each decision at its timestamp, its request-reply actor sleeping until
then (``JsonProtocolReader::send_message_at_time``; a reply with ``now`` 1595.000051 to
a message sent at the internal time 1595.0000506 starts its jobs at 1595.000051). The
wake-ups of that date report first: a completion whose job started before the reply
(its sleep is older), and the submissions due then, whose message goes straight to the
server while a KILL_JOB still has to create the killer actor, which kills and reports:
batsched ``killer`` stamps a KILL_JOB 10 s ahead; at t = 510 Batsim sends the
JOB_SUBMITTED due then before the JOB_KILLED it answers
(``tests/data/batsim421/killer-walltime120.jsonl``, message 53; issue 17, case 3).
"""

END_OF_INPUT = 4
"""``no_more_static_job_to_submit`` / ``no_more_external_event_to_occur``: last of all."""


class Event(Protocol):
    """Something that happens at a simulated time.

    ``live(seq)`` says whether the heap entry ``seq`` is still this event's current one
    (an event rescheduled to another time leaves stale entries behind); ``fire()`` does
    what the event does, at :attr:`EventQueue.now`.
    """

    def live(self, seq: int) -> bool:
        """Whether the heap entry numbered ``seq`` is still current."""

    def fire(self) -> None:
        """Happen, now."""


class EventQueue:
    """Simulated time and the future events, on one binary heap.

    >>> class Say:
    ...     def __init__(self, q, text): self.q, self.text = q, text
    ...     def live(self, seq): return True
    ...     def fire(self): print(self.q.now, self.text)
    >>> q = EventQueue()
    >>> _ = q.schedule(Say(q, "no more jobs"), END_OF_INPUT, 5.0)
    >>> _ = q.schedule(Say(q, "completion"), COMPLETION, 5.0)
    >>> _ = q.schedule(Say(q, "submission"), SUBMISSION, 5.0)
    >>> while q.peek() < math.inf:
    ...     q.step()
    5.0 completion
    5.0 submission
    5.0 no more jobs
    """

    __slots__ = ("_queue", "now", "_seq")

    def __init__(self, start: float = 0.0) -> None:
        self._queue: list[tuple[float, int, int, Event]] = []
        #: The current simulated time; only :meth:`step` moves it. A plain attribute, not
        #: a property: the engine reads it about nine times per Batsim message.
        self.now = start
        self._seq = 0

    def __len__(self) -> int:
        return len(self._queue)

    def schedule(self, event: Event, priority: int, delay: float = 0.0, *,
                 at: float | None = None) -> int:
        """Schedule ``event`` after ``delay`` (or at the absolute time ``at``); return its seq.

        ``at`` exists so that a job model can give an end computed exactly as Batsim
        computes it (``now + delay`` does not always round-trip in floating point).
        Runtime complexity: O(log n).
        """
        time = self.now + delay if at is None else at
        if not time >= self.now:
            raise ValueError(f"cannot schedule an event at {time}, before now={self.now}")
        seq = self._seq
        self._seq = seq + 1
        heappush(self._queue, (time, priority, seq, event))
        return seq

    def peek(self) -> float:
        """Time of the next live event, ``inf`` if none; drops stale entries on the way.

        Runtime complexity: O(log n) amortised.
        """
        queue = self._queue
        while queue:
            head = queue[0]
            if head[3].live(head[2]):
                return head[0]
            heappop(queue)
        return math.inf

    def fire_due(self, time: float) -> None:
        """Fire, in order, every live event due at ``time``, those they schedule then included.

        The same as ``while peek() == time: step()`` with one liveness test per entry
        instead of two, and no method call per event (the engine's loop runs it twice per
        Batsim message), nor for the later entry it stops at: a stale one is dropped
        when its time comes (or by :meth:`peek`). Runtime complexity: O(log n) per entry
        popped, plus the events' own work.
        """
        queue = self._queue
        while queue:
            head = queue[0]
            if head[0] > time:
                return
            event = head[3]
            if not event.live(head[2]):
                heappop(queue)
            elif head[0] == time:
                heappop(queue)
                self.now = time
                event.fire()
            else:
                return

    def pop_near(self, time: float, within: float) -> list[tuple[int, float, Event]]:
        """Pop every entry due by ``time + within``, as (seq, time, event) in seq order.

        For a driver that takes dates closer than ``within`` for one date and orders its
        events by creation (:mod:`.latency`). Stale entries come too (test ``live``
        before firing). Runtime complexity: O(k log n) for k entries popped.
        """
        queue = self._queue
        limit = time + within
        batch = []
        while queue and queue[0][0] <= limit:
            due, _priority, seq, event = heappop(queue)
            batch.append((seq, due, event))
        batch.sort(key=lambda entry: entry[0])
        return batch

    def step(self) -> None:
        """Pop the next entry; if it is live, advance :attr:`now` to its time and fire it.

        Runtime complexity: O(log n) plus the event's own work.
        """
        time, _priority, seq, event = heappop(self._queue)
        if event.live(seq):
            self.now = time
            event.fire()
