"""Tabu search over the MT-EDF schedule (Klusáček, Matyska & Rudová 2007, Fig. 2 and 3).

Klusáček, Matyska & Rudová, *Local Search for Deadline Driven Grid Scheduling*, 2007,
§3, Fig. 2 (procedure TS) and Fig. 3 (procedure MoveJob): tardy jobs are moved from the
resource schedule with the highest expected tardiness to the one with the lowest; a move
is kept if it decreases U, or keeps U and decreases T; otherwise the job goes back.

Fig. 2 (lines counted from ``Procedure TS``):

- l. 5–6 ``T_best``, ``U_best`` of the current schedule; l. 8 ``tabu_jobs := ∅`` at
  every call (a bounded FIFO: l. 6 of Fig. 3 "replace oldest item if tabu_jobs is full");
- l. 9 ``while (k < rounds and T_best > 0 and schedule_avail ≠ ∅)``, plus the anytime
  bound ``time_bound_ms`` on the policy's injectable clock (§3: "the TS optimisation can
  be stopped at any time"; the schedule is valid after every round);
- l. 11–12 ``res_schedule_max``: the available machine with maximal expected tardiness;
- l. 13–15 the non-tabu job of maximal tardiness there, moved by MoveJob;
- l. 16–18 if it has none: drop the machine from ``schedule_avail``, reset candidates.

Fig. 3 (lines counted from ``Proc. MoveJob``):

- l. 4–6 ``res_schedule_min``: the candidate machine (other than max) of minimal tardiness;
- l. 7–9 none left: the job becomes tabu, candidates are reset;
- l. 11–14 move the job to its EDF position there and evaluate;
- l. 15–19 improvement: keep it, reset ``schedule_avail`` and ``schedule_cand``;
- l. 21–23 otherwise put the job back (at its old position) and drop the candidate.

Choices where the paper is vague:

- *Which T.* The machine terms ``T_C[i] + Σ expected T_{i,j}`` of l. 11 and Fig. 3 l. 4
  and the test ``T_best > 0`` include the tardiness of completed jobs, which no move can
  change; we use the planned jobs' tardiness only (a machine whose planned jobs are all
  on time has nothing to move, and ``T_best > 0`` then means "a planned job is late").
- *Ties*: the lowest machine index, and the first job in schedule order.
- Machines with fewer CPUs than the job are not candidates.
- A move's (U, T) change is computed on the two machines it touches, without changing
  them (a rejected move then needs no "put back"); a T decrease smaller than 1e-9 s
  counts as none (float noise must not accept neutral moves).
- The policy runs one TS per decision that placed arrivals (several arrivals at one
  instant share one TS). Every move is evaluated on scratch copies of the two machines'
  profiles and applied only if it improves (U, T), so the plan is valid and never worse
  after every round: the search needs no copy of the whole plan.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from batpolicy.errors import ConfigError
from batpolicy.policies.base import Parameter, wall_clock_stats
from batpolicy.policies.deadline.mtedf import MtEdf
from batpolicy.policies.toolkit.plan import Plan

__all__ = ["Tabu", "TabuStats", "move_job", "tabu_search"]

#: A tardiness decrease below this (seconds) is float noise, not an improvement.
T_TOLERANCE = 1e-9


@dataclass(slots=True)
class TabuStats:
    """What one TS call did."""

    rounds: int = 0
    moves_tried: int = 0
    moves_accepted: int = 0
    stopped_by_time: bool = False


class _Search:
    """The state of one TS call (Fig. 2 l. 1–8): per-machine (U, T), best totals, sets."""

    __slots__ = ("plan", "ut", "u_best", "t_best", "avail", "cand", "tabu", "tabu_set",
                 "stats", "all", "removal", "targets", "by_tardiness")

    def __init__(self, plan: Plan, tabu_size: int) -> None:
        self.plan = plan
        self.ut = [m.late_and_tardiness() for m in plan.machines]
        self.u_best = sum(u for u, _ in self.ut)  # l. 6
        self.t_best = sum(t for _, t in self.ut)  # l. 5
        self.all = range(len(plan.machines))
        self.avail = set(self.all)
        self.cand = set(self.all)
        self.tabu: deque[str] = deque(maxlen=max(tabu_size, 1))  # l. 8 tabu_jobs := ∅
        self.tabu_set: set[str] = set()
        self.stats = TabuStats()
        # (machine, job id) -> (U, T) of that machine without the job; valid until a move
        self.removal: dict[tuple[int, str], tuple[int, float]] = {}
        # (machine, job id) -> machines that can hold the job, least tardy first (Fig. 3 l. 4)
        self.targets: dict[tuple[int, str], list[int]] = {}
        self.by_tardiness: list[int] = []  # most tardy first (Fig. 2 l. 11)
        self.sort_machines()

    def sort_machines(self) -> None:
        """Order the machines by expected tardiness once per accepted move. O(m log m)."""
        ut = self.ut
        self.by_tardiness = sorted(self.all, key=lambda i: (-ut[i][1], i))
        self.removal.clear()
        self.targets.clear()

    def make_tabu(self, job_id: str) -> None:
        """Fig. 3 l. 8: add to tabu_jobs, replacing the oldest item if full. O(1)."""
        if len(self.tabu) == self.tabu.maxlen:
            self.tabu_set.discard(self.tabu[0])
        self.tabu.append(job_id)
        self.tabu_set.add(job_id)


def move_job(search: _Search, position: int, mx: int) -> bool:
    """Fig. 3: move the job at ``position`` of machine ``mx`` to the least tardy candidate.

    The move is evaluated without changing the plan (the job's removal from ``mx`` is
    evaluated once and reused while it is tried on other candidates) and applied only
    if accepted, which is Fig. 3's "put job back" for a rejected move. Returns True if
    the move was accepted. Runtime complexity: O(m) to choose the candidate plus
    O(n·p) to evaluate it on the two machines.
    """
    plan = search.plan
    machines = plan.machines
    source = machines[mx]
    job = source.queue[position]
    ut = search.ut
    key = (mx, job.id)
    targets = search.targets.get(key)
    if targets is None:  # the machines that fit; the least tardy (then lowest index) last
        targets = sorted((i for i in search.all if i != mx and machines[i].size >= job.res),
                         key=lambda i: (-ut[i][1], -i))
        search.targets[key] = targets
    cand = search.cand
    while targets and targets[-1] not in cand:
        targets.pop()
    mn = targets[-1] if targets else -1  # l. 4-6: candidate of minimal tardiness, not max
    if mn < 0:  # l. 7-9
        search.make_tabu(job.id)
        search.cand = set(search.all)
        return False
    search.stats.moves_tried += 1
    new_mx = search.removal.get(key)
    if new_mx is None:  # l. 11: remove job from res_schedule_max
        new_mx = search.removal[key] = source.evaluate_remove(position)
    target = machines[mn]  # l. 12: EDF position in res_schedule_min
    new_mn = target.evaluate_insert(job, target.edf_position(job.deadline))
    du = new_mx[0] + new_mn[0] - ut[mx][0] - ut[mn][0]  # l. 13-14, on the two machines
    dt = new_mx[1] + new_mn[1] - ut[mx][1] - ut[mn][1]
    if du < 0 or (du == 0 and dt < -T_TOLERANCE):  # l. 15
        plan.remove(job.id)
        plan.insert_edf(job, mn)
        search.u_best += du  # l. 16-17
        search.t_best += dt
        ut[mx], ut[mn] = new_mx, new_mn
        search.sort_machines()
        search.avail = set(search.all)  # l. 18
        search.cand = set(search.all)  # l. 19
        search.stats.moves_accepted += 1
        return True
    search.cand.discard(mn)  # l. 21-23: the job stays where it was; drop the candidate
    return False


def tabu_search(plan: Plan, rounds: int, *, tabu_size: int = 20,
                clock: Callable[[], float] | None = None,
                time_bound: float = 0.0) -> TabuStats:
    """Fig. 2: improve ``plan`` in place by moving tardy jobs; never worse on (U, T).

    ``time_bound`` (seconds, 0: none) is checked on ``clock`` before every round.
    Runtime complexity: O(rounds · (m + n·p)) for m machines, n jobs on the machines
    touched and profile size p.
    """
    search = _Search(plan, tabu_size)
    stats = search.stats
    began = clock() if clock is not None and time_bound > 0 else 0.0
    machines = plan.machines
    k = 0
    while k < rounds and search.t_best > T_TOLERANCE and search.avail:  # l. 9
        if time_bound > 0 and clock is not None and clock() - began >= time_bound:
            stats.stopped_by_time = True  # anytime (§3): the schedule is valid as it is
            break
        k += 1  # l. 10
        avail = search.avail
        mx = next(i for i in search.by_tardiness if i in avail)  # l. 11-12: most tardy
        position = machines[mx].most_tardy(search.tabu_set)  # l. 13-14
        if position >= 0:
            move_job(search, position, mx)  # l. 15
        else:
            search.avail.discard(mx)  # l. 17
            search.cand = set(search.all)  # l. 18
    stats.rounds = k
    return stats


class Tabu(MtEdf):
    """MT-EDF for arrivals, then Tabu search (Fig. 2, 3) on the whole schedule."""

    name = "tabu"
    parameters = (
        *MtEdf.parameters,
        Parameter("rounds", int, 100, "TS rounds per decision (Fig. 2 'rounds')"),
        Parameter("time_bound_ms", float, 0.0, "wall-time bound of one TS call in ms "
                  "(0: none); the MT-EDF schedule is kept if it is hit at once"),
        Parameter("tabu_size", int, 20, "length of the tabu list (oldest item replaced)"),
    )

    def __init__(self, params=None) -> None:  # type: ignore[no-untyped-def]
        super().__init__(params)
        for key in ("rounds", "time_bound_ms", "tabu_size"):
            if self.params[key] < (1 if key == "tabu_size" else 0):
                raise ConfigError(f"policy 'tabu': parameter '{key}' = {self.params[key]} "
                                  "must not be negative" + (" or 0" if key == "tabu_size" else ""))
        self.nb_searches = 0
        self.nb_rounds = 0
        self.nb_moves_tried = 0
        self.nb_moves_accepted = 0
        self.nb_time_bound_hits = 0

    def improve(self, now: float) -> None:
        """One TS call on the plan (moves are tried on scratch copies, applied if better)."""
        if self.params["rounds"] <= 0 or self.plan.objective()[1] <= T_TOLERANCE:
            return
        stats = tabu_search(self.plan, self.params["rounds"], tabu_size=self.params["tabu_size"],
                            clock=self.clock, time_bound=self.params["time_bound_ms"] / 1000.0)
        self.nb_searches += 1
        self.nb_rounds += stats.rounds
        self.nb_moves_tried += stats.moves_tried
        self.nb_moves_accepted += stats.moves_accepted
        self.nb_time_bound_hits += stats.stopped_by_time

    def stats(self) -> dict[str, Any]:
        """TS calls, rounds, moves tried and accepted, time-bound hits, plus MT-EDF's."""
        return {**super().stats(), **wall_clock_stats(time_bound_ms=self.params["time_bound_ms"]),
                "nb_searches": self.nb_searches, "nb_rounds": self.nb_rounds,
                "nb_moves_tried": self.nb_moves_tried,
                "nb_moves_accepted": self.nb_moves_accepted,
                "nb_time_bound_hits": self.nb_time_bound_hits}
