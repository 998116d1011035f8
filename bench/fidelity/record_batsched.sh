#!/usr/bin/env bash
# Record one real Batsim 4.2.1 + batsched 1.4 conversation (jsonl) and Batsim's outputs.
#
#   bench/fidelity/record_batsched.sh VARIANT WORKLOAD PLATFORM OUT_PREFIX [BATSIM_PREFIX]
#
# Runs `batsched -v VARIANT` behind bench/fidelity/relay.py (which writes OUT_PREFIX.jsonl,
# one {"batsim": ..., "scheduler": ...} object per exchange) and Batsim with
# `-e OUT_PREFIX` (OUT_PREFIX_jobs.csv, OUT_PREFIX_schedule.csv). Absolute workload paths
# in SIMULATION_BEGINS are replaced by /path/to/inputs/FILE, as in the shared transcripts.
set -euo pipefail
variant=$1 workload=$2 platform=$3 out=$4 prefix=${5:-/opt/batsim-4.2.1}
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-python3}
free_port() { "$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
sport=$(free_port); rport=$(free_port)
"$prefix/bin/batsched" -v "$variant" -s "tcp://*:$sport" >/dev/null 2>&1 &
sched=$!
"$py" "$here/relay.py" --listen "tcp://*:$rport" --scheduler "tcp://localhost:$sport" \
    --out "$out.jsonl" 2>/dev/null &
relay=$!
trap 'kill $sched $relay 2>/dev/null || true' EXIT
"$prefix/bin/batsim" -p "$platform" -w "$workload" -e "$out" -s "tcp://localhost:$rport" \
    >/dev/null 2>&1
wait $relay
dir=$(cd "$(dirname "$workload")" && pwd)
sed -i "s#$dir/#/path/to/inputs/#g" "$out.jsonl"
