"""The schedule of a whole platform: one resource schedule per machine, and where each job is.

Klusáček, Matyska & Rudová, *Local Search for Deadline Driven Grid Scheduling*, 2007,
§3: "the *schedule* is composed of several *resource schedules*". Each resource schedule
is a :class:`~batpolicy.policies.toolkit.plan.machines.MachinePlan`; :class:`Plan` keeps
them side by side with an index of the machine of every planned or running job, so that
MT-EDF and Tabu search move jobs between machines and evaluate copies.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from batpolicy.policies.toolkit.plan.machines import (
    EPS,
    MachinePlan,
    PlannedJob,
    check_capacity,
)

__all__ = ["Plan"]


class Plan:
    """The schedule: one :class:`MachinePlan` per machine, and where each job is.

    Machines are indexed 0..m-1 in the order given (the paper's ``k = 1..m``).
    """

    __slots__ = ("machines", "_where", "now")

    def __init__(self, machines: Iterable[MachinePlan], now: float = 0.0) -> None:
        self.machines: list[MachinePlan] = list(machines)
        self._where: dict[str, int] = {}
        self.now = now
        for i, machine in enumerate(self.machines):
            machine.now = now
            for job in machine.queue:
                self._where[job.id] = i
            for job_id in machine.running:
                self._where[job_id] = i

    def copy(self) -> Plan:
        """An independent copy for a search. Runtime complexity: O(m + n)."""
        other = Plan.__new__(Plan)
        other.machines = [m.copy() for m in self.machines]
        other._where = dict(self._where)
        other.now = self.now
        return other

    def __contains__(self, job_id: object) -> bool:
        """Whether the job is planned or running in this plan. Runtime complexity: O(1)."""
        return job_id in self._where

    def planned(self) -> Iterator[tuple[int, PlannedJob]]:
        """Every planned (not running) job with its machine index. Runtime complexity: O(n)."""
        for i, machine in enumerate(self.machines):
            for job in machine.queue:
                yield i, job

    def advance(self, now: float) -> None:
        """Set the plan's time. Runtime complexity: O(m)."""
        self.now = now
        for machine in self.machines:  # MachinePlan.advance, inlined (m calls per decision)
            machine.now = now
            if now > machine._horizon:  # noqa: SLF001
                machine._invalidate(-1)  # noqa: SLF001

    def insert(self, job: PlannedJob, machine: int, position: int | None = None) -> int:
        """Plan a job on a machine at a queue position (end if None). Runtime complexity: O(n_i)."""
        self._where[job.id] = machine
        return self.machines[machine].insert(job, position)

    def insert_edf(self, job: PlannedJob, machine: int) -> int:
        """Plan a job on a machine at its EDF position (Fig. 1 l. 9). Runtime complexity: O(n_i)."""
        target = self.machines[machine]
        return self.insert(job, machine, target.edf_position(job.deadline))

    def remove(self, job_id: str) -> tuple[PlannedJob, int, int]:
        """Unplan a planned job; return it, its machine and position. Runtime complexity: O(n_i)."""
        i = self._where.pop(job_id)
        machine = self.machines[i]
        position = machine.index(job_id)
        return machine.pop(position), i, position

    def start(self, job_id: str, now: float) -> float:
        """A planned job starts now; return its planned end. Runtime complexity: O(n_i)."""
        return self.machines[self._where[job_id]].start(job_id, now)

    def add_running(self, job_id: str, machine: int, end: float, res: int) -> None:
        """Record a job running on ``machine`` until ``end``. Runtime complexity: O(1)."""
        self._where[job_id] = machine
        self.machines[machine].add_running(job_id, end, res)

    def finish(self, job_id: str) -> bool:
        """A running job ended; False if the plan did not know it. Runtime complexity: O(1)."""
        i = self._where.get(job_id)
        if i is None or job_id not in self.machines[i].running:
            return False
        del self._where[job_id]
        self.machines[i].finish(job_id)
        return True

    def due(self, now: float) -> list[tuple[int, PlannedJob]]:
        """Planned jobs whose planned start is ``now``, machine by machine.

        Runtime complexity: O(n) plus stale machines.
        """
        limit = now + EPS
        out = []
        for i, m in enumerate(self.machines):
            if m._valid == len(m._queue) == len(m._starts) and m._first > limit:  # noqa: SLF001
                continue  # fresh and nothing due: skip the call
            out.extend((i, job) for job in m.due(now))
        return out

    def objective(self) -> tuple[int, float]:
        """Expected (U, T) over all planned jobs (§3 eq. 1 without the constants U_C, T_C).

        Runtime complexity: O(m) plus stale machines.
        """
        u, tard = 0, 0.0
        for machine in self.machines:
            mu, mt = machine.late_and_tardiness()
            u += mu
            tard += mt
        return u, tard

    def check(self) -> None:
        """Every machine within its CPU count at all times (:func:`~.machines.check_capacity`)."""
        for machine in self.machines:
            check_capacity(machine)

