"""The cheapest FCFS scheduler we can write in Python: the floor under ``serve --policy fcfs``.

A design measurement for issue 14, run by ``serve_vs_batsched.py --schedulers
batsched-fcfs serve-fcfs floor-fcfs``: how much of serve's CPU beside Batsim is ours
(decoding into typed events, the state, the read-only view, the checker, the codec's
checks) and how much any CPython scheduler pays on this machine? This one does only what
batsched's ``fcfs`` does, on raw JSON dicts: no validation, no typed events, no state
beyond a FIFO queue and a free-flag list, no checker, replies built as dicts and dumped
with orjson. Same decisions as batsched fcfs (heads start in order on the lowest free
ids while they fit; jobs larger than the platform are rejected), so Batsim sends it the
same messages. Not a product: never use it to schedule anything.

Usage (as the benchmark starts it)::

    python bench/performance/floor_fcfs.py tcp://127.0.0.1:28000
"""

from __future__ import annotations

import sys
from collections import deque

import orjson
import zmq


def _alloc_string(ids: list[int]) -> str:
    """Batsim's interval string of sorted machine ids.

    Not :func:`batpolicy.protocol.intervals.format_intervals` (nor ``parse_intervals``
    below): the floor measures a scheduler that uses none of our layers, machine sets included.
    """
    parts = []
    start = prev = ids[0]
    for i in ids[1:]:
        if i != prev + 1:
            parts.append(f"{start}-{prev}" if prev > start else str(start))
            start = i
        prev = i
    parts.append(f"{start}-{prev}" if prev > start else str(start))
    return " ".join(parts)


def _ids(text: str) -> list[int]:
    """Machine ids of a Batsim interval string."""
    out: list[int] = []
    for token in text.split():
        lo, _, hi = token.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def main(endpoint: str) -> int:
    """Answer Batsim until SIMULATION_ENDS."""
    context = zmq.Context()
    socket = context.socket(zmq.REP)
    socket.bind(endpoint)
    free: list[bool] = []
    nfree = 0
    queue: deque[tuple[str, int]] = deque()
    while True:
        message = orjson.loads(socket.recv())
        now = message["now"]
        out = []
        ended = False
        for event in message["events"]:
            kind, data = event["type"], event["data"]
            if kind == "JOB_SUBMITTED":
                res = data["job"]["res"]
                if 0 < res <= len(free):
                    queue.append((data["job_id"], res))
                else:
                    out.append({"timestamp": now, "type": "REJECT_JOB",
                                "data": {"job_id": data["job_id"]}})
            elif kind == "JOB_COMPLETED":
                for i in _ids(data["alloc"]):
                    free[i] = True
                    nfree += 1
            elif kind == "SIMULATION_BEGINS":
                free = [True] * data["nb_compute_resources"]
                nfree = len(free)
            elif kind == "SIMULATION_ENDS":
                ended = True
        while queue and queue[0][1] <= nfree:
            job_id, res = queue.popleft()
            ids = []
            for i, idle in enumerate(free):
                if idle:
                    ids.append(i)
                    free[i] = False
                    if len(ids) == res:
                        break
            nfree -= res
            out.append({"timestamp": now, "type": "EXECUTE_JOB",
                        "data": {"job_id": job_id, "alloc": _alloc_string(ids)}})
        socket.send(orjson.dumps({"now": now, "events": out}))
        if ended:
            socket.close(linger=0)
            context.term()
            return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
