"""Batsim's server actor over a platform with latencies: its mailbox and the scheduler talk.

``server_process`` (``server.cpp``) receives one message at a time on its mailbox; every
other actor's message is a blocking put (:class:`~.actors.Put`) that waits while
the server receives earlier ones. :class:`ServerProcess` is that mailbox and loop for
:class:`~.driver.LatencyDriver`: what the server does with each message is the
:class:`~.server.Server` part's, shared with the zero-latency driver; the server sends
the scheduler what it gathered once the scheduler is ready *and its mailbox looks
empty* (:meth:`ServerProcess._serve`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

from batpolicy.protocol import types as t
from batpolicy.simulator.engine.server import Scheduler
from batpolicy.simulator.json_quirks import wire_time
from batpolicy.simulator.latency.actors import SAME_DATE, Actor, ActorHost, Put

if TYPE_CHECKING:
    from batpolicy.simulator.engine.parts import Parts

__all__ = ["ServerProcess"]


class ServerProcess:
    """``server_process``: the server's mailbox, one message at a time (module docstring)."""

    def __init__(self, driver: ActorHost, parts: Parts) -> None:
        self._driver = driver
        self._queue = parts.queue
        self._books = parts.books
        self._server = parts.server
        self._outbox = parts.books.outbox
        self.mailbox: deque[Put] = deque()
        #: The server waits on its mailbox (the next put is received at once).
        self.waiting = False
        #: The scheduler's reply ended (SCHED_READY received): it may be sent a message.
        self.sched_ready = False
        #: SIMULATION_ENDS was sent.
        self.ended = False
        #: Job ends, kills and switches put or about to be, not yet received: the
        #: server must not end meanwhile.
        self.reports_in_flight = 0
        self.scheduler: Scheduler | None = None
        #: Sends a message from a machine (None: the master) through the parallel-task
        #: model, calling back on arrival; None: messages in closed form (their delays).
        self.network: Callable[[int | None, Callable[[], None]], None] | None = None
        #: With :attr:`network`: how many updates the parallel-task solver has made.
        self.solver_updates: Callable[[], int] | None = None

    def post(self, put: Put) -> None:
        """A blocking put on the server's mailbox: received at once if the server waits."""
        put.posted = self._queue.now
        if self.solver_updates is not None:
            put.posted_update = self.solver_updates()
        if self.waiting:
            self.waiting = False
            put.server_was_waiting = True
            self._transfer(put)
        else:
            self.mailbox.append(put)

    def _transfer(self, put: Put) -> None:
        """The message moves to the server: on the job model's network, or in closed form."""
        network = self.network
        if network is not None:
            network(put.src, lambda: self._received(put))
            return
        latency, transfer = put.delay
        self._driver.at((self._queue.now + latency) + transfer, lambda: self._received(put))

    def _received(self, put: Put) -> None:
        """The message is in: its sender and the server go on, in SimGrid's order."""
        sender = put.sender
        if put.server_was_waiting:
            if sender is not None:  # the sender goes on after the server, this instant
                self._driver.at(self._queue.now, sender.step)
            self._serve(put)
        else:
            if sender is not None:
                sender.step()
            self._serve(put)

    def _serve(self, put: Put) -> None:
        """server_process: handle one message, maybe talk to the scheduler, receive again.

        The server talks to a ready scheduler only if its mailbox looks empty. SimGrid runs
        the actors woken at one date in sub-rounds: each runs until its next simcall, and
        the simcalls (a put's isend among them) are handled after all of them ran
        (``EngineImpl::run``). ``mailbox_empty`` and ``send_message`` (``ipp.cpp``) both
        begin with ``Mailbox::by_name``, a simcall (``Engine::mailbox_by_name_or_create``),
        so an actor woken with the server makes its isend in the sub-round where the server
        reads its mailbox, and that isend is handled after the read. So the server does not
        see the puts made at its own date (by the sender of the message it got, a job that
        ended, a waiter), unless its handler made one more simcall (created an actor) and
        so reads one sub-round later, after those puts were handled.

        "Its own date": within 1e-9 s for dates computed apart in closed form. For a put
        dated by the parallel-task solver (a job whose task ended there) when the messages
        go through it too, its own update: the solver's updates are SimGrid's, and a put
        made at an earlier one is seen, even 1e-12 s earlier, or at the same date when
        the solve between them moved the clock by less than half an ulp (seed 1108: a
        sleep ends, then the message 6.7e-17 s later, one printed date).
        """
        put.on_receive()
        mailbox = self.mailbox
        seen = bool(mailbox) and (put.spawns or self._earlier(mailbox[0]))
        if self.sched_ready and not seen and not self.ended:
            if self._outbox:
                self._send()
            elif not self.reports_in_flight and self._books.can_end():
                # Batsim counts a job running until the server receives its completion
                # (is_simulation_finished: nb_running_jobs), even one put at this date
                self._server.end(self.scheduler)  # type: ignore[arg-type]
                self.ended = True
        if mailbox:
            self._transfer(mailbox.popleft())
        else:
            self.waiting = True

    def _earlier(self, put: Put) -> bool:
        """Whether ``put`` was made before the date (or solver update) the server woke at."""
        now = self._queue.now
        if put.exact and self.network is not None:
            updates = self.solver_updates
            return put.posted < now or (updates is not None and put.posted_update < updates())
        return put.posted < now - SAME_DATE

    def _send(self) -> None:
        """generate_and_send_message, then the REQ-REP actor with the scheduler's reply."""
        events = tuple(self._outbox)
        self._outbox.clear()
        self.sched_ready = False
        reply = self._server.ask(self.scheduler,  # type: ignore[arg-type]
                                 t.Request(wire_time(self._queue.now), events))
        self._reply_actor(reply)


    def start(self) -> None:
        """server_process: SIMULATION_BEGINS first, then receive."""
        begins = self._server.simulation_begins()
        reply = self._server.ask(self.scheduler,  # type: ignore[arg-type]
                                 t.Request(0.0, (begins,)))
        self._reply_actor(reply)
        if self.mailbox:
            self._transfer(self.mailbox.popleft())
        else:
            self.waiting = True

    def _reply_actor(self, reply: t.Reply) -> None:
        """The REQ-REP actor that hands the scheduler's reply to the server, from now on."""
        driver = self._driver
        driver.at(self._queue.now, Actor(driver, driver.reply_program(reply)).step)
