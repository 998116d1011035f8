"""Campaign files: a TOML grid or list of runs, expanded into :class:`RunSpec` tasks.

A campaign is what a scheduling researcher's day is made of: policies × parameters ×
workloads × platforms × transforms × seeds, each run once in the embedded simulator,
each row of one results table. The file::

    [campaign]
    name = "redirection"           # results go to <output>/ (default:
    output = "results/redirection" # ./campaign-results/<name>); relative to this file

    [defaults]                     # every run, unless a grid says otherwise
    tau = 60
    job_model = "profile"

    [[grid]]                       # the cartesian product of every list
    policy = "redirection"
    workload = ["KTH.swf.gz", "RICC.swf.gz"]
    params = { theta = [1, 2, 5], alpha = [0.1, 0.15] }
    seed = [1, 2, 3]

    [[run]]                        # or single runs, listed one by one
    policy = "easy"
    workload = "KTH.swf.gz"

Keys of a run (scalars, or lists in a ``[[grid]]``): ``policy``, ``params`` (a table of
policy parameters), ``workload`` (a path, or a list of paths given as one run's
workloads with ``workloads``) or ``preset`` (a synthetic workload preset, generated
with the run's ``seed`` and ``preset_params``), ``platform``, ``nb_res``, ``events``,
``max_jobs``, ``job_model``,
``start``, ``end``, ``lenient``, ``size`` (SWF: ``requested`` or ``allocated``),
``transform`` (a table of the workload transforms of ``batpolicy workload transform``:
``load``, ``weeks``, ``min_util``, ``week_index``, ``sample``, ``sample_jobs``,
``sample_seed``, ``exact_walltime``; lists vary in a grid like ``params``),
``extra_machines`` (grow N identical machines to N + ⌈F·N⌉), ``variants`` (in a grid:
tables of keys that vary together, see :func:`_expand`), ``tau``, ``seed`` (handed to the
policy as parameter ``seed`` when it declares one, and recorded), ``label`` (free text),
and Batsim's flags ``enable_dynamic_jobs``, ``acknowledge_dynamic_jobs``,
``enable_profile_reuse``, ``forward_profiles``, ``mmax``, ``energy`` (``-E``). Relative
paths are relative to the campaign file.

Every run has a stable id (a hash of what defines it), so a rerun finds what is done.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from batpolicy.errors import InputError

#: Every key a run may have, with its type check.
RUN_KEYS: Mapping[str, type | tuple[type, ...]] = {
    "policy": str, "params": dict, "workload": str, "workloads": list, "platform": str,
    "nb_res": int, "events": list, "max_jobs": int, "start": (int, float),
    "end": (int, float), "lenient": bool, "job_model": str, "tau": (int, float),
    "seed": int, "label": str, "preset": str, "preset_params": dict,
    "transform": dict, "size": str, "extra_machines": (int, float), "variants": list,
    "enable_dynamic_jobs": bool,
    "acknowledge_dynamic_jobs": bool, "enable_profile_reuse": bool,
    "forward_profiles": bool, "mmax": int, "energy": bool,
}


@dataclass(frozen=True, slots=True)
class RunSpec:
    """One simulation of a campaign: everything that defines it, hashable and picklable."""

    policy: str
    params: tuple[tuple[str, Any], ...] = ()
    workloads: tuple[str, ...] = ()
    platform: str | None = None
    nb_res: int | None = None
    events: tuple[str, ...] = ()
    max_jobs: int | None = None
    start: float | None = None
    end: float | None = None
    lenient: bool = False
    job_model: str = "profile"
    tau: float = 10.0
    seed: int | None = None
    label: str = ""
    flags: tuple[tuple[str, Any], ...] = ()
    preset: str | None = None
    preset_params: tuple[tuple[str, Any], ...] = ()
    transform: tuple[tuple[str, Any], ...] = ()
    size: str = "requested"
    extra_machines: float | None = None
    index: int = field(default=0, compare=False)

    def describe(self) -> dict[str, Any]:
        """What defines the run, as JSON-native values (the id hashes exactly this)."""
        return {"policy": self.policy, "params": dict(self.params),
                "workloads": list(self.workloads), "platform": self.platform,
                "nb_res": self.nb_res, "events": list(self.events),
                "max_jobs": self.max_jobs, "start": self.start, "end": self.end,
                "lenient": self.lenient, "job_model": self.job_model, "tau": self.tau,
                "seed": self.seed, "label": self.label, "flags": dict(self.flags),
                **({"preset": self.preset, "preset_params": dict(self.preset_params)}
                   if self.preset else {}),
                # only when set: the ids of runs that do not use them stay as they were
                **({"transform": dict(self.transform)} if self.transform else {}),
                **({"size": self.size} if self.size != "requested" else {}),
                **({"extra_machines": self.extra_machines}
                   if self.extra_machines is not None else {})}

    @property
    def run_id(self) -> str:
        """Stable id: 12 hex digits of the SHA-1 of :meth:`describe` (paths as given).

        >>> RunSpec("easy", workloads=("w.json",)).run_id == RunSpec("easy",
        ...     workloads=("w.json",), index=3).run_id
        True
        """
        text = json.dumps(self.describe(), sort_keys=True, default=str)
        return hashlib.sha1(text.encode()).hexdigest()[:12]


@dataclass(frozen=True, slots=True)
class Campaign:
    """A parsed campaign file: its name, output folder and runs in file order."""

    name: str
    source: Path
    output: Path
    runs: tuple[RunSpec, ...]


def load_campaign(path: str | Path, output: str | Path | None = None) -> Campaign:
    """Read and expand a campaign file; errors name the file and the offending key."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except OSError as exc:
        raise InputError(f"cannot read campaign file: {exc.strerror or exc}",
                         path=str(path)) from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML: {exc}", path=str(path)) from None
    return parse_campaign(data, path, output)


