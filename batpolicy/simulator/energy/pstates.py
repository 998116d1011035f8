"""Energy as Batsim 4.2.1 computes it with ``-E``: pstates, switches, SimGrid's host power.

:class:`EnergyPart` is the engine part that exists only when energy is on
(:attr:`SimOptions.energy <.options.SimOptions>`). It is Batsim's side of energy,
composed of SimGrid's host-energy plugin (:class:`~.host_energy.HostEnergyPlugin`:
each host's pstate, load and energy, the loads the job models tell it) and Batsim's two
energy tracers (:mod:`.tracers`). It follows:

- Batsim ``server.cpp`` (``server_on_pstate_modification``, ``server_on_switched``) and
  ``pstate.cpp``: a computation pstate is set at once; a sleep pstate is reached through
  the switch-off virtual pstate, waking through the switch-on virtual pstate of the
  sleep pstate left, each taking the time of one flop at that pstate's speed at its
  all-cores power; RESOURCE_STATE_CHANGED is sent once every machine of the request has
  arrived; machines switching or asleep cannot run jobs;
- Batsim ``machines.cpp``: each machine's state (idle, computing, switching on or off,
  sleeping) and the time it spent in each;
- Batsim ``export.cpp``: a ``_consumed_energy.csv`` row at each job start and end and
  each pstate request and arrival, every host's energy read then; ``_pstate_changes.csv``
  rows at each request and arrival.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import Any

from batpolicy.errors import InvalidDecision
from batpolicy.platforms.power import HostPower, PStateKind, host_power, pstate_speeds
from batpolicy.protocol import types as t
from batpolicy.protocol.intervals import MachineSet
from batpolicy.simulator.actors import SimEvent
from batpolicy.simulator.core import COMPLETION
from batpolicy.simulator.energy.host_energy import HostEnergyPlugin
from batpolicy.simulator.energy.tracers import EnergyConsumptionTracer, PStateChangeTracer
from batpolicy.simulator.json_quirks import wire_time

__all__ = ["EnergyPart", "build_energy"]

# Batsim's machine states (machines.cpp), as _machine_states.csv names them.
IDLE, COMPUTING, SWITCHING_ON, SWITCHING_OFF, SLEEPING = (
    "idle", "computing", "switching_on", "switching_off", "sleeping")


class SwitchDone(SimEvent):
    """A machine's switch-on or switch-off ends (its one flop is computed)."""

    __slots__ = ("machine", "target")

    def __init__(self, sim: Any, machine: int, target: int) -> None:
        super().__init__(sim)
        self.machine = machine
        self.target = target

    def fire(self) -> None:
        """The machine reaches its target pstate."""
        self.sim.on_switched(self.machine, self.target)


class Arrivals(SimEvent):
    """The server reads the switches that ended at this instant."""

    __slots__ = ()

    def fire(self) -> None:
        """Each arrival, in the order the switches ended."""
        self.sim.on_arrivals()


#: After the switches and job completions of an instant, before the end-of-input notices.
ARRIVALS = COMPLETION + 0.5


