#!/usr/bin/env bash
# tests/valgrind.sh BUILD BIN... — runs each unit test binary under valgrind's
# memcheck (invalid accesses, uninitialised reads and definite leaks fail it),
# as many at once as there are CPUs (each is one process on one CPU: the
# suite took 13 minutes of CI one at a time).  One line per binary, its log
# in BUILD/NAME.valgrind (the last 30 lines printed on failure).  Exit 1 if
# any failed.
set -u
build=$1; shift
one() {
    local t=$1 name log out
    name=$(basename "$t"); log=$2/$name.valgrind
    if valgrind -q --error-exitcode=9 --leak-check=full --errors-for-leak-kinds=definite \
           "$t" >"$log" 2>&1; then
        echo "ok    valgrind/$name"
    else
        out=$(printf 'FAIL  valgrind/%s\n' "$name"; tail -30 "$log")
        printf '%s\n' "$out"
        return 1
    fi
}
export -f one
printf '%s\n' "$@" | xargs -P "$(nproc)" -I{} bash -c 'one "$1" "$2"' _ {} "$build"
