"""Record a whole Batsim conversation: a ZeroMQ REP <-> REQ relay between Batsim and a scheduler.

Batsim connects to the relay's REP socket; the relay forwards each message to the
scheduler's REP socket through a REQ socket and sends the reply back, writing
``{"batsim": <message>, "scheduler": <reply>}`` as one JSON line per exchange (the format
of the shared transcripts, read by :func:`batpolicy.protocol.transcript.read_transcript`).
It stops after the reply to SIMULATION_ENDS.

    python bench/fidelity/relay.py --listen tcp://*:28001 --scheduler tcp://localhost:28000 \
        --out run.jsonl
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

import zmq

log = logging.getLogger("relay")


def relay(listen: str, scheduler: str, out: Path, timeout_s: float = 600.0) -> int:
    """Relay until SIMULATION_ENDS has been answered; return the number of exchanges."""
    ctx = zmq.Context.instance()
    front = ctx.socket(zmq.REP)
    front.bind(listen)
    back = ctx.socket(zmq.REQ)
    back.setsockopt(zmq.LINGER, 0)
    back.connect(scheduler)
    front.setsockopt(zmq.RCVTIMEO, int(timeout_s * 1000))
    back.setsockopt(zmq.RCVTIMEO, int(timeout_s * 1000))
    count = 0
    with out.open("w") as file:
        while True:
            message = front.recv()
            back.send(message)
            reply = back.recv()
            front.send(reply)
            request = json.loads(message)
            file.write(json.dumps({"batsim": request, "scheduler": json.loads(reply)},
                                  separators=(", ", ": ")) + "\n")
            file.flush()
            count += 1
            if any(e.get("type") == "SIMULATION_ENDS" for e in request.get("events", ())):
                break
    front.close(0)
    back.close(0)
    return count


def main() -> None:
    """Command line: --listen, --scheduler, --out."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", required=True)
    parser.add_argument("--scheduler", required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO)
    n = relay(args.listen, args.scheduler, args.out, args.timeout)
    log.info("%d exchanges recorded in %s", n, args.out)


if __name__ == "__main__":
    main()
