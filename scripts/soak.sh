#!/bin/sh
# soak.sh SECONDS OUTDIR [MODEL] [PORT] — a long replay run that should not
# leak. `dtune tune` on the replay backend (no kernel is timed, so the run is
# a soak of the daemon itself: scheduler, beliefs, tuners, log, reports,
# status server) with slots of SLOT_TRIALS (default 2) measured configs, a
# light PPO agent (16 episodes of at most 100 steps) and a light cost model
# (ROUNDS, default 20, boosting rounds per fit; every fit trains on all the
# task's records, so its cost grows with the run), so a two-hour run has
# well over 10,000 slots and every slot measures. Every SAMPLE seconds (default 30) it records the process's
# resident memory, open file descriptors, the log's size and records, and
# the slot and trial counts the status server reports (asking /status and
# /metrics, so the server is soaked too) into OUTDIR/samples.csv. At the end
# it checks that the run ended by its budget, that the log, best.json and the
# last /metrics agree on the measurements, that `dtune report` reads the run
# back, and prints how memory and descriptors moved after the warm-up (the
# first tenth of the run) against the records the tuners then held, so a
# leak (memory that grows with slots) is told apart from the measured
# history the cost models train on (memory that grows with records): the
# run reports the bytes it keeps by design (/metrics' dtune_history_bytes:
# the tuners' histories, the transfer store, the latency curve and the
# decisions), and RSS less those bytes is what must stay flat.
# Runs niced (SOAK_NICE, default 19): it is not a timing run and must not be
# one's neighbour.
set -eu

