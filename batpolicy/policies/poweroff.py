"""A power-off layer over our backfilling policies: idle machines sleep, the queue wakes them.

The timeout policy of the energy-saving literature (e.g. Pinheiro et al. 2001's
load-driven node shutdown; batsched's ``energy_bf_idle_sleeper`` is Batsim's example):

1. the inner policy (``policy``: fcfs, easy or conservative, defaults) schedules on the
   machines that are awake and free; sleeping and switching machines are not free for
   it (the state takes them out of ``free`` when they are sent to sleep and puts them
   back when RESOURCE_STATE_CHANGED says they are awake, :mod:`batpolicy.scheduler.state`);
2. a machine idle for ``idle_timeout`` seconds (τ) is sent to the platform's first
   sleep pstate (``sleep_pstates`` host property), highest ids first, as long as
   ``keep_awake`` machines stay awake and no job waits (an idle machine switched off
   while the head waits for its reservation lets a job backfilled on the awake ones
   delay it: on whole KTH, jobs of 87-99 of the 100 machines waited up to 5.7 days
   against EASY's 0.9-2.4);
3. the waiting jobs, in queue order, take the machines they fit on: idle ones first,
   then waking ones, then sleeping ones, which are woken at once (lowest ids first), as
   batsched's ``energy_bf_idle_sleeper`` awakens for all jobs;
4. the queue's head job always has as many machines awake (busy or not) as it asks
   for: sleeping ones are woken up to that number.
   The inner policy sees only awake machines; with fewer than the head needs, its
   reservation would never come and later jobs would backfill past the head without
   end (batsched's idle sleeper counts sleeping machines in the priority job's
   reservation for the same reason).

It needs Batsim's ``-E`` (``simulate --energy``, or real Batsim with ``-E``) and a
platform with ``sleep_pstates``; on a platform without, it warns and the inner policy
schedules alone.
"""

from __future__ import annotations

import logging
import math
from typing import Any

from batpolicy.errors import ConfigError
from batpolicy.policies.base import Decisions, Parameter, Policy
from batpolicy.protocol import types as t
from batpolicy.protocol.intervals import MachineSet
from batpolicy.scheduler.jobs import Job
from batpolicy.scheduler.view import PolicyView

__all__ = ["PowerOff"]

log = logging.getLogger(__name__)

#: The inner policies the layer composes with.
INNER = ("easy", "conservative", "fcfs")


