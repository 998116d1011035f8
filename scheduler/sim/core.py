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
the order its SimGrid actors wake up. The recorded transcripts in
``data/transcripts`` show this order (checked over all 16 runs):

- submissions come before completions (``chaos-samesubmit``, t = 20, 30, 40, 50, 60:
  three ``JOB_SUBMITTED`` then the ``JOB_COMPLETED`` of the job started 10 s earlier);
- a ``REQUESTED_CALL`` comes before completions (``chaos-walltime120`` and
  ``chaos-generic-events-walltime120``, t = 30) and before machine events
  (``chaos-events-paper800``, t = 400);
- external events keep the order of their file (``chaos-generic-events-walltime120``,
  t = 300: ``event_machine_available`` then the forwarded ``user_specific_type``);
- completions at one instant come in the order the jobs were started (every one of
  the 130 instants with several completions, in all transcripts);
- ``no_more_static_job_to_submit`` and ``no_more_external_event_to_occur`` come after
  everything else of their instant (``chaos-samesubmit``, t = 60; in the other runs
  Batsim even sends them in a message of their own at the same time).

Pairs the transcripts never show at one instant (a submission and a call, a
submission or a call and an external event, an external event and a completion) follow
the constants' order below. Events caused by the scheduler's own decisions (kill
acknowledgements, registration acknowledgements, completions of zero-length jobs) come
in a follow-up message at the same time, as in Batsim; they are not tie-broken here.
"""

from __future__ import annotations

import math
from heapq import heappop, heappush
from typing import Protocol

__all__ = ["CALL", "COMPLETION", "DECISION", "END_OF_INPUT", "EXTERNAL", "SUBMISSION",
           "Event", "EventQueue"]

DECISION = 0.5
"""Decisions stamped later than Batsim's clock: after the submissions of their instant.

Batsim applies each decision at its timestamp, sleeping until then if needed (a reply
with ``now`` 1595.000051 to a message sent at the internal time 1595.0000506 starts its
jobs at 1595.000051). The scheduler saw nothing of that instant yet, so its decisions
come before Batsim's completions, calls and external events there, but after the static
submissions: batsched ``killer`` stamps a KILL_JOB 10 s ahead; at t = 510 Batsim sends
the JOB_SUBMITTED due then before the JOB_KILLED it answers
(``tests/data/batsim421/killer-walltime120.jsonl``, message 53; issue 17, case 3).
"""

SUBMISSION = 0
"""Static job submissions: win over every other event of their instant."""

CALL = 1
"""REQUESTED_CALL: after submissions, before external events and completions."""

EXTERNAL = 2
"""External events (machine (un)availability, forwarded events): before completions."""

COMPLETION = 3
"""Job completions (success, failure, walltime): after submissions, calls and events."""

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
    >>> _ = q.schedule(Say(q, "completion"), COMPLETION, 5.0)
    >>> _ = q.schedule(Say(q, "submission"), SUBMISSION, 5.0)
    >>> while q.peek() < math.inf:
    ...     q.step()
    5.0 submission
    5.0 completion
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
        Batsim message). Runtime complexity: O(log n) per entry popped, plus the events'
        own work.
        """
        queue = self._queue
        while queue:
            head = queue[0]
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