def parse_campaign(data: Mapping[str, Any], path: Path,
                   output: str | Path | None = None) -> Campaign:
    """Expand the ``[[grid]]`` and ``[[run]]`` tables of a parsed campaign file."""
    unknown = sorted(set(data) - {"campaign", "defaults", "grid", "run"})
    if unknown:
        raise InputError(f"unknown table(s) {', '.join(unknown)} (expected campaign, "
                         "defaults, grid, run)", path=str(path))
    head = dict(data.get("campaign", {}))
    name = str(head.pop("name", path.stem))
    out = head.pop("output", None)
    if head:
        raise InputError(f"[campaign] has unknown key(s) {', '.join(sorted(head))}",
                         path=str(path))
    base = path.resolve().parent
    if output is not None:
        out_dir = Path(output)
    elif out is not None:
        out_dir = base / str(out)
    else:
        out_dir = default_output(name)
    defaults = dict(data.get("defaults", {}))
    _check_keys(defaults, "[defaults]", path, grid=False)
    raw: list[dict[str, Any]] = []
    for i, grid in enumerate(_tables(data, "grid", path)):
        _check_keys(grid, f"[[grid]] #{i + 1}", path)
        raw.extend(_expand(grid))
    for i, run in enumerate(_tables(data, "run", path)):
        _check_keys(run, f"[[run]] #{i + 1}", path, grid=False)
        raw.append(dict(run))
    if not raw:
        raise InputError("no run: add a [[grid]] or a [[run]] table", path=str(path))
    runs, seen = [], set()
    for entry in raw:
        spec = _spec(_merged(defaults, entry), base, path, len(runs))
        if spec.run_id in seen:
            continue  # the same run listed twice is run once
        seen.add(spec.run_id)
        runs.append(spec)
    return Campaign(name, path, out_dir, tuple(runs))


#: Where a campaign writes when neither ``--output-dir`` nor ``[campaign] output`` says.
DEFAULT_OUTPUT = "campaign-results"


def default_output(name: str) -> Path:
    """``./campaign-results/<name>`` under the current folder, never beside the file.

    A campaign file shipped in a checkout (``bench/campaigns/*.toml``) sits next to
    committed results: writing beside it would dirty the checkout, so the default is
    the folder the user runs from (``campaign-results/`` is git-ignored in this
    repository).

    >>> default_output("nstep_table1") == Path.cwd() / "campaign-results" / "nstep_table1"
    True
    """
    return Path.cwd() / DEFAULT_OUTPUT / name


