"""A Batsim 4.2.1 ``simulator.log`` (network/INFO lines) as a JSONL conversation.

Batsim logs every message it sends (``Sending '...'``) and every reply it receives
(``Received '...'``) at INFO level; this pairs them into the ``{"batsim": ..., "scheduler":
...}`` lines that ``tests/sim/test_transcript_fidelity.py``'s ``RecordedScheduler`` replays.
A reply with a number of over 15 digits (or an exponent) also keeps its text
(``scheduler_text``): Batsim reads such numbers from the text, and two texts of one double
can read as two doubles (``json_quirks.text_readings``).

    python bench/fidelity/log_to_transcript.py simulator.log > run.jsonl
"""

from __future__ import annotations

import json
import re
import sys

from batpolicy.simulator.json_quirks import read_by_text

_LINE = re.compile(r"\[network/INFO\] (Sending|Received) '(.*)'$")


def convert(lines: list[str]) -> list[str]:
    """The conversation's JSONL lines, one per message and its reply."""
    out, pending = [], None
    for line in lines:
        m = _LINE.search(line.rstrip("\n"))
        if not m:
            continue
        message = json.loads(m.group(2))
        if m.group(1) == "Sending":
            pending = message
        elif pending is not None:
            line = {"batsim": pending, "scheduler": message}
            if read_by_text(m.group(2)):  # Batsim reads its numbers from the text
                line["scheduler_text"] = m.group(2)
            out.append(json.dumps(line))
            pending = None
    return out


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8", errors="replace") as f:
        print("\n".join(convert(f.readlines())))
