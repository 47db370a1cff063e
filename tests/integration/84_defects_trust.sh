# 84_defects_trust.sh — issue 27 (trust in the monitor): the numbers of a
# user who is not root, the job's neighbours, the end-of-job record, and
# what the documents promise.  Each test was seen failing before its fix.
source "$ROOT/tests/helpers/publish_servers.sh"

NOBODY_UID=65534
# as_nobody CMD...: run CMD as the unprivileged user nobody in ./nb (needs
# root to switch; skips otherwise).
as_nobody() {
    setpriv --reuid=$NOBODY_UID --regid=$NOBODY_UID --clear-groups -- "$@"
}
need_root_to_switch() {
    [ "$(id -u)" = 0 ] || { echo "    skip: needs root to run as nobody" >&2; return 77; }
    need setpriv || return
    chmod 755 "$T"
    mkdir -p "$T/nb" && chown $NOBODY_UID "$T/nb" && cd "$T/nb"
}

# 27.1: a zombie's /proc/PID/io is root's, so a user who is not root lost
# the I/O of every child since the last sample (rchar 5,560, wchar 0).
test_a_non_root_users_io_totals_are_exact() {
    need_root_to_switch || return
    as_nobody "$JS" run -q -o nobody.jsonl -- sh -c 'head -c 100000000 /dev/zero >/dev/null; sleep 0.2'
    assert_eq $? 0 || return 1
    assert_ge "$(jq_py 'end["rchar"]' nobody.jsonl)" 100000000 "nobody's rchar" || return 1
    assert_ge "$(jq_py 'end["wchar"]' nobody.jsonl)" 100000000 "nobody's wchar" || return 1
    assert_eq "$(jq_py 'end.get("io_incomplete", 0)' nobody.jsonl)" 0 "io_incomplete" || return 1
}

# Orphans that live and die between two samples come back to jobscope, which
# reaps them: as nobody their I/O adds up to exactly what root sees.
test_a_non_root_fork_storm_with_orphans_adds_up_to_roots_figures() {
    need_root_to_switch || return
    cat > storm.sh <<'SH'
for i in $(seq 150); do (sh -c 'head -c 65536 /dev/zero > /dev/null' &); done; wait; sleep 0.3
SH
    "$JS" run -q -i 0.05 -o root.jsonl -- sh storm.sh || return 1
    as_nobody "$JS" run -q -i 0.05 -o nobody.jsonl -- sh storm.sh || return 1
    for f in rchar wchar syscr syscw; do
        assert_eq "$(jq_py "end['$f']" nobody.jsonl)" "$(jq_py "end['$f']" root.jsonl)" "$f as nobody" || return 1
    done
    assert_ge "$(jq_py 'end["wchar"]' nobody.jsonl)" $((150 * 65536)) "wchar" || return 1
}

# 27.2: with --limit and no cgroup of jobscope's own, the members stored at
# the last sample got SIGKILL at the end of the grace if "alive" -- even when
# their pid had gone to an unrelated process.  In a private pid namespace the
# first member's pid is handed to an outsider (ns_last_pid) once it exited:
# the outsider must survive, the member that ignored SIGTERM must not.
test_a_pid_reused_by_an_outsider_is_never_signalled() {
    [ "$(id -u)" = 0 ] || { echo "    skip: needs root (pid namespace)" >&2; return 77; }
    need unshare || return
    unshare --pid --fork --mount-proc true 2>/dev/null || { echo "    skip: no pid namespaces here" >&2; return 77; }
    cat > inside.sh <<'SH'
"$JS" run -q --no-cgroup -i 0.2 --limit wall=1s --kill-grace 2.5 -o ev.jsonl -- sh -c '
    sh -c "trap \"\" TERM; echo \$\$ > first.pid; exec sleep 1.5" &
    sh -c "trap \"\" TERM; echo \$\$ > second.pid; exec sleep 30" &
    wait' &
J=$!
while [ ! -s first.pid ] || [ ! -s second.pid ]; do sleep 0.05; done
P=$(cat first.pid)
while [ -e /proc/$P ]; do sleep 0.05; done   # exited, reaped by jobscope
for try in 1 2 3 4 5; do
    echo $((P - 1)) > /proc/sys/kernel/ns_last_pid
    sleep 60 & V=$!
    [ "$V" = "$P" ] && break
    kill $V; V=
done
wait $J
echo "outsider=${V:-none}" > result
[ -n "$V" ] && kill -0 "$V" 2>/dev/null && echo "outsider_alive=1" >> result
[ -e /proc/$(cat second.pid) ] && echo "member_alive=1" >> result
[ -n "$V" ] && kill "$V"
true
SH
    JS="$JS" unshare --pid --fork --mount-proc sh inside.sh
    cat result
    grep -q "outsider=none" result && { echo "    skip: could not hand the pid out again" >&2; return 77; }
    grep -q "outsider_alive=1" result || fail "an unrelated process that took a member's pid was killed" || return 1
    ! grep -q "member_alive=1" result || fail "the member that ignored SIGTERM survived the grace" || return 1
    assert_eq "$(jq_py 'end["exit_type"]' ev.jsonl)" limit || return 1
}

