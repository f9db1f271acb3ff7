#!/bin/sh
# export_timing.sh RUN_DIR [READINGS] [MODEL.yaml]
#
# Does an export time its kernels as dtune did? Exports RUN_DIR (into
# RUN_DIR/export), builds it, then for every task takes READINGS (default 5)
# readings of the export's test program and READINGS of `dtune measure` on
# the same config, both pinned to the last core as dtune pins its runner,
# one after the other; both warm, calls back to back (the export's test
# program times so; `--cold-weights false`), while a run's best.json holds
# cold figures (measure.cold_weights). Prints per task: best.json's latency, the median and
# range of dtune measure's readings (dtune's own noise), the same of the
# export's, and the ratio of the medians. Needs otherwise idle cores: run it
# on a quiet machine and keep its output (bench/out/, with date and machine).
#
# MODEL.yaml: the model file, when the one tuning.jsonl records is not
# reachable from here (see `dtune export -m`).
set -eu
run=${1:?usage: export_timing.sh RUN_DIR [READINGS] [MODEL.yaml]}
readings=${2:-5}
dtune=${DTUNE:-bin/dtune}
model=${3:-$(sed -n '1s/.*"model":"\([^"]*\)".*/\1/p' "$run/tuning.jsonl")}
out="$run/export"
cpu=$(( $(nproc) - 1 ))
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$dtune" export "$run" -o "$out" -m "$model" >/dev/null
make -s -C "$out" >/dev/null
test_bin=$(ls "$out"/*_test)

# task and best config, in best.json's order (dtune writes one key per line)
awk -F': ' '/"name":/ { gsub(/[",]/, "", $2); name = $2 }
            /"best_config":/ { gsub(/,/, "", $2); print name, $2 }' "$run/best.json" >"$tmp/tasks"

median() { sort -g | awk '{ v[NR] = $1 } END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
                                               printf "%.6f %.6f %.6f\n", m, v[1], v[NR] }'; }

printf '%-20s %12s %32s %32s %8s\n' task best.json_ms "dtune measure ms: median [range]" \
    "export ms: median [range]" ratio
while read -r task config; do
    [ "$config" = null ] && continue
    : >"$tmp/dtune"
    : >"$tmp/export"
    i=0
    while [ "$i" -lt "$readings" ]; do
        "$dtune" measure "$model" "$task" --config "$config" --cold-weights false |
            awk '$1 == "latency" { print $2 }' >>"$tmp/dtune"
        taskset -c "$cpu" "$test_bin" "$task" |
            awk -v t="$task" '$1 == t && $2 == "ok" { for (i = 3; i < NF; i++) if ($i == "ms") print $(i + 1) }' >>"$tmp/export"
        i=$((i + 1))
    done
    best=$(awk -v t="$task" -F': ' '/"name":/ { gsub(/[",]/, "", $2); n = $2 }
                                   /"best_latency_ms":/ && n == t { gsub(/,/, "", $2); print $2 }' "$run/best.json")
    set -- $(median <"$tmp/dtune") $(median <"$tmp/export")
    printf '%-20s %12.6f %12.6f [%.6f, %.6f] %12.6f [%.6f, %.6f] %8.3f\n' "$task" "$best" \
        "$1" "$2" "$3" "$4" "$5" "$6" "$(echo "$4 $1" | awk '{ print $1 / $2 }')"
done <"$tmp/tasks"
