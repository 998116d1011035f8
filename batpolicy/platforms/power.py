"""Power states of a platform's hosts, as SimGrid 3.32's host-energy plugin and Batsim read them.

Each compute host of an energy platform has, per pstate of its ``speed`` list:

- ``wattage_per_state``: ``"idle:all_cores"`` or ``"idle:epsilon:all_cores"`` per pstate,
  comma-separated (SimGrid ``src/plugins/host_energy.cpp``, ``init_watts_range_list``:
  one entry per pstate, 2 or 3 numbers each; with 2, epsilon is the idle figure);
- ``wattage_off``: the power of a host that SimGrid turned off (Batsim never turns a host
  off: a sleeping host stays on, in its sleep pstate);
- ``sleep_pstates`` (Batsim ``machines.cpp``): ``"sleep:switch_off:switch_on"`` triples
  separated by commas; the switch-off and switch-on pstates are *virtual*: a host passes
  through one while it computes one flop, so the speed of that pstate sets the
  transition's duration (1 / speed) and its all-cores power the transition's power
  (Batsim ``pstate.cpp``). The other pstates are computation pstates.

A host's power at a load ``u`` (its CPU share in use, 0..1) is the plugin's
``get_current_watts_value``: ``idle`` when ``u == 0``, else ``epsilon + u * (all_cores -
epsilon)``.

The pstate speeds are read again from the file (the platform model keeps only the
current one).
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from batpolicy.errors import InputError
from batpolicy.platforms.units import parse_speed
from batpolicy.platforms.xml import _radical

__all__ = ["HostPower", "PStateKind", "SleepPState", "host_power", "pstate_speeds"]


class PStateKind(Enum):
    """Batsim's ``PStateType``."""

    COMPUTATION = "computation"
    SLEEP = "sleep"
    TRANSITION = "transition"


@dataclass(frozen=True, slots=True)
class SleepPState:
    """One ``sleep_pstates`` triple: the sleep pstate and its two virtual transition pstates."""

    sleep: int
    switch_off: int
    switch_on: int


@dataclass(frozen=True, slots=True)
class HostPower:
    """One host's power figures by pstate (watts) and pstate speeds (flop/s)."""

    name: str
    idle: tuple[float, ...]
    epsilon: tuple[float, ...]
    all_cores: tuple[float, ...]
    off: float
    speeds: tuple[float, ...]
    sleep: Mapping[int, SleepPState]
    initial: int = 0
    #: Core count: a one-executor task loads one core, ``1 / cores`` of the host.
    cores: int = 1

    def kind(self, pstate: int) -> PStateKind:
        """Whether ``pstate`` is a computation, sleep or virtual transition pstate."""
        if pstate in self.sleep:
            return PStateKind.SLEEP
        for s in self.sleep.values():
            if pstate in (s.switch_off, s.switch_on):
                return PStateKind.TRANSITION
        return PStateKind.COMPUTATION

    def has(self, pstate: int) -> bool:
        """Whether ``pstate`` is one of the host's pstates."""
        return 0 <= pstate < len(self.speeds)

    def watts(self, pstate: int, load: float) -> float:
        """SimGrid's power at ``load`` (0..1) in ``pstate``: idle figure at 0, linear above."""
        if load <= 0.0:
            return self.idle[pstate]
        eps = self.epsilon[pstate]
        return eps + min(load, 1.0) * (self.all_cores[pstate] - eps)


def _numbers(text: str, what: str, where: dict[str, object]) -> float:
    """A power figure in watts: a finite number >= 0 (a negative one gave negative joules).

    >>> _numbers("-95", "host 'h0', pstate 0", {})
    Traceback (most recent call last):
    batpolicy.errors.InputError: host 'h0', pstate 0: '-95' is not a power in watts (a finite \
number >= 0)
    """
    try:
        watts = float(text)
    except ValueError:
        raise InputError(f"{what}: {text.strip()!r} is not a number", **where) from None
    if not (math.isfinite(watts) and watts >= 0):
        raise InputError(f"{what}: {text.strip()!r} is not a power in watts (a finite number "
                         ">= 0)", **where)
    return watts


