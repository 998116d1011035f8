"""A small numpy policy-gradient agent for ``batpolicy/Scheduling-v0`` (docs/gym.md).

REINFORCE (Williams, *Simple statistical gradient-following algorithms for connectionist
reinforcement learning*, Machine Learning 8, 1992, eq. 11) with the mean return as
baseline, over a linear softmax policy that scores each job of the window from its own
features, as RLScheduler's kernel network does (Zhang et al., SC 2020, §3.3: one score
per job, the same weights for every job, softmax over the jobs that may run), plus a
score for "wait". Greedy (the highest score) once trained, so a deployed agent is
deterministic. Only numpy: the saved agent (``.npz``) runs beside Batsim with
``--policy agent:FILE.npz`` and no Gymnasium.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from batpolicy.policies.agent.observation import JOB_FEATURES

__all__ = ["SoftmaxAgent", "train"]

_RES, _WALLTIME, _WAIT = (JOB_FEATURES.index(n) for n in ("res", "walltime", "wait"))
#: Features of a job row: bias, log size, log walltime, log waiting time, size share.
NB_FEATURES = 5


def job_features(obs: Mapping[str, np.ndarray]) -> np.ndarray:
    """Per window row: 1, log1p(res), log1p(walltime), log1p(wait), res / free machines."""
    jobs = obs["jobs"]
    nfree = max(float(obs["cluster"][1]), 1.0)
    out = np.empty((len(jobs), NB_FEATURES))
    out[:, 0] = 1.0
    out[:, 1] = np.log1p(jobs[:, _RES])
    out[:, 2] = np.log1p(np.maximum(jobs[:, _WALLTIME], 0.0))
    out[:, 3] = np.log1p(np.maximum(jobs[:, _WAIT], 0.0))
    out[:, 4] = jobs[:, _RES] / nfree
    return out


class SoftmaxAgent:
    """Linear job scores + a wait score, softmax over the allowed actions."""

    def __init__(self, window: int, theta: np.ndarray | None = None,
                 wait_score: float = -2.0) -> None:
        self.window = window
        self.theta = np.zeros(NB_FEATURES) if theta is None else np.asarray(theta, float)
        self.wait_score = float(wait_score)

    def probabilities(self, obs: Mapping[str, np.ndarray], mask: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray]:
        """Action probabilities (0 where masked) and the job features used."""
        features = job_features(obs)
        scores = np.append(features @ self.theta, self.wait_score)
        scores = np.where(mask.astype(bool), scores, -np.inf)
        scores -= scores.max()
        p = np.exp(scores)
        return p / p.sum(), features

    def __call__(self, obs: Mapping[str, np.ndarray], info: Mapping[str, Any]) -> int:
        """Greedy: the allowed action of highest score (ties: the oldest job)."""
        p, _ = self.probabilities(obs, info["action_mask"])
        return int(np.argmax(p))

    def save(self, path: str | Path) -> None:
        """Write the agent as ``.npz`` (``--policy agent:PATH`` loads it)."""
        np.savez(path, agent="batpolicy.gym.pg:SoftmaxAgent", theta=self.theta,
                 wait_score=self.wait_score, window=self.window)

    @classmethod
    def load(cls, path: str | Path) -> SoftmaxAgent:
        """Read an agent :meth:`save` wrote."""
        with np.load(path, allow_pickle=False) as data:
            return cls(int(data["window"]), data["theta"], float(data["wait_score"]))


def train(make_env: Callable[[], Any], agent: SoftmaxAgent, *, episodes: int, lr: float = 0.05,
          seed: int = 0, log: Callable[[int, float], None] | None = None) -> list[float]:
    """REINFORCE on ``episodes`` episodes (``reset(seed=seed + i)``); their returns."""
    rng = np.random.default_rng(seed)
    env = make_env()
    returns: list[float] = []
    try:
        for i in range(episodes):
            obs, info = env.reset(seed=seed + i)
            grads, rewards = [], []
            while True:
                mask = info["action_mask"]
                p, features = agent.probabilities(obs, mask)
                action = int(rng.choice(len(p), p=p))
                # d log p(a) / d theta = phi_a - E_p[phi] (the wait action has no phi)
                expected = p[:-1] @ features
                grad = (features[action] if action < len(p) - 1 else 0.0) - expected
                grads.append((grad, (action == len(p) - 1) - p[-1]))
                obs, reward, terminated, truncated, info = env.step(action)
                rewards.append(reward)
                if terminated or truncated:
                    break
            to_go = np.cumsum(rewards[::-1])[::-1]
            advantage = (to_go - to_go.mean()) / (to_go.std() + 1e-8)
            g_theta = sum(a * g for a, (g, _) in zip(advantage, grads, strict=True))
            g_wait = sum(a * w for a, (_, w) in zip(advantage, grads, strict=True))
            agent.theta += lr * g_theta / len(rewards)
            agent.wait_score += lr * g_wait / len(rewards)
            returns.append(float(sum(rewards)))
            if log is not None:
                log(i, returns[-1])
    finally:
        env.close()
    return returns
