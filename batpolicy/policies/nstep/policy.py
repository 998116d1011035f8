"""Utility-driven greedy scheduling with N-step look-ahead, on racks with a GPU rack.

Wu & Chen, *N-step search based greedy scheduler* (seed 001). The setting (§1): jobs
arrive with a maximum utility U_max; a job's expected utility is
E(U) = U_max − E(T_completion) − (T_now − T_arrive), where E(T_completion) is its
expected runtime on the machines it gets: MPI jobs run faster with all their machines in
one rack, GPU jobs on the GPU rack (a job carries its runtime on preferred machines, its
profile's delay, and ``runtime_other`` elsewhere). Modes (§4):

* ``none`` — FIFO, the paper's baseline: the oldest waiting job starts as soon as enough
  machines are free, on any of them (lowest ids), no look-ahead;
* ``step0`` — greedy in utility order (§1), as many as fit now, preferred placement
  first, else other machines (:func:`.search.greedy_chain`, k = n);
* ``soft`` — §3.2: the N-step search chooses how many ``k`` of the greedy chain start
  now, simulating the running jobs' completions ``depth`` steps ahead (7, §5.3) without
  new arrivals (:func:`.search.best_prefix`); it may delay a runnable job when a release
  gives it its preferred machines and more utility;
* ``hard`` — soft, but jobs only ever run on preferred machines (§4).

``prune=true`` adds the branch-and-bound of §5.3 (the paper's future work): the same
choice of ``k`` with fewer nodes. ``max_nodes`` bounds a search by counted work (anytime:
the best ``k`` found so far stands; step-0's when none was evaluated): the paper bounds
it by the search depth only (§3, §5.3: "we set the maximum searching steps to 7"), and
the default 200,000 nodes is a safety net its experiments never reach (Table 1's
largest search visits about 10,000), so a default run is the paper's search and the same
on any machine. ``time_bound_ms`` adds a wall-clock bound, off by default: a run with it
depends on the machine's speed and says so (``reproducible: false`` in its stats).

"Killed at last" (§5.2): a job that waited so long that even started now on its preferred
machines it would earn no utility (U_max − t_pref − wait ≤ 0) is killed — rejected, since
it never started — and counts as utility 0. We read the paper's remark that starving jobs
"get lower utility and be killed at last" as this rule; ``kill_unprofitable=false`` keeps
them waiting. ``stats()`` reports the average utility over all jobs (completed jobs:
U_max − (finish − arrival), killed ones: 0), the number killed, search nodes and decision
times.

Deviations: the search works on expected runtimes (profile delay and ``runtime_other``,
or ``other_factor`` × delay when absent) as the paper does; placements are chosen per rack
(best fit for MPI jobs), machines in a rack by lowest id.
"""

from __future__ import annotations

from typing import Any

from batpolicy.errors import ConfigError
from batpolicy.policies.base import Decisions, Parameter, Policy, percentile, wall_clock_stats
from batpolicy.policies.nstep.search import ANY, GPU, MPI, PendingJob, Snapshot, best_prefix
from batpolicy.policies.toolkit.timing import DecisionTimer
from batpolicy.protocol.intervals import MachineSet
from batpolicy.protocol.types import Decision, ExecuteJob, JobState, RejectJob
from batpolicy.scheduler.jobs import Job
from batpolicy.scheduler.view import PolicyView

MODES = ("none", "step0", "soft", "hard")


