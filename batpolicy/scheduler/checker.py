"""The one decision checker: nothing reaches Batsim (or the simulator) unchecked.

Every rule below is something real Batsim 4.2.1 aborts on (Batsim's protocol: decisions; the rules
both this checker and the simulator apply are written once, in
:mod:`batpolicy.scheduler.rules`) or something that would silently corrupt the
schedule. A violation raises one :class:`~batpolicy.errors.InvalidDecision` naming the
policy, the job and the resources. Decisions are checked one by one against the state
*as the previous decisions of the same reply would leave it* (a :class:`Scratch` view),
without touching the state: a reply is accepted whole or refused whole, and two decisions
of one reply cannot give a machine twice.
"""

from __future__ import annotations

from collections.abc import Callable

from batpolicy.errors import InvalidDecision
from batpolicy.protocol import types as t
from batpolicy.protocol.intervals import MachineSet
from batpolicy.scheduler import rules
from batpolicy.scheduler.jobs import Job, JobStatus
from batpolicy.scheduler.state import ClusterState


class Scratch:
    """The state as the decisions checked so far would leave it; the state is not touched.

    It answers the few questions the rules ask (job status, free machines, profiles,
    registration status) with the effect of earlier decisions of the same reply.
    """

    __slots__ = ("state", "free", "now", "_jobs", "_status", "_registered", "_profiles",
                 "registration_finished")

    def __init__(self, state: ClusterState) -> None:
        self.state = state
        self._jobs = state.jobs  # read-only, live: one proxy per reply, not one per decision
        self.free = state.free
        self.now = state.now
        self.registration_finished = state.registration_finished
        self._status: dict[str, JobStatus] = {}
        self._registered: dict[str, Job] = {}
        self._profiles: set[tuple[str, str]] = set()

    # What no decision changes is read from the state when a rule asks (for EXECUTE_JOB,
    # only when naming why an allocation is refused): not copied for every reply.
    @property
    def all_machines(self) -> MachineSet:
        """Every compute machine."""
        return self.state.all_machines

    @property
    def unavailable(self) -> MachineSet:
        """Machines made unavailable by external events."""
        return self.state.unavailable

    @property
    def nb_machines(self) -> int:
        """Number of compute machines."""
        return self.state.nb_machines

    @property
    def dynamic_jobs_enabled(self) -> bool:
        """Whether Batsim accepts registrations."""
        return self.state.dynamic_jobs_enabled

    def job(self, job_id: str) -> Job | None:
        """The job with this id, registered earlier in this reply included."""
        return self._jobs.get(job_id) or self._registered.get(job_id)

    def status(self, job: Job) -> JobStatus:
        """The job's status after the decisions checked so far."""
        return self._status.get(job.id, job.status)

    def has_profile(self, workload: str, name: str) -> bool:
        """Whether the profile exists, registered earlier in this reply included."""
        return name in self.state.profiles.get(workload, {}) or (workload, name) in self._profiles

    def profile_of(self, job: Job) -> dict | None:
        """The job's profile JSON if known."""
        return self.state.profile_of(job)

    def record(self, d: t.Decision) -> None:
        """Account for an accepted decision."""
        kind = type(d)
        if kind is t.ExecuteJob:
            self.free = self.free - d.alloc  # type: ignore[union-attr]
            self._status[d.job_id] = JobStatus.RUNNING  # type: ignore[union-attr]
        elif kind is t.RejectJob:
            self._status[d.job_id] = JobStatus.REJECTED  # type: ignore[union-attr]
        elif kind is t.RegisterJob:
            desc = d.job or {}  # type: ignore[union-attr]
            self._registered[d.job_id] = Job(  # type: ignore[union-attr]
                d.job_id, float(desc.get("subtime", self.now)), int(desc.get("res", 0)),  # type: ignore[union-attr]
                None, str(desc.get("profile", "")), seq=-1, raw=desc, dynamic=True)
        elif kind is t.RegisterProfile:
            self._profiles.add((d.workload_name, d.profile_name))  # type: ignore[union-attr]
        elif kind is t.RegistrationFinished:
            self.registration_finished = True
        elif kind is t.ContinueRegistration:
            self.registration_finished = False
        elif kind is t.ChangeJobState:
            state = d.job_state  # type: ignore[union-attr]
            self._status[d.job_id] = (  # type: ignore[union-attr]
                JobStatus.RUNNING if state is t.JobState.RUNNING
                else JobStatus.REJECTED if state is t.JobState.REJECTED else JobStatus.COMPLETED)


