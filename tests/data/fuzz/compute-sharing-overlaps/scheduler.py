#!/usr/bin/env python3
"""Start every submitted job at once on machines 0 to res-1 (compute sharing)."""
import json
import sys

import zmq


def main() -> None:
    """One REP reply per Batsim message, until SIMULATION_ENDS."""
    args = sys.argv[1:]
    sock = zmq.Context().socket(zmq.REP)
    sock.bind(args[args.index("-s") + 1])
    while True:
        msg = json.loads(sock.recv())
        now, out, end = msg["now"], [], False
        for ev in msg["events"]:
            if ev["type"] == "JOB_SUBMITTED":
                res = ev["data"]["job"]["res"]
                out.append({"timestamp": now, "type": "EXECUTE_JOB",
                            "data": {"job_id": ev["data"]["job_id"], "alloc": f"0-{res - 1}"}})
            elif ev["type"] == "SIMULATION_ENDS":
                end = True
        sock.send(json.dumps({"now": now, "events": out}).encode())
        if end:
            break


if __name__ == "__main__":
    main()
