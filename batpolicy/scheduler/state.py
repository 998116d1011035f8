"""``ClusterState``: the single source of truth of a scheduling run.

Both drivers (the daemon talking to Batsim, the embedded simulator) feed it the same
typed events (:meth:`ClusterState.apply`) and the checked decisions of the policy
(:meth:`ClusterState.apply_decision`). Policies read it through a
:class:`~batpolicy.scheduler.view.PolicyView` only.

What it holds: the simulated time; the machines with their availability and power
state; every job ever submitted (waiting, running with its allocation and expected end,
completed or rejected); the profiles and configuration Batsim announced; the pending
CALL_ME_LATER dates; the dynamic-registration status.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Mapping
from itertools import pairwise
from operator import attrgetter
from types import MappingProxyType
from typing import Any

from batpolicy.errors import ProtocolError
from batpolicy.platforms.model import Platform
from batpolicy.protocol import types as t
from batpolicy.protocol.intervals import MachineSet
from batpolicy.scheduler.conversation import (
    check_begins_once,
    check_completion,
    check_notify_kind,
)
from batpolicy.scheduler.jobfields import (
    EMPTY_FIELDS,
    FIELD_NAME_SET,
    JobFieldError,
    parse_job_fields,
)
from batpolicy.scheduler.jobs import Job, JobStatus, job_setter
from batpolicy.scheduler.machines import COMPUTING_POWER_STATES, Machines, Resource

__all__ = ["COMPUTING_POWER_STATES", "ClusterState", "Resource", "check_invariants"]

#: Enum members read once: under Python 3.11 ``JobStatus.X`` goes through EnumType's
#: Python-level ``__getattr__`` hook on every read (about ten times a global's cost).
_RUNNING, _COMPLETED = JobStatus.RUNNING, JobStatus.COMPLETED


# Jobs are read-only to everyone else (scheduler/jobs.py): the state sets their slots.
(_set_allocation, _set_expected_end, _set_final_state, _set_finish, _set_kill_requested,
 _set_metadata, _set_profile_data, _set_return_code, _set_start, _set_status) = map(
    job_setter, ("allocation", "expected_end", "final_state", "finish", "kill_requested",
                 "metadata", "profile_data", "return_code", "start", "status"))


#: The order of running jobs: expected end, then submission rank (unique per job).
_END_KEY = attrgetter("expected_end", "seq")


def _add_running(keys: list[tuple[float, int]], running: list[Job], job: Job) -> None:
    """Insert ``job`` in ``running``, kept sorted by :data:`_END_KEY`, and its key in ``keys``.

    A plain list with C-level bisection rather than a ``SortedKeyList``, whose add and
    remove cost about ten Python-level calls each: one start and one end per job is most
    of the messages. The bisection runs on ``keys``, the jobs' ``(expected end, rank)``
    in the same order, so that no comparison calls a key function (``insort`` with
    ``key=`` called it about log2(r) times per insertion). Runtime complexity: O(log r)
    comparisons and two O(r) C-level moves of pointers: the trade of
    :class:`~batpolicy.policies.toolkit.queue.JobQueue` (about even with a
    ``SortedKeyList`` at 4,000 entries, 2.2× dearer at 16,000, 8.5× at 100,000:
    ``bench/experiments/queue_sizes.py``).
    """
    key = (job.expected_end, job.seq)
    at = bisect_right(keys, key)
    keys.insert(at, key)
    running.insert(at, job)


def _remove_running(keys: list[tuple[float, int]], running: list[Job], job: Job) -> None:
    """Remove ``job`` from ``running`` and its key from ``keys`` (``job`` is in them).

    Runtime complexity: as :func:`_add_running`.
    """
    at = bisect_left(keys, (job.expected_end, job.seq))
    if at == len(running) or running[at] is not job:
        raise AssertionError(f"running job '{job.id}' is not in the running index")
    del keys[at]
    del running[at]


#: The handler of each event type (the name of a ClusterState method).
_ON_EVENT: dict[type, str] = {
    t.SimulationBegins: "_on_begins",
    t.SimulationEnds: "_on_ends",
    t.JobSubmitted: "_on_submitted",
    t.JobCompleted: "_on_completed",
    t.JobKilled: "_on_killed",
    t.ResourceStateChanged: "_on_resource_state",
    t.RequestedCall: "_on_requested_call",
    t.Notify: "_on_notify",
    t.Query: "_ignore",
    t.Answer: "_ignore",
    t.FromJobMsg: "_ignore",
}

#: The handler of each decision type, once the checker accepted it.
_ON_DECISION: dict[type, str] = {
    t.ExecuteJob: "_do_execute",
    t.RejectJob: "_do_reject",
    t.KillJob: "_do_kill",
    t.CallMeLater: "_do_call_me_later",
    t.RegisterJob: "_do_register_job",
    t.RegisterProfile: "_do_register_profile",
    t.RegistrationFinished: "_do_registration_finished",
    t.ContinueRegistration: "_do_continue_registration",
    t.SetJobMetadata: "_do_set_metadata",
    t.SetResourceState: "_do_set_resource_state",
    t.ChangeJobState: "_do_change_job_state",
    t.Query: "_ignore",
    t.Answer: "_ignore",
    t.ToJobMsg: "_ignore",
}


class ClusterState:
    """Machines, jobs and time of one run; changed only by events and checked decisions.

    Policies never see it: they get a :class:`~batpolicy.scheduler.view.PolicyView`,
    whose sets, sequences and mappings are read-only (:attr:`free` here is the live set).
    """

    def __init__(self, platform_file: Platform | None = None) -> None:
        self.now: float = 0.0
        #: the platform file, when the driver knows it: supplies what Batsim does not
        #: forward (speeds, zones, links) to :attr:`platform`
        self.platform_file = platform_file
        #: the machines, their availability and power states
        self.machines = Machines()
        self.config: dict[str, Any] = {}
        self.profiles: dict[str, dict[str, Any]] = {}
        self.workloads: dict[str, str] = {}
        self._jobs: dict[str, Job] = {}
        #: Forget a job once it completed or was rejected (the dispatcher sets it for a
        #: policy that declares ``reads_finished_jobs = False``): :attr:`jobs` then holds
        #: the waiting and running jobs only, and memory stays that of the jobs alive.
        self.forget_finished = False
        self._waiting: dict[str, Job] = {}
        self._running: dict[str, Job] = {}
        self._running_by_end: list[Job] = []  # sorted by _END_KEY
        self._running_keys: list[tuple[float, int]] = []  # their _END_KEY, in that order
        self._seq = 0
        self.pending_calls: list[float] = []
        self.registration_finished = False
        self.no_more_static_jobs = False
        self.no_more_external_events = False
        self.started = False
        self.ended = False
        #: Each event type's transition: :meth:`apply`'s, also called without its frame.
        self.transitions = {kind: getattr(self, name) for kind, name in _ON_EVENT.items()}
        #: Each decision type's transition: :meth:`apply_decision`'s, also called without
        #: its frame (the dispatcher applies one EXECUTE_JOB per started job).
        self.decision_transitions = {kind: getattr(self, name)
                                     for kind, name in _ON_DECISION.items()}

    # ----------------------------------------------------------------- read-only views
    @property
    def platform(self) -> Platform:
        """Machines in groups with speeds and GPU flags. Runtime complexity: O(1)."""
        return self.machines.platform

    @property
    def resources(self) -> list[Resource]:
        """The compute machines' records, by id. Runtime complexity: O(1)."""
        return self.machines.resources

    @property
    def nb_machines(self) -> int:
        """Number of compute machines. Runtime complexity: O(1)."""
        return len(self.machines.resources)

    @property
    def all_machines(self) -> MachineSet:
        """Every compute machine id. Runtime complexity: O(1)."""
        return self.machines.all

    @property
    def free(self) -> MachineSet:
        """Idle, available machines that may start a job now. Runtime complexity: O(1)."""
        return self.machines.free

    @property
    def unavailable(self) -> MachineSet:
        """Machines made unavailable by external events. Runtime complexity: O(1)."""
        return self.machines.unavailable

    @property
    def jobs(self) -> Mapping[str, Job]:
        """Every job submitted or registered, by full id. Runtime complexity: O(1).

        Finished ones too, unless :attr:`forget_finished`.
        """
        return MappingProxyType(self._jobs)

    @property
    def waiting(self) -> Mapping[str, Job]:
        """Waiting jobs in submission order. Runtime complexity: O(1)."""
        return MappingProxyType(self._waiting)

    @property
    def running(self) -> Mapping[str, Job]:
        """Running jobs by id. Runtime complexity: O(1)."""
        return MappingProxyType(self._running)

    @property
    def running_by_expected_end(self) -> list[Job]:
        """Running jobs sorted by (expected end, submission rank). Runtime complexity: O(1)."""
        return self._running_by_end

    def job(self, job_id: str) -> Job:
        """The job with this full id. Runtime complexity: O(1)."""
        return self._jobs[job_id]

    @property
    def dynamic_jobs_enabled(self) -> bool:
        """True when Batsim accepts REGISTER_JOB / REGISTER_PROFILE. Runtime complexity: O(1)."""
        return bool(self.config.get("dynamic-jobs-enabled", False))

    @property
    def dynamic_jobs_acknowledged(self) -> bool:
        """True when Batsim echoes a JOB_SUBMITTED for every registered job."""
        return bool(self.config.get("dynamic-jobs-acknowledged", False))

    def profile_of(self, job: Job) -> dict[str, Any] | None:
        """The job's profile JSON if known (forwarded, registered or from SIMULATION_BEGINS)."""
        if job.profile_data is not None:
            return job.profile_data
        return self.profiles.get(job.workload, {}).get(job.profile)

    # ----------------------------------------------------------------- applying events
    def apply(self, event: t.Event) -> Job | None:
        """Apply one Batsim event; return the job it concerns, if any.

        For JOB_SUBMITTED the job is returned only when it is new (an acknowledgement of
        a job this scheduler registered returns ``None``).
        Runtime complexity: O(log n) for job events, O(k) for interval-set updates.
        """
        try:
            handler = self.transitions[type(event)]
        except KeyError:
            raise ProtocolError(f"no state transition for {type(event).__name__}") from None
        return handler(event)

    def _on_begins(self, ev: t.SimulationBegins) -> None:
        check_begins_once(self.started)
        self.started = True
        self.now = ev.timestamp
        self.config = dict(ev.config)
        self.profiles = {wl: dict(p) for wl, p in ev.profiles.items()}
        self.workloads = dict(ev.workloads)
        self.machines.begin(ev, self.platform_file)

    def _on_ends(self, ev: t.SimulationEnds) -> None:
        self.ended = True

    def _on_submitted(self, ev: t.JobSubmitted) -> Job | None:
        known = self._jobs.get(ev.job_id)
        if known is not None:
            if known.dynamic:
                return None  # acknowledgement of our own REGISTER_JOB
            raise ProtocolError(f"job '{ev.job_id}' submitted twice", field="job_id",
                                event_type="JOB_SUBMITTED")
        if ev.job is None:
            raise ProtocolError("JOB_SUBMITTED without the job's description (Redis mode is "
                                "not supported)", field="job", event_type="JOB_SUBMITTED")
        job = self._new_job(ev.job_id, ev.job, dynamic=False)
        profile = ev.profile
        if profile is not None:  # forwarded (Batsim's --forward-profiles-on-submission)
            _set_profile_data(job, profile)
            self.profiles.setdefault(job.workload, {})[job.profile] = profile
        return job

    def _new_job(self, job_id: str, desc: dict[str, Any], *, dynamic: bool) -> Job:
        walltime = desc.get("walltime", -1)
        walltime = None if walltime is None or walltime < 0 else float(walltime)
        try:  # parse_job_fields' own first test, without its call when the job has none
            extra = EMPTY_FIELDS if FIELD_NAME_SET.isdisjoint(desc) else parse_job_fields(desc)
        except JobFieldError as exc:
            raise ProtocolError(f"job '{job_id}': {exc}", field=f"job.{exc.field}",
                                event_type="REGISTER_JOB" if dynamic else "JOB_SUBMITTED"
                                ) from None
        # positionally (Job's field order): a keyword call costs twice as much
        args = (job_id, float(desc.get("subtime", self.now)), int(desc["res"]), walltime,
                str(desc.get("profile", "")), self._seq, desc, None, dynamic)
        job = Job(*args) if extra is EMPTY_FIELDS else Job(*args, **dict(extra.items()))
        self._seq += 1
        self._jobs[job_id] = job
        self._waiting[job_id] = job
        return job

    def _on_completed(self, ev: t.JobCompleted) -> Job:
        job = self._jobs.get(ev.job_id)
        if job is None or job.status is not _RUNNING:
            state = "unknown" if job is None else job.status.value
            raise ProtocolError(f"JOB_COMPLETED for job '{ev.job_id}' which is {state}, not "
                                "running", field="job_id", event_type="JOB_COMPLETED")
        if ev.timestamp < job.start:  # type: ignore[operator]  # running: started
            check_completion(ev, job.start)  # type: ignore[arg-type]  # raises, naming it
        self._complete(job, ev.job_state, ev.timestamp)
        _set_return_code(job, ev.return_code)
        return job

    def _complete(self, job: Job, final_state: t.JobState, at: float) -> None:
        """``job`` ended in ``final_state`` at ``at``; if it ran, its machines are released.

        :func:`_remove_running` written inline, and the release of the machines (those still
        available become free) here: one call per JOB_COMPLETED instead of three.
        """
        if self._running.pop(job.id, None) is not None:
            running, keys = self._running_by_end, self._running_keys
            at_index = bisect_left(keys, (job.expected_end, job.seq))
            if at_index == len(running) or running[at_index] is not job:
                raise AssertionError(f"running job '{job.id}' is not in the running index")
            del keys[at_index]
            del running[at_index]
            allocation = job.allocation
            if allocation is not None:
                machines = self.machines
                if machines.unavailable:
                    allocation = allocation - machines.unavailable
                machines.free = machines.free | allocation  # not ^ (intervals)
        _set_status(job, _COMPLETED)
        _set_finish(job, at)
        _set_final_state(job, final_state)
        if self.forget_finished:
            self._jobs.pop(job.id, None)

    def _on_killed(self, ev: t.JobKilled) -> None:
        for job_id in ev.job_ids:
            job = self._jobs.get(job_id)
            if job is not None:
                _set_kill_requested(job, False)

    def _on_resource_state(self, ev: t.ResourceStateChanged) -> None:
        self.machines.state_changed(ev, self.busy_machines())

    def _do_set_resource_state(self, d: t.SetResourceState) -> None:
        self.machines.switch_requested(d)

    def _on_requested_call(self, ev: t.RequestedCall) -> None:
        self.pending_calls = [c for c in self.pending_calls if c > ev.timestamp]

    def _on_notify(self, ev: t.Notify) -> None:
        kind = ev.kind
        if kind == t.NotifyType.NO_MORE_STATIC_JOB_TO_SUBMIT:
            self.no_more_static_jobs = True
        elif kind == t.NotifyType.NO_MORE_EXTERNAL_EVENT_TO_OCCUR:
            self.no_more_external_events = True
        elif kind == t.NotifyType.EVENT_MACHINE_UNAVAILABLE and ev.resources is not None:
            self.machines.set_unavailable(ev.resources)  # running jobs keep them
        elif kind == t.NotifyType.EVENT_MACHINE_AVAILABLE and ev.resources is not None:
            self.machines.set_available(ev.resources, self.busy_machines())  # idle: free
        else:
            check_notify_kind(kind, self.config)

    def busy_machines(self) -> MachineSet:
        """Machines allocated to running jobs. Runtime complexity: one C-level union of r sets."""
        return MachineSet().union(*[job.allocation for job in self._running.values()])

    def move_expected_end(self, job: Job, expected_end: float) -> None:
        """Move a running job's expected end (speed-scaled or shared execution).

        Runtime complexity: O(log r) comparisons, one O(r) C-level move (:func:`_add_running`).
        """
        _remove_running(self._running_keys, self._running_by_end, job)
        _set_expected_end(job, expected_end)
        _add_running(self._running_keys, self._running_by_end, job)

    # -------------------------------------------------------------- applying decisions
    def apply_decision(self, decision: t.Decision) -> None:
        """Apply one decision that :func:`batpolicy.scheduler.checker.check_decisions` accepted.

        Runtime complexity: O(log n) plus interval-set updates.
        """
        self.decision_transitions[type(decision)](decision)

    def _do_execute(self, d: t.ExecuteJob) -> None:
        job = self._waiting.pop(d.job_id)
        _set_status(job, _RUNNING)
        _set_allocation(job, d.alloc)
        _set_start(job, self.now)
        end = self.now + job.planned_walltime  # inf without a walltime
        _set_expected_end(job, end)
        self._running[job.id] = job
        keys, key = self._running_keys, (end, job.seq)  # _add_running, without its call
        at = bisect_right(keys, key)
        keys.insert(at, key)
        self._running_by_end.insert(at, job)
        machines = self.machines
        machines.free = machines.free - d.alloc

    def _do_reject(self, d: t.RejectJob) -> None:
        job = self._waiting.pop(d.job_id)
        _set_status(job, JobStatus.REJECTED)
        _set_final_state(job, t.JobState.REJECTED)
        if self.forget_finished:
            self._jobs.pop(job.id, None)

    def _do_kill(self, d: t.KillJob) -> None:
        for job_id in d.job_ids:
            _set_kill_requested(self._jobs[job_id], True)

    def _do_call_me_later(self, d: t.CallMeLater) -> None:
        self.pending_calls.append(d.at)

    def _do_register_job(self, d: t.RegisterJob) -> None:
        desc = dict(d.job or {})
        desc.setdefault("subtime", self.now)
        self._new_job(d.job_id, desc, dynamic=True)

    def _do_register_profile(self, d: t.RegisterProfile) -> None:
        self.profiles.setdefault(d.workload_name, {})[d.profile_name] = d.profile

    def _do_registration_finished(self, d: t.RegistrationFinished) -> None:
        self.registration_finished = True

    def _do_continue_registration(self, d: t.ContinueRegistration) -> None:
        self.registration_finished = False

    def _do_set_metadata(self, d: t.SetJobMetadata) -> None:
        _set_metadata(self._jobs[d.job_id], d.metadata)

    def _do_change_job_state(self, d: t.ChangeJobState) -> None:
        job = self._jobs[d.job_id]
        if d.job_state is t.JobState.RUNNING:
            self._waiting.pop(job.id, None)
            _set_status(job, JobStatus.RUNNING)
            _set_start(job, self.now)
        elif d.job_state is t.JobState.REJECTED:
            self._waiting.pop(job.id, None)
            _set_status(job, JobStatus.REJECTED)
            _set_final_state(job, d.job_state)
        elif d.job_state.value.startswith("COMPLETED"):
            self._complete(job, d.job_state, self.now)

    @staticmethod
    def _ignore(_: object) -> None:
        """Events and decisions that change no state (QUERY, ANSWER, messages to jobs)."""


