"""Job models of co-allocation: ``bandwidth``, ``fixed-penalty`` and ``ideal``.

Jones, Pang, Stanzione & Ligon, *Bandwidth-aware co-allocating meta-schedulers for
mini-grid architectures*, IEEE Cluster 2004 / 2005 (seed 003):

- :class:`BandwidthModel` (``--job-model bandwidth``, §3.3-§3.7): a job co-allocated
  over several clusters needs bandwidth on each cluster's uplink (eq. 1, with the job's
  ``ppbw``); once per simulated instant, after every start and end of that instant, the
  allotment of §3.5 (Steps 1-5, eq. 3-5, :func:`batpolicy.platforms.bandwidth.allot`) is
  recomputed if the set of co-allocated jobs changed, and the residual times of every
  job whose slowdown changed are recomputed by eq. 6-7
  (:class:`batpolicy.platforms.bandwidth.Residual`): its end slides later or earlier
  (Fig. 8);
- :class:`FixedPenaltyModel` (``--job-model fixed-penalty``, §4.3 "Fixed"): a
  co-allocated job runs its original time times a constant penalty;
- :class:`IdealModel` (``--job-model ideal``, §4.2 "Ideal"): unlimited link bandwidth,
  no co-allocated job is slowed down.

A job's original execution time ``T_E`` is its profile's (``delay`` seconds, or
``parallel_homogeneous(_total)`` flop over the slowest machine, or the sum of those of a
``composed`` profile's tasks, ``com`` ignored: :func:`profile_runtime`, which reads the
SimGrid profiles of :mod:`batpolicy.io.coalloc_simgrid`); its computation share
``K`` is the job's ``comp_share`` field (default :data:`DEFAULT_COMP_SHARE`, §4.3's
K = 0.7) and its per-processor bandwidth the ``ppbw`` field in byte/s (absent: the job
does not communicate across clusters). The clusters are the platform's groups, each
with its ``uplink_bandwidth`` (byte/s; ``None``: unlimited). The walltime caps the end
as in Batsim (``COMPLETED_WALLTIME_REACHED``).

Each model writes per job the number of clusters spanned and the co-allocation penalty
(actual / original runtime, §4.3) as two extra ``jobs.csv`` columns, and its
:meth:`~CoallocModel.stats` (co-allocated jobs, their mean penalty) go to metrics.json.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from batpolicy.errors import ConfigError, InputError
from batpolicy.platforms.bandwidth import Residual, allot, link_demands
from batpolicy.protocol.types import JobState
from batpolicy.simulator.instant import InstantModel
from batpolicy.simulator.jobmodels.base import JobModel, check_profile

__all__ = ["DEFAULT_COMP_SHARE", "EXTRA_COLUMNS", "BandwidthModel", "CoallocModel",
           "FixedPenaltyModel", "IdealModel", "profile_runtime"]

#: §4.3 and §6.1: "the computation fraction is uniformly set to K = 0.7".
DEFAULT_COMP_SHARE = 0.7
#: Extra ``jobs.csv`` columns the co-allocation models fill.
EXTRA_COLUMNS = ("coalloc_clusters", "coalloc_penalty")

_SUCCESS = JobState.COMPLETED_SUCCESSFULLY
_FAILED = JobState.COMPLETED_FAILED
_WALLTIME = JobState.COMPLETED_WALLTIME_REACHED
_RUNTIME_TYPES = ("delay", "parallel_homogeneous", "parallel_homogeneous_total")
_SEQUENCES = ("composed", "sequence")


def profile_runtime(profile: Mapping[str, Any], profiles: Mapping[str, Any], nodes: int,
                    speed: float) -> float:
    """``T_E`` of a profile on ``nodes`` machines of ``speed`` flop/s, communication aside.

    >>> ps = {"c": {"type": "composed", "repeat": 2, "seq": ["a", "b"]},
    ...       "a": {"type": "parallel_homogeneous", "cpu": 3e9, "com": 0},
    ...       "b": {"type": "parallel_homogeneous", "cpu": 1e9, "com": 5e6}}
    >>> profile_runtime(ps["c"], ps, 4, 1e9)
    8.0
    """
    kind = profile["type"]
    if kind == "delay":
        return float(profile["delay"])
    if kind in _SEQUENCES:
        one = sum(profile_runtime(profiles[str(sub)], profiles, nodes, speed)
                  for sub in profile["seq"])
        return one * int(profile.get("repeat", 1))
    work = float(profile["cpu"])
    if kind == "parallel_homogeneous_total":
        work /= nodes
    return work / speed


def _check_leaves(workload: str, name: str, profiles: Mapping[str, Any]) -> None:
    kind = profiles[name].get("type")
    if kind in _SEQUENCES:
        for sub in profiles[name]["seq"]:
            _check_leaves(workload, str(sub), profiles)
    elif kind not in _RUNTIME_TYPES:
        raise InputError(f"the co-allocation job models run delay and "
                         f"parallel_homogeneous(_total) profiles (or sequences of them), "
                         f"not {kind!r}", field=f"{workload}!{name}")


@dataclass(frozen=True, slots=True)
class _ProfileLookup:
    """``profiles[name]`` of one workload through the simulator's context."""

    ctx: Any
    workload: str

    def __getitem__(self, name: str) -> Mapping[str, Any]:
        return self.ctx.profile_definition(self.workload, name)


