"""The single policy registry: name → class.

It feeds ``--policy``, ``--help`` and ``batpolicy policies``. Adding a policy of ours is
its module plus one line below. Other installed packages add theirs through the
entry-point group ``batpolicy.policies`` (``name = "package.module:Class"``), found when
a command asks for the policies (:func:`available_policies`); see docs/add_a_policy.md.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from importlib import metadata
from types import MappingProxyType
from typing import Any

from batpolicy.errors import ConfigError
from batpolicy.policies.base import Policy
from batpolicy.policies.deadline import Edf, MtEdf, Tabu
from batpolicy.policies.dpsa import DpsaN, DpsaP, DpsaW
from batpolicy.policies.easy import EasyBackfilling
from batpolicy.policies.fcfs import Fcfs
from batpolicy.policies.nstep import NStep
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
        Edf,
        MtEdf,
        Tabu,
        NStep,
    )
})


log = logging.getLogger(__name__)

#: The entry-point group through which other packages register policies.
ENTRY_POINT_GROUP = "batpolicy.policies"


def available_policies() -> Mapping[str, type[Policy]]:
    """Our policies, plus those other installed packages register as entry points.

    A plug-in whose name is taken by one of ours, that fails to import or that is not
    a :class:`Policy` subclass is skipped with a warning naming it (never a traceback).
    Runtime complexity: one scan of the installed distributions' metadata.
    """
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
