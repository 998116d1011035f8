"""How long Batsim's messages take on a platform: route latency plus one byte.

Batsim 4.2.1's actors talk to one ``server`` actor on the master host (``batsim.cpp``,
``server.cpp``); every message is a blocking 1-byte ``put`` on the server's mailbox
(``ipp.cpp``), costing its route's latency plus one byte over its narrowest link
(:mod:`.routes`, SimGrid's L07 phases). :class:`MessageDelays` gives that cost per
sending host; :func:`message_delays` reads it from a platform's file. Read by the
latency driver (:mod:`.latency`) and by the zero-latency instant clock
(:mod:`.message_clock`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

from batpolicy.platforms.model import Platform
from batpolicy.platforms.routes import Routes, UnsupportedRoute, read_routes

__all__ = ["MessageDelays", "message_delays"]

#: A message transfer (s) from which the zero-latency driver's exact instants are not
#: what Batsim's 6-decimal times show: a thousand messages of one instant stay below
#: half a microsecond.
TRANSFER_SHOWS = 1e-10

log = logging.getLogger(__name__)


class MessageDelays:
    """How long a Batsim message takes from a host to the master host (L07 phases)."""

    def __init__(self, routes: Routes, master: str, machines: Sequence[str]) -> None:
        self._routes = routes
        self.master = master
        self.machines = list(machines)
        self._to_master = lru_cache(maxsize=None)(self._compute)
        self.from_master = self._to_master(master)

    def _compute(self, host: str) -> tuple[float, float]:
        return self._routes.message_time(host, self.master)

    def from_machine(self, machine: int) -> tuple[float, float]:
        """(latency, transfer) of a message from machine id ``machine`` to the server."""
        return self._to_master(self.machines[machine])

    def transfer_shows(self) -> bool:
        """Whether a message's byte takes long enough to show in Batsim's 6-decimal times.

        Batsim writes its times with 6 decimals (``protocol.cpp``, ``export.cpp``): a
        1-byte transfer of 1e-12 s (a 1000 GBps loopback) never shows and the
        zero-latency driver's exact instants are what the scheduler sees, but one over
        a 1e7 bps link (8e-7 s, a cluster's master host without a loopback) moves
        every message by a microsecond, from the job submitter's first put on.
        """
        return self.from_master[1] > TRANSFER_SHOWS or any(
            self._to_master(name)[1] > TRANSFER_SHOWS for name in self.machines)

    def has_latency(self) -> bool:
        """Whether any message of this platform takes a non-zero latency."""
        return self.from_master[0] > 0 or any(
            self._to_master(name)[0] > 0 for name in self.machines)


def _master_name(routes: Routes, platform: Platform) -> str | None:
    known = {m.name for m in platform.machines} | {m.name for m in platform.storage}
    candidates = sorted(routes.hosts() - known)
    if "master_host" in candidates:
        return "master_host"
    return candidates[0] if len(candidates) == 1 else None


def message_delays(platform: Platform, mmax: int | None = None) -> MessageDelays | None:
    """The message delays of ``platform``'s file, or None.

    None if it has no file or its routing is not modelled (then the simulator runs
    without latencies, with a warning).
    """
    if platform.source is None or not Path(platform.source).is_file():
        return None
    try:
        routes = read_routes(platform.source)
        master = _master_name(routes, platform)
        if master is None:
            raise UnsupportedRoute("cannot tell which host is the master")
        machines = [m.name for m in platform.machines]
        delays = MessageDelays(routes, master, machines[:mmax] if mmax else machines)
        for machine in range(len(delays.machines)):  # every route now: fail here, not mid-run
            delays.from_machine(machine)
        return delays
    except (UnsupportedRoute, KeyError, ValueError, OSError) as exc:
        log.warning("platform %s: message latencies not modelled (%s); simulating as on a "
                    "zero-latency platform", platform.source, exc)
        return None
