"""FCFS, SJF and EASY as action functions ``(obs, info) -> action`` of the environment.

Each reads only the observation and ``info["action_mask"]``
(:mod:`batpolicy.policies.agent.observation`), as a learned agent does; the last action
(``W``, the window's size) waits for the next event.

- :func:`fcfs`: the oldest waiting job if it fits, else wait: batsched's ``fcfs`` and
  :class:`~batpolicy.policies.fcfs.Fcfs` (Feitelson et al., JSSPP 2004, §3.1), job for
  job and machine for machine.
- :func:`sjf`: the waiting job with the shortest walltime (submission order breaks
  ties) if it fits, else wait: ``--policy fcfs --param order=sjf`` when the window
  holds the whole queue.
- :func:`easy`: EASY backfilling (Lifka 1995; Mu'alem & Feitelson 2001, §2): the
  oldest job if it fits; else its shadow time and reserved machines from the machines'
  expected ends, and the first job of the window that fits now and ends by the shadow
  time or fits on the machines the reservation leaves. An action starts a job on the
  lowest free ids, so these are the decisions and machines of
  ``--policy easy --param backfill_on=lowest``
  (:class:`~batpolicy.policies.easy.EasyBackfilling`), job for job. Plain
  ``--policy easy`` (batsched's easy_bf) puts a backfilled job that ends after the
  shadow time on the lowest *unreserved* ids, which no action can choose
  (tests/gym/test_easy_baseline.py searches the action sequences of a 5-job reproducer;
  bench/fidelity/gym_easy.py compares whole traces with both).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from batpolicy.policies.agent.observation import JOB_FEATURES, MACHINE_FEATURES

__all__ = ["easy", "fcfs", "sjf"]

_RES = JOB_FEATURES.index("res")
_WALLTIME = JOB_FEATURES.index("walltime")
_FREE = MACHINE_FEATURES.index("free")
_AVAILABLE = MACHINE_FEATURES.index("available")
_REMAINING = MACHINE_FEATURES.index("remaining")


def fcfs(obs: Mapping[str, np.ndarray], info: Mapping[str, Any]) -> int:
    """The oldest waiting job if it fits now, else wait. Runtime complexity: O(1)."""
    mask = info["action_mask"]
    return 0 if mask[0] else len(mask) - 1


def sjf(obs: Mapping[str, np.ndarray], info: Mapping[str, Any]) -> int:
    """The window's shortest job (by walltime) if it fits now, else wait. O(W)."""
    mask = info["action_mask"]
    present = obs["job_mask"].astype(bool)
    if not present.any():
        return len(mask) - 1
    walltime = np.where(obs["jobs"][:, _WALLTIME] < 0, np.inf, obs["jobs"][:, _WALLTIME])
    walltime[~present] = np.nan
    best = int(np.nanargmin(walltime))  # the first of equal walltimes: the oldest
    return best if mask[best] else len(mask) - 1


def easy(obs: Mapping[str, np.ndarray], info: Mapping[str, Any]) -> int:
    """EASY backfilling's next start, or wait (module docstring). O(W + M log M)."""
    mask = info["action_mask"]
    wait = len(mask) - 1
    if mask[0]:
        return 0
    present = obs["job_mask"]
    if not present[0] or not mask[:-1].any():
        return wait
    jobs, machines = obs["jobs"], obs["machines"]
    need = int(jobs[0, _RES])
    free = machines[:, _FREE] == 1.0
    remaining = machines[:, _REMAINING]
    busy = ~free & (machines[:, _AVAILABLE] == 1.0) & (remaining >= 0.0)
    # shadow time (relative to now): the earliest release after which the head fits
    ends = np.sort(remaining[busy])
    count = int(free.sum())
    shadow = np.inf
    if count + len(ends) >= need:
        shadow = float(ends[need - count - 1])
    if shadow == np.inf:
        reserved = np.zeros(len(free), dtype=bool)
    else:
        at_shadow = free | (busy & (remaining <= shadow))
        ids = np.flatnonzero(at_shadow)[:need]
        reserved = np.zeros(len(free), dtype=bool)
        reserved[ids] = True
    nextra = int((free & ~reserved).sum())
    for i in range(1, len(present)):
        if not present[i]:
            break
        if not mask[i]:
            continue
        walltime = jobs[i, _WALLTIME]
        within = shadow == np.inf or 0 <= walltime <= shadow
        if within or jobs[i, _RES] <= nextra:
            return i
    return wait
