# Regression tests for the defects of issue 16 in delivery to network
# destinations: the end-of-job flush, backoff, the spool (docs/testing.md).
source "$ROOT/tests/helpers/publish_servers.sh"
W=$HELPERS/workload

# 16.5: a non-finite --flush-timeout used to be accepted and spin forever
test_a_non_finite_flush_timeout_is_refused() {
    for v in nan inf -inf NaN infinity 1e999; do
        timeout 10 "$JS" run --flush-timeout "$v" -o ev.jsonl -- true 2> err.txt
        rc=$?
        assert_eq $rc 125 "run --flush-timeout $v" || return 1
        assert_eq "$(wc -l < err.txt)" 1 "one line for $v: $(cat err.txt)" || return 1
        timeout 10 "$JS" flush --flush-timeout "$v" -o http://127.0.0.1:9/ x.spool 2> err.txt
        assert_eq $? 125 "flush --flush-timeout $v" || return 1
    done
}

# 16.5: SIGTERM during the end-of-job flush ends it at once; what is not
# delivered stays in the spool
test_a_signal_during_the_flush_ends_it_and_keeps_the_spool() {
    recv_start --fail-first 1000000 || return 1
    "$JS" run -q --flush-timeout 60 --spool-dir sp -o ev.jsonl \
        -o "http://127.0.0.1:$RECV_PORT/x" -- true 2> err.txt &
    pid=$!
    # the job is over once the end record is written: the flush is under way
    for i in $(seq 1 100); do grep -q jobscope.end ev.jsonl 2>/dev/null && break; sleep 0.05; done
    sleep 0.5
    start=$(date +%s.%N)
    kill -TERM $pid
    wait $pid
    took=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN{print e-s}')
    assert_le "$took" 1.5 "seconds from SIGTERM to exit" || return 1
    n=$(cat sp/*.spool 2>/dev/null | grep -c '"event"')
    assert_eq "$n" "$(wc -l < ev.jsonl)" "events kept in the spool" || return 1
}

# 16.6: the flush used to wake the delivery thread on every wake-up, so a
# refusing server got thousands of requests per second
test_the_backoff_holds_during_the_end_of_job_flush() {
    recv_start --fail-first 1000000 || return 1
    "$JS" run -q --flush-timeout 4 --spool-dir sp -o ev.jsonl \
        -o "http://127.0.0.1:$RECV_PORT/x" -- true 2> err.txt
    n=$(wc -l < requests.jsonl)
    # 0.1, 0.2, 0.4, 0.8, 1.6 s...: about 6 attempts in 4 s, never hundreds
    assert_le "$n" 12 "requests to a 503 server during a 4 s flush" || return 1
    assert_ge "$n" 3 "requests (it did retry)"
}

# 16.7: a spool full of malformed lines is read through once: the good
# records are delivered, the bad ones counted (recursion per line before)
test_flush_delivers_the_good_records_of_a_spool_full_of_malformed_lines() {
    recv_start || return 1
    mkdir sp
    { printf 'JSSPOOL1 %020d\nurl http://x/\n' 0
      python3 -c 'import sys; sys.stdout.write("garbage\n" * 300000)'
      printf '7\tjobscope.end\t{"event":"jobscope.end","seq":7}\n'; } > sp/bad.spool
    timeout 20 "$JS" flush --flush-timeout 10 -o "http://127.0.0.1:$RECV_PORT/x" sp/bad.spool 2> err.txt
    assert_eq $? 0 "flush: $(cat err.txt)" || return 1
    assert_eq "$(jq_py '[e["body"] for e in ev]' requests.jsonl)" '["{\"event\":\"jobscope.end\",\"seq\":7}"]' || return 1
    grep -q "300000 malformed lines" err.txt || fail "not counted: $(cat err.txt)" || return 1
    [ ! -e sp/bad.spool ] || fail "spool not removed once delivered"
}

# 16.10: passwords holding '/', '#' or '?' and credentials in query strings
# used to stay visible in /proc/PID/cmdline and in messages
test_odd_passwords_and_query_secrets_stay_out_of_argv_and_messages() {
    "$JS" run -i 0.1 --spool-dir sp --flush-timeout 0 \
        -o 'http://u:se/cr#et?1@127.0.0.1:9/in?apikey=K3YK3Y&password=PWPW&site=a' -- sleep 1 2> err.txt &
    local js=$!
    sleep 0.5
    tr '\0' ' ' < /proc/$js/cmdline > cmdline.txt
    wait $js
    assert_eq $? 0 || return 1
    ! grep -q "se/cr\|cr#et\|et?1\|K3YK3Y\|PWPW" cmdline.txt || fail "secret in argv: $(cat cmdline.txt)" || return 1
    grep -q "site=a" cmdline.txt || fail "argv scrubbed too much: $(cat cmdline.txt)" || return 1
    ! grep -q "se/cr\|cr#et\|et?1\|K3YK3Y\|PWPW" err.txt sp/* || fail "secret in messages or spool: $(cat err.txt; head -2 sp/*)"
}

# 16.11: a spool directory made by another user (or open to others) used to
# be used as it was: refused now, and said
test_a_spool_directory_that_is_not_the_users_own_is_refused() {
    [ "$(id -u)" = 0 ] || return 77          # needs another owner: chown
    mkdir -m 0700 squat && chown 65534 squat
    "$JS" run -q --spool-dir squat -o ev.jsonl -o "http://127.0.0.1:9/x" --flush-timeout 0 -- true 2> err.txt
    assert_eq $? 0 "the job runs anyway" || return 1
    grep -q "squat.*not.*own" err.txt || fail "not refused: $(cat err.txt)" || return 1
    [ -z "$(ls -A squat)" ] || fail "a spool was written into another user's directory" || return 1
    mkdir -m 0777 open && chmod 0777 open
    JOBSCOPE_SPOOL_DIR=$T/open "$JS" run -q -o "http://127.0.0.1:9/x" --flush-timeout 0 -- true 2> err.txt
    grep -q "open.*writable by others" err.txt || fail "not refused: $(cat err.txt)" || return 1
    [ -z "$(ls -A open)" ] || fail "a spool was written into a world-writable directory"
}

test_flush_refuses_a_spool_file_planted_by_another_user() {
    [ "$(id -u)" = 0 ] || return 77
    recv_start || return 1
    mkdir sp
    { printf 'JSSPOOL1 %020d\nurl http://x/\n' 0
      printf '1\tjobscope.end\t{"event":"planted","seq":1}\n'; } > sp/planted.spool
    chown 65534 sp/planted.spool
    "$JS" flush -o "http://127.0.0.1:$RECV_PORT/x" sp/planted.spool 2> err.txt
    assert_eq $? 1 "flush status" || return 1
    grep -q "not yours\|not owned" err.txt || fail "not refused: $(cat err.txt)" || return 1
    [ ! -s requests.jsonl ] || fail "planted events were delivered: $(cat requests.jsonl)"
}