# 27.4: cmd was "" in 6 of 10 runs of `sleep 0.2` (10 of 10 for `sh -c
# true`), JoReMon's CMD in 3 of 10: read before the new program's arguments
# were set, or after it was over.
test_the_command_line_is_never_empty() {
    for i in 1 2 3 4 5; do
        "$JS" run -q -o "a$i.jsonl" -- sh -c true || return 1
        "$JS" run -q -o "b$i.jsonl" -- sleep 0.1 || return 1
        "$JS" run -q -o "j$i.jsonl" --format joremon-json -- sleep 0.1 || return 1
        assert_eq "$(jq_py 'ev[0]["cmd"] + "|" + end["cmd"]' "a$i.jsonl")" "sh -c true|sh -c true" "run $i" || return 1
        assert_eq "$(jq_py 'ev[0]["cmd"] + "|" + end["cmd"]' "b$i.jsonl")" "sleep 0.1|sleep 0.1" "run $i" || return 1
        assert_eq "$(jq_py 'sorted(set(e["CMD"] for e in ev))' "j$i.jsonl")" '["sleep 0.1"]' "JoReMon CMD, run $i" || return 1
    done
}

# A TCP server on loopback that accepts connections and never answers;
# sets MUTE_PORT, stopped by mute_stop.
mute_start() {
    python3 -c '
import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(64)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
conns = []
while True:
    conns.append(s.accept()[0])
' "$T/mute.port" &
    MUTE_PID=$!
    for i in $(seq 50); do [ -s "$T/mute.port" ] && break; sleep 0.05; done
    MUTE_PORT=$(cat "$T/mute.port")
}
mute_stop() { kill "$MUTE_PID" 2>/dev/null; wait "$MUTE_PID" 2>/dev/null; return 0; }

# 27.5: --flush-timeout 0.5 to a server that accepts and never answers: the
# job's end waited 4 s (HTTP: a send already under way had 5 s of its own;
# amqp:// 2 s in its connect).  The timeout bounds the whole flush; the
# undelivered events stay in the spool.
test_the_flush_timeout_bounds_the_whole_exit() {
    mute_start
    for url in "http://127.0.0.1:$MUTE_PORT/x" "amqp://u:p@127.0.0.1:$MUTE_PORT/v/e" \
               "influx://127.0.0.1:$MUTE_PORT/db"; do
        rm -rf sp
        local t0 t1
        t0=$(date +%s.%N)
        "$JS" run -q --flush-timeout 0.5 --spool-dir sp -o "$url" -o ev.jsonl -- sleep 0.3
        assert_eq $? 0 || { mute_stop; return 1; }
        t1=$(date +%s.%N)
        # 0.3 s of job, 0.5 s of flush: well under the 5 s a send may take
        assert_le "$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')" 2.5 "seconds for $url" \
            || { mute_stop; return 1; }
        assert_ge "$(cat sp/*.spool 2>/dev/null | grep -c '"event"')" 3 "events kept in the spool for $url" \
            || { mute_stop; return 1; }
    done
    mute_stop
}

