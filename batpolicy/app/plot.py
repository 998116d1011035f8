"""``batpolicy plot``: pictures of one run or of a whole campaign (matplotlib, optional).

- :func:`gantt`: one run's ``jobs.csv`` as a Gantt chart (machines × time), with the
  platform's machine groups as bands when the platform is known;
- :func:`distributions`: waiting time and bounded slowdown per policy (empirical CDFs)
  over the runs of a campaign or over run folders;
- :func:`sweep`: a metric against one parameter, one line per policy, the band spanning
  the seeds (and any other varied value);
- :func:`heatmap`: a metric over two parameters, e.g. redirection's θ × α (Faure et al.,
  IPDPSW 2020, Fig. 2) or co-allocation's BSBW × LSLT;
- :func:`tradeoff`: one point per run, one metric against another (mean bounded
  slowdown against consumed energy), a curve per setting ordered by a parameter.

Figures are written as PNG or SVG (by the output's suffix). Needs the ``plot`` extra
(``pip install 'batpolicy[plot]'``).
"""

from __future__ import annotations

import csv
import json
import logging
import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from batpolicy.errors import ConfigError, InputError

log = logging.getLogger(__name__)


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise ConfigError("plots need matplotlib: pip install 'batpolicy[plot]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _read_csv(path: Path) -> list[dict[str, str]]:
    try:
        with path.open(newline="") as f:
            return list(csv.DictReader(f))
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", path=str(path)) from None


def _number(text: str | None) -> float | None:
    """A table cell as a number, or ``None`` when empty or not numeric.

    >>> _number("2.5"), _number(""), _number("easy")
    (2.5, None, None)
    """
    try:
        return float(text) if text not in (None, "") else None
    except ValueError:
        return None


def intervals(text: str) -> list[tuple[int, int]]:
    """Batsim's interval-set string as inclusive (first, last) pairs.

    >>> intervals("0-3 7 9-10")
    [(0, 3), (7, 7), (9, 10)]
    """
    out = []
    for part in text.split():
        lo, _, hi = part.partition("-")
        out.append((int(lo), int(hi or lo)))
    return out


def _save(fig: Any, output: Path) -> Path:
    if output.suffix.lower() not in (".png", ".svg"):
        raise ConfigError(f"plot output must end in .png or .svg, got {output.name!r}")
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create the folder {output.parent}: "
                          f"{exc.strerror or exc}") from None
    try:
        fig.savefig(output, dpi=150, bbox_inches="tight")
    except OSError as exc:
        raise ConfigError(f"cannot write {output}: {exc.strerror or exc}") from None
    log.info("wrote %s", output)
    return output


def _jobs_csv(path: Path) -> Path:
    return path / "jobs.csv" if path.is_dir() else path


def gantt(run: Path, output: Path, *, platform: str | None = None,
          title: str | None = None) -> Path:
    """Gantt chart of one run: each job a box over its machines from start to finish.

    ``platform`` (SimGrid XML) adds the machine groups as shaded bands; without it the
    run's ``metrics.json`` names the platform if it was a file.
    """
    plt = _pyplot()  # first: it says which extra to install when matplotlib is missing
    from matplotlib.collections import PolyCollection

    jobs = _read_csv(_jobs_csv(run))
    boxes, owners = gantt_boxes(jobs)
    if not boxes:  # an empty picture would look like a drawing of nothing that ran
        raise InputError("no job to draw: " + (f"none of its {len(jobs)} job(s) ran (no "
                         "allocated_resources)" if jobs else "jobs.csv lists no job"),
                         path=str(_jobs_csv(run)))
    cmap = plt.get_cmap("tab20")
    colours = [cmap(i % 20) for i in owners]
    top = max((box[2][1] for box in boxes), default=0)
    fig, ax = plt.subplots(figsize=(12, 6))
    groups = _groups(run, platform)
    for k, (name, lo, hi) in enumerate(groups):
        ax.axhspan(lo, hi + 1, color="0.92" if k % 2 else "0.97", zorder=0)
        ax.text(0, (lo + hi + 1) / 2, f" {name}", va="center", fontsize=7, color="0.4")
        top = max(top, hi + 1)
    ax.add_collection(PolyCollection(boxes, facecolors=colours, edgecolors="black",
                                     linewidths=0.2))
    ax.autoscale_view()
    ax.set_ylim(0, max(top, 1))
    ax.set_xlabel("time (s)")
    ax.set_ylabel("machine")
    ax.set_title(title or f"{_jobs_csv(run)} ({len(jobs)} jobs)")
    return _save(fig, output)


