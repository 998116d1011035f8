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
  ``server_on_switched``): one row (energy, :mod:`batpolicy.simulator`'s energy part).

The time is Batsim's clock with C's ``%g`` (6 significant digits). Only compute machines
are counted (storage hosts have no state); unavailable machines (external events) count
in none of the columns, as Batsim has no ``nb_unavailable`` column. Machines becoming
(un)available write no row.

:class:`MachineStatesCsvWriter` takes the rows in batches, each ``(time, *counts)`` with
the counts in :data:`STATES`'s order, as the simulator's machines append them: a row per
job start and end costs the simulator one list append, and the writer one format.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from batpolicy.io.outputs import RowFile

__all__ = ["HEADER", "ROW_FORMAT", "STATES", "MachineStatesCsvWriter", "format_row"]

#: Batsim's columns after ``time``, in its order (``MachineStateTracer::set_filename``).
STATES = ("sleeping", "switching_on", "switching_off", "idle", "computing")
HEADER = "time," + ",".join(f"nb_{state}" for state in STATES) + "\n"


#: C's ``"%g,%d,%d,%d,%d,%d"`` of ``MachineStateTracer::add_machine_states`` (export.cpp).
ROW_FORMAT = "%g,%d,%d,%d,%d,%d\n"


def format_row(time: float, *counts: int) -> str:
    """One row as Batsim writes it; ``counts`` are the machines in :data:`STATES`'s order.

    >>> format_row(0.0030000400000000002, 0, 0, 0, 511, 1).strip()
    '0.00300004,0,0,0,511,1'
    """
    return ROW_FORMAT % (time, *counts)


class MachineStatesCsvWriter(RowFile):
    """Writes ``machine_states.csv``: the header, then rows given in batches.

    Runtime complexity: O(1) per row.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__(path, HEADER)

    def write_rows(self, rows: Sequence[tuple[float, ...]]) -> None:
        """Write rows ``(time, sleeping, switching_on, switching_off, idle, computing)``."""
        if self._file is None:
            raise ValueError(f"{self.path}: writer is closed")
        self._file.write("".join([ROW_FORMAT % row for row in rows]))
        self.rows += len(rows)

    def flush(self) -> None:
        """Flush the file (rows are written as they come)."""
        if self._file is not None:
            self._file.flush()
