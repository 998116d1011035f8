"""Every committed result in ``bench/results/``: the script and the command that regenerate it.

``python bench/run.py --list`` prints the table (result, group, script, command, what it
needs); ``--dry-run`` prints the commands a run would execute, and those it would skip and
why; ``python bench/run.py [--group performance|fidelity|papers|experiments] [--only NAME]``
runs them from the repository's root, one after another. Most take minutes to hours, many
need real Batsim 4.2.1 and batsched 1.4 (``/opt``, as ``bench/fidelity/`` expects) or the
whole traces of the Parallel Workloads Archive (the shared data folder beside the clone,
not in the repository); an entry that needs something only a
person can give (two trees to compare, a recorded transcript) is printed, not run. The
papers' tables read the committed campaign results (``bench/campaigns/results/``).

A result's file is what the command writes (``> FILE``: the runner writes the command's
standard output there). Each file keeps in its header the commit, the date and the command
it was made with; its history is in git. ``tests/test_bench_results.py`` checks that every
file in ``bench/results/`` is listed here, with a script that exists.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
GROUPS = ("performance", "fidelity", "papers", "experiments")

#: Commands that need a person: two trees' interpreters to compare.
TWO_TREES = "two trees to compare: replace OLD/NEW with each tree's python"
BATSIM = "real Batsim 4.2.1 + batsched 1.4"


@dataclass(frozen=True)
class Result:
    """Committed files of one command, the script that writes them, and what it needs."""

    files: tuple[str, ...]
    script: str
    command: str
    needs: str = ""
    manual: str = ""  # why the runner prints the command instead of running it

    @property
    def group(self) -> str:
        """performance, fidelity, papers or experiments: the script's folder under bench/."""
        return Path(self.script).parts[1] if self.script.startswith("bench/") else "tests"


def _r(files: str, script: str, command: str, needs: str = "", manual: str = "") -> Result:
    return Result(tuple(files.split()), script, command, needs, manual)


