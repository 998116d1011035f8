"""``agent``: a learned (or any) action function deciding job by job, beside Batsim or offline.

The decision rule is a function ``act(obs, info) -> action`` over the observation of
:mod:`.observation` (a window of waiting jobs and the machines): the action ``i < W``
starts the window's ``i``-th job now on the machines the allocator gives (lowest free
ids by default, batsched's choice), ``W`` waits for the next Batsim message. This is the
action space of RLScheduler (Zhang, Dai, He, Bao & Xie, *RLScheduler: an automated HPC
batch job scheduler using reinforcement learning*, SC 2020, §3.2: pick one job of the
observed queue window at each decision), with an explicit "wait" as in DeepRM (Mao et
al., HotNets 2016, §2: the void action ends the time step's choices).

Each Batsim message: jobs that can never run (no machine, larger than the platform or
than every group with ``one_group``) are rejected, as FCFS does; then, while some job of
the window fits, ``act`` is asked once per job to start, each time with the observation
updated by the starts already chosen; "wait", or an action that does not fit (never an
error; :meth:`stats` counts them), ends the message's decisions. When nothing runs and
no job will be submitted any more, waiting would stop the simulation forever (Batsim
would wait for ever): the mask forbids it then, and an invalid action starts the
window's first job that fits. When no
job of the window fits, ``act`` is not asked at all.

The same class runs under ``batpolicy simulate``/``serve`` (``--policy agent:TARGET``,
:mod:`.loading`) and inside the Gymnasium environment (:mod:`batpolicy.gym`), where
``act`` hands the observation to the learner and returns its action.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from itertools import islice
from typing import Any

import numpy as np

from batpolicy.policies.agent.observation import Observer
from batpolicy.policies.base import PLACEMENT_PARAMETERS, Decisions, Parameter, Placement, Policy
from batpolicy.protocol.intervals import MachineSet
from batpolicy.protocol.types import Decision, ExecuteJob, RejectJob
from batpolicy.scheduler.jobs import Job
from batpolicy.scheduler.view import PolicyView

__all__ = ["ActionFunction", "AgentPolicy", "DEFAULT_WINDOW"]

#: ``act(obs, info) -> action``: the decision rule an agent policy runs.
ActionFunction = Callable[[Mapping[str, np.ndarray], Mapping[str, Any]], Any]

#: Jobs in the observed window unless ``window`` (or the agent's own ``window``) says.
DEFAULT_WINDOW = 32


def as_action(action: Any) -> int | None:
    """An action as an int (a numpy scalar or one-element array too), None if it is none.

    >>> as_action(3), as_action(np.array([2])), as_action("x"), as_action(1.5)
    (3, 2, None, None)
    """
    try:
        if isinstance(action, np.ndarray):
            if action.size != 1:
                return None
            action = action.reshape(()).item()
        return operator.index(action)
    except TypeError:
        return None


class AgentPolicy(Policy):
    """Start the jobs an action function picks from a window of the queue, one at a time."""

    name = "agent"
    parameters = (Parameter("window", int, 0, "waiting jobs observed (0: the agent's own "
                            f"window attribute, else {DEFAULT_WINDOW})"),
                  *PLACEMENT_PARAMETERS)

    def __init__(self, params: Mapping[str, Any] | None = None, *,
                 act: ActionFunction | None = None, label: str = "agent") -> None:
        super().__init__(params)
        if act is None:
            raise ValueError("an agent policy needs an action function (act=...)")
        self.act = act
        self.label = label
        window = self.params["window"] or getattr(act, "window", None) or DEFAULT_WINDOW
        self.window = int(window)
        self.placement = Placement(self.params)
        self.observer: Observer | None = None
        self._rejected: list[Job] = []
        #: Waiting jobs that can run, in submission order (the window is its head).
        self._queue: dict[str, Job] = {}
        self._waiting_res = 0.0
        self.nb_asked = 0
        self.nb_invalid = 0

    # ------------------------------------------------------------------- hooks
    def _observer(self, view: PolicyView) -> Observer:
        observer = self.observer
        if observer is None or observer.nb_machines != view.nb_machines:
            observer = self.observer = Observer(self.window, view, self._fits_with(view))
        return observer

    def _fits_with(self, view: PolicyView) -> Callable[[Job, MachineSet], bool] | None:
        placement = self.placement
        if placement.plain:
            return None  # the observer's vectorised count test
        allocate, platform = placement.allocator.allocate, placement.platform(view)
        return lambda job, free: job.res <= len(free) and \
            allocate(free, job, platform) is not None

    def on_simulation_begins(self, view: PolicyView) -> Decisions:
        """The machines are known: build the observer."""
        self._observer(view)
        return None

    def on_job_submitted(self, job: Job, view: PolicyView) -> Decisions:
        """Queue it, or reject it in :meth:`decide` if it can never run."""
        if self.placement.can_ever_run(job, view):
            self._queue[job.id] = job
            self._waiting_res += job.res
        else:
            self._rejected.append(job)
        return None

    def on_job_completed(self, job: Job, view: PolicyView) -> Decisions:
        """Its machines are idle again."""
        if self.observer is not None:
            self.observer.ended(job.allocation)
        return None

    # ------------------------------------------------------------------ decide
    def decide(self, now: float, view: PolicyView) -> list[Decision]:
        """Reject what can never run, then ask ``act`` while a job of the window fits."""
        out: list[Decision] = []
        if self._rejected:
            out.extend(RejectJob(job.id) for job in self._rejected)
            self._rejected.clear()
        queue = self._queue
        if not queue:
            return out
        free = view.free
        if not free:
            return out
        observer = self._observer(view)
        placement = self.placement
        platform = None if placement.plain else placement.platform(view)
        allocate = placement.allocator.allocate
        size = self.window
        act = self.act
        out_started = False
        while True:
            jobs = tuple(islice(queue.values(), size))
            obs, mask = observer.observe(now, view, free, jobs, len(queue), self._waiting_res)
            if not mask[:-1].any():
                break  # nothing of the window fits: wait, without asking
            if not out_started and not view.running and view.no_more_static_jobs:
                mask[size] = 0  # nothing would ever happen again: waiting is not allowed
            self.nb_asked += 1
            action = as_action(act(obs, {"action_mask": mask, "time": now,
                                         "job_ids": [job.id for job in jobs]}))
            if action is None or not 0 <= action < len(mask) or not mask[action]:
                self.nb_invalid += 1
                if mask[size]:
                    break  # treated as "wait"
                action = int(np.flatnonzero(mask)[0])  # the first job that fits
            if action == size:
                break
            out_started = True
            job = jobs[action]
            alloc = free.lowest(job.res) if placement.plain else allocate(free, job, platform)
            free = free - alloc
            out.append(ExecuteJob(job.id, alloc))
            observer.started(job, alloc, now)
            del queue[job.id]
            self._waiting_res -= job.res
            if not free or not queue:
                break
        return out

    def stats(self) -> dict[str, Any]:
        """Decision points where the agent was asked, and its invalid actions."""
        return {"agent": self.label, "window": self.window, "nb_asked": self.nb_asked,
                "nb_invalid_actions": self.nb_invalid}
