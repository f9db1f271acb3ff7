#!/bin/sh
# side_by_side.sh MODEL SECONDS OUTDIR [SEEDS] — real runs of several
# policies, same budget: `dtune tune` of models/MODEL.yaml on the CPU under
# each policy of POLICIES (default: sequential dynatune) and each seed of
# SEEDS (default: 1; e.g. "1 2 3"), each for SECONDS of tuning time, into
# OUTDIR/POLICY-sSEED; then `dtune compare` prints the per-run table and,
# with several seeds, the table by policy (final latency, seconds to 1.10 and
# 1.05 x the lowest final latency, mean latency: median [min, max]), and
# draws every curve into OUTDIR/compare.svg (one colour per policy, one dash
# per seed), the tables into OUTDIR/compare.txt.
#
# Runs one after the other, never together: two runs would time kernels on
# the same cores. Started again, each run resumes from its tuning.jsonl (a
# finished run, budget spent, stops at once), so a long study runs in
# pieces. A run dir holding another machine's records is refused. The runs
# neither read nor write the tuning database (--db off): each starts from
# nothing, whatever ran before.
set -eu

if [ $# -lt 3 ] || [ $# -gt 4 ]; then
    echo "usage: $0 MODEL SECONDS OUTDIR [SEEDS]   (e.g. POLICIES='sequential round_robin dynatune' $0 squeezenet1_1 480 runs/side_by_side '1 2 3')" >&2
    exit 2
fi
model=$1 seconds=$2 outdir=$3 seeds=${4:-1}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
[ -f "models/$model.yaml" ] || { echo "$0: no models/$model.yaml" >&2; exit 2; }
[ -x bin/dtune ] || make --no-print-directory build
. scripts/machine.sh
claim_outdir "$outdir"
dirs=""
for seed in $seeds; do
    for policy in ${POLICIES:-sequential dynatune}; do
        run=$outdir/$policy-s$seed
        echo "$0: $policy, seed $seed, on $model for ${seconds} s into $run" >&2
        bin/dtune tune --model "models/$model.yaml" --policy "$policy" --budget "$seconds" \
            --seed "$seed" --out "$run" --listen off --db off
        dirs="$dirs $run"
    done
done
# shellcheck disable=SC2086
bin/dtune compare -o "$outdir/compare.svg" $dirs | tee "$outdir/compare.txt"
