"""A Batsim 4.2.1 ``simulator.log`` (network/INFO lines) as a JSONL conversation.

Batsim logs every message it sends (``Sending '...'``) and every reply it receives
(``Received '...'``) at INFO level; this pairs them into the ``{"batsim": ..., "scheduler":
...}`` lines that ``tests/sim/test_transcript_fidelity.py``'s ``RecordedScheduler`` replays.

    python bench/fidelity/log_to_transcript.py simulator.log > run.jsonl
"""

from __future__ import annotations

import json
import re
import sys

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
            out.append(json.dumps({"batsim": pending, "scheduler": message}))
            pending = None
    return out


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8", errors="replace") as f:
        print("\n".join(convert(f.readlines())))
