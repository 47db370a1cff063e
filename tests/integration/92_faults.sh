# 92_faults.sh — fault injection (issue 13, docs/testing.md): each fault hits
# jobscope while a job runs, and each test asserts that the job is unharmed
# (exit status, output) and that nothing jobscope acknowledged is lost or torn.
source "$ROOT/tests/helpers/serve.sh" # and publish_servers.sh

# every line of FILE is one whole JSON object; prints the count
whole_lines() {
    python3 - "$1" <<'PY'
import json, sys
n = 0
for line in open(sys.argv[1], 'rb').read().split(b'\n'):
    if line:
        json.loads(line)
        n += 1
print(n)
PY
}

# descendants PID: PID and every process below it
descendants() {
    local p; echo -n "$1 "
    for p in $(pgrep -P "$1"); do descendants "$p"; done
}

# small_fs DIR SIZE: a tmpfs of SIZE mounted on DIR (root only), unmounted on exit.
small_fs() {
    [ "$(id -u)" = 0 ] || { echo "    skip: mounting a tmpfs needs root" >&2; return 77; }
    mkdir -p "$1" && mount -t tmpfs -o size="$2" tmpfs "$1" 2>/dev/null ||
        { echo "    skip: cannot mount a tmpfs here" >&2; return 77; }
    _js_add_trap "umount -l '$1'"
}

test_output_on_a_full_filesystem_leaves_the_job_whole_and_no_torn_line() {
    small_fs full 64k || return $?
    # 50 lines of output, then the job waits (up to 3 s) until the events
    # have filled the filesystem: how fast depends on the machine, not the test
    "$JS" run -q -i 0.01 -o full/ev.jsonl -- sh -c 'for i in $(seq 1 50); do echo "out $i"; sleep 0.01; done
        for i in $(seq 1 300); do [ "$(df --output=avail full | tail -1)" -le 8 ] && break; sleep 0.01; done; exit 7' \
        > out.txt 2> err.txt
    assert_eq $? 7 "job exit status" || return 1
    assert_eq "$(wc -l < out.txt)" 50 "job output" || return 1
    local n; n=$(whole_lines full/ev.jsonl) || fail "a torn line in the event file" || return 1
    assert_ge "$n" 10 "events that fitted" || return 1
    [ "$(df --output=avail full | tail -1)" -le 8 ] || fail "the filesystem never filled up" || return 1
}

test_spool_on_a_full_filesystem_leaves_the_job_whole() {
    small_fs full 32k || return $?
    local port; port=$(free_port)          # nothing listens there
    "$JS" run -q -i 0.01 --flush-timeout 1 --spool-dir full/sp -o "influx://127.0.0.1:$port/db" \
        -o ev.jsonl -- sh -c 'seq 1 1000; sleep 1; exit 4' > out.txt 2> err.txt
    assert_eq $? 4 "job exit status" || return 1
    assert_eq "$(wc -l < out.txt)" 1000 "job output" || return 1
    whole_lines ev.jsonl >/dev/null || fail "a torn line in the local copy" || return 1
}

test_kill_9_of_jobscope_lets_the_job_run_to_completion() {
    "$JS" run -q -i 0.02 -o ev.jsonl -- sh -c 'sleep 1; echo finished > done.txt; exit 3' &
    local js=$!
    sleep 0.4
    kill -9 $js
    wait $js 2>/dev/null
    for i in $(seq 1 40); do [ -s done.txt ] && break; sleep 0.1; done
    assert_eq "$(cat done.txt 2>/dev/null)" finished "the job ran to completion" || return 1
    whole_lines ev.jsonl >/dev/null || fail "a torn line after kill -9" || return 1
}

