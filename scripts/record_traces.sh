#!/bin/sh
# record_traces.sh MODEL SEED TRIALS OUTDIR — records real CPU tuning traces
# for bench/sched_bench: every task of models/MODEL.yaml tuned once, TRIALS
# trials in one contiguous slot per task (round_robin, one slot each), with
# the chameleon tuner, into OUTDIR/MODEL-sSEED/tuning.jsonl; then converts
# the log into TRACE_DIR/MODEL-sSEED.csv with bin/trace_convert (TRACE_DIR:
# bench/traces unless set; a set recorded on another machine kind goes into
# a directory of its own, since a set of traces never mixes machines).
#
# Running the same command again after an interruption resumes the run from
# its tuning.jsonl (the daemon restores the round-robin cursor). A run dir
# holding records from another machine is refused: a trace never mixes
# machines. TRACE_NOTE, when set, is written into the trace's header.
set -eu

if [ $# -ne 4 ]; then
    echo "usage: $0 MODEL SEED TRIALS OUTDIR   (e.g. $0 resnet18 1 200 runs/traces)" >&2
    exit 2
fi
model=$1 seed=$2 trials=$3 outdir=$4
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
yaml=models/$model.yaml
[ -f "$yaml" ] || { echo "$0: no $yaml" >&2; exit 2; }
[ -x bin/dtune ] || make --no-print-directory build
if [ ! -x bin/trace_convert ] || [ bench/trace_convert.c -nt bin/trace_convert ]; then
    # Built like the benches (same flags, linked with build/libdtune.a).
    make --no-print-directory build/libdtune.a
    pkgs="gsl yaml-0.1 jansson libmicrohttpd xgboost plplot sqlite3"
    ${CC:-cc} -Iinclude -D_GNU_SOURCE -std=c11 -O2 -g -Wall -Wextra -Werror -Wshadow \
        -Wmissing-prototypes -Wno-unused-parameter -pthread $(pkg-config --cflags $pkgs) \
        -o bin/trace_convert bench/trace_convert.c build/libdtune.a \
        $(pkg-config --libs $pkgs) -ldl -lm -pthread
fi

ntasks=$(bin/dtune models "$yaml" | sed -n 's/^model [^:]*: \([0-9]*\) tasks.*/\1/p')
[ -n "$ntasks" ] || { echo "$0: cannot count the tasks of $yaml" >&2; exit 1; }

run=$outdir/$model-s$seed
mkdir -p "$run"
. scripts/machine.sh
if [ -f "$run/machine.txt" ] && [ "$(cat "$run/machine.txt")" != "$machine" ]; then
    echo "$0: $run was recorded on '$(cat "$run/machine.txt")', this is '$machine'; use another OUTDIR" >&2
    exit 1
fi
echo "$machine" > "$run/machine.txt"
git rev-parse --short HEAD > "$run/commit.txt" 2>/dev/null || echo unknown > "$run/commit.txt"
[ -f "$run/started.txt" ] || date -u +%Y-%m-%dT%H:%M:%SZ > "$run/started.txt"

echo "recording $model seed $seed: $ntasks tasks x $trials trials into $run" >&2
bin/dtune tune --model "$yaml" --policy round_robin --strategy chameleon \
    --slot-trials "$trials" --max-slots "$ntasks" --finish-after 1000000 \
    --budget 1000000 --seed "$seed" --out "$run" --listen off --db off

# A run stopped by a signal exits 0 too: convert only a complete recording.
done_slots=$(grep -c '"type":"slot".*"task_index":[0-9]' "$run/tuning.jsonl" || true)
if [ "$done_slots" -lt "$ntasks" ]; then
    echo "$0: $run holds $done_slots of $ntasks task slots; run the same command again to resume" >&2
    exit 1
fi
tracedir=${TRACE_DIR:-bench/traces}
mkdir -p "$tracedir"
bin/trace_convert --trials "$trials" --machine "$machine" --commit "$(cat "$run/commit.txt")" \
    --date "$(cat "$run/started.txt")" ${TRACE_NOTE:+--note "$TRACE_NOTE"} \
    "$run" "$tracedir/$model-s$seed.csv"
echo "wrote $tracedir/$model-s$seed.csv" >&2