# 27.6: --spool-max with a dead destination: stderr said thousands of events
# lost, the end record said "events_dropped":0 and had no output_errors.
test_events_lost_to_a_full_spool_are_counted_in_the_record() {
    "$JS" run -i 0.01 --spool-dir sp --spool-max 20K --flush-timeout 0.2 \
        -o "http://127.0.0.1:$(free_port)/x" -o ev.jsonl -- sleep 1 2> err.txt
    assert_eq $? 0 || return 1
    local said dropped label
    said=$(sed -n 's/.* \([0-9]*\) events lost (spool full.*/\1/p' err.txt)
    dropped=$(jq_py 'end["events_dropped"]' ev.jsonl)
    assert_ge "$dropped" 20 "events_dropped" || return 1
    assert_eq "$(jq_py 'list(end.get("output_errors", {}).values())' ev.jsonl)" "[$dropped]" "output_errors" || return 1
    # the record counts what was lost before it; stderr also the record itself
    assert_eq "$said" $((dropped + 1)) "losses said on stderr" || return 1
}

# 27.7: `emit --tag "k=$(printf 'a\033b')"` exited 0 but no event arrived
# (the listener refused every control byte, emit only tab and newline).  One
# rule everywhere: emit refuses with one line (125), the Python module sends
# a space instead, libjobscope does not send (and counts it lost).
test_a_tag_value_with_a_control_character_is_refused_where_it_is_given() {
    local pre= # a library built with ASan (make asan) needs its runtime first
    ldd "$ROOT/$BUILD/libjobscope.so" 2>/dev/null | grep -q libasan &&
        pre="$(cc -print-file-name=libasan.so) $(cc -print-file-name=libubsan.so)"
    cat > job.sh <<SH
"$JS" emit m 1 --tag "k=\$(printf 'a\033b')" 2> emit.err; echo "\$?" > emit.rc
"$JS" emit m 2 --tag k=ok
PYTHONPATH="$ROOT/python" python3 -c 'import jobscope; assert jobscope.metric("m", 3, k="a\x1bb")'
LD_PRELOAD="$pre" ASAN_OPTIONS=detect_leaks=0 python3 -c '
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
tags = (ctypes.c_char_p * 3)(b"k", b"a\x1bb", None)
good = (ctypes.c_char_p * 3)(b"k", b"fine", None)
ok = lib.js_metric_tags(b"m", ctypes.c_double(5), good)
sent = lib.js_metric_tags(b"m", ctypes.c_double(4), tags)
lib.js_dropped.restype = ctypes.c_ulong
print(ok, sent, lib.js_dropped())' "$ROOT/$BUILD/libjobscope.so" > lib.out
SH
    "$JS" run -q -o ev.jsonl -- sh job.sh || return 1
    assert_eq "$(cat emit.rc)" 125 "emit's status" || return 1
    assert_eq "$(wc -l < emit.err)" 1 "one line: $(cat emit.err)" || return 1
    assert_eq "$(jq_py '[(e["value"], e["tags"]["k"]) for e in ev if e["event"] == "jobscope.metric"]' ev.jsonl)" \
        '[[2, "ok"], [3, "a b"], [5, "fine"]]' "metrics received" || return 1
    assert_eq "$(cat lib.out)" "1 0 1" "libjobscope: not sent, counted lost" || return 1
}

# 27.8: a payload block with "ts":1e999 gave an event with "ts":null.
test_a_payload_timestamp_out_of_range_never_becomes_null() {
    "$JS" run -q --scan-output -o ev.jsonl -- sh -c '
        printf "@@@MONITORING_PAYLOAD - START@@@\n{\"ts\":1e999,\"payload\":[{\"a\":1}]}\n@@@MONITORING_PAYLOAD - END@@@\n"
        printf "@@@MONITORING_PAYLOAD - START@@@\n{\"ts\":1700000000,\"payload\":[{\"ts\":1e999,\"b\":2}]}\n@@@MONITORING_PAYLOAD - END@@@\n"
    ' > /dev/null || return 1
    assert_eq "$(jq_py 'len([e for e in ev if e["ts"] is None])' ev.jsonl)" 0 "events with ts null" || return 1
    assert_eq "$(jq_py '[e["reason"] for e in ev if e["event"] == "jobscope.payload.error"]' ev.jsonl)" \
        '["ts is not epoch seconds (1 to 1e11)"]' "the block with a bad ts" || return 1
    assert_eq "$(jq_py '[(e["ts"], e["b"]) for e in ev if e["event"] == "monitoring.additional"]' ev.jsonl)" \
        '[[1700000000.0, 2]]' "the item with a bad ts takes the block's" || return 1
}