def _tables(data: Mapping[str, Any], key: str, path: Path) -> list[dict[str, Any]]:
    tables = data.get(key, [])
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise InputError(f"'{key}' must be an array of tables ([[{key}]])", path=str(path))
    return tables


def _check_keys(table: Mapping[str, Any], where: str, path: Path, *, grid: bool = True) -> None:
    """Unknown keys, and ``variants`` outside a grid or not made of tables, are errors."""
    unknown = sorted(set(table) - set(RUN_KEYS))
    if unknown:
        raise InputError(f"{where}: unknown key(s) {', '.join(unknown)} (known: "
                         f"{', '.join(RUN_KEYS)})", path=str(path))
    if "variants" not in table:
        return
    if not grid:
        raise InputError(f"{where}: 'variants' belongs in a [[grid]]", path=str(path),
                         field="variants")
    for group in _variant_axes(table["variants"]):
        if not group or not all(isinstance(v, dict) for v in group):
            raise InputError(f"{where}: 'variants' must be a list of tables (or a list of "
                             "such lists)", path=str(path), field="variants")
        for variant in group:
            _check_keys(variant, f"{where} variant", path)


def _variant_axes(value: list[Any]) -> list[list[Any]]:
    """``variants`` as its axes: a list of tables is one axis, a list of such lists several.

    >>> _variant_axes([{"a": 1}, {"a": 2}]), _variant_axes([[{"a": 1}], [{"b": 2}]])
    ([[{'a': 1}, {'a': 2}]], [[{'a': 1}], [{'b': 2}]])
    """
    return value if value and all(isinstance(v, list) for v in value) else [value]


#: Run keys whose value is a table merged key by key (defaults, variants, grids).
TABLE_KEYS = ("params", "preset_params", "transform")


def _merged(*parts: Mapping[str, Any]) -> dict[str, Any]:
    """Later parts override earlier ones; the tables of :data:`TABLE_KEYS` merge key by key.

    >>> _merged({"tau": 1, "params": {"a": 1}}, {"params": {"b": 2}})
    {'tau': 1, 'params': {'a': 1, 'b': 2}}
    """
    run: dict[str, Any] = {}
    for part in parts:
        for key, value in part.items():
            if key in TABLE_KEYS:
                run[key] = {**run.get(key, {}), **dict(value)}
            else:
                run[key] = value
    return run


