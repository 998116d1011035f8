"""N-step search based greedy scheduling (Wu & Chen, seed 001): :mod:`.search`, :mod:`.policy`."""

from batpolicy.policies.nstep.policy import NStep

__all__ = ["NStep"]
