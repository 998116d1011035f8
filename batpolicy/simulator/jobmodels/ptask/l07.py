"""SimGrid 3.32's ``ptask_L07`` host model: parallel tasks sharing CPUs and links.

Follows ``src/surf/ptask_L07.cpp`` (the model Batsim 4.2.1 configures, ``batsim.cpp``):

- a parallel task (``L07Action``) runs on a list of hosts (a host may appear twice: two
  executors of a job mapped onto one machine) with ``flops[i]`` on the i-th host and
  ``bytes[i][j]`` from the i-th host to the j-th; its progress is one fraction
  (``remains`` from 1 to 0) shared by all its parts, advanced at the rate the solver
  (:class:`~.lmm.FairBottleneck`) gives its variable;
- the variable uses each host's CPU constraint (bound ``core_count x speed``) with
  weight ``flops[i]``, one element per listed host (``expand(..., true)``), and each
  link of each route with bytes to move, weight ``bytes[i][j]`` (summed when routes
  share a link, largest for a FATPIPE link: ``System::expand``);
- latency first: the task starts disabled for the largest route latency among its
  pairs that move data (``L07Action::L07Action``), then its bound is set to
  ``min(TCP_gamma / (2 max(latency x bytes)), min speed_i / flops_i)``
  (``L07Action::update_bound``) and it shares the resources;
- a task with nothing to compute nor move is done at once;
- time moves from event to event (``HostL07Model::next_occurring_event``: the soonest
  end ``remains / rate`` or latency expiry) and every task advances by ``rate x delta``
  (``HostL07Model::update_actions_state``, ``double_update`` with precisions
  ``sg_maxmin_precision x sg_surf_precision`` for remains and ``sg_surf_precision``
  for latencies). Rates are recomputed whenever a task starts, ends or stops paying
  its latency.

:meth:`L07Model.host_load` exposes the flop/s a host delivers at the current rates and
:meth:`L07Model.host_share` the share of its capacity, what a power model reads;
:attr:`L07Model.listener` is told each task's start and end (SimGrid's ``Exec::on_start``
and ``CpuAction::on_state_change`` signals, which its host-energy plugin listens to).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from batpolicy.platforms.routes import TCP_GAMMA, Hop
from batpolicy.simulator.jobmodels.ptask.lmm import (
    FATPIPE,
    MAXMIN_PRECISION,
    SHARED,
    SURF_PRECISION,
    Constraint,
    FairBottleneck,
    Variable,
    double_update,
)
from batpolicy.simulator.jobmodels.ptask.route_table import RouteTable

__all__ = ["L07Model", "Ptask"]

_DBL_MAX = 1.7976931348623157e308
_INF = float("inf")


@dataclass(slots=True, eq=False)
class Ptask:
    """One running parallel task (``L07Action``)."""

    key: Hashable
    hosts: tuple[int, ...]
    flops: tuple[float, ...]
    variable: Variable
    latency: float
    remains: float
    bound: float  # min(network, cpu) bound, applied once the latency is paid


class L07Model:
    """Running parallel tasks on hosts and links; see the module docstring.

    ``cpus[h]`` is host ``h``'s (speed in flop/s, core count); ``route(a, b)`` the links
    from host ``a`` to host ``b`` (:meth:`~.platforms.routes.Routes.links`). Runtime complexity:
    one solve per :meth:`next_event` after a change, O(tasks) per :meth:`advance`.
    """

    def __init__(self, cpus: Sequence[tuple[float, int]],
                 route: Callable[[int, int], list[Hop]]) -> None:
        self._system = FairBottleneck()
        self._speed = [speed for speed, _ in cpus]
        self._cpu = [Constraint(speed * cores, SHARED, ("cpu", h))
                     for h, (speed, cores) in enumerate(cpus)]
        self._link_index: dict[str, int] = {}  # link name -> index in _link_list
        self._link_list: list[Constraint] = []  # the links' constraints, as met
        self._routes = RouteTable(len(cpus), route, self._link)
        #: (src, dst) -> ((link index, times on the route), ...), latency: messages' routes
        self._pair_routes: dict[tuple[int, int], tuple[tuple[tuple[int, int], ...], float]] = {}
        self.tasks: dict[Hashable, Ptask] = {}
        #: Told ``(task, True)`` when a task starts and ``(task, False)`` when it ends or
        #: is cancelled, before it leaves the model; None: nobody listens.
        self.listener: Callable[[Ptask, bool], None] | None = None

    # ------------------------------------------------------------------ network
    def _link(self, hop: Hop) -> int:
        """The index of ``hop``'s link constraint in :attr:`_link_list`, made at its first use."""
        index = self._link_index.get(hop.name)
        if index is None:
            index = self._link_index[hop.name] = len(self._link_list)
            self._link_list.append(Constraint(
                hop.bandwidth, FATPIPE if hop.sharing == FATPIPE else SHARED, hop.name))
        return index

    # ------------------------------------------------------------------ tasks
    def start(self, key: Hashable, hosts: Sequence[int], flops: Sequence[float],
              bytes_amount: Sequence[float] | None = None,
              speeds: Sequence[float] | None = None) -> Ptask:
        """Start a task (``L07Action::L07Action``).

        ``bytes_amount`` is the row-major ``len(hosts)`` x ``len(hosts)`` matrix, or None.
        ``speeds``: the hosts' speeds now if not their own (a machine in a switching
        pstate, slower than its own speed times its cores: the task's bound decides).
        """
        latency = 0.0
        lat_current = 0.0
        weights: list[tuple[int, float]] = []
        if bytes_amount is not None:
            amounts = np.asarray(bytes_amount, dtype=float)
            moving = np.flatnonzero(amounts > 0)
            if moving.size:
                links, sizes, lats = self._routes.pairs(hosts, moving)
                moved = amounts[moving]
                latency = float(lats.max())
                lat_current = float((lats * moved).max())
                per_link = np.repeat(moved, sizes)
                # System::expand per (pair, link), folded per link first (summed in the
                # pairs' order on a SHARED link, the largest on a FATPIPE one), one
                # element per link in the order they are met
                order = links[np.sort(np.unique(links, return_index=True)[1])].tolist()
                sums = np.bincount(links, weights=per_link, minlength=len(self._link_list))
                largest = np.zeros(len(self._link_list))
                np.maximum.at(largest, links, per_link)
                weights = [(index, float(largest[index] if self._link_list[index].policy
                                         == FATPIPE else sums[index])) for index in order]
        return self._place(key, hosts, flops, speeds, weights, latency, lat_current)

    def communicate(self, key: Hashable, src: int, dst: int, size: float) -> Ptask:
        """Start a ``size``-byte communication from host ``src`` to host ``dst``.

        ``NetworkL07Model::communicate``: a parallel task on the two hosts, nothing to
        compute, ``size`` bytes from the first to the second, in the same system as the
        other tasks (what a SimGrid mailbox put becomes under ``ptask_L07``). What
        :meth:`start` computes for its one moving cell, from the pair's route (its links
        with the times each occurs, and its latency) kept after its first message.
        """
        if not size > 0:
            return self.start(key, (src, dst), (0.0, 0.0), (0.0, size, 0.0, 0.0))
        route = self._pair_routes.get((src, dst))
        if route is None:
            links, _, lats = self._routes.pairs((src, dst), np.array([1], dtype=np.intp))
            times: dict[int, int] = {}
            for index in links.tolist():
                times[index] = times.get(index, 0) + 1
            route = self._pair_routes[(src, dst)] = (tuple(times.items()), float(lats[0]))
        links_times, latency = route
        weights = []
        for index, count in links_times:
            if self._link_list[index].policy == FATPIPE:
                weights.append((index, size))
            else:
                total = 0.0
                for _ in range(count):  # np.bincount's running sum over the route's hops
                    total += size
                weights.append((index, total))
        return self._place(key, (src, dst), (0.0, 0.0), None, weights, latency,
                           latency * size)

    def _place(self, key: Hashable, hosts: Sequence[int], flops: Sequence[float],
               speeds: Sequence[float] | None, weights: list[tuple[int, float]],
               latency: float, lat_current: float) -> Ptask:
        """The task's variable on its hosts' CPUs and its links, its latency and bound."""
        system = self._system
        var = system.variable_new(key, 1.0, -1.0)
        if latency > 0:
            system.update_variable_penalty(var, 0.0)
        for i, host in enumerate(hosts):
            system.expand(self._cpu[host], var, flops[i], force_creation=True)
        for index, weight in weights:
            system.expand(self._link_list[index], var, weight)
        cpu_bound = _DBL_MAX
        used_hosts = 0
        for i, host in enumerate(hosts):
            if flops[i] > 0:
                used_hosts += 1
                speed = self._speed[host] if speeds is None else speeds[i]
                cpu_bound = min(cpu_bound, speed / flops[i])
        net_bound = TCP_GAMMA / (2.0 * lat_current) if lat_current > 0 else _DBL_MAX
        task = Ptask(key, tuple(hosts), tuple(flops), var, latency,
                     0.0 if not weights and not used_hosts else 1.0,
                     min(net_bound, cpu_bound))
        self._update_bound(task)
        self.tasks[key] = task
        if self.listener is not None:
            self.listener(task, True)
        return task

    def _update_bound(self, task: Ptask) -> None:
        """``L07Action::update_bound``: the bound applies once the latency is paid."""
        if task.bound < _DBL_MAX and task.latency <= 0.0:
            self._system.update_variable_bound(task.variable, task.bound)

    def cancel(self, key: Hashable) -> None:
        """Remove a task before its end (a killed job)."""
        task = self.tasks.pop(key)
        if self.listener is not None:
            self.listener(task, False)
        self._system.variable_free(task.variable)

    # ------------------------------------------------------------------ time
    def next_event(self) -> float:
        """Seconds until the next task end or latency expiry, inf if none.

        ``HostL07Model::next_occurring_event``.
        """
        self._system.solve()
        soonest = -1.0
        for task in self.tasks.values():
            rate = task.variable.value
            if rate > 0:
                value = task.remains / rate if task.remains > 0 else 0.0
                if soonest < 0 or value < soonest:
                    soonest = value
        for task in self.tasks.values():
            if task.latency > 0 and (soonest < 0 or task.latency < soonest):
                soonest = task.latency
        if soonest < 0:
            # a task with nothing left (or a zero-rate one) ends at the next update
            return 0.0 if any(t.remains <= 0 and t.latency <= 0 for t in self.tasks.values()) \
                else _INF
        return soonest

    def advance(self, delta: float) -> list[Hashable]:
        """Move ``delta`` seconds at the current rates; the keys of the tasks done.

        ``HostL07Model::update_actions_state``; the tasks done leave the model. Call
        it for the time since the last change, before starting or cancelling tasks.
        """
        self._system.solve()
        done: list[Hashable] = []
        system = self._system
        for task in list(self.tasks.values()):
            if task.latency > 0:
                if task.latency > delta:
                    task.latency = double_update(task.latency, delta, SURF_PRECISION)
                else:
                    task.latency = 0.0
                if task.latency <= 0.0:
                    self._update_bound(task)
                    system.update_variable_penalty(task.variable, 1.0)
            task.remains = double_update(task.remains, task.variable.value * delta,
                                         MAXMIN_PRECISION * SURF_PRECISION)
            if task.remains <= 0 and task.variable.penalty > 0:
                done.append(task.key)
                del self.tasks[task.key]
                if self.listener is not None:
                    self.listener(task, False)
                system.variable_free(task.variable)
        return done

    def rate(self, key: Hashable) -> float:
        """The fraction of task ``key`` done per second at the current rates."""
        self._system.solve()
        return self.tasks[key].variable.value

    def host_load(self, host: int) -> float:
        """Flop/s host ``host`` delivers at the current rates (for a power model)."""
        self._system.solve()
        return sum(elem.weight * elem.variable.value
                   for elem in self._cpu[host].elements.values() if elem.variable.penalty > 0)

    def host_share(self, host: int) -> float:
        """Share of host ``host``'s capacity (speed x cores) in use at the current rates.

        What SimGrid's host-energy plugin reads as the CPU load (``get_load() / speed /
        core_count``, ``host_energy.cpp``).
        """
        return self.host_load(host) / self._cpu[host].bound
