"""Batsim's own records of jobs, profiles and machines, kept by the embedded simulator.

:class:`~.books.RunBooks` holds one run's records together; this module defines them:

- :class:`SimJob`: a job as Batsim knows it, from submission to its deletion (Batsim
  frees a job once its JOB_COMPLETED has been sent, since v4.0.0; Batsim's protocol: job ids).
- :class:`ProfileTable`: one workload's profiles with Batsim's garbage collection
  (§1.6): when a job is deleted and profile reuse is off, its profile's name stays
  "existing" but empty, so registering a job with it, or registering the name again,
  is fatal.
- :class:`SimMachines`: which machines compute or are unavailable, their speeds, and the
  machine-time totals Batsim writes in ``schedule.csv`` (§1.11).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
from pyroaring import BitMap

from batpolicy.protocol.intervals import MachineSet
from batpolicy.protocol.types import JobState
from batpolicy.scheduler.jobfields import EMPTY_FIELDS, JobFields

__all__ = ["ProfileTable", "SimJob", "SimMachines", "referenced_profiles"]


class SimJob:
    """A job on the Batsim side. ``state`` is Batsim's job state (a :class:`JobState`).

    Why this form: it is Batsim's own record of a job (its state, allocation, planned end,
    kill request, job model), which the scheduler's read-only
    :class:`~batpolicy.scheduler.jobs.Job` must not share, so that a scheduler believing
    something Batsim does not is caught (:mod:`.validation`).

    While running: ``alloc``, ``start``, the planned ``end`` with the heap entry
    ``end_seq`` of its completion, and ``outcome`` / ``return_code``, how it will end
    unless killed. ``model`` / ``mstate`` belong to the job model. ``fields`` are the
    job's extra JSON fields (:mod:`batpolicy.scheduler.jobfields`), parsed once by the
    caller (a static job's :attr:`JobSpec.fields`, a registered job's description).
    """

    __slots__ = ("id", "workload", "subtime", "res", "walltime", "profile", "profile_data",
                 "raw", "dynamic", "state", "alloc", "start", "end", "end_seq", "outcome",
                 "return_code", "metadata", "kill_requested", "model", "mstate", "fields",
                 "mapping", "storage_mapping", "io_job", "phases", "start_rank")

    def __init__(self, job_id: str, workload: str, subtime: float, res: int,
                 walltime: float | None, profile: str, profile_data: dict[str, Any],
                 raw: dict[str, Any], dynamic: bool = False,
                 fields: JobFields = EMPTY_FIELDS) -> None:
        self.id = job_id
        self.workload = workload
        self.subtime = subtime
        self.res = res
        self.walltime = walltime
        self.profile = profile
        self.profile_data = profile_data
        self.raw = raw
        self.dynamic = dynamic
        self.state = JobState.SUBMITTED
        self.alloc: MachineSet | None = None
        self.start = 0.0
        self.end = 0.0
        self.end_seq = -1
        self.outcome = JobState.COMPLETED_SUCCESSFULLY
        self.return_code = 0
        self.metadata = ""
        self.kill_requested = False
        self.model: Any = None
        self.mstate: Any = None
        self.fields = fields
        self.mapping: dict[int, int] | None = None  # EXECUTE_JOB's executor -> alloc index
        self.storage_mapping: dict[str, int] | None = None  # EXECUTE_JOB's label -> machine
        #: EXECUTE_JOB's additional_io_job: (profile name, its machines in order)
        self.io_job: tuple[str, tuple[int, ...]] | None = None
        self.phases: tuple[float, ...] = ()  # when Batsim's executor sleeps again (.instant)
        #: The rank, within its instant, of the message whose EXECUTE_JOB started the job
        #: (:class:`~.engine.message_clock.InstantMessages`); None if not so started.
        self.start_rank: int | None = None

    @property
    def name(self) -> str:
        """Job name inside its workload (after ``!``).

        >>> SimJob("w0!7", "w0", 0.0, 1, None, "p", {}, {}).name
        '7'
        """
        return self.id.split("!", 1)[1]

    def __repr__(self) -> str:
        return f"SimJob({self.id!r}, {self.state.value})"


class ProfileTable:
    """One workload's profiles: every definition ever registered, and the collected names.

    Running jobs keep the definition they started with (Batsim holds a pointer), so
    :meth:`definition` never fails for a known name; :meth:`usable` is what a new
    registration may use.

    >>> table = ProfileTable({"a": {"type": "delay", "delay": 1},
    ...                       "s": {"type": "composed", "seq": ["a"]}})
    >>> table.collect("s")
    >>> table.usable("a"), table.exists("a")
    (False, True)
    """

    __slots__ = ("definitions", "collected")

    def __init__(self, profiles: dict[str, dict[str, Any]] | None = None) -> None:
        self.definitions: dict[str, dict[str, Any]] = dict(profiles or {})
        self.collected: set[str] = set()

    def exists(self, name: str) -> bool:
        """Whether the name was ever registered (collected names still exist). O(1)."""
        return name in self.definitions

    def usable(self, name: str) -> bool:
        """Whether a new job may use this profile (registered and not collected). O(1)."""
        return name in self.definitions and name not in self.collected

    def definition(self, name: str) -> dict[str, Any]:
        """The profile's JSON, collected or not. Runtime complexity: O(1)."""
        return self.definitions[name]

    def add(self, name: str, profile: dict[str, Any]) -> None:
        """Register a new profile. Runtime complexity: O(1)."""
        self.definitions[name] = profile

    def collect(self, name: str) -> None:
        """Garbage-collect a profile and, for a sequence, its sub-profiles (Batsim 4.x).

        Runtime complexity: O(size of the sequence tree).
        """
        if name in self.collected or name not in self.definitions:
            return
        self.collected.add(name)
        profile = self.definitions[name]
        if profile.get("type") in ("composed", "sequence"):
            for sub in profile.get("seq", ()):
                self.collect(str(sub))


