"""A usage trace leaf running on the parallel-task model: its rank actors and messages.

Batsim 4.2.1's ``execute_task`` for ``USAGE_TRACE`` (``jobs_execution.cpp``) creates
one actor per rank of the trace, in rank order; each runs its one-host tasks one after
the other (``usage_trace_replayer``: ``executors`` times the rank's host, FLOPS on
each, no communication), then puts a 4-byte message on the job actor's mailbox. The job
actor receives them one at a time: a communication starts once both the put and the job
actor's next get are there, in the order of the puts, and the leaf ends with the last
one received. Its walltime reached, the job actor kills the rank actors: their tasks
and message leave the model at once. :class:`RankActors` is that, for
:class:`~.runner.JobRunner`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable, Iterator

from batpolicy.simulator.jobmodels.ptask.l07 import L07Model
from batpolicy.simulator.jobmodels.ptask.tasks import Leaf

__all__ = ["RankActors"]


class RankActors:
    """A usage trace leaf's rank actors and the job actor receiving their messages."""

    __slots__ = ("leaf", "_model", "_job_id", "_serial", "pos", "tasks", "queue", "comm",
                 "left", "get_serial")

    def __init__(self, leaf: Leaf, model: L07Model, job_id: str,
                 serial: Callable[[], int]) -> None:
        ranks = leaf.ranks or ()
        self.leaf = leaf
        self._model = model
        self._job_id = job_id
        #: The next action's serial (the runner's count of actions started).
        self._serial = serial
        #: The index of each rank's next task in its trace.
        self.pos = [0] * len(ranks)
        #: Running tasks' keys -> their rank (creation order).
        self.tasks: dict[Hashable, int] = {}
        #: Ranks whose put waits for the job actor's next get, in put order.
        self.queue: deque[int] = deque()
        #: The message being received (key, rank), None while the job actor waits.
        self.comm: tuple[Hashable, int] | None = None
        #: Ranks whose message has not been received yet.
        self.left = len(ranks)
        #: When the job actor's current get began, in the runner's count of actions: its
        #: walltime timer is a sleep action created then (``CommImpl::wait_for``, SimGrid
        #: 3.32), a new one for each get (``termination_mbox->get(*remaining_time)``,
        #: Batsim's ``execute_task``), so the timers of one update end in that order.
        self.get_serial = 0

    def start(self) -> bool:
        """Create the rank actors (in rank order); True if the leaf is done (no rank).

        The job actor then waits on its mailbox.
        """
        for rank in range(len(self.pos)):
            self._next(rank)
        return self.left == 0

    def keys(self) -> Iterator[Hashable]:
        """The model's keys of the ranks' running tasks, then of the message received."""
        yield from self.tasks
        if self.comm is not None:
            yield self.comm[0]

    def on_event(self, key: Hashable) -> bool:
        """One of the leaf's actions ended: True once its last message is received."""
        rank = self.tasks.pop(key, None)
        if rank is not None:
            self._next(rank)
            return False
        if self.comm is not None and self.comm[0] == key:
            self.comm = None
            self.left -= 1
            if self.left == 0:
                return True
            self._receive()
            self.get_serial = self._serial()  # the job actor's next get and its timer
        return False

    def kill(self) -> None:
        """The rank actors are killed: their tasks and message leave the model."""
        for key in self.tasks:
            self._model.cancel(key)
        if self.comm is not None:
            self._model.cancel(self.comm[0])

    def _next(self, rank: int) -> None:
        """Rank ``rank`` starts its next task, or puts its message once it has none left."""
        host, actions = self.leaf.ranks[rank]  # type: ignore[index]
        index = self.pos[rank]
        if index < len(actions):
            self.pos[rank] = index + 1
            executors, flops = actions[index]
            key = (self._job_id, self._serial())
            self.tasks[key] = rank
            self._model.start(key, (host,) * executors, (flops,) * executors, None)
            return
        self.queue.append(rank)
        self._receive()

    def _receive(self) -> None:
        """The job actor's get meets the oldest put waiting: its 4-byte message starts."""
        if self.comm is not None or not self.queue:
            return
        rank = self.queue.popleft()
        key = (self._job_id, self._serial())
        self.comm = (key, rank)
        self._model.communicate(key, self.leaf.ranks[rank][0],  # type: ignore[index]
                                self.leaf.receiver, 4.0)
