# 52_metrics_scan.sh — --scan-output: byte-exact passthrough of the job's
# stdout/stderr (binary included, promptly) and MONITORING_PAYLOAD blocks
# turned into events; --strip-payloads (docs/metrics.md).

START='@@@MONITORING_PAYLOAD - START@@@'
END='@@@MONITORING_PAYLOAD - END@@@'

test_binary_passthrough_is_byte_exact() {
    head -c 3000000 /dev/urandom >bin.out
    head -c 1000000 /dev/urandom >bin.err
    "$JS" run -q -o ev.jsonl --scan-output --strip-payloads -- \
        sh -c 'cat bin.out; cat bin.err >&2; printf "no newline at the end"' >got.out 2>got.err || return 1
    printf 'no newline at the end' >>bin.out
    cmp bin.out got.out || fail "stdout differs" || return 1
    cmp bin.err got.err || fail "stderr differs" || return 1
    assert_eq "$(jq_py 'end["metrics"]["payload"]["stdout_bytes"]' ev.jsonl)" "$(stat -c %s bin.out)" || return 1
}

test_exit_status_and_no_scan_by_default() {
    "$JS" run -q -o ev.jsonl --scan-output -- sh -c 'echo hi; exit 7' >out.txt
    assert_eq $? 7 || return 1
    assert_eq "$(cat out.txt)" hi || return 1
    # without --scan-output the job writes straight to our stdout (not a pipe of ours)
    "$JS" run -q -o ev.jsonl -- sh -c 'readlink /proc/self/fd/1' >out.txt || return 1
    assert_eq "$(cat out.txt)" "$(readlink -f out.txt)" || return 1
}

test_block_split_over_two_writes_becomes_events() {
    cat >job.sh <<SHJOB
printf 'before\n$START\n{"monitoring_event": "darsh'
sleep 0.3
printf 'an.perf", "ts": 1552878285,\n "payload": [ {"a": 1, "ts": 1552878290}, {"b": {"c": [1, 2]}} ]}\n$END\nafter\n'
echo "err $START {\"payload\": [{\"e\": true}]} $END" >&2
SHJOB
    "$JS" run -q -o ev.jsonl --scan-output -- sh job.sh >out.txt 2>err.txt || return 1
    assert_eq "$(jq_py '[(e["event"], e["ts"], e.get("a"), e.get("b")) for e in ev if e["event"]=="darshan.perf"]' ev.jsonl)" \
        '[["darshan.perf", 1552878290.0, 1, null], ["darshan.perf", 1552878285.0, null, {"c": [1, 2]}]]' || return 1
    assert_eq "$(jq_py '[e["e"] for e in ev if e["event"]=="monitoring.additional"]' ev.jsonl)" '[true]' || return 1
    # annotations are stamped on payload events
    assert_eq "$(jq_py 'all("hostname" in e and "job_id" in e for e in ev if e["event"]=="darshan.perf")' ev.jsonl)" true || return 1
    # without --strip-payloads the output is untouched
    sh job.sh >ref.out 2>ref.err
    cmp ref.out out.txt && cmp ref.err err.txt || fail "output changed" || return 1
    assert_eq "$(jq_py 'end["metrics"]["payload"]' ev.jsonl | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["blocks"], d["events"], d["errors"])')" "2 3 0" || return 1
}

test_strip_payloads() {
    printf 'a\n%s\n{"payload": [{"x": 1}]}\n%s\nb\n' "$START" "$END" >in.txt
    "$JS" run -q -o ev.jsonl --strip-payloads -- cat in.txt >out.txt || return 1
    assert_eq "$(cat out.txt)" "$(printf 'a\nb')" || return 1
    assert_eq "$(jq_py '[e["x"] for e in ev if e["event"]=="monitoring.additional"]' ev.jsonl)" '[1]' || return 1
}