@dataclass(slots=True)
class _Topology:
    """The platform's clusters as the models need them: machine -> cluster, capacities."""

    cluster_of: list[str | None]
    capacity: dict[str | None, float | None]

    @classmethod
    def of(cls, ctx: Any) -> _Topology:
        """The clusters of ``ctx.platform`` (its groups); none on a platform without."""
        platform = getattr(ctx, "platform", None)
        n = len(ctx.speeds)
        cluster_of: list[str | None] = [None] * n
        capacity: dict[str | None, float | None] = {}
        if platform is not None:
            for group in platform.groups.values():
                capacity[group.name] = group.uplink_bandwidth
                for m in group.machines:
                    if m < n:
                        cluster_of[m] = group.name
        return cls(cluster_of, capacity)

    def counts(self, alloc: Any) -> dict[str | None, int]:
        """Nodes of ``alloc`` per cluster, in the platform's cluster order."""
        out: dict[str | None, int] = {}
        cluster_of = self.cluster_of
        for m in alloc:
            c = cluster_of[m]
            out[c] = out.get(c, 0) + 1
        return out


@dataclass(slots=True)
class _CoJob:
    """A running job's co-allocation state (``SimJob.mstate``)."""

    runtime: float                       #: T_E, the original execution time
    clusters: int                        #: number of clusters spanned
    demands: dict[Any, float] = field(default_factory=dict)  #: eq. 1 per link
    residual: Residual | None = None
    pending: float | None = None          #: the end after_instant computed


