"""Copy a fuzzer reproducer (``fuzz.py --out DIR``) under ``tests/data/fuzz/NAME/``.

What ``tests/sim/test_fuzz_reproducers.py`` replays without Batsim: the minimal case's
inputs (``platform.xml``, ``workload.json``, usage-trace files), its Batsim flags
(``case.json``), Batsim's conversation with batsched (``conversation.jsonl``, from
Batsim's ``simulator.log``; gzipped when over 20 KB) and Batsim's outputs
(``jobs.csv``, ``schedule.csv``, ``machine_states.csv``, the Pajé ``schedule.trace``,
and with ``-E`` ``consumed_energy.csv``, ``pstate_changes.csv``).

    python bench/fidelity/fuzz_vendor.py /tmp/batpolicy-fuzz-out/s119-... NAME
"""

from __future__ import annotations

import argparse
import gzip
import json
import logging
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
log = logging.getLogger("fuzz_vendor")
OUTPUTS = ("jobs.csv", "schedule.csv", "machine_states.csv", "schedule.trace",
           "consumed_energy.csv", "pstate_changes.csv")


def vendor(reproducer: Path, name: str, into: Path = ROOT / "tests" / "data" / "fuzz",
           note: str = "", known: str = "") -> Path:
    """Copy ``reproducer``'s minimal case and Batsim's side to ``into/name``; the folder.

    ``known``: the case is a known, not yet fixed difference, for this reason (case.json's
    ``known_difference``; the replay test expects it to fail, strictly).
    """
    case = json.loads((reproducer / "minimal.json").read_text())
    folder = into / name
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    inputs = reproducer / "inputs"
    shutil.copy(inputs / "platform.xml", folder / "platform.xml")
    shutil.copy(inputs / "workload.json", folder / "workload.json")
    if (inputs / "traces").is_dir():
        shutil.copytree(inputs / "traces", folder / "traces")
    meta = {"variant": case["variant"], "options": case["options"], "flags": case["flags"],
            "seed": case["seed"], "note": note}
    if known:
        meta["known_difference"] = known
    (folder / "case.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    conversation = (reproducer / "conversation.jsonl").read_bytes()
    if len(conversation) > 20_000:
        (folder / "conversation.jsonl.gz").write_bytes(gzip.compress(conversation, 9, mtime=0))
    else:
        (folder / "conversation.jsonl").write_bytes(conversation)
    for suffix in OUTPUTS:
        src = reproducer / "batsim" / f"out_{suffix}"
        if src.is_file():
            shutil.copy(src, folder / suffix)
    return folder


def main() -> int:
    """Command line: REPRODUCER NAME [--note TEXT]."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("reproducer", type=Path)
    ap.add_argument("name")
    ap.add_argument("--note", default="", help="what the case shows (case.json's note)")
    ap.add_argument("--known", default="",
                    help="a known difference not fixed yet: why (the replay test xfails)")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    log.info("%s", vendor(args.reproducer, args.name, note=args.note, known=args.known))
    return 0


if __name__ == "__main__":
    sys.exit(main())
