"""The single policy registry: name → class.

It feeds ``--policy``, ``--help`` and ``batpolicy policies``. Adding a policy of ours is
its module plus one line below. Other installed packages add theirs through the
entry-point group ``batpolicy.policies`` (``name = "package.module:Class"``), found when
a command asks for the policies (:func:`available_policies`); see docs/add_a_policy.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from batpolicy.errors import ConfigError
from batpolicy.plugins import LazyClasses, with_plugins

if TYPE_CHECKING:
    from batpolicy.policies.base import Policy

#: Registered name -> ``module:Class`` under ``batpolicy.policies``. Names are known
#: without importing any policy, so ``--help`` and ``--version`` stay fast; a class is
#: imported the first time it is asked for (tests/test_cli.py checks each class's
#: ``name`` is its key).
_LOCATIONS: dict[str, str] = {
    "fcfs": "fcfs:Fcfs",
    "easy": "easy:EasyBackfilling",
    "easy-edc5": "easy_edc5:EasyEdc5",
    "conservative": "conservative:ConservativeBackfilling",
    "redirection": "redirection:Redirection",
    "dpsa-p": "dpsa:DpsaP",
    "dpsa-n": "dpsa:DpsaN",
    "dpsa-w": "dpsa:DpsaW",
    "edf": "deadline:Edf",
    "mt-edf": "deadline:MtEdf",
    "tabu": "deadline:Tabu",
    "nstep": "nstep:NStep",
    "coalloc": "coalloc:Coalloc",
    "poweroff": "poweroff:PowerOff",
}


POLICIES: Mapping[str, type[Policy]] = LazyClasses("batpolicy.policies", _LOCATIONS)



#: The entry-point group through which other packages register policies.
ENTRY_POINT_GROUP = "batpolicy.policies"


def available_policies() -> Mapping[str, type[Policy]]:
    """Our policies, plus those other installed packages register as entry points.

    A plug-in whose name is taken by one of ours, that fails to import or that is not
    a :class:`Policy` subclass is skipped with a warning naming it (never a traceback).
    Runtime complexity: one scan of the installed distributions' metadata.
    """
    from batpolicy.policies.base import Policy

    return with_plugins(POLICIES, ENTRY_POINT_GROUP, Policy, "policy")


def make_policy(name: str, params: Mapping[str, Any] | None = None) -> Policy:
    """Build the registered policy ``name`` with ``params`` (strings are parsed).

    ``agent:TARGET`` runs an action function (:mod:`batpolicy.policies.agent.loading`).

    >>> make_policy("easy", {"order": "sjf"}).params["order"]
    'sjf'
    """
    if name.startswith("agent:"):
        from batpolicy.policies.agent.loading import make_agent_policy

        return make_agent_policy(name.removeprefix("agent:"), params)
    policies = POLICIES if name in POLICIES else available_policies()
    try:
        cls = policies[name]
    except KeyError:
        known = ", ".join(sorted(policies))
        raise ConfigError(f"unknown policy '{name}' (known: {known})") from None
    return cls(params)


def parse_params(pairs: list[str] | None) -> dict[str, str]:
    """Turn repeated ``KEY=VALUE`` strings into a dict.

    >>> parse_params(["theta=10", "alpha=0.15"])
    {'theta': '10', 'alpha': '0.15'}
    """
    params: dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--param expects KEY=VALUE, got {pair!r}")
        params[key.strip()] = value.strip()
    return params
