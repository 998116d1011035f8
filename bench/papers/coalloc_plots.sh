#!/bin/sh
# The co-allocation figures of docs/coalloc.md (seed 003 Figs. 9-11, 14-21 as heatmaps,
# 22-27), drawn by `batpolicy plot` from the committed campaign results:
#
#     batpolicy campaign bench/campaigns/coalloc_fig9.toml     # ... fig10, fig11, modules
#     sh bench/papers/coalloc_plots.sh
set -e
cd "$(dirname "$0")/.."
R=bench/campaigns/results
O=docs/examples/plots
TAT="--metric mean_turnaround_time"
for f in "9 2 8000" "10 4 8000" "11 8 16000"; do
    set -- $f
    batpolicy plot $R/coalloc_fig$1 --line preset.bsbw_mbps --by label $TAT --log-y \
        --title "Fig. $1: $2 clusters x 100 nodes, coalloc-4.3, $3 jobs" -o $O/coalloc_fig$1.png
done
M=$R/coalloc_modules
BASE="migration-only,ideal"
batpolicy plot $M --line preset.bsbw_mbps --by label $TAT \
    --where "label=a1,b1,b2,b3-85,b4,$BASE" --where param.lslt=1.0, \
    --title "Fig. 22: modules at LSLT 100 %, 4 clusters, coalloc-6.1, 6000 jobs" \
    -o $O/coalloc_fig22.png
batpolicy plot $M --line preset.bsbw_mbps --by label $TAT \
    --where "label=b3-70,b3-80,b3-85,b3-90,$BASE" --where param.lslt=1.0, \
    --title "Fig. 23: B3 chunks at LSLT 100 %, 4 clusters, coalloc-6.1, 6000 jobs" \
    -o $O/coalloc_fig23.png
for f in "24 200 low a1,b1,b2,b3-85,b4 modules" "25 800 high a1,b1,b2,b3-85,b4 modules" \
         "26 200 low b3-70,b3-80,b3-85,b3-90 B3-chunks" "27 800 high b3-70,b3-80,b3-85,b3-90 B3-chunks"; do
    set -- $f
    batpolicy plot $M --line param.lslt --by label $TAT \
        --where "label=$4,$BASE" --where preset.bsbw_mbps=$2, \
        --title "Fig. $1: $5 at $3 BSBW ($2 Mbps) vs LSLT, 4 clusters, 6000 jobs" \
        -o $O/coalloc_fig$1.png
done
for m in a1 b1 b2 b4 b3-70 b3-80 b3-85 b3-90; do
    batpolicy plot $M --heatmap preset.bsbw_mbps param.lslt $TAT --where label=$m \
        --title "$m: mean turnaround (s), BSBW x LSLT" -o $O/coalloc_heatmap_$m.png
done
