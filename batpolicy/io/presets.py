"""Named synthetic workloads: the registry behind ``batpolicy workload synth --preset``.

A preset is a function returning a :class:`~batpolicy.io.synth.SynthSpec`
from keyword parameters that all have defaults; :func:`preset` calls it with overrides,
and :func:`parse_overrides` turns ``--param key=value`` strings into them, typed after
the parameter's default (``int``, ``float``, ``str``, ``bool``; a ``None`` default takes a
float, or ``none``). Adding a preset is one decorated function here (or in a module that
imports :func:`register`); the co-allocation, deadline and N-step issues add theirs.

- ``uniform``: one stream of jobs on a homogeneous platform: Poisson arrivals, uniform
  run times and uniform sizes (the generic case, Jones et al. §4 with a uniform service
  law); optional deadlines (``slack_min``/``slack_max``, Klusáček et al. §2).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from batpolicy.errors import ConfigError
from batpolicy.io.synth import JobStreamSpec, JobType, SynthSpec, generate
from batpolicy.io.workload import Workload

__all__ = ["PRESETS", "GeneratedSpec", "Preset", "build_workload", "parse_overrides", "preset",
           "register"]


@dataclass(frozen=True, slots=True)
class GeneratedSpec:
    """A preset whose workload a paper-specific generator makes (``make(seed)``).

    For settings the generic :class:`SynthSpec` does not express (the co-allocation
    paper's per-cluster streams, the deadline paper's machine grid). ``platform(seed)``,
    when given, is the platform the workload was drawn for, as ``(name, cpus, speed,
    gpu)`` rows of :func:`batpolicy.platforms.generators.machines`: the deadline grid
    sizes its jobs and arrival rate for the seed's machines, so another platform changes
    the load.
    """

    make: Callable[[int], Workload]
    platform: Callable[[int], list[tuple[str | None, int, str, bool]]] | None = None

    def check(self) -> None:
        """Nothing to check: the generator checked its parameters when built."""


Builder = Callable[..., "SynthSpec | GeneratedSpec"]


def build_workload(spec: SynthSpec | GeneratedSpec, seed: int) -> Workload:
    """The workload of a preset's spec for ``seed`` (the same seed, the same jobs)."""
    if isinstance(spec, GeneratedSpec):
        return spec.make(seed)
    return generate(spec, seed)


@dataclass(frozen=True, slots=True)
class Preset:
    """A registered preset: its name, one-line summary and builder."""

    name: str
    summary: str
    build: Builder

    @property
    def parameters(self) -> dict[str, Any]:
        """Parameter name -> default, in the builder's order."""
        return {name: p.default for name, p in inspect.signature(self.build).parameters.items()}


#: Every preset by name (the single registry: CLI help, validation and construction).
PRESETS: dict[str, Preset] = {}


def register(name: str) -> Callable[[Builder], Builder]:
    """Register the decorated builder as preset ``name`` (its docstring's first line: summary)."""
    def add(build: Builder) -> Builder:
        """Check the builder's defaults and put it in :data:`PRESETS`."""
        if name in PRESETS:
            raise ValueError(f"preset {name!r} registered twice")
        missing = [p for p, v in inspect.signature(build).parameters.items()
                   if v.default is inspect.Parameter.empty]
        if missing:
            raise ValueError(f"preset {name!r}: parameters {missing} need defaults")
        PRESETS[name] = Preset(name, (build.__doc__ or "").strip().splitlines()[0], build)
        return build
    return add


def preset(name: str, **overrides: Any) -> SynthSpec | GeneratedSpec:
    """The spec of preset ``name`` with ``overrides``; unknown names are a ConfigError.

    >>> spec = preset("uniform", nb_jobs=5, nb_res=8)
    >>> spec.groups[0].nb_jobs, spec.nb_res
    (5, 8)
    """
    if name not in PRESETS:
        raise ConfigError(f"unknown preset {name!r}; presets: {', '.join(sorted(PRESETS))}")
    entry = PRESETS[name]
    unknown = sorted(set(overrides) - set(entry.parameters))
    if unknown:
        raise ConfigError(f"preset {name!r} has no parameter {unknown[0]!r}; its parameters: "
                          + ", ".join(entry.parameters))
    try:
        spec = entry.build(**overrides)
        spec.check()
    except ConfigError as exc:  # say which preset, whatever layer refused
        raise ConfigError(f"preset {name!r}: {exc}") from None
    return spec


