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
