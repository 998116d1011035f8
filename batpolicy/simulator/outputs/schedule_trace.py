"""Batsim's Pajé ``schedule.trace`` as an optional output: ``--schedule-trace``.

The writer is :class:`~batpolicy.io.paje.PajeTraceWriter`, told of every job start, end
and kill by :mod:`batpolicy.simulator.engine.schedule_trace` (through
:meth:`~batpolicy.simulator.engine.simulator.Simulator.trace_schedule`). Batsim ends the
trace (its containers destroyed at the simulation's end) only when the simulation ends:
a run stopped by an error keeps the lines written so far, without that end.
``fake-batsim`` writes it by default, as Batsim does (``--disable-schedule-tracing``);
``simulate`` only when asked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from batpolicy.simulator.outputs.base import Output

if TYPE_CHECKING:
    from batpolicy.simulator.engine.simulator import Simulator

__all__ = ["ScheduleTrace"]


class ScheduleTrace(Output):
    """Batsim's ``_schedule.trace`` (module docstring)."""

    name = "schedule_trace"
    files = ("schedule.trace",)
    help = ("also write Batsim's Pajé trace of the schedule: schedule.trace "
            "(PREFIX_schedule.trace with -e), as batsim writes it by default")
    batsim_disable_flag = "--disable-schedule-tracing"

    _writer: Any = None

    def attach(self, simulator: Simulator) -> None:
        """Open the trace (one container per machine) and have the run tell it every job."""
        from batpolicy.io.paje import PajeTraceWriter

        self._writer = PajeTraceWriter(self.paths[0], simulator.machine_names,
                                       sharing=simulator.options.compute_sharing)
        simulator.trace_schedule(self._writer)

    def close(self, simulator: Simulator, error: BaseException | None) -> None:
        """End the trace at Batsim's end clock if the run ended, else just close it."""
        if self._writer is None:
            return
        if error is None:
            self._writer.finish(simulator.end_clock())
        else:
            self._writer.close()