test_broker_frozen_with_sigstop_neither_delays_the_job_nor_loses_events() {
    have_pika || return 77
    rmq_start || return $?
    rmq_queue monitoring q_all '#' || return 1
    # the broker's own processes (the wrapper's children run the Erlang VM)
    local frozen; frozen=$(descendants "$RMQ_PID")
    [ -n "$frozen" ] || fail "broker processes not found" || return 1
    kill -STOP $frozen
    _js_add_trap "kill -CONT $frozen 2>/dev/null"
    local t0; t0=$(date +%s.%N)
    "$JS" run -q -i 0.05 --flush-timeout 2 --spool-dir sp -o ev.jsonl \
        -o "amqp://guest:guest@127.0.0.1:$RMQ_PORT/%2f/monitoring" -- sh -c 'sleep 1; exit 6' 2> err.txt
    local rc=$? t1; t1=$(date +%s.%N)
    kill -CONT $frozen
    assert_eq $rc 6 "job exit status" || return 1
    # job 1 s + flush deadline 2 s + start-up: never stuck on the frozen broker
    assert_le "$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')" 6 "seconds until jobscope ended" || return 1
    ls sp/*.spool >/dev/null 2>&1 || fail "undelivered events not spooled" || return 1
    "$JS" flush -q --flush-timeout 30 -o "amqp://guest:guest@127.0.0.1:$RMQ_PORT/%2f/monitoring" sp ||
        fail "jobscope flush failed" || return 1
    amqp_drain q_all all.jsonl || return 1
    assert_match "$(check_delivery all.jsonl ev.jsonl)" "^ok " "after the broker thawed" || return 1
}

# The wall clock steps back an hour in the middle of a job (libfaketime,
# re-reading its offset file): seq stays gap-free and increasing, and the
# cumulative counters never go down.
# After kill -9 of jobscope the job, now without its parent, is re-parented to
# the nearest child subreaper (a batch system's step daemon) or to init, and
# its exit status goes there: jobscope can no longer pass it on, but it is
# not lost.  The helper plays the step daemon.
test_after_kill_9_the_jobs_exit_status_reaches_the_nearest_subreaper() {
    "$HELPERS/subreaper" reaped.txt "$JS" run -q -i 0.02 -o ev.jsonl -- \
        sh -c 'echo $$ > job.pid; sleep 1; exit 3' &
    local sr=$!
    for i in $(seq 1 50); do [ -s job.pid ] && break; sleep 0.05; done
    local js; js=$(awk '{print $4}' /proc/"$(cat job.pid)"/stat)      # the job's parent: jobscope
    kill -9 "$js"
    wait $sr
    assert_eq $? 137 "the subreaper saw jobscope killed" || return 1
    assert_eq "$(awk -v p="$(cat job.pid)" '$1==p{print $2}' reaped.txt)" 3 \
        "the job's own exit status, at the subreaper" || return 1
    whole_lines ev.jsonl >/dev/null || fail "a torn line after kill -9"
}

# /proc entries vanish while they are read: a churn of short-lived processes
# and threads sampled every 10 ms (both discovery modes).  Nothing on stderr,
# the counters never go down, and the totals are still the kernel's.
test_proc_entries_vanishing_mid_read_leave_exact_monotonic_totals() {
    for mode in children scan; do
        mkdir -p out-$mode
        JOBSCOPE_DISCOVERY=$mode "$JS" run -q --sampler procfs -i 0.01 -o $mode.jsonl -- \
            "$HELPERS/workload" forkstorm 800 1 4096 out-$mode threadfork 50 report truth-$mode.txt 2> err-$mode.txt
        assert_eq $? 0 "$mode: exit status" || return 1
        assert_eq "$(cat err-$mode.txt)" "" "$mode: stderr" || return 1
        read -r tu ts < truth-$mode.txt
        assert_close "$(jq_py 'end["utime"]+end["stime"]' $mode.jsonl)" "$(awk -v a=$tu -v b=$ts 'BEGIN{print a+b}')" 0.01 "$mode cpu" || return 1
        assert_close "$(jq_py 'end["wchar"]' $mode.jsonl)" $((800*4096)) 0.01 "$mode wchar" || return 1
        assert_eq "$(jq_py 'all(b["utime"] >= a["utime"] and b["wchar"] >= a["wchar"] and b["minflt"] >= a["minflt"] for a, b in zip(samples, samples[1:]))' $mode.jsonl)" \
            true "$mode: counters monotonic" || return 1
    done
}

test_clock_stepping_backwards_keeps_seq_and_counters_monotonic() {
    local lib; lib=$(ls /usr/lib/*/faketime/libfaketime.so.1 2>/dev/null | head -1)
    [ -n "$lib" ] || { echo "    skip: libfaketime not installed" >&2; return 77; }
    echo "+0" > offset
    # under ASan, libfaketime comes before the ASan runtime: allow it
    ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 \
    LD_PRELOAD=$lib FAKETIME_TIMESTAMP_FILE=$PWD/offset FAKETIME_NO_CACHE=1 DONT_FAKE_MONOTONIC=1 \
        "$JS" run -q -i 0.05 -o ev.jsonl -- "$HELPERS/workload" burn 1200 &
    local js=$!
    sleep 0.5
    echo "-3600" > offset
    wait $js
    assert_eq $? 0 "job exit status" || return 1
    assert_eq "$(jq_py '[e["seq"] for e in ev] == list(range(1, len(ev) + 1))' ev.jsonl)" true "seq gap-free" || return 1
    assert_eq "$(jq_py 'min(e["ts"] for e in ev) < max(e["ts"] for e in ev) - 1800' ev.jsonl)" true \
        "the clock really stepped back" || return 1
    assert_eq "$(jq_py 'all(b["utime"] >= a["utime"] and b["wchar"] >= a["wchar"] for a, b in zip(samples, samples[1:]))' ev.jsonl)" \
        true "counters monotonic" || return 1
}

# --- the store of jobscope serve (docs/store.md) ---------------------------------

# metric NAME: the value of a /metrics line of the server at $SERVE_URL
serve_metric() {
    curl -s "$SERVE_URL/metrics" | awk -v n="$1" '$1 == n {print $2}'
}

# lines N TS0 [TAG]: N lines of line protocol, one point each, ms timestamps from TS0
lp_lines() {
    python3 -c 'import sys; n, t0, tag = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
print("\n".join("fs,host=h1,job=%s v=%d %d" % (tag, i, t0 + i) for i in range(n)))' "$@"
}

