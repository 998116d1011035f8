"""The parts the engine is built from, and how they are wired for one run.

Each part is an object with a narrow public interface; none shares another's private
state. What they share is the Batsim side's data, :class:`~.books.RunBooks`, through its
named fields:

- :class:`~.core.EventQueue`: the clock and the heap (SimPy's ``Environment``);
- :class:`~.books.RunBooks`: Batsim's jobs, profiles, machines, open counts, the outbox;
- :class:`~batpolicy.simulator.jobmodels.choice.ModelChoice`: which job model runs each job
  (:mod:`batpolicy.simulator.jobmodels.registry`);
- :class:`~.instant.MovingEnds`: each running job's planned completion, and the
  once-per-instant hook that may move it (instant models, the end listener);
- :class:`~.message_clock.InstantMessages`: Batsim's clock between the messages of one
  zero-latency instant;
- :class:`~.accounting.Accounting`: job records and run totals;
- :class:`~.decisions.DecisionApplier`: Batsim's reaction to each decision;
- :class:`~.server.Server`: Batsim's reaction to its actors' messages, and the talk
  with the scheduler.

A driver (:class:`~.zero_latency.ZeroLatencyDriver`,
:class:`~batpolicy.simulator.latency.driver.LatencyDriver`)
decides when each reaction happens; it is the target of the heap events, bound here
with :meth:`Parts.bind`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from batpolicy import __version__
from batpolicy.errors import ConfigError
from batpolicy.io.result import JobRecord, SimResult
from batpolicy.io.workload import Workload
from batpolicy.platforms.model import Platform
from batpolicy.simulator.actors import Reactions
from batpolicy.simulator.books import RunBooks, submission_order
from batpolicy.simulator.core import EventQueue
from batpolicy.simulator.energy.pstates import EnergyPart, build_energy
from batpolicy.simulator.engine.accounting import Accounting
from batpolicy.simulator.engine.decisions import DecisionApplier
from batpolicy.simulator.engine.message_clock import InstantMessages
from batpolicy.simulator.engine.server import Server
from batpolicy.simulator.instant import InstantModel, MovingEnds
from batpolicy.simulator.jobmodels.choice import ModelChoice, with_default_model
from batpolicy.simulator.options import SimOptions
from batpolicy.simulator.records import SimMachines
from batpolicy.simulator.static_jobs import StaticJobs

__all__ = ["Parts"]


@dataclass(frozen=True, slots=True)
class Parts:
    """One run's parts (module docstring), built by :meth:`build`."""

    queue: EventQueue
    books: RunBooks
    models: ModelChoice
    ends: MovingEnds
    messages: InstantMessages
    accounting: Accounting
    decisions: DecisionApplier
    server: Server
    energy: EnergyPart | None = None

    @classmethod
    def build(cls, workloads: Sequence[Workload], platform: Platform, options: SimOptions,
              on_record: Callable[[JobRecord], None] | None) -> Parts:
        """Wire the parts of a run: the machines kept (``mmax``), workloads loaded, checked.

        Runtime complexity: O(jobs log jobs) to sort the static jobs.
        """
        machine_info = list(platform.machines)
        if options.mmax is not None:
            machine_info = machine_info[:options.mmax]
        if not machine_info:
            raise ConfigError("the platform has no compute machine")
        instant = options.instant_model
        if instant is not None and not isinstance(instant, InstantModel):
            raise ConfigError(f"instant_model must be an InstantModel, got {instant!r}")
        queue = EventQueue()
        machines = SimMachines([m.name for m in machine_info],
                            [float(m.speed) for m in machine_info])
        books = RunBooks(queue, options, platform, machines)
        models = ModelChoice(with_default_model(options, workloads))
        ends = MovingEnds(queue, books, [instant, *models.configured()])
        models.on_instant_model = ends.add_model
        messages = InstantMessages(platform)
        result = SimResult(nb_machines=machines.n, nb_storage_machines=len(platform.storage),
                           batsim_version=(options.batsim_version
                                           or f"batpolicy-{__version__}"))
        accounting = Accounting(books, ends, messages, result, on_record)
        decisions = DecisionApplier(books, ends, accounting, models, messages)
        server = Server(books, models, accounting, ends, platform, machine_info)
        server.load(workloads)
        # a replay instead of each submitted id kept: ids are asked for on errors only
        books.static = StaticJobs(submission_order(workloads),
                                  replay=lambda: submission_order(workloads))
        books.static_done = not workloads
        energy = None
        if options.energy:  # Batsim's -E: power states, switches, energy (.energy)
            energy = build_energy(platform, machine_info, books,
                                  server.on_speed_change)
            decisions.energy = accounting.energy = books.energy = energy
            machines.power_counts = energy.power_counts
        return cls(queue, books, models, ends, messages, accounting, decisions, server,
                   energy)

    def bind(self, driver: Reactions) -> None:
        """Make ``driver`` the target of job completions and CALL_ME_LATER wake-ups."""
        self.ends.completions = driver
        self.decisions.waiters = driver
