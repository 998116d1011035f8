"""Batsim's message latencies: the embedded simulator on a platform whose links take time.

Batsim 4.2.1 is a set of SimGrid actors that talk to one ``server`` actor on the master
host (``batsim.cpp``, ``server.cpp``); every message is a blocking 1-byte ``put`` on the
server's mailbox (``ipp.cpp``), and the server receives one message at a time. On a
platform with latencies, a message therefore costs its route's latency plus one byte
over its narrowest link (:mod:`.routes`), and waits while the server receives earlier
ones. :class:`LatencySimulator` replays that machinery, actor by actor:

- the static job submitter (one per workload, on the master host,
  ``job_submitter.cpp``): SUBMITTER_HELLO, then batches of the jobs due, sleeping
  ``subtime - (time it last woke up)`` *after* each blocking put, so that its clock
  drifts by one message per batch, then SUBMITTER_BYE; the event submitter alike;
- the scheduler's reply (``network.cpp``, ``protocol.cpp``): every decision is a message
  of its own, sent in order (sleeping until its timestamp if later), then SCHED_READY;
  a job starts when its EXECUTE_JOB reaches the server;
- a job runs on its first machine and reports JOB_COMPLETED from there
  (``jobs_execution.cpp``); a killer and a CALL_ME_LATER waiter report from the master;
- the server (``server.cpp``) sends the scheduler what it gathered once the scheduler is
  ready *and its mailbox is empty*, so messages queued behind one another are batched.

Within one instant, SimGrid wakes the actors of a finished communication in the order
they began to wait on it: the server first when it was already waiting, the sender
first when its message had to queue. Everything else is :class:`~.engine.Simulator`'s
bookkeeping (jobs, profiles, machines, checks, records), unchanged.
"""

from __future__ import annotations

import logging
import time as _time
from collections import deque
from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from batpolicy.errors import ConfigError, InvalidDecision
from batpolicy.platforms.model import Platform
from batpolicy.protocol import types as t
from batpolicy.scheduler.io.model import JobSpec, Workload
from batpolicy.scheduler.sim.bookkeeping import SimJob
from batpolicy.scheduler.sim.engine import Scheduler, Simulator
from batpolicy.scheduler.sim.options import SimOptions
from batpolicy.scheduler.sim.result import JobRecord, SimResult
from batpolicy.scheduler.sim.routes import Routes, UnsupportedRoute, read_routes
from batpolicy.scheduler.sim.wire import wire_time

__all__ = ["LatencySimulator", "MessageDelays", "make_simulator", "message_delays"]

log = logging.getLogger(__name__)

_NO_MORE_JOBS = t.NotifyType.NO_MORE_STATIC_JOB_TO_SUBMIT.value
_NO_MORE_EVENTS = t.NotifyType.NO_MORE_EXTERNAL_EVENT_TO_OCCUR.value


class MessageDelays:
    """How long a Batsim message takes from a host to the master host (L07 phases)."""

    def __init__(self, routes: Routes, master: str, machines: Sequence[str]) -> None:
        self._routes = routes
        self.master = master
        self.machines = list(machines)
        self._to_master = lru_cache(maxsize=None)(self._compute)
        self.from_master = self._to_master(master)

    def _compute(self, host: str) -> tuple[float, float]:
        return self._routes.message_time(host, self.master)

    def from_machine(self, machine: int) -> tuple[float, float]:
        """(latency, transfer) of a message from machine id ``machine`` to the server."""
        return self._to_master(self.machines[machine])

    def has_latency(self) -> bool:
        """Whether any message of this platform takes a non-zero latency."""
        return self.from_master[0] > 0 or any(
            self._to_master(name)[0] > 0 for name in self.machines)


def _master_name(routes: Routes, platform: Platform) -> str | None:
    known = {m.name for m in platform.machines} | {m.name for m in platform.storage}
    candidates = sorted(routes.hosts() - known)
    if "master_host" in candidates:
        return "master_host"
    return candidates[0] if len(candidates) == 1 else None


