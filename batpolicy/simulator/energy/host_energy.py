"""SimGrid 3.32's host-energy plugin as Batsim 4.2.1 runs it with ``-E``: each host's energy.

:class:`HostEnergyPlugin` follows SimGrid 3.32 ``src/plugins/host_energy.cpp``: each
host's energy is integrated between updates at the power of its pstate and load
(:meth:`HostPower.watts <batpolicy.platforms.power.HostPower.watts>`); Batsim reads every
host's energy at each job start and end and each pstate request, so every host is
brought up to date then, and a job's load counts up to and including the instant it
ends. The energy part (:class:`~.pstates.EnergyPart`) owns it and tells it each pstate
change (:meth:`HostEnergyPlugin.set_pstate`) and each closed-form job's load.

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
  ``CpuL07::sleep``), :meth:`HostEnergyPlugin.touch`; the loads the model solves
  after an instant (:meth:`HostEnergyPlugin.set_loads`) hold from the next instant on,
  so a host nobody updated when its rate changed (a latency paid, a task of several
  hosts starting after a sleep, a task elsewhere leaving a shared link) is charged its
  later load for the whole interval, as SimGrid charges it. They come into force at the
  model's next update (:meth:`HostEnergyPlugin.loads_solved`), not at a later instant of
  the same date: SimGrid solves once the actors woken by an update have run
  (``EngineImpl::run``), so a task they cancel then (a walltime-killed job's, as its
  actor ends, ``ActorImpl::cleanup_from_self``) charges its hosts at the rates solved
  before that update.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from batpolicy.platforms.power import HostPower

__all__ = ["HostEnergyPlugin", "HostLoad", "TaskPower", "profile_load"]


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


class HostEnergyPlugin:
    """SimGrid's host-energy plugin on the compute hosts: pstate, load and energy of each.

    ``host_energy.cpp`` keeps one ``HostEnergy`` per host; here each field is a list by
    machine id. A host is updated (``HostEnergy::update``: the interval since its last
    update at its current power) when it is touched, when its pstate changes
    (``on_host_change``, connected to ``Host::on_speed_change``) and when the energy of
    all hosts is read (:meth:`total`). A switching host computes its one flop at its
    virtual pstate's all-cores power (``pstate.cpp``). ``clock``: anything with ``now``
    (the engine's event queue).

    Runtime complexity: O(1) per host update, O(hosts) per :meth:`total`.
    """

    __slots__ = ("_clock", "hosts", "pstate", "switching", "load", "model_load", "_next",
                 "_next_at", "energy", "last", "_fresh", "_fresh_at")

    def __init__(self, clock: Any, hosts: Sequence[HostPower]) -> None:
        self._clock = clock
        self.hosts = list(hosts)
        n = len(hosts)
        self.pstate = [h.initial for h in hosts]
        #: Hosts computing a switch's one flop (switching on or off).
        self.switching = [False] * n
        #: Load of closed-form jobs (share of the host) and of the parallel-task model.
        self.load = [0.0] * n
        self.model_load = [0.0] * n
        #: Model loads from after ``_next_at`` on (the next solve's), not yet in force.
        self._next: dict[int, float] = {}
        self._next_at = 0.0
        self.energy = [0.0] * n
        self.last = [0.0] * n
        #: The hosts the model's update at ``_fresh_at`` updated (:meth:`model_updated`).
        self._fresh: set[int] = set()
        self._fresh_at = -1.0

    def _watts(self, m: int) -> float:
        host, ps = self.hosts[m], self.pstate[m]
        if self.switching[m]:
            return host.all_cores[ps]  # computing its one flop
        return host.watts(ps, self.load[m] + self.model_load[m])

    def update(self, m: int, now: float) -> None:
        """SimGrid's ``HostEnergy::update``: the interval since the last at today's power."""
        if self._next and now > self._next_at:
            self._commit()
        last = self.last[m]
        if last < now:
            self.energy[m] += self._watts(m) * (now - last)
            self.last[m] = now

    def set_pstate(self, m: int, pstate: int, switching: bool = False) -> None:
        """Host ``m`` goes to ``pstate`` now (``switching``: to compute a switch's flop).

        SimGrid updates the host first (``on_host_change``), so the interval before is
        charged at the pstate left. O(1).
        """
        self.update(m, self._clock.now)
        self.pstate[m] = pstate
        self.switching[m] = switching

    def set_job_load(self, m: int, share: float) -> None:
        """A closed-form job's share of one core's speed on host ``m`` (0: none). O(1)."""
        self.load[m] = share / self.hosts[m].cores

    def touch(self, machines: Iterable[int]) -> None:
        """SimGrid updates these hosts' energy now, at their current loads. O(k)."""
        now = self._clock.now
        for m in machines:
            self.update(m, now)

    def set_loads(self, loads: Mapping[int, float]) -> None:
        """The model's loads of these hosts (shares) from the next instant on. O(k).

        Updates at this instant still see the loads before (the model's solve happens
        once the instant is over); the ones of an earlier call come into force first.
        """
        now = self._clock.now
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

    def model_updated(self, machines: Iterable[int]) -> None:
        """The model's update at this date updated these hosts (its actions' ends). O(k)."""
        now = self._clock.now
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
        fresh = self._fresh if self._fresh_at == self._clock.now else set()
        skipped = set(skip)
        return sum(1 for m in range(len(self.hosts)) if m not in skipped and m not in fresh)

    def total(self) -> float:
        """Energy of every host so far (joules), as Batsim's QUERY answer. O(hosts)."""
        now = self._clock.now
        for m in range(len(self.hosts)):
            self.update(m, now)
        return math.fsum(self.energy)

    def wattmin(self) -> float:
        """Sum of each host's epsilon power at its pstate (Batsim's ``total_wattmin``)."""
        return math.fsum(h.epsilon[p] for h, p in zip(self.hosts, self.pstate, strict=True))


class TaskPower:
    """SimGrid's host-energy plugin listening to the parallel-task model (module docstring).

    ``energy`` is the energy part (:class:`~.pstates.EnergyPart`): its
    :attr:`~.pstates.EnergyPart.host_energy` plugin is told each task's start and end by
    the model (:attr:`L07Model.listener
    <batpolicy.simulator.jobmodels.ptask.l07.L07Model.listener>`); :meth:`instant_done` hands
    the plugin the loads of the hosts of running or ended tasks once the model has
    solved the next interval. Hosts beyond the compute machines (storage) are left out.
    Runtime complexity: O(hosts of the task) per start or end, O(hosts of running tasks)
    per instant.
    """

    __slots__ = ("_plugin", "_model", "_n", "_left")

    def __init__(self, energy: Any, model: Any) -> None:
        self._plugin = energy.host_energy
        self._model = model
        self._n = len(self._plugin.hosts)
        self._left: set[int] = set()  # hosts of tasks ended since the last instant_done
        model.listener = self

    def __call__(self, task: Any, started: bool) -> None:
        """A task starts (a one-host task updates its host) or ends (its hosts updated)."""
        hosts = {h for h in task.hosts if h < self._n}
        if started:
            if len(task.hosts) == 1:  # Exec::on_start_cb: get_host_number() == 1
                self._plugin.touch(hosts)
            return
        self._plugin.touch(hosts)
        self._plugin.model_updated(hosts)
        self._left |= hosts

    def touch_host(self, host: int) -> None:
        """SimGrid updates one host now (an action of its CPU changed state)."""
        if host < self._n:
            self._plugin.touch((host,))
            self._plugin.model_updated((host,))

    def update_begins(self) -> None:
        """The model moves to its next update: the rates solved after the last one hold."""
        self._plugin.loads_solved()

    def instant_done(self) -> None:
        """The model solved the rates after this instant: they hold from the next one on."""
        model, n = self._model, self._n
        hosts = self._left
        self._left = set()
        for task in model.tasks.values():
            hosts.update(h for h in task.hosts if h < n)
        if hosts:
            self._plugin.set_loads({h: model.host_share(h) for h in sorted(hosts)})
