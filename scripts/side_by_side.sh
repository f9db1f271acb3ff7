#!/bin/sh
# side_by_side.sh MODEL SECONDS OUTDIR [SEED] — one real run per policy, same
# budget: `dtune tune` of models/MODEL.yaml on the CPU under sequential and
# then dynatune (POLICIES overrides the list), each for SECONDS of tuning
# time with the same seed, into OUTDIR/POLICY; then `dtune compare` prints
# the table and draws both curves into OUTDIR/compare.svg.
#
# Runs one after the other, never together: both would time kernels on the
# same core. Started again, each run resumes from its tuning.jsonl (a run
# whose budget is spent stops at once).
set -eu

if [ $# -lt 3 ] || [ $# -gt 4 ]; then
    echo "usage: $0 MODEL SECONDS OUTDIR [SEED]   (e.g. $0 squeezenet1_1 480 runs/side_by_side)" >&2
    exit 2
fi
model=$1 seconds=$2 outdir=$3 seed=${4:-1}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
[ -f "models/$model.yaml" ] || { echo "$0: no models/$model.yaml" >&2; exit 2; }
[ -x bin/dtune ] || make --no-print-directory build
mkdir -p "$outdir"
dirs=""
for policy in ${POLICIES:-sequential dynatune}; do
    echo "$0: $policy on $model for ${seconds} s into $outdir/$policy" >&2
    bin/dtune tune --model "models/$model.yaml" --policy "$policy" --budget "$seconds" \
        --seed "$seed" --out "$outdir/$policy" --listen off
    dirs="$dirs $outdir/$policy"
done
# shellcheck disable=SC2086
bin/dtune compare -o "$outdir/compare.svg" $dirs | tee "$outdir/compare.txt"