class EnergyPart:
    """Power states, switches and Batsim's energy traces over the host-energy plugin.

    Composed of :attr:`host_energy` (SimGrid's plugin: pstates, loads, energy) and the
    tracers :attr:`consumption` and :attr:`pstate_changes`; it keeps Batsim's machine
    states and open switch requests (module docstring).

    Runtime complexity: O(hosts) per job start, job end and pstate request (Batsim reads
    every host's energy then), O(1) per switch.
    """

    def __init__(self, books: Any, hosts: Sequence[HostPower],
                 on_speed: Callable[[MachineSet, float], None] | None = None) -> None:
        self._books = books
        self._queue = books.queue
        self.hosts = list(hosts)
        n = len(hosts)
        self._outbox = books.outbox
        self._on_speed = on_speed
        #: SimGrid's host-energy plugin: each host's pstate, load and energy.
        self.host_energy = HostEnergyPlugin(books.queue, self.hosts)
        #: Batsim's ``_consumed_energy.csv`` and ``_pstate_changes.csv`` tracers.
        self.consumption = EnergyConsumptionTracer(self.host_energy, books.queue)
        self.pstate_changes = PStateChangeTracer(n, hosts[0].initial if n else 0)
        self._fed: set[str] = set()  # running jobs whose loads the model tells
        self.state = [IDLE] * n
        self.busy = [0] * n
        #: (all machines, machines still switching, target pstate) of each open request
        self._switches: list[tuple[MachineSet, set[int], int]] = []
        self._job_start: dict[str, float] = {}
        self._arrivals: list[tuple[int, int]] = []
        #: How a machine's SWITCHED message reaches the server (the latency driver posts
        #: it from the machine); None: at once, after every switch ending this instant.
        self.deliver: Callable[[int, Callable[[], None]], None] | None = None
        #: Runs a switch's one flop on machine ``m`` at a speed, then calls back (the
        #: parallel-task model when Batsim's messages go through it); None: the switch
        #: ends at ``now + 1 / speed`` in closed form.
        self.execute: Callable[[int, float, Callable[[], None]], None] | None = None
        self.at_last_job_end = -1.0  # Batsim's context.hpp: -1 until a job completes
        #: The energy when the first static job was submitted (Batsim's
        #: ``energy_first_job_submission``); schedule.csv's consumed_joules counts from it.
        self.at_first_submission: float | None = None
        self.nb_grouped_switches = 0
        self.nb_machine_switches = 0
        #: Time each machine spent in each state it left (Batsim's
        #: ``Machine::update_machine_state``: the state a machine is in at the end is not
        #: counted, as in Batsim's schedule.csv).
        self.state_time = {IDLE: 0.0, COMPUTING: 0.0, SWITCHING_ON: 0.0, SWITCHING_OFF: 0.0,
                           SLEEPING: 0.0}
        self._state_since = [0.0] * n
        #: Machines asleep or switching, by state: ``_machine_states.csv``'s columns
        #: beside idle and computing (:attr:`SimMachines.power_counts
        #: <.records.SimMachines.power_counts>` reads this dict).
        self.power_counts = {SLEEPING: 0, SWITCHING_ON: 0, SWITCHING_OFF: 0}

    def _set_state(self, m: int, state: str, now: float) -> None:
        old = self.state[m]
        self.state_time[old] += now - self._state_since[m]
        self._state_since[m] = now
        self.state[m] = state
        counts = self.power_counts
        if old in counts:
            counts[old] -= 1
        if state in counts:
            counts[state] += 1

    # ------------------------------------------------------------ energy
    def total(self) -> float:
        """Energy of every host so far (joules), as Batsim's QUERY answer. O(hosts)."""
        return self.host_energy.total()

    def stale_hosts(self, skip: Iterable[int] = ()) -> int:
        """Hosts (but ``skip``) not yet updated at this date (the plugin's). O(hosts)."""
        return self.host_energy.stale_hosts(skip)

    def first_submission(self) -> None:
        """A job submitter takes its first job: remember the energy (once per run)."""
        if self.at_first_submission is None:
            self.at_first_submission = self.host_energy.total()

    def consumed_joules(self) -> float:
        """schedule.csv's consumed_joules: last job end minus first submission (export.cpp).

        Each reading is -1 until it happens (``BatsimContext``'s defaults): with jobs
        submitted but none completed (all rejected), Batsim prints -1 minus the first.
        """
        first = self.at_first_submission
        return self.at_last_job_end - (-1.0 if first is None else first)

    # ------------------------------------------------------------ jobs
    def check_execute(self, job_id: str, alloc: MachineSet) -> None:
        """Batsim's check that every allocated machine can compute (idle or computing)."""
        for m in alloc:
            if self.state[m] not in (IDLE, COMPUTING):
                raise InvalidDecision(
                    f"EXECUTE_JOB at t={self._queue.now}: job '{job_id}': invalid allocation "
                    f"({alloc}): machine {m} cannot compute jobs now (its state is "
                    f"'{self.state[m]}', Batsim aborts)", job_id=job_id)

    def job_started(self, job: Any, load: Mapping[int, float] | float | None) -> None:
        """A job starts: energy read (``s`` row), then its hosts carry its load.

        ``load``: share of one core's speed per host (:class:`~.host_energy.HostLoad`), or
        None when the job model tells the loads itself (:class:`~.host_energy.TaskPower`).
        """
        now = self._queue.now
        self.consumption.add_entry("s")
        plugin = self.host_energy
        self._job_start[job.id] = math.fsum(plugin.energy[m] for m in job.alloc)
        if load is None:
            self._fed.add(job.id)
        for m in job.alloc:
            if load is not None:
                plugin.set_job_load(m, load if isinstance(load, float)
                                    else float(load.get(m, 0.0)))
            self.busy[m] += 1
            if self.state[m] == IDLE:
                self._set_state(m, COMPUTING, now)

    def job_ended(self, job: Any) -> float:
        """A job ends: its hosts' energy read with its load, the load dropped (``e`` row).

        Returns the job's consumed energy (joules).
        """
        now = self._queue.now
        plugin = self.host_energy
        plugin.touch(job.alloc)
        before = self._job_start.pop(job.id, None)
        if before is None:  # set RUNNING by CHANGE_JOB_STATE: never started here
            return -1.0
        consumed = math.fsum(plugin.energy[m] for m in job.alloc) - before
        fed = job.id in self._fed
        self._fed.discard(job.id)
        for m in job.alloc:
            if not fed:
                plugin.set_job_load(m, 0.0)
            self.busy[m] -= 1
            if self.busy[m] == 0 and self.state[m] == COMPUTING:
                self._set_state(m, IDLE, now)
        #: schedule.csv's consumed_joules: the energy at the last job end (Batsim's
        #: ``energy_last_job_completion``), not at the end of the simulation.
        self.at_last_job_end = self.consumption.add_entry("e")
        return consumed

    # ------------------------------------------------------------ pstates
    def request(self, machines: MachineSet, target: int) -> None:
        """SET_RESOURCE_STATE: check as Batsim does, then switch (module docstring)."""
        now = self._queue.now
        plugin = self.host_energy
        pstate = plugin.pstate
        for m in machines:
            check_switch(self.hosts[m], m, self.state[m], pstate[m], self.busy[m],
                         target, f"SET_RESOURCE_STATE at t={now} ({machines} to '{target}')")
        self._switches.append((machines, set(machines), target))
        self.consumption.add_entry("p")
        first = self.hosts[machines.min()].kind(target)
        self.pstate_changes.add_pstate_change(
            now, machines, -1 if first is PStateKind.COMPUTATION else -2)
        self.nb_grouped_switches += 1
        self.nb_machine_switches += len(machines)
        for m in machines:
            host = self.hosts[m]
            current = host.kind(pstate[m])
            if current is PStateKind.COMPUTATION and host.kind(target) is PStateKind.COMPUTATION:
                plugin.set_pstate(m, target)
                if self._on_speed is not None:
                    self._on_speed(MachineSet.of(m), host.speeds[target])
                self._arrived(m, target, trace=False)
                continue
            if current is PStateKind.COMPUTATION:  # to sleep: through switch-off
                virtual = host.sleep[target].switch_off
                self._set_state(m, SWITCHING_OFF, now)
            else:  # waking: through the switch-on of the sleep pstate left
                virtual = host.sleep[pstate[m]].switch_on
                self._set_state(m, SWITCHING_ON, now)
            plugin.set_pstate(m, virtual, switching=True)
            self._books.switching += 1
            if self.execute is not None:
                self.execute(m, host.speeds[virtual], partial(self.on_switched, m, target))
            else:
                self._queue.schedule(SwitchDone(self, m, target), COMPLETION,
                                     at=now + 1.0 / host.speeds[virtual])
        self._books.machines.trace(now)  # server_on_pstate_modification's row

    def on_switched(self, m: int, target: int) -> None:
        """A switch-on or switch-off ends: the machine is in ``target``."""
        now = self._queue.now
        self.host_energy.set_pstate(m, target)
        host = self.hosts[m]
        self._set_state(m, SLEEPING if host.kind(target) is PStateKind.SLEEP else IDLE, now)
        if self.deliver is not None:  # the SWITCHED message travels to the server
            self.deliver(m, partial(self._switched_received, m, target))
            return
        self._books.switching -= 1
        # Every switch ending at this instant sets its pstate before Batsim's server reads
        # the first SWITCHED message: the traces see them all (wattmin), then each arrival.
        if not self._arrivals:
            self._queue.schedule(Arrivals(self), ARRIVALS)
        self._arrivals.append((m, target))

    def _switched_received(self, m: int, target: int) -> None:
        """The server receives a SWITCHED message (``server_on_switched``, ``server.cpp``).

        Batsim counts the machine as switching until then (``--nb_switching_machines``
        after the request is marked done), so the run cannot end while the message
        travels.
        """
        self._arrived(m, target)
        self._books.switching -= 1

    def on_arrivals(self) -> None:
        """Batsim's server receives the SWITCHED messages of this instant, in order."""
        arrivals, self._arrivals = self._arrivals, []
        for m, target in arrivals:
            self._arrived(m, target)

    def _arrived(self, m: int, target: int, trace: bool = True) -> None:
        """Machine ``m`` is in ``target``: the request is done once all its machines are.

        ``trace``: a SWITCHED message (``server_on_switched``) writes a machine-states row
        when it completes the request; a computation pstate set at once does not (the
        request's own row follows).
        """
        for i, (machines, left, goal) in enumerate(self._switches):
            if goal == target and m in left:
                left.discard(m)
                if not left:
                    del self._switches[i]
                    now = self._queue.now
                    self.pstate_changes.add_pstate_change(now, machines, target)
                    self.consumption.add_entry("p")
                    if trace:
                        self._books.machines.trace(now)
                    self._outbox.append(t.ResourceStateChanged(wire_time(now), machines,
                                                               str(target)))
                return

    def available(self, m: int) -> bool:
        """Whether machine ``m`` can run a job (idle or computing)."""
        return self.state[m] in (IDLE, COMPUTING)

    # ------------------------------------------------------------ outputs
    def write(self, stem: str) -> None:
        """Write ``STEMconsumed_energy.csv`` and ``STEMpstate_changes.csv`` (stem ``PREFIX_``)."""
        self.consumption.write(f"{stem}consumed_energy.csv")
        self.pstate_changes.write(f"{stem}pstate_changes.csv")


