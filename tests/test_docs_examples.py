"""Every example in docs/examples runs and prints exactly its ``.out`` file (STYLE habit 11)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "docs" / "examples"


@pytest.mark.parametrize("script", sorted(EXAMPLES.glob("*.py")), ids=lambda p: p.name)
def test_example_prints_its_expected_output(script: Path) -> None:
    expected = script.with_suffix(".out").read_text()
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120, cwd=script.parent)
    assert done.returncode == 0, done.stderr
    assert done.stdout == expected


def test_add_a_policy_snippets_run_as_written(tmp_path: Path) -> None:
    """docs/add_a_policy.md: its policy saved as my_package/policies.py, its test passes.

    The first snippet had no imports (copied, it raised NameError: Policy) and the test
    snippet did not say where the policy came from (issue 31, item 15).
    """
    doc = (EXAMPLES.parent / "add_a_policy.md").read_text()
    policy, test = [block.removeprefix("python\n") for block in doc.split("```")[1::2]
                    if block.startswith("python\n")]
    (tmp_path / "my_package").mkdir()
    (tmp_path / "my_package" / "__init__.py").write_text("")
    (tmp_path / "my_package" / "policies.py").write_text(policy)
    (tmp_path / "test_mine.py").write_text(test)
    done = subprocess.run([sys.executable, "-c", "import test_mine; test_mine.test_widest_first()"],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
