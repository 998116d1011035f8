"""Batsim's message latencies: the embedded simulator on a platform whose links take time.

Batsim 4.2.1 is a set of SimGrid actors that talk to one ``server`` actor on the master
host (``batsim.cpp``, ``server.cpp``); every message is a blocking 1-byte ``put`` on the
server's mailbox (``ipp.cpp``), and the server receives one message at a time. On a
platform with latencies, a message therefore costs its route's latency plus one byte
over its narrowest link (:mod:`.routes`), and waits while the server receives earlier
ones. :class:`LatencyDriver`, a driver (strategy) of the one engine
(:class:`~.engine.simulator.Simulator`), replays that machinery, actor by actor:

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
first when its message had to queue. Everything else is done by the engine's parts
(:mod:`.parts`: jobs, profiles, machines, checks, records), unchanged.

The actors' primitives (sleeps, blocking puts) are in :mod:`.actors`, the
server's mailbox loop in :mod:`.server` and the submitters in :mod:`.submitters`;
this module runs the other actors (the reply, killers, waiters, jobs' and switches'
reports) and the loop over dates.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Any

from batpolicy.errors import InvalidDecision
from batpolicy.io.result import JobRecord
from batpolicy.io.workload import Workload
from batpolicy.platforms.model import Platform
from batpolicy.protocol import types as t
from batpolicy.simulator.delays import MessageDelays, message_delays
from batpolicy.simulator.engine.decisions import MIN_WAIT
from batpolicy.simulator.engine.parts import Parts
from batpolicy.simulator.engine.server import Scheduler
from batpolicy.simulator.engine.simulator import Simulator
from batpolicy.simulator.engine.validation import check_call_me_later
from batpolicy.simulator.json_quirks import wire_time
from batpolicy.simulator.latency.actors import (
    SAME_DATE,
    Call,
    Program,
    Put,
    Sleep,
    restamp,
)
from batpolicy.simulator.latency.server import ServerProcess
from batpolicy.simulator.latency.submitters import Submitters
from batpolicy.simulator.options import SimOptions
from batpolicy.simulator.records import SimJob

__all__ = ["LatencyDriver", "LatencySimulator", "MessageDelays", "make_simulator",
           "message_delays"]

#: Decisions whose handler creates an actor (server.cpp: the job's, a killer, a waiter).
_SPAWNING = (t.ExecuteJob, t.KillJob, t.CallMeLater)


def make_simulator(workloads: Sequence[Workload], platform: Platform, *,
                   events: Iterable[Any] = (), options: SimOptions | None = None,
                   on_record: Callable[[JobRecord], None] | None = None,
                   zero_latency: bool = False) -> Simulator:
    """The :class:`Simulator` with the latency driver where Batsim's clock can show.

    The latency driver runs on a platform file when its messages take time that shows
    (a latency, or a transfer that shows at Batsim's 6 decimals,
    :meth:`~.MessageDelays.transfer_shows`), and whenever the jobs run on Batsim's own
    job model (the parallel-task model: a JSON workload, or compute sharing). There
    SimGrid's clock is a running sum of solver deltas (``EngineImpl::solve``:
    ``now_ += time_delta``) and every sleep counts down by those deltas
    (``Action::update_max_duration``), so an actor can wake an ulp away from the date
    a closed form gives, and a job started by that wake-up shows it (``waiting_time``
    -0.000000, a machine_states row at the earlier date); the latency driver carries
    the submitters' and the reply's sleeps on the parallel-task model's solver as
    Batsim does. The profile job model (SWF traces) keeps the zero-latency driver's
    exact dates, whose every event is a closed form.

    With ``zero_latency``, always the zero-latency driver (Batsim on a zero-latency
    platform; 2-5x cheaper on a JSON workload, at the price of those ulps).
    """
    if not zero_latency:
        delays = message_delays(platform, options.mmax if options else None)
        if delays is not None and (delays.has_latency() or delays.transfer_shows()
                                   or _batsims_jobs(workloads, options)):
            return LatencySimulator(workloads, platform, delays, events=events,
                                    options=options, on_record=on_record)
    return Simulator(workloads, platform, events=events, options=options,
                     on_record=on_record)


def _batsims_jobs(workloads: Sequence[Workload], options: SimOptions | None) -> bool:
    """Whether every job runs on the parallel-task model, Batsim's own job model.

    :func:`~.jobmodels.choice.with_default_model` picks it for a Batsim JSON workload
    or compute sharing; per-workload job models (the profile model beside it) keep the
    zero-latency driver.
    """
    from batpolicy.simulator.jobmodels.choice import with_default_model

    chosen = with_default_model(options if options is not None else SimOptions(), workloads)
    return chosen.default_job_model == "ptask" and not chosen.job_models


class LatencySimulator(Simulator):
    """The one :class:`Simulator` with :class:`LatencyDriver`: a constructor kept by name.

    It adds nothing to the engine; ``Simulator(..., driver=LatencyDriver.factory(delays))``
    is the same.
    """

    def __init__(self, workloads: Sequence[Workload], platform: Platform,
                 delays: MessageDelays, *, events: Iterable[Any] = (),
                 options: SimOptions | None = None,
                 on_record: Callable[[JobRecord], None] | None = None) -> None:
        super().__init__(workloads, platform, events=events, options=options,
                         on_record=on_record, driver=LatencyDriver.factory(delays))
        self.delays = delays

    def end_clock(self) -> float:
        """The time the reply to SIMULATION_ENDS (SCHED_READY) reaches the server.

        It leaves at :meth:`~.Simulator.acknowledged_at`: the reply's ``now`` when later.
        """
        latency, transfer = self.delays.from_master
        return (self.acknowledged_at() + latency) + transfer


class LatencyDriver:
    """Batsim's actors and server over a platform with latencies (module docstring).

    Runtime complexity: O(log n) heap work per message, as the zero-latency driver.
    """

    def __init__(self, parts: Parts, external_events: list[Any],
                 delays: MessageDelays) -> None:
        self.delays = delays
        self._parts = parts
        self._books = parts.books
        parts.books.messages_take_time = True
        self._queue = parts.queue
        self._server = parts.server
        self._decisions = parts.decisions
        self._outbox = parts.books.outbox
        self._external_events = external_events
        #: Batsim's server actor: its mailbox and the scheduler talk.
        self._process = ServerProcess(self, parts)
        #: Actors making simcalls at this date before their put: [rounds left, the put].
        self._later: list[list[Any]] = []
        #: Sleeps an actor on the parallel-task model (with the server process's
        #: ``network``); None: the actors' sleeps end at their dates in closed form.
        self._sleeper: Callable[[float, Callable[[], None]], None] | None = None
        if parts.energy is not None:  # switch actors report from their machine
            parts.energy.deliver = self._switched

    def _switched(self, machine: int, on_receive: Callable[[], None]) -> None:
        """switch_on/off_machine_process: SWITCHED_ON/OFF put from the machine.

        After its one flop the actor sets the machine's pstate (``Host::set_pstate``, a
        simcall) before it puts: one scheduling round later, behind the puts of the
        actors woken at the same date that put at once (the reply actor's next message
        after a decision the server received then).
        """
        def put() -> None:
            """The actor's put, once its pstate is set."""
            self.post(Put(self.delays.from_machine(machine), on_receive, src=machine))
        self._process.reports_in_flight += 1  # the server must not end meanwhile
        self._later.append([1, put])

    @classmethod
    def factory(cls, delays: MessageDelays) -> Callable[[Parts, list[Any]], LatencyDriver]:
        """The driver factory :class:`~.engine.simulator.Simulator` takes, for these delays."""
        return partial(cls, delays=delays)

    # ------------------------------------------------------------ heap plumbing
    @property
    def now(self) -> float:
        """Batsim's current (unrounded) simulated time. Runtime complexity: O(1)."""
        return self._queue.now

    def at(self, when: float, callback: Callable[[], None]) -> None:
        """Run ``callback`` at ``when`` (after what is already due then). O(log n)."""
        self._queue.schedule(Call(callback), 0, at=when)

    def sleep(self, duration: float, then: Callable[[], None]) -> None:
        """An actor sleeps ``duration`` seconds (``this_actor::sleep_for``), then ``then``.

        With the messages on the parallel-task model, a sleep action of that model: its
        countdown and SimGrid's summed clock decide which of two actions due a few ulps
        apart ends first. Otherwise at ``now + duration``.
        """
        if self._sleeper is not None:
            self._sleeper(duration, then)
        else:
            self.at(self.now + duration, then)

    def post(self, put: Put) -> None:
        """A blocking put on the server's mailbox (:class:`~.server.ServerProcess`)."""
        self._process.post(put)

    # ------------------------------------------------------------ actors' programs
    def reply_program(self, reply: t.Reply) -> Program:
        """request_reply_scheduler_process: one message per decision, then SCHED_READY."""
        master = self.delays.from_master
        handlers = self._decisions.handlers
        for decision in reply.decisions:
            handler = handlers.get(type(decision))
            if handler is None:
                raise InvalidDecision(f"{type(decision).__name__} is not a decision Batsim "
                                      f"accepts (t={self.now})")
            stamp = decision.timestamp if decision.timestamp is not None else reply.now
            if stamp > self.now:
                yield Sleep(stamp - self.now)
            yield Put(master, self._applier(handler, decision),
                       spawns=isinstance(decision, _SPAWNING))
        if reply.now > self.now:
            yield Sleep(reply.now - self.now)
        yield Put(master, self._on_sched_ready)

    def _applier(self, handler: Callable[[Any], None], decision: Any) -> Callable[[], None]:
        if self._sleeper is not None and isinstance(decision, t.CallMeLater):
            return lambda: self._call_me_later(decision)

        def apply() -> None:
            """The server applies the decision (a killer kills at once)."""
            handler(decision)
            if self._decisions.kills:
                self._kill_now()
        return apply

    def _call_me_later(self, decision: t.CallMeLater) -> None:
        """server_on_call_me_later, then waiter_process's sleep on the parallel-task model.

        The waiter is an actor the server creates: it starts sleeping one scheduling
        round later, ``max(target - now, 1e-5)`` seconds (``jobs_execution.cpp``).
        """
        check_call_me_later(self._books, decision)
        self._books.waiters += 1
        self.at(self.now, lambda: self.sleep(max(decision.at - self.now, MIN_WAIT),
                                             self.on_call))

    def _on_sched_ready(self) -> None:
        self._process.sched_ready = True

    def _kill_now(self) -> None:
        """killer_process: kills at once, reports KILLING_DONE from the master host."""
        outbox = self._outbox
        before = len(outbox)
        self._decisions.perform_kills()
        done = outbox[before:]
        del outbox[before:]
        # the killer is an actor the server creates: it puts KILLING_DONE one scheduling
        # round later, after the puts of the actors woken with the server (the reply
        # actor's next decision or SCHED_READY). Its put is dated by the date the server
        # received KILL_JOB: with the messages on the parallel-task model, an update of
        # the solver, so exact (a SCHED_READY received 1e-10 s later sees it: seed 392)
        self.at(self.now, lambda: self._report_later(self.delays.from_master, done,
                                                     exact=True))

    def _report_later(self, delay: tuple[float, float], events: list[t.Event],
                      then: Callable[[], None] | None = None, src: int | None = None,
                      exact: bool = False) -> None:
        """An actor without a continuation puts events for the server (stamped on arrival)."""
        self._process.reports_in_flight += 1

        def on_receive() -> None:
            """The server receives the events, stamped now."""
            self._process.reports_in_flight -= 1
            if then is not None:
                then()
            self._outbox.extend(restamp(events, wire_time(self.now)))
        self.post(Put(delay, on_receive, src=src, exact=exact))

    # ------------------------------------------------------------ heap events of the engine
    def on_job_end(self, job: SimJob) -> None:
        """The job's actor ends (bookkeeping now) and reports from its first machine.

        With ``-E`` the actor first reads the energy of the job's machines and of every
        host (``execute_job_process``: ``consumed_energy_on_machines``, ``add_job_end``);
        each host SimGrid has not updated at this date costs a simcall
        (``HostEnergy::get_consumed_energy``), so its JOB_COMPLETED put comes that many
        scheduling rounds later, after the puts of the actors woken with it. The job's
        machines were updated when its last task ended.
        """
        energy = self._parts.energy
        rounds = 0 if energy is None or job.alloc is None else energy.stale_hosts(job.alloc)
        outbox = self._outbox
        before = len(outbox)
        self._server.job_end(job)
        done = outbox[before:]
        del outbox[before:]
        first = job.alloc[0] if job.alloc is not None and len(job.alloc) else 0
        reported = job.model.job_reported
        in_solver = job.model.in_solver

        def report() -> None:
            """The actor puts JOB_COMPLETED."""
            self._report_later(self.delays.from_machine(first), done,
                               None if reported is None else lambda: reported(job, self.now),
                               src=first, exact=in_solver is not None and in_solver(job))
        if rounds:
            self._process.reports_in_flight += 1  # the server must not end meanwhile
            self._later.append([rounds, report])
        else:
            report()

    def _last_rounds(self) -> None:
        """The model's next update comes: the actors still making simcalls put first."""
        while self._later:
            self._next_round()

    def _next_round(self) -> None:
        """One more scheduling round at this date for the actors still making simcalls.

        Called once everything else due at this date is done (the other actors' puts,
        the parallel-task model's update): an actor ``rounds`` simcalls behind acts after
        them, the fewer simcalls the sooner.
        """
        later = self._later
        done = []
        for entry in later:
            entry[0] -= 1
            if entry[0] <= 0:
                done.append(entry)
        for entry in done:
            later.remove(entry)
            self._process.reports_in_flight -= 1
            entry[1]()

    def on_call(self) -> None:
        """waiter_process: WAITING_DONE from the master host, REQUESTED_CALL on arrival."""
        if self._process.ended:
            return

        def arrived() -> None:
            """The server receives WAITING_DONE: REQUESTED_CALL."""
            self._books.waiters -= 1
            self._outbox.append(t.RequestedCall(wire_time(self.now)))
        self.post(Put(self.delays.from_master, arrived))

    # ------------------------------------------------------------ the run
    def run(self, scheduler: Scheduler) -> None:
        """Simulate until SIMULATION_ENDS, asking ``scheduler`` whenever Batsim would."""
        process = self._process
        process.scheduler = scheduler
        queue = self._queue
        for model in self._parts.models.configured():
            network = model.message_network
            if network is not None:
                process.network = network(self._books, self._parts.ends, self.delays.master)
                if process.network is not None:
                    self._sleeper = model.actor_sleep
                    process.solver_updates = model.solver_updates
                    model.before_update(self._last_rounds)
                break
        Submitters(self, self._parts, self.delays).start(self._external_events)
        self.at(0.0, process.start)
        ends = self._parts.ends
        while not process.ended:
            if ends.dirty and queue.peek() > queue.now:
                ends.end_of_instant()  # once per instant, after its starts and ends
            if self._later and not ends.dirty and queue.peek() > queue.now:
                self._next_round()
                continue
            time = queue.peek()
            if time == float("inf"):
                raise self._server.stuck()
            # SimGrid ends the actions due at one date in their creation order
            # (HostL07Model::update_actions_state): a job's end and a message's arrival
            # computed to the same date up to rounding come in the order they began; an
            # event dated by the parallel-task solver itself (its next update) is exact
            # and keeps its own date
            for seq, due, event in queue.pop_near(time, SAME_DATE):
                if event.live(seq):
                    if due > time:
                        postpone = getattr(event, "postpone", None)
                        if postpone is not None:
                            postpone(due)
                            continue
                    queue.now = max(queue.now, due)
                    event.fire()
