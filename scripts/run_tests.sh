#!/bin/sh
# Runs each cmocka test binary given, counts its passed, failed and skipped
# tests from cmocka's own summary lines, and prints one total as the last line:
#   tests: N passed, N failed, N skipped
# A test that cannot run here calls cmocka's skip() and is counted as skipped.
# Exit status 1 if any test failed or a binary died without a summary.
set -u
passed=0
failed=0
skipped=0
export CMOCKA_MESSAGE_OUTPUT=stdout
# No test run may write to the user's tuning database; the tests of the
# database give their runs a database of their own (db.path).
export DTUNE_DB=off
# count LABEL OUTPUT: the sum of N over cmocka's "[  LABEL  ] N test(s)" lines.
count() {
    printf '%s\n' "$2" | sed -n "s/^\[  $1 *\] \([0-9]*\) test.*/\1/p" | awk '{s+=$1} END {print s+0}'
}
for t in "$@"; do
    out=$("$t" 2>&1)
    rc=$?
    printf '%s\n' "$out"
    p=$(count PASSED "$out")
    f=$(count FAILED "$out")
    s=$(count SKIPPED "$out")
    if [ "$p" -eq 0 ] && [ "$f" -eq 0 ] && [ "$s" -eq 0 ]; then
        echo "$t: exited $rc without a cmocka summary" >&2
        f=1
    elif [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "$t: exited $rc" >&2
        f=1
    fi
    passed=$((passed + p))
    failed=$((failed + f))
    skipped=$((skipped + s))
done
echo "tests: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
