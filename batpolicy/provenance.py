"""Where a run's results came from: the ``provenance`` block of ``metrics.json``.

A researcher looking at a ``metrics.json`` months later must be able to tell which code
made it (batpolicy's version, and the git commit and whether the checkout had changes
when it runs from one), from which bytes (every input file's path, size and SHA-256),
how (the command line, the selection and transforms applied to the workload, the
seeds) and on what (the interpreter), and when (the start time, UTC).

The block lives under its own key, ``provenance``: it is the one part of a run's outputs
that changes from one run to the next (the start time, the paths), so a comparison of
two runs drops it and compares the rest. Nothing here fails a run: without git, outside
a checkout or with an unreadable file, the value is ``None``.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from batpolicy import __version__

__all__ = ["file_record", "provenance", "source_revision", "utc_now"]

log = logging.getLogger(__name__)

#: The checkout's root when batpolicy runs from a checkout: the parent of this package.
SOURCE_ROOT = Path(__file__).resolve().parents[1]
#: Longest wait for one git command: provenance never holds a run up for long.
GIT_TIMEOUT_S = 5.0


def utc_now() -> str:
    """The current time, UTC, ISO 8601 to the second (``2026-11-27T00:19:37+00:00``)."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def _git(*args: str) -> str | None:
    """Output of ``git -C SOURCE_ROOT ARGS`` stripped, or None when git cannot answer."""
    try:
        done = subprocess.run(["git", "--no-optional-locks", "-C", str(SOURCE_ROOT), *args],
                              capture_output=True, text=True, timeout=GIT_TIMEOUT_S,
                              check=False, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as exc:  # no git, or it hangs
        log.debug("git %s: %s", " ".join(args), exc)
        return None
    return done.stdout.strip() if done.returncode == 0 else None


@functools.lru_cache(maxsize=1)
def source_revision() -> dict[str, Any]:
    """Batpolicy's ``version``, and its checkout's ``commit`` and ``dirty`` flag.

    ``commit`` is the full hash of HEAD and ``dirty`` whether tracked files differ from
    it (untracked files, such as a run's outputs, do not count), only when batpolicy
    runs from a git checkout of its own repository: an installed copy that merely sits
    inside some other repository (a virtual environment in a user's project) gets
    ``None`` for both, as does a machine without git. Asked once per process.
    """
    commit = dirty = None
    top, _, head = (_git("rev-parse", "--show-toplevel", "HEAD") or "").partition("\n")
    if top and head and Path(top).resolve() == SOURCE_ROOT \
            and _is_batpolicy_project(SOURCE_ROOT / "pyproject.toml"):
        commit = head.strip()
        status = _git("status", "--porcelain", "--untracked-files=no")
        dirty = None if status is None else bool(status)
    return {"version": __version__, "commit": commit, "dirty": dirty}


def _is_batpolicy_project(pyproject: Path) -> bool:
    """Whether ``pyproject`` declares the project ``batpolicy`` (our own checkout)."""
    try:
        text = pyproject.read_text(encoding="utf-8")
    except OSError:
        return False
    return '\nname = "batpolicy"\n' in text


def file_record(path: str | os.PathLike[str]) -> dict[str, Any]:
    """``path`` (absolute), ``size`` in bytes and ``sha256`` of one input file.

    An unreadable file gets ``None`` for what could not be read (it was read moments
    before, so this is rare: a file deleted meanwhile).
    """
    p = Path(path)
    record: dict[str, Any] = {"path": str(p.resolve()), "size": None, "sha256": None}
    try:
        with p.open("rb") as f:
            record["sha256"] = hashlib.file_digest(f, "sha256").hexdigest()
        record["size"] = p.stat().st_size
    except OSError as exc:
        log.debug("provenance of %s: %s", p, exc)
    return record


def provenance(*, argv: Sequence[str] | None, inputs: Iterable[tuple[str, str]],
               started_at: str, options: Mapping[str, Any] | None = None,
               seeds: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ``provenance`` block of one run.

    ``inputs`` are (role, path) pairs (role: ``w0``, ``w1``... for workloads,
    ``platform``, ``events``), hashed here; ``options`` the workload selection and
    transforms applied (only those given); ``seeds`` every seed the run used.

    >>> block = provenance(argv=["batpolicy", "simulate"], inputs=(), started_at="t")
    >>> sorted(block)  # doctest: +NORMALIZE_WHITESPACE
    ['argv', 'batpolicy', 'inputs', 'interpreter', 'options', 'seeds', 'started_at']
    """
    from batpolicy.interpreter import describe

    return {
        "batpolicy": source_revision(),
        "argv": list(argv) if argv is not None else None,
        "inputs": [{"role": role, **file_record(path)} for role, path in inputs],
        "options": dict(options or {}),
        "seeds": dict(seeds or {}),
        "interpreter": describe(),
        "started_at": started_at,
    }
