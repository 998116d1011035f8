"""Learning schedulers: a Gymnasium environment over the embedded simulator (docs/gym.md).

Importing :mod:`batpolicy.gym` registers ``batpolicy/Scheduling-v0``
(:class:`~batpolicy.gym.env.SchedulingEnv`)::

    import gymnasium, batpolicy.gym
    env = gymnasium.make("batpolicy/Scheduling-v0", workload="trace.swf.gz")

:mod:`.baselines` holds FCFS, SJF and EASY as action functions, :mod:`.pg` a small
numpy policy-gradient agent. Gymnasium is the optional extra ``batpolicy[gym]``; without
it the baselines and the agent still import (``--policy agent:...`` needs no Gymnasium),
and only the environment is missing.
"""

from __future__ import annotations

try:
    from gymnasium.envs.registration import register, registry
except ImportError:  # pragma: no cover - batpolicy[gym] not installed
    register = None

ENV_ID = "batpolicy/Scheduling-v0"

if register is not None and ENV_ID not in registry:
    register(id=ENV_ID, entry_point="batpolicy.gym.env:SchedulingEnv")

__all__ = ["ENV_ID"]