def gantt_boxes(jobs: Iterable[dict[str, str]]) -> tuple[list[list[tuple[float, float]]],
                                                          list[int]]:
    """One rectangle (4 corners) per allocated interval of each job that ran, and its job.

    >>> boxes, owners = gantt_boxes([{"starting_time": "0", "finish_time": "5",
    ...                               "allocated_resources": "0-1 4"}])
    >>> boxes[1], owners
    ([(0.0, 4), (5.0, 4), (5.0, 5), (0.0, 5)], [0, 0])
    """
    boxes, owners = [], []
    for i, job in enumerate(jobs):
        start, finish = _number(job.get("starting_time")), _number(job.get("finish_time"))
        alloc = job.get("allocated_resources", "")
        if start is None or finish is None or not alloc:
            continue
        for lo, hi in intervals(alloc):
            boxes.append([(start, lo), (finish, lo), (finish, hi + 1), (start, hi + 1)])
            owners.append(i)
    return boxes, owners


def _groups(run: Path, platform: str | None) -> list[tuple[str, int, int]]:
    """(group name, first id, last id) of the platform's machine groups, if known."""
    if platform is None:
        metrics = (run if run.is_dir() else run.parent) / "metrics.json"
        try:
            platform = json.loads(metrics.read_text()).get("platform")
        except (OSError, ValueError):
            platform = None
        if not platform or not Path(platform).is_file():
            return []
    from batpolicy.platforms.xml import read_platform

    out = []
    for name, ids in read_platform(platform).clusters().items():
        if name is not None and ids:
            out.append((str(name), min(ids), max(ids)))
    return out if len(out) > 1 else []


def _runs(paths: Sequence[Path]) -> list[tuple[str, Path]]:
    """(policy, run folder) of campaign folders (``runs/*``) or run folders given."""
    found = []
    for path in paths:
        folders = sorted((path / "runs").glob("*")) if (path / "runs").is_dir() else [path]
        for folder in folders:
            metrics = folder / "metrics.json"
            try:
                policy = json.loads(metrics.read_text()).get("policy", folder.name)
            except (OSError, ValueError):
                continue
            if (folder / "jobs.csv").is_file():
                found.append((str(policy), folder))
    if not found:
        raise InputError("no run folder with jobs.csv and metrics.json found",
                         path=", ".join(map(str, paths)))
    return found


def distributions(paths: Sequence[Path], output: Path, *, tau: float = 10.0) -> Path:
    """Empirical CDFs of waiting time and bounded slowdown, one line per policy."""
    if not (math.isfinite(tau) and tau > 0):  # bsld divides by max(run time, tau)
        raise ConfigError(f"--tau must be a finite number of seconds > 0, got {tau:g}")
    plt = _pyplot()
    waits: dict[str, list[float]] = defaultdict(list)
    bslds: dict[str, list[float]] = defaultdict(list)
    for policy, folder in _runs(paths):
        for job in _read_csv(folder / "jobs.csv"):
            wait, run = _number(job.get("waiting_time")), _number(job.get("execution_time"))
            if wait is None or run is None:
                continue
            waits[policy].append(wait)
            bslds[policy].append(max((wait + run) / max(run, tau), 1.0))
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for ax, data, label in ((axes[0], waits, "waiting time (s)"),
                            (axes[1], bslds, f"bounded slowdown (τ = {tau:g} s)")):
        for policy in sorted(data):
            values = sorted(data[policy])
            n = len(values)
            ax.step(values, [(i + 1) / n for i in range(n)], where="post",
                    label=f"{policy} (mean {statistics.fmean(values):.3g})")
        ax.set_xscale("symlog")
        ax.set_xlabel(label)
        ax.set_ylabel("fraction of jobs")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("distributions per policy")
    return _save(fig, output)


