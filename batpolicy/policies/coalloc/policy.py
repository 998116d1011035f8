"""``coalloc``: the bandwidth-aware co-allocating meta-scheduler of a multi-cluster.

Jones, Pang, Stanzione & Ligon, *Bandwidth-aware co-allocating meta-schedulers for
mini-grid architectures*, IEEE Cluster 2004 / 2005 (seed 003), §4.1 (FPFS job selection),
§4.2 (First-fit, Migration only, No share) and §5 (the meta-scheduler template and its
modules). :meth:`Coalloc.decide` is the §5 template:

* Step 1, module FCFS — walk the waiting queue from head to tail (FPFS, §4.1: every job
  that fits starts, no reservation: ends move under the bandwidth model, so EASY's
  guarantee cannot hold);
* Step 2, module LA — the job's ``origin`` cluster (:func:`.modules.local`);
* Step 3, module MIG — the cluster with the fewest free nodes that fits
  (:func:`.modules.migrate`);
* Step 4, the co-allocation module ``module``: ``ff`` (§4.2 First-fit), ``a1`` (§5,
  eq. 9-11, :mod:`.satisfy`), ``b1``-``b4`` (§5 class "B", with ``chunk`` for B3),
  ``none`` (Migration only, §4.2) or ``noshare`` (No share, §4.2: LA only);
* Step 5 — done; the next job.

The clusters are the platform's groups (``view.platform.groups``; a platform without
groups is one cluster of unlimited link). A link's load is eq. 1 summed over the running
jobs that span it, from their allocation and ``ppbw`` (what a network monitor would
report as the link's demand); ``lslt`` is the link saturation level threshold (§6.2): A1
keeps every link within ``lslt x capacity``, class "B" modules skip clusters beyond it.
Nodes are taken lowest free ids first inside each chosen cluster.

Deviations: jobs that could never start are rejected on submission: more machines than
the platform; with ``none``, than the largest cluster; with ``b3``, a chunk larger than
the largest cluster; with ``a1``, no mapping within the LSLT even on idle links (eq.
9-11 with every node free); with ``noshare``, more than the origin cluster, or no known
``origin``. (The paper's runs never meet these: every job fits one cluster.)
"""

from __future__ import annotations

import logging
import math
from typing import Any

from batpolicy.errors import ConfigError
from batpolicy.platforms.bandwidth import link_demands
from batpolicy.policies.base import Decisions, Parameter, Policy
from batpolicy.policies.coalloc import modules as mod
from batpolicy.policies.coalloc.modules import ClusterInfo
from batpolicy.policies.coalloc.satisfy import (
    feasible_ranges,
    solve_branch_and_bound,
    solve_dp,
    solve_fewest,
)
from batpolicy.policies.toolkit.allocation import take_lowest
from batpolicy.policies.toolkit.timing import DecisionTimer
from batpolicy.protocol.intervals import MachineSet
from batpolicy.protocol.types import Decision, ExecuteJob, RejectJob
from batpolicy.scheduler.jobs import Job
from batpolicy.scheduler.view import PolicyView

log = logging.getLogger(__name__)

__all__ = ["MODULES", "Coalloc"]

#: ``module`` values: the co-allocation module of Step 4, or a baseline.
MODULES = ("ff", "a1", "b1", "b2", "b3", "b4", "none", "noshare")
_ALL = "*"


