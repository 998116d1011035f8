"""What the parallel-task model runs for each job: its profile's tasks, checked as Batsim does.

:class:`JobPrograms` holds the ``ptask`` model's knowledge of the workloads' profiles:
Batsim's checks at load (a profile's fields and amounts, ``usage_trace`` trace files,
``Profile::from_json``), whether a job needs the shared model at all, the outcome a job
reaches without a walltime, and the tasks (:class:`~.tasks.Leaf`) it runs as it starts:
its profile's leaves on its executors, an ``additional_io_job`` merged in
(:mod:`.io_job`), a usage trace's ranks on their hosts (:mod:`.usage_trace`,
``execute_task``). :class:`~.jobmodel.PtaskModel` runs them on the shared model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from batpolicy.errors import InputError
from batpolicy.protocol.types import JobState
from batpolicy.simulator.jobmodels.base import check_profile
from batpolicy.simulator.jobmodels.ptask.io_job import check_io_profiles, io_profiles, merged_leaf
from batpolicy.simulator.jobmodels.ptask.tasks import (
    COMMUNICATING,
    SEQUENCES,
    Leaf,
    check_ptask_profile,
    communicates,
    leaf_task,
    program,
)
from batpolicy.simulator.jobmodels.ptask.usage_trace import (
    RankTrace,
    UsageTrace,
    check_trace_field,
    cores_to_use,
    rank_hosts,
    read_usage_trace,
)

__all__ = ["USAGE_TRACE", "JobPrograms"]

_EMPTY = {"type": "delay", "delay": 0}
_SUCCESS = JobState.COMPLETED_SUCCESSFULLY
_FAILED = JobState.COMPLETED_FAILED
USAGE_TRACE = "usage_trace"


class JobPrograms:
    """The ``ptask`` model's profiles: checks, which jobs it runs, their tasks (module doc)."""

    def __init__(self) -> None:
        #: The shared model's storage hosts and each host's core count, once set up.
        self.storage_ids: list[int] = []
        self.cores: list[int] = []
        self._natural: dict[str, tuple[JobState, int]] = {}
        #: The workload files read (name -> path) and their usage_trace profiles'
        #: (definition, trace files), by (workload, profile); the ranks' actions once read.
        self._sources: dict[str, str | None] = {}
        self._traces: dict[tuple[str, str], tuple[Mapping[str, Any], UsageTrace]] = {}
        self._rank_traces: dict[tuple[str, str], tuple[RankTrace, ...]] = {}

    def forget(self, job_id: str) -> None:
        """The job left the shared model: drop what was kept for it. O(1)."""
        self._natural.pop(job_id, None)

    def read_files(self, workload: str, source: str | None,
                   profiles: Mapping[str, Mapping[str, Any]]) -> None:
        """Batsim's checks of the files a workload file's profiles name, as it loads it.

        Every ``usage_trace`` profile's trace file must exist (``Profile::from_json``),
        used or not; its lines give the rank files, read when a job runs.
        """
        self._sources[workload] = source
        for name, profile in profiles.items():
            if isinstance(profile, dict) and profile.get("type") == USAGE_TRACE:
                self._traces[workload, name] = (
                    profile, check_trace_field(profile, workload, name, source))

    def check(self, workload: str, name: str, profiles: Mapping[str, dict[str, Any]]) -> None:
        """Batsim's checks of the profile and of its tasks' amounts."""
        self._check_tree(workload, name, profiles, 0)

    def _check_tree(self, workload: str, name: str, profiles: Mapping[str, Any],
                    depth: int) -> None:
        """:func:`check_profile` on each leaf (the storage ones apart), then the amounts."""
        profile = profiles.get(name)
        kind = profile.get("type") if isinstance(profile, dict) else None
        if kind in SEQUENCES and depth <= 20:
            # the sequence's own fields, its leaves replaced by an empty delay
            check_profile(workload, name, {**{str(s): _EMPTY for s in profile.get("seq", ())
                                              if str(s) in profiles}, name: profile})
            for sub in profile.get("seq", ()):
                self._check_tree(workload, str(sub), profiles, depth + 1)
            return
        if isinstance(profile, dict):
            check_ptask_profile(profile, f"{workload}!{name}")
        if kind == USAGE_TRACE:
            known = self._traces.get((workload, name))
            if known is None or known[0] != profile:
                # registered by the scheduler: Batsim takes these from workload files only
                check_trace_field(profile, workload, name, None)
            ret = profile.get("ret", 0)
            if not isinstance(ret, int) or isinstance(ret, bool):
                raise InputError(f"'ret' must be an integer, got {ret!r}",
                                 field=f"{workload}!{name}")
            return
        if kind not in COMMUNICATING:
            check_profile(workload, name, profiles)

    def check_io_job(self, job: Any, io_name: str, ctx: Any,
                     io_profile: Mapping[str, Any]) -> None:
        """EXECUTE_JOB's ``additional_io_job`` can be merged into each task of ``job``.

        ``io_profile`` is ``io_name``'s definition (given in the decision, or known).
        """
        def definition(n: str) -> Mapping[str, Any]:
            """A profile of the job's workload, by name (the I/O one as given)."""
            return io_profile if n == io_name else ctx.profile_definition(job.workload, n)
        check_io_profiles(job.profile, job.profile_data, io_name, io_profile, definition,
                          f"{job.workload}!{job.profile}")


    def needs_shared_model(self, job: Any, ctx: Any, messages: bool, compute_sharing: bool
                           ) -> bool:
        """Whether the job needs the shared model.

        It moves data, maps executors onto one machine, or computes on machines other
        jobs may share; or Batsim's messages go through the shared model, which then dates
        every job's end as SimGrid does (its summed clock, not ``start + duration``).
        """
        if messages or (self._traces and self._runs_usage_trace(job, ctx)):
            return True
        executors = _executors(job)
        if len(set(executors)) != len(executors) or getattr(job, "io_job", None):
            return True

        def definition(n: str) -> Mapping[str, Any]:
            """A profile of the job's workload, by name."""
            return ctx.profile_definition(job.workload, n)
        if communicates(job.profile_data, definition):
            return True
        if compute_sharing or ctx.options.compute_sharing or (
                getattr(ctx, "energy", None) is not None
                and job.profile_data.get("type") in SEQUENCES):
            return any(p.get("type") != "delay"
                       for _, _, p in program(job.profile, job.profile_data, definition))
        return False

    @staticmethod
    def _runs_usage_trace(job: Any, ctx: Any) -> bool:
        """Whether the job's profile is (or its sequence holds) a usage trace."""
        kind = job.profile_data.get("type")
        if kind == USAGE_TRACE:
            return True
        if kind not in SEQUENCES:
            return False

        def definition(n: str) -> Mapping[str, Any]:
            """A profile of the job's workload, by name."""
            return ctx.profile_definition(job.workload, n)
        return any(p.get("type") == USAGE_TRACE
                   for _, _, p in program(job.profile, job.profile_data, definition))

    def natural_outcome(self, job: Any, ctx: Any) -> tuple[JobState, int]:
        """How the job ends without a walltime: its first failing task, or its ret."""
        known = self._natural.get(job.id)
        if known is None:
            def definition(n: str) -> Mapping[str, Any]:
                """A profile of the job's workload, by name."""
                return ctx.profile_definition(job.workload, n)
            ret = 0
            for _, _, leaf in program(job.profile, job.profile_data, definition):
                ret = int(leaf.get("ret", 0))
                if ret != 0:
                    break
            else:
                ret = int(job.profile_data.get("ret", 0))
            known = self._natural[job.id] = (_SUCCESS if ret == 0 else _FAILED, ret)
        return known

    def leaves(self, job: Any, ctx: Any) -> list[Any]:
        """The tasks the job runs, each with its path in the profile (I/O job merged)."""
        def definition(n: str) -> Mapping[str, Any]:
            """A profile of the job's workload, by name."""
            return ctx.profile_definition(job.workload, n)
        executors = _executors(job)
        mapping = job.storage_mapping
        # the job's ranks-to-hosts mapping: given, or set by its first usage trace
        ranking: list[Any] = [job.raw.get("smpi_ranks_to_hosts_mapping") or None]
        leaves = []
        for path, name, profile in program(job.profile, job.profile_data, definition):
            try:
                if profile.get("type") == USAGE_TRACE:
                    leaf = self._usage_leaf(job, name, profile, executors, ranking)
                else:
                    leaf = leaf_task(name, profile, executors, f"{job.workload}!{name}",
                                     mapping, self.storage_ids)
            except InputError as exc:
                if not leaves:
                    raise
                # Batsim checks a task as it starts (execute_task, execute_parallel_task):
                # a sequence killed before its bad task runs fine
                leaf = Leaf(name, error=exc)
            leaves.append((path, leaf))
        io_job = getattr(job, "io_job", None)
        if not io_job:
            return leaves
        io_name, io_alloc = io_job
        where = f"{job.workload}!{job.profile}"
        ios = io_profiles(job.profile, job.profile_data, io_name, definition(io_name),
                          definition, where)
        return [(path, merged_leaf(leaf, name, profile, io_alloc, where))
                for (path, leaf), (name, profile) in zip(leaves, ios, strict=True)]

    def _usage_leaf(self, job: Any, name: str, profile: Mapping[str, Any],
                    executors: Sequence[int], ranking: list[Any]) -> Leaf:
        """A usage trace's ranks on the job's machines (``execute_task``, USAGE_TRACE).

        Rank ``r`` runs on the executor ``smpi_ranks_to_hosts_mapping[r]`` of the job. A
        job without one (or with an empty one) gets, at its first usage trace, ``r``
        modulo its requested resources for each of that trace's ranks, and keeps it:
        a later usage trace of the job with another rank count is an invalid job
        (``execute_task``'s assertion). ``ranking[0]`` holds that mapping. Each
        ``m_usage`` line a task of ``max(round(usage x cores), 1)`` executors of its
        flops on that host; the job actor receiving the ranks' messages runs on the
        allocation's first machine.
        """
        where = f"{job.workload}!{name}"
        key = (job.workload, name)
        ranks = self._rank_traces.get(key)
        if ranks is None:
            known = self._traces.get(key)
            if known is None:  # checked at load: a workload file's profile
                raise InputError("usage_trace profile not read from a workload file",
                                 field=where)
            source = self._sources.get(job.workload)
            ranks = self._rank_traces[key] = read_usage_trace(known[1], where, source)
        requested = int(job.res)
        if ranking[0] is None:
            ranking[0] = [rank % requested for rank in range(len(ranks))]
        hosts = rank_hosts(len(ranks), executors, ranking[0], requested, where, job.id)
        cores = self.cores
        return Leaf(name, ranks=tuple(
            (host, tuple((cores_to_use(usage, cores[host]), flops)
                         for usage, flops in rank.actions))
            for host, rank in zip(hosts, ranks, strict=True)),
            receiver=job.alloc.min(), ret=int(profile.get("ret", 0)))


def _executors(job: Any) -> Sequence[int]:
    """The machine of each executor: the allocation, or its ``mapping`` in EXECUTE_JOB."""
    machines = list(job.alloc)
    mapping = job.mapping
    if mapping:
        return [machines[mapping[rank]] for rank in sorted(mapping)]
    return machines
