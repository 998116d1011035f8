"""Batsim's submitters over a platform with latencies: the jobs and external events arrive.

``static_job_submitter_process`` (``job_submitter.cpp``, one per workload) and
``static_event_submitter_process`` (``event_submitter.cpp``) run on the master host:
SUBMITTER_HELLO, then one blocking put per batch of what is due, sleeping
``subtime - (time it last woke up)`` *after* each put (so their clocks drift by one
message per batch), then SUBMITTER_BYE. :class:`Submitters` starts them for
:class:`~.driver.LatencyDriver`; the server's side of each message is the
:class:`~.server.Server` part's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from batpolicy.io.workload import JobSpec
from batpolicy.protocol import types as t
from batpolicy.simulator.json_quirks import wire_time
from batpolicy.simulator.latency.actors import Actor, ActorHost, Program, Put, Sleep

if TYPE_CHECKING:
    from batpolicy.simulator.delays import MessageDelays
    from batpolicy.simulator.engine.parts import Parts

__all__ = ["Submitters"]

_NO_MORE_JOBS = t.NotifyType.NO_MORE_STATIC_JOB_TO_SUBMIT.value
_NO_MORE_EVENTS = t.NotifyType.NO_MORE_EXTERNAL_EVENT_TO_OCCUR.value


class Submitters:
    """Batsim's static job submitters (one per workload) and its event submitter."""

    def __init__(self, driver: ActorHost, parts: Parts, delays: MessageDelays) -> None:
        self._driver = driver
        self._books = parts.books
        self._server = parts.server
        self._outbox = parts.books.outbox
        self._energy = parts.energy
        self._delays = delays
        self._job_submitters = 0
        self._event_submitters = 0

    def start(self, external_events: Sequence[Any]) -> None:
        """Start every submitter at time 0: one per workload (sorted), then the events'."""
        by_workload: dict[str, list[JobSpec]] = {}
        for spec in self._books.static.remaining():  # one submitter per workload: held
            by_workload.setdefault(spec.id.split("!", 1)[0], []).append(spec)
        driver = self._driver
        for name in sorted(by_workload):  # Batsim: one submitter per workload
            self._job_submitters += 1
            driver.at(0.0, Actor(driver, self._job_program(by_workload[name])).step)
        if external_events:
            self._event_submitters = 1
            driver.at(0.0, Actor(driver, self._event_program(list(external_events))).step)

    def _job_program(self, specs: list[JobSpec]) -> Program:
        """static_job_submitter_process (job_submitter.cpp)."""
        master = self._delays.from_master
        yield Put(master, lambda: None)  # SUBMITTER_HELLO
        current = self._driver.now
        batch: list[JobSpec] = []
        energy = self._energy
        for spec in specs:
            if spec.subtime > current:
                if batch:
                    yield Put(master, self._submission(batch))
                    batch = []
                yield Sleep(spec.subtime - current)
                current = self._driver.now
            if energy is not None:
                energy.first_submission()
            batch.append(spec)
        if batch:
            yield Put(master, self._submission(batch))
        yield Put(master, self._job_submitter_bye)

    def _submission(self, specs: list[JobSpec]) -> Callable[[], None]:
        return lambda: self._server.submit_static(specs)

    def _job_submitter_bye(self) -> None:
        self._job_submitters -= 1
        if self._job_submitters == 0:
            self._books.static_done = True
            self._outbox.append(t.Notify(wire_time(self._driver.now), _NO_MORE_JOBS))

    def _event_program(self, events: list[Any]) -> Program:
        """static_event_submitter_process (event_submitter.cpp)."""
        master = self._delays.from_master
        yield Put(master, lambda: None)  # SUBMITTER_HELLO
        current = self._driver.now
        batch: list[Any] = []
        for event in events:
            if float(event.timestamp) > current:
                if batch:
                    yield Put(master, self._occurrence(batch))
                    batch = []
                yield Sleep(float(event.timestamp) - current)
                current = self._driver.now
            batch.append(event)
        if batch:
            yield Put(master, self._occurrence(batch))
        yield Put(master, self._event_submitter_bye)

    def _occurrence(self, events: list[Any]) -> Callable[[], None]:
        def occur() -> None:
            """The server receives the external events."""
            for event in events:
                self._server.external_event(event)
        return occur

    def _event_submitter_bye(self) -> None:
        self._event_submitters -= 1
        if self._event_submitters == 0:
            self._books.events_done = True
            self._outbox.append(t.Notify(wire_time(self._driver.now), _NO_MORE_EVENTS))