P, F, A, E = "bench/performance/", "bench/fidelity/", "bench/papers/", "bench/experiments/"
RESULTS: tuple[Result, ...] = (
    # performance: speed and memory
    _r("serve_vs_batsched.txt", P + "serve_vs_batsched.py",
       "python bench/performance/serve_vs_batsched.py --rounds 6 --traces KTH "
       "--schedulers batsched-easy serve-easy --ipc", BATSIM),
    _r("serve_vs_batsched_debian.txt", P + "serve_vs_batsched.py",
       "python bench/performance/serve_vs_batsched.py --rounds 6 --traces KTH --schedulers "
       "batsched-fcfs serve-fcfs batsched-easy serve-easy --python debian=DEBIAN/bin/python "
       "--no-save "
       "> bench/results/serve_vs_batsched_debian.txt", BATSIM,
       "a venv of Debian's CPython 3.11.2: replace DEBIAN"),
    _r("serve_vs_batsched_instructions.txt", P + "serve_vs_batsched.py",
       "cd /tmp && python REPO/bench/performance/serve_vs_batsched.py --callgrind --traces KTH "
       "--schedulers batsched-fcfs serve-fcfs floor-fcfs batsched-easy serve-easy "
       "--python base=BASE/bin/python --python work=WORK/bin/python", BATSIM,
       "a venv per tree with Debian's CPython 3.11.2: replace REPO, BASE and WORK; run from "
       "outside the repository so that each venv's copy is imported"),
    _r("serve_stages_instructions_kth_easy.txt serve_stages_instructions_kth_fcfs.txt",
       P + "serve_stages.py",
       "valgrind --tool=callgrind python bench/performance/serve_stages.py /tmp/kth.msgpack "
       "--policy easy --repeat 1 (after batpolicy simulate --policy easy -w "
       "KTH-SP2-1996-2.swf.gz --record /tmp/kth.msgpack), in each of two trees",
       "valgrind", TWO_TREES),
    _r("compiled_variants_ricc_easy.txt", P + "compiled_variants.py",
       "python bench/performance/compiled_variants.py -w ../shared/data/traces/"
       "RICC-2010-2.swf.gz --policy easy --rounds 3 "
       "--save bench/results/compiled_variants_ricc_easy.txt",
       "pip install cython mypy; a C compiler"),
    _r("compiled_variants_kth_fcfs.txt", P + "compiled_variants.py",
       "python bench/performance/compiled_variants.py -w ../shared/data/traces/"
       "KTH-SP2-1996-2.swf.gz --policy fcfs --rounds 5 "
       "--save bench/results/compiled_variants_kth_fcfs.txt",
       "pip install cython mypy; a C compiler"),
    _r("sim_throughput.txt", P + "sim_throughput.py",
       "python bench/performance/sim_throughput.py --jobs 1"),
    _r("startup_simulate.txt", P + "simulate_time.py",
       "python bench/performance/simulate_time.py --traces KTH RICC --rounds 5 --startup "
       "--save startup_simulate"),
    _r("simulate_timed_kth.txt", P + "simulate_time.py",
       "python bench/performance/simulate_time.py --python before=OLD/bin/python "
       "--python after=NEW/bin/python --traces KTH --rounds 12 --save simulate_timed_kth",
       manual=TWO_TREES),
    _r("simulate_instructions_kth_easy.txt simulate_instructions_kth_fcfs.txt "
       "simulate_instructions_ricc_easy.txt simulate_instructions_ricc_fcfs.txt",
       P + "simulate_instructions.py",
       "python bench/performance/simulate_instructions.py --version before=OLD/bin/python "
       "--version after=NEW/bin/python --policy easy -w KTH-SP2-1996-2.swf.gz "
       "--max-jobs 30000 --save bench/results/simulate_instructions_kth_easy.txt "
       "(fcfs; RICC-2010-2.swf.gz --max-jobs 40000)", "valgrind", TWO_TREES),
    _r("simulate_instructions_kth_easy_stream.txt", P + "simulate_instructions.py",
       "python bench/performance/simulate_instructions.py --version bf30f5a=OLD/bin/python "
       "--version main=MAIN/bin/python --version stream=NEW/bin/python --policy easy "
       "-w KTH-SP2-1996-2.swf.gz --max-jobs 30000 (the streamed SWF of issue 44 against the "
       "tree before it and bf30f5a)", "valgrind", TWO_TREES),
    _r("simulate_instructions_kth_fcfs_stream.txt", P + "simulate_instructions.py",
       "python bench/performance/simulate_instructions.py --version bf30f5a=OLD/bin/python "
       "--version main=MAIN/bin/python --version stream=NEW/bin/python --policy fcfs "
       "-w KTH-SP2-1996-2.swf.gz --max-jobs 30000 (as the easy file, for fcfs)", "valgrind",
       TWO_TREES),
    _r("simulate_instructions_ricc_easy_bf30.txt", P + "simulate_instructions.py",
       "python bench/performance/simulate_instructions.py --version bf30f5a=OLD/bin/python "
       "--version now=NEW/bin/python --policy easy -w RICC-2010-2.swf.gz --max-jobs 40000 "
       "(issue 44's per-job cost against bf30f5a)", "valgrind", TWO_TREES),
    _r("simulate_instructions_default_json.txt "
       "simulate_instructions_default_json_zero_latency.txt", P + "simulate_instructions.py",
       "python bench/performance/simulate_instructions.py --version before=OLD/bin/python "
       "--version after=NEW/bin/python --policy easy "
       "-w batpolicy/data/example_workload_hpc_seed1_jobs250.json --max-jobs 250 -- "
       "-p batpolicy/data/zero_lat_cluster128.xml [--zero-latency] (the bundled default, "
       "on the latency driver, and with the opt-out)", "valgrind", TWO_TREES),
    _r("memory_ricc.txt", P + "memory_ricc.py",
       "python bench/performance/memory_ricc.py --version base=OLD/bin/python "
       f"--version now={sys.executable} --times 1 4 --save bench/results/memory_ricc.txt",
       manual=TWO_TREES),
    _r("collector_time.txt", P + "collector_time.py",
       "python bench/performance/collector_time.py --traces RICC CEA-Curie "
       "--young 50000 500000"),
    _r("ptask_perf.txt", P + "ptask_perf.py",
       "python bench/performance/ptask_perf.py --jobs 10000 --rounds 1 "
       "--save bench/results/ptask_perf.txt", BATSIM),
    _r("pybatsim_inprocess.txt", P + "pybatsim_inprocess.py",
       "python bench/performance/pybatsim_inprocess.py speed --rounds 3", BATSIM + ", pybatsim"),
    _r("pybatsim_fidelity_lowlevel.txt", P + "pybatsim_inprocess.py",
       "python bench/performance/pybatsim_inprocess.py fidelity --kth --schedulers "
       "easyBackfill fillerSched fillerSchedWithEvents --timeout 400 "
       "--name pybatsim_fidelity_lowlevel", BATSIM + ", pybatsim"),
    _r("pybatsim_fidelity_sched_api.txt", P + "pybatsim_inprocess.py",
       "python bench/performance/pybatsim_inprocess.py fidelity --kth --schedulers schedFcfs "
       "schedFiller schedEasySjfBackfill schedSendRecv randomSched fcfsSchedSleep schedBebida "
       "--timeout 400 --name pybatsim_fidelity_sched_api", BATSIM + ", pybatsim"),
    _r("gym_steps.txt", P + "gym_steps.py",
       "python bench/performance/gym_steps.py --schedgym /tmp/rlscheduler "
       "> bench/results/gym_steps.txt",
       "gymnasium; an RLScheduler checkout (github.com/DIR-LAB/deep-batch-scheduler) in "
       "/tmp/rlscheduler, else ours only"),
    # fidelity: the embedded simulator against real Batsim, and a tree against another
    _r("batsim_testsuite.txt", F + "batsim_testsuite.py",
       "python bench/fidelity/batsim_testsuite.py -j 1 --save bench/results/batsim_testsuite.txt",
       BATSIM),
    _r("batsim_testsuite_energy.txt", F + "batsim_testsuite.py",
       "python bench/fidelity/batsim_testsuite.py --match energy -j 1 "
       "--save bench/results/batsim_testsuite_energy.txt", BATSIM),
    _r("energy_own_cases.txt", F + "energy_own_cases.py",
       "python bench/fidelity/energy_own_cases.py -j 1 --work /tmp/bench-energy-own "
       "--save bench/results/energy_own_cases.txt",
       BATSIM),
    _r("usage_trace_cases.txt", F + "usage_trace_cases.py",
       "python bench/fidelity/usage_trace_cases.py -j 1 --work /tmp/bench-usage-trace "
       "--save bench/results/usage_trace_cases.txt", BATSIM),
    _r("ptask_random.txt", F + "ptask_random.py",
       "python bench/fidelity/ptask_random.py --seeds 8 --jobs 60 "
       "--save bench/results/ptask_random.txt", BATSIM),
    _r("fuzz.txt", F + "fuzz.py",
       "python bench/fidelity/fuzz.py --seeds 0:2000 -j 2 --no-shrink --max-minutes 40 "
       "--save bench/results/fuzz.txt", BATSIM),
    _r("fuzz_2000_4000.txt", F + "fuzz.py",
       "python bench/fidelity/fuzz.py --seeds 2000:4000 -j 2 --no-shrink --max-minutes 100 "
       "--save bench/results/fuzz_2000_4000.txt (seeds no fix was made on)", BATSIM),
    _r("fuzz_4000_6000.txt", F + "fuzz.py",
       "python bench/fidelity/fuzz.py --seeds 4000:6000 -j 2 --no-shrink --max-minutes 100 "
       "--save bench/results/fuzz_4000_6000.txt (at 686ad11, before seed 5239's fix)", BATSIM),
    _r("fuzz_6000_7000.txt", F + "fuzz.py",
       "python bench/fidelity/fuzz.py --seeds 6000:7000 -j 2 --no-shrink --max-minutes 20 "
       "--save bench/results/fuzz_6000_7000.txt", BATSIM),
    _r("fuzz_2000_baseline.txt", F + "fuzz.py",
       "python bench/fidelity/fuzz.py --seeds 0:2000 -j 2 --no-shrink "
       "--save bench/results/fuzz_2000_baseline.txt", BATSIM),
    _r("fidelity_latency.txt", F + "table.py",
       "python bench/fidelity/table.py --write docs/fidelity.md "
       "--save bench/results/fidelity_latency.txt", BATSIM),
    _r("conservative_vs_batsched.txt", F + "conservative_vs_batsched.py",
       "python bench/fidelity/conservative_vs_batsched.py", BATSIM),
    _r("coalloc_simgrid.txt", F + "coalloc_simgrid.py",
       "python bench/fidelity/coalloc_simgrid.py --jobs 2000 --bsbw 300 600 900 1200 "
       "--workers 2", BATSIM),
    _r("coalloc_simgrid_mean.txt", F + "coalloc_simgrid.py",
       "python bench/fidelity/coalloc_simgrid.py --profiles simgrid-mean --jobs 2000 "
       "--bsbw 300 600 900 1200 --modules ff a1 b1 b2 b3 b4 --workers 1 "
       "--out coalloc_simgrid_mean", BATSIM),
    _r("coalloc_simgrid_offline.txt", F + "coalloc_simgrid.py",
       "python bench/fidelity/coalloc_simgrid.py --jobs 2000 --bsbw 300 600 900 1200 "
       "--workers 1 --offline --ptask-only --compare bench/results/coalloc_simgrid.txt "
       "--out coalloc_simgrid_offline"),
    _r("gym_easy.txt", F + "gym_easy.py",
       "python bench/fidelity/gym_easy.py > bench/results/gym_easy.txt",
       "gymnasium, the whole KTH-SP2 trace"),
    _r("compare_versions.txt", F + "compare_versions.py",
       "python bench/fidelity/compare_versions.py --before OLD/bin/python "
       "--after NEW/bin/python --work /tmp/bench-compare -o bench/results/compare_versions.txt",
       manual=TWO_TREES),
    # papers: the papers' tables and figures
    _r("coalloc_dynamic.txt", A + "coalloc_figures.py",
       "python bench/papers/coalloc_figures.py dynamic --clusters 4 --jobs 8000 "
       "--bsbw 250 500 1000 1500 2000 --workers 1"),
    _r("coalloc_dynamic_2.txt", A + "coalloc_figures.py",
       "python bench/papers/coalloc_figures.py dynamic --clusters 2 --jobs 8000 "
       "--bsbw 250 500 1000 1500 2000 --workers 1 --out coalloc_dynamic_2"),
    _r("coalloc_dynamic_8.txt", A + "coalloc_figures.py",
       "python bench/papers/coalloc_figures.py dynamic --clusters 8 --jobs 16000 "
       "--bsbw 250 500 1000 1500 2000 --workers 1 --out coalloc_dynamic_8"),
    _r("coalloc_modules.txt", A + "coalloc_figures.py",
       "python bench/papers/coalloc_figures.py modules --clusters 4 --jobs 6000 "
       "--bsbw 200 500 800 --lslt 0.6 1.0 1.2 --workers 2"),
    _r("coalloc_anchors.txt", A + "coalloc_figures.py",
       "python bench/papers/coalloc_figures.py modules --clusters 4 --jobs 80000 "
       "--only migration-only ideal --workers 2 --out coalloc_anchors"),
    _r("coalloc_converged.txt", A + "coalloc_figures.py",
       "python bench/papers/coalloc_figures.py modules --clusters 4 --jobs 160000 --bsbw 500 "
       "--lslt 1.0 --only a1 b3-85 migration-only ideal --workers 2 --out coalloc_converged"),
    _r("coalloc_converged_b.txt", A + "coalloc_figures.py",
       "python bench/papers/coalloc_figures.py modules --clusters 4 --jobs 160000 --bsbw 500 "
       "--lslt 1.0 --only b1 b4 --workers 2 --out coalloc_converged_b"),
    _r("deadline_fig4.txt deadline_fig4.png", A + "deadline_fig4.py",
       "python bench/papers/deadline_fig4.py --from-campaign "
       "bench/campaigns/results/deadline_fig4"),
    _r("deadline_fig4_times.txt deadline_fig4_times.png", A + "deadline_fig4.py",
       "python bench/papers/deadline_fig4.py --seeds 2 --workers 1 --time-bound-ms 20 "
       "--name deadline_fig4_times"),
    _r("dpsa_decision_time.txt", A + "dpsa_decision_time.py",
       "python bench/papers/dpsa_decision_time.py"),
    _r("dpsa_vs_easy.txt", A + "dpsa_vs_easy.py", "python bench/papers/dpsa_vs_easy.py"),
    _r("nstep_table1.txt", A + "nstep_table1.py",
       "python bench/papers/nstep_table1.py bench/campaigns/results/nstep_table1 "
       "-o bench/results/nstep_table1.txt"),
    _r("redirection_fig2.txt", A + "redirection_fig2.py",
       "python bench/papers/redirection_fig2.py bench/campaigns/results/redirection_fig2 "
       "-o bench/results/redirection_fig2.txt"),
    # experiments: one-off design measurements, kept with the decision they informed
    _r("batsim_gaps.txt", E + "batsim_gaps.py",
       "python bench/experiments/batsim_gaps.py --traces KTH --policy easy --save", BATSIM),
    _r("msgspec_decode.txt", E + "msgspec_decode.py",
       "python bench/experiments/msgspec_decode.py /tmp/kth.msgpack --idle-us 1000 --repeat 5 "
       "--save", manual="a recorded transcript: batpolicy simulate --policy easy -w "
       "KTH-SP2-1996-2.swf.gz --record /tmp/kth.msgpack"),
    _r("queue_sizes.txt", E + "queue_sizes.py",
       "python bench/experiments/queue_sizes.py --sizes 1000 4000 16000 100000 --ops 2000 --save"),
    _r("coalloc_a1_solvers.txt", E + "coalloc_a1_solvers.py",
       "python bench/experiments/coalloc_a1_solvers.py"),
    # not a benchmark: the Docker test's record (issue 16)
    _r("docker_test.txt", "tests/test_docker.py",
       "python -m pytest -m docker tests/test_docker.py", "a Docker engine",
       "a record of a Docker run by hand (tests/test_docker.py's docstring)"),
)


