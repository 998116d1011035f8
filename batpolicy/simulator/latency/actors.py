"""The SimGrid actors of Batsim, as the latency driver (:mod:`.latency`) runs them.

An actor is a generator that yields what it blocks on: a :class:`Sleep`
(``this_actor::sleep_for``) or a :class:`Put` (a blocking ``put`` on the server's
mailbox, ``ipp.cpp``); :class:`Actor` runs it until its next blocking call. :class:`Call`
is the heap event that wakes one up.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Protocol

from msgspec.structs import replace

from batpolicy.protocol import types as t

__all__ = ["Actor", "ActorHost", "Call", "Program", "Put", "SAME_DATE", "Sleep", "restamp"]

#: Dates closer than this are one date for SimGrid (``sg_surf_precision``, the solver's).
SAME_DATE = 1e-9


class ActorHost(Protocol):
    """What actors need of the driver that runs them (:class:`~.driver.LatencyDriver`)."""

    @property
    def now(self) -> float:
        """Batsim's current simulated time."""

    def at(self, when: float, callback: Callable[[], None]) -> None:
        """Run ``callback`` at ``when``."""

    def sleep(self, duration: float, then: Callable[[], None]) -> None:
        """Sleep ``duration`` seconds, then call ``then``."""

    def post(self, put: Put) -> None:
        """A blocking put on the server's mailbox."""

    def reply_program(self, reply: t.Reply) -> Program:
        """The REQ-REP actor's program for the scheduler's ``reply``."""


@dataclass(slots=True)
class Sleep:
    """An actor sleeps ``duration`` seconds."""

    duration: float


@dataclass(slots=True)
class Put:
    """A message to the server: its L07 phases and what the server does on receiving it."""

    delay: tuple[float, float]
    on_receive: Callable[[], None]
    sender: Actor | None = None
    server_was_waiting: bool = False
    #: The server's handler creates an actor (a job, killer or waiter: a simcall), so the
    #: server checks its mailbox one scheduling round later.
    spawns: bool = False
    #: When the sender posted it (its isend).
    posted: float = 0.0
    #: The parallel-task solver's updates made when it was posted (messages on the solver).
    posted_update: int = 0
    #: The sending machine (None: an actor of the master host).
    src: int | None = None
    #: Posted at a date of the parallel-task solver (a job whose task ended there).
    exact: bool = False


Program = Generator[Sleep | Put, None, None]


class Actor:
    """A SimGrid actor: a generator yielding sleeps and blocking puts."""

    __slots__ = ("sim", "program")

    def __init__(self, sim: ActorHost, program: Program) -> None:
        self.sim = sim
        self.program = program

    def step(self) -> None:
        """Run until the next blocking call."""
        try:
            command = next(self.program)
        except StopIteration:
            return
        if isinstance(command, Sleep):
            self.sim.sleep(command.duration, self.step)
        else:
            command.sender = self
            self.sim.post(command)


class Call:
    """A heap event running a callback (an actor waking up, a transfer ending)."""

    __slots__ = ("callback",)

    def __init__(self, callback: Callable[[], None]) -> None:
        self.callback = callback

    def live(self, seq: int) -> bool:
        """Always current."""
        return True

    def fire(self) -> None:
        """Run the callback."""
        self.callback()


def restamp(events: list[t.Event], stamp: float) -> list[t.Event]:
    """The events stamped ``stamp`` (when the server receives them)."""
    return [replace(e, timestamp=stamp) for e in events]
