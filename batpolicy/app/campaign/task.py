"""One campaign run: a :class:`~.spec.RunSpec` through the product's readers and simulator.

:func:`run_task` is what a worker executes, in a local process or on a Dask worker: it
reads the inputs with :func:`~batpolicy.io.inputs.load_inputs`, simulates with
the registered policy through the one :class:`~batpolicy.scheduler.dispatch.Dispatcher`,
writes the run's ``jobs.csv``, ``schedule.csv`` and ``metrics.json`` in its own folder,
``code.json`` (the policy's code hash) and last, atomically, ``row.json``: the run's row
of the results table. A run whose ``row.json`` exists and whose ``code.json`` matches the
policy's current code is finished; anything else is redone on the next pass, so a killed
worker or an interrupted campaign loses nothing finished, and a changed policy is rerun.
"""

from __future__ import annotations

import functools
import json
import logging
import os
from pathlib import Path
from typing import Any

from batpolicy.app.campaign.spec import RunSpec, transform_spec, with_seed
from batpolicy.errors import BatpolicyError

log = logging.getLogger(__name__)

#: metrics.json keys measured on the wall clock: kept apart from the results table so that
#: the table of a campaign is the same wherever and however often it runs.
TIMING_KEYS = frozenset({"wall_time_s", "jobs_per_second", "scheduler_time_s",
                         "decisions_per_second"})
ROW_FILE = "row.json"
#: The policy's code hash the run ran with (:func:`~.checks.policy_code_hash`).
CODE_FILE = "code.json"


def run_dir(output: Path, spec: RunSpec) -> Path:
    """The folder of one run's outputs: ``<output>/runs/<run id>``."""
    return output / "runs" / spec.run_id


def read_row(folder: Path) -> dict[str, Any] | None:
    """The row of a finished run, or ``None`` when the run has not finished."""
    try:
        return json.loads((folder / ROW_FILE).read_text())
    except (OSError, ValueError):
        return None


def is_current(folder: Path, spec: RunSpec) -> bool:
    """Whether the run finished with the policy's current code (``code.json``'s hash).

    A run finished before its policy's code changed, or before runs recorded it, is not:
    a rerun of the campaign redoes it.
    """
    from batpolicy.app.campaign.checks import policy_code_hash

    if read_row(folder) is None:
        return False
    try:
        recorded = json.loads((folder / CODE_FILE).read_text()).get("policy_code")
    except (OSError, ValueError, AttributeError):
        return False
    try:
        return recorded == policy_code_hash(spec.policy)
    except KeyError:
        return False


def write_code(folder: Path, spec: RunSpec) -> None:
    """Record the policy's code hash of a run (before its row: see :func:`is_current`)."""
    from batpolicy.app.campaign.checks import policy_code_hash

    _write_atomic(folder / CODE_FILE, {"policy": spec.policy,
                                       "policy_code": policy_code_hash(spec.policy)})


