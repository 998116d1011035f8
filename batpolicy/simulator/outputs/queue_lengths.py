"""An example optional output: ``queue_lengths.csv``, the waiting and running jobs over time.

``batpolicy simulate --queue-lengths`` (and ``fake-batsim --queue-lengths``) writes
``queue_lengths.csv`` (``PREFIX_queue_lengths.csv`` with ``-e``): a header
``time,waiting,running``, then one row per instant at which a job was submitted (or
registered), started, ended or rejected, with the counts once that instant's changes are
made: ``waiting`` the jobs submitted and neither started nor rejected, ``running`` those
started and not ended. Times are ``%f`` as in ``jobs.csv`` (changes that Batsim's
message clock sets less than a microsecond apart share a row), so a row's time is a
``submission_time``, ``starting_time`` or ``finish_time`` of ``jobs.csv``
(tests/sim/test_example_output.py).

It is the whole of an output (docs/simulator.md, "Adding an output"): this module is
all there is, found by the registry and given its switch by the command line. It hears
of the run through the simulator's taps and reads the counts the engine keeps
(:meth:`~batpolicy.simulator.engine.simulator.Simulator.waiting_and_running`), so a run
without it pays nothing. Rows go to disk 1024 at a time and when the run stops.
Runtime complexity: O(1) per change.
"""

from __future__ import annotations

from typing import IO, TYPE_CHECKING, Any

from batpolicy.simulator.outputs.base import Output

if TYPE_CHECKING:
    from batpolicy.simulator.engine.simulator import Simulator

__all__ = ["HEADER", "QueueLengths"]

HEADER = "time,waiting,running\n"
#: Rows kept before they are written.
_BATCH = 1024


class QueueLengths(Output):
    """``queue_lengths.csv`` (module docstring)."""

    name = "queue_lengths"
    files = ("queue_lengths.csv",)
    help = ("also write queue_lengths.csv: time,waiting,running at each instant a job is "
            "submitted, starts, ends or is rejected")

    _file: IO[str] | None = None
    #: The row of the time being simulated (``%f``), written once the clock moves on.
    _current: tuple[str, int, int] | None = None

    def attach(self, simulator: Simulator) -> None:
        """Open the file and tap every change of the counts."""
        from batpolicy.protocol import types as t

        self._file = open(self.paths[0], "w", encoding="utf-8", newline="")  # noqa: SIM115
        self._file.write(HEADER)
        self._file.flush()
        rows: list[tuple[str, int, int]] = []
        self._rows = rows
        counts = simulator.waiting_and_running

        def changed(*_: Any) -> None:
            """A count may have changed now: the previous time's row is final."""
            now = "%f" % simulator.now  # noqa: UP031 - C's %f, as Batsim writes times
            current = self._current
            if current is not None and current[0] != now:
                rows.append(current)
                if len(rows) >= _BATCH:
                    self._write()
            self._current = (now, *counts())

        simulator.tap_submissions(changed)
        simulator.tap_records(changed)  # ends and rejections
        for kind in (t.ExecuteJob, t.RegisterJob, t.ChangeJobState):
            simulator.tap_decisions(kind, changed)

    def _write(self) -> None:
        """Write the rows kept and flush."""
        assert self._file is not None
        self._file.write("".join(["%s,%d,%d\n" % row for row in self._rows]))  # noqa: UP031
        self._rows.clear()
        self._file.flush()

    def close(self, simulator: Simulator, error: BaseException | None) -> None:
        """Write the last instant's row and the rest, and close (an error changes nothing)."""
        if self._file is None:
            return
        try:
            if self._current is not None:
                self._rows.append(self._current)
                self._current = None
            self._write()
        finally:
            self._file.close()
            self._file = None