def host_power(name: str, properties: Mapping[str, object], speeds: Sequence[float], *,
               source: str | None = None, initial: int = 0, cores: int = 1) -> HostPower:
    """Parse one host's energy properties (module docstring); InputError naming file and host.

    >>> p = host_power("h0", {"wattage_per_state": "95:190, 9:9, 100:100, 125:125",
    ...                       "wattage_off": "9", "sleep_pstates": "1:2:3"},
    ...                [1e8, 1e-3, 0.5, 0.25])
    >>> p.watts(0, 0.0), p.watts(0, 0.5), p.kind(1).value, p.kind(2).value
    (95.0, 142.5, 'sleep', 'transition')
    """
    where: dict[str, object] = {"path": source, "field": "wattage_per_state"}
    text = properties.get("wattage_per_state")
    if text is None:
        raise InputError(f"host '{name}' has no wattage_per_state property (energy needs one "
                         "per pstate)", **where)
    idle, eps, full = [], [], []
    entries = str(text).split(",")
    if len(entries) != len(speeds):
        raise InputError(f"host '{name}': wattage_per_state has {len(entries)} entries for "
                         f"{len(speeds)} pstates", **where)
    for i, entry in enumerate(entries):
        values = entry.split(":")
        if len(values) not in (2, 3):
            raise InputError(f"host '{name}', pstate {i}: {entry.strip()!r} is not "
                             "'idle:all_cores' nor 'idle:epsilon:all_cores'", **where)
        nums = [_numbers(v, f"host '{name}', pstate {i}", where) for v in values]
        idle.append(nums[0])
        eps.append(nums[1] if len(nums) == 3 else nums[0])
        full.append(nums[-1])
    off_text = properties.get("wattage_off")
    off = 0.0 if off_text is None else _numbers(
        str(off_text), f"host '{name}': wattage_off", {"path": source, "field": "wattage_off"})
    sleep: dict[int, SleepPState] = {}
    sleep_text = properties.get("sleep_pstates")
    if sleep_text:
        swhere: dict[str, object] = {"path": source, "field": "sleep_pstates"}
        for triple in str(sleep_text).split(","):
            parts = triple.split(":")
            if len(parts) != 3:
                raise InputError(f"host '{name}': sleep_pstates entry {triple.strip()!r} is not "
                                 "'sleep:switch_off:switch_on'", **swhere)
            try:
                s = SleepPState(*(int(p) for p in parts))
            except ValueError:
                raise InputError(f"host '{name}': sleep_pstates entry {triple.strip()!r} is not "
                                 "three pstate numbers", **swhere) from None
            for p in (s.sleep, s.switch_off, s.switch_on):
                if not 0 <= p < len(speeds):
                    raise InputError(f"host '{name}': sleep_pstates names pstate {p}, not one "
                                     f"of the host's {len(speeds)} pstates", **swhere)
            sleep[s.sleep] = s
    power = HostPower(name, tuple(idle), tuple(eps), tuple(full), off, tuple(speeds), sleep,
                      initial, cores)
    if power.kind(initial) is not PStateKind.COMPUTATION:
        raise InputError(f"host '{name}' starts in pstate {initial}, not a computation pstate",
                         path=source, field="pstate")
    return power


def pstate_speeds(path: str | Path) -> dict[str, tuple[tuple[float, ...], int, int]]:
    """Every host's pstate speeds (flop/s), initial pstate and core count, by host name.

    Hosts of ``<host>`` and of ``<cluster>``/``<cabinet>`` (prefix, radical, suffix).
    """
    try:
        root = ET.fromstring(Path(path).read_text(encoding="utf-8").lstrip())
    except (OSError, ET.ParseError) as exc:
        raise InputError(f"cannot read the platform's pstates: {exc}", path=str(path)) from None
    found: dict[str, tuple[tuple[float, ...], int, int]] = {}
    for node in root.iter():
        if node.tag not in ("host", "cluster", "cabinet") or "speed" not in node.attrib:
            continue
        try:
            speeds = tuple(parse_speed(s) for s in node.attrib["speed"].split(",") if s.strip())
            initial = int(node.attrib.get("pstate", "0"))
            cores = int(node.attrib.get("core", "1"))
        except ValueError as exc:
            raise InputError(f"<{node.tag} id={node.attrib.get('id')!r}>: {exc}",
                             path=str(path), field="speed") from None
        if node.tag == "host":
            found[node.attrib.get("id", "")] = (speeds, initial, cores)
        else:
            prefix, suffix = node.attrib.get("prefix", ""), node.attrib.get("suffix", "")
            for n in _radical(node.attrib.get("radical", "")):
                found[f"{prefix}{n}{suffix}"] = (speeds, initial, cores)
    return found
