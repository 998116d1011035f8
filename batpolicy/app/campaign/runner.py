"""Run a campaign: skip the finished runs, execute the rest, write one results table.

Resumable by construction: each run's row lands in its own folder as it finishes
(:mod:`.task`); the table (``results.csv``, plus ``results.parquet`` when pyarrow is
installed) is rebuilt from those rows, in the campaign file's order, after every pass —
also an interrupted one — so a campaign killed mid-way and rerun gives the same table as
one that was never interrupted. Wall-clock figures go to ``timings.csv`` beside it,
keeping the results table identical wherever the campaign runs.
"""

from __future__ import annotations

import csv
import json
import logging
import os
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from batpolicy.app.campaign.executors import Executor
from batpolicy.app.campaign.spec import Campaign, RunSpec
from batpolicy.app.campaign.task import (
    is_current,
    read_row,
    run_dir,
    run_task,
    write_code,
)
from batpolicy.errors import ConfigError
from batpolicy.scheduler.stop_signals import outputs_first

log = logging.getLogger(__name__)

#: Columns first in the table, in this order; metrics follow sorted by name.
LEADING = ("index", "run_id", "status", "label", "policy", "workload", "platform",
           "job_model", "seed", "tau", "max_jobs", "start", "end")


@dataclass(slots=True)
class CampaignReport:
    """What a pass did: runs in the campaign, already finished, run now, failed."""

    total: int
    skipped: int
    ran: int
    failed: int
    table: Path
    complete: bool


def run_campaign(campaign: Campaign, executor: Executor, *, progress: bool = True,
                 task: Any = run_task, force: bool = False) -> CampaignReport:
    """Execute the campaign's unfinished runs on ``executor``; write the table.

    A run is finished when it has its row and ran with the policy's current code
    (:func:`~.task.is_current`); ``force`` reruns every run.
    Runtime complexity: the runs themselves, plus O(runs × columns) for the table.
    """
    out = campaign.output
    prepare_output(out, create=True)
    todo = pending(campaign, force=force)
    by_id = {spec.run_id: spec for spec in todo}
    skipped = len(campaign.runs) - len(todo)
    if skipped:
        log.info("%d of %d runs already finished: skipped", skipped, len(campaign.runs))
    stale = sum(read_row(run_dir(out, spec)) is not None for spec in todo)
    if stale:
        log.info("%d finished run(s) rerun (%s)", stale,
                 "--force" if force else "their policy's code changed")
    bar = _CampaignProgress(len(todo), executor.workers, progress)
    ran = failed = 0
    complete = False
    try:
        for row in executor.run(task, todo, str(out)):
            folder = out / "runs" / str(row["run_id"])
            spec = by_id.get(str(row["run_id"]))
            if spec is not None and not is_current(folder, spec):
                # a remote worker without our file system
                folder.mkdir(parents=True, exist_ok=True)
                write_code(folder, spec)
                (folder / "row.json").write_text(json.dumps(row, indent=2, sort_keys=True,
                                                            default=str) + "\n")
            ran += 1
            failed += row.get("status") != "ok"
            if row.get("status") != "ok":
                log.warning("run %s (%s) failed: %s", row["run_id"], row.get("policy"),
                            row.get("error"))
            bar.advance(row)
        complete = True
    finally:
        executor.close()
        bar.close()
        # the table of every run finished so far, in full, even if stopped again now
        with outputs_first("the results table", stopping=not complete):
            table = write_table(campaign)
    return CampaignReport(len(campaign.runs), skipped, ran, failed, table, complete)


def prepare_output(out: Path, *, create: bool) -> None:
    """Check that ``out`` can be the results folder (and make it if ``create``).

    A ConfigError names the folder when it is an existing file or cannot be made there
    (a read-only or pseudo file system such as ``/proc``). Without ``create`` (a dry run)
    nothing is left behind: a throw-away folder is made in the nearest existing parent
    and removed, the one test that also holds for root, whom ``os.access`` always allows.
    """
    if out.exists() and not out.is_dir():
        raise ConfigError(f"results folder {out}: a file of that name exists (give another "
                          "folder with --output-dir)")
    try:
        if create:
            out.mkdir(parents=True, exist_ok=True)
            probe = tempfile.mkdtemp(dir=out, prefix=".batpolicy-probe-")
        else:
            parent = next(p for p in (out, *out.parents) if p.exists())
            if not parent.is_dir():
                raise NotADirectoryError(f"{parent} is not a folder")
            probe = tempfile.mkdtemp(dir=parent, prefix=".batpolicy-probe-")
        os.rmdir(probe)
    except OSError as exc:
        raise ConfigError(f"cannot write the results folder {out}: "
                          f"{exc.strerror or exc}") from None


