"""The embedded simulator: Batsim 4.2.1 at the message level, without Batsim.

:class:`Simulator` emits the typed :class:`~batpolicy.protocol.types.Request` messages
Batsim would send, hands each to a scheduler callable, and applies the typed
:class:`~batpolicy.protocol.types.Reply` decisions at that time, checking them as
Batsim does (:mod:`.validation`). The scheduler may be ``Dispatcher(policy).handle``, a
socket round-trip to any Batsim scheduler, or a recorded conversation.

It is one engine built from parts (:mod:`.parts`: clock and heap, Batsim's books, job
models, moving ends, accounting, decisions, server) and one driver, the strategy that
decides when messages go and come back: :class:`~.zero_latency.ZeroLatencyDriver`
(Batsim on a zero-latency platform, the default) or
:class:`~.latency.driver.LatencyDriver` (Batsim's message latencies, see
:func:`~.latency.driver.make_simulator`).
"""

from __future__ import annotations

import time as _time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from batpolicy.errors import ConfigError
from batpolicy.io.result import JobRecord, SimResult
from batpolicy.io.workload import Workload
from batpolicy.platforms.model import Platform
from batpolicy.protocol.intervals import MachineSet
from batpolicy.simulator.actors import Reactions
from batpolicy.simulator.engine.parts import Parts
from batpolicy.simulator.engine.server import Scheduler
from batpolicy.simulator.engine.zero_latency import ZeroLatencyDriver
from batpolicy.simulator.instant import EndListener
from batpolicy.simulator.options import SimOptions
from batpolicy.simulator.records import ProfileTable, SimJob, SimMachines

if TYPE_CHECKING:
    from batpolicy.io.paje import PajeTraceWriter

__all__ = ["Driver", "DriverFactory", "Scheduler", "Simulator"]


class Driver(Reactions, Protocol):
    """The strategy that decides when Batsim's messages go out and come back."""

    def run(self, scheduler: Scheduler) -> None:
        """Simulate until SIMULATION_ENDS, asking ``scheduler`` whenever Batsim would."""


#: Builds a driver over the run's parts and its external events (sorted by time).
DriverFactory = Callable[[Parts, list[Any]], Driver]


