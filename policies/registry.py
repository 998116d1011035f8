"""The single policy registry: name → class.

It feeds ``--policy``, ``--help`` and ``batpolicy policies``. Adding a policy is its
module plus one line below.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from batpolicy.errors import ConfigError
from batpolicy.policies.base import Policy
from batpolicy.policies.coalloc import Coalloc
from batpolicy.policies.dpsa import DpsaN, DpsaP, DpsaW
from batpolicy.policies.easy import EasyBackfilling
from batpolicy.policies.fcfs import Fcfs
from batpolicy.policies.redirection import Redirection

POLICIES: Mapping[str, type[Policy]] = MappingProxyType({
    cls.name: cls
    for cls in (
        Fcfs,
        EasyBackfilling,
        Redirection,
        DpsaP,
        DpsaN,
        DpsaW,
        Coalloc,
    )
})


def make_policy(name: str, params: Mapping[str, Any] | None = None) -> Policy:
    """Build the registered policy ``name`` with ``params`` (strings are parsed).

    >>> make_policy("easy", {"order": "sjf"}).params["order"]
    'sjf'
    """
    try:
        cls = POLICIES[name]
    except KeyError:
        known = ", ".join(sorted(POLICIES))
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