class NStep(Policy):
    """Greedy utility scheduling with N-step look-ahead over how many jobs to start."""

    name = "nstep"
    parameters = (
        Parameter("mode", str, "soft", "none (FIFO), step0, soft (N-step search), hard "
                  "(soft on preferred machines only)", choices=MODES),
        Parameter("depth", int, 7, "N: scheduling points searched ahead (§3.2)"),
        Parameter("prune", bool, False, "branch-and-bound (§5.3): same choice, fewer nodes"),
        Parameter("time_bound_ms", float, 0.0, "wall-time bound of one search in ms (0: "
                  "none); set, the run is not reproducible (stats: reproducible=false)"),
        Parameter("max_nodes", int, 200_000, "node bound of one search (0: none)"),
        Parameter("umax", float, 1000.0, "U_max of jobs without a 'umax' field"),
        Parameter("other_factor", float, 1.5, "runtime off preferred machines / preferred "
                  "runtime, for jobs without 'runtime_other'"),
        Parameter("kill_unprofitable", bool, True, "kill (reject) waiting jobs that can no "
                  "longer earn utility (§5.2, 'killed at last')"),
    )

    def __init__(self, params=None) -> None:  # type: ignore[no-untyped-def]
        super().__init__(params)
        if self.params["depth"] < 0 or self.params["time_bound_ms"] < 0 \
                or self.params["max_nodes"] < 0 or self.params["other_factor"] <= 0:
            raise ConfigError(f"policy '{self.name}': depth, time_bound_ms, max_nodes must "
                              "be >= 0 and other_factor > 0")
        self._racks: list[MachineSet] = []
        self._gpu: tuple[bool, ...] = ()
        self._expected: dict[str, tuple[float, tuple[int, ...]]] = {}
        self._utilities: list[float] = []
        self._killed = 0
        self.decision_timer = DecisionTimer()  # the searches (l. of best_prefix)
        self._nodes: list[int] = []
        self._cut = 0

    # ------------------------------------------------------------------- hooks
    def on_simulation_begins(self, view: PolicyView) -> Decisions:
        """Racks from the platform's groups (one rack when it has none)."""
        groups = [g for g in view.platform.groups.values() if g.kind == "rack"] or \
            list(view.platform.groups.values())
        self._racks = [g.machines for g in groups] or [view.all_machines]
        machines = view.platform.machines
        self._gpu = tuple(bool(rack) and all(machines[m].gpu for m in rack)
                          for rack in self._racks)
        return None

    def on_job_completed(self, job: Job, view: PolicyView) -> Decisions:
        """Count the job's utility: U_max − turnaround (0 if it did not succeed)."""
        self._expected.pop(job.id, None)
        ok = job.final_state is JobState.COMPLETED_SUCCESSFULLY and job.finish is not None
        self._utilities.append(self._umax(job) - (job.finish - job.subtime) if ok else 0.0)
        return None

    # ------------------------------------------------------------------ decide
    def decide(self, now: float, view: PolicyView) -> list[Decision]:
        """Kill jobs that can earn nothing more, then start the chosen prefix."""
        out: list[Decision] = []
        pending = []
        for job in view.waiting.values():
            if job.res > view.nb_machines or job.res <= 0:
                out.append(RejectJob(job.id))
                continue
            p = self._pending(job, view)
            if self.params["kill_unprofitable"] and p.best_utility(now) <= 0:
                out.append(RejectJob(job.id))  # killed at last (§5.2)
                self._killed += 1
                self._utilities.append(0.0)
                continue
            pending.append(p)
        if not pending:
            return out
        free = [rack & view.free for rack in self._racks]
        if self.params["mode"] == "none":
            return out + self._fifo(pending, free)
        snap = Snapshot(now, tuple(len(f) for f in free), self._gpu, self._running(now),
                        tuple(pending))
        began = self.clock()
        if self.params["mode"] == "step0":
            k, chain, stats = best_prefix(snap, depth=0)
            k = len(chain)
        else:
            bound = self.params["time_bound_ms"]
            k, chain, stats = best_prefix(
                snap, depth=self.params["depth"], hard=self.params["mode"] == "hard",
                prune=self.params["prune"], max_nodes=self.params["max_nodes"],
                deadline=began + bound / 1000.0 if bound > 0 else None, clock=self.clock)
            self._nodes.append(stats.nodes)
            self._cut += stats.cut
        self.decision_timer.add(self.clock() - began)
        for start in chain[:k]:
            alloc = MachineSet()
            for r, count in enumerate(start.take):
                if count:
                    mine = free[r].lowest(count)
                    free[r] = free[r] - mine
                    alloc |= mine
            self._expected[start.job.id] = (now + start.runtime, start.take)
            out.append(ExecuteJob(start.job.id, alloc))
        return out

    def _fifo(self, pending: list[PendingJob], free: list[MachineSet]) -> list[Decision]:
        """``none``: the oldest job first, on any free machines, while it fits."""
        out: list[Decision] = []
        pool = MachineSet().union(*free)
        for p in sorted(pending, key=lambda j: (j.arrive, j.id)):
            if p.res > len(pool):
                break
            alloc = pool.lowest(p.res)
            pool = pool - alloc
            out.append(ExecuteJob(p.id, alloc))
        return out

    # ----------------------------------------------------------------- helpers
    def _umax(self, job: Job) -> float:
        raw = job.raw or {}
        return float(raw.get("umax", self.params["umax"]))

    def _pending(self, job: Job, view: PolicyView) -> PendingJob:
        """The search's copy of a waiting job: kind, runtimes, U_max."""
        raw = job.raw or {}
        kind = str(raw.get("job_type", ANY)).lower()
        kind = kind if kind in (MPI, GPU) else ANY
        profile = view.profile_of(job) or {}
        t_pref = profile.get("delay")
        if not isinstance(t_pref, (int, float)):
            t_pref = job.walltime if job.walltime is not None else 0.0
        other = raw.get("runtime_other")
        t_other = float(other) if isinstance(other, (int, float)) else \
            float(t_pref) * self.params["other_factor"]
        return PendingJob(job.id, job.subtime, job.res, kind, float(t_pref), t_other,
                          self._umax(job))

    def _running(self, now: float) -> tuple[tuple[float, tuple[int, ...]], ...]:
        """Running jobs' expected ends (never before now) and machines per rack."""
        return tuple(sorted((max(end, now), take) for end, take in self._expected.values()))

    def stats(self) -> dict[str, Any]:
        """Average utility, jobs killed at last, search nodes and decision times.

        >>> NStep().stats()["average_utility"]
        0.0
        """
        nodes = sorted(self._nodes)
        n = len(self._utilities)
        return {
            **wall_clock_stats(time_bound_ms=self.params["time_bound_ms"]),
            "nstep_mode": self.params["mode"],
            "average_utility": sum(self._utilities) / n if n else 0.0,
            "nb_jobs_utility": n,
            "nb_killed_at_last": self._killed,
            "nb_searches": len(nodes),
            "search_nodes_total": sum(nodes),
            "search_nodes_median": percentile(nodes, 50),
            "search_nodes_max": nodes[-1] if nodes else 0,
            "nb_search_cut": self._cut,
            **self.decision_timer.summary("decision_time_ms"),
        }