class Simulator:
    """Batsim 4.2.1 without Batsim: workloads, a platform, external events, Batsim's flags.

    ``on_record`` is called with every :class:`JobRecord` as the job ends (e.g.
    :meth:`~.outputs.JobsCsvWriter.write`), so outputs stay on disk if a run stops on an error;
    :meth:`result` gives the totals at any time, after an error included. ``driver``
    builds the message loop (default: Batsim on a zero-latency platform). A simulator
    runs once.

    Runtime complexity: O(log n) heap work per event, O(intervals) per allocation
    check, plus the scheduler's own cost.
    """

    def __init__(self, workloads: Sequence[Workload], platform: Platform, *,
                 events: Iterable[Any] = (), options: SimOptions | None = None,
                 on_record: Callable[[JobRecord], None] | None = None,
                 driver: DriverFactory | None = None) -> None:
        self.options = options if options is not None else SimOptions()
        self.platform = platform
        self.parts = parts = Parts.build(workloads, platform, self.options, on_record)
        external = sorted(events, key=lambda e: e.timestamp)  # stable: file order
        parts.books.events_done = not external
        factory: DriverFactory = driver if driver is not None else ZeroLatencyDriver
        self.driver = factory(parts, external)
        parts.bind(self.driver)
        #: Batsim's jobs by id (those it still holds), profile tables, machines.
        self.jobs: dict[str, SimJob] = parts.books.jobs
        self.tables: dict[str, ProfileTable] = parts.books.tables
        self.machines: SimMachines = parts.books.machines
        self._started = False

    @property
    def now(self) -> float:
        """Batsim's current (unrounded) simulated time. Runtime complexity: O(1)."""
        return self.parts.queue.now

    @property
    def speeds(self) -> list[float]:
        """Current machine speeds (flop/s), by machine id (read by job models)."""
        return self.parts.books.speeds

    def schedule_speed_change(self, at: float, machines: MachineSet, speed: float) -> None:
        """Make ``machines`` compute at ``speed`` flop/s from time ``at`` on.

        Running jobs there are re-planned by their job model (only models that depend on
        speed move). Not a Batsim event: the scheduler is not told.
        """
        self.parts.server.schedule_speed_change(at, machines, speed)

    def set_end_hint(self, listener: EndListener | None) -> None:
        """Tell ``listener(job_id, end)`` every moved planned end, after each instant.

        The one documented way out of the simulator for planned ends (not a Batsim
        message; :mod:`.instant`): ``simulate --expected-ends model`` passes
        :meth:`batpolicy.scheduler.dispatch.Dispatcher.move_expected_end`.
        """
        self.parts.ends.set_listener(listener)

    def trace_machine_states(self, sink: Callable[[list[tuple[float, int, int, int, int, int]]],
                                                  None] | None) -> None:
        """Give ``sink`` the ``machine_states.csv`` rows, a batch at a time, until the run ends.

        A row ``(time, sleeping, switching_on, switching_off, idle, computing)`` where
        Batsim writes one: at every job start and end and power-state change
        (:mod:`batpolicy.io.machine_states`). ``sink`` gets a list it must not
        keep (it is cleared after the call), e.g.
        :meth:`~batpolicy.io.machine_states.MachineStatesCsvWriter.write_rows`;
        the last rows come when :meth:`run` returns or raises. None: no tracing.
        """
        machines = self.parts.books.machines
        machines.rows_sink = sink
        machines.state_rows = [] if sink is not None else None

    def end_clock(self) -> float:
        """Batsim's clock once the scheduler acknowledged SIMULATION_ENDS: its outputs' end.

        On a zero-latency platform the acknowledgement takes no time, but it leaves at
        the reply's ``now`` (:meth:`acknowledged_at`).
        """
        return self.acknowledged_at()

    def acknowledged_at(self) -> float:
        """When the REQ-REP actor sends the SCHED_READY acknowledging SIMULATION_ENDS.

        Batsim 4.2.1's ``JsonProtocolReader::parse_and_apply_message`` sends it with
        ``send_message_at_time(now, ...)`` (``protocol.cpp``), which first sleeps
        ``when - current_time`` if the reply's ``now`` is later than the clock: batsched
        echoes the message's ``now``, rounded to 6 decimals, so up to 5e-7 s later.
        SimGrid 3.32 then adds the sleep's length to its clock (``EngineImpl::solve``:
        ``now_ += time_delta``), hence ``now + (when - now)``, not ``when``. Seed 217
        (``gen-cluster3``): SIMULATION_ENDS at 0.00700464, the reply's ``now`` 0.007005,
        its SCHED_READY received 0.00100064 s later, at 0.00800564: the Pajé trace ends
        at 0.008006, not 0.008005.
        """
        now = self.now
        when = self.parts.server.ends_acknowledged
        return now + (when - now) if when is not None and when > now else now

    @property
    def machine_names(self) -> list[str]:
        """Batsim's machines by id: the compute machines kept, then the storage hosts."""
        return [*self.parts.books.machines.names, *(m.name for m in self.platform.storage)]

    def trace_schedule(self, writer: PajeTraceWriter) -> None:
        """Tell ``writer`` every job start, end and kill: Batsim's ``_schedule.trace``.

        :mod:`.schedule_trace` wraps the run's parts (nothing more per event untraced);
        the caller ends the trace with :meth:`~PajeTraceWriter.finish` after :meth:`run`.
        """
        from batpolicy.simulator.engine.schedule_trace import attach

        attach(self.parts, writer)

    # ---- taps: how an output (:mod:`batpolicy.simulator.outputs`) hears of the run -------
    # Each wraps a callback the engine already makes (the records, a decision's handler) or
    # fills a hook it tests for None, so a run that nobody taps pays nothing more per event.

    def tap_records(self, callback: Callable[[JobRecord], None]) -> None:
        """Also hand ``callback`` each job's record as it is made, before ``on_record``.

        A record is made when a job stops running (completed, killed, walltime reached)
        or is rejected (``record.start`` None), its machines already released.
        """
        accounting = self.parts.accounting
        accounting.on_record = _in_turn(callback, accounting.on_record)

    def tap_decisions(self, kind: type, callback: Callable[[Any], None]) -> None:
        """Call ``callback(decision)`` once each decision of type ``kind`` has been applied.

        ``kind`` is a :mod:`batpolicy.protocol.types` decision (``t.ExecuteJob``,
        ``t.RejectJob``, ``t.RegisterJob``...); the simulator's clock (:attr:`now`) is the
        time it applied.
        """
        handlers = self.parts.decisions.handlers
        apply = handlers[kind]

        def tapped(decision: Any) -> None:
            """Apply the decision, then tell the tap."""
            apply(decision)
            callback(decision)

        handlers[kind] = tapped

    def tap_submissions(self, callback: Callable[[int], None]) -> None:
        """Call ``callback(n)`` when ``n`` of the workloads' jobs are submitted (at :attr:`now`).

        Jobs the scheduler registers are REGISTER_JOB decisions (:meth:`tap_decisions`).
        """
        server = self.parts.server
        server.on_submit = _in_turn(server.on_submit, callback)

    def waiting_and_running(self) -> tuple[int, int]:
        """How many jobs are submitted and neither started nor rejected, and how many run.

        Runtime complexity: O(1).
        """
        books = self.parts.books
        running = len(books.running)
        return books.nb_open - running, running

    def forget_records(self) -> None:
        """Hand each job's record to ``on_record`` and keep none (``result().records`` empty).

        A run's memory is then that of the jobs alive, whatever the trace's length.
        ``result()``'s totals and ``schedule.csv``'s figures are kept as the jobs end.

        With compute sharing the records stay: Batsim's ``time_computing`` is then each
        machine's union of its jobs' runs (:func:`~.accounting.union_busy_time`), taken
        from them at the end.
        """
        if not self.options.compute_sharing:
            self.parts.accounting.keep_records = False

    def job_model_stats(self) -> dict[str, Any]:
        """Statistics of the job models that keep some (co-allocation penalty...)."""
        return self.parts.models.stats()

    def profile_definition(self, workload: str, name: str) -> dict[str, Any]:
        """A profile as registered, even if garbage-collected since. O(1)."""
        return self.parts.books.profile_definition(workload, name)

    def run(self, scheduler: Scheduler) -> SimResult:
        """Simulate until SIMULATION_ENDS, asking ``scheduler`` whenever Batsim would.

        Raises :class:`~batpolicy.errors.InvalidDecision` where Batsim would abort, and when the
        simulation can never end (Batsim would wait forever).
        """
        if self._started:
            raise ConfigError("a Simulator runs once; build a new one")
        self._started = True
        result = self.parts.accounting.result_so_far
        began = _time.perf_counter()
        try:
            self.driver.run(scheduler)
        finally:
            result.simulation_time += _time.perf_counter() - began
            self.parts.books.machines.hand_over()
        return self.result()

    def result(self) -> SimResult:
        """Totals of what was simulated so far (complete after :meth:`run` returned).

        Runtime complexity: O(n) machines, plus O(records x windows) when machines were
        unavailable.
        """
        return self.parts.accounting.result()


def _in_turn(first: Callable[[Any], None] | None,
             then: Callable[[Any], None] | None) -> Callable[[Any], None] | None:
    """One callback calling ``first`` then ``then``; either alone when the other is None.

    A hook nobody taps stays None, so the engine's ``if hook is not None`` test is all an
    untapped run pays per event.
    """
    if first is None:
        return then
    if then is None:
        return first

    def both(value: Any) -> None:
        """``first``, then ``then``."""
        first(value)
        then(value)

    return both