def message_delays(platform: Platform, mmax: int | None = None) -> MessageDelays | None:
    """The message delays of ``platform``'s file, or None.

    None if it has no file or its routing is not modelled (then the simulator runs
    without latencies, with a warning).
    """
    if platform.source is None or not Path(platform.source).is_file():
        return None
    try:
        routes = read_routes(platform.source)
        master = _master_name(routes, platform)
        if master is None:
            raise UnsupportedRoute("cannot tell which host is the master")
        machines = [m.name for m in platform.machines]
        delays = MessageDelays(routes, master, machines[:mmax] if mmax else machines)
        for machine in range(len(delays.machines)):  # every route now: fail here, not mid-run
            delays.from_machine(machine)
        return delays
    except (UnsupportedRoute, KeyError, ValueError, OSError) as exc:
        log.warning("platform %s: message latencies not modelled (%s); simulating as on a "
                    "zero-latency platform", platform.source, exc)
        return None


def make_simulator(workloads: Sequence[Workload], platform: Platform, *,
                   events: Iterable[Any] = (), options: SimOptions | None = None,
                   on_record: Callable[[JobRecord], None] | None = None,
                   zero_latency: bool = False) -> Simulator:
    """A :class:`LatencySimulator` if the platform's messages take time, else a :class:`Simulator`.

    With ``zero_latency``, always a :class:`Simulator` (Batsim on a zero-latency platform).
    """
    if not zero_latency:
        delays = message_delays(platform, options.mmax if options else None)
        if delays is not None and delays.has_latency():
            return LatencySimulator(workloads, platform, delays, events=events,
                                    options=options, on_record=on_record)
    return Simulator(workloads, platform, events=events, options=options,
                     on_record=on_record)


# ---------------------------------------------------------------------- actors
@dataclass(slots=True)
class _Sleep:
    duration: float


@dataclass(slots=True)
class _Put:
    """A message to the server: its L07 phases and what the server does on receiving it."""

    delay: tuple[float, float]
    on_receive: Callable[[], None]
    sender: _Actor | None = None
    server_was_waiting: bool = False


Program = Generator[_Sleep | _Put, None, None]


class _Actor:
    """A SimGrid actor: a generator yielding sleeps and blocking puts."""

    __slots__ = ("sim", "program")

    def __init__(self, sim: LatencySimulator, program: Program) -> None:
        self.sim = sim
        self.program = program

    def step(self) -> None:
        """Run until the next blocking call."""
        try:
            command = next(self.program)
        except StopIteration:
            return
        if isinstance(command, _Sleep):
            self.sim.at(self.sim.now + command.duration, self.step)
        else:
            command.sender = self
            self.sim.post(command)


class _Call:
    """A heap event running a callback (an actor waking up, a transfer ending)."""

    __slots__ = ("callback",)

    def __init__(self, callback: Callable[[], None]) -> None:
        self.callback = callback

    def live(self, seq: int) -> bool:
        """Always current."""
        return True

    def fire(self) -> None:
        """Run the callback."""
        self.callback()


def _restamp(events: list[t.Event], stamp: float) -> list[t.Event]:
    return [replace(e, timestamp=stamp) for e in events]  # type: ignore[type-var]