def write_table(campaign: Campaign) -> Path:
    """Rebuild ``results.csv`` (and ``timings.csv``) from every finished run's row."""
    out = campaign.output
    rows, timings = [], []
    for spec in campaign.runs:
        folder = run_dir(out, spec)
        row = read_row(folder)
        if row is None:
            continue
        rows.append(row)
        timings.append({"run_id": spec.run_id, **_read_json(folder / "timings.json")})
    path = out / "results.csv"
    _write_csv(path, rows, LEADING)
    _write_csv(out / "timings.csv", timings, ("run_id",))
    _write_parquet(out / "results.parquet", rows)
    return path


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def columns(rows: Sequence[dict[str, Any]], leading: Iterable[str]) -> list[str]:
    """Leading columns that occur, then every other key sorted (params before metrics).

    >>> columns([{"b": 1, "policy": "x"}, {"a": 2}], ("policy",))
    ['policy', 'a', 'b']
    """
    seen: set[str] = set()
    for row in rows:
        seen.update(row)
    first = [c for c in leading if c in seen]
    rest = sorted(seen - set(first), key=lambda c: (not c.startswith("param."), c))
    return first + rest


def _write_csv(path: Path, rows: Sequence[dict[str, Any]], leading: Iterable[str]) -> None:
    cols = columns(rows, leading)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=cols, restval="", extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: _cell(v) for k, v in row.items()})
    tmp.replace(path)


def _cell(value: Any) -> Any:
    if isinstance(value, float):
        return repr(value)  # shortest round-tripping text: identical tables compare equal
    return value if value is not None else ""


def _write_parquet(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return
    cols = columns(rows, LEADING)
    data = {c: [_parquet_cell(r.get(c)) for r in rows] for c in cols}
    pq.write_table(pa.table(data), path)


def _parquet_cell(value: Any) -> Any:
    return str(value) if isinstance(value, (list, dict)) else value


class _CampaignProgress:
    """Finished runs out of those to do, with an ETA: a rich bar on a terminal, else lines."""

    def __init__(self, total: int, workers: int, enabled: bool, every_s: float = 5.0) -> None:
        self.total, self.done, self.every_s = total, 0, every_s
        self._began = self._last = time.perf_counter()
        self._bar: Any = None
        self.enabled = enabled and total > 0
        if self.enabled and sys.stderr.isatty():
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )
            self._bar = Progress(TextColumn(f"campaign ({workers} workers)"), BarColumn(),
                                 MofNCompleteColumn(), TextColumn("runs"), TimeElapsedColumn(),
                                 TextColumn("ETA"), TimeRemainingColumn())
            self._task = self._bar.add_task("runs", total=total)
            self._bar.start()
        elif self.enabled:
            log.info("campaign: %d runs to do on %d workers", total, workers)

    def advance(self, row: dict[str, Any]) -> None:
        """One more run finished."""
        self.done += 1
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done)
            return
        now = time.perf_counter()
        if now - self._last >= self.every_s or self.done == self.total:
            self._last = now
            rate = self.done / (now - self._began)
            eta = (self.total - self.done) / rate if rate > 0 else float("inf")
            log.info("campaign: %d/%d runs done, ETA %.0f s", self.done, self.total, eta)

    def close(self) -> None:
        """Remove the bar."""
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def pending(campaign: Campaign, *, force: bool = False) -> list[RunSpec]:
    """Runs of the campaign to do (all with ``force``).

    Without ``force``: those not finished with the policy's current code.
    Runtime complexity: O(runs).
    """
    if force:
        return list(campaign.runs)
    return [s for s in campaign.runs if not is_current(run_dir(campaign.output, s), s)]