def referenced_profiles(used: Iterable[str], profiles: dict[str, dict[str, Any]]
                         ) -> dict[str, dict[str, Any]]:
    """The profiles jobs use, with the sub-profiles of sequences, in the file's order.

    >>> referenced_profiles({"s"}, {"a": {"type": "delay"}, "b": {"type": "delay"},
    ...                              "s": {"type": "composed", "seq": ["a"]}})
    {'a': {'type': 'delay'}, 's': {'type': 'composed', 'seq': ['a']}}
    """
    keep: set[str] = set()
    todo = list(used)
    while todo:
        name = todo.pop()
        if name in keep:
            continue
        keep.add(name)
        profile = profiles.get(name, {})
        if profile.get("type") in ("composed", "sequence"):
            todo.extend(str(sub) for sub in profile.get("seq", ()))
    return {name: profile for name, profile in profiles.items() if name in keep}


#: Queued state changes written into ``SimMachines.last_change`` at once (memory bound).
_FOLD_EVERY = 4096


#: ``machine_states.csv`` rows kept before :meth:`SimMachines.hand_over` passes them on.
ROWS_AT_ONCE = 4096
#: Rows appended inline below this count; the last one goes through ``trace`` (hand-over).
_LAST_ROW = ROWS_AT_ONCE - 1


