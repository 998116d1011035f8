"""Batsim's own actors on the ``ptask_L07`` model: its messages, executions and sleeps.

When Batsim's protocol messages share the model with the jobs
(:meth:`~.jobmodel.PtaskModel.message_network`), each ``mailbox->put`` of a 1-byte
message (``ipp.cpp``'s ``send_message``) is a SimGrid communication, a parallel task of
the model (:meth:`~.l07.L07Model.communicate`); a machine's switch computes its one flop
(``this_actor::execute``, ``pstate.cpp``); an actor's ``this_actor::sleep_for`` (a
submitter, the REQ-REP actor, a waiter) is a sleep action (``CpuL07::sleep``): a
countdown of its duration, decreased by every update's delta (``Action::update_max_duration``,
``double_update`` with ``sg_surf_precision``) and done once it reaches 0.

:class:`ActorActions` keeps them beside the jobs of a :class:`~.runner.JobRunner` (which
moves both from update to update) and hands each callback back once its action is done,
in the order the actions began: SimGrid ends the actions of one update in their creation
order (``HostL07Model::update_actions_state``).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from batpolicy.simulator.jobmodels.ptask.l07 import L07Model
from batpolicy.simulator.jobmodels.ptask.lmm import SURF_PRECISION, double_update

__all__ = ["ActorActions"]

_INF = float("inf")


class ActorActions:
    """Messages, executions and sleeps of Batsim's actors on one :class:`L07Model`.

    ``next_serial`` numbers every action started on the model (jobs' included), the
    order SimGrid ends the actions of one update in; ``changed`` is told of each start
    (the runner's planned update no longer holds).
    """

    __slots__ = ("model", "_next_serial", "_changed", "_messages", "_sleeps", "_arrived")

    def __init__(self, model: L07Model, next_serial: Callable[[], int],
                 changed: Callable[[], None]) -> None:
        self.model = model
        self._next_serial = next_serial
        self._changed = changed
        #: In flight, by task key: called back once done.
        self._messages: dict[Hashable, Callable[[], None]] = {}
        #: By serial: [time left, called back on its end].
        self._sleeps: dict[int, list[Any]] = {}
        self._arrived: list[tuple[Callable[[], None], bool]] = []

    def send(self, src: int, dst: int, size: float, on_arrival: Callable[[], None]) -> None:
        """Start a ``size``-byte message from host ``src`` to ``dst`` now.

        ``on_arrival`` is handed back by :meth:`arrived` once the message is done.
        """
        key = ("message", self._next_serial())
        self._messages[key] = on_arrival
        self.model.communicate(key, src, dst, size)
        self._changed()

    def sleep(self, duration: float, on_end: Callable[[], None]) -> None:
        """Start an actor's ``duration``-second sleep now (``CpuL07::sleep``).

        ``on_end`` is handed back by :meth:`arrived` once its countdown is done.
        """
        self._sleeps[self._next_serial()] = [duration, on_end]
        self._changed()

    def execute(self, host: int, flops: float, speed: float,
                on_end: Callable[[], None]) -> None:
        """Compute ``flops`` on ``host`` at ``speed`` from now (``this_actor::execute``).

        A one-host task of the model (``CpuL07::execution_start``); ``on_end`` is handed
        back by :meth:`arrived` once it is done, like a message's.
        """
        key = ("message", self._next_serial())
        self._messages[key] = on_end
        self.model.start(key, (host,), (flops,), None, (speed,))
        self._changed()

    def arrived(self) -> list[tuple[Callable[[], None], bool]]:
        """The messages, executions and actors' sleeps done since the last call, in start order.

        Each as (``on_arrival``, whether a job's task ended before it at that date: SimGrid
        ends the actions of one date in their creation order).
        """
        out, self._arrived = self._arrived, []
        return out

    def next_delta(self) -> float:
        """Seconds until the soonest sleep ends (inf: none); messages are model tasks."""
        return min((left for left, _ in self._sleeps.values()), default=_INF)

    def advance(self, delta: float, ended: list[Hashable]) -> list[tuple[int, Callable[[], None]]]:
        """Count the sleeps down by ``delta``; the actions done, (serial, callback), unsorted.

        ``ended`` are the model's tasks done at this update (messages among them).
        """
        woken: list[tuple[int, Callable[[], None]]] = []
        sleeps = self._sleeps
        for serial, entry in list(sleeps.items()):
            entry[0] = double_update(entry[0], delta, SURF_PRECISION)
            if entry[0] <= 0.0:
                del sleeps[serial]
                woken.append((serial, entry[1]))
        messages = self._messages
        if messages:
            woken.extend((key[1], messages.pop(key))  # type: ignore[index]
                         for key in ended if key in messages)
        return woken

    def hand_back(self, woken: list[tuple[int, Callable[[], None]]],
                  oldest_job_action: int | None) -> None:
        """Queue ``woken`` for :meth:`arrived` in start order.

        ``oldest_job_action``: the serial of the oldest job action (task, sleep or timer)
        done at this update, None if none; an actor's action begun after it goes on
        behind that job's end.
        """
        woken.sort(key=lambda item: item[0])
        self._arrived.extend((callback, oldest_job_action is not None
                              and oldest_job_action < serial) for serial, callback in woken)