class PowerOff(Policy):
    """Switch idle machines off after τ, wake them for the queue (module docstring)."""

    name = "poweroff"
    needs_energy = True
    parameters = (
        Parameter("policy", str, "easy", "the backfilling policy scheduling the awake "
                  "machines (its defaults)", choices=INNER),
        Parameter("idle_timeout", float, 60.0, "seconds a machine stays idle before it is "
                  "switched off (tau)"),
        Parameter("keep_awake", int, 0, "machines never switched off"),
        Parameter("compute_pstate", int, 0, "the pstate a woken machine computes in"),
    )

    def __init__(self, params: dict[str, Any] | None = None) -> None:
        super().__init__(params)
        from batpolicy.policies.registry import make_policy

        if self.params["idle_timeout"] < 0 or self.params["keep_awake"] < 0:
            raise ConfigError("poweroff: idle_timeout and keep_awake must be >= 0")
        self.inner = make_policy(self.params["policy"])
        self._sleep_pstate: str | None = None
        self._idle_since: dict[int, float] = {}
        self._going_off: set[int] = set()
        self._asleep: set[int] = set()
        self._waking: set[int] = set()
        self._calls: set[float] = set()
        self.nb_switch_off = 0
        self.nb_switch_on = 0

    # ------------------------------------------------------------ hooks, passed on
    def on_simulation_begins(self, view: PolicyView) -> Decisions:
        """Find the sleep pstate in the machines' ``sleep_pstates`` property."""
        machines = view.platform.machines
        text = machines[0].properties.get("sleep_pstates") if machines else None
        if not text:
            log.warning("poweroff: the platform's machines have no sleep_pstates property "
                        "(an energy platform is needed): no machine is switched off, "
                        "'%s' schedules alone", self.params["policy"])
        else:
            self._sleep_pstate = str(text).split(",")[0].split(":")[0].strip()
        return self.inner.on_simulation_begins(view)

    def on_job_submitted(self, job: Job, view: PolicyView) -> Decisions:
        """Passed on to the inner policy."""
        return self.inner.on_job_submitted(job, view)

    def on_job_completed(self, job: Job, view: PolicyView) -> Decisions:
        """Passed on to the inner policy."""
        return self.inner.on_job_completed(job, view)

    def on_job_killed(self, event: t.JobKilled, view: PolicyView) -> Decisions:
        """Passed on to the inner policy."""
        return self.inner.on_job_killed(event, view)

    def on_resources_changed(self, event: t.Event, view: PolicyView) -> Decisions:
        """A switch ended: the machines sleep, or are awake again."""
        if isinstance(event, t.ResourceStateChanged):
            machines = set(event.resources)
            if event.state == self._sleep_pstate:
                self._going_off -= machines
                self._asleep |= machines
            else:
                self._waking -= machines
        return self.inner.on_resources_changed(event, view)

    def on_requested_call(self, now: float, view: PolicyView) -> Decisions:
        """Passed on to the inner policy (the layer's own calls only make it decide)."""
        self._calls = {c for c in self._calls if c > now}
        return self.inner.on_requested_call(now, view)

    def on_notify(self, event: t.Notify, view: PolicyView) -> Decisions:
        """Passed on to the inner policy."""
        return self.inner.on_notify(event, view)

    def on_simulation_ends(self, view: PolicyView) -> Decisions:
        """Passed on to the inner policy."""
        return self.inner.on_simulation_ends(view)

    # ------------------------------------------------------------ decide
    def decide(self, now: float, view: PolicyView) -> list[t.Decision]:
        """The inner policy's decisions, then switches off and wake-ups.

        Runtime complexity: the inner policy's, plus O(machines + waiting jobs).
        """
        decisions = list(self.inner.decide(now, view))
        if self._sleep_pstate is None:  # no energy platform: the inner policy alone
            return decisions
        started: set[int] = set()
        for d in decisions:
            if isinstance(d, t.ExecuteJob):
                started |= set(d.alloc)
        idle = set(view.free) - started
        for m in list(self._idle_since):
            if m not in idle:
                del self._idle_since[m]
        for m in idle:
            self._idle_since.setdefault(m, now)
        decided = {d.job_id for d in decisions if isinstance(d, (t.ExecuteJob, t.RejectJob))}
        waiting = [job for job in view.waiting.values() if job.id not in decided]
        wake = self._wake_for(waiting, len(idle))
        awake = view.nb_machines - len(self._going_off | self._asleep) + len(wake)
        head = waiting[0].res if waiting else 0
        if head > awake:  # the head's reservation needs them: the inner policy sees
            # only awake machines, and would otherwise backfill past it without end
            more = sorted(self._asleep - set(wake))[:head - awake]
            wake += more
            awake += len(more)
        if wake:
            self._asleep -= set(wake)
            self._waking |= set(wake)
            self.nb_switch_on += len(wake)
            decisions.append(t.SetResourceState(MachineSet(wake),
                                                str(self.params["compute_pstate"])))
        if waiting:  # idle machines wait for the queue (the head's reservation may need
            # them: switched off, a backfilled job could hold the awake ones past it)
            return decisions
        tau = self.params["idle_timeout"]
        spare = awake - self.params["keep_awake"]
        due = sorted((m for m, since in self._idle_since.items() if since + tau <= now),
                     reverse=True)[:max(spare, 0)]
        if due:
            for m in due:
                del self._idle_since[m]
            self._going_off |= set(due)
            self.nb_switch_off += len(due)
            decisions.append(t.SetResourceState(MachineSet(due), self._sleep_pstate or "0"))
        if spare - len(due) > 0:
            later = min((since + tau for m, since in self._idle_since.items()),
                        default=math.inf)
            if later < math.inf and later > now and later not in self._calls:
                self._calls.add(later)
                decisions.append(t.CallMeLater(later))
        return decisions

    def _wake_for(self, waiting: list[Job], nb_idle: int) -> list[int]:
        """Sleeping machines to wake for the queue.

        As batsched's ``energy_bf_idle_sleeper`` (``select_idle_machines_to_awaken``,
        awakening for all jobs): the waiting jobs in queue order, each one that fits on
        the machines left takes idle machines first, then waking ones, then sleeping
        ones; the sleeping machines taken are woken (lowest ids first).
        Runtime complexity: O(waiting jobs).
        """
        idle, waking, asleep = nb_idle, len(self._waking), len(self._asleep)
        woken = 0
        for job in waiting:
            left = idle + waking + asleep
            if left == 0:
                break
            if job.res > left:
                continue
            need = job.res
            take = min(idle, need)
            idle, need = idle - take, need - take
            take = min(waking, need)
            waking, need = waking - take, need - take
            asleep, woken = asleep - need, woken + need
        return sorted(self._asleep)[:woken]

    def stats(self) -> dict[str, Any]:
        """Switches asked, and the inner policy's stats."""
        return {"nb_switch_off": self.nb_switch_off, "nb_switch_on": self.nb_switch_on,
                **self.inner.stats()}
