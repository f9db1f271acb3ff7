#!/bin/sh
# dynatune_variants.sh [TRACES...] — the dynatune variant table of
# docs/evaluation/scheduler.md: each variant of dynatune's belief replayed by
# `bin/sched_bench --lomo` (hazard and prior tables fitted on the other
# models' traces) on bench/traces/*.csv (or the traces given), one summary
# row per variant: time share of the exact optimum to (1 + eps) L* (median
# over models / least model), area / oracle's (largest model), belief share
# and rho. Replay only: deterministic, needs no quiet cores.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
[ -x bin/sched_bench ] || make --no-print-directory bench
[ $# -gt 0 ] || set -- bench/traces/*.csv

row() {  # LABEL FLAGS...
    label=$1
    shift
    # shellcheck disable=SC2086  # the trace paths, split on spaces
    line=$(bin/sched_bench --lomo --policies dynatune --out "$charts" "$@" $traces 2>&1 |
        grep '^  dynatune ' | tail -1)
    printf '%-58s %s\n' "$label" "${line#  }"
}

traces=$*
charts=$(mktemp -d)   # the replays' charts are not the evaluation's
trap 'rm -rf "$charts"' EXIT
machine=$(grep -h -m1 '^# machine:' "$1" | sed 's/^# machine: //')
echo "# dynatune variants, sched_bench --lomo (tables fitted on the other models' traces), traces: $traces"
echo "# trace machine: $machine; $(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "# columns: time share of the exact optimum to (1+eps) L* (median over models / least model), area / oracle's (largest model), belief share and rho (mean over models)"
printf '%-58s %s\n' "variant (flags)" "policy                   10 %           5 %           2 %           1 %   area 25   area 50  area 100   share     rho"
row "paper: belief alone, UCB C 2 (--prior-slots 0 --ucb-c 2)" --prior-slots 0 --ucb-c 2 --ceiling 0
row "belief alone, C 0.05 (--prior-slots 0 --ceiling 0)" --prior-slots 0 --ceiling 0
row "belief alone, curve under roofline (--prior-slots 0)" --prior-slots 0
row "+ hazard prior, no headroom (--ceiling 0)" --ceiling 0
row "+ FLOP ceiling 1.2 only (--bandwidth 0)" --bandwidth 0
row "+ roofline 20 GB/s = default"
row "default, prior alone (--prior-slots 1e9)" --prior-slots 1e9
row "default, curve weighs more (--prior-slots 3)" --prior-slots 3
row "default, curve over seconds (--belief-seconds)" --belief-seconds
row "default, no bonus (--ucb-c 0)" --ucb-c 0
row "default + staleness factor, fitted (--staleness fit)" --staleness fit
row "default, cost-model headroom (--headroom cost_model)" --headroom cost_model
