#!/bin/sh
# db_benefit.sh [--backend replay] [--seed N] [TRIALS] [RUNS_DIR] [OUT_FILE] — how a run
# benefits from the tuning database: per task of resnet18, the trials and
# the task's own seconds to reach 95 % of R (the median of 10 fresh
# measurements of the best config any of the runs found on it,
# bench/remeasure.h), without a database and with the database of an
# earlier run.
#
# The runs, each with the same budget (TRIALS trials per task, default 200,
# in one contiguous slot per task: round_robin, one slot per task,
# chameleon; like scripts/record_traces.sh), seed N (default 1; every run of
# one call the same seed), and its own database
# file under RUNS_DIR (default runs/db_benefit; runs/db_benefit-sN for a
# seed N other than 1), so nothing touches the
# user's database:
#   (a) resnet18-no-db         resnet18, an empty database
#   (b) vgg16                  vgg16 into database V (vgg16.db), then
#       resnet18-with-vgg16    resnet18 on a copy of V: transfer between
#                              tasks of a kind only, no shape is shared
#   (c) resnet18               resnet18 into database R (resnet18.db), then
#       resnet18-with-resnet18 resnet18 again on a copy of R
# (a) and the first run of (c) are the same settings: two runs without a
# database, whose difference is the noise the other columns stand against.
#
# Resumable: a run that finished (RUN/done: its settings, its wall time and
# a random id) is not run again; one cut off is started again from nothing
# (a fresh database, or a fresh copy of its source's); a run whose settings
# changed, or whose source ran again since (another id), is run again. bin/db_bench then
# re-measures the runs' best configs (on the CPU: a few minutes) and prints the table, saved
# with the date, commit, settings, machine (scripts/machine.sh) and each
# run's wall time as OUT_FILE (default bench/out/db_benefit.txt; with
# --backend replay bench/out/db_benefit_replay.txt; -sN before .txt for a
# seed N other than 1). On the CPU the figures
# mean something only on quiet cores: nothing else may run meanwhile.
set -eu

backend=""
seed=1
while [ $# -ge 2 ]; do
    case $1 in
    --backend) backend=$2 ;;
    --seed) seed=$2 ;;
    *) break ;;
    esac
    shift 2
done
case ${1:-} in
--*) echo "$0: $1 wants a value" >&2; exit 2 ;;
esac
case $seed in
'' | *[!0-9]* | 0) echo "$0: --seed wants a positive integer, not '$seed'" >&2; exit 2 ;;
esac
# seed 1: runs/db_benefit and db_benefit.txt, no suffix
sfx=""
[ "$seed" -eq 1 ] || sfx=-s$seed
trials=${1:-200}
runs=${2:-runs/db_benefit$sfx}
out=${3:-bench/out/db_benefit${backend:+_$backend}$sfx.txt}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
make --no-print-directory build bin/db_bench >/dev/null
# the CPU backend's measurement process (bin/db_bench has no runner entry)
export DTUNE_CPU_RUNNER="$root/bin/dtune"
mkdir -p "$runs" "$(dirname "$out")"

# tune NAME MODEL [SOURCE]: the run RUNS_DIR/NAME of models/MODEL.yaml with
# database RUNS_DIR/NAME.db: empty, or a copy of run SOURCE's database.
tune() {
    name=$1 model=$2 source=${3:-}
    dir=$runs/$name db=$runs/$name.db
    from=none
    [ -z "$source" ] || from="$source@$(sed -n 3p "$runs/$source/done")"
    settings="model=$model trials=$trials backend=${backend:-cpu} seed=$seed source=$from"
    if [ -f "$dir/done" ] && [ "$(sed -n 1p "$dir/done")" = "$settings" ]; then
        echo "db_benefit: $name finished before ($(sed -n 2p "$dir/done")); not run again" >&2
        return 0
    fi
    ntasks=$(bin/dtune models "models/$model.yaml" | sed -n 's/^model [^:]*: \([0-9]*\) tasks.*/\1/p')
    [ -n "$ntasks" ] || { echo "$0: cannot count the tasks of models/$model.yaml" >&2; exit 1; }
    rm -rf "$dir" "$db" "$db-wal" "$db-shm"
    if [ -n "$source" ]; then
        # the source's process has ended, so its file holds everything (and a
        # -wal beside it, if any, goes with it)
        cp "$runs/$source.db" "$db"
        [ ! -f "$runs/$source.db-wal" ] || cp "$runs/$source.db-wal" "$db-wal"
    fi
    echo "db_benefit: $name: $model, database $db${source:+ (a copy of $source's)}" >&2
    start=$(date +%s)
    bin/dtune tune --model "models/$model.yaml" ${backend:+--backend "$backend"} --policy round_robin \
        --strategy chameleon --slot-trials "$trials" --max-slots "$ntasks" --finish-after 1000000 \
        --budget 1000000 --seed "$seed" --out "$dir" --listen off --db "$db"
    printf '%s\n%s s wall\n%s\n' "$settings" "$(( $(date +%s) - start ))" \
        "$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')" > "$dir/done"
}

tune resnet18-no-db resnet18
tune vgg16 vgg16
tune resnet18-with-vgg16 resnet18 vgg16
tune resnet18 resnet18
tune resnet18-with-resnet18 resnet18 resnet18

. scripts/machine.sh
{
    echo "# db_benefit.sh ${backend:+--backend $backend }${sfx:+--seed $seed }$trials $runs, $(date -u +%Y-%m-%dT%H:%M:%SZ)," \
         "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo "# machine: $machine"
    [ -z "$backend" ] || echo "# backend $backend: $(bin/dtune db machine --backend "$backend" --seed "$seed")," \
                              "a synthetic surface whose tasks are independent hashes:" \
                              "what transfer gains there is chance, not evidence"
    echo "# $trials trials per task, one slot per task (round_robin, chameleon), seed $seed;" \
         "goal: 95 % of R, the median of 10 fresh measurements of the best config any run found" \
         "(a run reaches it at its first incumbent that re-measures at it, median of 3);" \
         "seconds: the task's own tuning seconds"
    for name in resnet18-no-db vgg16 resnet18-with-vgg16 resnet18 resnet18-with-resnet18; do
        echo "# run $name: $(sed -n 2p "$runs/$name/done")"
    done
    bin/db_bench --model models/resnet18.yaml ${backend:+--backend "$backend"} --seed "$seed" \
        --work-dir "$runs/remeasure" \
        no-db="$runs/resnet18-no-db" no-db-again="$runs/resnet18" \
        with-vgg16-db="$runs/resnet18-with-vgg16" with-resnet18-db="$runs/resnet18-with-resnet18"
} > "$out.tmp"
mv "$out.tmp" "$out"
cat "$out"
