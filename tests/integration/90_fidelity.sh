# 90_fidelity.sh — the job fidelity matrix (issue 13, docs/testing.md): each
# command runs bare and under jobscope (plain, and with --scan-output); its exit
# status and the exact bytes of its stdout and stderr (sha256) must be the
# same.  jobscope's own events go to a file, and -q keeps jobscope silent, so
# any difference is a change jobscope made to the job.

# The commands: one per line (sh -c strings).  Each reads stdin from $T/in.
fidelity_commands() {
    cat <<'CMDS'
true
false
exit 0
exit 1
exit 2
exit 42
exit 255
echo hello
printf 'no newline'
printf 'a\0b\0c' ; printf '\377\376' >&2
head -c 300000 "$T/bin"
head -c 300000 "$T/bin" >&2
cat
wc -c
tr a-z A-Z
echo out1; echo err1 >&2; echo out2; echo err2 >&2
for i in $(seq 1 200); do echo "line $i"; done
yes | head -c 100000
kill -TERM $$
kill -KILL $$
kill -SEGV $$
kill -ABRT $$
kill -HUP $$
kill -USR1 $$
kill -PIPE $$
sh -c 'exit 3'; echo "inner $?"
(exit 7)
ulimit -c 0; sh -c 'kill -SEGV $$'; echo "rc=$?"
/nonexistent/command
"$T/noexec"
exec "$T/noexec"
setsid sh -c 'echo in new session; exit 5'
set -m; sleep 0.05 & wait; echo "job control $?"
echo before; exec >&-; echo after 2>/dev/null; exit 9
exec 0<&-; cat 2>&1; echo "stdin closed $?"
(sleep 0.3; echo late daemon output) & echo parent done
mount --version
umask
printf '%s|' "$0" "$@" "$#"
env | grep -c '^PATH='
trap 'echo got term; exit 11' TERM; kill -TERM $$; sleep 1
awk 'BEGIN { for (i = 0; i < 5000; i++) printf "%d %s\n", i, "x" > "/dev/stderr" }'
CMDS
}

# run_cmp MODE: compares every command bare and under `jobscope run MODE`.
fidelity_run() {
    local mode=$1 n=0 bad=0
    head -c 500000 /dev/urandom > "$T/bin"
    seq 1 1000 > "$T/in"
    printf '#!/bin/sh\necho no\n' > "$T/noexec"; chmod 644 "$T/noexec"
    while IFS= read -r cmd; do
        n=$((n+1))
        ( cd "$T" && sh -c "$cmd" fidelity-arg "a b" < "$T/in" > "$T/o1" 2> "$T/e1" ); r1=$?
        ( cd "$T" && "$JS" run -q $mode -o "$T/ev.jsonl" -- sh -c "$cmd" fidelity-arg "a b" \
              < "$T/in" > "$T/o2" 2> "$T/e2" ); r2=$?
        s1="$r1 $(sha256sum < "$T/o1" | cut -c1-16) $(sha256sum < "$T/e1" | cut -c1-16)"
        s2="$r2 $(sha256sum < "$T/o2" | cut -c1-16) $(sha256sum < "$T/e2" | cut -c1-16)"
        if [ "$s1" != "$s2" ]; then
            bad=$((bad+1))
            echo "    differs ($mode): $cmd" >&2
            echo "      bare:     $s1" >&2
            echo "      jobscope: $s2" >&2
            diff <(head -c 400 "$T/e1") <(head -c 400 "$T/e2") | head -5 >&2
        fi
        rm -f "$T/ev.jsonl"
    done < <(fidelity_commands)
    echo "$n commands compared, $bad differ" >&2
    [ "$n" -ge 30 ] || fail "only $n commands"
    [ "$bad" -eq 0 ] || fail "$bad of $n commands differ under jobscope $mode"
}

test_every_command_has_the_same_exit_status_and_bytes_under_jobscope() {
    fidelity_run ""
}

test_every_command_has_the_same_exit_status_and_bytes_under_scan_output() {
    fidelity_run "--scan-output"
}

# Both streams into one file: the interleaving must be kept too.
test_stdout_and_stderr_to_one_file_keep_their_order() {
    local cmd='for i in 1 2 3; do echo out$i; echo err$i >&2; done'
    sh -c "$cmd" > "$T/bare" 2>&1
    "$JS" run -q -o "$T/ev.jsonl" -- sh -c "$cmd" > "$T/plain" 2>&1
    assert_eq "$(cat "$T/plain")" "$(cat "$T/bare")" "order under jobscope run" || return 1
}
