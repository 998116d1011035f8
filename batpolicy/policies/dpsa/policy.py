"""DPSA: EASY's reservation, then the subset of waiting jobs that fills the most machines.

Grudenic & Bogunovic, *Computer cluster scheduling algorithm based on time bounded
dynamic programming*, MIPRO 2011 (34th International Convention), §III.B (Fig. 2) and
§III.C (variants DPSAp, DPSAn, DPSAw).

Steps of :meth:`Dpsa.decide` and the lines of Fig. 2 they implement:

* l. 2 ``ClearReservations()`` — the reservation is recomputed at every decision.
* l. 3–7 — start queue-head jobs while they fit (lowest free machine ids).
* l. 8 ``CreateReservation(p0)`` — EASY's reservation for the first head that does not
  fit: shadow time and the machines it holds (:func:`.reservation.plan_reservation`).
* l. 9–10 — free machines ``lr`` and eligible jobs ``lp``: the other waiting jobs that
  need no more than ``|lr|`` machines, listed in the variant's search order.
* l. 11, 15–29 — OptimizeUtilization: ``search=exact`` (default) solves it exactly by
  dynamic programming (:mod:`.exact`), ``search=exhaustive`` runs the paper's bounded
  recursive enumeration (:mod:`.search`). Both rank solutions by utilisation, then by the
  variant's tie rule; uncut, they return the same subset. The paper bounds the search by
  "a time or iteration count constriction" (§III.B) and imposed none in its experiments
  (§IV); ``max_nodes`` is the counted bound, on by default, and ``time_bound_ms`` the
  wall-clock one, off by default: set, the run depends on the machine's speed and its
  stats say ``reproducible: false``.
* l. 21–23 — a free machine is feasible for a job if its availability (time until the
  reservation needs it: ``shadow − now`` for reserved machines, unlimited for the others)
  covers the job's walltime; the job is mapped on the feasible machines of least
  availability: a short job takes reserved machines first, then unreserved ones.
* l. 12 ``StartJobs(topJobSubset)``.

Tie rules (§III.C), each exactly "the first solution of equal utilisation found by
Fig. 2's pre-order search (strict ``>`` at l. 16) over the variant's job order":

* ``dpsa-p``: order = priority (queue order, FCFS). Compare the solutions' highest
  priority jobs; the higher wins; if equal, the second highest, recursively — "DPSAp
  variant is inherently implemented" by Fig. 2.
* ``dpsa-n``: order = size ascending, then priority (the paper presorts by size at
  l. 10; a stable sort keeps priority among equal sizes). Compare the solutions' smallest
  jobs; the smaller (or, equal in size, the higher priority) wins; recursively.
* ``dpsa-w``: order = size descending, then priority; compare the largest jobs first.

Deviations: priority is FCFS (the paper's queue is prioritised by site policy); a job's
"Runtime" at l. 21 is its walltime (the scheduler cannot know the runtime), and a job
without walltime counts as infinitely long; machines of equal availability are taken
lowest id first, and the reservation holds the lowest machine ids free at the shadow
time (batsched's EASY, as :mod:`.easy`); jobs larger than the platform are rejected on
submission; Fig. 2's ``i < |lp|`` with 1-based indices is read as "every job".

Shortcuts that change no decision: a decision with no event since the previous one is
skipped; after a message that released nothing (only submissions), with the same head
and exact search, the reservation is kept (the previous decision's starts cannot move
it: short jobs end by the shadow time, long ones avoid its machines) and only the new
jobs are searched — after an optimal decision no older job fits what is left, or adding
it would have used more machines, and a set containing it cannot fit either.

Placement: ``allocator=`` and ``one_group=`` (:mod:`batpolicy.policies.toolkit.allocation`;
default ``lowest``, the paper's "least available feasible machines first" on the lowest
ids). With a group-aware allocator, heads start and the reservation is planned as in
EASY (:func:`.reservation.plan_allocated_reservation`: the head's machines are ones it
can use); OptimizeUtilization still counts machines (Fig. 2's model has no groups), and a
chosen job the allocator cannot place (a short one: on reserved machines first; a long
one: on unreserved machines only) stays queued, so the reservation is never violated
but the subset started may use fewer machines than the optimum; the incremental
shortcut above is off (its argument is about counts).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any, ClassVar

from batpolicy.errors import ConfigError
from batpolicy.policies.base import (
    PLACEMENT_PARAMETERS,
    Decisions,
    Parameter,
    Placement,
    Policy,
    wall_clock_stats,
)
from batpolicy.policies.dpsa.exact import solve_exact
from batpolicy.policies.dpsa.problem import Instance
from batpolicy.policies.dpsa.search import search_exhaustive
from batpolicy.policies.toolkit.allocation import take_lowest
from batpolicy.policies.toolkit.queue import JobQueue
from batpolicy.policies.toolkit.reservation import (
    Reservation,
    reserve_head,
    start_heads,
)
from batpolicy.policies.toolkit.timing import DecisionTimer
from batpolicy.protocol.intervals import MachineSet
from batpolicy.protocol.types import Decision, Event, ExecuteJob, RejectJob
from batpolicy.scheduler.jobs import Job, JobStatus
from batpolicy.scheduler.view import PolicyView

log = logging.getLogger(__name__)


def priority_order(job: Job) -> tuple[int, ...]:
    """DPSAp search order: priority (submission rank)."""
    return (job.seq,)


def small_first(job: Job) -> tuple[int, ...]:
    """DPSAn search order: size ascending, then priority."""
    return (job.res, job.seq)


def wide_first(job: Job) -> tuple[int, ...]:
    """DPSAw search order: size descending, then priority."""
    return (-job.res, job.seq)


class Dpsa(Policy):
    """DPSAp (§III.C): among equal utilisation, prefer the higher-priority jobs.

    The base of the family: DPSAn and DPSAw change only the search order :attr:`order`.
    """

    name = "dpsa-p"
    #: The variant's search order (Fig. 2, l. 10 and §III.C).
    order: ClassVar[Callable[[Job], tuple[int, ...]]] = staticmethod(priority_order)
    parameters = (
        Parameter("search", str, "exact", "OptimizeUtilization: exact dynamic programming, or "
                  "the paper's bounded recursive enumeration", choices=("exact", "exhaustive")),
        Parameter("time_bound_ms", float, 0.0,
                  "exhaustive search: wall-time bound per decision in ms (0: none); set, "
                  "the run is not reproducible (stats: reproducible=false)"),
        Parameter("max_nodes", int, 1_000_000,
                  "exhaustive search: bound on OptimizeUtilization calls (0: none)"),
        Parameter("prune", bool, False, "exhaustive search: skip subtrees that cannot beat the "
                  "best found (same result when not cut)"),
        *PLACEMENT_PARAMETERS,
    )

    def __init__(self, params: dict[str, Any] | None = None) -> None:
        super().__init__(params)
        if self.params["time_bound_ms"] < 0 or self.params["max_nodes"] < 0:
            raise ConfigError(f"policy '{self.name}': time_bound_ms and max_nodes must be >= 0")
        self.queue = JobQueue()
        self.placement = Placement(self.params)
        self._rejected: list[Job] = []
        self._changed = True
        self._released = True
        self._new: list[Job] = []
        #: Keep the reservation and search only new jobs after submission-only messages
        #: (exact search; same decisions, see the module docstring). Tests turn it off.
        self.incremental = True
        #: The reservation made at the last decision (None: no job waits for machines).
        self.last_reservation: Reservation | None = None
        self.decision_timer = DecisionTimer()  # each DPSA decision (l. 3-12, l. 8 reached)
        self.fill_timer = DecisionTimer()  # the part of it after the reservation (l. 9-12)
        self._eligible = 0
        self._by_search = 0
        self._searches = 0
        self._cut = 0
        self._nodes = 0

    # ------------------------------------------------------------------- hooks
    def on_job_submitted(self, job: Job, view: PolicyView) -> Decisions:
        """Queue the job (or mark it for rejection if it can never run)."""
        if not self.placement.can_ever_run(job, view):
            self._rejected.append(job)
        else:
            self.queue.add(job)
            self._new.append(job)
        self._changed = True
        return None

    def on_job_completed(self, job: Job, view: PolicyView) -> Decisions:
        """Machines were released: decide again, replanning the reservation."""
        self._changed = self._released = True
        return None

    def on_resources_changed(self, event: Event, view: PolicyView) -> Decisions:
        """Machine availability changed: decide again, replanning the reservation."""
        self._changed = self._released = True
        return None

    # ------------------------------------------------------------------ decide
    def decide(self, now: float, view: PolicyView) -> list[Decision]:
        """Fig. 2: start heads, reserve for the first that does not fit, start the best subset."""
        out: list[Decision] = [RejectJob(job.id) for job in self._rejected]
        self._rejected.clear()
        if not self._changed:
            return out
        released, new = self._released, self._new
        self._changed = self._released = False
        self._new = []
        began = self.clock()
        placement = self.placement
        allocator = None if placement.plain else placement.allocator  # None: lowest ids
        platform = None if placement.plain else placement.platform(view)
        heads = start_heads(self.queue, view.free, now, allocator, platform)  # Fig. 2, l. 3-7
        out.extend(heads.decisions)
        free, started, head = heads.free, heads.started, heads.head
        if head is None or heads.nfree == 0:
            self.last_reservation = None
            return out
        last = self.last_reservation
        if (self.incremental and placement.plain and not released and not started
                and last is not None
                and last.job is head and last.shadow_time > now
                and self.params["search"] == "exact"):
            reservation = last  # nothing released: the reservation stands, and only new
            candidates: Iterable[Job] = new  # jobs can fit what the last decision left
        else:
            reservation = reserve_head(head, now, free, view, started,  # Fig. 2, l. 8
                                       allocator, platform)
            candidates = self.queue
        self.last_reservation = reservation
        filling = self.clock()
        out.extend(self._fill(now, head, free, reservation, candidates, platform))
        ended = self.clock()
        self.decision_timer.add(ended - began)
        self.fill_timer.add(ended - filling)
        return out

    def _fill(self, now: float, head: Job, free: MachineSet, reservation: Reservation,
              candidates: Iterable[Job], platform: Any = None) -> list[Decision]:
        """Fig. 2, l. 9-12 and 21-23: the best subset of eligible jobs, mapped and started."""
        shadow = reservation.shadow_time
        reserved = free & reservation.machines
        unreserved = free - reservation.machines
        nfree, nunreserved = len(free), len(unreserved)
        nreserved = nfree - nunreserved
        eligible: list[tuple[Job, bool]] = []
        for job in candidates:  # Fig. 2, l. 10
            if job is head or job.res > nfree or job not in self.queue:
                continue
            if job.status is not JobStatus.WAITING:  # started or rejected by someone else
                self.queue.remove(job)
                continue
            is_long = not now + job.planned_walltime <= shadow  # Fig. 2, l. 21
            if is_long and job.res > nunreserved:
                continue  # no feasible machines: l. 22 would skip it anyway
            eligible.append((job, is_long))
        if not eligible:
            return []
        order = type(self).order
        if order is not priority_order:
            eligible.sort(key=lambda item: order(item[0]))
        inst = Instance(tuple(job.res for job, _ in eligible),
                        tuple(is_long for _, is_long in eligible), nfree, nunreserved)
        chosen = self._optimize(inst)  # Fig. 2, l. 11
        self._eligible += len(eligible)
        self._by_search += len(chosen)
        decisions: list[tuple[int, Decision]] = []
        placement = self.placement
        for index in chosen:  # Fig. 2, l. 23: least available feasible machines first
            job, is_long = eligible[index]
            if not placement.plain:
                allocate = placement.allocator.allocate
                alloc = None if is_long else allocate(reserved, job, platform)
                if alloc is None:
                    alloc = allocate(unreserved if is_long else reserved | unreserved,
                                     job, platform)
                if alloc is None:
                    continue  # not placeable in groups: stays queued (module docstring)
                reserved = reserved - alloc
                unreserved = unreserved - alloc
                self.queue.remove(job)
                decisions.append((job.seq, ExecuteJob(job.id, alloc)))
                continue
            need = job.res
            alloc = MachineSet()
            if not is_long and nreserved:
                take = min(need, nreserved)
                alloc = take_lowest(reserved, take)
                reserved = reserved - alloc
                nreserved -= take
                need -= take
            if need:
                part = take_lowest(unreserved, need)
                unreserved = unreserved - part
                alloc = alloc | part
            self.queue.remove(job)
            decisions.append((job.seq, ExecuteJob(job.id, alloc)))
        decisions.sort(key=lambda item: item[0])  # Fig. 2, l. 12, in priority order
        return [d for _, d in decisions]

    def _optimize(self, inst: Instance) -> tuple[int, ...]:
        """Fig. 2, l. 11: OptimizeUtilization with the configured search."""
        self._searches += 1
        if self.params["search"] == "exact":
            return solve_exact(inst)
        bound_ms = self.params["time_bound_ms"]  # the search's own wall time
        deadline = self.clock() + bound_ms / 1000.0 if bound_ms > 0 else None
        result = search_exhaustive(inst, max_nodes=self.params["max_nodes"], deadline=deadline,
                                   clock=self.clock, prune=self.params["prune"])
        self._nodes += result.nodes
        if result.cut:
            self._cut += 1
            log.debug("%s: search cut after %d nodes (%d eligible jobs)", self.name,
                      result.nodes, len(inst.sizes))
        return result.chosen

    # ------------------------------------------------------------------- stats
    def stats(self) -> dict[str, Any]:
        """DPSA decisions, their median / p99 / max wall time, and search bound hits.

        A flat dict of JSON numbers and strings (``metrics.json`` puts it under
        ``"policy_stats"``), with the same keys in both search modes. A *DPSA decision*
        is a ``decide()`` call that made a reservation (Fig. 2, l. 8); its time covers
        l. 3-12, its *fill* time l. 9-12 (eligible jobs, search, mapping). A *search* is
        an OptimizeUtilization call (l. 11, at least one eligible job); it is *cut* when
        the exhaustive search's time or node bound stopped it (never in ``exact`` mode).
        Times: ``decision_time_ms`` and ``fill_time_ms`` (docs/metrics.md).

        >>> s = Dpsa().stats()
        >>> s["nb_dpsa_decisions"], s["decision_time_ms.p99"], s["nb_search_cut"]
        (0, 0.0, 0)
        """
        searches = self._searches
        return {
            **(wall_clock_stats(time_bound_ms=self.params["time_bound_ms"])
               if self.params["search"] == "exhaustive" else {}),
            "dpsa_variant": self.name,
            "dpsa_search": self.params["search"],
            "nb_dpsa_decisions": len(self.decision_timer),
            **self.decision_timer.summary("decision_time_ms"),
            **self.fill_timer.summary("fill_time_ms"),
            "nb_searches": searches,
            "mean_eligible_jobs": self._eligible / searches if searches else 0.0,
            "nb_started_by_search": self._by_search,
            "nb_search_cut": self._cut,
            "search_cut_share": self._cut / searches if searches else 0.0,
            "search_nodes_mean": self._nodes / searches if searches else 0.0,
        }


class DpsaN(Dpsa):
    """DPSAn (§III.C): among equal utilisation, prefer solutions of smaller jobs."""

    name = "dpsa-n"
    order = staticmethod(small_first)


class DpsaW(Dpsa):
    """DPSAw (§III.C): among equal utilisation, prefer solutions of wider jobs."""

    name = "dpsa-w"
    order = staticmethod(wide_first)
