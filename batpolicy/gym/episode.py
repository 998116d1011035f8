"""One episode's simulation, run in a helper thread that hands control back at each decision.

The embedded simulator calls its scheduler (``Request -> Reply``) from deep inside its
message loop, and the policy asks its action function from inside ``decide``; a
Gymnasium environment must instead *return* at each decision and be *called* with the
action. :class:`EpisodeThread` turns one into the other: the simulation runs in a
helper thread, and the action function it is given parks that thread and wakes the
caller of :meth:`EpisodeThread.send`. Exactly one of the two threads runs at any time
(two locks used as binary semaphores hand the turn over), so the simulation is as
deterministic as in one thread: same inputs and actions, same episode.

The thread is a daemon and never outlives its episode: :meth:`close` (the
environment's ``reset``, ``close`` and finaliser) wakes it with :class:`Abandon`, a
``BaseException`` that no policy code catches, so the simulation unwinds (writing the
outputs it wrote so far, as a stopped run does) and the thread ends.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Abandon", "Decision", "EpisodeThread", "Finished"]


class Abandon(BaseException):  # noqa: N818 - a signal to unwind, like GeneratorExit
    """Raised in the simulation thread when its episode is closed before its end."""


@dataclass(slots=True)
class Decision:
    """The simulation waits for an action: what the agent sees."""

    obs: Mapping[str, Any]
    info: dict[str, Any]


@dataclass(slots=True)
class Finished:
    """The simulation ended: what ``run`` returned, or the error it raised."""

    result: Any = None
    error: BaseException | None = None


class EpisodeThread:
    """Runs ``run(act)`` in a helper thread; each ``act(obs, info)`` is a :class:`Decision`.

    :meth:`start` and :meth:`send` return the next :class:`Decision` or the
    :class:`Finished` episode. Runtime complexity: two lock hand-overs per decision.
    """

    def __init__(self, run: Callable[[Callable[[Any, Any], Any]], Any], name: str) -> None:
        self._run = run
        self._to_sim = threading.Lock()
        self._to_caller = threading.Lock()
        self._to_sim.acquire()
        self._to_caller.acquire()
        self._point: Decision | Finished | None = None
        self._action: Any = None
        self._abandon = False
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)

    @property
    def alive(self) -> bool:
        """The simulation thread runs (or waits for an action)."""
        return self._thread.is_alive()

    def _act(self, obs: Any, info: Any) -> Any:
        """In the simulation thread: hand the decision over, wait for the action."""
        self._point = Decision(obs, info)
        self._to_caller.release()
        self._to_sim.acquire()
        if self._abandon:
            raise Abandon
        return self._action

    def _main(self) -> None:
        try:
            self._point = Finished(result=self._run(self._act))
        except Abandon:
            self._point = Finished(error=None)
        except BaseException as exc:  # handed to the caller, raised there
            self._point = Finished(error=exc)
        finally:
            self._to_caller.release()

    def start(self) -> Decision | Finished:
        """Run the simulation until its first decision (or its end)."""
        self._thread.start()
        self._to_caller.acquire()
        assert self._point is not None
        return self._point

    def send(self, action: Any) -> Decision | Finished:
        """Answer the pending decision with ``action``; run until the next one (or the end)."""
        if not isinstance(self._point, Decision):
            raise RuntimeError("the episode is over: reset the environment")
        self._action = action
        self._to_sim.release()
        self._to_caller.acquire()
        return self._point

    def close(self) -> None:
        """Abandon a pending decision (the simulation unwinds) and join the thread."""
        if isinstance(self._point, Decision) and self._thread.is_alive():
            self._abandon = True
            self._to_sim.release()
            self._to_caller.acquire()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()