def listed() -> dict[str, Result]:
    """Each committed file's name -> its entry."""
    return {name: r for r in RESULTS for name in r.files}


def _argv(command: str) -> tuple[list[str], Path | None]:
    """The command's argv (``python`` is this interpreter) and its ``> FILE``, if any."""
    words = shlex.split(command)
    out = None
    if ">" in words:
        at = words.index(">")
        out, words = REPO / words[at + 1], words[:at]
    if words[0] == "python":
        words[0] = sys.executable
    return words, out


def main(argv: list[str] | None = None) -> int:
    """List, dry-run or run the commands of the chosen group."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--group", choices=GROUPS, action="append",
                        help="only this group (repeatable; default: every group)")
    parser.add_argument("--only", action="append", metavar="FILE",
                        help="only the entry writing this results file (e.g. sim_throughput.txt)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--list", action="store_true", help="print every result and its command")
    mode.add_argument("--dry-run", action="store_true", help="print what a run would do")
    args = parser.parse_args(argv)
    chosen = [r for r in RESULTS
              if (not args.group or r.group in args.group)
              and (not args.only or set(args.only) & set(r.files))]
    if args.list:
        for r in chosen:
            print(f"{' '.join(r.files)}\n    group {r.group}; script {r.script}"
                  + (f"; needs {r.needs}" if r.needs else "")
                  + (f"; by hand: {r.manual}" if r.manual else "")
                  + f"\n    {r.command}")
        return 0
    failed = 0
    for r in chosen:
        if r.manual:
            print(f"== skip {' '.join(r.files)}: needs {r.manual}\n   {r.command}")
            continue
        words, out = _argv(r.command)
        print(f"== {' '.join(r.files)}: {r.command}", flush=True)
        if args.dry_run:
            continue
        if out is None:
            code = subprocess.run(words, cwd=REPO).returncode
        else:
            with out.open("w") as f:
                code = subprocess.run(words, cwd=REPO, stdout=f).returncode
        if code:
            failed += 1
            print(f"!! {r.script} exited with {code}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
