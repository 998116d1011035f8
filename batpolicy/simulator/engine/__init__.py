"""The engine: the :class:`~.simulator.Simulator` built from its parts (:mod:`.parts`).

Batsim 4.2.1's server reactions, its checks and application of the scheduler's
decisions, the run's records, and the zero-latency driver.
"""
