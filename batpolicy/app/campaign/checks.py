"""What a campaign checks before its first run, and what keys the reuse of a finished run.

:func:`validate` builds every run's policy (its parameter values), job model, preset and
transforms, and looks for every input file, before anything runs: a campaign of hundreds
of runs no longer stops on its 300th run's misspelt file. The problems of all runs are
gathered into one error naming the first bad run (its number, id, policy) and the problem,
and how many other runs have problems.

:func:`policy_code_hash` is the policy's code identity: a hash of the source files of
the policy's modules and of the ``batpolicy.policies`` modules they use (the base class,
allocators, shared searches), plus a plug-in's declared ``version``. A finished run
records it (``code.json``); a rerun redoes the runs whose policy code changed since.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import os
import sys
import types
from pathlib import Path
from typing import Any

from batpolicy.app.campaign.spec import Campaign, RunSpec, transform_spec, with_seed
from batpolicy.errors import BatpolicyError, ConfigError

#: Modules whose files count in a policy's code hash (plug-ins add their own package).
POLICY_PACKAGE = "batpolicy.policies"


def validate(campaign: Campaign) -> None:
    """Check every run's inputs; raise one :class:`ConfigError` naming the first bad run.

    Runtime complexity: O(runs) policy and preset constructions (no input is read).
    """
    from batpolicy.policies.registry import available_policies

    policies = available_policies()
    problems: list[str] = []
    for spec in campaign.runs:
        problem = run_problem(spec, policies)
        if problem is not None:
            problems.append(f"run #{spec.index + 1} ({spec.run_id}, {spec.policy}"
                            f"{', ' + spec.label if spec.label else ''}): {problem}")
    if problems:
        more = (f" (and {len(problems) - 1} more run(s) with problems)"
                if len(problems) > 1 else "")
        raise ConfigError(f"{campaign.source}: {problems[0]}{more}; nothing was run")


def run_problem(spec: RunSpec, policies: Any) -> str | None:
    """The first thing wrong with one run's definition, or ``None``.

    >>> from batpolicy.policies.registry import POLICIES
    >>> run_problem(RunSpec("easy", params=(("order", "nope"),)), POLICIES) is not None
    True
    >>> run_problem(RunSpec("easy", workloads=("/nonexistent.swf",)), POLICIES)
    'workload file not found: /nonexistent.swf'
    >>> run_problem(RunSpec("easy"), POLICIES) is None
    True
    """
    from batpolicy.io.presets import preset
    from batpolicy.simulator.jobmodels.registry import make_job_model
    from batpolicy.simulator.pybatsim.loader import is_pybatsim

    if is_pybatsim(spec.policy):  # refused before the run when it is not a scheduler
        from batpolicy.simulator.pybatsim.loader import load_scheduler, pybatsim_options
        try:
            load_scheduler(pybatsim_options(spec.policy, dict(spec.params)))
        except BatpolicyError as exc:
            return str(exc)
    elif spec.policy not in policies:
        return f"unknown policy '{spec.policy}' (known: {', '.join(sorted(policies))})"
    for kind, paths in (("workload", spec.workloads), ("events", spec.events),
                        ("platform", (spec.platform,) if spec.platform else ())):
        for path in paths:
            if not os.path.isfile(path):
                return f"{kind} file not found: {path}"
    try:
        if not is_pybatsim(spec.policy):
            policy = policies[spec.policy](with_seed(spec, dict(spec.params)))
            if policy.needs_energy and not dict(spec.flags).get("energy"):
                return (f"policy '{spec.policy}' switches machines off and on: it needs "
                        "energy = true (Batsim's -E) and a platform with power states")
        make_job_model(spec.job_model)
        if spec.preset is not None:
            preset(spec.preset, **dict(spec.preset_params))
        transform_spec(spec).check()
    except (BatpolicyError, TypeError, ValueError) as exc:
        return str(exc)
    return None


@functools.cache
def policy_code_hash(name: str) -> str:
    """12 hex digits of the SHA-256 of the policy ``name``'s code (see the module doc).

    The same for every run of a policy in one process; changed by any edit of the files.

    >>> policy_code_hash("easy") == policy_code_hash("easy") != policy_code_hash("nstep")
    True
    """
    from batpolicy.policies.registry import available_policies
    from batpolicy.simulator.pybatsim.loader import is_pybatsim

    if is_pybatsim(name):  # a pybatsim scheduler: the scheduler's own file when it is one
        target = Path(name.split(":", 1)[1])
        data = target.read_bytes() if target.is_file() else name.encode()
        return hashlib.sha256(data).hexdigest()[:12]
    return code_hash(available_policies()[name])


def code_hash(cls: type) -> str:
    """12 hex digits of the SHA-256 of a policy class's source files and ``version``."""
    digest = hashlib.sha256()
    for path in sorted(_code_files(cls)):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    digest.update(str(getattr(cls, "version", "")).encode())
    return digest.hexdigest()[:12]


def _code_files(cls: type) -> set[Path]:
    """Source files of the class's modules, its bases' and the policy modules they use.

    Followed through the modules' globals (classes, functions, modules imported).
    """
    roots = {c.__module__ for c in cls.__mro__ if c is not object}
    prefixes = (POLICY_PACKAGE, *{m.partition(".")[0] for m in roots
                                  if not m.startswith("batpolicy.")})
    seen: set[str] = set()
    todo = list(roots)
    files: set[Path] = set()
    while todo:
        name = todo.pop()
        module = sys.modules.get(name)
        if name in seen or module is None:
            continue
        seen.add(name)
        try:
            files.add(Path(inspect.getfile(module)))
        except (TypeError, OSError):
            continue
        for value in vars(module).values():
            used = value.__name__ if isinstance(value, types.ModuleType) else \
                getattr(value, "__module__", None)
            if isinstance(used, str) and used.startswith(prefixes) and used not in seen:
                todo.append(used)
    return {f for f in files if f.suffix == ".py" and f.is_file()}
