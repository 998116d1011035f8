"""``batpolicy/Scheduling-v0``: a Gymnasium environment over the embedded simulator.

A step is a decision of :class:`~batpolicy.policies.agent.AgentPolicy`: the agent sees a
window of waiting jobs and the machines (:mod:`batpolicy.policies.agent.observation`)
and picks a job of the window to start now, or waits for the next event (the last
action). The simulation under it is ``batpolicy simulate``'s: Batsim 4.2.1's semantics
from the same inputs, platforms, job models and drivers (the latency driver where
:func:`~batpolicy.simulator.latency.driver.make_simulator` picks it, unless
``zero_latency``), so an episode driven by an action
function gives the ``jobs.csv`` that ``batpolicy simulate --policy agent:...`` gives with
it, and beside real Batsim ``batpolicy serve --policy agent:...`` runs the very same
policy and observation code.

The simulation runs in a helper thread that hands control back at each decision
(:mod:`.episode`), one thread at a time: the same seed and actions give the same
episode, byte for byte. Episodes are the whole workload, or with ``episode_jobs=N`` a
slice of ``N`` consecutive jobs starting at a job drawn from ``reset(seed=...)``'s
generator, moved to start at time 0 (RLScheduler's training sequences, Zhang et al.,
SC 2020, §4.1).
"""

from __future__ import annotations

import logging
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from batpolicy.errors import ConfigError
from batpolicy.gym.episode import Decision, EpisodeThread, Finished
from batpolicy.gym.rewards import Reward, StepOutcome, make_reward
from batpolicy.io.inputs import InputSpec, load_inputs
from batpolicy.io.metrics import run_metrics
from batpolicy.io.result import JobRecord
from batpolicy.io.transform import head, time_window
from batpolicy.io.workload import Workload
from batpolicy.policies.agent.observation import (
    CLUSTER_FEATURES,
    JOB_FEATURES,
    MACHINE_FEATURES,
)
from batpolicy.policies.agent.policy import DEFAULT_WINDOW, AgentPolicy, as_action
from batpolicy.scheduler.dispatch import Dispatcher
from batpolicy.scheduler.state import ClusterState
from batpolicy.simulator.engine.simulator import Simulator
from batpolicy.simulator.latency.driver import make_simulator
from batpolicy.simulator.options import SimOptions
from batpolicy.simulator.run import output_layout, run_simulation

__all__ = ["ENV_ID", "SchedulingEnv"]

log = logging.getLogger(__name__)

#: The environment's id in Gymnasium's registry.
ENV_ID = "batpolicy/Scheduling-v0"


class _Episode:
    """One episode's simulation (the helper thread's work) and what it leaves behind.

    Holds no reference to the environment, so that the environment's finaliser can end
    the thread of an environment nobody closed.
    """

    def __init__(self, env: SchedulingEnv, workloads: list[Workload]) -> None:
        self.workloads = workloads
        self.platform = env._platform
        self.events = env._events
        self.options = env._options
        self.zero_latency = env._zero_latency
        self.tau = env._tau
        self.params = env._policy_params
        self.output_dir = env._output_dir
        self.describe = env._describe
        self.records: list[JobRecord] = []
        self.simulator: Simulator | None = None
        self.policy: AgentPolicy | None = None

    def _simulator(self, on_record: Callable[[JobRecord], None]) -> Simulator:
        def both(record: JobRecord) -> None:
            self.records.append(record)
            on_record(record)

        self.simulator = make_simulator(self.workloads, self.platform, events=self.events,
                                        options=self.options, on_record=both,
                                        zero_latency=self.zero_latency)
        return self.simulator

    def __call__(self, act: Callable[[Any, Any], Any]) -> dict[str, Any]:
        """Simulate the episode, ``act`` answering each decision; the run's metrics."""
        policy = self.policy = AgentPolicy(self.params, act=act, label="gym")
        state = ClusterState(platform_file=self.platform)
        dispatcher = Dispatcher(policy, state)
        nb_jobs = sum(len(w.jobs) for w in self.workloads)
        extra, groups = output_layout(self.workloads, self.platform, self.options)
        if self.output_dir is not None:
            from batpolicy.io.outputs import OutputPaths

            report = run_simulation(self._simulator, dispatcher.handle,
                                    OutputPaths.in_dir(self.output_dir), nb_jobs=nb_jobs,
                                    tau=self.tau, progress=False, describe=self.describe,
                                    policy_stats=policy.stats,
                                    nb_decisions=lambda: dispatcher.nb_decisions,
                                    extra_columns=extra, groups=groups, tune_gc=False)
            return report.metrics
        began = time.perf_counter()
        simulator = self._simulator(lambda record: None)
        result = simulator.run(dispatcher.handle)
        return run_metrics(result, time.perf_counter() - began, self.tau, None, self.describe,
                           policy.stats, lambda: dispatcher.nb_decisions, groups)

    def energy_joules(self) -> float | None:
        """Batsim's consumed_joules so far (0 before the first job end), None without -E."""
        energy = self.simulator.parts.energy if self.simulator is not None else None
        if energy is None:
            return None
        return max(energy.consumed_joules(), 0.0)


