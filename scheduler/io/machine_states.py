"""Batsim's ``_machine_states.csv``: how many compute machines are in each state, over time.

Batsim 4.2.1 writes it by default (``--disable-machine-state-tracing`` turns it off;
``export.cpp``, ``MachineStateTracer``): a header ``time,nb_sleeping,nb_switching_on,
nb_switching_off,nb_idle,nb_computing`` (the states in that order, ``machines.cpp``'s
``machine_state_to_string``), then one row each time machines change state because of a
job or a power state, never at time 0 and never at the end:

- a job starts: its machines become ``computing``, one row (``update_machines_on_job_run``),
  so jobs started at one instant give one row each;
- a job ends (completed, killed, walltime reached): its machines become ``idle`` (an
  unavailable one stays unavailable), one row (``update_machines_on_job_end``);
- a power state change asked or done (``server_on_pstate_modification``,
  ``server_on_switched``): one row (energy, :mod:`batpolicy.scheduler.sim`'s energy part).

The time is Batsim's clock with C's ``%g`` (6 significant digits). Only compute machines
are counted (storage hosts have no state); unavailable machines (external events) count
in none of the columns, as Batsim has no ``nb_unavailable`` column. Machines becoming
(un)available write no row.

:class:`MachineStatesCsvWriter` takes each row as the counts in :data:`STATES`'s order
(a tuple, as the simulator's machines count them) and formats the rows in batches when it
flushes: a row per job start and end costs one call and one append.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from batpolicy.scheduler.io.outputs import RowFile

__all__ = ["HEADER", "ROW_FORMAT", "STATES", "MachineStatesCsvWriter", "format_row"]

#: Batsim's columns after ``time``, in its order (``MachineStateTracer::set_filename``).
STATES = ("sleeping", "switching_on", "switching_off", "idle", "computing")
HEADER = "time," + ",".join(f"nb_{state}" for state in STATES) + "\n"


#: C's ``"%g,%d,%d,%d,%d,%d"`` of ``MachineStateTracer::add_machine_states`` (export.cpp).
ROW_FORMAT = "%g,%d,%d,%d,%d,%d\n"


def format_row(time: float, row: Sequence[int]) -> str:
    """One row as Batsim writes it; ``row`` counts the machines in :data:`STATES`'s order.

    >>> format_row(0.0030000400000000002, (0, 0, 0, 511, 1)).strip()
    '0.00300004,0,0,0,511,1'
    """
    return ROW_FORMAT % (time, *row)


class MachineStatesCsvWriter(RowFile):
    """Appends ``machine_states.csv`` rows, ``flush_every`` at a time and on close.

    Runtime complexity: O(1) per row.
    """

    def __init__(self, path: str | os.PathLike[str], *, flush_every: int = 4096) -> None:
        self._pending: list[tuple[float, ...]] = []
        super().__init__(path, HEADER, flush_every)

    def write(self, time: float, row: Sequence[int]) -> None:
        """Append the row of the machine counts at ``time`` (in :data:`STATES`'s order)."""
        if self._file is None:
            raise ValueError(f"{self.path}: writer is closed")
        pending = self._pending
        pending.append((time, *row))
        self.rows += 1
        if len(pending) >= self.flush_every:
            self.flush()

    def flush(self) -> None:
        """Write the rows not yet on disk and flush the file."""
        if self._file is None:
            return
        self._file.write("".join([ROW_FORMAT % row for row in self._pending]))
        self._pending.clear()
        self._file.flush()