def check_switch(host: HostPower, m: int, state: str, pstate: int, busy: int, target: int,
                 where: str) -> None:
    """Batsim's checks of a SET_RESOURCE_STATE on machine ``m``: InvalidDecision if refused.

    As ``server.cpp``'s ``server_on_set_resource_state`` and ``pstate.cpp``: the pstate
    must exist and not be a virtual transition one; a switching machine cannot be
    switched again; a sleeping one only goes to a computation pstate; a busy one
    (``busy`` jobs on it) cannot sleep.
    """
    if not host.has(target):
        raise InvalidDecision(f"{where}: machine {m} has no pstate {target} (it has "
                              f"{len(host.speeds)}; Batsim aborts)")
    if state in (SWITCHING_ON, SWITCHING_OFF):
        raise InvalidDecision(f"{where}: machine {m} is still {state} "
                              "(Batsim cannot switch it again)")
    kind, current = host.kind(target), host.kind(pstate)
    if kind is PStateKind.TRANSITION:
        raise InvalidDecision(f"{where}: pstate {target} of machine {m} is a virtual "
                              "transition pstate (Batsim aborts)")
    if current is PStateKind.SLEEP and kind is not PStateKind.COMPUTATION:
        raise InvalidDecision(f"{where}: machine {m} sleeps; it can only go to a "
                              "computation pstate (Batsim aborts)")
    if kind is PStateKind.SLEEP and busy:
        raise InvalidDecision(f"{where}: machine {m} runs a job; it cannot sleep "
                              "(Batsim aborts)")


def build_energy(platform: Any, machine_info: Sequence[Any], books: Any,
                 on_speed: Callable[[MachineSet, float], None] | None = None) -> EnergyPart:
    """The energy part for the machines kept, their power read from the platform file."""
    source = getattr(platform, "source", None)
    speeds = pstate_speeds(source) if source else {}
    hosts = []
    for machine in machine_info:
        props = {**machine.zone_properties, **machine.properties}
        listed, initial, cores = speeds.get(machine.name, ((float(machine.speed),), 0, 1))
        hosts.append(host_power(machine.name, props, listed, source=source, initial=initial,
                                cores=cores))
    return EnergyPart(books, hosts, on_speed)
