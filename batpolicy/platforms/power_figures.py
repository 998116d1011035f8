"""Power figures of a generated platform, written as the properties SimGrid and Batsim read.

``batpolicy platform ... --power`` gives every compute host four pstates (the layout of
Batsim 4.2.1's ``platforms/cluster_energy_128.xml``, read back by
:mod:`batpolicy.platforms.power`):

- pstate 0, the computation pstate, at the group's speed: ``idle:computing`` watts
  (SimGrid 3.32 ``src/plugins/host_energy.cpp``: idle figure at zero load, linear up to
  the all-cores figure at full load);
- pstate 1, the sleep pstate: ``sleep`` watts, a negligible speed (Batsim's files use
  ``1e-9Mf``);
- pstates 2 and 3, Batsim's *virtual* switch-off and switch-on pstates
  (``sleep_pstates = "1:2:3"``; Batsim ``src/pstate.cpp``, ``machines.cpp``): a switching
  host computes one flop there, so the pstate's speed is ``1 / time`` flop/s and its
  power ``energy / time`` watts;
- ``wattage_off``: the sleep figure (SimGrid's power of a host turned off; Batsim never
  turns one off, as in cluster_energy_128.xml).

Defaults (:data:`DEFAULT_POWER`) are the figures of Batsim's own energy platforms
(``cluster_energy_128.xml`` and ``energy_platform_homogeneous_no_net_*.xml``, whose
comments list them; batsched's ``test/test_energy.py`` states the same node model as
``power_idle`` 95, ``power_compute`` 190.738, ``power_sleep`` 9.75, ``time_switch_off``
6.1, ``time_switch_on`` 152): 95 W idle, 190.738 W computing, 9.75 W asleep, 6.1 s and
616.08 J to switch off (100.997 W), 151.52 s and 18,966.42 J to switch on (125.17 W).
Idle at half the peak is what Barroso & Hölzle (2007, "The Case for Energy-Proportional
Computing", IEEE Computer 40(12), Fig. 2) report for servers of the time; a boot of
minutes against a shutdown of seconds is why an idle timeout must be long enough.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace

from batpolicy.errors import ConfigError

__all__ = ["DEFAULT_POWER", "PowerSpec", "power_spec"]

#: Batsim's sleep-pstate speed (``1e-9Mf`` in its energy platforms), in flop/s.
SLEEP_SPEED = "0.001f"


@dataclass(frozen=True, slots=True)
class PowerSpec:
    """One node's power model: watts, and the time (s) and energy (J) of each switch."""

    idle_watts: float = 95.0
    computing_watts: float = 190.738
    sleep_watts: float = 9.75
    switch_off_time: float = 6.1
    switch_off_energy: float = 616.08
    switch_on_time: float = 151.52
    switch_on_energy: float = 18966.4228

    def check(self) -> PowerSpec:
        """Refuse figures SimGrid or Batsim cannot use, naming the option; return self.

        >>> PowerSpec(sleep_watts=-1).check()
        Traceback (most recent call last):
        batpolicy.errors.ConfigError: --sleep-watts must be a finite number >= 0, got -1
        """
        for f in fields(self):
            value = getattr(self, f.name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise ConfigError(f"{_option(f.name)} must be a finite number >= 0, got {value}")
        for name in ("switch_off_time", "switch_on_time"):
            if getattr(self, name) <= 0:  # the virtual pstate's speed is 1 / time
                raise ConfigError(f"{_option(name)} must be > 0 seconds (a switch computes "
                                  f"one flop at 1/time flop/s), got {getattr(self, name)}")
        if self.computing_watts < self.idle_watts:
            raise ConfigError(f"--computing-watts ({self.computing_watts}) is below "
                              f"--idle-watts ({self.idle_watts}): a loaded node draws more")
        if self.sleep_watts > self.idle_watts:
            raise ConfigError(f"--sleep-watts ({self.sleep_watts}) is above --idle-watts "
                              f"({self.idle_watts}): sleeping would cost energy")
        return self

    def properties(self) -> dict[str, str]:
        """The compute hosts' ``wattage_per_state``, ``wattage_off`` and ``sleep_pstates``.

        >>> PowerSpec().properties()["wattage_per_state"].split(", ")[:2]
        ['95.0:190.738', '9.75:9.75']
        """
        off = self.switch_off_energy / self.switch_off_time
        on = self.switch_on_energy / self.switch_on_time
        watts = [(self.idle_watts, self.computing_watts), (self.sleep_watts,) * 2,
                 (off, off), (on, on)]
        return {"wattage_per_state": ", ".join(f"{_num(a)}:{_num(b)}" for a, b in watts),
                "wattage_off": _num(self.sleep_watts), "sleep_pstates": "1:2:3"}

    def speeds(self, speed: str) -> str:
        """The ``speed`` list of a host computing at ``speed`` in pstate 0.

        >>> PowerSpec().speeds("100Mf")
        '100Mf, 0.001f, 0.1639344262295082f, 0.006599788806758183f'
        """
        return (f"{speed}, {SLEEP_SPEED}, {_num(1.0 / self.switch_off_time)}f, "
                f"{_num(1.0 / self.switch_on_time)}f")

    def comment(self) -> str:
        """An XML comment stating the figures, for whoever reads the file."""
        return (f"<!-- power (Batsim -E): pstate 0 computes, {_num(self.idle_watts)} W idle, "
                f"{_num(self.computing_watts)} W loaded; pstate 1 sleeps, "
                f"{_num(self.sleep_watts)} W; pstate 2 switches off "
                f"({_num(self.switch_off_time)} s, {_num(self.switch_off_energy)} J), "
                f"pstate 3 on ({_num(self.switch_on_time)} s, "
                f"{_num(self.switch_on_energy)} J) -->")

    def master_properties(self) -> dict[str, str]:
        """The master host's figures: its one pstate (SimGrid warns on a host without)."""
        return {"wattage_per_state": f"{_num(self.idle_watts)}:{_num(self.computing_watts)}",
                "wattage_off": _num(self.sleep_watts)}


#: Batsim's energy platforms' node (module docstring).
DEFAULT_POWER = PowerSpec()


def power_spec(**figures: float | None) -> PowerSpec:
    """:data:`DEFAULT_POWER` with the figures given (``None``: the default), checked.

    >>> power_spec(idle_watts=80.0, sleep_watts=None).idle_watts
    80.0
    """
    given = {k: float(v) for k, v in figures.items() if v is not None}
    unknown = sorted(set(given) - {f.name for f in fields(PowerSpec)})
    if unknown:
        raise ConfigError(f"unknown power figure(s): {', '.join(unknown)}")
    return replace(DEFAULT_POWER, **given).check()


def _option(name: str) -> str:
    return "--" + name.replace("_", "-")


def _num(value: float) -> str:
    """A float as its shortest round-tripping text (``95.0``, ``0.1639344262295082``)."""
    return repr(float(value))