class CoallocModel(JobModel):
    """Common part: the original runtime, the clusters spanned, the penalty records."""

    name: ClassVar[str] = ""
    #: The jobs.csv columns :meth:`record_extra` fills (after Batsim's and the job fields).
    extra_columns: ClassVar[tuple[str, ...]] = EXTRA_COLUMNS

    def __init__(self, default_comp_share: float = DEFAULT_COMP_SHARE) -> None:
        if not 0.0 <= default_comp_share <= 1.0:
            raise ConfigError(f"comp_share must be in [0, 1], got {default_comp_share}")
        self.default_comp_share = default_comp_share
        self._topology: _Topology | None = None
        self._nb_coallocated = 0
        self._penalty_sum = 0.0
        self._nb_jobs = 0

    def check(self, workload: str, name: str, profiles: Mapping[str, dict[str, Any]]) -> None:
        """Profiles with one execution time (delay, parallel_homogeneous(_total), sequences)."""
        check_profile(workload, name, profiles)
        _check_leaves(workload, name, profiles)

    def _runtime(self, job: Any, ctx: Any) -> float:
        profile = job.profile_data
        if profile["type"] == "delay":
            return float(profile["delay"])
        slowest = min(ctx.speeds[m] for m in job.alloc)
        profiles = _ProfileLookup(ctx, job.workload)
        return profile_runtime(profile, profiles, len(job.alloc), slowest)

    def _topo(self, ctx: Any) -> _Topology:
        if self._topology is None:
            self._topology = _Topology.of(ctx)
        return self._topology

    def _begin(self, job: Any, ctx: Any) -> tuple[_CoJob, dict[str | None, int]]:
        counts = self._topo(ctx).counts(job.alloc)
        state = _CoJob(self._runtime(job, ctx), len(counts))
        job.mstate = state
        return state, counts

    def _end_at(self, job: Any, natural: float) -> float:
        """Cap ``natural`` by the walltime as Batsim does; set the outcome."""
        if job.walltime is not None and natural - job.start >= job.walltime:
            job.outcome, job.return_code = _WALLTIME, -1
            return job.start + job.walltime
        ret = int(job.profile_data.get("ret", 0))
        job.outcome, job.return_code = (_SUCCESS if ret == 0 else _FAILED), ret
        return natural

    def progress(self, job: Any, now: float, ctx: Any) -> dict[str, Any]:
        """Fraction of the planned run done at ``now`` (its share of start to planned end)."""
        planned = job.end - job.start
        value = (now - job.start) / planned if planned > 0 else 1.0
        return {"profile_name": job.profile, "progress": min(max(value, 0.0), 1.0)}

    def natural(self, job: Any, ctx: Any) -> tuple[float, JobState, int]:
        """The end without the walltime cap (what the per-instant hook starts from)."""
        state = job.mstate
        if not isinstance(state, _CoJob):
            return super().natural(job, ctx)
        ret = int(job.profile_data.get("ret", 0))
        return job.start + state.runtime, (_SUCCESS if ret == 0 else _FAILED), ret

    def record_extra(self, job: Any, runtime: float | None) -> dict[str, str]:
        """The extra ``jobs.csv`` cells (:data:`EXTRA_COLUMNS`) of a job that stopped."""
        state = job.mstate
        if not isinstance(state, _CoJob) or runtime is None:
            return dict.fromkeys(EXTRA_COLUMNS, "")
        penalty = runtime / state.runtime if state.runtime > 0 else 1.0
        self._nb_jobs += 1
        if state.clusters > 1 and job.state is _SUCCESS:
            self._nb_coallocated += 1
            self._penalty_sum += penalty
        return dict(zip(EXTRA_COLUMNS, (str(state.clusters), f"{penalty:f}"), strict=True))

    def stats(self) -> dict[str, Any]:
        """Co-allocated jobs (completed successfully) and their mean penalty (§4.3)."""
        n = self._nb_coallocated
        return {"job_model": self.name, "nb_jobs_measured": self._nb_jobs,
                "nb_coallocated": n,
                "coallocated_share": n / self._nb_jobs if self._nb_jobs else 0.0,
                "mean_coalloc_penalty": self._penalty_sum / n if n else 1.0}


class IdealModel(CoallocModel):
    """§4.2 *Ideal*: unlimited inter-cluster bandwidth, co-allocation costs nothing."""

    name = "ideal"

    def start(self, job: Any, now: float, ctx: Any) -> float:
        """The original runtime. Runtime complexity: O(machines of the job)."""
        state, _ = self._begin(job, ctx)
        return self._end_at(job, now + state.runtime)