def _expand(grid: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """Cartesian product of every list value (params' lists included), in key order.

    ``variants`` is a list of tables of keys that vary *together* (one axis), or a list
    of such lists (one axis each); a variant's own lists vary too.

    >>> [r["seed"] for r in _expand({"policy": "easy", "seed": [1, 2]})]
    [1, 2]
    >>> len(list(_expand({"policy": ["a", "b"], "params": {"x": [1, 2, 3]}})))
    6
    >>> [(r["params"]["alpha"], r["extra_machines"]) for r in _expand({"policy": "r",
    ...     "variants": [{"params": {"alpha": 0.1}, "extra_machines": 0.1},
    ...                  {"params": {"alpha": 0.2}, "extra_machines": 0.2}]})]
    [(0.1, 0.1), (0.2, 0.2)]
    """
    axes: list[tuple[tuple[str, ...], list[Any]]] = []
    for key, value in grid.items():
        if key in TABLE_KEYS:
            for pkey, pvalue in dict(value).items():
                axes.append(((key, pkey), pvalue if isinstance(pvalue, list) else [pvalue]))
        elif key == "variants":
            for group in _variant_axes(value):
                axes.append((("variants",),
                             [run for variant in group for run in _expand(variant)]))
        elif key in ("workloads", "events"):  # already lists per run; a list of lists varies
            if value and all(isinstance(v, list) for v in value):
                axes.append(((key,), list(value)))
            else:
                axes.append(((key,), [value]))
        else:
            axes.append(((key,), value if isinstance(value, list) else [value]))
    for combo in itertools.product(*(values for _, values in axes)):
        run: dict[str, Any] = {"params": {}}
        variants: list[dict[str, Any]] = []
        for (keys, _), value in zip(axes, combo, strict=True):
            if keys[0] == "variants":
                variants.append(value)
            elif keys[0] in TABLE_KEYS:
                run.setdefault(keys[0], {})[keys[1]] = value
            else:
                run[keys[0]] = value
        yield _merged(run, *variants)


def _spec(run: Mapping[str, Any], base: Path, path: Path, index: int) -> RunSpec:
    where = f"run #{index + 1}"
    for key, value in run.items():
        kind = RUN_KEYS[key]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise InputError(f"{where}: '{key}' = {value!r} has the wrong type",
                             path=str(path), field=key)
    if "policy" not in run:
        raise InputError(f"{where}: no 'policy'", path=str(path), field="policy")
    if "preset" in run and ("workload" in run or "workloads" in run):
        raise InputError(f"{where}: give a workload or a preset, not both", path=str(path),
                         field="preset")

    def resolve(p: str) -> str:
        """A path relative to the campaign file's folder, made absolute."""
        return str((base / p).resolve()) if not Path(p).is_absolute() else p

    workloads = [run["workload"]] if "workload" in run else list(run.get("workloads", []))
    flags = {k: run[k] for k in ("enable_dynamic_jobs", "acknowledge_dynamic_jobs",
                                 "enable_profile_reuse", "forward_profiles", "mmax", "energy")
             if k in run}
    params = dict(run.get("params", {}))
    return RunSpec(
        policy=run["policy"], params=tuple(sorted(params.items())),
        workloads=tuple(resolve(w) for w in workloads),
        platform=resolve(run["platform"]) if "platform" in run else None,
        nb_res=run.get("nb_res"), events=tuple(resolve(e) for e in run.get("events", [])),
        max_jobs=run.get("max_jobs"),
        start=float(run["start"]) if "start" in run else None,
        end=float(run["end"]) if "end" in run else None,
        lenient=bool(run.get("lenient", False)), job_model=str(run.get("job_model", "profile")),
        tau=float(run.get("tau", 10.0)), seed=run.get("seed"), label=str(run.get("label", "")),
        flags=tuple(sorted(flags.items())), preset=run.get("preset"),
        preset_params=tuple(sorted(dict(run.get("preset_params", {})).items())),
        transform=_transform(run.get("transform", {}), where, path),
        size=_size(run.get("size", "requested"), where, path),
        extra_machines=(float(run["extra_machines"]) if "extra_machines" in run else None),
        index=index)


#: The keys of a run's ``transform`` table: :class:`TransformSpec`'s fields and types.
TRANSFORM_KEYS: Mapping[str, type | tuple[type, ...]] = {
    "load": (int, float), "weeks": int, "min_util": (int, float), "week_index": int,
    "sample": (int, float), "sample_jobs": int, "sample_seed": int, "exact_walltime": bool,
}


def _transform(table: Mapping[str, Any], where: str, path: Path) -> tuple[tuple[str, Any], ...]:
    """The run's transform table, checked key by key (errors name the key)."""
    for key, value in table.items():
        kind = TRANSFORM_KEYS.get(key)
        if kind is None:
            raise InputError(f"{where}: unknown transform key '{key}' (known: "
                             f"{', '.join(TRANSFORM_KEYS)})", path=str(path), field="transform")
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise InputError(f"{where}: transform '{key}' = {value!r} has the wrong type",
                             path=str(path), field="transform")
    return tuple(sorted(table.items()))


def _size(value: str, where: str, path: Path) -> str:
    from batpolicy.io.swf import SIZE_FIELDS

    if value not in SIZE_FIELDS:
        raise InputError(f"{where}: size = {value!r}, expected one of {', '.join(SIZE_FIELDS)}",
                         path=str(path), field="size")
    return value


def transform_spec(spec: RunSpec) -> Any:
    """The run's :class:`~batpolicy.io.transform.TransformSpec`."""
    from batpolicy.io.transform import TransformSpec

    table = dict(spec.transform)
    seed = table.pop("sample_seed", 0)
    return TransformSpec(**table, seed=seed)


def with_seed(spec: RunSpec, params: dict[str, Any]) -> dict[str, Any]:
    """Give the policy the run's seed when it declares a ``seed`` parameter."""
    from batpolicy.policies.registry import available_policies

    cls = available_policies().get(spec.policy)
    if spec.seed is not None and cls is not None and "seed" not in params and \
            any(p.name == "seed" for p in cls.parameters):
        return {**params, "seed": spec.seed}
    return params
