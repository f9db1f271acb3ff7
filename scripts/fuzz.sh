#!/bin/sh
# Runs each libFuzzer harness of `make fuzz` for SECONDS (default 60) over
# its corpus, one after the other, with JOBS parallel workers (default 1).
# New inputs go to build-fuzz/new/NAME (fold the useful ones into the
# repository's corpus with `build-fuzz/fuzz_NAME -merge=1 fuzz/corpus/NAME
# build-fuzz/new/NAME`); crashes, leaks and slow inputs to
# build-fuzz/findings/NAME-*. Exit status 1 if any harness found something.
#
#   sh scripts/fuzz.sh [SECONDS] [JOBS] [NAME...]
set -u
cd "$(dirname "$0")/.."
seconds=${1:-60}
jobs=${2:-1}
[ $# -ge 2 ] && shift 2 || shift $#
names=${*:-config model log http}
root=$(pwd)
status=0
mkdir -p build-fuzz/findings build-fuzz/logs
# with -jobs, libFuzzer writes fuzz-N.log into the current folder
cd build-fuzz/logs
for name in $names; do
    mkdir -p "$root/build-fuzz/new/$name"
    echo "fuzz: $name for $seconds s ($jobs workers)" >&2
    parallel=""
    [ "$jobs" -gt 1 ] && parallel="-jobs=$jobs -workers=$jobs"
    # -timeout: an input slower than 10 s is a finding (a hang);
    # -rss_limit_mb: so is one that grows past 2 GiB.
    # shellcheck disable=SC2086
    if ! "$root/build-fuzz/fuzz_$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
            $parallel -print_final_stats=1 -artifact_prefix="$root/build-fuzz/findings/$name-" \
            "$root/build-fuzz/new/$name" "$root/fuzz/corpus/$name"; then
        status=1
    fi
done
ls "$root/build-fuzz/findings"
exit $status
