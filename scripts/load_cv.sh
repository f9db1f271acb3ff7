#!/bin/sh
# load_cv.sh MODEL SECONDS OUTDIR [PORT] — does a loaded status server disturb
# the timing? PAIRS (default 1) pairs of real CPU runs of models/MODEL.yaml
# with the same seed and budget, one after the other: OUTDIR/pN/quiet with
# nobody asking the status server, OUTDIR/pN/loaded with wrk (8
# connections, one thread) asking /status and /metrics in turn for the
# whole run. wrk is pinned off the last core, where dtune times kernels: the
# question is whether the server disturbs the timing, not whether a load
# generator on the timing core does. Halfway through each loaded run the
# /metrics page is checked with `promtool check metrics`. Prints per run
# the measurements, the median and 90th percentile of their coefficient of
# variation (the runner's CV over a measurement's batches), per pair the
# median loaded / quiet GFLOPS of the configs both runs measured and wrk's
# requests and errors; with several pairs, the medians over pairs. The
# cores must be otherwise idle.
set -eu

if [ $# -lt 3 ] || [ $# -gt 4 ]; then
    echo "usage: [PAIRS=N] $0 MODEL SECONDS OUTDIR [PORT]   (e.g. PAIRS=3 $0 resnet18 150 runs/load_cv)" >&2
    exit 2
fi
model=$1 seconds=$2 outdir=$3 port=${4:-8089}
pairs=${PAIRS:-1}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
[ -f "models/$model.yaml" ] || { echo "$0: no models/$model.yaml" >&2; exit 2; }
make --no-print-directory bench >/dev/null   # installs wrk, jq and promtool when missing
mkdir -p "$outdir"
. scripts/machine.sh
echo "$machine" > "$outdir/machine.txt"
cat > "$outdir/paths.lua" <<'LUA'
local n = 0
request = function()
    n = n + 1
    return wrk.format("GET", n % 2 == 0 and "/status" or "/metrics")
end
LUA

run() {  # DIR NAME
    rm -rf "${1:?}/$2"
    bin/dtune tune --model "models/$model.yaml" --budget "$seconds" --seed 1 \
        --out "$1/$2" --listen "127.0.0.1:$port" --db off > "$1/$2.out" 2>&1
}

# One line per OK measurement: config index, task, cv, gflops.
measurements() {  # RUN_DIR
    jq -r 'select(.type == "measure" and .result == "ok") | "\(.task_index) \(.config) \(.cv) \(.gflops)"' \
        "$1/tuning.jsonl"
}
quantile() {  # Q: the Q-quantile of the numbers on standard input
    sort -g | awk -v q="$1" '{ v[NR] = $1 } END { if (NR == 0) { print "nan"; exit }
        i = int(q * (NR - 1)) + 1; printf "%.4f\n", v[i] }'
}

others=0-$(( $(nproc) - 2 ))
[ "$(nproc)" -gt 1 ] || others=0
: > "$outdir/pairs.txt"
for p in $(seq 1 "$pairs"); do
    dir="$outdir/p$p"
    mkdir -p "$dir"
    run "$dir" quiet
    run "$dir" loaded &
    pid=$!
    sleep 2
    ( sleep "$((seconds / 2))"
      if curl -s -m 5 "http://127.0.0.1:$port/metrics" > "$dir/metrics.txt" &&
         promtool check metrics < "$dir/metrics.txt" > "$dir/promtool.txt" 2>&1; then
          echo "promtool check metrics under load: no finding" > "$dir/promtool.verdict"
      else
          echo "promtool check metrics under load: FINDINGS or no page (promtool.txt)" > "$dir/promtool.verdict"
      fi ) &
    checker=$!
    taskset -c "$others" wrk -t1 -c8 -d"$((seconds - 4))s" -s "$outdir/paths.lua" "http://127.0.0.1:$port" \
        > "$dir/wrk.txt" 2>&1 || true
    wait "$pid"
    wait "$checker" || true
    echo "# pair $p ($(date -u +%H:%MZ))"
    cvs=""
    for name in quiet loaded; do
        measurements "$dir/$name" > "$dir/$name.m"
        cv=$(cut -d' ' -f3 "$dir/$name.m" | quantile 0.5)
        cvs="$cvs $cv"
        printf '%-7s %6d measurements, CV median %s, p90 %s\n' "$name" "$(wc -l < "$dir/$name.m")" \
            "$cv" "$(cut -d' ' -f3 "$dir/$name.m" | quantile 0.9)"
    done
    # Configs both runs measured: loaded GFLOPS / quiet GFLOPS, median.
    awk 'NR == FNR { q[$1 " " $2] = $4; next } ($1 " " $2) in q && q[$1 " " $2] > 0 { print $4 / q[$1 " " $2] }' \
        "$dir/quiet.m" "$dir/loaded.m" > "$dir/ratio.m"
    ratio=$(quantile 0.5 < "$dir/ratio.m")
    printf 'configs both measured: %d, loaded / quiet GFLOPS median %s\n' "$(wc -l < "$dir/ratio.m")" "$ratio"
    grep -E 'requests in|Non-2xx|Socket errors' "$dir/wrk.txt" || true
    cat "$dir/promtool.verdict"
    echo "${cvs# } $ratio" >> "$outdir/pairs.txt"
done
if [ "$pairs" -gt 1 ]; then
    col() { awk "{ print \$$1 }" "$outdir/pairs.txt" | quantile 0.5; }
    echo "# over $pairs pairs (median): CV quiet $(col 1), CV loaded $(col 2)," \
         "loaded / quiet CV $(awk '$1 > 0 { print $2 / $1 }' "$outdir/pairs.txt" | quantile 0.5)," \
         "loaded / quiet GFLOPS $(col 3)"
fi
