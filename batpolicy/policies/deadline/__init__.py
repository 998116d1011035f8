"""Deadline-driven policies (Klusáček, Matyska & Rudová 2007): ``mt-edf``, ``tabu``, ``edf``.

Klusáček, Matyska & Rudová, *Local Search for Deadline Driven Grid Scheduling*, 2007.
Modules: :mod:`.common` (job facts, the plan kept in step with the events, starting the
jobs due now), :mod:`.mtedf` (Fig. 1), :mod:`.tabu` (Fig. 2 and 3), :mod:`.edf` (the
queue-based earliest-deadline-first baseline of §4). The schedule itself is
:mod:`batpolicy.policies.toolkit.plan`, shared with other schedule-based policies.
"""

from batpolicy.policies.deadline.edf import Edf
from batpolicy.policies.deadline.mtedf import MtEdf, mt_edf
from batpolicy.policies.deadline.tabu import Tabu, move_job, tabu_search

__all__ = ["Edf", "MtEdf", "Tabu", "move_job", "mt_edf", "tabu_search"]
