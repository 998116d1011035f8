"""Energy as Batsim 4.2.1 computes it with ``-E``: pstates, switches, SimGrid's host power.

:class:`EnergyPart` is the engine part that exists only when energy is on
(:attr:`SimOptions.energy <.options.SimOptions>`). It follows:

- SimGrid 3.32 ``src/plugins/host_energy.cpp``: each host's energy is integrated
  between updates at the power of its pstate and load (:meth:`HostPower.watts
  <batpolicy.platforms.power.HostPower.watts>`); Batsim reads every host's energy at
  each job start and end and each pstate request, so every host is brought up to date
  then, and a job's load counts up to and including the instant it ends;
- Batsim ``server.cpp`` (``server_on_pstate_modification``, ``server_on_switched``) and
  ``pstate.cpp``: a computation pstate is set at once; a sleep pstate is reached through
  the switch-off virtual pstate, waking through the switch-on virtual pstate of the
  sleep pstate left, each taking the time of one flop at that pstate's speed at its
  all-cores power; RESOURCE_STATE_CHANGED is sent once every machine of the request has
  arrived; machines switching or asleep cannot run jobs;
- Batsim ``export.cpp``: ``_consumed_energy.csv`` rows (``s`` job start, ``e`` job end,
  ``p`` pstate request and arrival) and ``_pstate_changes.csv`` rows (-1: switching to a
  computation pstate, -2: to a sleep pstate).

A host's load is what SimGrid's plugin reads when it updates the host: the share of
its capacity (speed x cores) in use *at that moment* (``host_energy.cpp``,
``get_current_watts_value``: ``get_load() / speed / core_count``, the CPU constraint's
usage from the last solve), applied to the whole interval since the host's previous
update. Two sources:

- a job the job model runs in closed form (``host_load(job, ctx)`` of the model if it
  has one, else :func:`profile_load`) loads each of its hosts from its start to its
  end; Batsim reads every host at both instants, so the integration is exact;
- a job the model runs as SimGrid parallel tasks (its ``host_load`` answers None) is
  followed task by task with :class:`TaskPower`: SimGrid updates a task's hosts when it
  ends or is cancelled (``CpuAction::on_state_change``), a one-host task's host when
  it starts (``Exec::on_start``) and the job actor's host (the allocation's first
  machine) when a delay task's sleep ends (a sleep is an action of that CPU,
  ``CpuL07::sleep``), :meth:`EnergyPart.touch`; the loads the model solves
  after an instant (:meth:`EnergyPart.set_loads`) hold from the next instant on, so a
  host nobody updated when its rate changed (a latency paid, a task of several hosts
  starting after a sleep, a task elsewhere leaving a shared link) is charged its later
  load for the whole interval, as SimGrid charges it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import Any, Protocol

from batpolicy.errors import InvalidDecision
from batpolicy.platforms.power import HostPower, PStateKind, host_power, pstate_speeds
from batpolicy.protocol import types as t
from batpolicy.protocol.intervals import MachineSet
from batpolicy.scheduler.sim.actors import SimEvent
from batpolicy.scheduler.sim.core import COMPLETION
from batpolicy.scheduler.sim.wire import wire_time

__all__ = ["EnergyPart", "HostLoad", "TaskPower", "build_energy", "profile_load"]

# Batsim's machine states (machines.cpp), as _machine_states.csv names them.
IDLE, COMPUTING, SWITCHING_ON, SWITCHING_OFF, SLEEPING = (
    "idle", "computing", "switching_on", "switching_off", "sleeping")


class HostLoad(Protocol):
    """What a job model may tell the energy part: the load of each host it runs on."""

    def host_load(self, job: Any, ctx: Any) -> Mapping[int, float] | float | None:
        """Share (0..1) of one core's speed ``job`` uses on each of its hosts, or None.

        One share may stand for all hosts; None: the model tells the loads itself
        (:class:`TaskPower`).
        """


def _flops(profile: Mapping[str, Any], n: int, ctx: Any, workload: str) -> list[float]:
    """Flops each of the ``n`` hosts computes for ``profile`` (in allocation order)."""
    kind = profile.get("type")
    if kind == "parallel_homogeneous":
        return [float(profile.get("cpu", 0.0))] * n
    if kind == "parallel_homogeneous_total":
        return [float(profile.get("cpu", 0.0)) / max(n, 1)] * n
    if kind == "parallel":
        cpu = [float(c) for c in profile.get("cpu") or ()]
        return (cpu + [0.0] * n)[:n]
    if kind in ("composed", "sequence"):
        names = profile.get("seq") or profile.get("sequence") or []
        repeat = int(profile.get("repeat", profile.get("nb", 1)))
        total = [0.0] * n
        for name in names:
            part = _flops(ctx.profile_definition(workload, name), n, ctx, workload)
            total = [a + b for a, b in zip(total, part, strict=True)]
        return [repeat * f for f in total]
    return [0.0] * n  # delay and the rest: the host sleeps, no load


def profile_load(job: Any, ctx: Any, speeds: Sequence[float]) -> dict[int, float]:
    """The share of one core's speed a closed-form job uses on each of its hosts.

    One parallel task (Batsim's ``execute_parallel_task`` on ``ptask_L07``): it advances
    at the rate ``min_i speed_i / flops_i`` (``L07Action::update_bound``), so host ``i``
    delivers ``rate x flops_i``: its share is that over its speed, whatever the job's
    duration (a walltime kill included). Delay profiles use none (SimGrid's host stays
    idle). A sequence gets the mean over its duration, exact only for power linear in the
    load (the ``ptask`` model runs sequences task by task with ``-E``).
    """
    alloc = list(job.alloc)
    flops = _flops(job.profile_data, len(alloc), ctx, job.workload)
    if job.profile_data.get("type") in ("composed", "sequence"):
        duration = job.end - job.start
        if not duration > 0.0:
            return {}
        return {m: min(1.0, f / (speeds[m] * duration))
                for m, f in zip(alloc, flops, strict=True) if f > 0.0}
    rate = min((speeds[m] / f for m, f in zip(alloc, flops, strict=True) if f > 0.0),
               default=0.0)
    return {m: min(1.0, rate * f / speeds[m]) for m, f in zip(alloc, flops, strict=True)
            if f > 0.0}


class TaskPower:
    """SimGrid's host-energy plugin listening to the parallel-task model (module docstring).

    Told each task's start and end by the model (:attr:`L07Model.listener
    <batpolicy.scheduler.sim.ptask.l07.L07Model.listener>`); :meth:`instant_done` hands
    the energy part the loads of the hosts of running or ended tasks once the model has
    solved the next interval. Hosts beyond the compute machines (storage) are left out.
    Runtime complexity: O(hosts of the task) per start or end, O(hosts of running tasks)
    per instant.
    """

    __slots__ = ("_energy", "_model", "_n", "_left")

    def __init__(self, energy: EnergyPart, model: Any) -> None:
        self._energy = energy
        self._model = model
        self._n = len(energy.hosts)
        self._left: set[int] = set()  # hosts of tasks ended since the last instant_done
        model.listener = self

    def __call__(self, task: Any, started: bool) -> None:
        """A task starts (a one-host task updates its host) or ends (its hosts updated)."""
        hosts = {h for h in task.hosts if h < self._n}
        if started:
            if len(task.hosts) == 1:  # Exec::on_start_cb: get_host_number() == 1
                self._energy.touch(hosts)
            return
        self._energy.touch(hosts)
        self._energy.model_updated(hosts)
        self._left |= hosts

    def touch_host(self, host: int) -> None:
        """SimGrid updates one host now (an action of its CPU changed state)."""
        if host < self._n:
            self._energy.touch((host,))
            self._energy.model_updated((host,))

    def update_begins(self) -> None:
        """The model moves to its next update: the rates solved after the last one hold."""
        self._energy.loads_solved()

    def instant_done(self) -> None:
        """The model solved the rates after this instant: they hold from the next one on."""
        model, n = self._model, self._n
        hosts = self._left
        self._left = set()
        for task in model.tasks.values():
            hosts.update(h for h in task.hosts if h < n)
        if hosts:
            self._energy.set_loads({h: model.host_share(h) for h in sorted(hosts)})


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
    """Power states, switches, per-host energy and Batsim's energy traces (module docstring).

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
        self.pstate = [h.initial for h in hosts]
        #: Load of closed-form jobs (share of the host) and of the parallel-task model.
        self.load = [0.0] * n
        self.model_load = [0.0] * n
        #: Model loads from after ``_next_at`` on (the next solve's), not yet in force.
        self._next: dict[int, float] = {}
        self._next_at = 0.0
        self._fed: set[str] = set()  # running jobs whose loads the model tells
        self.energy = [0.0] * n
        self.last = [0.0] * n
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
        #: The hosts the model's update at ``_fresh_at`` updated (:meth:`model_updated`).
        self._fresh: set[int] = set()
        self._fresh_at = -1.0
        self.energy_rows: list[str] = []
        self.pstate_rows: list[str] = [f"0,{MachineSet.span(0, n - 1)},"
                                       f"{hosts[0].initial}"] if n else []
        self._last_date = 0.0
        self._last_energy = 0.0
        self._last_low = 0.0
        self.at_last_job_end = 0.0
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
        #: beside idle and computing (:attr:`Machines.power_counts
        #: <.bookkeeping.Machines.power_counts>` reads this dict).
        self.power_counts = {SLEEPING: 0, SWITCHING_ON: 0, SWITCHING_OFF: 0}

    # ------------------------------------------------------------ energy
    def _power(self, m: int) -> float:
        host, ps = self.hosts[m], self.pstate[m]
        if self.state[m] in (SWITCHING_ON, SWITCHING_OFF):
            return host.all_cores[ps]  # computing its one flop
        return host.watts(ps, self.load[m] + self.model_load[m])

    def _update(self, m: int, now: float) -> None:
        """SimGrid's ``HostEnergy::update``: the interval since the last at today's power."""
        if self._next and now > self._next_at:
            self._commit()
        last = self.last[m]
        if last < now:
            self.energy[m] += self._power(m) * (now - last)
            self.last[m] = now

    def model_updated(self, machines: Iterable[int]) -> None:
        """The model's update at this date updated these hosts (its actions' ends). O(k)."""
        now = self._queue.now
        if now != self._fresh_at:
            self._fresh = set()
            self._fresh_at = now
        self._fresh.update(machines)

    def stale_hosts(self, skip: Iterable[int] = ()) -> int:
        """How many hosts (but ``skip``) an actor woken at this date finds not updated. O(hosts).

        SimGrid's update at this date updated the hosts of the actions that ended then
        (:meth:`model_updated`); every other host is read anew by the first actor that
        reads it, and each such read (``HostEnergy::get_consumed_energy``) is a simcall:
        the actor goes on one scheduling round later.
        """
        fresh = self._fresh if self._fresh_at == self._queue.now else set()
        skipped = set(skip)
        return sum(1 for m in range(len(self.hosts)) if m not in skipped and m not in fresh)

    def total(self) -> float:
        """Energy of every host so far (joules), as Batsim's QUERY answer. O(hosts)."""
        now = self._queue.now
        for m in range(len(self.hosts)):
            self._update(m, now)
        return math.fsum(self.energy)

    def wattmin(self) -> float:
        """Sum of each host's epsilon power at its pstate (Batsim's ``total_wattmin``)."""
        return math.fsum(h.epsilon[p] for h, p in zip(self.hosts, self.pstate, strict=True))

    def _entry(self, kind: str) -> float:
        """One ``_consumed_energy.csv`` row (``EnergyConsumptionTracer::add_entry``).

        Batsim sums the hosts' energies in ``long double`` and divides their difference
        since the last row by the time since: over a short interval a double's rounding
        of two large sums shows in ``epower``'s sixth decimal, so the sum is kept as a
        double and its rounding error (``math.fsum`` twice), and the difference taken
        on both.
        """
        now = self._queue.now
        energy = self.total()
        low = math.fsum([*self.energy, -energy])  # the sum's exact remainder, rounded
        dt = now - self._last_date
        if dt > 0:
            diff = (energy - self._last_energy) + (low - self._last_low)
            epower = f"{diff / dt:f}"
        else:
            epower = "NA"
        self.energy_rows.append(f"{now:f},{energy:f},{kind},{self.wattmin():f},{epower}")
        self._last_date, self._last_energy, self._last_low = now, energy, low
        return energy

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

    def first_submission(self) -> None:
        """A job submitter takes its first job: remember the energy (once per run)."""
        if self.at_first_submission is None:
            self.at_first_submission = self.total()

    def consumed_joules(self) -> float:
        """schedule.csv's consumed_joules: last job end minus first submission (export.cpp)."""
        return self.at_last_job_end - (self.at_first_submission or 0.0)

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

        ``load``: share of one core's speed per host (:class:`HostLoad`), or None when the
        job model tells the loads itself (:meth:`touch`, :meth:`set_loads`).
        """
        now = self._queue.now
        self._entry("s")
        self._job_start[job.id] = math.fsum(self.energy[m] for m in job.alloc)
        if load is None:
            self._fed.add(job.id)
        hosts = self.hosts
        for m in job.alloc:
            if load is not None:
                share = load if isinstance(load, float) else float(load.get(m, 0.0))
                self.load[m] = share / hosts[m].cores
            self.busy[m] += 1
            if self.state[m] == IDLE:
                self._set_state(m, COMPUTING, now)

    def touch(self, machines: Iterable[int]) -> None:
        """SimGrid updates these hosts' energy now, at their current loads. O(k)."""
        now = self._queue.now
        for m in machines:
            self._update(m, now)

    def set_loads(self, loads: Mapping[int, float]) -> None:
        """The model's loads of these hosts (shares) from the next instant on. O(k).

        Updates at this instant still see the loads before (the model's solve happens
        once the instant is over); the ones of an earlier call come into force first.
        """
        now = self._queue.now
        if self._next and now > self._next_at:
            self._commit()
        self._next.update(loads)
        self._next_at = now

    def loads_solved(self) -> None:
        """The model's next update has come: the loads of :meth:`set_loads` are in force.

        Even at the date they were set: SimGrid's clock may not move between two updates
        (an update a few ulps later rounds to the same date). O(k).
        """
        if self._next:
            self._commit()

    def _commit(self) -> None:
        model_load = self.model_load
        for m, load in self._next.items():
            model_load[m] = load
        self._next.clear()

    def job_ended(self, job: Any) -> float:
        """A job ends: its hosts' energy read with its load, the load dropped (``e`` row).

        Returns the job's consumed energy (joules).
        """
        now = self._queue.now
        for m in job.alloc:
            self._update(m, now)
        before = self._job_start.pop(job.id, None)
        if before is None:  # set RUNNING by CHANGE_JOB_STATE: never started here
            return -1.0
        consumed = math.fsum(self.energy[m] for m in job.alloc) - before
        fed = job.id in self._fed
        self._fed.discard(job.id)
        for m in job.alloc:
            if not fed:
                self.load[m] = 0.0
            self.busy[m] -= 1
            if self.busy[m] == 0 and self.state[m] == COMPUTING:
                self._set_state(m, IDLE, now)
        #: schedule.csv's consumed_joules: the energy at the last job end (Batsim's
        #: ``energy_last_job_completion``), not at the end of the simulation.
        self.at_last_job_end = self._entry("e")
        return consumed

    # ------------------------------------------------------------ pstates
    def request(self, machines: MachineSet, target: int) -> None:
        """SET_RESOURCE_STATE: check as Batsim does, then switch (module docstring)."""
        now = self._queue.now
        for m in machines:
            check_switch(self.hosts[m], m, self.state[m], self.pstate[m], self.busy[m],
                         target, f"SET_RESOURCE_STATE at t={now} ({machines} to '{target}')")
        self._switches.append((machines, set(machines), target))
        self._entry("p")
        first = self.hosts[machines.min()].kind(target)
        self.pstate_rows.append(f"{_time_cell(now)},{machines},"
                                f"{-1 if first is PStateKind.COMPUTATION else -2}")
        self.nb_grouped_switches += 1
        self.nb_machine_switches += len(machines)
        for m in machines:
            host = self.hosts[m]
            current = host.kind(self.pstate[m])
            if current is PStateKind.COMPUTATION and host.kind(target) is PStateKind.COMPUTATION:
                self._update(m, now)
                self.pstate[m] = target
                if self._on_speed is not None:
                    self._on_speed(MachineSet.of(m), host.speeds[target])
                self._arrived(m, target, trace=False)
                continue
            self._update(m, now)
            if current is PStateKind.COMPUTATION:  # to sleep: through switch-off
                virtual = host.sleep[target].switch_off
                self._set_state(m, SWITCHING_OFF, now)
            else:  # waking: through the switch-on of the sleep pstate left
                virtual = host.sleep[self.pstate[m]].switch_on
                self._set_state(m, SWITCHING_ON, now)
            self.pstate[m] = virtual
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
        self._update(m, now)
        self._books.switching -= 1
        host = self.hosts[m]
        self.pstate[m] = target
        self._set_state(m, SLEEPING if host.kind(target) is PStateKind.SLEEP else IDLE, now)
        if self.deliver is not None:  # the SWITCHED message travels to the server
            self.deliver(m, partial(self._arrived, m, target))
            return
        # Every switch ending at this instant sets its pstate before Batsim's server reads
        # the first SWITCHED message: the traces see them all (wattmin), then each arrival.
        if not self._arrivals:
            self._queue.schedule(Arrivals(self), ARRIVALS)
        self._arrivals.append((m, target))

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
                    self.pstate_rows.append(f"{_time_cell(now)},{machines},{target}")
                    self._entry("p")
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
        with open(f"{stem}consumed_energy.csv", "w", encoding="utf-8") as out:
            out.write("time,energy,event_type,wattmin,epower\n")
            out.writelines(row + "\n" for row in self.energy_rows)
        with open(f"{stem}pstate_changes.csv", "w", encoding="utf-8") as out:
            out.write("time,machine_id,new_pstate\n")
            out.writelines(row + "\n" for row in self.pstate_rows)


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


def _time_cell(now: float) -> str:
    """A time as Batsim's pstate tracer writes it (C++ stream default: 6 significant digits)."""
    return f"{now:.6g}"


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
