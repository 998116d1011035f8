"""Planning structures: where and when waiting jobs are expected to run.

Two plans, one per kind of schedule the papers describe, both kept incrementally
between decisions and read by the policies through planned starts ("start the jobs
whose planned start is now"):

- :mod:`~batpolicy.policies.toolkit.plan.machines`: *order-derived* per-machine resource
  schedules (Klusáček, Matyska & Rudová 2007, §3): a machine's queue is an order, and
  every planned start is computed from it on CPU counts; searches (MT-EDF, Tabu search)
  move jobs in the order and evaluate copies. Used by ``mt-edf``, ``tabu``, ``edf``,
  ``fcfs``/``easy`` of the deadline setting.
- :mod:`~batpolicy.policies.toolkit.plan.slices`: *reservation-holding* time slices of machine
  ids (Mu'alem & Feitelson 2001, §2; batsched's ``Schedule``): each job's reservation on
  specific machines is kept until it is removed, and compression re-inserts jobs one at
  a time while the others keep theirs. Used by ``conservative``.

:class:`~batpolicy.policies.toolkit.plan.cluster.Plan` holds one machine plan per machine.
The names of :mod:`~batpolicy.policies.toolkit.plan.machines` and ``Plan`` are re-exported here
(``from batpolicy.policies.toolkit.plan import Plan``).
"""

from batpolicy.policies.toolkit.plan.cluster import Plan
from batpolicy.policies.toolkit.plan.machines import (
    EPS,
    MachinePlan,
    PlannedJob,
    check_capacity,
    earliest_fit,
    reserve,
)
from batpolicy.policies.toolkit.plan.slices import Allocation, SliceSchedule, TimeSlice

__all__ = ["EPS", "Allocation", "MachinePlan", "Plan", "PlannedJob", "SliceSchedule",
           "TimeSlice", "check_capacity", "earliest_fit", "reserve"]
