"""Batsim 5's own EASY example EDC, written as a batpolicy policy (tests only).

A line-by-line port of ``test/edc-lib/easy.cpp`` at Batsim ed55a974, to tell apart what
the codec does from what the algorithm does: served over ``serve --batsim 5``'s wire it
must give Batsim the very jobs.csv the C++ library gives. batpolicy's ``easy`` is
batsched's ``easy_bf`` instead; the two differ in one rule (see ``docs/batsim5.md``):

- this EDC lets a job that ends after the shadow time backfill when it needs no more
  hosts than the *number* of hosts left over at the shadow time, whichever hosts it
  takes now (l. 166-168 of easy.cpp); ``easy_bf`` only lets it use machines the
  reservation does not hold (the lowest ids free at the shadow time are reserved);
- it keeps the shadow time and the backfilled job's end in single-precision ``float``
  (l. 127, 163), as reproduced by :func:`f32`;
- it rejects jobs larger than the platform or with a walltime <= 0 (l. 99-102).

Run as a script, it serves Batsim 5 on an endpoint::

    python tests/batsim5/edc_easy.py tcp://127.0.0.1:28000
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Sequence

from batpolicy.policies.base import Decisions, Policy
from batpolicy.protocol.intervals import MachineSet
from batpolicy.protocol.types import Decision, ExecuteJob, RejectJob
from batpolicy.scheduler.jobs import Job
from batpolicy.scheduler.view import PolicyView

_F32 = struct.Struct("f")


def f32(x: float) -> float:
    """``x`` rounded to a C ``float``, as the EDC stores times.

    >>> f32(0.1) == 0.1, f32(272.75)
    (False, 272.75)
    """
    return float(_F32.unpack(_F32.pack(x))[0])


class Batsim5EdcEasy(Policy):
    """Batsim 5's EASY example EDC (test/edc-lib/easy.cpp)."""

    name = "batsim5-edc-easy"
    parameters = ()

    def __init__(self, params=None) -> None:  # type: ignore[no-untyped-def]
        super().__init__(params)
        self.queue: list[Job] = []
        self.running: dict[str, tuple[Job, MachineSet, float]] = {}  # alloc, max finish
        self.available = MachineSet()
        self.nb_hosts = 0
        self.need_scheduling = False

    def on_simulation_begins(self, view: PolicyView) -> Decisions:
        """All hosts available (l. 88-91)."""
        self.nb_hosts = view.nb_machines
        self.available = MachineSet.span(0, self.nb_hosts - 1)
        return None

    def on_job_submitted(self, job: Job, view: PolicyView) -> Decisions:
        """Reject the impossible at once, queue the rest (l. 93-107)."""
        if job.res > self.nb_hosts or job.walltime is None or job.walltime <= 0:
            return [RejectJob(job.id)]
        self.need_scheduling = True
        self.queue.append(job)
        return None

    def on_job_completed(self, job: Job, view: PolicyView) -> Decisions:
        """Its hosts are available again (l. 108-119)."""
        self.need_scheduling = True
        _, alloc, _ = self.running.pop(job.id)
        self.available = self.available | alloc
        return None

    def _start(self, job: Job, now: float, out: list[Decision]) -> float:
        alloc = self.available.lowest(job.res)
        end = now + float(job.walltime or 0)
        self.running[job.id] = (job, alloc, end)
        self.available = self.available - alloc
        out.append(ExecuteJob(job.id, alloc))
        return end

    def decide(self, now: float, view: PolicyView) -> list[Decision]:
        """EASY as in l. 124-190 of easy.cpp."""
        out: list[Decision] = []
        if not self.need_scheduling:
            return out
        self.need_scheduling = False
        queue = self.queue
        priority: Job | None = None
        extra = 0
        shadow = -1.0
        i = 0
        while i < len(queue):
            job = queue[i]
            if job.res <= len(self.available):
                self._start(job, now, out)
                del queue[i]
                continue
            priority = job
            i += 1
            ends = sorted(self.running.values(), key=lambda r: r[2])
            extra = len(self.available)
            for running_job, _, end in ends:
                extra += running_job.res
                if extra >= priority.res:
                    extra -= priority.res
                    shadow = f32(end)
                    break
            break
        while i < len(queue):
            job = queue[i]
            finish = f32(now + float(job.walltime or 0))
            if job.res <= len(self.available) and (job.res <= extra or finish <= shadow):
                self._start(job, now, out)
                del queue[i]
                if finish > shadow:
                    extra -= job.res
            elif not self.available:
                break
            else:
                i += 1
        return out


def main(argv: Sequence[str]) -> int:
    """Serve Batsim 5 on ``argv[0]`` with this policy; the daemon's exit status."""
    from batpolicy.protocol.wires import make_wire
    from batpolicy.scheduler.daemon import ServeOptions, serve
    from batpolicy.scheduler.dispatch import Dispatcher
    from batpolicy.scheduler.state import ClusterState

    options = ServeOptions(endpoint=argv[0], timeout_s=120.0,
                           wire=make_wire("5", name="easy", version="0.1.0"))
    return serve(Dispatcher(Batsim5EdcEasy(), ClusterState(None)), options)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