test_malformed_and_unterminated_blocks() {
    cat >job.sh <<SHJOB
printf '$START\n{"payload": [1, 2]}\n$END\n'
printf '$START {not json} $END\n'
printf 'tail $START {"payload": [{"x": 1}]}\nno end here\n'
SHJOB
    "$JS" run -q -o ev.jsonl --scan-output --strip-payloads -- sh job.sh >out.txt || return 1
    assert_eq "$(jq_py '[e["reason"] for e in ev if e["event"]=="jobscope.payload.error"]' ev.jsonl)" \
        '["\"payload\" has an item that is not an object", "payload block is not valid JSON", "payload block without END marker"]' || return 1
    assert_eq "$(jq_py 'len([e for e in ev if e["event"]=="monitoring.additional"])' ev.jsonl)" 0 || return 1
    # the unterminated block is given back, not lost
    assert_eq "$(cat out.txt)" "$(printf 'tail %s {"payload": [{"x": 1}]}\nno end here' "$START")" || return 1
}

maxrss_kb() {   # max RSS of `jobscope run --strip-payloads -- cat FILE`, in kB
    python3 -c '
import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "$JS" run -q -o /dev/null --strip-payloads -- cat "$1"
}

test_huge_block_is_capped_and_passed_on() {
    python3 -c "
import sys
w = sys.stdout.buffer.write
w(b'$START\n{\"payload\": [{\"big\": \"'); w(b'x' * 20000000); w(b'\"}]}\n$END\nafter\n')" >in.txt
    "$JS" run -q -o ev.jsonl --strip-payloads -- cat in.txt >out.txt || return 1
    cmp in.txt out.txt || fail "a block over the cap must be passed on whole" || return 1
    assert_eq "$(jq_py '[e["reason"] for e in ev if e["event"]=="jobscope.payload.error"]' ev.jsonl)" '["payload block too large"]' || return 1
    # memory stays bounded: a 20 MB block costs jobscope no more than a few MB
    echo small >small.txt
    big=$(maxrss_kb in.txt) small=$(maxrss_kb small.txt)
    assert_le "$((big - small))" 4096 "max RSS grew by $((big - small)) kB" || return 1
}

# the job's output must not wait for the scanner: a line printed before a
# pause is readable before the pause ends
test_output_is_passed_on_promptly() {
    for opt in --scan-output --strip-payloads; do
        # the job writes once its reader has started (python's start on a
        # loaded machine can take longer than the pause)
        rm -f ready
        "$JS" run -q -o ev.jsonl $opt -- sh -c 'while [ ! -e ready ]; do sleep 0.02; done; echo one; printf "@@@MON"; sleep 1.2; echo two' | python3 -c '
import sys, time
open("ready", "w").close()
t0 = time.time(); first = sys.stdin.buffer.readline(); t1 = time.time()
rest = sys.stdin.buffer.read(); t2 = time.time()
print("%.2f %r" % (t2 - t1, first + rest))' >lat.txt || return 1
        # had the first line been held back, both would arrive together
        read -r gap rest <lat.txt
        assert_ge "$gap" 0.7 "first line not passed on before the pause ($opt)" || return 1
        assert_eq "$rest" "b'one\\n@@@MONtwo\\n'" || return 1
    done
}

# --strip-payloads holds an open block back, but not for long: after 2 s it is
# passed on (and reported) even if END never comes
test_strip_does_not_hold_an_open_block_forever() {
    "$JS" run -q -o ev.jsonl --strip-payloads -- sh -c "printf 'a $START {\"payload\": ['; sleep 3.5; echo b" | python3 -c '
import os, time
chunks = []
while True:
    d = os.read(0, 65536)
    if not d: break
    chunks.append((time.time(), d))
t_start = next(t for t, d in chunks if b"START" in d)
t_b = next(t for t, d in chunks if b"b\n" in d)
print("%.2f %r" % (t_b - t_start, b"".join(d for t, d in chunks)))' >lat.txt || return 1
    read -r gap rest <lat.txt
    assert_ge "$gap" 0.7 "open block held until the end" || return 1
    assert_eq "$rest" "b'a $START {\"payload\": [b\\n'" || return 1
    assert_eq "$(jq_py '[e["reason"] for e in ev if e["event"]=="jobscope.payload.error"]' ev.jsonl)" \
        '["payload block not ended within 2 s, passed on"]' || return 1
}
