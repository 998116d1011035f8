#!/usr/bin/env python3
"""The scheduler that recorded io_jobs-small_platform.jobs.csv beside real Batsim 4.2.1.

One job at a time: each submitted job, once the previous one ended, runs on the
allocation of the plan (``--plan io_jobs.plan.json``: job name -> ``alloc`` and
optional ``io``, the EXECUTE_JOB's ``additional_io_job``). Usage:
``io_jobs.scheduler.py --plan io_jobs.plan.json -s tcp://*:28000``.
"""
import json
import sys

import zmq


def main() -> None:
    """Serve one Batsim run: one REP message per Batsim message, until SIMULATION_ENDS."""
    args = sys.argv[1:]
    plan = json.load(open(args[args.index("--plan") + 1]))
    sock = zmq.Context().socket(zmq.REP)
    sock.bind(args[args.index("-s") + 1])
    queue: list[str] = []
    running = False
    while True:
        msg = json.loads(sock.recv())
        now = msg["now"]
        out = []
        end = False
        for ev in msg["events"]:
            if ev["type"] == "JOB_SUBMITTED":
                queue.append(ev["data"]["job_id"])
            elif ev["type"] == "JOB_COMPLETED":
                running = False
            elif ev["type"] == "SIMULATION_ENDS":
                end = True
        if not running and queue:
            job_id = queue.pop(0)
            entry = plan[job_id.split("!")[1]]
            data = {"job_id": job_id, "alloc": entry["alloc"]}
            if "io" in entry:
                data["additional_io_job"] = entry["io"]
            out.append({"timestamp": now, "type": "EXECUTE_JOB", "data": data})
            running = True
        sock.send(json.dumps({"now": now, "events": out}).encode())
        if end:
            break


if __name__ == "__main__":
    main()
