"""Scheduling with redirection (Faure, Lucarelli, Richard & Trystram, IPDPSW 2020, Alg. 1–2).

Faure, Lucarelli, Richard & Trystram, *Online scheduling with redirection for parallel
jobs*, IPDPSW 2020, §III: two groups of machines, each scheduled by a base policy; a
running job whose pressure counter exceeds θ is killed and restarted from scratch in the
redirection group.

- :mod:`.policy` — the ``redirection`` policy (Algorithm 1) and its parameters;
- :mod:`.configuration` — its parameters, base policies' parameters, what Batsim must allow;
- :mod:`.counters` — Algorithm 2: counters, the two filters, the conflict policy;
- :mod:`.groups` — the α split, platform growth, the per-group view of the state;
- :mod:`batpolicy.policies.toolkit.copies` (shared with the toolkit's unavailability rule) —
  kill and restart through Batsim 4.2 (REGISTER_JOB/PROFILE, metadata) and the accounting
  of each user job once.

``docs/redirection.md`` explains the design and how to run it on Batsim and offline.
"""

from batpolicy.policies.redirection.groups import grown_size, split_machines
from batpolicy.policies.redirection.policy import Redirection

__all__ = ["Redirection", "grown_size", "split_machines"]