def _results(path: Path) -> list[dict[str, str]]:
    table = path / "results.csv" if path.is_dir() else path
    rows = [r for r in _read_csv(table) if r.get("status", "ok") == "ok"]
    if not rows:
        raise InputError("no finished run in the results table", path=str(table))
    return rows


def _column(rows: Iterable[dict[str, str]], name: str, path: Path) -> str:
    rows = list(rows)
    for candidate in (name, f"param.{name}", f"stat.{name}"):
        if candidate in rows[0]:
            return candidate
    raise ConfigError(f"{path}: no column '{name}' (columns: {', '.join(rows[0])})")


def _numeric(rows: Iterable[dict[str, str]], column: str, path: Path, hint: str) -> None:
    """Refuse ``column`` when it has values but not one number (``--line``, ``--heatmap``).

    Non-numeric cells are otherwise skipped as missing, which left "no row has both ..."
    as the only message for a column such as ``param.mode`` (``soft``, ``hard``).

    >>> _numeric([{"param.mode": "soft"}], "param.mode", Path("r.csv"), "use --bars")
    Traceback (most recent call last):
    batpolicy.errors.ConfigError: r.csv: column 'param.mode' is not numeric (e.g. 'soft'): ...
    """
    cells = [r.get(column) or "" for r in rows]
    if any(_number(cell) is not None for cell in cells):
        return
    example = next((cell for cell in cells if cell), None)
    if example is not None:
        raise ConfigError(f"{path}: column '{column}' is not numeric (e.g. {example!r}): "
                          f"{hint}")


def select(rows: list[dict[str, str]], where: Sequence[str], path: Path
           ) -> list[dict[str, str]]:
    """The rows matching every ``COLUMN=VALUE[,VALUE...]`` of ``where`` (any listed value).

    Numbers compare as numbers (``1`` matches ``1.0``); an empty value matches the runs
    without one (``lslt=1.0,`` keeps the baselines that have no LSLT); the column may be
    named without its ``param.`` / ``stat.`` prefix. An empty selection is an error.

    >>> rows = [{"label": "a1", "param.lslt": "1.0"}, {"label": "b1", "param.lslt": "0.6"}]
    >>> [r["label"] for r in select(rows, ["lslt=1", "label=a1,b1"], Path("r.csv"))]
    ['a1']
    """
    for clause in where:
        name, sep, values = clause.partition("=")
        if not sep or not name.strip():
            raise ConfigError(f"--where wants COLUMN=VALUE[,VALUE...], got {clause!r}")
        column = _column(rows, name.strip(), path)
        wanted = [v.strip() for v in values.split(",")]
        numbers = {_number(v) for v in wanted} - {None}

        def keep(cell: str, wanted: list[str] = wanted, numbers: set = numbers) -> bool:
            """Whether ``cell`` is one of the wanted values (as text or as a number)."""
            return cell in wanted or (_number(cell) in numbers if numbers else False)

        rows = [r for r in rows if keep(r.get(column, ""))]
        if not rows:
            raise InputError(f"no run matches --where {clause!r}", path=str(path))
    return rows


def sweep_series(rows: Iterable[dict[str, str]], xcol: str, ycol: str, bcol: str
                 ) -> tuple[dict[str, dict[float, list[float]]], dict[str, list[float]]]:
    """``{series: {x: [y...]}}`` and the flat references ``{series: [y...]}`` (no x).

    >>> rows = [{"l": "ff", "x": "250", "y": "3"}, {"l": "ff", "x": "250", "y": "5"},
    ...         {"l": "mig", "x": "", "y": "7"}, {"l": "ff", "x": "500", "y": "nan"}]
    >>> series, flat = sweep_series(rows, "x", "y", "l")
    >>> {k: dict(v) for k, v in series.items()}, dict(flat)
    ({'ff': {250.0: [3.0, 5.0]}}, {'mig': [7.0]})
    """
    series: dict[str, dict[float, list[float]]] = defaultdict(lambda: defaultdict(list))
    flat: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        x, y = _number(row.get(xcol)), _number(row.get(ycol))
        if y is None or not math.isfinite(y):
            continue
        if x is None:
            flat[row.get(bcol, "")].append(y)
        else:
            series[row.get(bcol, "")][x].append(y)
    return series, flat


