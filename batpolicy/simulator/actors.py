"""The simulator's heap events, one kind per Batsim actor that wakes up at a time.

Each is a small slotted object with ``live(seq)`` and ``fire()`` (see
:class:`~batpolicy.simulator.core.Event`); ``fire`` calls back the object it was
given (the driver, or the server for a speed change), which does what Batsim's server
does when that actor's message arrives.
"""

from __future__ import annotations

from typing import Any, Protocol

from batpolicy.protocol.intervals import MachineSet
from batpolicy.simulator.records import SimJob

__all__ = ["EndOfInput", "ExternalEventOccurs", "JobEnd", "NextTask", "Reactions", "Resume",
           "SimEvent", "SpeedChange", "Submitter", "Waiter"]


class Reactions(Protocol):
    """What every driver does when a job's or a waiter's actor wakes up.

    The events the parts schedule (:class:`JobEnd`, :class:`Waiter`) call these; the
    driver's own events (:class:`Submitter`, :class:`EndOfInput`,
    :class:`ExternalEventOccurs`) call ``on_submission_time``, ``on_end_of_input`` and
    ``on_external_event`` of the driver that scheduled them, :class:`SpeedChange` the
    server's ``on_speed_change``.
    """

    def on_call(self) -> None:
        """A waiter wakes up: REQUESTED_CALL."""

    def on_job_end(self, job: SimJob) -> None:
        """A job reaches its planned end."""


class SimEvent:
    """Base of the simulator's heap events: live unless told otherwise."""

    __slots__ = ("sim",)

    def __init__(self, sim: Any) -> None:
        self.sim = sim

    def live(self, seq: int) -> bool:
        """Whether the heap entry ``seq`` is current (always, except for completions)."""
        return True

    def fire(self) -> None:  # pragma: no cover - every subclass overrides it
        """Happen, now."""
        raise NotImplementedError


class Resume(SimEvent):
    """The instant a decision stamped in the future applies (Batsim sleeps until then)."""

    __slots__ = ("fired",)

    def __init__(self, sim: Any) -> None:
        super().__init__(sim)
        self.fired = False

    def fire(self) -> None:
        """Let the waiting decision apply."""
        self.fired = True


class Submitter(SimEvent):
    """The static job submitter: one live entry, at the next submission time."""

    __slots__ = ()

    def fire(self) -> None:
        """Submit every static job whose time has come."""
        self.sim.on_submission_time()


class Waiter(SimEvent):
    """A pending CALL_ME_LATER."""

    __slots__ = ()

    def fire(self) -> None:
        """Send REQUESTED_CALL."""
        self.sim.on_call()


class ExternalEventOccurs(SimEvent):
    """One external event of an ``--events`` file."""

    __slots__ = ("event",)

    def __init__(self, sim: Any, event: Any) -> None:
        super().__init__(sim)
        self.event = event

    def fire(self) -> None:
        """Apply and (if Batsim does) notify the event."""
        self.sim.on_external_event(self.event)


class EndOfInput(SimEvent):
    """A submitter said goodbye: NOTIFY no_more_static_job_to_submit / ..._event_to_occur."""

    __slots__ = ("kind",)

    def __init__(self, sim: Any, kind: str) -> None:
        super().__init__(sim)
        self.kind = kind

    def fire(self) -> None:
        """Notify the end of this input."""
        self.sim.on_end_of_input(self.kind)


class JobEnd(SimEvent):
    """The completion of a running job; stale once the job's end moved or it was killed."""

    __slots__ = ("job",)

    def __init__(self, sim: Any, job: SimJob) -> None:
        self.sim = sim  # SimEvent.__init__'s one line: one frame less at every job start
        self.job = job

    def live(self, seq: int) -> bool:
        """Only the job's latest completion entry is live."""
        return self.job.end_seq == seq

    def fire(self) -> None:
        """The job ends as its model planned."""
        self.sim.on_job_end(self.job)


class NextTask(SimEvent):
    """A running job's executor ends one task of its sequence and sleeps for the next.

    Batsim's executor sleeps once per task (``do_delay_task``), so its last sleep, whose
    end is the job's completion, is created when the last task starts: that is where the
    completion takes its place among the wake-ups of its instant (:mod:`.core`). ``sim``
    is the :class:`~.instant.MovingEnds` part; stale once the job's end moved or it was
    killed, as :class:`JobEnd`.
    """

    __slots__ = ("job", "index")

    def __init__(self, sim: Any, job: SimJob, index: int) -> None:
        super().__init__(sim)
        self.job = job
        self.index = index

    def live(self, seq: int) -> bool:
        """Only the job's latest completion entry is live."""
        return self.job.end_seq == seq

    def fire(self) -> None:
        """Sleep for the next task, or until the job's planned end."""
        self.sim.next_task(self.job, self.index + 1)


class SpeedChange(SimEvent):
    """Machines change speed (not a Batsim event: an input of the speed-scaled model)."""

    __slots__ = ("machines", "speed")

    def __init__(self, sim: Any, machines: MachineSet, speed: float) -> None:
        super().__init__(sim)
        self.machines = machines
        self.speed = speed

    def fire(self) -> None:
        """Set the speeds and re-plan the jobs running there."""
        self.sim.on_speed_change(self.machines, self.speed)
