"""The redirection policy's configuration: its parameters, its base policies, its two groups.

Faure, Lucarelli, Richard & Trystram, *Online scheduling with redirection for parallel
jobs*, IPDPSW 2020, §III-B and §IV-B: the machines are split into a principal group and a
redirection group of ⌈α·m⌉ machines (optionally on a platform grown by that much); each
group runs its own base policy. What Batsim must allow for copies to be registered
(dynamic jobs, profile reuse or forwarded profiles) is checked here at
SIMULATION_BEGINS; :class:`~.policy.Redirection` runs the algorithm.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from batpolicy.errors import ConfigError
from batpolicy.policies.base import PLACEMENT_PARAMETERS, Parameter
from batpolicy.policies.redirection.counters import CONFLICTS, FILTERS
from batpolicy.policies.redirection.groups import grown_size
from batpolicy.policies.toolkit.copies import CopyPlanner
from batpolicy.protocol.intervals import MachineSet
from batpolicy.scheduler.view import PolicyView

__all__ = ["PARAMETERS", "base_params", "check_params", "copy_planner", "log_split",
           "parse_sub_params"]

log = logging.getLogger(__name__)


#: The policy's parameters (``--param``), with the paper's defaults (§IV).
PARAMETERS = (
    Parameter("theta", float, 10.0, "threshold θ: a job is a candidate once its counter "
              "exceeds θ (Alg. 2, l. 7); the paper's best pair for Curie is θ=10, α=0.15"),
    Parameter("alpha", float, 0.15, "fraction α of the machines in the redirection group "
              "(⌈α·m⌉ machines, the highest ids)"),
    Parameter("grow", bool, False, "the platform was grown to m + ⌈α·m⌉ machines "
              "(§IV-B): the principal group keeps the original m; offline: "
              "batpolicy simulate --nb-res m+⌈α·m⌉"),
    Parameter("original_size", int, 0, "with grow=true: the original m, so that a "
              "platform of the wrong size is refused with the size it needs "
              "(0: m is inferred from the platform's size)"),
    Parameter("filter", str, "size", "which submissions count against a running job: "
              "size q_k ≥ q_j (§III-B), walltime w_j ≥ w_k (Alg. 2, l. 3)",
              choices=FILTERS),
    Parameter("conflict", str, "walltime", "which candidate to redirect (Alg. 2, l. 9)",
              choices=CONFLICTS),
    Parameter("principal_policy", str, "easy", "base policy of the principal group"),
    Parameter("principal_params", str, "", "its parameters, KEY=VALUE[,KEY=VALUE]"),
    Parameter("redirection_policy", str, "easy", "base policy of the redirection group"),
    Parameter("redirection_params", str, "", "its parameters, KEY=VALUE[,KEY=VALUE]"),
    Parameter("copy_workload", str, "redir", "workload of the restarted copies, or "
              "@original to keep them in their original's workload"),
    Parameter("on_unsupported", str, "error", "without --enable-dynamic-jobs (or a way to "
              "register copies): refuse, or run the principal policy on every machine",
              choices=("error", "fallback")),
    Parameter("bsld_tau", float, 60.0, "τ of the bounded slowdown in stats() (paper: 60 s)"),
    *PLACEMENT_PARAMETERS,  # handed to both base policies unless their params set them
)


def parse_sub_params(text: str) -> dict[str, str]:
    """``"k=v,k2=v2"`` → dict: parameters handed to a base policy.

    >>> parse_sub_params("order=sjf"), parse_sub_params("")
    ({'order': 'sjf'}, {})
    """
    out: dict[str, str] = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"base-policy parameters must be KEY=VALUE[,KEY=VALUE], got {item!r}")
        out[key.strip()] = value.strip()
    return out


def check_params(p: Mapping[str, Any], name: str) -> None:
    """Refuse parameters outside the paper's ranges (α in [0, 1), θ ≥ 0) or contradictory."""
    if not 0.0 <= p["alpha"] < 1.0:
        raise ConfigError(f"policy '{name}': alpha={p['alpha']} must be in [0, 1)")
    if p["theta"] < 0:
        raise ConfigError(f"policy '{name}': theta={p['theta']} must be >= 0")
    if p["original_size"] < 0 or (p["original_size"] and not p["grow"]):
        raise ConfigError(f"policy '{name}': original_size={p['original_size']} "
                          "must be >= 0 and only goes with grow=true")
    for key in ("principal_policy", "redirection_policy"):
        if p[key] == name:
            raise ConfigError(f"policy '{name}': {key} cannot be '{name}' itself")


def base_params(p: Mapping[str, Any], registry: Any, group: str) -> dict[str, Any]:
    """A base policy's parameters: its own (``<group>_params``), plus the placement ones.

    A placement parameter set on the redirection policy but unknown to the base policy
    is refused rather than dropped.
    """
    name = p[f"{group}_policy"]
    sub: dict[str, Any] = parse_sub_params(p[f"{group}_params"])
    declared = {q.name for q in getattr(registry.POLICIES.get(name), "parameters", ())}
    for param in PLACEMENT_PARAMETERS:
        value = p[param.name]
        if param.name in declared:
            sub.setdefault(param.name, value)
        elif value != param.default:
            raise ConfigError(f"policy 'redirection': {param.name}={value} cannot be "
                              f"handed to {group}_policy '{name}', which has no such "
                              "parameter")
    return sub


def copy_planner(view: PolicyView, copy_workload: str,
                 needs_dynamic_jobs: bool) -> tuple[CopyPlanner | None, str | None]:
    """The planner of restarted copies, or why copies cannot be registered on this run."""
    if not needs_dynamic_jobs:
        return None, "alpha=0 leaves no redirection group"
    if not view.dynamic_jobs_enabled:
        return None, ("redirection restarts killed jobs as dynamically registered copies: "
                      "run Batsim with --enable-dynamic-jobs (and --enable-profile-reuse or "
                      "--forward-profiles-on-submission)")
    config = view.config
    planner = CopyPlanner(copy_workload,
                          reuse=bool(config.get("profile-reuse-enabled", False)),
                          forwarded=bool(config.get("profiles-forwarded-on-submission", False)))
    return planner, planner.problem_at_begin(view.profiles, view.workloads)


def log_split(p: Mapping[str, Any], view: PolicyView, principal: MachineSet,
              redirection: MachineSet, names: tuple[str, str], planner: CopyPlanner) -> None:
    """Say how the machines were split and with which settings (INFO), warn if α·m is 0."""
    if p["grow"] and not p["original_size"]:
        n = view.nb_machines
        grown = grown_size(n, p["alpha"])
        log.info("redirection: grow=true: the %d machines are read as an original "
                 "platform of %d grown by %d; if %d is the original size, run on %d "
                 "machines (batpolicy simulate --nb-res %d --param original_size=%d)",
                 n, len(principal), len(redirection), n, grown, grown, n)
    log.info("redirection: principal group '%s' (%s), redirection group '%s' (%s), "
             "θ=%g, α=%g, filter=%s, conflict=%s; %s; acknowledgements %s",
             principal, names[0], redirection, names[1], p["theta"], p["alpha"], p["filter"],
             p["conflict"], planner.describe(),
             "on" if view.dynamic_jobs_acknowledged else "off")
    if not redirection:
        log.warning("redirection: alpha=%g gives an empty redirection group: no job "
                    "will be redirected", p["alpha"])