class SchedulingEnv(gym.Env[dict[str, np.ndarray], np.int64]):
    """Start one job of a window of the queue per step, or wait (module docstring).

    Inputs are ``batpolicy simulate``'s: ``workload`` (a file or a list; None: the bundled
    250-job workload on 128 machines), ``platform`` (SimGrid XML) or ``nb_res``,
    ``events``, the selection ``max_jobs``/``start``/``end``, ``job_model``,
    ``energy`` (Batsim's -E), ``zero_latency``, ``options`` (more
    :class:`~batpolicy.simulator.options.SimOptions` fields). ``output_dir``: each
    episode writes Batsim's outputs and metrics.json there, replacing the previous
    episode's. ``window``: jobs observed; ``reward``: a name of
    :data:`~batpolicy.gym.rewards.REWARDS` or a callable; ``tau``: the bounded
    slowdown's; ``allocator`` and ``one_group``: the placement
    (:data:`~batpolicy.policies.base.PLACEMENT_PARAMETERS`).

    Observation: a dict of ``jobs`` (window x job features), ``job_mask``, ``machines``
    (machines x machine features) and ``cluster``; action: ``Discrete(window + 1)``, the
    last being "wait". ``info["action_mask"]`` marks the jobs that fit; an action that
    does not fit waits (``info["invalid_action"]``), never an error. The last step's
    ``info["metrics"]`` is the run's metrics.json content.
    """

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, workload: str | Path | Sequence[str | Path] | None = None,
                 platform: str | Path | None = None, output_dir: str | Path | None = None,
                 *, nb_res: int | None = None, events: Sequence[str | Path] = (),
                 window: int = DEFAULT_WINDOW, reward: str | Reward = "bsld",
                 episode_jobs: int | None = None, max_jobs: int | None = None,
                 start: float | None = None, end: float | None = None,
                 job_model: str = "profile", energy: bool = False, zero_latency: bool = False,
                 tau: float = 10.0, allocator: str = "lowest", one_group: bool = False,
                 lenient: bool = False, options: Mapping[str, Any] | None = None,
                 render_mode: str | None = None) -> None:
        if window < 1:
            raise ConfigError(f"window must be >= 1 job, got {window}")
        if not tau > 0:
            raise ConfigError(f"tau must be > 0 s, got {tau}")
        if episode_jobs is not None and episode_jobs < 1:
            raise ConfigError(f"episode_jobs must be >= 1, got {episode_jobs}")
        paths = (workload,) if isinstance(workload, str | Path) else tuple(workload or ())
        spec = InputSpec(workloads=tuple(str(p) for p in paths),
                         platform=None if platform is None else str(platform), nb_res=nb_res,
                         events=tuple(str(e) for e in events), lenient=lenient,
                         max_jobs=max_jobs, start=start, end=end)
        self._workloads, self._platform, self._events = load_inputs(spec)
        if episode_jobs is not None and len(self._workloads) != 1:
            raise ConfigError("episode_jobs slices one workload; give one")
        self._options = SimOptions(default_job_model=job_model, energy=energy,
                                   **dict(options or {}))
        self._zero_latency = zero_latency
        self._tau = float(tau)
        self._reward_spec = reward
        make_reward(reward)  # an unknown name fails here, not at the first step
        self._episode_jobs = episode_jobs
        self._output_dir = None if output_dir is None else Path(output_dir)
        self._policy_params = {"window": window, "allocator": allocator,
                               "one_group": one_group}
        AgentPolicy(self._policy_params, act=lambda obs, info: 0)  # bad params fail here
        self.window = window
        nb_machines = self._platform.nb_machines
        if self._options.mmax:
            nb_machines = min(nb_machines, self._options.mmax)
        self.nb_machines = nb_machines
        self._describe = {"policy": "agent", "scheduler": "batpolicy.gym",
                          "params": dict(self._policy_params),
                          "workloads": [w.source for w in self._workloads],
                          "platform": self._platform.source
                          or f"{self._platform.nb_machines} identical machines",
                          "job_model": [job_model]}
        inf = np.inf
        self.observation_space = spaces.Dict({
            "jobs": spaces.Box(-inf, inf, (window, len(JOB_FEATURES)), np.float64),
            "job_mask": spaces.MultiBinary(window),
            "machines": spaces.Box(-1.0, inf, (nb_machines, len(MACHINE_FEATURES)),
                                   np.float64),
            "cluster": spaces.Box(0.0, inf, (len(CLUSTER_FEATURES),), np.float64),
        })
        self.action_space = spaces.Discrete(window + 1)
        self.render_mode = render_mode
        self._thread: EpisodeThread | None = None
        self._finalizer: weakref.finalize | None = None
        self._run: _Episode | None = None
        self._reward: Reward | None = None
        self._seen = 0
        self._time = 0.0
        self._nb_jobs = 0
        self._mask: np.ndarray | None = None
        self._done = True
        self._pending: Finished | None = None
        self._nb_episodes = 0

    # ------------------------------------------------------------------ episodes
    def _episode_workloads(self) -> tuple[list[Workload], dict[str, Any]]:
        """The whole workload, or a seeded slice of ``episode_jobs`` jobs from 0."""
        size = self._episode_jobs
        if size is None:
            return self._workloads, {}
        (whole,) = self._workloads
        jobs = whole.jobs
        if size >= len(jobs):
            first = 0
        else:
            first = int(self.np_random.integers(0, len(jobs) - size + 1))
        part = head(time_window(whole, start=jobs[first].subtime, shift=True), size)
        return [part], {"first_job": jobs[first].id, "first_subtime": jobs[first].subtime,
                        "nb_jobs": len(part.jobs)}

    def _end_episode(self) -> None:
        if self._finalizer is not None:
            self._finalizer()  # closes the thread (abandoning a pending decision)
            self._finalizer = None
        self._thread = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Start an episode: the whole workload, or a slice drawn with ``seed``."""
        super().reset(seed=seed)
        self._end_episode()
        workloads, where = self._episode_workloads()
        self._run = run = _Episode(self, workloads)
        self._reward = make_reward(self._reward_spec)
        self._seen = 0
        self._time = 0.0
        self._nb_jobs = sum(len(w.jobs) for w in workloads)
        self._nb_episodes += 1
        thread = self._thread = EpisodeThread(run, f"batpolicy-gym-{id(self):x}")
        self._finalizer = weakref.finalize(self, thread.close)
        self._done = False
        point = thread.start()
        if isinstance(point, Finished):  # no decision at all: the first step ends it
            if point.error is not None:
                self._done = True
                raise point.error
            self._pending = point
            mask = np.zeros(self.window + 1, dtype=np.int8)
            mask[-1] = 1
            self._mask = mask
            obs, info = self._empty(), {"action_mask": mask, "time": 0.0, "job_ids": []}
        else:
            self._pending = None
            obs, info, _, _ = self._observe(point)
        if where:
            info["episode"] = where
        return obs, info

    def _observe(self, point: Decision | Finished
                 ) -> tuple[dict[str, np.ndarray], dict[str, Any], float, bool]:
        """Observation, info, reward and termination of a decision or of the end."""
        run = self._run
        assert run is not None and self._reward is not None
        records = run.records[self._seen:]
        self._seen = len(run.records)
        if isinstance(point, Finished):
            if point.error is not None:
                self._done = True
                raise point.error
            metrics = point.result
            now = run.simulator.now if run.simulator is not None else self._time
            outcome = StepOutcome(records, self._time, now, self._nb_jobs, self._tau,
                                  run.energy_joules(), True, metrics)
            reward = float(self._reward(outcome))
            self._time = now
            mask = np.zeros(self.window + 1, dtype=np.int8)
            mask[-1] = 1
            self._mask = mask
            return self._empty(), {"action_mask": mask, "time": now, "job_ids": [],
                                   "metrics": metrics}, reward, True
        info = point.info
        now = float(info["time"])
        outcome = StepOutcome(records, self._time, now, self._nb_jobs, self._tau,
                              run.energy_joules())
        reward = float(self._reward(outcome))
        self._time = now
        self._mask = info["action_mask"]
        return dict(point.obs), dict(info), reward, False

    def _empty(self) -> dict[str, np.ndarray]:
        space = self.observation_space
        return {name: np.zeros(sub.shape, dtype=sub.dtype)  # type: ignore[union-attr]
                for name, sub in space.spaces.items()}

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool,
                                         dict[str, Any]]:
        """Start the window's job ``action`` now (the last: wait); run to the next decision.

        An action that is not allowed waits, flagged ``info["invalid_action"]``.
        """
        if self._thread is None or self._done:
            raise RuntimeError("call reset() before step(), and after an episode ended")
        mask = self._mask
        index = as_action(action)
        invalid = index is None or mask is None or not 0 <= index < len(mask) \
            or not mask[index]
        point: Decision | Finished
        if self._pending is not None:
            point, self._pending = self._pending, None
        else:
            point = self._thread.send(action)
        obs, info, reward, terminated = self._observe(point)
        info["invalid_action"] = invalid
        if terminated:
            self._done = True
            self._end_episode()
        return obs, reward, terminated, False, info

    def close(self) -> None:
        """End the current episode's thread (its outputs are written as far as it got)."""
        self._end_episode()
        self._done = True
