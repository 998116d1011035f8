"""The one decision checker: nothing reaches Batsim (or the simulator) unchecked.

Every rule below is something real Batsim 4.2.1 aborts on (PROTOCOL.md §1.4) or
something that would silently corrupt the schedule. A violation raises one
:class:`~batpolicy.errors.InvalidDecision` naming the policy, the job and the resources.
Decisions are checked one by one against the state *as the previous decisions of the
same reply left it*, so two decisions of one reply cannot give a machine twice.
"""

from __future__ import annotations

from collections.abc import Callable

from batpolicy.errors import InvalidDecision
from batpolicy.protocol import types as t
from batpolicy.scheduler.jobs import JobStatus
from batpolicy.scheduler.state import ClusterState

#: Profile types whose allocation size may differ from ``res`` (PROTOCOL.md §1.4).
_SIZE_FREE_PROFILES = frozenset({"parallel_homogeneous_total"})


def check_decision(state: ClusterState, decision: t.Decision, policy: str = "") -> None:
    """Raise :class:`InvalidDecision` if Batsim would refuse ``decision`` in ``state``.

    Runtime complexity: O(k) interval-set operations for EXECUTE_JOB, O(1) otherwise.
    """
    rule = _RULES.get(type(decision))
    if rule is not None:
        rule(state, decision, policy)


def _fail(message: str, policy: str, job_id: str | None = None, resources: object = None) -> None:
    raise InvalidDecision(message, policy=policy or None, job_id=job_id,
                          resources=None if resources is None else str(resources))


def _check_execute(state: ClusterState, d: t.ExecuteJob, policy: str) -> None:
    job = state.jobs.get(d.job_id)
    if job is None:
        _fail("EXECUTE_JOB of an unknown job", policy, d.job_id, d.alloc)
        return
    if job.status is not JobStatus.WAITING:
        _fail(f"EXECUTE_JOB of a job that is {job.status.value} (a job starts once, "
              "and only if submitted and not rejected)", policy, d.job_id, d.alloc)
    options = sum(x is not None for x in (d.mapping, d.storage_mapping, d.additional_io_job))
    if options > 1:
        _fail("EXECUTE_JOB with more than one of mapping / storage_mapping / "
              "additional_io_job (Batsim accepts at most one)", policy, d.job_id, d.alloc)
    alloc = d.alloc
    if not alloc:
        _fail("EXECUTE_JOB with an empty allocation", policy, d.job_id, alloc)
    unknown = alloc - state.all_machines
    if unknown:
        _fail(f"allocation names machines that do not exist ({unknown}; the platform has "
              f"{state.nb_machines})", policy, d.job_id, alloc)
    unavailable = alloc & state.unavailable
    if unavailable:
        _fail(f"allocation uses unavailable machines {unavailable}", policy, d.job_id, alloc)
    not_free = alloc - state.free
    if not_free:
        _fail(f"allocation uses machines {not_free} that are busy or not in a computing state",
              policy, d.job_id, alloc)
    size = len(alloc)
    if d.mapping is not None:
        if len(d.mapping) != job.res:
            _fail(f"mapping has {len(d.mapping)} executors, the job requests {job.res}",
                  policy, d.job_id, alloc)
    elif size != job.res:
        profile = state.profile_of(job) or {}
        if profile.get("type") not in _SIZE_FREE_PROFILES:
            _fail(f"allocation of {size} machines for a job that requests {job.res}",
                  policy, d.job_id, alloc)


def _check_reject(state: ClusterState, d: t.RejectJob, policy: str) -> None:
    job = state.jobs.get(d.job_id)
    if job is None:
        _fail("REJECT_JOB of an unknown job", policy, d.job_id)
    elif job.status is not JobStatus.WAITING:
        _fail(f"REJECT_JOB of a job that is {job.status.value} (only a submitted, "
              "not started job can be rejected)", policy, d.job_id)


def _check_kill(state: ClusterState, d: t.KillJob, policy: str) -> None:
    if not d.job_ids:
        _fail("KILL_JOB with no job", policy)
    for job_id in d.job_ids:
        job = state.jobs.get(job_id)
        if job is None:
            _fail("KILL_JOB of an unknown job", policy, job_id)
        elif job.status is JobStatus.WAITING or job.status is JobStatus.REJECTED:
            _fail(f"KILL_JOB of a job that never started ({job.status.value})", policy, job_id)
        elif job.status is JobStatus.COMPLETED:
            _fail("KILL_JOB of a job already reported complete (Batsim has forgotten it)",
                  policy, job_id)