def sweep(path: Path, parameter: str, metric: str, output: Path, *, by: str = "policy",
          where: Sequence[str] = (), log_y: bool = False, title: str | None = None) -> Path:
    """Mean of ``metric`` against ``parameter`` per value of ``by``, band = min-max.

    Runs without a value of ``parameter`` (a baseline that does not have it, e.g.
    co-allocation's Migration only against the BSBW, seed 003 Figs. 9-11 and 22-27)
    are drawn as dashed horizontal lines: references independent of ``parameter``.
    """
    plt = _pyplot()
    rows = select(_results(path), where, path)
    xcol, ycol = _column(rows, parameter, path), _column(rows, metric, path)
    bcol = _column(rows, by, path)
    _numeric(rows, xcol, path, f"--line draws against a numeric parameter; to compare its "
             f"values, draw one bar per value: --bars --by {parameter} --metric {metric}")
    _numeric(rows, ycol, path, "--metric must name a numeric column")
    series, flat = sweep_series(rows, xcol, ycol, bcol)
    if not series:
        raise InputError(f"no row has both '{xcol}' and '{ycol}'", path=str(path))
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name in sorted(series):
        xs = sorted(series[name])
        means = [statistics.fmean(series[name][x]) for x in xs]
        ax.plot(xs, means, marker="o", label=name)
        ax.fill_between(xs, [min(series[name][x]) for x in xs],
                        [max(series[name][x]) for x in xs], alpha=0.2)
    for name in sorted(flat):
        ax.axhline(statistics.fmean(flat[name]), linestyle="--", linewidth=1.2,
                   color=f"C{(len(series) + sorted(flat).index(name)) % 10}",
                   label=f"{name} (flat)")
    if log_y:
        from matplotlib.ticker import FuncFormatter

        ax.set_yscale("log")
        low, high = ax.get_ylim()
        lead = {2, 5} if high > 10 * low else set(range(1, 10))  # no crowding over decades

        def minor(v: float, _: Any) -> str:
            """A minor tick's label: its value if its leading digit is labelled, else none."""
            return f"{v:g}" if v > 0 and int(f"{v:e}"[0]) in lead else ""

        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))  # not 6 x 10^2
        ax.yaxis.set_minor_formatter(FuncFormatter(minor))
        ax.tick_params(axis="y", which="minor", labelsize=7)
    ax.set_xlabel(parameter)
    ax.set_ylabel(metric)
    ax.grid(alpha=0.3, which="both" if log_y else "major")
    ax.legend(fontsize=8)
    ax.set_title(title or f"{metric} vs {parameter} (mean, band: min-max over seeds and the "
                 "rest)", fontsize=10)
    return _save(fig, output)


