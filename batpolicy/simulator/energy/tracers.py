"""Batsim 4.2.1's energy traces with ``-E``: ``_consumed_energy.csv`` and ``_pstate_changes.csv``.

As Batsim ``export.cpp`` writes them: :class:`EnergyConsumptionTracer` one row at each
job start (``s``), job end (``e``) and pstate request and arrival (``p``), with the
energy of every host read then; :class:`PStateChangeTracer` one row at each request
(-1: the machines switch to a computation pstate, -2: to a sleep pstate) and one when
all its machines have arrived. The energy part (:class:`~.pstates.EnergyPart`) owns both
and says when to write a row.
"""

from __future__ import annotations

import math
from typing import Any

from batpolicy.protocol.intervals import MachineSet

__all__ = ["EnergyConsumptionTracer", "PStateChangeTracer"]


class EnergyConsumptionTracer:
    """Batsim's ``EnergyConsumptionTracer``: the rows of ``_consumed_energy.csv``.

    ``plugin`` is the run's :class:`~.host_energy.HostEnergyPlugin`, whose hosts each
    row reads, ``clock`` anything with ``now``. Runtime complexity: O(hosts) per row.
    """

    __slots__ = ("_plugin", "_clock", "rows", "_last_date", "_last_energy", "_last_low")

    def __init__(self, plugin: Any, clock: Any) -> None:
        self._plugin = plugin
        self._clock = clock
        self.rows: list[str] = []
        self._last_date = 0.0
        self._last_energy = 0.0
        self._last_low = 0.0

    def add_entry(self, kind: str) -> float:
        """One ``_consumed_energy.csv`` row (``EnergyConsumptionTracer::add_entry``).

        Returns the energy of every host now (joules). Batsim sums the hosts' energies
        in ``long double`` and divides their difference since the last row by the time
        since: over a short interval a double's rounding of two large sums shows in
        ``epower``'s sixth decimal, so the sum is kept as a double and its rounding
        error (``math.fsum`` twice), and the difference taken on both.
        """
        plugin = self._plugin
        now = self._clock.now
        energy = plugin.total()
        low = math.fsum([*plugin.energy, -energy])  # the sum's exact remainder, rounded
        dt = now - self._last_date
        if dt > 0:
            diff = (energy - self._last_energy) + (low - self._last_low)
            epower = f"{diff / dt:f}"
        else:
            epower = "NA"
        self.rows.append(f"{now:f},{energy:f},{kind},{plugin.wattmin():f},{epower}")
        self._last_date, self._last_energy, self._last_low = now, energy, low
        return energy

    def write(self, path: str) -> None:
        """Write the rows to ``path`` under Batsim's header."""
        with open(path, "w", encoding="utf-8") as out:
            out.write("time,energy,event_type,wattmin,epower\n")
            out.writelines(row + "\n" for row in self.rows)


class PStateChangeTracer:
    """Batsim's ``PStateChangeTracer``: the rows of ``_pstate_changes.csv``.

    Starts with one row at time 0: the ``n`` machines in pstate ``initial``. O(1) per row.
    """

    __slots__ = ("rows",)

    def __init__(self, n: int, initial: int) -> None:
        self.rows: list[str] = [f"0,{MachineSet.span(0, n - 1)},{initial}"] if n else []

    def add_pstate_change(self, now: float, machines: MachineSet, pstate: int) -> None:
        """The ``machines`` are in ``pstate`` (-1, -2: switching) from ``now`` on."""
        self.rows.append(f"{_time_cell(now)},{machines},{pstate}")

    def write(self, path: str) -> None:
        """Write the rows to ``path`` under Batsim's header."""
        with open(path, "w", encoding="utf-8") as out:
            out.write("time,machine_id,new_pstate\n")
            out.writelines(row + "\n" for row in self.rows)


def _time_cell(now: float) -> str:
    """A time as Batsim's pstate tracer writes it (C++ stream default: 6 significant digits)."""
    return f"{now:.6g}"
