"""The single policy registry: name → class.

It feeds ``--policy``, ``--help`` and ``batpolicy policies``. Adding a policy is its
module plus one line below.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from batpolicy.errors import ConfigError

if TYPE_CHECKING:
    from batpolicy.policies.base import Policy

#: Registered name -> ``module:Class`` under ``batpolicy.policies``. Names are known
#: without importing any policy, so ``--help`` and ``--version`` stay fast; a class is
#: imported the first time it is asked for (tests/test_cli.py checks each class's
#: ``name`` is its key).
_LOCATIONS: dict[str, str] = {
    "fcfs": "fcfs:Fcfs",
    "easy": "easy:EasyBackfilling",
    "redirection": "redirection:Redirection",
    "dpsa-p": "dpsa:DpsaP",
    "dpsa-n": "dpsa:DpsaN",
    "dpsa-w": "dpsa:DpsaW",
}


class _Registry(Mapping[str, "type[Policy]"]):
    """Read-only name -> policy class; importing a policy's module on first access."""

    def __getitem__(self, name: str) -> type[Policy]:
        module, _, cls = _LOCATIONS[name].partition(":")
        return getattr(importlib.import_module(f"batpolicy.policies.{module}"), cls)

    def __iter__(self) -> Iterator[str]:
        return iter(_LOCATIONS)

    def __len__(self) -> int:
        return len(_LOCATIONS)

    def __contains__(self, name: object) -> bool:
        return name in _LOCATIONS


POLICIES: Mapping[str, type[Policy]] = _Registry()


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