def run_task(spec: RunSpec, output: str) -> dict[str, Any]:
    """Simulate ``spec``, write its outputs under ``output``; return its row.

    A run that fails (bad input, invalid decision) still gets a row, with ``status`` =
    ``"error"`` and the one-line message; its partial outputs stay on disk. Nothing
    here prints: workers stay quiet, the campaign shows the progress.
    """
    from batpolicy.app.pybatsim_cli import make_pybatsim_scheduler, pybatsim_logging
    from batpolicy.io.inputs import InputSpec, load_inputs
    from batpolicy.io.outputs import OutputPaths
    from batpolicy.policies.registry import make_policy
    from batpolicy.provenance import utc_now
    from batpolicy.scheduler.dispatch import Dispatcher
    from batpolicy.simulator.engine.simulator import Simulator
    from batpolicy.simulator.options import SimOptions
    from batpolicy.simulator.pybatsim.loader import is_pybatsim
    from batpolicy.simulator.run import output_layout, run_simulation

    started_at = utc_now()
    folder = run_dir(Path(output), spec)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "run.json").write_text(json.dumps(spec.describe(), indent=2, sort_keys=True))
    row: dict[str, Any] = {"run_id": spec.run_id, "index": spec.index}
    timings: dict[str, Any] = {}
    try:
        params = dict(spec.params)
        if is_pybatsim(spec.policy):  # an unmodified pybatsim scheduler, in-process
            scheduler, describe = make_pybatsim_scheduler(spec.policy, params)
            policy, stats, count = None, None, lambda: scheduler.nb_decisions
        else:
            policy = make_policy(spec.policy, with_seed(spec, params))
            dispatcher = Dispatcher(policy)
            scheduler, stats = dispatcher.handle, policy.stats
            describe = {"policy": spec.policy, "params": dict(policy.params)}
            count = lambda: dispatcher.nb_decisions  # noqa: E731
        flags = dict(spec.flags)
        options = SimOptions(
            dynamic_jobs=bool(flags.get("enable_dynamic_jobs")) or (
                policy is not None and policy.needs_dynamic_jobs),
            acknowledge_dynamic_jobs=bool(flags.get("acknowledge_dynamic_jobs")),
            profile_reuse=bool(flags.get("enable_profile_reuse")),
            forward_profiles=bool(flags.get("forward_profiles")),
            mmax=flags.get("mmax"), energy=bool(flags.get("energy")),
            default_job_model=spec.job_model)
        inputs, platform_path = spec.workloads, spec.platform
        if spec.preset is not None:  # generated here: the run's inputs stay in its folder
            workload_path, drawn_for = _synthesize(spec, folder)
            inputs = (str(workload_path),)
            if platform_path is None and spec.nb_res is None and drawn_for is not None:
                platform_path = str(drawn_for)
                row["platform"] = f"preset:{spec.preset}"
        transform = transform_spec(spec)
        transform.check()
        workloads, platform, events = load_inputs(InputSpec(
            workloads=inputs, platform=platform_path, nb_res=spec.nb_res,
            events=spec.events, lenient=spec.lenient, max_jobs=spec.max_jobs,
            start=spec.start, end=spec.end, transform=transform, size=spec.size,
            extra_machines=spec.extra_machines), read=read_cached)
        extra_columns, groups = output_layout(workloads, platform, options)  # as `simulate`
        with pybatsim_logging(verbose=False):  # pybatsim logs every message at INFO
            report = run_simulation(
                lambda on_record: Simulator(workloads, platform, events=events,
                                            options=options, on_record=on_record),
                scheduler, OutputPaths.in_dir(folder),
                nb_jobs=sum(len(w.jobs) for w in workloads), tau=spec.tau, progress=False,
                describe={**describe,
                          "provenance": _provenance(spec, workloads, platform, started_at)},
                policy_stats=stats, nb_decisions=count,
                extra_columns=extra_columns, groups=groups)
        row["status"] = "ok"
        row.update(_flat_metrics(report.metrics, timings))
    except (BatpolicyError, OSError) as exc:
        row["status"] = "error"
        row["error"] = f"{type(exc).__name__}: {exc}"
        log.debug("run %s failed: %s", spec.run_id, exc)
    row = {**_flat_spec(spec), **row}  # a generated platform keeps its "preset:" name
    _write_atomic(folder / "timings.json", timings)
    try:
        write_code(folder, spec)
    except KeyError:  # an unknown policy: its row says so
        pass
    _write_atomic(folder / ROW_FILE, row)
    return row


def read_cached(path: str, name: str, spec: Any) -> Any:
    """The workload file read as :func:`~batpolicy.io.inputs.read_workload` does.

    From this process's small cache when the same file (same size and time of change)
    was read with the same selection: a campaign's many runs on one trace (weeks, load
    factors, policies) read it once per worker instead of once per run.
    """
    from batpolicy.io.transform import TransformSpec

    stat = os.stat(path)
    # what reading depends on: the selection, and whether the log's waits are kept (weeks)
    key = (path, name, stat.st_size, stat.st_mtime_ns, spec.lenient, spec.max_jobs,
           spec.start, spec.end, spec.status_filter, spec.size,
           TransformSpec(weeks=1) if spec.transform.weeks is not None else TransformSpec())
    return _read_cached(*key)


@functools.lru_cache(maxsize=2)
def _read_cached(path: str, name: str, _size: int, _mtime: int, lenient: bool,
                 max_jobs: int | None, start: float | None, end: float | None,
                 status_filter: frozenset[int] | None, size: str, transform: Any) -> Any:
    from batpolicy.io.inputs import InputSpec, read_workload

    return read_workload(path, name, InputSpec(
        lenient=lenient, max_jobs=max_jobs, start=start, end=end, status_filter=status_filter,
        size=size, transform=transform))


def _synthesize(spec: RunSpec, folder: Path) -> tuple[Path, Path | None]:
    """Write the run's synthetic workload (preset, its parameters, the run's seed).

    A preset drawn for particular machines (``tabu-4``) also writes them, as
    ``platform.xml``; the second path is ``None`` for the others.
    """
    from batpolicy.io.batsim_json import write_batsim_workload
    from batpolicy.io.presets import build_workload, preset
    from batpolicy.platforms.generators import machines, write_platform

    built = preset(spec.preset, **dict(spec.preset_params))
    path = folder / "workload.json"
    write_batsim_workload(build_workload(built, spec.seed or 0), path)
    make = getattr(built, "platform", None)
    if make is None:
        return path, None
    return path, write_platform(machines(make(spec.seed or 0)), folder / "platform.xml")


def _flat_spec(spec: RunSpec) -> dict[str, Any]:
    """The run's defining values as table columns (``param.<name>`` for parameters)."""
    desc = spec.describe()
    row: dict[str, Any] = {
        "policy": spec.policy, "label": spec.label, "seed": spec.seed,
        "workload": (f"preset:{spec.preset}" if spec.preset else
                     ";".join(os.path.basename(w) for w in spec.workloads) or "bundled"),
        "platform": os.path.basename(spec.platform) if spec.platform else
        (f"{spec.nb_res} machines" if spec.nb_res else ""),
        "job_model": spec.job_model, "tau": spec.tau, "max_jobs": spec.max_jobs,
        "start": spec.start, "end": spec.end,
    }
    for key, value in desc["params"].items():
        row[f"param.{key}"] = value
    for key, value in desc["flags"].items():
        row[f"flag.{key}"] = value
    for key, value in desc.get("preset_params", {}).items():
        row[f"preset.{key}"] = value
    for key, value in desc.get("transform", {}).items():
        row[f"transform.{key}"] = value
    if spec.extra_machines is not None:
        row["extra_machines"] = spec.extra_machines
    return row


