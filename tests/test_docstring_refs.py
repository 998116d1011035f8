"""Every ``:mod:``, ``:class:``, ``:func:`` and ``:meth:`` target in the package's sources resolves.

Renamed modules and classes leave cross-references behind that nothing imports, so nothing
fails; this test resolves each one the way Sphinx would:

- ``~`` is only a display hint and is dropped; ``title <target>`` keeps the target;
- a target with leading dots (``.books.RunBooks``, ``..delays``) is relative to the
  module's package, as in an import, or a suffix of some object's full path (Sphinx's rule
  when no exact match is found);
- any other target is a name of the referring module (its globals, or an attribute of one
  of its classes, for ``:meth:`_fold``` in a class's docstring), a full dotted path
  (``batpolicy.io.workload.JobSpec``) or a builtin.

``:attr:`` and ``:data:`` are left out: most name instance attributes set in ``__init__``,
which no import can see.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import functools
import importlib
import inspect
import pkgutil
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import batpolicy

PACKAGE = Path(batpolicy.__file__).resolve().parent
ROLE = re.compile(r":(mod|class|func|meth):`([^`\n]+)`")
#: Modules whose import needs an optional extra or a running external tool.
_OPTIONAL = ("batpolicy.simulator.pybatsim.",)


@functools.cache
def _modules() -> dict[str, ModuleType]:
    found: dict[str, ModuleType] = {"batpolicy": batpolicy}
    for info in pkgutil.walk_packages([str(PACKAGE)], prefix="batpolicy."):
        if info.name == "batpolicy.__main__":  # runs the command line when imported
            continue
        try:
            found[info.name] = importlib.import_module(info.name)
        except ImportError:
            if not info.name.startswith(_OPTIONAL):
                raise
    return found


def _members(cls: type) -> set[str]:
    names = set()
    for klass in inspect.getmro(cls):
        names.update(vars(klass))
        names.update(getattr(klass, "__annotations__", {}))
        slots = vars(klass).get("__slots__", ())
        names.update([slots] if isinstance(slots, str) else slots)
    if dataclasses.is_dataclass(cls):
        names.update(f.name for f in dataclasses.fields(cls))
    return names


def _index(modules: dict[str, ModuleType]) -> set[str]:
    """Full dotted paths of the package's modules, their top-level objects and members."""
    paths: set[str] = set(modules)
    for name, module in modules.items():
        for attr, value in vars(module).items():
            paths.add(f"{name}.{attr}")
            if inspect.isclass(value):
                paths.update(f"{name}.{attr}.{m}" for m in _members(value))
    return paths


def _lookup(root: Any, dotted: str) -> bool:
    obj = root
    for part in dotted.split("."):
        if inspect.isclass(obj) and part in _members(obj):
            obj = getattr(obj, part, None)
            continue
        if not hasattr(obj, part):
            return False
        obj = getattr(obj, part)
    return True


def _resolves(target: str, module: ModuleType, index: set[str], role: str = "class") -> bool:
    target = target.removeprefix("~").removesuffix("()")
    if role == "mod":  # a module: by its full path, relative, a suffix, or importable
        index = {path for path in index if path in sys.modules}
        if not target.startswith("."):
            try:
                importlib.import_module(target)
            except ImportError:
                return False
            return True
    if target.startswith("."):
        dots = len(target) - len(target.lstrip("."))
        package = module.__name__
        if not hasattr(module, "__path__"):  # a module, not a package: its package
            package = package.rpartition(".")[0]
        for _ in range(dots - 1):
            package = package.rpartition(".")[0]
        if f"{package}{target[dots - 1:]}" in index:
            return True  # relative to the module's package, as an import would be
        return any(path.endswith(target) for path in index)  # Sphinx: a suffix of a path
    head, _, rest = target.partition(".")
    if hasattr(module, head) and _lookup(module, target):  # hasattr: lazy names too
        return True
    imported = _imported(module).get(head)  # also under TYPE_CHECKING or in a function
    if imported is not None:
        target = f"{imported}.{rest}" if rest else imported
    if "." not in target and any(inspect.isclass(v) and v.__module__ == module.__name__
                                 and target in _members(v) for v in vars(module).values()):
        return True  # a member of the class whose docstring names it
    if target in index or hasattr(builtins, target):
        return True
    parts = target.split(".")
    for cut in range(len(parts), 0, -1):  # an absolute path outside the package
        try:
            root = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        return cut == len(parts) or _lookup(root, ".".join(parts[cut:]))
    return False


@functools.cache
def _imported(module: ModuleType) -> dict[str, str]:
    """Names a module imports anywhere (a function, ``if TYPE_CHECKING:``) -> full path."""
    names = {}
    for node in ast.walk(ast.parse(Path(module.__file__ or "").read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.update((a.asname or a.name, f"{node.module}.{a.name}") for a in node.names)
        elif isinstance(node, ast.Import):
            names.update((a.asname or a.name, a.name) for a in node.names)
    return names


def _references(modules: dict[str, ModuleType]) -> list[tuple[str, int, str, str]]:
    refs = []
    for name, module in sorted(modules.items()):
        path = Path(module.__file__ or "")
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for role, text in ROLE.findall(line):
                target = re.search(r"<([^>]+)>$", text)
                refs.append((name, lineno, role, target.group(1) if target else text))
    return refs


def test_every_docstring_cross_reference_resolves() -> None:
    modules = _modules()
    index = _index(modules)
    refs = _references(modules)
    assert len(refs) > 500  # the scan found the package's references
    broken = [f"{Path(modules[name].__file__ or '').relative_to(PACKAGE.parent)}:{lineno}: "
              f":{role}:`{target}`"
              for name, lineno, role, target in refs
              if not _resolves(target, modules[name], index, role)]
    assert not broken, "cross-references to nothing:\n" + "\n".join(broken)


@pytest.mark.parametrize(("target", "role", "ok"), [
    (".records.SimMachines", "class", True), ("~batpolicy.io.workload.JobSpec", "class", True),
    ("ValueError", "class", True), ("batpolicy.io.model.JobSpec", "class", False),
    (".books.Books", "class", False), (".energy", "mod", True), (".delays", "mod", True),
    (".by_submission", "mod", False), ("batpolicy.io.model", "mod", False)])
def test_the_resolver_tells_a_target_from_nothing(target: str, role: str, ok: bool) -> None:
    modules = _modules()
    assert _resolves(target, modules["batpolicy.simulator.books"], _index(modules), role) is ok