class FixedPenaltyModel(CoallocModel):
    """§4.3 *Fixed*: a co-allocated job runs ``penalty`` times its original runtime."""

    name = "fixed-penalty"

    def __init__(self, penalty: float = 1.0,
                 default_comp_share: float = DEFAULT_COMP_SHARE) -> None:
        super().__init__(default_comp_share)
        if not penalty > 0:
            raise ConfigError(f"the co-allocation penalty must be > 0, got {penalty}")
        self.penalty = penalty

    @classmethod
    def from_argument(cls, argument: str) -> FixedPenaltyModel:
        """``fixed-penalty:1.25``: the penalty factor (the registry's ``name:argument``).

        >>> FixedPenaltyModel.from_argument("1.5").penalty
        1.5
        """
        try:
            penalty = float(argument)
        except ValueError:
            raise ConfigError(f"fixed-penalty:<factor> wants a number, got {argument!r}"
                              ) from None
        return cls(penalty)

    def start(self, job: Any, now: float, ctx: Any) -> float:
        """Runtime x penalty when the job spans several clusters. O(machines of the job)."""
        state, _ = self._begin(job, ctx)
        runtime = state.runtime * self.penalty if state.clusters > 1 else state.runtime
        return self._end_at(job, now + runtime)


class BandwidthModel(CoallocModel, InstantModel):
    """§3.3-§3.7: link saturation slows co-allocated jobs; ends move as links (un)load.

    :meth:`start` plans the original runtime; :meth:`after_instant` (the simulator's
    per-instant hook) recomputes the allotment when the set of co-allocated jobs changed
    and returns the ends that moved; :meth:`on_change` hands the simulator that end.
    """

    name = "bandwidth"

    def __init__(self, default_comp_share: float = DEFAULT_COMP_SHARE) -> None:
        super().__init__(default_comp_share)
        self._active: dict[str, Any] = {}  # co-allocated running jobs by id
        self._dirty = False
        #: Number of allotments computed (one per instant where the link users changed).
        self.nb_allotments = 0

    def start(self, job: Any, now: float, ctx: Any) -> float:
        """Plan at full speed; a co-allocated job is re-planned at the end of the instant."""
        state, counts = self._begin(job, ctx)
        ppbw = job.fields.ppbw
        if state.clusters > 1 and ppbw:
            share = job.fields.comp_share
            share = self.default_comp_share if share is None else float(share)
            if not 0.0 <= share <= 1.0:
                raise InputError(f"comp_share must be in [0, 1], got {share}",
                                 job=job.id, field="comp_share")
            state.demands = link_demands(counts, float(ppbw))
            state.residual = Residual.start(state.runtime, share, now)
            self._active[job.id] = job
            self._dirty = True
        return self._end_at(job, now + state.runtime)

    def after_instant(self, now: float, running: Mapping[str, Any],
                      ctx: Any) -> dict[str, float]:
        """Eq. 3-7 once per instant: the new ends of the jobs whose slowdown changed.

        Runtime complexity: O(k) to notice departures among the k co-allocated running
        jobs, plus O(L (k + L)) for the allotment when they changed.
        """
        active = self._active
        for job_id in [j for j, job in active.items() if running.get(j) is not job]:
            del active[job_id]  # ended or killed: frees its links
            self._dirty = True
        if not self._dirty:
            return {}
        self._dirty = False
        if not active:
            return {}  # no co-allocated job left: nothing to allot
        self.nb_allotments += 1
        capacity = self._topo(ctx).capacity
        factors = allot({j: job.mstate.demands for j, job in active.items()}, capacity)
        moved: dict[str, float] = {}
        for job_id, sd in factors.items():
            job = active[job_id]
            state: _CoJob = job.mstate
            residual = state.residual
            assert residual is not None  # every active job has one (set in start)
            if sd == residual.sd:
                continue  # same speed: the planned end stands (eq. 6 with sd = sd')
            end = residual.advance(now, sd)  # walltime-free: the engine kills at walltime
            if end != job.end:
                moved[job_id] = end
        return moved

    def on_change(self, job: Any, now: float, ctx: Any) -> float:
        """The end :meth:`after_instant` computed, if any (speed changes do not matter)."""
        state = job.mstate
        if isinstance(state, _CoJob) and state.pending is not None:
            end, state.pending = state.pending, None
            return end
        return job.end

    def stats(self) -> dict[str, Any]:
        """The common statistics plus the number of allotments computed."""
        out = super().stats()
        out["nb_allotments"] = self.nb_allotments
        return out