def check_decisions(state: ClusterState, decisions: list[t.Decision] | tuple[t.Decision, ...],
                    policy: str = "") -> None:
    """Raise :class:`InvalidDecision` if Batsim would refuse any of ``decisions``, in order.

    The state is not changed. Runtime complexity: one C-level subset test of bitmaps per
    EXECUTE_JOB (more to name a refused one's fault), O(1) for other decisions.
    """
    if not decisions:  # most replies (a submission that cannot start yet): nothing to check
        return
    if _plain_starts(state, decisions):  # nearly every other reply
        return
    scratch = Scratch(state)
    last = len(decisions) - 1
    for index, decision in enumerate(decisions):
        rule = _RULES.get(type(decision))
        if rule is not None:
            rule(scratch, decision, policy)
        if index < last:  # what the last one changes, no later decision reads
            scratch.record(decision)


def _plain_starts(state: ClusterState,
                  decisions: list[t.Decision] | tuple[t.Decision, ...]) -> bool:
    """Whether ``decisions`` are EXECUTE_JOBs that every rule of :func:`_check_execute` accepts.

    The reply of nearly every message that decides something: each decision starts a
    distinct waiting job, without option, on a :class:`MachineSet` of exactly ``res``
    machines, all free once the earlier ones of the reply took theirs. Such a decision
    passes :func:`_check_execute` (a waiting job's status is WAITING; the size matches
    without a mapping), so it is accepted without a :class:`Scratch`; anything else
    answers False and the reply is checked rule by rule, which names what is wrong.
    Runtime complexity: one dictionary lookup and one C-level subset test per decision.
    """
    waiting = state._waiting  # noqa: SLF001  (the checker is the state's companion)
    free = state.machines.free
    last = len(decisions) - 1
    started: set[str] = set()
    for index, d in enumerate(decisions):
        if type(d) is not t.ExecuteJob:
            return False
        job = waiting.get(d.job_id)
        alloc = d.alloc
        if (job is None or type(alloc) is not MachineSet or not alloc
                or d.mapping is not None or d.storage_mapping is not None
                or d.additional_io_job is not None or len(alloc) != job.res
                or alloc.difference_cardinality(free)  # not alloc <= free (intervals)
                or d.job_id in started):
            return False
        if index < last:  # what the last one changes, no later decision reads
            started.add(d.job_id)
            free = free - alloc
    return True


def _fail(message: str, policy: str, job_id: str | None = None, resources: object = None) -> None:
    raise InvalidDecision(message, policy=policy or None, job_id=job_id,
                          resources=None if resources is None else str(resources))


def _check_execute(state: Scratch, d: t.ExecuteJob, policy: str) -> None:
    job = state.job(d.job_id)
    if job is None:
        _fail("EXECUTE_JOB of an unknown job", policy, d.job_id, d.alloc)
        return
    if not rules.may_start(rules.STATE_OF_STATUS[state.status(job)]):
        _fail(f"EXECUTE_JOB of a job that is {state.status(job).value} (a job starts once, "
              "and only if submitted and not rejected)", policy, d.job_id, d.alloc)
    options = (d.mapping, d.storage_mapping, d.additional_io_job)
    if options != rules.NO_EXECUTE_OPTIONS and not rules.at_most_one_execute_option(*options):
        _fail("EXECUTE_JOB with more than one of mapping / storage_mapping / "
              "additional_io_job (Batsim accepts at most one)", policy, d.job_id, d.alloc)
    alloc = d.alloc
    if not isinstance(alloc, MachineSet):  # e.g. a list of ids from a user's own policy
        _fail("EXECUTE_JOB's allocation must be a MachineSet (batpolicy.protocol.intervals), "
              f"not a {type(alloc).__name__} ({alloc!r:.80})", policy, d.job_id, None)
    if not alloc:
        _fail("EXECUTE_JOB with an empty allocation", policy, d.job_id, alloc)
    if not alloc <= state.free:
        # Free machines exist and are available (the state's invariants, ClusterState.check):
        # an allocation within them passes the two rules below, so they run only to name
        # the first rule a refused allocation breaks, in Batsim's order.
        if not alloc <= state.all_machines:
            _fail(f"allocation names machines that do not exist "
                  f"({alloc - state.all_machines}; the platform has "
                  f"{state.nb_machines})", policy, d.job_id, alloc)
        if not alloc.isdisjoint(state.unavailable):
            _fail(f"allocation uses unavailable machines {alloc & state.unavailable}", policy,
                  d.job_id, alloc)
        _fail(f"allocation uses machines {alloc - state.free} that are busy or not "
              "in a computing state", policy, d.job_id, alloc)
    if d.mapping is None and len(alloc) == job.res:  # the usual case: no profile lookup
        return
    profiles = state.state.profiles.get(job.workload, {})
    if not rules.allocation_size_ok(job.res, len(alloc), d.mapping, state.profile_of(job),
                                    profiles.get):
        if d.mapping is not None:
            _fail(f"mapping has {len(d.mapping)} executors, the job requests {job.res}",
                  policy, d.job_id, alloc)
        _fail(f"allocation of {len(alloc)} machines for a job that requests {job.res}",
              policy, d.job_id, alloc)


