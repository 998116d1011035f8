"""Kill and restart through the Batsim 4.2 protocol: naming, registering and accounting copies.

Faure, Lucarelli, Richard & Trystram, IPDPSW 2020, §III-A: "a redirected job is terminated
and restarted from the beginning into the redirection group". On Batsim that is KILL_JOB,
then, on JOB_KILLED, REGISTER_JOB of a *copy* (new id, same res, walltime and subtime,
Batsim's protocol: decisions, dynamic jobs), and the copy is started like any job.

Where the copy's profile comes from (Batsim's protocol: dynamic jobs, profile garbage collection):

- ``copy_workload="@original"`` and ``--enable-profile-reuse``: the copy lives in the
  original's workload and names the original profile; nothing else is registered (the
  ``chaos-dyn-reuse-paper800`` transcript does exactly this with real Batsim 4.2.1);
- otherwise the copy gets a profile registered under a fresh name (REGISTER_PROFILE) in
  the copy's workload, ``redir`` by default (REGISTER_PROFILE creates the workload). Its
  content is the profile forwarded on submission, or the one of the profile table that
  Batsim 4.2.1 always sends in SIMULATION_BEGINS. With profile reuse on, one registration
  per source profile is shared by all its copies; without, every copy gets its own name
  (a completed copy's profile is garbage-collected and its name may never be registered
  again). Profiles that name other profiles or files (``composed``, ``smpi``,
  ``usage_trace``) cannot be re-registered elsewhere; jobs using them are never
  redirected in that mode (a job is only killed if its copy can be registered).

Accounting: the copy keeps the original's ``subtime`` (Batsim keeps it as the submission
time, so its jobs.csv row gives waiting = copy start − original submission and turnaround
= copy end − original submission), carries ``parent=<original id>`` as metadata, and the
killed original carries ``redirected_to=<copy id>``. :func:`user_job_outcomes` counts
each user job once from such a set of jobs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from batpolicy.protocol import types as t
from batpolicy.scheduler.jobs import Job, JobStatus
from batpolicy.scheduler.outcomes import PARENT_KEY, JobOutcome, merge_copies

#: ``copy_workload`` value that keeps a copy in its original's workload.
SAME_WORKLOAD = "@original"
#: Profile types that refer to other profiles or to files by relative path.
NOT_SELF_CONTAINED = frozenset({"composed", "sequence", "smpi", "usage_trace"})
#: Metadata keys written on copies and on killed originals (no double quotes: §1.4).
COPY_KEY = "redirected_to"


def unique_name(base: str, taken: Callable[[str], bool]) -> str:
    """``base``, or ``base#2``, ``base#3``… the first that ``taken`` refuses.

    >>> unique_name("w0.7", lambda n: n in {"w0.7", "w0.7#2"})
    'w0.7#3'
    """
    if not taken(base):
        return base
    n = 2
    while taken(f"{base}#{n}"):
        n += 1
    return f"{base}#{n}"


def copy_name(original_id: str, copy_workload: str) -> str:
    """The copy's full id before de-duplication, derived from the original's.

    >>> copy_name("w0!12", "redir"), copy_name("w0!12", SAME_WORKLOAD)
    ('redir!w0.12', 'w0!12.r')
    """
    workload, _, name = original_id.partition("!")
    if copy_workload == SAME_WORKLOAD:
        return f"{workload}!{name}.r"
    return f"{copy_workload}!{workload}.{name}"


def metadata_value(key: str, job_id: str) -> str:
    """``key=job_id`` with any double quote dropped (Batsim refuses them in metadata).

    >>> metadata_value(PARENT_KEY, 'w0!12')
    'parent=w0!12'
    """
    return f"{key}={job_id}".replace('"', "")


@dataclass(frozen=True, slots=True)
class CopyPlan:
    """The decisions that register one copy: an optional profile, then the job."""

    job_id: str
    profile_name: str
    job: dict[str, Any]
    register_profile: t.RegisterProfile | None

    def decisions(self, parent_id: str) -> list[t.Decision]:
        """REGISTER_PROFILE (if needed), REGISTER_JOB, SET_JOB_METADATA ``parent=…``."""
        out: list[t.Decision] = []
        if self.register_profile is not None:
            out.append(self.register_profile)
        out.append(t.RegisterJob(self.job_id, self.job))
        out.append(t.SetJobMetadata(self.job_id, metadata_value(PARENT_KEY, parent_id)))
        return out


class CopyPlanner:
    """Names copies and their profiles and decides what must be registered.

    ``reuse`` and ``forwarded`` are Batsim's ``profile-reuse-enabled`` and
    ``profiles-forwarded-on-submission`` (SIMULATION_BEGINS config).
    """

    __slots__ = ("copy_workload", "reuse", "forwarded", "_shared")

    def __init__(self, copy_workload: str, *, reuse: bool, forwarded: bool) -> None:
        self.copy_workload = copy_workload
        self.reuse = reuse
        self.forwarded = forwarded
        self._shared: dict[tuple[str, str], str] = {}

    @property
    def reuses_original_profile(self) -> bool:
        """True when copies name the original profile and nothing else is registered."""
        return self.copy_workload == SAME_WORKLOAD and self.reuse

    def describe(self) -> str:
        """One sentence for the log at SIMULATION_BEGINS."""
        where = ("in the original's workload" if self.copy_workload == SAME_WORKLOAD
                 else f"in workload '{self.copy_workload}'")
        if self.reuses_original_profile:
            return f"copies are registered {where} with the original profile (profile reuse on)"
        source = ("the profile forwarded on submission" if self.forwarded
                  else "the profile table of SIMULATION_BEGINS (profiles are not forwarded)")
        share = ("one fresh profile per source profile, shared (profile reuse on)" if self.reuse
                 else "one fresh profile per copy (profile reuse off: Batsim garbage-collects "
                      "a profile when its last job ends)")
        text = f"copies are registered {where} with {share}, copied from {source}"
        if not self.reuse and not self.forwarded:
            text = ("neither --enable-profile-reuse nor --forward-profiles-on-submission: a "
                    "killed job's profile cannot be named again, so " + text)
        return text

    def problem_at_begin(self, profiles: Mapping[str, Mapping[str, Any]],
                         workloads: Iterable[str]) -> str | None:
        """Why no copy could ever be registered, or None if copies can be made."""
        if self.reuses_original_profile or self.forwarded:
            return None
        empty = sorted(wl for wl in workloads if not profiles.get(wl))
        if empty:
            return (f"cannot restart killed jobs: profile reuse is off, profiles are not "
                    f"forwarded on submission, and SIMULATION_BEGINS gave no profile of "
                    f"workload(s) {', '.join(empty)}; run Batsim with "
                    f"--forward-profiles-on-submission, or with --enable-profile-reuse and "
                    f"copy_workload={SAME_WORKLOAD}")
        return None

    def source_profile(self, job: Job, profiles: Mapping[str, Mapping[str, Any]]
                       ) -> dict[str, Any] | None:
        """The content to re-register for ``job``'s copy, if known and self-contained."""
        data = job.profile_data
        if data is None:
            data = profiles.get(job.workload, {}).get(job.profile)
        if data is None or data.get("type") in NOT_SELF_CONTAINED or "seq" in data:
            return None
        return dict(data)

    def can_copy(self, job: Job, profiles: Mapping[str, Mapping[str, Any]]) -> bool:
        """Whether a copy of ``job`` can be registered (never kill what cannot restart)."""
        return self.reuses_original_profile or self.source_profile(job, profiles) is not None

    def copy_id(self, original: Job, taken: Callable[[str], bool]) -> str:
        """A fresh, unique full id for ``original``'s copy."""
        workload, _, name = copy_name(original.id, self.copy_workload).partition("!")
        return f"{workload}!{unique_name(name, lambda n: taken(f'{workload}!{n}'))}"

    def plan(self, original: Job, copy_id: str, profiles: Mapping[str, Mapping[str, Any]]
             ) -> CopyPlan:
        """The registration of ``original``'s copy as ``copy_id`` (profile first if needed).

        Raises ``ValueError`` if the profile cannot be re-registered (check
        :meth:`can_copy` before killing).
        """
        workload, _, name = copy_id.partition("!")
        register: t.RegisterProfile | None = None
        if self.reuses_original_profile:
            profile_name = original.profile
        else:
            content = self.source_profile(original, profiles)
            if content is None:
                raise ValueError(f"profile '{original.profile}' of job '{original.id}' cannot be "
                                 "re-registered")
            known = profiles.get(workload, {})
            key = (original.workload, original.profile)
            if self.reuse and key in self._shared:
                profile_name = self._shared[key]
            else:
                base = f"{original.workload}.{original.profile}" if self.reuse else name
                if self.copy_workload == SAME_WORKLOAD and not self.reuse:
                    base = f"{original.profile}.{name}"
                profile_name = unique_name(base, lambda n: n in known)
                register = t.RegisterProfile(workload, profile_name, content)
                if self.reuse:
                    self._shared[key] = profile_name
        desc = dict(original.raw or {})
        desc.update(id=copy_id, profile=profile_name, res=original.res,
                    subtime=original.subtime)
        desc["walltime"] = original.walltime if original.walltime is not None else -1
        return CopyPlan(copy_id, profile_name, desc, register)