class SimMachines:
    """Compute machines as Batsim sees them: busy, unavailable, speeds, state times.

    ``busy`` and ``unavailable`` are mutable bitmaps (``pyroaring.BitMap``, the mutable
    sibling of :class:`~batpolicy.protocol.intervals.MachineSet`, never handed to a
    policy), so that checking or changing an allocation is one C-level set operation
    whatever its number of intervals; ``last_change`` is indexed by machine id.
    Times for ``schedule.csv`` follow Batsim's machine-state accounting: the time spent
    in a state is counted when the machine leaves it, so ``time_idle`` of a machine
    stops at its last state change.

    State changes (releases, availability changes) are queued as ``(time, machines)``
    and written into ``last_change`` by batches (:meth:`_fold`): a release costs an append
    instead of one array write per interval of its allocation (the intervals of a
    fragmented allocation on RICC-2010's 8,192 machines took 5 % of a simulation).
    ``last_change`` is current only after
    :meth:`last_change_sum`, its one reader, has folded the queue.

    >>> m = SimMachines(["a", "b", "c"], [1.0, 1.0, 1.0])
    >>> m.occupy(MachineSet.span(0, 1), 0.0)
    >>> str(m.busy_in(MachineSet.span(1, 2)))
    '1'
    >>> m.release(MachineSet.span(0, 1), 0.0, 5.0)
    >>> m.busy_time
    10.0
    >>> m.release(MachineSet.of(1, 2), 6.0, 8.0)
    >>> float(m.last_change_sum()), m.busy_time  # machines 0, 1, 2 last changed at 5, 8, 8
    (21.0, 14.0)
    """

    __slots__ = ("names", "speeds", "n", "busy", "unavailable", "last_change", "_busy_time",
                 "_runs",
                 "unavailable_time", "unavailable_since", "windows", "_changes", "state_rows",
                 "rows_sink", "_sharers", "power_counts", "shared")

    def __init__(self, names: list[str], speeds: list[float]) -> None:
        n = len(names)
        self.names = names
        self.speeds = speeds
        self.n = n
        self.busy = BitMap()
        self.unavailable = BitMap()
        self.last_change = array("d", bytes(8 * n))
        #: Machine-seconds of the jobs ended, in long double (0.0 before the first fold),
        #: and the runs ``(start, end, machines)`` not folded into it yet.
        self._busy_time: Any = 0.0
        self._runs: list[tuple[float, float, int]] = []
        self.unavailable_time = 0.0
        self.unavailable_since: dict[int, float] = {}
        self.windows: list[tuple[float, float, MachineSet]] = []
        self._changes: list[tuple[float, MachineSet]] = []  # not yet in last_change
        #: ``machine_states.csv`` rows ``(time, *state_row())`` not yet handed to
        #: :attr:`rows_sink` (:meth:`trace`), or None when nobody traces machine states.
        self.state_rows: list[tuple[float, int, int, int, int, int]] | None = None
        #: Takes the rows, ``ROWS_AT_ONCE`` at a time and at the end (:meth:`hand_over`).
        self.rows_sink: Callable[[list[tuple[float, int, int, int, int, int]]], None] | None = \
            None
        self._sharers: dict[int, int] = {}  # machine -> jobs on it, with compute sharing
        #: Whether two jobs ever ran on one machine at once (then :attr:`busy_time`, a sum
        #: over jobs, counts shared times twice: the accounting takes their union).
        self.shared = False
        #: With Batsim's -E, the machines asleep or switching by state (the energy part's
        #: dict): not idle, counted in their own ``machine_states.csv`` columns.
        self.power_counts: dict[str, int] | None = None

    def exist(self, alloc: MachineSet) -> bool:
        """Whether every machine of ``alloc`` exists. Runtime complexity: O(1)."""
        return not alloc or alloc.max() < self.n  # ids are never negative

    def all_free(self, alloc: MachineSet) -> bool:
        """Whether no machine of ``alloc`` is busy or unavailable. Two C-level tests."""
        return alloc.isdisjoint(self.busy) and alloc.isdisjoint(self.unavailable)

    def busy_in(self, alloc: MachineSet) -> MachineSet:
        """Machines of ``alloc`` that run a job (for error messages)."""
        return alloc & self.busy

    def unavailable_in(self, alloc: MachineSet) -> MachineSet:
        """Machines of ``alloc`` that are unavailable (for error messages)."""
        return alloc & self.unavailable

    def state_row(self) -> tuple[int, int, int, int, int]:
        """Compute machines by Batsim state, in ``_machine_states.csv``'s column order.

        ``(sleeping, switching_on, switching_off, idle, computing)``
        (:data:`batpolicy.io.machine_states.STATES`); the first three come from
        :attr:`power_counts` (Batsim's -E), else 0. An unavailable machine counts in no
        column: a machine made unavailable while it computes is no longer computing
        (Batsim's ``server_on_event_machine_unavailable``). Runtime complexity: O(1)
        C-level counts.

        >>> m = SimMachines(["a", "b", "c"], [1.0, 1.0, 1.0])
        >>> m.occupy(MachineSet.span(0, 1), 0.0); _ = m.set_unavailable(MachineSet.of(1), 0.0)
        >>> m.state_row()
        (0, 0, 0, 1, 1)
        """
        busy, unavailable = self.busy, self.unavailable
        down = len(unavailable)
        computing = len(busy) - (busy.intersection_cardinality(unavailable) if down else 0)
        power = self.power_counts
        if power is None:
            return 0, 0, 0, self.n - computing - down, computing
        sleeping, on, off = power["sleeping"], power["switching_on"], power["switching_off"]
        return (sleeping, on, off, self.n - computing - down - sleeping - on - off, computing)

    def trace(self, now: float) -> None:
        """Machines changed state at ``now``: a ``machine_states.csv`` row, if traced.

        :meth:`occupy` and :meth:`release` (every job start and end) append the common
        row (no power states, no unavailable machine) themselves and call this for the
        others; the energy part calls it for power state changes. Rows go to
        :attr:`state_rows`, handed over ``ROWS_AT_ONCE`` at a time.
        """
        rows = self.state_rows
        if rows is None:
            return
        if self.power_counts is None and not self.unavailable:  # the common case
            computing = len(self.busy)
            rows.append((now, 0, 0, 0, self.n - computing, computing))
        else:
            rows.append((now, *self.state_row()))
        if len(rows) >= ROWS_AT_ONCE:
            self.hand_over()

    def hand_over(self) -> None:
        """Give the rows traced so far to :attr:`rows_sink` (at the end of a run too)."""
        rows = self.state_rows
        if rows and self.rows_sink is not None:
            self.rows_sink(rows)
            rows.clear()

    def occupy(self, alloc: MachineSet, now: float) -> None:
        """Mark the machines busy from ``now`` on, and trace the row (:meth:`trace`).

        Runtime complexity: one C-level union; O(len(alloc)) once machines are shared:
        compute sharing counts the jobs on each. The common row is appended here rather
        than through :meth:`trace`: this runs at every job start.
        """
        if self._sharers or not alloc.isdisjoint(self.busy):
            shared = alloc & self.busy
            if shared:
                self.shared = True
            for m in alloc:
                self._sharers[m] = self._sharers.get(m, 1 if m in shared else 0) + 1
        self.busy |= alloc  # not ^= (batpolicy.protocol.intervals)
        rows = self.state_rows
        if rows is not None:
            if self.power_counts is None and not self.unavailable and len(rows) < _LAST_ROW:
                computing = len(self.busy)
                rows.append((now, 0, 0, 0, self.n - computing, computing))
            else:
                self.trace(now)

    def release(self, alloc: MachineSet, start: float, now: float) -> None:
        """Free the machines of a job run from ``start`` to ``now``; trace the row.

        One C-level difference; a machine that other jobs still share stays busy. The
        common row is appended here, as in :meth:`occupy`.
        """
        if self._sharers:
            still = []
            for m in alloc:
                left = self._sharers.pop(m, 1) - 1
                if left > 0:
                    self._sharers[m] = left
                    still.append(m)
            self.busy -= alloc - MachineSet(still) if still else alloc
        else:
            self.busy -= alloc
        runs = self._runs
        runs.append((start, now, len(alloc)))
        if len(runs) >= _FOLD_EVERY:
            self._fold_runs()
        rows = self.state_rows
        if rows is not None:
            if self.power_counts is None and not self.unavailable and len(rows) < _LAST_ROW:
                computing = len(self.busy)
                rows.append((now, 0, 0, 0, self.n - computing, computing))
            else:
                self.trace(now)
        changes = self._changes  # _changed, without its call (every job end)
        changes.append((now, alloc))
        if len(changes) >= _FOLD_EVERY:
            self._fold()

    def _changed(self, now: float, machines: MachineSet) -> None:
        changes = self._changes
        changes.append((now, machines))
        if len(changes) >= _FOLD_EVERY:
            self._fold()

    def _fold(self) -> None:
        """Write the queued state changes into ``last_change``: each machine's latest.

        Changes come in time order, so a machine's latest change is its largest time: the
        queued machines' ids (``to_array``, C) and their changes' times go to one
        ``numpy.maximum.at`` (unbuffered, so a machine named twice keeps the larger).
        Runtime complexity: O(1) Python-level work per change, then C-level work in the
        ids named. On RICC-2010's job ends (16 machines on average) that is about two
        thirds of the time of the walk it replaces, latest change first with one bitmap
        difference and union per change and one array write per interval.
        """
        changes, self._changes = self._changes, []
        if not changes:
            return
        ids = array("I")
        extend = ids.extend
        counts: list[int] = []
        count = counts.append
        for _, machines in changes:
            named = machines.to_array()
            extend(named)
            count(len(named))
        times = np.repeat(np.fromiter([at for at, _ in changes], np.float64, len(changes)),
                          counts)
        np.maximum.at(np.frombuffer(self.last_change, dtype=np.float64),
                      np.frombuffer(ids, dtype=np.uint32), times)

    def last_change_sum(self) -> Any:
        """The sum over machines of the time of their last state change (0 if none).

        In long double (numpy's ``longdouble``), as Batsim adds each machine's times in a
        state (``export.cpp``: a ``long double`` per state, over the machines).
        """
        self._fold()
        return np.array(self.last_change, dtype=np.longdouble).sum()

    @property
    def busy_time(self) -> float:
        """Machine-seconds the ended jobs ran (each run times its machines)."""
        return float(self.busy_time_exact())

    def busy_time_exact(self) -> Any:
        """:attr:`busy_time` in long double, as Batsim sums it.

        Batsim adds a machine's time in COMPUTING when it leaves that state, as ``long
        double`` differences of dates (``Machine::update_machine_state``, ``machines.cpp``),
        and sums the machines' times in ``long double`` before printing them as doubles
        (``export.cpp``); in doubles, a sum can land an ulp away and print another 6th
        decimal (6925.4830575: Batsim .483058, a double sum .483057). Runs are buffered
        and folded with numpy, ``_FOLD_EVERY`` at a time.
        """
        self._fold_runs()
        return self._busy_time

    def _fold_runs(self) -> None:
        runs = self._runs
        if runs:
            # doubles first (exact: dates and counts), then long double: a list converts to
            # float64 four times faster than to longdouble
            table = np.array(runs).astype(np.longdouble)
            self._busy_time = self._busy_time + ((table[:, 1] - table[:, 0]) * table[:, 2]).sum()
            runs.clear()

    def set_unavailable(self, machines: MachineSet, now: float) -> MachineSet:
        """Make machines unavailable; return those that already were (Batsim aborts on them)."""
        already = self.unavailable_in(machines)
        if not already:
            self.unavailable |= machines
            for m in machines:
                self.unavailable_since[m] = now
            self._changed(now, machines)
        return already

    def set_available(self, machines: MachineSet, now: float) -> MachineSet:
        """Make machines available again; return those that were not unavailable."""
        not_unavailable = machines - self.unavailable
        if not not_unavailable:
            self.unavailable -= machines
            by_start: dict[float, list[int]] = {}
            for m in machines:
                since = self.unavailable_since.pop(m)
                self.unavailable_time += now - since
                by_start.setdefault(since, []).append(m)
            for since, ids in by_start.items():
                self.windows.append((since, now, MachineSet(ids)))
            self._changed(now, machines)
        return not_unavailable
