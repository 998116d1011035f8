"""docs/pybatsim.md's example runs: the user's scheduler file and the user's offline tests.

The page shows ``docs/examples/pybatsim/myFcfs.py`` and ``test_my_fcfs.py`` whole; each
test of that module is run here, as ``pytest`` in that folder would run it.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
EXAMPLES = DOCS / "examples" / "pybatsim"
USER_TESTS = EXAMPLES / "test_my_fcfs.py"
NAMES = [node.name for node in ast.parse(USER_TESTS.read_text()).body
         if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")]


@pytest.mark.parametrize("name", NAMES)
def test_the_documented_offline_test_passes(name: str, pybatsim: None) -> None:
    spec = importlib.util.spec_from_file_location("pybatsim_docs_example", USER_TESTS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    getattr(module, name)()


@pytest.mark.parametrize("example", ["myFcfs.py", "test_my_fcfs.py"])
def test_the_page_shows_the_example_files_whole(example: str) -> None:
    page = (DOCS / "pybatsim.md").read_text()
    assert (EXAMPLES / example).read_text() in page