if [ $# -lt 2 ] || [ $# -gt 4 ]; then
    echo "usage: $0 SECONDS OUTDIR [MODEL] [PORT]   (e.g. $0 7200 runs/soak mobilenet_v2)" >&2
    exit 2
fi
seconds=$1 outdir=$2 model=${3:-mobilenet_v2} port=${4:-8097}
sample=${SAMPLE:-30}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
[ -f "models/$model.yaml" ] || { echo "$0: no models/$model.yaml" >&2; exit 2; }
mkdir -p "$outdir"
outdir=$(cd "$outdir" && pwd)
. scripts/machine.sh
echo "$machine" > "$outdir/machine.txt"
rm -rf "${outdir:?}/run"

cat > "$outdir/config.yaml" <<EOF
model: $root/models/$model.yaml
backend: replay
seed: 1
budget:
  total_seconds: $seconds
  slot_trials: ${SLOT_TRIALS:-2}
scheduler:
  finish_after: 1000000000       # no task is ever done: the run lasts its budget
tuner:
  ppo:
    episodes: 16
    max_steps: 100
  cost_model:
    rounds: ${ROUNDS:-20}
output:
  dir: $outdir/run
server:
  listen: 127.0.0.1:$port
db:
  path: "off"
EOF

nice -n "${SOAK_NICE:-19}" bin/dtune tune -c "$outdir/config.yaml" > "$outdir/tune.out" 2>&1 &
pid=$!
start=$(date +%s)
echo "t_s,rss_kb,fds,log_bytes,log_lines,slot,measurements,history_kb" > "$outdir/samples.csv"
trials() {  # configurations measured, summed over the tasks of the last /metrics
    awk '/^dtune_task_trials_total[{ ]/ { s += $NF; n++ } END { if (n) printf "%d", s }' "$outdir/metrics.txt"
}
while kill -0 "$pid" 2>/dev/null; do
    rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
    fds=$(ls "/proc/$pid/fd" 2>/dev/null | wc -l)
    log="$outdir/run/tuning.jsonl"
    bytes=$(stat -c %s "$log" 2>/dev/null || echo 0)
    lines=$( (wc -l < "$log") 2>/dev/null || echo 0)
    slot=$(curl -s -m 5 "127.0.0.1:$port/status" | jq -r '.slot // empty' 2>/dev/null || true)
    curl -s -m 5 "127.0.0.1:$port/metrics" > "$outdir/metrics.txt" 2>/dev/null || true
    meas=$(trials)
    held=$(awk '/^dtune_history_bytes / { printf "%d", $2 / 1024 }' "$outdir/metrics.txt")
    [ -n "$rss" ] && echo "$(( $(date +%s) - start )),$rss,$fds,$bytes,$lines,$slot,$meas,$held" >> "$outdir/samples.csv"
    sleep "$sample"
done
wait "$pid" && rc=0 || rc=$?
echo "dtune exit $rc after $(( $(date +%s) - start )) s" | tee "$outdir/summary.txt"

{
    tail -3 "$outdir/tune.out"
    logged=$(grep -c '"type":"measure"' "$outdir/run/tuning.jsonl" || true)
    slots=$(grep -c '"type":"slot"' "$outdir/run/tuning.jsonl" || true)
    echo "log: $logged measure records, $slots slot records (goal: 10,000 slots or more)"
    echo "last /metrics sample (up to $sample s before the end): $(trials) trials"
    if promtool check metrics < "$outdir/metrics.txt" > "$outdir/promtool.txt" 2>&1; then
        echo "promtool check metrics: no finding on the last /metrics sample"
    else
        echo "promtool check metrics: FINDINGS (promtool.txt)"; rc=1
    fi
    if bin/dtune report "$outdir/run" > "$outdir/report.txt" 2>&1; then
        echo "dtune report: read back ($(wc -l < "$outdir/report.txt") lines)"
    else
        echo "dtune report: FAILED"; rc=1
    fi
    # best.json's latency of each task is the least latency the log holds
    # for it (both are what the run measured)
    jq -r '.tasks[] | "\(.name) \(.best_latency_ms)"' "$outdir/run/best.json" 2>/dev/null | sort > "$outdir/best_tasks.txt" || true
    jq -r 'select(.type=="measure" and .result=="ok") | "\(.task) \(.latency_ms)"' "$outdir/run/tuning.jsonl" |
        awk '{ if (!($1 in m) || $2 < m[$1]) m[$1] = $2 } END { for (k in m) print k, m[k] }' | sort > "$outdir/log_best.txt"
    if [ -s "$outdir/best_tasks.txt" ] &&
       awk 'NR==FNR { b[$1]=$2; next } { d = b[$1] - $2; if (d < 0) d = -d; if (!($1 in b) || d > 1e-9 * $2) bad++ } END { exit bad > 0 }' \
           "$outdir/best_tasks.txt" "$outdir/log_best.txt"; then
        echo "best.json: every task's latency is the log's least ($(wc -l < "$outdir/log_best.txt") tasks)"
    else
        echo "best.json: DISAGREES with the log (see best_tasks.txt, log_best.txt)"; rc=1
    fi
    # after warm-up (first tenth): memory and descriptors against slots and records
    awk -F, -v total="$seconds" 'NR > 1 && $1 >= total / 10 {
            if (!n++) { t0=$1; r0=$2; f0=$3; s0=$6; m0=$7; h0=$8 }
            t1=$1; r1=$2; f1=$3; s1=$6; m1=$7; h1=$8
            if ($8 != "") {   # least squares of RSS less what the run keeps on slots
                x = $6; y = ($2 - $8) * 1024; k++; sx += x; sy += y; sxx += x * x; sxy += x * y
                if (lo == "" || y < lo) lo = y; if (y > hi) hi = y }
            if ($2 > rmax) rmax = $2; if (fmin == "" || $3 < fmin) fmin = $3; if ($3 > fmax) fmax = $3 }
        END { if (n < 2) { print "too few samples after warm-up"; exit }
              printf "after warm-up (%d s to %d s, %d samples): RSS %d -> %d kB (max %d), fds %d..%d, slots %d -> %d, measurements %d -> %d\n", t0, t1, n, r0, r1, rmax, fmin, fmax, s0, s1, m0, m1
              if (m1 > m0) printf "RSS growth per measurement after warm-up: %.0f bytes\n", (r1 - r0) * 1024 / (m1 - m0)
              if (h0 != "" && h1 != "") {
                  printf "what the run keeps by design (dtune_history_bytes): %d -> %d kB; RSS less it: %d -> %d kB\n", h0, h1, r0 - h0, r1 - h1
                  if (k > 2 && k * sxx > sx * sx)
                      printf "RSS less what the run keeps, after warm-up: %.1f to %.1f MB, least-squares slope %.0f bytes per slot\n", lo / 1048576, hi / 1048576, (k * sxy - sx * sy) / (k * sxx - sx * sx) } }' \
        "$outdir/samples.csv"
} | tee -a "$outdir/summary.txt"
exit "$rc"
