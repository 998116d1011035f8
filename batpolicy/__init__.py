"""batpolicy: scheduling policies for Batsim, as a daemon and as an embedded simulator.

The repository's folders are the architecture:

- ``protocol/`` (``batpolicy.protocol``): Batsim 4 wire format, typed events and
  decisions, codec, ZeroMQ transport, transcripts. No scheduling logic.
- ``scheduler/`` (``batpolicy.scheduler``): cluster state, the checker, the two drivers
  (daemon and embedded simulator), metrics, outputs, workload readers, CLI.
- ``policies/`` (``batpolicy.policies``): one module per policy family, one registry.
- ``platforms/`` (``batpolicy.platforms``): platform models, XML reader, generators.
"""

__version__ = "0.1.0"