class LatencySimulator(Simulator):
    """:class:`Simulator` with Batsim's message latencies (see the module docstring).

    Runtime complexity: O(log n) heap work per message, as :class:`Simulator`.
    """

    def __init__(self, workloads: Sequence[Workload], platform: Platform,
                 delays: MessageDelays, *, events: Iterable[Any] = (),
                 options: SimOptions | None = None,
                 on_record: Callable[[JobRecord], None] | None = None) -> None:
        self.delays = delays
        self._workloads = list(workloads)
        super().__init__(workloads, platform, events=events, options=options,
                         on_record=on_record)
        self._mailbox: deque[_Put] = deque()
        self._server_waiting = False
        self._sched_ready = False
        self._ended = False
        self._scheduler: Scheduler | None = None
        self._job_submitters = 0
        self._event_submitters = 0

    # ------------------------------------------------------------ heap plumbing
    @property
    def now(self) -> float:
        """Batsim's current (unrounded) simulated time. Runtime complexity: O(1)."""
        return self._queue.now

    def at(self, when: float, callback: Callable[[], None]) -> None:
        """Run ``callback`` at ``when`` (after what is already due then). O(log n)."""
        self._queue.schedule(_Call(callback), 0, at=when)

    def _seed_queue(self) -> None:
        """No heap events up front: the submitters are actors started by :meth:`run`."""

    # ------------------------------------------------------------ the server's mailbox
    def post(self, put: _Put) -> None:
        """A blocking put on the server's mailbox: received at once if the server waits."""
        if self._server_waiting:
            self._server_waiting = False
            put.server_was_waiting = True
            self._transfer(put)
        else:
            self._mailbox.append(put)

    def _transfer(self, put: _Put) -> None:
        latency, transfer = put.delay
        self.at((self.now + latency) + transfer, lambda: self._received(put))

    def _received(self, put: _Put) -> None:
        sender = put.sender
        if put.server_was_waiting:
            if sender is not None:  # the sender goes on after the server, this instant
                self.at(self.now, sender.step)
            self._serve(put)
        else:
            if sender is not None:
                sender.step()
            self._serve(put)

    def _serve(self, put: _Put) -> None:
        """server_process: handle one message, maybe talk to the scheduler, receive again."""
        put.on_receive()
        if self._sched_ready and not self._mailbox and not self._ended:
            if self._outbox:
                self._send()
            elif self._can_end():
                self._end(self._scheduler)  # type: ignore[arg-type]
                self._ended = True
        if self._mailbox:
            self._transfer(self._mailbox.popleft())
        else:
            self._server_waiting = True

    def _send(self) -> None:
        """generate_and_send_message, then the REQ-REP actor with the scheduler's reply."""
        events, self._outbox = self._outbox, []
        self._sched_ready = False
        reply = self._ask(events)
        self.at(self.now, _Actor(self, self._reply_program(reply)).step)

    def _ask(self, events: list[t.Event]) -> t.Reply:
        now = self.now
        request = t.Request(wire_time(now), tuple(events))
        if self._to_delete:
            self._collect()
        began = _time.perf_counter()
        reply = self._scheduler(request)  # type: ignore[misc]
        self._result.scheduling_time += _time.perf_counter() - began
        self._result.nb_messages += 1
        if not isinstance(reply, t.Reply):
            raise InvalidDecision(f"the scheduler answered {type(reply).__name__}, not a Reply "
                                  f"(message #{self._result.nb_messages}, t={now})")
        return reply

    # ------------------------------------------------------------ actors' programs
    def _reply_program(self, reply: t.Reply) -> Program:
        """request_reply_scheduler_process: one message per decision, then SCHED_READY."""
        master = self.delays.from_master
        for decision in reply.decisions:
            handler = self._handlers.get(type(decision))
            if handler is None:
                raise InvalidDecision(f"{type(decision).__name__} is not a decision Batsim "
                                      f"accepts (t={self.now})")
            stamp = decision.timestamp if decision.timestamp is not None else reply.now
            if stamp > self.now:
                yield _Sleep(stamp - self.now)
            yield _Put(master, self._applier(handler, decision))
        if reply.now > self.now:
            yield _Sleep(reply.now - self.now)
        yield _Put(master, self._on_sched_ready)

    def _applier(self, handler: Callable[[Any], None], decision: Any) -> Callable[[], None]:
        def apply() -> None:
            """The server applies the decision (a killer kills at once)."""
            handler(decision)
            if self._kills:
                self._kill_now()
        return apply

    def _on_sched_ready(self) -> None:
        self._sched_ready = True

    def _kill_now(self) -> None:
        """killer_process: kills at once, reports KILLING_DONE from the master host."""
        before = len(self._outbox)
        self._perform_kills()
        done = self._outbox[before:]
        del self._outbox[before:]
        self._report_later(self.delays.from_master, done)

    def _report_later(self, delay: tuple[float, float], events: list[t.Event],
                      then: Callable[[], None] | None = None) -> None:
        """An actor without a continuation puts events for the server (stamped on arrival)."""
        def on_receive() -> None:
            """The server receives the events, stamped now."""
            if then is not None:
                then()
            self._outbox.extend(_restamp(events, wire_time(self.now)))
        self.post(_Put(delay, on_receive))

    def _submitter_program(self, specs: list[JobSpec]) -> Program:
        """static_job_submitter_process (job_submitter.cpp)."""
        master = self.delays.from_master
        yield _Put(master, lambda: None)  # SUBMITTER_HELLO
        current = self.now
        batch: list[JobSpec] = []
        for spec in specs:
            if spec.subtime > current:
                if batch:
                    yield _Put(master, self._submission(batch))
                    batch = []
                yield _Sleep(spec.subtime - current)
                current = self.now
            batch.append(spec)
        if batch:
            yield _Put(master, self._submission(batch))
        yield _Put(master, self._job_submitter_bye)

    def _submission(self, specs: list[JobSpec]) -> Callable[[], None]:
        return lambda: self.submit_static(specs)

    def _job_submitter_bye(self) -> None:
        self._job_submitters -= 1
        if self._job_submitters == 0:
            self._static_done = True
            self._outbox.append(t.Notify(wire_time(self.now), _NO_MORE_JOBS))

    def _event_program(self, events: list[Any]) -> Program:
        """static_event_submitter_process (event_submitter.cpp)."""
        master = self.delays.from_master
        yield _Put(master, lambda: None)  # SUBMITTER_HELLO
        current = self.now
        batch: list[Any] = []
        for event in events:
            if float(event.timestamp) > current:
                if batch:
                    yield _Put(master, self._occurrence(batch))
                    batch = []
                yield _Sleep(float(event.timestamp) - current)
                current = self.now
            batch.append(event)
        if batch:
            yield _Put(master, self._occurrence(batch))
        yield _Put(master, self._event_submitter_bye)

    def _occurrence(self, events: list[Any]) -> Callable[[], None]:
        def occur() -> None:
            """The server receives the external events."""
            for event in events:
                Simulator.on_external_event(self, event)
        return occur

    def _event_submitter_bye(self) -> None:
        self._event_submitters -= 1
        if self._event_submitters == 0:
            self._events_done = True
            self._outbox.append(t.Notify(wire_time(self.now), _NO_MORE_EVENTS))

    # ------------------------------------------------------------ heap events of the engine
    def on_job_end(self, job: SimJob) -> None:
        """The job's actor ends (bookkeeping now) and reports from its first machine."""
        before = len(self._outbox)
        super().on_job_end(job)
        done = self._outbox[before:]
        del self._outbox[before:]
        first = job.alloc[0] if job.alloc is not None and len(job.alloc) else 0
        self._report_later(self.delays.from_machine(first), done)

    def on_call(self) -> None:
        """waiter_process: WAITING_DONE from the master host, REQUESTED_CALL on arrival."""
        if self._ended:
            return

        def arrived() -> None:
            """The server receives WAITING_DONE: REQUESTED_CALL."""
            self._waiters -= 1
            self._outbox.append(t.RequestedCall(wire_time(self.now)))
        self.post(_Put(self.delays.from_master, arrived))

    # ------------------------------------------------------------ the run
    def run(self, scheduler: Scheduler) -> SimResult:
        """Simulate until SIMULATION_ENDS, asking ``scheduler`` whenever Batsim would."""
        if self._started:
            raise ConfigError("a Simulator runs once; build a new one")
        self._started = True
        self._scheduler = scheduler
        began = _time.perf_counter()
        queue = self._queue
        try:
            by_workload: dict[str, list[JobSpec]] = {}
            for spec in self._static:
                by_workload.setdefault(spec.id.split("!", 1)[0], []).append(spec)
            for name in sorted(by_workload):  # Batsim: one submitter per workload
                self._job_submitters += 1
                self.at(0.0, _Actor(self, self._submitter_program(by_workload[name])).step)
            if self._external_events:
                self._event_submitters = 1
                self.at(0.0, _Actor(self, self._event_program(
                    list(self._external_events))).step)
            self.at(0.0, self._server_start)
            while not self._ended:
                if self._dirty and queue.peek() > queue.now:
                    self._end_of_instant()  # once per instant, after its starts and ends
                if queue.peek() == float("inf"):
                    raise self._stuck()
                queue.step()
        finally:
            self._result.simulation_time += _time.perf_counter() - began
        return self.result()

    def _server_start(self) -> None:
        """server_process: SIMULATION_BEGINS first, then receive."""
        begins = self._simulation_begins()
        reply = self._scheduler(t.Request(0.0, (begins,)))  # type: ignore[misc]
        self._result.nb_messages += 1
        self.at(self.now, _Actor(self, self._reply_program(reply)).step)
        if self._mailbox:
            self._transfer(self._mailbox.popleft())
        else:
            self._server_waiting = True