def _require(ok: bool, param: str, rule: str, value: Any) -> None:
    """Refuse a preset parameter in the words of ``--param``: ``--param KEY must RULE``.

    >>> _require(False, "nb_jobs", "be >= 1", -5)
    Traceback (most recent call last):
    batpolicy.errors.ConfigError: --param nb_jobs must be >= 1, got -5
    """
    if not ok:
        raise ConfigError(f"--param {param} must {rule}, got {value!r}")


def _count(param: str, value: int) -> None:
    """A count of jobs, machines, racks...: at least one (0 gave an empty workload)."""
    _require(value >= 1, param, "be >= 1", value)


def _positive(param: str, value: float) -> None:
    """A finite number > 0 (times, loads, factors)."""
    _require(math.isfinite(value) and value > 0, param, "be a finite number > 0", value)


def _convert(text: str, default: Any, key: str) -> Any:
    """``text`` as the type of ``default``.

    >>> _convert("3", 1, "n"), _convert("0.5", 1.0, "x"), _convert("none", None, "s")
    (3, 0.5, None)
    """
    try:
        if isinstance(default, bool):
            if text.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError
            return text.lower() in ("true", "1", "yes")
        if isinstance(default, int):
            return int(text)
        if isinstance(default, str):
            return text
        if default is None and text.lower() in ("none", ""):
            return None
        return float(text)
    except ValueError:
        kind = "true or false" if isinstance(default, bool) else \
            "an integer" if isinstance(default, int) else "a number"
        raise ConfigError(f"--param {key}={text!r}: {key} must be {kind}") from None


def parse_overrides(name: str, pairs: Iterable[str]) -> dict[str, Any]:
    """``--param key=value`` strings of preset ``name`` as typed overrides."""
    if name not in PRESETS:
        raise ConfigError(f"unknown preset {name!r}; presets: {', '.join(sorted(PRESETS))}")
    defaults = PRESETS[name].parameters
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"--param wants KEY=VALUE, got {pair!r}")
        if key not in defaults:
            raise ConfigError(f"--param {key}: preset {name!r} has no such parameter; its "
                              "parameters: " + ", ".join(defaults))
        out[key] = _convert(value.strip(), defaults[key], key)
    return out


