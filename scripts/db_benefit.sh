#!/bin/sh
# db_benefit.sh [--backend replay] [TRIALS] [OUTDIR] — how a second model
# benefits from the tuning database: trials to reach 95 % of the best for
# resnet18's tasks, tuned without a database, with the database of an
# earlier resnet18 run, and with that of a vgg16 run (transfer between
# tasks of a kind only: no shape is shared).
#
# Every run tunes each task once for TRIALS trials (default 200) in one
# contiguous slot (round_robin, one slot per task, chameleon, seed 1), like
# scripts/record_traces.sh; each keeps its own database under OUTDIR
# (default runs/db_benefit), so nothing touches the user's. bin/db_bench
# prints the table, which is also saved, with the date and the machine, as
# OUTDIR/db_benefit.txt. On the CPU the figures are only meaningful on quiet
# cores: nothing else may run during the hours this takes.
set -eu

backend=""
if [ "${1:-}" = "--backend" ]; then
    backend=$2
    shift 2
fi
trials=${1:-200}
outdir=${2:-runs/db_benefit}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
make --no-print-directory build bin/db_bench >/dev/null

# tune MODEL RUN_DIR DB: one recording-style run of models/MODEL.yaml.
tune() {
    ntasks=$(bin/dtune models "models/$1.yaml" | sed -n 's/^model [^:]*: \([0-9]*\) tasks.*/\1/p')
    [ -n "$ntasks" ] || { echo "$0: cannot count the tasks of models/$1.yaml" >&2; exit 1; }
    rm -rf "$2"
    echo "db_benefit: $1 -> $2 (database $3)" >&2
    bin/dtune tune --model "models/$1.yaml" ${backend:+--backend "$backend"} --policy round_robin \
        --strategy chameleon --slot-trials "$trials" --max-slots "$ntasks" --finish-after 1000000 \
        --budget 1000000 --seed 1 --out "$2" --listen off --db "$3"
}

mkdir -p "$outdir"
rm -f "$outdir"/*.db "$outdir"/*.db-wal "$outdir"/*.db-shm
tune resnet18 "$outdir/earlier-resnet18" "$outdir/resnet18.db"
tune vgg16 "$outdir/earlier-vgg16" "$outdir/vgg16.db"
tune resnet18 "$outdir/no-db" off
tune resnet18 "$outdir/db-resnet18" "$outdir/resnet18.db"
tune resnet18 "$outdir/db-vgg16" "$outdir/vgg16.db"

{
    echo "# db_benefit.sh ${backend:+--backend $backend }$trials, $(date -u +%Y-%m-%dT%H:%M:%SZ)," \
         "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo "# machine: $(bin/dtune db machine ${backend:+--backend "$backend"})"
    bin/db_bench no-db="$outdir/no-db" db-resnet18="$outdir/db-resnet18" db-vgg16="$outdir/db-vgg16"
} | tee "$outdir/db_benefit.txt"