def check_invariants(state: ClusterState) -> None:
    """Verify a state's invariants; raise ``AssertionError`` naming the broken one.

    No machine allocated twice; free + busy + unavailable-idle = all
    (:meth:`Machines.check`); every running job has an allocation and a start, and an
    expected end at or before start + walltime; the running index holds the running jobs
    in (expected end, rank) order; the waiting queue is in submission order.
    Runtime complexity: O(n + r·k).
    """
    busy = MachineSet()
    for job in state.running.values():
        if job.allocation is None or job.start is None:
            raise AssertionError(f"running job '{job.id}' has no allocation or start")
        if busy & job.allocation:
            raise AssertionError(f"machines {busy & job.allocation} allocated twice "
                                 f"(job '{job.id}')")
        busy |= job.allocation
        if job.walltime is not None and job.expected_end > job.start + job.walltime + 1e-9:
            raise AssertionError(f"job '{job.id}' expected to end after its walltime")
    state.machines.check(busy)
    ordered = state.running_by_expected_end
    if len(ordered) != len(state.running):
        raise AssertionError("running index out of sync")
    if any(_END_KEY(a) >= _END_KEY(b) for a, b in pairwise(ordered)):
        raise AssertionError("running index not in (expected end, rank) order")
    if state._running_keys != list(map(_END_KEY, ordered)):  # noqa: SLF001
        raise AssertionError("running index's keys out of sync")
    last = -1
    for job in state.waiting.values():
        if job.seq < last:
            raise AssertionError("waiting queue not in submission order")
        last = job.seq
