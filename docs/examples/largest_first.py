"""A policy of your own in a few lines, unit-tested offline (docs/add_a_policy.md)."""

from batpolicy.policies.base import Parameter, Policy
from batpolicy.protocol.types import ExecuteJob, RejectJob
from batpolicy.testing import simulate


class LargestFirst(Policy):
    """Start the widest waiting jobs that fit now, widest first (no reservation)."""

    name = "largest-first"
    parameters = (Parameter("max_res", int, 0, "reject jobs wider than this (0: no limit)"),)

    def decide(self, now, view):
        """Called once per Batsim message, after every hook; returns the decisions."""
        out, free = [], view.free  # an immutable MachineSet: `free - alloc` is a new one
        limit = self.params["max_res"] or view.nb_machines
        for job in sorted(view.waiting.values(), key=lambda j: (-j.res, j.seq)):
            if job.res > limit:
                out.append(RejectJob(job.id))
            elif job.res <= len(free):
                alloc = free.lowest(job.res)
                free = free - alloc
                out.append(ExecuteJob(job.id, alloc))
        return out


schedule = simulate(LargestFirst({"max_res": 3}),
                    [(0, 1, 10), (0, 3, 10), (0, 2, 10), (5, 4, 10)], machines=4)
for job in ("0", "1", "2", "3"):
    print(job, schedule.state(job).value, schedule.start(job), schedule.machines(job))
print("mean waiting time:", schedule.metrics["mean_waiting_time"])