def heatmap(path: Path, x: str, y: str, metric: str, output: Path, *,
            policy: str | None = None, where: Sequence[str] = (),
            title: str | None = None) -> Path:
    """Mean of ``metric`` over the grid of two parameters (one policy's runs)."""
    plt = _pyplot()
    rows = select(_results(path), where, path)
    if policy is not None:
        rows = [r for r in rows if r.get("policy") == policy]
        if not rows:
            raise InputError(f"no finished run of policy '{policy}' (--policy)", path=str(path))
    xcol, ycol, mcol = (_column(rows, x, path), _column(rows, y, path),
                        _column(rows, metric, path))
    for column in (xcol, ycol):
        _numeric(rows, column, path, "--heatmap draws over two numeric parameters; keep one "
                 "value of a non-numeric one with --where COLUMN=VALUE (or --policy)")
    _numeric(rows, mcol, path, "--metric must name a numeric column")
    cells: dict[tuple[float, float], list[float]] = defaultdict(list)
    for row in rows:
        a, b, v = _number(row.get(xcol)), _number(row.get(ycol)), _number(row.get(mcol))
        if a is not None and b is not None and v is not None:
            cells[(a, b)].append(v)
    if not cells:
        raise InputError(f"no row has '{xcol}', '{ycol}' and '{mcol}'", path=str(path))
    xs, ys = sorted({a for a, _ in cells}), sorted({b for _, b in cells})
    grid = [[statistics.fmean(cells[(a, b)]) if (a, b) in cells else math.nan for a in xs]
            for b in ys]
    fig, ax = plt.subplots(figsize=(1.0 + 0.8 * len(xs), 1.0 + 0.6 * len(ys)))
    image = ax.imshow(grid, origin="lower", aspect="auto", cmap="viridis")
    ax.set_xticks(range(len(xs)), [f"{v:g}" for v in xs])
    ax.set_yticks(range(len(ys)), [f"{v:g}" for v in ys])
    finite = [v for line in grid for v in line if not math.isnan(v)]
    low, high = min(finite), max(finite)
    for j, line in enumerate(grid):
        for i, value in enumerate(line):
            if not math.isnan(value):  # dark text on the bright half of viridis
                bright = high > low and (value - low) / (high - low) > 0.6
                ax.text(i, j, f"{value:.3g}", ha="center", va="center", fontsize=7,
                        color="black" if bright else "white")
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    fig.colorbar(image, ax=ax, label=metric)
    ax.set_title(title or f"{metric}" + (f" ({policy})" if policy else ""))
    return _save(fig, output)


def bars(path: Path, metric: str, output: Path, *, baseline: str | None = None,
         by: str = "policy", where: Sequence[str] = ()) -> Path:
    """``metric`` per workload, one bar per policy (or per value of column ``by``).

    With a baseline each bar is the change in percent against the baseline on the same
    workload (the DPSA paper's Fig. 3 presentation); seeds are averaged, and the error
    bar spans their min-max.
    """
    plt = _pyplot()
    rows = select(_results(path), where, path)
    mcol = _column(rows, metric, path)
    bcol = _column(rows, by, path)
    _numeric(rows, mcol, path, "--metric must name a numeric column")
    cells: dict[tuple[str, str], list[float]] = defaultdict(list)
    for row in rows:
        value = _number(row.get(mcol))
        if value is not None:
            cells[(row.get("workload", ""), row.get(bcol, ""))].append(value)
    workloads = sorted({w for w, _ in cells})
    policies = sorted({p for _, p in cells} - ({baseline} if baseline else set()))
    if baseline is not None and not any(p == baseline for _, p in cells):
        raise ConfigError(f"{path}: no run of the baseline policy '{baseline}'")
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(workloads)), 4.5))
    width = 0.8 / max(len(policies), 1)
    for k, policy in enumerate(policies):
        heights, low, high = [], [], []
        for workload in workloads:
            mine = cells.get((workload, policy)) or [math.nan]
            value = statistics.fmean(mine)
            spread = (value - min(mine), max(mine) - value)
            if baseline is not None:
                ref = cells.get((workload, baseline))
                base = statistics.fmean(ref) if ref else math.nan
                value = 100.0 * (value - base) / base if base else math.nan
                spread = (0.0, 0.0)
            heights.append(value)
            low.append(spread[0])
            high.append(spread[1])
        ax.bar([i + k * width for i in range(len(workloads))], heights, width, label=policy,
               yerr=[low, high] if baseline is None else None, capsize=2)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(workloads))],
                  [w.split(".swf")[0].removeprefix("preset:") for w in workloads], rotation=30,
        ha="right",
                  fontsize=8)
    ax.axhline(0, color="black", linewidth=0.6)
    ax.set_ylabel(f"{metric}, % vs {baseline}" if baseline else metric)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, output)


def _merged_results(paths: Sequence[Path]) -> list[dict[str, str]]:
    """The finished rows of every results table given (folders or CSV files), in order."""
    rows: list[dict[str, str]] = []
    for path in paths:
        rows.extend(_results(path))
    return rows