class Coalloc(Policy):
    """§5 meta-scheduler: LA, then MIG, then the chosen co-allocation module, FPFS order."""

    name = "coalloc"
    parameters = (
        Parameter("module", str, "b3", "co-allocation module of Step 4 (none: Migration "
                  "only; noshare: local only)", choices=MODULES),
        Parameter("lslt", float, 1.0, "link saturation level threshold for a1 and b1-b4 "
                  "(1.0: the link's capacity)"),
        Parameter("chunk", float, 0.85, "b3: share of the job that must fit one cluster"),
        Parameter("a1_search", str, "dp", "a1: dp (exact, fast) or the paper's "
                  "branch-and-bound first-solution search", choices=("dp", "bnb")),
        Parameter("a1_values", str, "desc", "a1: node counts tried most first (desc) or "
                  "from 0 (asc) on clusters listed largest free first",
                  choices=("desc", "asc")),
        Parameter("a1_objective", str, "first", "a1: first solution, or fewest clusters",
                  choices=("first", "fewest")),
    )

    def __init__(self, params: dict[str, Any] | None = None) -> None:
        super().__init__(params)
        if not self.params["lslt"] > 0:
            raise ConfigError(f"policy 'coalloc': lslt must be > 0, got {self.params['lslt']}")
        if not 0 < self.params["chunk"] <= 1:
            raise ConfigError(f"policy 'coalloc': chunk must be in (0, 1], "
                              f"got {self.params['chunk']}")
        self._groups: list[tuple[str, MachineSet, float | None]] | None = None
        self._demands: dict[str, dict[Any, float]] = {}  # running job -> eq. 1 per link
        self._rejects: list[Job] = []
        self._changed = True
        self.module_timer = DecisionTimer()  # each co-allocation module call (Step 4)
        self._counts = {"local": 0, "migrated": 0, "coallocated": 0, "rejected": 0,
                        "module_calls": 0, "module_refusals": 0, "a1_nodes": 0}

    # ------------------------------------------------------------------- hooks
    def on_simulation_begins(self, view: PolicyView) -> Decisions:
        """Read the clusters (groups) and their uplinks from the platform."""
        self._groups = None
        return None

    def on_job_submitted(self, job: Job, view: PolicyView) -> Decisions:
        """Queue the job (state keeps it waiting) or mark it for rejection."""
        if job.res <= 0 or job.res > view.nb_machines or not self._can_ever_run(job, view):
            self._rejects.append(job)
        self._changed = True
        return None

    def on_job_completed(self, job: Job, view: PolicyView) -> Decisions:
        """Nodes and link bandwidth were released."""
        self._demands.pop(job.id, None)
        self._changed = True
        return None

    def on_resources_changed(self, event: Any, view: PolicyView) -> Decisions:
        """Machine availability changed."""
        self._changed = True
        return None

    # ------------------------------------------------------------------ decide
    def _clusters(self, view: PolicyView) -> list[tuple[str, MachineSet, float | None]]:
        if self._groups is None:
            groups = list(view.platform.groups.values())
            if groups:
                self._groups = [(g.name, g.machines, g.uplink_bandwidth) for g in groups]
            else:
                self._groups = [(_ALL, view.all_machines, None)]
        return self._groups

    def _can_ever_run(self, job: Job, view: PolicyView) -> bool:
        module = self.params["module"]
        groups = self._clusters(view)
        if module == "none":  # Migration only: one whole cluster or never
            return any(job.res <= len(machines) for _, machines, _ in groups)
        if module == "b3":  # the chunk must fit one cluster
            need = math.ceil(self.params["chunk"] * job.res - 1e-9)
            return any(need <= len(machines) for _, machines, _ in groups)
        if module == "a1":  # feasible on an idle platform (eq. 9-11 with loads 0)
            if any(job.res <= len(machines) for _, machines, _ in groups):
                return True
            idle = [ClusterInfo(name, len(machines), cap) for name, machines, cap in groups]
            return self._a1(job, job.res, idle, self.params["lslt"], count=False) is not None
        if module != "noshare":
            return True
        origin = job.origin
        for name, machines, _ in self._clusters(view):
            if name == origin or name == _ALL:
                return job.res <= len(machines)
        log.warning("coalloc (noshare): job %s has no known origin cluster (%r): rejected",
                    job.id, origin)
        return False

    def _loads(self, view: PolicyView) -> dict[Any, float]:
        """Eq. 1 summed per link over the running jobs. O(running jobs x clusters)."""
        loads: dict[Any, float] = {}
        demands = self._demands
        for job in view.running.values():
            d = demands.get(job.id)
            if d is None:
                d = demands[job.id] = self._job_demands(job, job.allocation, view)
            for link, need in d.items():
                loads[link] = loads.get(link, 0.0) + need
        return loads

    def _job_demands(self, job: Job, alloc: MachineSet | None, view: PolicyView
                     ) -> dict[Any, float]:
        ppbw = job.ppbw
        if not ppbw or alloc is None:
            return {}
        counts = {name: k for name, machines, _ in self._clusters(view)
                  if (k := len(alloc & machines))}
        return link_demands(counts, float(ppbw))

    def decide(self, now: float, view: PolicyView) -> list[Decision]:
        """§5 template over the FPFS walk of the waiting queue (see the module docstring)."""
        out: list[Decision] = [RejectJob(job.id) for job in self._rejects]
        rejected = {job.id for job in self._rejects}
        self._counts["rejected"] += len(self._rejects)
        self._rejects.clear()
        if not self._changed:
            return out
        self._changed = False
        groups = self._clusters(view)
        loads = self._loads(view)
        free_sets = {name: view.free & machines for name, machines, _ in groups}
        infos = [ClusterInfo(name, len(free_sets[name]), cap, loads.get(name, 0.0))
                 for name, _, cap in groups]
        by_name = {c.name: c for c in infos}
        total = sum(c.free for c in infos)
        for job in view.waiting.values():  # Step 1: FPFS, head to tail
            if total == 0:
                break
            n = job.res
            if n > total or job.id in rejected:
                continue
            mapping = self._place(job, infos)
            if mapping is None:
                continue
            alloc = MachineSet()
            for name, k in mapping.items():
                part = take_lowest(free_sets[name], k)
                free_sets[name] = free_sets[name] - part
                by_name[name].free -= k
                alloc = alloc | part
            total -= n
            demands = self._job_demands(job, alloc, view)
            for link, need in demands.items():
                by_name[link].load += need
            self._demands[job.id] = demands
            out.append(ExecuteJob(job.id, alloc))
        return out

    def _place(self, job: Job, infos: list[ClusterInfo]) -> dict[str, int] | None:
        """Steps 2-4 for one job: LA, MIG, then the co-allocation module."""
        n = job.res
        module = self.params["module"]
        origin = job.origin
        if len(infos) == 1 and infos[0].name == _ALL:
            origin = _ALL
        mapping = mod.local(n, infos, origin)  # Step 2
        if mapping is not None:
            self._counts["local"] += 1
            return mapping
        if module == "noshare":
            return None
        mapping = mod.migrate(n, infos)  # Step 3
        if mapping is not None:
            self._counts["migrated"] += 1
            return mapping
        if module == "none":
            return None
        began = self.clock()
        mapping = self._coallocate(job, n, infos, module)  # Step 4
        self.module_timer.add(self.clock() - began)
        self._counts["module_calls"] += 1
        if mapping is None:
            self._counts["module_refusals"] += 1
        else:
            self._counts["coallocated"] += 1
        return mapping

    def _coallocate(self, job: Job, n: int, infos: list[ClusterInfo], module: str
                    ) -> dict[str, int] | None:
        lslt = self.params["lslt"]
        if module == "ff":
            return mod.first_fit(n, infos)
        if module == "b1":
            return mod.b1(n, infos, lslt)
        if module == "b2":
            return mod.b2(n, infos, lslt)
        if module == "b3":
            return mod.b3(n, infos, lslt, self.params["chunk"])
        if module == "b4":
            return mod.b4(n, infos, lslt)
        return self._a1(job, n, infos, lslt)

    def _a1(self, job: Job, n: int, infos: list[ClusterInfo], lslt: float, count: bool = True
            ) -> dict[str, int] | None:
        """Module A1 (eq. 9-11): the job's PPBW, each link's ``lslt`` share left."""
        ppbw = float(job.ppbw or 0.0)
        ordered = sorted(infos, key=lambda c: -c.free)
        ranges = [feasible_ranges(n, c.free, ppbw, None if c.capacity is None
                                  else lslt * c.capacity - c.load) for c in ordered]
        order = self.params["a1_values"]
        if self.params["a1_objective"] == "fewest":
            result = solve_fewest(ranges, n, order)
        elif self.params["a1_search"] == "bnb":
            result = solve_branch_and_bound(ranges, n, order)
        else:
            result = solve_dp(ranges, n, order)
        if count:
            self._counts["a1_nodes"] += result.nodes
        if result.counts is None:
            return None
        return {c.name: k for c, k in zip(ordered, result.counts, strict=True) if k}

    # ------------------------------------------------------------------- stats
    def stats(self) -> dict[str, Any]:
        """Jobs placed by each step and the co-allocation module's decision time.

        ``module_time_ms`` (docs/metrics.md) times one Step 4 call (the module itself, as
        Table 1 of §6.4 measures).

        >>> s = Coalloc({"module": "a1"}).stats()
        >>> s["coalloc_module"], s["nb_module_calls"], s["module_time_ms.p99"]
        ('a1', 0, 0.0)
        """
        c = self._counts
        return {
            "coalloc_module": self.params["module"],
            "nb_started_local": c["local"],
            "nb_started_migrated": c["migrated"],
            "nb_started_coallocated": c["coallocated"],
            "nb_rejected": c["rejected"],
            "nb_module_calls": c["module_calls"],
            "nb_module_refusals": c["module_refusals"],
            **self.module_timer.summary("module_time_ms"),
            "a1_search_nodes_mean": c["a1_nodes"] / c["module_calls"]
            if c["module_calls"] and self.params["module"] == "a1" else 0.0,
        }
