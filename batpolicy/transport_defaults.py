"""The ZeroMQ transport's defaults, in a module that imports nothing.

:mod:`batpolicy.protocol.transport` applies them (and imports ``zmq``); the command line
shows them in ``--help``, which must load neither ``zmq`` nor the protocol package
(tests/test_cli.py), so the numbers live here.
"""

from __future__ import annotations

__all__ = ["DEFAULT_BIND", "DEFAULT_CONNECT", "DEFAULT_MAX_MESSAGE", "HEARTBEAT_IVL_S",
           "HEARTBEAT_TIMEOUT_S"]

#: Where ``serve`` binds by default: the loopback, where Batsim connects by default.
DEFAULT_BIND = "tcp://127.0.0.1:28000"
#: Batsim 4.2.1's default ``--socket-endpoint`` (``src/batsim.cpp``).
DEFAULT_CONNECT = "tcp://localhost:28000"
#: Largest inbound frame by default: 64 MiB. The largest message of real workloads is
#: SIMULATION_BEGINS, which carries every profile and machine: 0.44 MB for KTH-SP2's
#: whole trace, 9.8 MB for CEA-Curie's (295,540 jobs, 93,312 machines), the largest of
#: the whole traces measured (docs/reliability.md gives the table); 64 MiB leaves 6.5
#: times that, and bounds what one frame can make ``serve`` allocate.
DEFAULT_MAX_MESSAGE = 64 * 2 ** 20
#: ZMTP heartbeats: a PING every second; no traffic for 10 s drops the connection.
HEARTBEAT_IVL_S = 1.0
HEARTBEAT_TIMEOUT_S = 10.0
