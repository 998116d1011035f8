"""Agents: policies whose decisions come from an action function over an observation.

:class:`~.policy.AgentPolicy` (``--policy agent:TARGET``, :mod:`.loading`) asks an action
function which job of a window of the queue to start; :mod:`.observation` builds what it
sees. The Gymnasium environment of :mod:`batpolicy.gym` drives the same class, so an
agent trained there runs unchanged beside Batsim.
"""

from batpolicy.policies.agent.loading import is_agent, load_action, make_agent_policy
from batpolicy.policies.agent.observation import (
    CLUSTER_FEATURES,
    JOB_FEATURES,
    MACHINE_FEATURES,
    Observer,
)
from batpolicy.policies.agent.policy import DEFAULT_WINDOW, ActionFunction, AgentPolicy

__all__ = ["CLUSTER_FEATURES", "DEFAULT_WINDOW", "JOB_FEATURES", "MACHINE_FEATURES",
           "ActionFunction", "AgentPolicy", "Observer", "is_agent", "load_action",
           "make_agent_policy"]
