#!/bin/sh
# Runs each cmocka test binary given, counts its passed and failed tests from
# cmocka's own summary lines, and prints one total as the last line:
#   tests: N passed, N failed
# Exit status 1 if any test failed or a binary died without a summary.
set -u
passed=0
failed=0
export CMOCKA_MESSAGE_OUTPUT=stdout
for t in "$@"; do
    out=$("$t" 2>&1)
    rc=$?
    printf '%s\n' "$out"
    p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | awk '{s+=$1} END {print s+0}')
    f=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | awk '{s+=$1} END {print s+0}')
    if [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then
        echo "$t: exited $rc without a cmocka summary" >&2
        f=1
    elif [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "$t: exited $rc" >&2
        f=1
    fi
    passed=$((passed + p))
    failed=$((failed + f))
done
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