def user_job_outcomes(jobs: Iterable[Job]) -> list[JobOutcome]:
    """One :class:`JobOutcome` per *user* job: a redirected job counts once, as its copy.

    A copy (metadata ``parent=…``) stands for its original: submitted at the original's
    submission (the copy keeps its subtime), started and ended as the copy. Killed
    originals that have a copy are dropped; everything else is taken as is. Jobs still
    waiting or running are left out.
    Runtime complexity: O(n).

    >>> from batpolicy.protocol.types import JobState
    >>> from batpolicy.scheduler.jobs import Job, JobStatus
    >>> orig = Job("w0!1", 5.0, 2, 100.0, "p", 0, status=JobStatus.COMPLETED, start=10.0,
    ...            finish=30.0, final_state=JobState.COMPLETED_KILLED)
    >>> copy = Job("redir!w0.1", 5.0, 2, 100.0, "p", 1, status=JobStatus.COMPLETED, start=30.0,
    ...            finish=80.0, final_state=JobState.COMPLETED_SUCCESSFULLY,
    ...            metadata="parent=w0!1")
    >>> [(o.submit, o.start, o.finish) for o in user_job_outcomes([orig, copy])]
    [(5.0, 30.0, 80.0)]
    """
    out: list[tuple[str, str, JobOutcome]] = []
    for job in jobs:
        if job.status is JobStatus.REJECTED:
            out.append((job.id, job.metadata, JobOutcome(job.subtime, None, None, job.res, False)))
        elif job.status is JobStatus.COMPLETED:
            state = job.final_state
            out.append((job.id, job.metadata, JobOutcome(
                job.subtime, job.start, job.finish, job.res,
                success=state is t.JobState.COMPLETED_SUCCESSFULLY,
                killed=state is t.JobState.COMPLETED_KILLED)))
    return merge_copies(out)


def wasted_processor_seconds(job: Job, until: float) -> float:
    """Processor-seconds a killed run consumed: (kill time − start) × res.

    >>> wasted_processor_seconds(Job("w0!1", 0.0, 4, 100.0, "p", 0, start=10.0), 25.0)
    60.0
    """
    return max(until - (job.start if job.start is not None else until), 0.0) * job.res
