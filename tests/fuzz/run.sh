#!/usr/bin/env bash
# tests/fuzz/run.sh SECONDS BIN... — runs each libFuzzer target for SECONDS on
# a scratch copy of its seed corpus (tests/fuzz/corpus/NAME), as many targets
# at once as there are CPUs (each fuzzes on one), prints one line per target
# (executions, corpus size, result) and keeps any crashing input in
# build-fuzz/crashes/.  Exit 1 if a target found a defect.
set -u
cd "$(dirname "$0")/../.."
secs=$1; shift
mkdir -p build-fuzz/crashes
one() {
    local bin=$1 secs=$2 name work log execs out
    name=$(basename "$bin"); name=${name#fuzz_}
    work=$(mktemp -d /tmp/jobscope-fuzz.XXXXXX)
    [ -d "tests/fuzz/corpus/$name" ] && cp -r "tests/fuzz/corpus/$name/." "$work/"
    log=build-fuzz/$name.log
    if "$bin" -max_total_time="$secs" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
           -artifact_prefix="build-fuzz/crashes/$name-" -print_final_stats=1 "$work" >"$log" 2>&1; then
        execs=$(grep -m1 'stat::number_of_executed_units' "$log" | awk '{print $2}')
        echo "ok    fuzz/$name: ${execs:-?} inputs in ${secs}s, corpus $(ls "$work" | wc -l)"
        rm -rf "$work"
    else
        out=$(echo "FAIL  fuzz/$name (see $log; input in build-fuzz/crashes/)"
              grep -m3 -E 'ERROR|SUMMARY|runtime error' "$log" | sed 's/^/    /')
        printf '%s\n' "$out"
        rm -rf "$work"
        return 1
    fi
}
export -f one
printf '%s\n' "$@" | xargs -P "$(nproc)" -I{} bash -c 'one "$1" "$2"' _ {} "$secs" || exit 1
