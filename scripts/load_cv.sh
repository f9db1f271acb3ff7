#!/bin/sh
# load_cv.sh MODEL SECONDS OUTDIR [PORT] — does a loaded status server disturb
# the timing? Two real CPU runs of models/MODEL.yaml with the same seed and
# budget, one after the other: OUTDIR/quiet with nobody asking the status
# server, OUTDIR/loaded with wrk (8 connections, one thread) asking /status
# and /metrics in turn for the whole run. wrk is pinned off the last core,
# where dtune times kernels: the question is whether the server disturbs the
# timing, not whether a load generator on the timing core does. Prints per run the measurements,
# the median and 90th percentile of their coefficient of variation (the
# runner's CV over a measurement's batches) and the median GFLOPS of the
# configs both runs measured; then wrk's requests and errors. The cores must
# be otherwise idle.
set -eu

if [ $# -lt 3 ] || [ $# -gt 4 ]; then
    echo "usage: $0 MODEL SECONDS OUTDIR [PORT]   (e.g. $0 resnet18 180 runs/load_cv)" >&2
    exit 2
fi
model=$1 seconds=$2 outdir=$3 port=${4:-8089}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
[ -f "models/$model.yaml" ] || { echo "$0: no models/$model.yaml" >&2; exit 2; }
make --no-print-directory bench >/dev/null   # installs wrk and jq when missing
mkdir -p "$outdir"
. scripts/machine.sh
echo "$machine" > "$outdir/machine.txt"

run() {  # NAME
    rm -rf "${outdir:?}/$1"
    bin/dtune tune --model "models/$model.yaml" --budget "$seconds" --seed 1 \
        --out "$outdir/$1" --listen "127.0.0.1:$port" --db off > "$outdir/$1.out" 2>&1
}

run quiet
cat > "$outdir/paths.lua" <<'LUA'
local n = 0
request = function()
    n = n + 1
    return wrk.format("GET", n % 2 == 0 and "/status" or "/metrics")
end
LUA
run loaded &
pid=$!
sleep 2
others=0-$(( $(nproc) - 2 ))
[ "$(nproc)" -gt 1 ] || others=0
taskset -c "$others" wrk -t1 -c8 -d"$((seconds - 4))s" -s "$outdir/paths.lua" "http://127.0.0.1:$port" \
    > "$outdir/wrk.txt" 2>&1 || true
wait "$pid"

# One line per OK measurement: config index, task, cv, gflops.
measurements() {
    jq -r 'select(.type == "measure" and .result == "ok") | "\(.task_index) \(.config) \(.cv) \(.gflops)"' \
        "$outdir/$1/tuning.jsonl"
}
quantile() {  # Q: the Q-quantile of the numbers on standard input
    sort -g | awk -v q="$1" '{ v[NR] = $1 } END { if (NR == 0) { print "nan"; exit }
        i = int(q * (NR - 1)) + 1; printf "%.4f\n", v[i] }'
}
for name in quiet loaded; do
    measurements "$name" > "$outdir/$name.m"
    printf '%-7s %6d measurements, CV median %s, p90 %s\n' "$name" "$(wc -l < "$outdir/$name.m")" \
        "$(cut -d' ' -f3 "$outdir/$name.m" | quantile 0.5)" \
        "$(cut -d' ' -f3 "$outdir/$name.m" | quantile 0.9)"
done
# Configs both runs measured: loaded GFLOPS / quiet GFLOPS, median.
awk 'NR == FNR { q[$1 " " $2] = $4; next } ($1 " " $2) in q && q[$1 " " $2] > 0 { print $4 / q[$1 " " $2] }' \
    "$outdir/quiet.m" "$outdir/loaded.m" > "$outdir/ratio.m"
printf 'configs both measured: %d, loaded / quiet GFLOPS median %s\n' "$(wc -l < "$outdir/ratio.m")" \
    "$(quantile 0.5 < "$outdir/ratio.m")"
grep -E 'requests in|Non-2xx|Socket errors' "$outdir/wrk.txt" || true
