#!/bin/sh
# public_api.sh — prints every function declared in include/dtune/*.h that
# nothing outside tests calls: no use in src/, bench/ or fuzz/ besides its
# own definition. Exits 1 if there is any. What only tests call belongs in
# src/NAME_internal.h.
set -eu
cd "$(dirname "$0")/.."
bad=0
for f in $(sed -n 's/^[a-z][a-z0-9_ ]*[ *]\(dt_[a-z0-9_]*\)(.*/\1/p' include/dtune/*.h | sort -u); do
    uses=$(cat src/*.c bench/*.c fuzz/*.c 2>/dev/null | grep -ow "$f" | wc -l)
    defs=$(grep -lE "^[a-z].*[ *]$f\(" src/*.c | wc -l)
    if [ "$uses" -le "$defs" ]; then
        echo "public_api: $f (declared in $(grep -lw "$f" include/dtune/*.h | head -1)) has no caller outside tests"
        bad=1
    fi
done
exit $bad
