"""The policy toolkit: what several policies share, kept apart from the families.

- :mod:`.queue`, :mod:`.orders`: the waiting queue and the orders it sorts by;
- :mod:`.reservation`: EASY's reservation of the head job (shadow time, extra machines);
- :mod:`.allocation`, :mod:`.placement`, :mod:`.groups`: which free machines a job gets,
  platform groups and preferred placements;
- :mod:`.plan`: per-machine plans and conservative backfilling's time slices;
- :mod:`.bandwidth`: the co-allocation paper's bandwidth model as pure functions;
- :mod:`.copies`: kill and restart through Batsim (redirection, unavailable machines);
- :mod:`.unavailable`: what a policy does with a job on machines that went away;
- :mod:`.outcomes`: the scheduling metrics of a set of job outcomes (a pure function,
  also what ``metrics.json`` reports);
- :mod:`.timing`: one decision timer on the policy's injected clock.

Toolkit modules import the scheduler core's API (jobs, view, contract, clock), the
protocol's types and the platform model; never the mutable state, a driver or the
application (the import-linter contract in pyproject.toml says so).
"""