@register("uniform")
def uniform(nb_jobs: int = 200, nb_res: int = 32, mean_interarrival: float = 60.0,
            runtime_min: float = 60.0, runtime_max: float = 3600.0, res_min: int = 1,
            res_max: int = 0, walltime_factor: float = 2.0, slack_min: float | None = None,
            slack_max: float | None = None) -> SynthSpec:
    """Poisson arrivals, uniform run times and sizes on nb_res identical machines.

    ``res_max`` 0 means half the platform (at least 1 machine).
    """
    _count("nb_jobs", nb_jobs)
    _count("nb_res", nb_res)
    _positive("mean_interarrival", mean_interarrival)
    _positive("runtime_min", runtime_min)
    _require(math.isfinite(runtime_max) and runtime_max >= runtime_min, "runtime_max",
             f"be finite and >= runtime_min ({runtime_min})", runtime_max)
    _require(1 <= res_min <= nb_res, "res_min", f"be in 1..nb_res ({nb_res})", res_min)
    _require(res_max == 0 or res_min <= res_max <= nb_res, "res_max",
             f"be 0 (half the platform) or in res_min..nb_res ({res_min}..{nb_res})", res_max)
    _positive("walltime_factor", walltime_factor)
    for key, value in (("slack_min", slack_min), ("slack_max", slack_max)):
        if value is not None:
            _require(math.isfinite(value) and value >= 0, key, "be a finite number >= 0",
                     value)
    if slack_min is not None and slack_max is not None:
        _require(slack_min <= slack_max, "slack_max", f"be >= slack_min ({slack_min})",
                 slack_max)
    slack = None
    if slack_min is not None or slack_max is not None:
        lo = slack_min if slack_min is not None else slack_max
        hi = slack_max if slack_max is not None else slack_min
        slack = (float(lo), float(hi))  # type: ignore[arg-type]
    return SynthSpec((JobStreamSpec(nb_jobs=nb_jobs, mean_interarrival=mean_interarrival,
                                service="uniform", service_range=(runtime_min, runtime_max),
                                res_range=(res_min, res_max or max(1, nb_res // 2)),
                                walltime_factor=walltime_factor,
                                slack_range=slack),), nb_res=nb_res)


@register("nstep")
def nstep(mpi_max: int = 4, mpi_load: float = 0.8, gpu_max: int = 4, gpu_load: float = 0.8,
          nb_jobs: int = 150, racks: int = 4, nodes: int = 6, gpu_racks: int = 1,
          runtime_min: float = 60.0, runtime_max: float = 240.0,
          mpi_other_factor: float = 1.5, gpu_other_factor: float = 2.0) -> SynthSpec:
    """Wu & Chen's traces: an MPI stream and a GPU stream of nb_jobs each, on racks.

    ``traceMPI-c2x<mpi_max>-rho<mpi_load>`` + ``traceGPU-c2x<gpu_max>-rho<gpu_load>``
    (seed 001, Table 1's footnotes), read as: ``nb_jobs`` jobs per stream of 2 to
    ``*_max`` machines, uniform run times on preferred machines (MPI: one rack, GPU: a GPU
    rack), ``*_other_factor`` times longer elsewhere (``runtime_other``), Poisson arrivals
    loading the stream's preferred machines to ``*_load`` (MPI: the non-GPU racks). The
    platform is ``batpolicy platform racks --racks R --nodes N --gpu-racks G``.
    """
    for key, value in (("nb_jobs", nb_jobs), ("racks", racks), ("nodes", nodes)):
        _count(key, value)
    _require(2 <= mpi_max <= nodes, "mpi_max", f"be in 2..nodes ({nodes})", mpi_max)
    _require(2 <= gpu_max <= nodes, "gpu_max", f"be in 2..nodes ({nodes})", gpu_max)
    _require(1 <= gpu_racks < racks, "gpu_racks", f"be in 1..racks - 1 ({racks - 1})",
             gpu_racks)
    for key, number in (("mpi_load", mpi_load), ("gpu_load", gpu_load),
                        ("runtime_min", runtime_min)):
        _positive(key, number)
    _require(math.isfinite(runtime_max) and runtime_max >= runtime_min, "runtime_max",
             f"be finite and >= runtime_min ({runtime_min})", runtime_max)
    for key, number in (("mpi_other_factor", mpi_other_factor),
                        ("gpu_other_factor", gpu_other_factor)):
        _require(math.isfinite(number) and number >= 1, key, "be a finite number >= 1", number)
    mean_run = (runtime_min + runtime_max) / 2

    def stream(kind: str, top: int, load: float, machines: int, factor: float) -> JobStreamSpec:
        """One trace: its arrival rate sets the load of its preferred machines."""
        mean_size = (2 + top) / 2
        gap = mean_size * mean_run / (load * max(machines, 1))
        return JobStreamSpec(nb_jobs=nb_jobs, mean_interarrival=gap, service="uniform",
                         service_range=(runtime_min, runtime_max), res_range=(2, top),
                         walltime_factor=None,
                         job_types=(JobType(kind, runtime_other_factor=factor),))

    return SynthSpec((stream("mpi", mpi_max, mpi_load, (racks - gpu_racks) * nodes,
                             mpi_other_factor),
                      stream("gpu", gpu_max, gpu_load, gpu_racks * nodes, gpu_other_factor)),
                     nb_res=racks * nodes)


@register("nstep-exp1")
def nstep_exp1(nb_jobs: int = 150) -> SynthSpec:
    """Table 1, Exp1: traceMPI-c2x6-rho0.70 + traceGPU-c2x4-rho0.80, nb_jobs each."""
    return nstep(mpi_max=6, mpi_load=0.7, gpu_max=4, gpu_load=0.8, nb_jobs=nb_jobs)


@register("nstep-exp2")
def nstep_exp2(nb_jobs: int = 150) -> SynthSpec:
    """Table 1, Exp2: traceMPI-c2x4-rho0.80 + traceGPU-c2x4-rho0.80, nb_jobs each."""
    return nstep(mpi_max=4, mpi_load=0.8, gpu_max=4, gpu_load=0.8, nb_jobs=nb_jobs)


@register("nstep-exp3")
def nstep_exp3(nb_jobs: int = 150) -> SynthSpec:
    """Table 1, Exp3 ("rho00.80", read as a light load): both streams c2x4 at rho 0.5.

    ``nb_jobs`` in each stream.
    """
    return nstep(mpi_max=4, mpi_load=0.5, gpu_max=4, gpu_load=0.5, nb_jobs=nb_jobs)


@register("nstep-exp4")
def nstep_exp4(nb_jobs: int = 150) -> SynthSpec:
    """Table 1, Exp4 ("advcc10 rho0.90", read as a heavy load): both c2x4 at rho 0.9.

    ``nb_jobs`` in each stream.
    """
    return nstep(mpi_max=4, mpi_load=0.9, gpu_max=4, gpu_load=0.9, nb_jobs=nb_jobs)


def _coalloc(name: str, clusters: int, jobs: int, bsbw_mbps: float, comp_share: float,
             interarrival: float, nodes: tuple[int, int], profiles: str, comm_phase: float,
             speed: float) -> GeneratedSpec:
    """A co-allocation preset of :mod:`.coalloc_traces` with the given parameters.

    ``profiles``: ``delay`` (``T_E`` seconds: the embedded simulator's job models apply
    the co-allocation slowdown) or ``simgrid`` (parallel tasks sized from ``T_P``,
    ``T_C`` and ``PPBW`` for ``speed`` flop/s nodes: SimGrid's network model applies it
    under real Batsim, :mod:`.coalloc_simgrid`) or ``simgrid-mean`` (the same with
    ``PPBW`` as the mean rate over the whole run).
    """
    from batpolicy.io import coalloc_simgrid as cs
    from batpolicy.io import coalloc_traces as ct

    _count("clusters", clusters)
    _count("jobs", jobs)
    if profiles not in ("delay", "simgrid", "simgrid-mean"):
        raise ConfigError("--param profiles must be delay, simgrid or simgrid-mean, got "
                          f"{profiles!r}")
    spec = ct.preset(name, clusters=clusters, jobs=jobs, bsbw=bsbw_mbps * 1e6 / 8,
                     comp_share=comp_share, interarrival=interarrival, nodes=nodes)
    if profiles == "delay":
        return GeneratedSpec(lambda seed: ct.coalloc_workload(spec, seed))
    if not (speed > 0 and comm_phase > 0):
        raise ConfigError(f"--param speed and comm_phase must be > 0, got {speed} and "
                          f"{comm_phase}")
    return GeneratedSpec(lambda seed: cs.simgrid_profiles(
        ct.coalloc_workload(spec, seed), speed=speed, comm_phase=comm_phase,
        mean=profiles == "simgrid-mean"))


@register("coalloc-4.3")
def coalloc_43(clusters: int = 4, jobs: int = 40_000, bsbw_mbps: float = 500.0,
               comp_share: float = 0.7, interarrival: float = 150.0, nodes_min: int = 10,
               nodes_max: int = 90, profiles: str = "delay", comm_phase: float = 10.0,
               speed: float = 1e9) -> GeneratedSpec:
    """Jones et al. 2005 §4.3: Poisson arrivals per cluster, exp. runtimes (225 s), 10-90 nodes.

    Jobs carry ``origin``, ``comp_share`` (K) and ``ppbw`` (eq. 8 from the BSBW); run on
    ``batpolicy platform multicluster --clusters C --nodes 100``. ``profiles=simgrid``:
    parallel-task profiles whose slowdown SimGrid's network model makes under Batsim
    (``comm_phase`` seconds of communication per iteration, ``speed`` flop/s nodes).
    """
    return _coalloc("coalloc-4.3", clusters, jobs, bsbw_mbps, comp_share, interarrival,
                    (nodes_min, nodes_max), profiles, comm_phase, speed)


@register("coalloc-6.1")
def coalloc_61(clusters: int = 4, jobs: int = 40_000, bsbw_mbps: float = 500.0,
               comp_share: float = 0.7, interarrival: float = 150.0, nodes_min: int = 10,
               nodes_max: int = 50, profiles: str = "delay", comm_phase: float = 10.0,
               speed: float = 1e9) -> GeneratedSpec:
    """Jones et al. 2005 §6.1: as §4.3 with exp. runtimes of 450 s and 10-50 nodes."""
    return _coalloc("coalloc-6.1", clusters, jobs, bsbw_mbps, comp_share, interarrival,
                    (nodes_min, nodes_max), profiles, comm_phase, speed)


@register("tabu-4")
def tabu_4(level: int = 1, nb_jobs: int = 1500, nb_machines: int = 150) -> GeneratedSpec:
    """Klusacek et al. 2007 §4: 1,500 jobs with deadlines at load level 1 (busiest) .. 7.

    The machines (CPU counts, speeds) are drawn from the same seed
    (:func:`~batpolicy.io.deadline_grid.grid_platform`); the workload is sized
    for them: write them with ``batpolicy platform machines --preset tabu-4 --seed S``
    (a campaign run of this preset without a platform gets them in its folder).
    """
    from dataclasses import replace

    from batpolicy.io import deadline_grid as dg

    _count("nb_jobs", nb_jobs)
    _count("nb_machines", nb_machines)
    spec = replace(dg.TABU4, nb_jobs=nb_jobs, nb_machines=nb_machines)
    if not 1 <= level <= len(spec.loads):
        raise ConfigError(f"--param level must be in 1..{len(spec.loads)}, got {level}")
    return GeneratedSpec(lambda seed: dg.grid_workload(spec, seed, level),
                         platform=lambda seed: dg.grid_machines(spec, seed))