def _check_call_me_later(state: ClusterState, d: t.CallMeLater, policy: str) -> None:
    if not d.at > state.now:
        _fail(f"CALL_ME_LATER at {d.at} is not strictly after now={state.now} "
              "(Batsim aborts: 'You asked to be awaken in the past')", policy)


def _check_register_job(state: ClusterState, d: t.RegisterJob, policy: str) -> None:
    if not state.dynamic_jobs_enabled:
        _fail("REGISTER_JOB while Batsim runs without --enable-dynamic-jobs", policy, d.job_id)
    if state.registration_finished:
        _fail("REGISTER_JOB after registration_finished", policy, d.job_id)
    if d.job_id.count("!") != 1:
        _fail("a job id must be 'workload!name' with exactly one '!'", policy, d.job_id)
    if d.job_id in state.jobs:
        _fail("REGISTER_JOB with an id Batsim already knows", policy, d.job_id)
    desc = d.job or {}
    res = desc.get("res")
    if not isinstance(res, int) or isinstance(res, bool) or res < 0:
        _fail(f"registered job has res={res!r}; it must be an integer >= 0", policy, d.job_id)
    workload = d.job_id.split("!", 1)[0]
    profile = desc.get("profile")
    if profile not in state.profiles.get(workload, {}):
        _fail(f"registered job uses profile {profile!r}, unknown in workload '{workload}' "
              "(register it with REGISTER_PROFILE first)", policy, d.job_id)


def _check_register_profile(state: ClusterState, d: t.RegisterProfile, policy: str) -> None:
    if not state.dynamic_jobs_enabled:
        _fail("REGISTER_PROFILE while Batsim runs without --enable-dynamic-jobs", policy)
    if d.profile_name in state.profiles.get(d.workload_name, {}):
        _fail(f"profile '{d.workload_name}!{d.profile_name}' is already registered "
              "(Batsim aborts on re-registration)", policy)


def _check_metadata(state: ClusterState, d: t.SetJobMetadata, policy: str) -> None:
    job = state.jobs.get(d.job_id)
    if job is None:
        _fail("SET_JOB_METADATA of an unknown job", policy, d.job_id)
    elif job.status is JobStatus.COMPLETED:
        _fail("SET_JOB_METADATA of a job already reported complete", policy, d.job_id)
    if '"' in d.metadata:
        _fail("job metadata may not contain a double quote", policy, d.job_id)


def _check_change_job_state(state: ClusterState, d: t.ChangeJobState, policy: str) -> None:
    job = state.jobs.get(d.job_id)
    if job is None:
        _fail("CHANGE_JOB_STATE of an unknown job", policy, d.job_id)
        return
    allowed = {
        JobStatus.WAITING: {t.JobState.RUNNING, t.JobState.REJECTED},
        JobStatus.RUNNING: {t.JobState.COMPLETED_SUCCESSFULLY, t.JobState.COMPLETED_KILLED,
                            t.JobState.COMPLETED_WALLTIME_REACHED, t.JobState.COMPLETED_FAILED},
    }.get(job.status, set())
    if d.job_state not in allowed:
        _fail(f"CHANGE_JOB_STATE from {job.status.value} to {d.job_state.value} is not allowed",
              policy, d.job_id)


def _check_registration_finished(state: ClusterState, d: t.RegistrationFinished,
                                 policy: str) -> None:
    if not state.dynamic_jobs_enabled:
        _fail("NOTIFY registration_finished while dynamic jobs are disabled", policy)


_RULES: dict[type, Callable[[ClusterState, t.Decision, str], None]] = {
    t.ExecuteJob: _check_execute,  # type: ignore[dict-item]
    t.RejectJob: _check_reject,  # type: ignore[dict-item]
    t.KillJob: _check_kill,  # type: ignore[dict-item]
    t.CallMeLater: _check_call_me_later,  # type: ignore[dict-item]
    t.RegisterJob: _check_register_job,  # type: ignore[dict-item]
    t.RegisterProfile: _check_register_profile,  # type: ignore[dict-item]
    t.SetJobMetadata: _check_metadata,  # type: ignore[dict-item]
    t.ChangeJobState: _check_change_job_state,  # type: ignore[dict-item]
    t.RegistrationFinished: _check_registration_finished,  # type: ignore[dict-item]
}
