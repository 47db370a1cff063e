#!/usr/bin/env bash
# tests/run.sh — runs every test: the cmocka unit tests (build/tests/test_*)
# and every test_* function of tests/integration/*.sh, each in a fresh
# temporary directory.  Prints one line per test and, last, the total as
# "N passed, N failed, N skipped".  Exit status 1 if anything failed.
#
#   tests/run.sh [PATTERN...]   only tests whose name contains one of the PATTERNs
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${BUILD:-build}
export JS="${JS:-$ROOT/$BUILD/jobscope}" HELPERS="$ROOT/$BUILD/helpers" ROOT BUILD
patterns=("$@")
# wanted NAME: no pattern given, or NAME contains one of them
wanted() {
    [ ${#patterns[@]} -eq 0 ] && return 0
    local p
    for p in "${patterns[@]}"; do [[ $1 == *"$p"* ]] && return 0; done
    return 1
}
pass=0 failn=0 skip=0 failed=()

for t in "$BUILD"/tests/test_*; do
    [ -x "$t" ] || continue
    name=unit/$(basename "$t")
    wanted "$name" || continue
    if out=$("$t" 2>&1); then
        pass=$((pass+1)); echo "ok    $name"
    else
        failn=$((failn+1)); failed+=("$name"); echo "FAIL  $name"; echo "$out" | sed 's/^/    /' | tail -30
    fi
done

for f in tests/integration/*.sh; do
    [ -f "$f" ] || continue
    for fn in $(grep -oE '^test_[A-Za-z0-9_]+' "$f" | sort -u); do
        name=$(basename "$f" .sh)/$fn
        wanted "$name" || continue
        T=$(mktemp -d /tmp/jobscope-test.XXXXXX)
        start=$(date +%s.%N)
        ( cd "$T" && export T && source "$ROOT/tests/lib.sh" && source "$ROOT/$f" && "$fn" ) >"$T/.log" 2>&1
        rc=$?
        secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN{printf "%.1f", e-s}')
        if [ $rc -eq 0 ]; then pass=$((pass+1)); echo "ok    $name (${secs}s)"; rm -rf "$T"
        elif [ $rc -eq 77 ]; then skip=$((skip+1)); echo "skip  $name"; rm -rf "$T"
        else failn=$((failn+1)); failed+=("$name"); echo "FAIL  $name (${secs}s, kept $T)"; tail -30 "$T/.log" | sed 's/^/    /'
        fi
    done
done

echo
[ ${#failed[@]} -gt 0 ] && printf 'failed: %s\n' "${failed[@]}"
echo "$pass passed, $failn failed, $skip skipped"
[ $failn -eq 0 ]
