"""MT-EDF, Minimum Tardiness Earliest Deadline First (Klusáček, Matyska & Rudová 2007, Fig. 1).

Klusáček, Matyska & Rudová, *Local Search for Deadline Driven Grid Scheduling*, 2007,
§3 and Fig. 1: an incoming job is tried in every resource schedule in turn, at its EDF
position; it goes to the machine where the expected unit penalty U, then the expected
tardiness T, after adding it is minimal; the previous schedule is the starting point.

Mapping to Fig. 1 (lines counted from ``Procedure MTEDF``):

- l. 7 ``while (k < m and T_best > 0)``: machines in platform order (the paper's
  k = 1..m); see the stopping rule below;
- l. 9 ``place job into res_schedule on position l such that d_{l-1} <= d_l < d_{l+1}``:
  :meth:`~batpolicy.policies.toolkit.plan.MachinePlan.edf_position` (after every job with the
  same or an earlier deadline: FIFO among equal deadlines);
- l. 10–11 ``T_expected``, ``U_expected``: only machine k's terms change, so the
  comparison uses machine k's change in (U, T)
  (:meth:`~batpolicy.policies.toolkit.plan.MachinePlan.evaluate_insert`, on a scratch copy of
  its profile, so l. 16 ``remove job`` is implicit);
- l. 12–15 strict lexicographic improvement: the *first* machine wins ties;
- l. 17 the job is placed on ``res_schedule_best`` at its EDF position.

Choices where Fig. 1 is vague or literal reading misleads:

- *Stopping rule.* Fig. 1 stops once ``T_best = 0``, where T includes T_C, the tardiness of
  completed jobs: read literally it never stops early once one job has been late. We stop
  when the best placement adds no tardiness (the total is then as low as any machine
  could make it), which is the same test as long as nothing was late before.
- Machines too small for the job (R_j > R_i) are skipped.
- A job that no machine can hold (all too small) is rejected on submission by
  :class:`~batpolicy.policies.deadline.common.PlannedPolicy`.
"""

from __future__ import annotations

import math
from typing import Any

from batpolicy.policies.deadline.common import PlannedPolicy
from batpolicy.policies.toolkit.plan import Plan, PlannedJob

__all__ = ["MtEdf", "mt_edf"]


def mt_edf(plan: Plan, job: PlannedJob) -> int | None:
    """Place ``job`` into ``plan`` by MT-EDF (Fig. 1); return the machine index (None: none fits).

    Runtime complexity: O(Σ_k (n_k - l_k) · p) over the machines tried, for n_k planned
    jobs, EDF position l_k and profile size p; at best one machine is tried.

    >>> from batpolicy.protocol.intervals import MachineSet
    >>> from batpolicy.policies.toolkit.plan import MachinePlan
    >>> plan = Plan([MachinePlan("slow", MachineSet.span(0, 1), 0.5),
    ...              MachinePlan("fast", MachineSet.of(2), 1.0)])
    >>> mt_edf(plan, PlannedJob("a", 1, 10.0, deadline=15.0))  # late on slow (20 > 15)
    1
    """
    best: int | None = None
    best_du, best_dt = math.inf, math.inf  # l. 4-5: U_best, T_best := MAX_VALUE
    for k, machine in enumerate(plan.machines):  # l. 7-8
        if not machine.fits(job):
            continue
        position = machine.edf_position(job.deadline)  # l. 9
        before_u, before_t = machine.late_and_tardiness()
        after_u, after_t = machine.evaluate_insert(job, position)  # l. 10-11
        du, dt = after_u - before_u, after_t - before_t
        if best_du > du or (best_du == du and best_dt > dt):  # l. 12
            best, best_du, best_dt = k, du, dt  # l. 13-15
            if dt <= 0.0:  # l. 7 "T_best > 0", on the tardiness this job adds (see above)
                break
    if best is not None:
        plan.insert_edf(job, best)  # l. 17: EDF position in res_schedule_best
    return best


class MtEdf(PlannedPolicy):
    """MT-EDF (Fig. 1): every arrival goes where it adds the fewest late jobs, then tardiness."""

    name = "mt-edf"

    def __init__(self, params=None) -> None:  # type: ignore[no-untyped-def]
        super().__init__(params)
        self.nb_placed = 0

    def place(self, jobs: list[PlannedJob]) -> list[PlannedJob]:
        """MT-EDF for each arrival, in submission order; return those no machine holds."""
        unplaced = []
        for job in jobs:
            if mt_edf(self.plan, job) is None:
                unplaced.append(job)
            else:
                self.nb_placed += 1
        return unplaced

    def stats(self) -> dict[str, Any]:
        """Placed jobs, plus U_C and T_C."""
        return {**super().stats(), "nb_placed": self.nb_placed}
