"""SimGrid 3.32's parallel-task model as Batsim 4.2.1 runs it.

:mod:`.lmm` is the fair-bottleneck solver, :mod:`.l07` the ``ptask_L07`` host model
(tasks on hosts and links).
"""