def tradeoff_series(rows: Iterable[dict[str, str]], xcol: str, ycol: str, bcol: str,
                    order: str | None) -> tuple[dict[str, list[tuple[float, float, str]]],
                                                dict[str, tuple[float, float]]]:
    """Points ``(x, y, order value)`` per value of ``bcol``, sorted by the ``order`` column.

    Rows without an ``order`` value (a baseline that has no such parameter) are the
    references ``{name: (x, y)}``, named by ``bcol`` (else ``policy``).

    >>> rows = [{"l": "k0", "e": "2", "b": "5", "t": "60"}, {"l": "k0", "e": "1", "b": "9",
    ...          "t": "0"}, {"l": "easy", "e": "3", "b": "4", "t": ""}]
    >>> tradeoff_series(rows, "e", "b", "l", "t")
    ({'k0': [(1.0, 9.0, '0'), (2.0, 5.0, '60')]}, {'easy': (3.0, 4.0)})
    """
    series: dict[str, list[tuple[float, float, str]]] = defaultdict(list)
    flat: dict[str, tuple[float, float]] = {}
    for row in rows:
        x, y = _number(row.get(xcol)), _number(row.get(ycol))
        if x is None or y is None:
            continue
        key = row.get(bcol) or row.get("policy", "")
        tag = row.get(order, "") if order else ""
        if order and _number(tag) is None:
            flat[key] = (x, y)
        else:
            series[key].append((x, y, tag))
    for points in series.values():
        points.sort(key=lambda p: (_number(p[2]) if _number(p[2]) is not None else math.inf,
                                   p[0]))
    return dict(series), flat


def tradeoff(paths: Sequence[Path], x: str, y: str, output: Path, *, by: str = "policy",
             order: str | None = None, panel: str = "workload", where: Sequence[str] = (),
             log_y: bool = False, title: str | None = None) -> Path:
    """One point per run, ``y`` against ``x`` (e.g. slowdown against energy), panels by ``panel``.

    One panel per value of the ``panel`` column (default: the workload). Points of one
    value of ``by`` are joined in the order of the ``order`` column (e.g. the idle
    timeout) and tagged with its value; runs without a value of ``order`` (a baseline
    without that parameter) are stars. Several results tables may be given (e.g. a
    campaign's and a table of runs made beside real Batsim).
    """
    plt = _pyplot()
    first = paths[0]
    rows = select(_merged_results(paths), where, first)
    xcol, ycol = _column(rows, x, first), _column(rows, y, first)
    for column in (xcol, ycol):
        _numeric(rows, column, first, "--scatter draws two numeric columns")
    ocol = _column(rows, order, first) if order else None
    pcol = _column(rows, panel, first)
    bcol = _column(rows, by, first) if any(by in r or f"param.{by}" in r for r in rows) else by
    panels = sorted({r.get(pcol, "") for r in rows})
    fig, axes = plt.subplots(1, len(panels), figsize=(6.0 * len(panels), 4.8), squeeze=False)
    names = sorted({r.get(bcol) or r.get("policy", "") for r in rows})
    colour = {name: f"C{i % 10}" for i, name in enumerate(names)}
    drawn = 0
    for ax, name in zip(axes[0], panels, strict=True):
        series, flat = tradeoff_series([r for r in rows if r.get(pcol, "") == name],
                                       xcol, ycol, bcol, ocol)
        for key, points in sorted(series.items()):
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o",
                    color=colour[key], label=key, linewidth=1.0, markersize=4)
            for px, py, tag in points:
                if tag:
                    ax.annotate(f"{_number(tag):g}", (px, py), fontsize=6,
                                textcoords="offset points", xytext=(3, 3))
            drawn += len(points)
        for key, (px, py) in sorted(flat.items()):
            ax.plot([px], [py], marker="*", markersize=12, linestyle="none",
                    color=colour[key], label=key)
            drawn += 1
        if log_y:
            ax.set_yscale("log")
        ax.set_title(name.split(".swf")[0], fontsize=10)
        ax.set_xlabel(x)
        ax.set_ylabel(y)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7)
    if not drawn:
        raise InputError(f"no row has both '{xcol}' and '{ycol}'", path=str(first))
    fig.suptitle(title or f"{y} against {x}" + (f" (points tagged with {order})"
                                                if order else ""), fontsize=11)
    fig.tight_layout()
    return _save(fig, output)
