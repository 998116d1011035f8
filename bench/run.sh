#!/usr/bin/env bash
# Regenerate every committed benchmark result in bench/results/ (takes minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
for script in bench/performance/sim_throughput.py bench/papers/dpsa_decision_time.py bench/papers/dpsa_vs_easy.py \
              bench/papers/deadline_fig4.py; do
  if [ -f "$script" ]; then
    echo "== $script"
    python "$script" "$@"
  fi
done