# 27.9: with --wait-all, `end` was the next sample tick after the last
# process ended (a 1 s daemon: duration 2.00 at -i 1, 3.00 at -i 3).
test_wait_all_ends_when_the_last_process_ends() {
    "$JS" run -q --wait-all -i 3 -o ev.jsonl -- sh -c '(sleep 1 &); exit 0' || return 1
    local d
    d=$(jq_py 'end["duration"]' ev.jsonl)
    assert_ge "$d" 1 "duration" || return 1
    assert_le "$d" 1.8 "duration: the daemon's second, not the 3 s tick" || return 1
    assert_le "$(jq_py 'end["end"] - ev[-2]["ts"]' ev.jsonl)" 0.5 "final sample at the end" || return 1
}

# 27.10: `jobscope run --cgroup auto -- echo` ran `auto` as the command
# (exit 127), though attach took the word as the option's value.
test_cgroup_takes_its_value_as_a_second_word_in_run_too() {
    local w
    for w in auto on off no; do
        out=$("$JS" run -q -o ev.jsonl --cgroup $w -- echo "job ran with $w")
        assert_eq $? 0 "--cgroup $w" || return 1
        assert_eq "$out" "job ran with $w" || return 1
    done
    # a path stays attach's: run says so
    "$JS" run -q -o ev.jsonl --cgroup=/sys/fs/cgroup -- true 2> err.txt
    assert_eq $? 125 "--cgroup=PATH in run" || return 1
}

# 27.11: a custom metric of a run with --tag carried two "tags" members (the
# run's and its own): readers kept one, the time-series outputs lost --tag.
# One object now, the metric's own tag winning over the run's of that name.
test_a_custom_metric_has_one_tags_object_with_the_runs_tags_in_it() {
    "$JS" run -q --tag team=hpc --tag phase=all -o ev.jsonl -- \
        sh -c "\"$JS\" emit loss 0.5 --tag phase=train; \"$JS\" emit loss 0.7" || return 1
    assert_eq "$(grep '"jobscope.metric"' ev.jsonl | grep -o '"tags":' | wc -l)" 2 "one tags object per metric" || return 1
    assert_eq "$(jq_py '[e["tags"] for e in ev if e["event"] == "jobscope.metric"]' ev.jsonl)" \
        '[{"team": "hpc", "phase": "train"}, {"team": "hpc", "phase": "all"}]' || return 1
}

# 27 (docs): 100 unreaped zombies showed as 103 live processes while 3 were
# alive.  Zombies are counted apart.
test_zombies_are_counted_apart_from_live_processes() {
    # 30 children exit at once; their parent execs sleep and never waits
    "$JS" run -q -i 0.1 -o ev.jsonl -- sh -c 'for i in $(seq 30); do true & done; exec sleep 1' || return 1
    assert_eq "$(jq_py 'max(s["zombies"] for s in samples)' ev.jsonl)" 30 "zombies" || return 1
    assert_eq "$(jq_py 'max(s["procs"] for s in samples[2:-1])' ev.jsonl)" 1 "live processes" || return 1
    # the peak of live processes is the largest live count a sample saw (the
    # first samples may catch a few children before they exit; how many
    # depends on the machine's load): the 30 zombies are never in it
    assert_eq "$(jq_py 'end["peaks"]["procs"]["value"] == max(s["procs"] for s in samples)' ev.jsonl)" true "peak of live processes" || return 1
    assert_le "$(jq_py 'end["peaks"]["procs"]["value"]' ev.jsonl)" 29 "peak of live processes" || return 1
}

