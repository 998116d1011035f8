"""A policy of a package of its own (docs/add_a_policy.md): ``--policy largest-first``."""

from batpolicy.policies.base import Parameter, Policy
from batpolicy.protocol.types import ExecuteJob, RejectJob


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
