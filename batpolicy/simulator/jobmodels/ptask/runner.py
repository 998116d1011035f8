"""Jobs as Batsim runs them on SimGrid: one task after another on the ``ptask_L07`` model.

Batsim's job actor (``src/jobs_execution.cpp``, ``execute_task``) runs a profile's tasks
in order: a sequence's ``seq`` ``repeat`` times, each leaf a parallel task
(``execute_parallel_task``) or a sleep (``do_delay_task``); the next task starts at the
instant the previous one ends, and a task whose ``ret`` is not 0 ends the job with it.
:class:`JobRunner` keeps every running job's position in its program on one
:class:`~.l07.L07Model` and moves them all together from event to event. The walltime
is the caller's (the engine kills at ``start + walltime``).

A parallel task's walltime is its own timer: Batsim waits for it with
``ptask->wait_for(*remaining_time)`` (``task_execution.cpp``, ``execute_parallel_task``),
which SimGrid 3.32 runs as a sleep action started just after the task
(``ActivityImpl::wait_for``, a ``RawImpl`` on ``CpuL07::sleep``): a countdown from the
remaining walltime, decreased by each update's delta like any sleep. So the task and its
timer are compared the way the solver sees them, not against the job's start + walltime
(which can round a few ulps to the other side: seed 223, a task and its timer both due
at 31.298045 s, where Batsim completes the job).

Batsim's own actors (:attr:`JobRunner.actors`, :mod:`.actor_actions`): its protocol
messages as SimGrid communications on the same model, machines' switches, and the
actors' sleeps; each handed back once done, in the order they began.

A sleep is SimGrid's sleep action (``CpuL07::sleep``): a countdown of its duration,
decreased by every update's delta (``Action::update_max_duration``: ``double_update``
with ``sg_surf_precision``) and done once it reaches 0; with another action ending
within ``sg_surf_precision`` of it, both end together. Which of two actions due a few
ulps apart ends first depends on these countdowns and on the clock SimGrid sums over the
updates (``EngineImpl::solve``: ``now_ += time_delta``), so the runner keeps both as
SimGrid does.

A usage trace (a leaf with ``ranks``, :mod:`.usage_trace`) is Batsim's
``execute_task`` for ``USAGE_TRACE``: one actor per rank, each running its one-host tasks
one after the other, then putting a 4-byte message on the job actor's mailbox; the job
actor receives them one at a time (a communication starts once both the put and the
job actor's next get are there, in the order of the puts) and the leaf ends with the
last one received. Its walltime reached, the job actor kills the rank actors: their
tasks and message leave the model at once; one ``Actor::kill`` simcall (a scheduling round)
per rank not received yet, so of the jobs timed out at one update those with fewer ranks
left report first (:meth:`JobRunner.end_order`).

Time: :meth:`JobRunner.next_time` is the soonest instant something changes (a task ends,
a latency is paid, a sleep ends); the caller must call :meth:`JobRunner.advance_to` at
that instant and at every instant it starts or kills a job, before doing so.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

from batpolicy.simulator.jobmodels.ptask.actor_actions import ActorActions
from batpolicy.simulator.jobmodels.ptask.l07 import L07Model
from batpolicy.simulator.jobmodels.ptask.lmm import SURF_PRECISION, double_update
from batpolicy.simulator.jobmodels.ptask.tasks import Leaf
from batpolicy.simulator.jobmodels.ptask.usage_ranks import RankActors

__all__ = ["JobRunner", "progress_tree"]

_INF = float("inf")

Path = tuple[tuple[str, int], ...]


@dataclass(slots=True, eq=False)
class _Run:
    """A running job: its leaves (lazily made), where it is, since when."""

    job_id: str
    leaves: list[tuple[Path, Leaf]]
    index: int = 0
    since: float = 0.0
    #: What is left of its current sleep (SimGrid's ``max_duration`` countdown).
    sleep_left: float | None = None
    task: Hashable | None = None
    seq: int = field(default=0)
    #: When its current task or sleep began, in the runner's count of actions started.
    serial: int = 0
    #: start + walltime (None: no walltime); set once the walltime is reached.
    deadline: float | None = None
    timed_out: bool = False
    #: Its current sleep is cut by the walltime (``do_delay_task``: delay >= remaining).
    sleep_to_deadline: bool = False
    #: Batsim's ``remaining_time`` (None: no walltime): the walltime less each delay
    #: task's length and each parallel task's elapsed time (``do_delay_task``,
    #: ``execute_parallel_task``), what a delay task is compared with.
    remaining: float | None = None
    #: Its current leaf's rank actors when that leaf is a usage trace.
    usage: RankActors | None = None
    #: What is left of its current parallel task's ``wait_for`` timer (None: no timer).
    timer: float | None = None


def _first(entry: tuple[int, Any, Any]) -> int:
    """An entry's serial: when its action began, in the runner's count of actions."""
    return entry[0]


def _timer_due(run: _Run, now: float) -> bool:
    """Whether the job's walltime timer ends at the update to ``now`` (its sleep action).

    A parallel task's ``wait_for`` timer, a usage trace's get's timer: SimGrid sleep
    actions, ended with the update's other actions in creation order
    (``HostL07Model::update_actions_state``), before a message that ends with them but
    began later (seed 1538: a walltime reached as EXECUTE_JOB reaches the server).
    """
    if run.timed_out:
        return False
    if run.timer is not None:
        return run.timer <= 0.0
    return (run.usage is not None and run.deadline is not None
            and run.deadline - now < SURF_PRECISION)


def _timer_serial(run: _Run) -> int:
    """When the job's walltime timer began, in the runner's count of actions.

    A usage trace's timer is its current get's, any other job's its task's ``wait_for``.
    """
    return run.serial if run.usage is None else run.usage.get_serial


def _progress(run: _Run, model: L07Model, updated: float, now: float) -> dict[str, Any]:
    """Batsim's ``job_progress`` entry of ``run`` killed at ``now`` (model updated at ``updated``).

    ``BatTask``'s tree: a sequence's ``current_task_index`` and ``current_task``, a
    leaf's ``progress``: ``1 - remaining ratio`` of its parallel task, or the share
    of its sleep done; a usage trace has none (:func:`unstarted_leaf`).
    """
    path, leaf = run.leaves[min(run.index, len(run.leaves) - 1)]
    if leaf.ranks is not None:
        return progress_tree(path, unstarted_leaf(leaf.name))
    if run.task is not None:
        task = model.tasks.get(run.task)
        remains = 0.0 if task is None else task.remains - task.variable.value * (now - updated)
        value = 1.0 - max(remains, 0.0)
    elif leaf.delay:
        value = min((now - run.since) / leaf.delay, 1.0)
    else:
        value = 1.0
    return progress_tree(path, {"profile_name": leaf.name, "progress": value})


def unstarted_leaf(name: str) -> dict[str, Any]:
    """A usage trace's entry in ``job_progress``: ``current_task_index`` -1, no ``progress``.

    Batsim 4.2.1's ``generate_task_tree`` (``protocol.cpp``) writes a leaf's ``progress``
    only when its ``BatTask`` has a parallel task or a delay's start; a usage trace's
    ranks run as actors of their own (``execute_task``, ``jobs_execution.cpp``), so it
    has neither and goes down the branch of a sequence not yet started
    (``BatTask::compute_leaf_progress`` only warns that it is not implemented).

    >>> unstarted_leaf("p0")
    {'profile_name': 'p0', 'current_task_index': -1}
    """
    return {"profile_name": name, "current_task_index": -1}


def progress_tree(path: Path, entry: dict[str, Any]) -> dict[str, Any]:
    """``entry`` (a leaf's progress) inside the sequences of ``path``, as ``BatTask`` nests them.

    Each sequence gives its ``current_task_index`` and its ``current_task``.
    """
    for seq_name, index in reversed(path):
        entry = {"profile_name": seq_name, "current_task_index": index,
                 "current_task": entry}
    return entry


class JobRunner:
    """Running jobs on one :class:`L07Model`; see the module docstring."""

    def __init__(self, model: L07Model, now: float = 0.0) -> None:
        self.model = model
        self.now = now
        self._runs: dict[str, _Run] = {}  # start order
        self._planned: tuple[float, float] | None = None  # (absolute time, delta)
        self._serial = 0
        #: SimGrid's model updates so far (:meth:`update_due` moves): two may share one
        #: date when a solve's delta is under half an ulp of the clock.
        self.updates = 0
        #: Batsim's messages, switches and actors' sleeps on the same model.
        self.actors = ActorActions(model, self._next_serial, self._replan)
        self._timed_out: list[str] = []
        #: The jobs that ended (done or timed out) at the last update, in SimGrid's order.
        self._ends: list[str] = []
        #: The jobs of :attr:`_ends` whose usage trace timed out: its rank actors left to
        #: kill (Batsim kills each with ``Actor::kill``, a simcall: one scheduling round).
        self._kills: dict[str, int] = {}
        #: Told the job id when one of its sleeps (a delay task) ends: SimGrid's sleep
        #: action on the job actor's host changes state then (a power model listens).
        self.on_sleep_end: Callable[[str], None] | None = None

    def _replan(self) -> None:
        """An action started: the update :meth:`next_time` planned may come sooner."""
        self._planned = None

    def _next_serial(self) -> int:
        """One more action started: its serial (the order actions began in)."""
        self._serial += 1
        return self._serial

    def __contains__(self, job_id: object) -> bool:
        return job_id in self._runs

    def __len__(self) -> int:
        return len(self._runs)

    def start(self, job_id: str, leaves: list[tuple[Path, Leaf]],
              deadline: float | None = None,
              walltime: float | None = None) -> list[tuple[str, int]]:
        """Start a job at :attr:`now`; the jobs done at once ((id, ret) if it has no task).

        ``deadline``: the job's start + walltime, reported by :meth:`timed_out` once
        reached before its tasks end.
        """
        run = _Run(job_id, leaves, since=self.now, deadline=deadline, remaining=walltime)
        self._runs[job_id] = run
        self._planned = None
        done: list[tuple[str, int]] = []
        self._begin(run, done)
        return done

    def cancel(self, job_id: str) -> None:
        """Forget a job (killed, or its walltime reached): its task leaves the model."""
        run = self._runs.pop(job_id, None)
        if run is not None and run.task is not None:
            self.model.cancel(run.task)
        if run is not None and run.usage is not None:
            self._kill_ranks(run)
        self._planned = None

    def timed_out(self) -> list[str]:
        """The jobs whose walltime was reached since the last call, in start order.

        Their task keeps running (SimGrid cancels it when the job's actor ends: the
        caller's :meth:`cancel`); it ends nothing more.
        """
        out, self._timed_out = self._timed_out, []
        return out

    def end_order(self) -> dict[str, int]:
        """The jobs done or timed out at the last :meth:`advance_to`: their rank in its order.

        SimGrid ends the actions due at one update in their creation order
        (``HostL07Model::update_actions_state``), a task's completion and a walltime's
        timer alike, and the job actors report in that order: a job whose delay sleeps to
        its walltime before one whose delay ends at the same update (seed 364).
        """
        ends = self._ends
        kills = self._kills
        if kills:
            # a usage trace's job actor, its walltime reached, kills its rank actors not
            # received yet one by one (Batsim's execute_task, USAGE_TRACE: child_actor->kill()
            # is simcall_answered, a yield to maestro and one more scheduling round), so
            # it goes on after the job actors that had fewer to kill (seed 968)
            ends = sorted(ends, key=lambda job_id: kills.get(job_id, 0))
        return {job_id: rank for rank, job_id in enumerate(ends)}

    def _begin(self, run: _Run, done: list[tuple[str, int]]) -> None:
        """Start ``run``'s current leaf, or end the job when none is left."""
        if run.index >= len(run.leaves):
            del self._runs[run.job_id]
            done.append((run.job_id, 0))
            return
        leaf = run.leaves[run.index][1]
        if leaf.error is not None:
            raise leaf.error
        run.since = self.now
        run.task = None
        run.sleep_left = None
        run.timer = None
        self._serial += 1
        run.serial = self._serial
        if leaf.ranks is not None:
            run.usage = RankActors(leaf, self.model, run.job_id, self._next_serial)
            run.usage.get_serial = run.serial  # the first get, before the ranks run
            if run.usage.start():
                self._finish_leaf(run, done)
        elif leaf.delay is not None:
            remaining = run.remaining if run.remaining is not None else (
                None if run.deadline is None else run.deadline - self.now)
            run.sleep_to_deadline = remaining is not None and leaf.delay >= remaining
            run.sleep_left = (remaining if run.sleep_to_deadline  # type: ignore[assignment]
                              else leaf.delay)
        else:
            run.task = (run.job_id, self._serial)
            if run.remaining is not None and run.remaining >= 0:
                run.timer = run.remaining  # ptask->wait_for(*remaining_time)
            # SimGrid's ExecImpl::start (3.32, kernel/activity/ExecImpl.cpp l.82-84): a task
            # on one host is CpuL07::execution_start of its first flops, its bytes dropped
            self.model.start(run.task, leaf.hosts, leaf.flops,
                             leaf.bytes if len(leaf.hosts) > 1 else None)

    def _usage_event(self, run: _Run, key: Hashable, done: list[tuple[str, int]]) -> None:
        """One of a usage trace's actions ended: a rank's task or a message received."""
        usage = run.usage
        if usage is not None and not run.timed_out and usage.on_event(key):
            self._finish_leaf(run, done)

    def _kill_ranks(self, run: _Run) -> None:
        """The rank actors are killed: their tasks and message leave the model."""
        usage, run.usage = run.usage, None
        if usage is not None:
            usage.kill()

    def _finish_leaf(self, run: _Run, done: list[tuple[str, int]]) -> None:
        leaf = run.leaves[run.index][1]
        if run.remaining is not None:
            run.remaining -= leaf.delay if leaf.delay is not None else self.now - run.since
        run.task = None
        run.sleep_left = None
        run.timer = None
        run.usage = None
        if leaf.ret != 0:
            del self._runs[run.job_id]
            done.append((run.job_id, leaf.ret))
            return
        run.index += 1
        self._begin(run, done)

    def next_time(self) -> float:
        """The soonest instant a task ends, a latency is paid or a sleep ends (inf: none)."""
        delta = min(self.model.next_event(), self.actors.next_delta())
        for run in self._runs.values():
            if run.sleep_left is not None:
                # a delay task is one sleep action, cut at the walltime when that comes
                # first (do_delay_task): no other timer, and start + walltime can fall
                # ulps away from the countdown
                delta = min(delta, run.sleep_left)
                continue
            if run.timed_out:
                continue
            if run.timer is not None:
                delta = min(delta, run.timer)
            elif run.deadline is not None:
                delta = min(delta, max(run.deadline - self.now, 0.0))
        if delta == _INF:
            self._planned = None
            return _INF
        at = self.now + delta
        self._planned = (at, delta)
        return at

    def update_due(self, now: float) -> bool:
        """Whether moving to ``now`` is one of SimGrid's model updates.

        It is when the clock moves or when ``now`` is the update :meth:`next_time`
        planned (a zero delta, or one a few ulps long that rounds to the same date); any
        other move to the date of the last update is one more scheduling round of the
        actors woken by it, before SimGrid's next solve (``EngineImpl::run``: the actors
        run until none is ready, then ``solve`` computes the next rates and moves the
        clock), so the rates are still the ones solved before that update.
        """
        planned = self._planned
        return now > self.now or (planned is not None and planned[0] == now)

    def advance_to(self, now: float) -> list[tuple[str, int]]:
        """Move to ``now``: the jobs that ended, (id, return code), in start order.

        The delta is the one :meth:`next_time` planned when ``now`` is that instant (no
        rounding from ``now - self.now``), as SimGrid adds its deltas to its clock.
        """
        if now < self.now:
            raise ValueError(f"time goes back: {now} < {self.now}")
        planned = self._planned
        if self.update_due(now):
            self.updates += 1
        delta = planned[1] if planned is not None and planned[0] == now else now - self.now
        ended = self.model.advance(delta) if self.model.tasks else []
        slept: set[str] = set()
        for run in self._runs.values():
            if run.sleep_left is not None:
                run.sleep_left = double_update(run.sleep_left, delta, SURF_PRECISION)
                if run.sleep_left <= 0.0:
                    slept.add(run.job_id)
            if run.timer is not None:
                run.timer = double_update(run.timer, delta, SURF_PRECISION)
        woken = self.actors.advance(delta, ended)
        finished = set(ended)
        # SimGrid ends the actions of one update in their creation order (its started
        # set), so the jobs whose task or sleep ends now go on in that order; a usage
        # trace's actions each in its place
        entries: list[tuple[int, _Run, Hashable | None]] = []
        for run in self._runs.values():
            usage = run.usage
            hits = [] if usage is None or not finished else [
                key for key in usage.keys() if key in finished]
            if hits:
                entries.extend((key[1], run, key) for key in hits)  # type: ignore[index]
            else:
                entries.append((run.serial, run, None))
        entries.sort(key=_first)
        if woken:
            # the oldest action of a job (task or sleep) that ends now
            oldest: int | None = None
            for serial, run, key in entries:
                if key is None and _timer_due(run, now):
                    serial = _timer_serial(run)
                elif key is None and not ((run.task is not None and run.task in finished)
                                          or run.job_id in slept):
                    continue
                if oldest is None or serial < oldest:
                    oldest = serial
            self.actors.hand_back(woken, oldest)
        self.now = now
        self._planned = None
        done: list[tuple[str, int]] = []
        usages: list[_Run] = []
        ends: list[str] = []
        self._ends = ends
        self._kills = {}
        for _, run, key in entries:
            reported = len(done)
            if key is not None or run.usage is not None:
                if key is not None:
                    self._usage_event(run, key, done)
                usages.append(run)
            elif run.timed_out:  # nobody waits for its task any more
                if run.task is not None and run.task in finished:
                    run.task = None
            elif run.task is not None and run.task in finished:
                # the task ends before the walltime's timer, an action started after it,
                # when both end at one update (real Batsim: success)
                self._finish_leaf(run, done)
            elif run.job_id in slept:
                if self.on_sleep_end is not None:
                    self.on_sleep_end(run.job_id)
                if run.sleep_to_deadline:
                    run.sleep_left = None
                    self._time_out(run)
                else:
                    self._finish_leaf(run, done)
            elif run.timer is not None:
                if run.timer <= 0.0:
                    self._time_out(run)  # the task's wait_for timer is done
            elif run.deadline is not None and run.deadline - now < SURF_PRECISION:
                self._time_out(run)  # the timer is a sleep: it ends up to 1e-9 s early
            ends.extend(job_id for job_id, _ in done[reported:])
        # in the order their gets' timers began (SimGrid ends them in creation order)
        for run in sorted(dict.fromkeys(usages), key=_timer_serial):
            # a usage trace still receiving when its get's timer ends: walltime reached
            if (run.usage is not None and not run.timed_out and run.job_id in self._runs
                    and run.deadline is not None and run.deadline - now < SURF_PRECISION):
                self._time_out(run)
        return done

    def _time_out(self, run: _Run) -> None:
        run.timed_out = True
        self._timed_out.append(run.job_id)
        self._ends.append(run.job_id)
        if run.usage is not None:
            self._kills[run.job_id] = run.usage.left  # child_actors: ranks not received
            self._kill_ranks(run)

    def progress(self, job_id: str, name: str, now: float) -> dict[str, Any]:
        """Batsim's ``job_progress`` entry of a job killed at ``now`` (:func:`_progress`)."""
        return _progress(self._runs[job_id], self.model, self.now, now)

    def runs(self) -> Mapping[str, _Run]:
        """The running jobs, in start order."""
        return self._runs
