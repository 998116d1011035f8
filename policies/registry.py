"""The single policy registry: name → class.

It feeds ``--policy``, ``--help`` and ``batpolicy policies``. Adding a policy of ours is
its module plus one line below. Other installed packages add theirs through the
entry-point group ``batpolicy.policies`` (``name = "package.module:Class"``), found when
a command asks for the policies (:func:`available_policies`); see docs/add_a_policy.md.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Iterator, Mapping
from types import MappingProxyType
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


log = logging.getLogger(__name__)

#: The entry-point group through which other packages register policies.
ENTRY_POINT_GROUP = "batpolicy.policies"


def available_policies() -> Mapping[str, type[Policy]]:
    """Our policies, plus those other installed packages register as entry points.

    A plug-in whose name is taken by one of ours, that fails to import or that is not
    a :class:`Policy` subclass is skipped with a warning naming it (never a traceback).
    Runtime complexity: one scan of the installed distributions' metadata.
    """
    from importlib import metadata  # ~20 ms: only the commands that list policies

    from batpolicy.policies.base import Policy

    found = dict(POLICIES)
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in POLICIES:
            log.warning("policy plug-in '%s' (%s) ignored: the name is taken by batpolicy's "
                        "own policy", ep.name, ep.value)
            continue
        try:
            cls = ep.load()
        except Exception as exc:  # a broken plug-in must not break every command
            log.warning("policy plug-in '%s' (%s) cannot be loaded: %s: %s", ep.name,
                        ep.value, type(exc).__name__, exc)
            continue
        if not (isinstance(cls, type) and issubclass(cls, Policy)):
            log.warning("policy plug-in '%s' (%s) is not a Policy subclass", ep.name, ep.value)
            continue
        if not cls.name:
            cls.name = ep.name
        found[ep.name] = cls
    return MappingProxyType(found)


def make_policy(name: str, params: Mapping[str, Any] | None = None) -> Policy:
    """Build the registered policy ``name`` with ``params`` (strings are parsed).

    >>> make_policy("easy", {"order": "sjf"}).params["order"]
    'sjf'
    """
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
