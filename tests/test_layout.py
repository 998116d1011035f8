"""The layout tells the architecture; these tests keep it honest (docs/design.md)."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from batpolicy.policies.registry import POLICIES

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "batpolicy"


def _modules(*rooms: str) -> list[Path]:
    """The modules of the named rooms (``batpolicy/<room>/``); no room: the whole package."""
    folders = [PACKAGE / room for room in rooms] or [PACKAGE]
    return sorted(p for f in folders for p in f.rglob("*.py"))


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_no_module_over_700_lines_unless_declared() -> None:
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["batpolicy"][
        "layout"]["too_many_lines"]
    too_long = {str(p.relative_to(REPO)): n for p in _modules()
                if (n := len(p.read_text().splitlines())) > 700}
    assert set(too_long) <= set(declared), f"modules over 700 lines: {too_long}"


def test_policies_import_neither_sockets_nor_clocks() -> None:
    for path in _modules("policies"):
        bad = sorted(m for m in _imports(path) if m.split(".")[0] in ("zmq", "time"))
        assert not bad, f"{path.relative_to(REPO)} imports {bad}"


def _lint_imports(cwd: Path, env: dict[str, str] | None = None
                  ) -> subprocess.CompletedProcess[str]:
    """Run ``lint-imports`` (pyproject.toml's contracts) as a user would, from ``cwd``."""
    code = "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports())"
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_rooms_import_only_downward() -> None:
    # the contracts are pyproject.toml's [tool.importlinter] (docs/design.md, "Rooms"),
    # checked on the checkout itself: the package is a plain folder, no mapping
    pytest.importorskip("importlinter")
    run = _lint_imports(REPO)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 broken" in run.stdout


def test_the_layers_name_every_room() -> None:
    contracts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"][
        "contracts"]
    (rooms,) = [c for c in contracts if c["type"] == "layers"]
    on_disk = {f"batpolicy.{p.parent.name}" for p in PACKAGE.glob("*/__init__.py")}
    assert set(rooms["layers"]) == on_disk


def test_no_room_holds_40_percent_of_the_lines() -> None:
    lines = {room.name: sum(len(p.read_text().splitlines()) for p in room.rglob("*.py"))
             for room in (p.parent for p in PACKAGE.glob("*/__init__.py"))}
    total = sum(len(p.read_text().splitlines()) for p in _modules())
    largest = max(lines, key=lines.__getitem__)
    assert lines[largest] < 0.4 * total, (largest, lines[largest], total)


def _copy_of_the_checkout(root: Path) -> Path:
    shutil.copytree(PACKAGE, root / "batpolicy",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "data"))
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    return root


@pytest.mark.parametrize(("module", "line", "broken"), [
    ("scheduler/view.py", "from batpolicy.policies.easy import Easy",
     "batpolicy.scheduler.view -> batpolicy.policies.easy"),
    ("protocol/intervals.py", "from batpolicy.platforms import model",
     "batpolicy.protocol.intervals -> batpolicy.platforms.model"),
    ("simulator/engine/simulator.py", "from batpolicy.app import cli",
     "batpolicy.simulator.engine.simulator -> batpolicy.app.cli"),
    ("simulator/engine/parts.py", "from batpolicy.policies.toolkit import queue",
     "batpolicy.simulator.engine.parts -> batpolicy.policies.toolkit.queue"),
    ("io/metrics.py", "from batpolicy.policies import fcfs",
     "batpolicy.io.metrics -> batpolicy.policies.fcfs"),
    ("scheduler/jobs.py", "from batpolicy.scheduler import state",
     "no import cycle"),
])
def test_a_wrong_arrow_breaks_a_contract(tmp_path: Path, module: str, line: str,
                                         broken: str) -> None:
    pytest.importorskip("importlinter")
    root = _copy_of_the_checkout(tmp_path)
    path = root / "batpolicy" / module
    path.write_text(path.read_text() + f"\n{line}  # noqa\n")
    run = _lint_imports(root, env={**os.environ, "PYTHONPATH": str(root)})
    assert run.returncode != 0, run.stdout
    assert broken in run.stdout.replace("\n", " ")


def test_wire_spelling_only_in_protocol() -> None:
    for path in _modules():
        if path.relative_to(PACKAGE).parts[0] == "protocol":
            continue
        assert '"EXECUTE_JOB"' not in path.read_text(), path


def test_one_heap_push_in_the_scheduler() -> None:
    hits = [p for p in _modules("scheduler") if "heappush(" in p.read_text()]
    assert len(hits) <= 1, f"heappush appears in several modules: {hits}"


def test_every_policy_module_cites_its_paper() -> None:
    # authors then a year, e.g. "Lifka, ... 1995" or "Grudenic & Bogunovic (2008)"; an
    # undated report by its authors and title, e.g. "Wu & Chen, *N-step search ...*"
    citation = re.compile(r"[A-Z][a-z\u00c0-\u017f'-]+.{0,200}?\b(19|20)\d\d\b", re.S)
    name = r"[A-Z][a-z\u00c0-\u017f'-]+"
    undated = re.compile(rf"{name} (&|and) {name}, \*[^*]+\*")
    for name, cls in POLICIES.items():
        doc = sys.modules[cls.__module__].__doc__ or ""
        assert citation.search(doc[:600]) or undated.search(doc[:600]), \
            f"{name}: module docstring cites no paper"


def test_every_registered_policy_has_tests_and_help() -> None:
    tests = " ".join(p.read_text() for p in (REPO / "tests").rglob("test_*.py"))
    help_text = subprocess.run([sys.executable, "-m", "batpolicy", "serve", "--help"],
                               capture_output=True, text=True, check=True).stdout
    listing = subprocess.run([sys.executable, "-m", "batpolicy", "policies"],
                             capture_output=True, text=True, check=True).stdout
    for name in POLICIES:
        assert re.search(rf"['\"]{re.escape(name)}['\"]", tests), f"no test names policy {name}"
        assert name in help_text and name in listing, f"policy {name} missing from --help"


@pytest.mark.parametrize("folder", ["scheduler", "policies"])
def test_public_functions_have_a_docstring(folder: str) -> None:
    missing = []
    for path in _modules(folder):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
                if not ast.get_docstring(node):
                    missing.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name}")
    assert not missing, "public objects without a docstring:\n" + "\n".join(missing)


def test_no_bare_exception_raised() -> None:
    for path in _modules():
        assert "raise Exception(" not in path.read_text(), path
