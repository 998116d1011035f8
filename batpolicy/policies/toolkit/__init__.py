"""The policy toolkit: what several policies share, kept apart from the families.

- :mod:`.queue`, :mod:`.orders`: the waiting queue and the orders it sorts by;
- :mod:`.reservation`: EASY's reservation of the head job (shadow time, extra machines);
- :mod:`.allocation`, :mod:`.groups`: which free machines a job gets and platform groups
  (preferred placements are :mod:`batpolicy.platforms.placement`'s, one rule shared with
  the simulator's job models);
- :mod:`.plan`: per-machine plans and conservative backfilling's time slices;
- :mod:`.copies`: kill and restart through Batsim (redirection, unavailable machines);
- :mod:`.unavailable`: what a policy does with a job on machines that went away;
- :mod:`.timing`: one decision timer on the policy's injected clock.

Toolkit modules import the scheduler core's API (jobs, view, contract, clock), the
protocol's types and the platform room (with the co-allocation paper's bandwidth model,
:mod:`batpolicy.platforms.bandwidth`, shared with the simulator) and the scheduling
metrics of :mod:`batpolicy.scheduler.outcomes` (also what ``metrics.json`` reports);
never the mutable state, a driver or the application (the import-linter contract in
pyproject.toml says so).
"""