# The same with random values: the log cannot make them small (lp_lines'
# steady counter takes a few bytes in all, once compressed).
lp_noise() {
    python3 -c 'import random, sys; n, t0, tag = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
r = random.Random(7)
print("\n".join("fs,host=h1,job=%s v=%r %d" % (tag, r.random(), t0 + i) for i in range(n)))' "$@"
}

# Issue 23.17: a store on a full file system kept failing writes after space
# was freed, until a restart, said nothing, and /api/version stayed 200.  It
# comes back by itself, says so in the log both ways and in /metrics.
test_store_on_a_full_filesystem_comes_back_by_itself_when_space_is_freed() {
    small_fs full 16m || return $?
    serve_start s --store "$T/full/store" || return 1
    local t0=1700000000000 code i
    lp_lines 200 $t0 before > before.lp
    code=$(curl -s -o /dev/null -w '%{http_code}' --data-binary @before.lp "$SERVE_URL/write?precision=ms")
    assert_eq "$code" 204 "a write with room" || return 1
    assert_eq "$(serve_metric jobscope_serve_store_writable)" 1 "writable at first" || return 1
    dd if=/dev/zero of=full/filler bs=64k 2>/dev/null
    dd if=/dev/zero of=full/filler2 bs=512 2>/dev/null
    lp_noise 3000 $((t0 + 100000)) full > during.lp
    for i in $(seq 20); do
        code=$(curl -s -o /dev/null -w '%{http_code}' --data-binary @during.lp "$SERVE_URL/write?precision=ms")
        [ "$code" != 204 ] && break
    done
    assert_ne "$code" 204 "a write on the full file system" || return 1
    assert_eq "$(serve_metric jobscope_serve_store_writable)" 0 "/metrics while full" || return 1
    assert_ge "$(serve_metric jobscope_serve_store_write_failures_total)" 1 "write failures counted" || return 1
    grep -q "store: cannot write the log" s.log || fail "no log line when writes began to fail" || return 1
    rm -f full/filler full/filler2
    lp_lines 200 $((t0 + 200000)) after > after.lp
    for i in $(seq 60); do
        code=$(curl -s -o /dev/null -w '%{http_code}' --data-binary @after.lp "$SERVE_URL/write?precision=ms")
        [ "$code" = 204 ] && break
        sleep 0.25
    done
    assert_eq "$code" 204 "a write once space was freed, without a restart" || return 1
    assert_eq "$(serve_metric jobscope_serve_store_writable)" 1 "/metrics after space was freed" || return 1
    grep -q "store: the log is writable again" s.log || fail "no log line when writes came back" || return 1
    local n
    n=$(curl -sg "$SERVE_URL/api/query?start=$t0&end=$((t0 + 400000))&ms=true&m=zimsum:0all-count:fs.v{job=before|after}" |
        python3 -c 'import json,sys; print(sum(int(v) for s in json.load(sys.stdin) for v in s["dps"].values()))')
    assert_eq "$n" 400 "points acknowledged before and after" || return 1
}

# Issue 23.5: --max-size deleted every point, the newest included.  The
# oldest points go first, the newest partition never, and the log and
# /metrics say what was dropped.
test_max_size_drops_the_oldest_points_and_says_so() {
    local now old
    now=$(($(date +%s) * 1000)) old=$((now - 3 * 86400000))
    serve_start s --max-size 1M || return 1
    python3 -c 'import random, sys
r = random.Random(5)
t0 = int(sys.argv[1])
print("\n".join("old,host=h%d v=%.6f %d" % (h, r.random(), t0 + i * 1000) for h in range(40) for i in range(5000)))' $old > old.lp
    curl -sf --data-binary @old.lp "$SERVE_URL/write?precision=ms" || fail "write of old points" || return 1
    lp_lines 100 $((now - 60000)) new > new.lp
    curl -sf --data-binary @new.lp "$SERVE_URL/write?precision=ms" || fail "write of new points" || return 1
    local i dropped=0
    for i in $(seq 60); do      # maintenance runs every 10 s
        curl -s "$SERVE_URL/metrics" > metrics.txt
        dropped=$(awk '$1 == "jobscope_serve_store_dropped_points_total{reason=\"size\"}" {print $2}' metrics.txt)
        [ "${dropped:-0}" -gt 0 ] && break
        sleep 0.5
    done
    assert_ge "${dropped:-0}" 1 "points dropped for the size limit, in /metrics" || return 1
    grep -q "store: size limit 1.0 MiB: dropped" s.log || fail "no log line: $(cat s.log)" || return 1
    local n
    n=$(curl -sg "$SERVE_URL/api/query?start=$((now - 3600000))&ms=true&m=zimsum:0all-count:fs.v{job=new}" |
        python3 -c 'import json,sys; d=json.load(sys.stdin); print(int(list(d[0]["dps"].values())[0]) if d else 0)')
    assert_eq "$n" 100 "the newest points" || return 1
}