def _check_reject(state: Scratch, d: t.RejectJob, policy: str) -> None:
    job = state.job(d.job_id)
    if job is None:
        _fail("REJECT_JOB of an unknown job", policy, d.job_id)
    elif not rules.may_be_rejected(rules.STATE_OF_STATUS[state.status(job)]):
        _fail(f"REJECT_JOB of a job that is {state.status(job).value} (only a submitted, "
              "not started job can be rejected)", policy, d.job_id)


def _check_kill(state: Scratch, d: t.KillJob, policy: str) -> None:
    if not d.job_ids:
        _fail("KILL_JOB with no job", policy)
    for job_id in d.job_ids:
        job = state.job(job_id)
        if job is None:
            _fail("KILL_JOB of an unknown job", policy, job_id)
        elif state.status(job) in (JobStatus.WAITING, JobStatus.REJECTED):
            _fail(f"KILL_JOB of a job that never started ({state.status(job).value})",
                  policy, job_id)
        elif state.status(job) is JobStatus.COMPLETED:
            _fail("KILL_JOB of a job already reported complete (Batsim has forgotten it)",
                  policy, job_id)


def _check_call_me_later(state: Scratch, d: t.CallMeLater, policy: str) -> None:
    if not rules.awakes_in_future(d.at, state.now):
        _fail(f"CALL_ME_LATER at {d.at} is not strictly after now={state.now} "
              "(Batsim aborts: 'You asked to be awaken in the past')", policy)


def _check_register_job(state: Scratch, d: t.RegisterJob, policy: str) -> None:
    if not state.dynamic_jobs_enabled:
        _fail("REGISTER_JOB while Batsim runs without --enable-dynamic-jobs", policy, d.job_id)
    if state.registration_finished:
        _fail("REGISTER_JOB after registration_finished", policy, d.job_id)
    if not rules.well_formed_job_id(d.job_id):
        _fail("a job id must be 'workload!name' with exactly one '!'", policy, d.job_id)
    if state.job(d.job_id) is not None:
        _fail("REGISTER_JOB with an id Batsim already knows", policy, d.job_id)
    desc = d.job or {}
    res = desc.get("res")
    if not rules.res_ok(res):
        _fail(f"registered job has res={res!r}; it must be an integer >= 0", policy, d.job_id)
    workload = d.job_id.split("!", 1)[0]
    profile = desc.get("profile")
    if not state.has_profile(workload, str(profile)):
        _fail(f"registered job uses profile {profile!r}, unknown in workload '{workload}' "
              "(register it with REGISTER_PROFILE first)", policy, d.job_id)


def _check_register_profile(state: Scratch, d: t.RegisterProfile, policy: str) -> None:
    if not state.dynamic_jobs_enabled:
        _fail("REGISTER_PROFILE while Batsim runs without --enable-dynamic-jobs", policy)
    if state.has_profile(d.workload_name, d.profile_name):
        _fail(f"profile '{d.workload_name}!{d.profile_name}' is already registered "
              "(Batsim aborts on re-registration)", policy)


def _check_metadata(state: Scratch, d: t.SetJobMetadata, policy: str) -> None:
    job = state.job(d.job_id)
    if job is None:
        _fail("SET_JOB_METADATA of an unknown job", policy, d.job_id)
    elif state.status(job) is JobStatus.COMPLETED:
        _fail("SET_JOB_METADATA of a job already reported complete", policy, d.job_id)
    if not rules.metadata_ok(d.metadata):
        _fail("job metadata may not contain a double quote", policy, d.job_id)


def _check_change_job_state(state: Scratch, d: t.ChangeJobState, policy: str) -> None:
    job = state.job(d.job_id)
    if job is None:
        _fail("CHANGE_JOB_STATE of an unknown job", policy, d.job_id)
        return
    if not rules.transition_allowed(rules.STATE_OF_STATUS[state.status(job)], d.job_state):
        _fail(f"CHANGE_JOB_STATE from {state.status(job).value} to {d.job_state.value} is "
              "not allowed", policy, d.job_id)


def _check_registration_finished(state: Scratch, d: t.RegistrationFinished,
                                 policy: str) -> None:
    if not state.dynamic_jobs_enabled:
        _fail("NOTIFY registration_finished while dynamic jobs are disabled", policy)


_RULES: dict[type, Callable[[Scratch, t.Decision, str], None]] = {
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
