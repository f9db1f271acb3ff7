#!/bin/sh
# mpi_real.sh SECONDS OUTDIR [MODEL] — the same tuning run on one rank and
# on NP ranks (default 2: rank 0 schedules, rank 1 measures), same budget
# and seed: `dtune tune` of models/MODEL.yaml (default squeezenet1_1) for
# SECONDS of tuning time into OUTDIR/np1, then `mpirun -np NP dtune tune`
# into OUTDIR/npNP; `dtune compare` prints both and draws both latency
# curves into OUTDIR/compare.svg (the table into OUTDIR/compare.txt).
#
# Environment: BACKEND (default cpu; replay checks the script in seconds),
# SEED (default 1), NP (default 2), MPIRUN_OPTS (default: as root allowed,
# more ranks than cores allowed, no binding by mpirun: dtune pins its own
# timing threads). Runs one after the other, never together, on a quiet
# machine: kernel timings are meaningless beside other work. Started again,
# each run resumes from its tuning.jsonl (a spent budget stops at once). The
# runs neither read nor write the tuning database (--db off).
set -eu

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
    echo "usage: $0 SECONDS OUTDIR [MODEL]   (e.g. $0 600 runs/mpi_real squeezenet1_1)" >&2
    exit 2
fi
seconds=$1 outdir=$2 model=${3:-squeezenet1_1}
backend=${BACKEND:-cpu} seed=${SEED:-1} np=${NP:-2}
mpirun_opts=${MPIRUN_OPTS:---allow-run-as-root --oversubscribe --bind-to none}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
[ -f "models/$model.yaml" ] || { echo "$0: no models/$model.yaml" >&2; exit 2; }
command -v mpirun >/dev/null 2>&1 || { echo "$0: mpirun not installed (scripts/setup.sh installs Open MPI)" >&2; exit 2; }
[ -x bin/dtune ] || make --no-print-directory build
. scripts/machine.sh
claim_outdir "$outdir"
set -- --model "models/$model.yaml" --backend "$backend" --budget "$seconds" --seed "$seed" \
    --listen off --db off
echo "$0: 1 rank, $model on $backend for $seconds s into $outdir/np1" >&2
bin/dtune tune "$@" --out "$outdir/np1"
echo "$0: $np ranks, $model on $backend for $seconds s into $outdir/np$np" >&2
# shellcheck disable=SC2086
mpirun $mpirun_opts -np "$np" bin/dtune tune "$@" --out "$outdir/np$np"
bin/dtune compare -o "$outdir/compare.svg" "$outdir/np1" "$outdir/np$np" | tee "$outdir/compare.txt"