# 21.8: the final sample (the tree gone) reported rss, vm and procs as 0.
test_the_final_sample_keeps_the_last_live_gauges() {
    "$JS" run -q -i 0.1 -o ev.jsonl -- sleep 0.5 || return 1
    assert_eq "$(jq_py 'samples[-1]["procs"] == samples[-2]["procs"] == 1' ev.jsonl)" true "procs" || return 1
    assert_eq "$(jq_py 'samples[-1]["rss"] == samples[-2]["rss"] > 0' ev.jsonl)" true "rss" || return 1
    assert_eq "$(jq_py 'samples[-1]["vm"] == samples[-2]["vm"] > 0' ev.jsonl)" true "vm" || return 1
    # and the counters are final
    assert_eq "$(jq_py 'samples[-1]["utime"] + samples[-1]["stime"] == end["utime"] + end["stime"]' ev.jsonl)" true || return 1
}

# 21.7: -i 0 / -m 0 everywhere: the job runs with online monitoring off, as
# kickstart's -m 0 (`jobscope monitor -i 0` exited 125 and never ran it).
test_interval_zero_runs_the_job_without_online_samples_in_every_front_end() {
    local f
    "$JS" run -q -i 0 -o run.jsonl -- sh -c 'echo ran > run.out' || return 1
    "$JS" monitor -q -i 0 -o mon.jsonl sh -c 'echo ran > mon.out' || return 1
    "$JS" run -q -m 0 -o m0.jsonl -- sh -c 'echo ran > m0.out' || return 1
    for f in run mon m0; do
        assert_eq "$(cat $f.out)" ran "$f: the job ran" || return 1
        assert_eq "$(jq_py '[e["event"] for e in ev]' $f.jsonl)" '["jobscope.start", "jobscope.end"]' "$f" || return 1
    done
    sleep 0.6 &
    "$JS" joremon -pid $! -interval 0 -out jr.jsonl || return 1
    assert_eq "$(cat jr.jsonl 2>/dev/null | wc -l)" 0 "JoReMon rows with -interval 0" || return 1
    # between 0 and 0.01 is still refused
    "$JS" run -q -i 0.001 -o x.jsonl -- true 2>/dev/null
    assert_eq $? 125 "-i 0.001" || return 1
}

# 27.13: `stats --help` did not mention --server (nor --output).
test_stats_help_names_every_option_stats_takes() {
    local out o
    out=$("$JS" stats --help) || return 1
    for o in --by --json --html --margin --output --server; do
        assert_match "$out" "$o" "stats --help mentions $o" || return 1
    done
}

# 27 (docs, events.md): SLURM_JOB_ID=124, SLURM_ARRAY_JOB_ID=123,
# SLURM_ARRAY_TASK_ID=4 gave job_id 124_4; Slurm's own name is 123_4.
test_a_slurm_array_elements_job_id_is_slurms_own_name() {
    SLURM_JOB_ID=124 SLURM_ARRAY_JOB_ID=123 SLURM_ARRAY_TASK_ID=4 "$JS" run -q -o ev.jsonl -- true || return 1
    assert_eq "$(jq_py 'ev[0]["job_id"]' ev.jsonl)" 123_4 "job_id" || return 1
    assert_eq "$(jq_py 'ev[0]["batch"]["job_id"]' ev.jsonl)" 124 "batch.job_id" || return 1
}

# 27 (docs, serve.md): a bad option of `jobscope serve` printed two lines.
test_a_bad_serve_option_is_one_line() {
    local o
    for o in --bogus --listen -z; do
        "$JS" serve "$o" 2> err.txt
        assert_eq $? 125 "serve $o" || return 1
        assert_eq "$(wc -l < err.txt)" 1 "one line for $o: $(cat err.txt)" || return 1
    done
}

# 27 (docs, publishing.md): an unknown scheme was said to be fatal; its
# events go to the spool (fatal only with --require-output).
test_an_unknown_scheme_spools_and_is_fatal_only_with_require_output() {
    "$JS" run -q --spool-dir sp -o foo://x/y -o ev.jsonl -- true
    assert_eq $? 0 "unknown scheme" || return 1
    assert_eq "$(cat sp/*.spool | grep -c '"event"')" "$(wc -l < ev.jsonl)" "events in the spool" || return 1
    "$JS" run -q --require-output -o foo://x/y -- true 2>/dev/null
    assert_eq $? 125 "with --require-output" || return 1
}
