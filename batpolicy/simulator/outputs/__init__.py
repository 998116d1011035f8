"""A run's optional outputs: one interface (:mod:`.base`), found by one registry (:mod:`.registry`).

Every module of this folder but those two holds outputs (:class:`~.base.Output`
subclasses), each a file (or files) under the run's output prefix, switched on by its
own command-line flag: :mod:`.schedule_trace` (Batsim's Pajé ``schedule.trace``,
``--schedule-trace``) and :mod:`.queue_lengths` (the example, ``--queue-lengths``).
Adding one is one new module here and its test; see docs/simulator.md, "Adding an
output".
"""