def _flat_metrics(metrics: dict[str, Any], timings: dict[str, Any]) -> dict[str, Any]:
    """Scalar metrics as columns; ``policy_stats`` as ``stat.<key>``; clock figures apart."""
    out: dict[str, Any] = {}
    for key, value in metrics.items():
        if key in ("policy", "params", "workloads", "platform", "inputs_skipped"):
            continue
        if key == "provenance" and isinstance(value, dict):
            out.update(_flat_provenance(value, timings))
            continue
        if key == "policy_stats" and isinstance(value, dict):
            for skey, svalue in _nested(value, "stat."):
                if _is_timing(skey):
                    timings[skey] = svalue
                else:
                    out[skey] = svalue
            continue
        if _is_timing(key):
            timings[key] = value
        elif isinstance(value, (int, float, str, bool)) or value is None:
            out[key] = value
    return out


def _provenance(spec: RunSpec, workloads: list[Any], platform: Any,
                started_at: str) -> dict[str, Any]:
    """The run's ``provenance`` (:mod:`batpolicy.provenance`), as ``simulate`` records it.

    Its inputs as read, the campaign's command line, the run's transforms and seeds.
    """
    import sys

    from batpolicy.provenance import provenance

    inputs = [(w.name, w.source) for w in workloads if w.source and Path(w.source).is_file()]
    if platform.source:
        inputs.append(("platform", platform.source))
    inputs += [("events", path) for path in spec.events]
    desc = spec.describe()
    options = {key: desc.get(key) for key in ("nb_res", "max_jobs", "start", "end", "lenient",
                                              "size", "extra_machines", "job_model")}
    options["transform"] = desc.get("transform", {})
    seeds = {"seed": spec.seed} if spec.seed is not None else {}
    if "sample_seed" in options["transform"]:
        seeds["sample_seed"] = options["transform"]["sample_seed"]
    return provenance(argv=sys.argv, inputs=inputs, started_at=started_at, options=options,
                      seeds=seeds)


def _flat_provenance(prov: dict[str, Any], timings: dict[str, Any]) -> dict[str, Any]:
    """``prov.*`` columns: the code and each input's digest; where and when apart.

    The interpreter and the start time differ between hosts and runs: they go with the
    timings (``timings.csv``), so the results table stays the same wherever it is made.

    >>> timings = {}
    >>> _flat_provenance({"batpolicy": {"version": "1", "commit": None, "dirty": None},
    ...                   "inputs": [{"role": "w0", "sha256": "ab", "size": 2}],
    ...                   "interpreter": "CPython", "started_at": "t"}, timings)
    {'prov.version': '1', 'prov.commit': None, 'prov.dirty': None, 'prov.w0_sha256': 'ab'}
    >>> sorted(timings)
    ['prov.interpreter', 'prov.started_at']
    """
    code = prov.get("batpolicy", {})
    out = {f"prov.{key}": code.get(key) for key in ("version", "commit", "dirty")}
    for record in prov.get("inputs", []):
        out[f"prov.{record['role']}_sha256"] = record.get("sha256")
    timings["prov.interpreter"] = prov.get("interpreter")
    timings["prov.started_at"] = prov.get("started_at")
    return out


def _nested(stats: dict[str, Any], prefix: str) -> list[tuple[str, Any]]:
    """Scalar values of a policy's stats, nested tables flattened with dotted keys.

    >>> _nested({"n": 1, "user_jobs": {"mean": 2.0, "ids": [1]}}, "stat.")
    [('stat.n', 1), ('stat.user_jobs.mean', 2.0)]
    """
    out: list[tuple[str, Any]] = []
    for key, value in stats.items():
        if isinstance(value, dict):
            out.extend(_nested(value, f"{prefix}{key}."))
        elif isinstance(value, (int, float, str, bool)) or value is None:
            out.append((f"{prefix}{key}", value))
    return out


def _is_timing(key: str) -> bool:
    """Wall-clock figures (milliseconds, rates, wall times), not simulated ones.

    A policy timer's figures (``stat.decision_time_ms.p99``, docs/metrics.md) are
    timings; their ``.count`` is not (it counts decisions, the same every run).

    >>> _is_timing("stat.decision_time_ms.p99"), _is_timing("stat.decision_time_ms.count")
    (True, False)
    >>> _is_timing("nb_decisions"), _is_timing("wall_time_s")
    (False, True)
    """
    low = key.lower()
    if "_ms." in low:
        return not low.endswith(".count")
    return low in TIMING_KEYS or "wall" in low or low.endswith(("_ms", "per_second"))


def _write_atomic(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
    tmp.replace(path)
