"""One SWF reader: the benchmarks read traces with the product's reader and transforms.

``bench/papers/dpsa_vs_easy.py`` and the redirection sweep used to parse SWF files their own
way; the first now calls :func:`read_swf` and :mod:`transform`, the sweep is a campaign
file (``bench/campaigns/redirection_fig2.toml``) run through the product's
:func:`load_inputs`, so what a benchmark simulates is what ``batpolicy simulate`` /
``batpolicy workload transform`` would.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from batpolicy.io.swf import read_swf
from batpolicy.io.transform import WEEK, drop_larger, weeks

BENCH = Path(__file__).resolve().parents[2] / "bench" / "papers"
SCRIPTS = ("dpsa_vs_easy",)


def _load(name: str) -> ModuleType:
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCH))


@pytest.mark.parametrize("name", SCRIPTS)
def test_bench_scripts_do_not_parse_swf_themselves(name: str) -> None:
    source = (BENCH / f"{name}.py").read_text()
    assert "read_swf(" in source
    assert "import gzip" not in source and "line.split()" not in source


def _trace(tmp_path: Path) -> Path:
    rows = [(1, 0, 5, 100, 4, 8), (2, 10, -1, 50, -1, 2), (3, 20, 0, 0, 2, 2),  # 3: no run
            (4, 30, 0, 70, 32, 32), (5, WEEK + 3, 0, WEEK, 16, 16)]  # 4: too wide
    lines = ["; MaxProcs: 16"] + [
        f"{j} {s} {w} {r} {a} -1 -1 {q} 200 -1 1 1 1 -1 -1 -1 -1 -1" for j, s, w, r, a, q in rows]
    path = tmp_path / "t.swf"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_dpsa_bench_reads_what_the_product_reads(tmp_path: Path) -> None:
    workload = _load("dpsa_vs_easy").read_trace(_trace(tmp_path), 2)
    product = drop_larger(read_swf(_trace(tmp_path), size="allocated"), 16)
    assert [(j.id, j.subtime, j.res) for j in workload.jobs] == \
        [(j.id, j.subtime, j.res) for j in product.jobs[:2]] == [("w0!1", 0.0, 4),
                                                                 ("w0!2", 10.0, 2)]
    assert workload.skipped["larger_than_platform"] == 1
    assert workload.skipped["non_positive_runtime"] == 1


def test_the_sweep_campaign_reads_the_week_and_grows_the_platform(tmp_path: Path) -> None:
    """The redirection sweep's inputs (§IV of Faure et al. 2020) through load_inputs.

    Allocated sizes, wide jobs dropped, the loaded week, exact walltimes, m + ceil(a*m).
    """
    from batpolicy.io.inputs import InputSpec, load_inputs
    from batpolicy.io.transform import TransformSpec

    spec = InputSpec(workloads=(str(_trace(tmp_path)),), lenient=True, size="allocated",
                     transform=TransformSpec(weeks=1, min_util=0.7, exact_walltime=True),
                     extra_machines=0.15)
    (workload,), platform, _ = load_inputs(spec)
    product = weeks(drop_larger(read_swf(_trace(tmp_path), size="allocated", keep_wait=True),
                                16), min_util=0.7)
    assert [w.index for w in product] == [1]
    assert [(j.id, j.subtime, j.res) for j in workload.jobs] == \
        [(j.id, j.subtime, j.res) for j in product[0].workload.jobs] == [("w0!5", 0.0, 16)]
    assert workload.jobs[0].walltime == WEEK  # its run time
    assert platform.nb_machines == 16 + 3
    assert workload.skipped["dropped_larger_than_platform"] == 1


def test_growing_a_platform_file_is_an_error(tmp_path: Path) -> None:
    from batpolicy.errors import ConfigError
    from batpolicy.io.inputs import InputSpec, load_inputs

    with pytest.raises(ConfigError, match="extra-machines"):
        load_inputs(InputSpec(extra_machines=0.1))  # the bundled workload's platform file
