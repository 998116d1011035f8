#!/usr/bin/env bash
# Regenerate every committed benchmark result in bench/results/ (takes minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
for script in bench/sim_throughput.py bench/dpsa_decision_time.py bench/dpsa_vs_easy.py \
              bench/deadline_fig4.py; do
  if [ -f "$script" ]; then
    echo "== $script"
    python "$script" "$@"
  fi
done
