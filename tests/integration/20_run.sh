# jobscope run: the job is sacred, and the numbers are exact.
W=$HELPERS/workload

test_exit_status_is_the_jobs_own_for_every_code() {
    for code in 0 1 2 3 64 100 125 126 127 128 200 254 255; do
        "$JS" run -q -o ev.jsonl -- sh -c "exit $code"
        assert_eq $? $code "exit code" || return 1
    done
    assert_eq "$(jq_py 'sorted(set(e["exit_code"] for e in ev if e["event"]=="jobscope.end"))' ev.jsonl)" \
              "[0, 1, 2, 3, 64, 100, 125, 126, 127, 128, 200, 254, 255]"
}

test_all_256_exit_codes() {
    for code in $(seq 0 255); do
        "$JS" run -q -o /dev/null -- "$W" exit $code
        rc=$?
        [ $rc -eq $code ] || fail "code $code came back as $rc" || return 1
    done
}

test_killed_job_exits_128_plus_signal_and_record_names_it() {
    "$JS" run -o ev.jsonl -- sh -c 'kill -SEGV $$'
    assert_eq $? 139 || return 1
    assert_eq "$(jq_py 'end["exit_type"], end["signal"], end["signal_name"], end["exit_code"]' ev.jsonl)" \
              '["signaled", 11, "SIGSEGV", null]'
}

test_stdin_and_binary_stdout_pass_through_unchanged() {
    head -c 3000000 /dev/urandom > in.bin
    "$JS" run -o ev.jsonl -- cat < in.bin > out.bin
    assert_eq $? 0 || return 1
    cmp in.bin out.bin || fail "stdout differs from stdin"
}

test_stderr_passes_through_and_nothing_is_added_in_batch_use() {
    "$JS" run -o ev.jsonl -- sh -c 'echo out; echo err >&2' > out.txt 2> err.txt
    assert_eq "$(cat out.txt)" "out" || return 1
    assert_eq "$(cat err.txt)" "err"
}

test_environment_reaches_the_job_unchanged() {
    # custom metrics add JOBSCOPE_SOCKET/JOBSCOPE_TELEMETRY_LEVEL (docs/metrics.md);
    # with them off (--telemetry-level 0) nothing at all changes
    env | grep -v '^_=' | sort > bare.txt
    "$JS" run -o ev.jsonl --telemetry-level 0 -- env | grep -v '^_=' | sort > wrapped.txt
    diff bare.txt wrapped.txt || fail "environment differs" || return 1
    "$JS" run -o ev.jsonl -- env | grep -v '^_=' | grep -v '^JOBSCOPE_\(SOCKET\|TELEMETRY_LEVEL\)=' | sort > wrapped.txt
    grep -v '^JOBSCOPE_\(SOCKET\|TELEMETRY_LEVEL\)=' bare.txt | diff - wrapped.txt || fail "environment differs"
}

test_signals_sent_to_jobscope_are_forwarded() {
    # the job catches each signal and exits 100+N: it must get each exactly once
    for sig in TERM INT HUP QUIT USR1 USR2; do
        "$JS" run -o ev.jsonl -- "$W" catch got.txt &
        js=$!
        for i in $(seq 100); do pgrep -P $js >/dev/null && break; sleep 0.05; done
        sleep 0.1                                   # the job installs its handlers
        kill -$sig $js
        wait $js
        rc=$?
        assert_eq $rc $((100 + $(kill -l $sig))) "after SIG$sig" || return 1
        assert_eq "$(cat got.txt)" "$(kill -l $sig) 1" "delivered once" || return 1
    done
}

test_a_job_killed_through_jobscope_reports_the_signal() {
    "$JS" run -o ev.jsonl -- "$W" sleep 20 &
    js=$!
    for i in $(seq 100); do pgrep -P $js >/dev/null && break; sleep 0.05; done
    kill -TERM $js
    wait $js
    assert_eq $? 143 || return 1
    assert_eq "$(jq_py 'end["signal_name"]' ev.jsonl)" SIGTERM
}

test_command_not_found_is_127_and_not_executable_is_126() {
    "$JS" run -o ev.jsonl -- /no/such/command 2> err.txt
    assert_eq $? 127 || return 1
    assert_match "$(cat err.txt)" "jobscope: /no/such/command: command not found" || return 1
    printf 'data' > notexec
    "$JS" run -o ev.jsonl -- ./notexec 2> err.txt
    assert_eq $? 126 || return 1
    assert_eq "$(wc -l < err.txt)" 1 "one-line error"
}

test_bad_options_exit_125_with_one_line() {
    for args in "-i abc" "-i 0.001" "-m -1" "--format xml" "--tag novalue" "--bogus" "--output=" "--flush-timeout=-1"; do
        "$JS" run $args -- true 2> err.txt >/dev/null
        rc=$?
        [ $rc -eq 125 ] || fail "args '$args': exit $rc" || return 1
        [ "$(wc -l < err.txt)" -eq 1 ] || fail "args '$args': $(cat err.txt)" || return 1
        assert_match "$(cat err.txt)" '^jobscope: ' || return 1
    done
    "$JS" attach 2>/dev/null; assert_eq $? 125 || return 1
    "$JS" attach notapid 2>/dev/null; assert_eq $? 125 || return 1
    "$JS" frobnicate 2>/dev/null; assert_eq $? 125
}

test_unwritable_output_is_125_and_job_does_not_run() {
    "$JS" run -o /nonexistent/dir/ev.jsonl -- touch ran 2> err.txt
    assert_eq $? 125 || return 1
    [ ! -e ran ] || fail "job ran although jobscope could not start"
    assert_match "$(cat err.txt)" "cannot write events to /nonexistent/dir/ev.jsonl"
}

test_job_shorter_than_interval_gets_two_samples_and_a_record() {
    "$JS" run -i 5 -o ev.jsonl -- "$W" burn 30
    assert_eq $? 0 || return 1
    assert_ge "$(jq_py 'len(samples)' ev.jsonl)" 2 || return 1
    assert_eq "$(jq_py '[e["event"] for e in ev][0], [e["event"] for e in ev][-1]' ev.jsonl)" \
              '["jobscope.start", "jobscope.end"]' || return 1
    assert_ge "$(jq_py 'end["utime"]+end["stime"]' ev.jsonl)" 0.02
}

test_fork_storm_totals_match_the_kernel_within_1_percent() {
    mkdir out
    "$JS" run -i 0.1 -o ev.jsonl -- "$W" forkstorm 2000 1 65536 out report truth.txt
    assert_eq $? 0 || return 1
    read -r tu ts < truth.txt
    assert_close "$(jq_py 'end["utime"]+end["stime"]' ev.jsonl)" "$(awk -v a=$tu -v b=$ts 'BEGIN{print a+b}')" 0.01 "cpu" || return 1
    # 2000 x 64 KiB written, plus the few bytes of the report
    assert_close "$(jq_py 'end["wchar"]' ev.jsonl)" $((2000*65536)) 0.01 "wchar" || return 1
    assert_close "$(jq_py 'end["write_bytes"]' ev.jsonl)" $((2000*65536)) 0.01 "write_bytes" || return 1
    # and the kernel's own view of jobscope's children agrees
    assert_close "$(jq_py 'end["utime"]+end["stime"]' ev.jsonl)" \
                 "$(jq_py 'end["rusage_children"]["utime"]+end["rusage_children"]["stime"]' ev.jsonl)" 0.01
}

test_cumulative_counters_never_decrease() {
    mkdir out
    "$JS" run -i 0.02 -o ev.jsonl -- "$W" forkstorm 300 2 4096 out
    for f in utime stime rchar wchar bread bwrite syscr syscw minflt majflt nvcsw nivcsw; do
        r=$(jq_py "all(a['$f'] <= b['$f'] for a, b in zip(samples, samples[1:]))" ev.jsonl)
        assert_eq "$r" true "$f monotonic" || return 1
    done
    assert_eq "$(jq_py '[e["seq"] for e in ev] == list(range(1, len(ev)+1))' ev.jsonl)" true "seq gap-free"
}

test_children_of_a_non_main_thread_are_counted() {
    "$JS" run -i 0.05 -o ev.jsonl -- "$W" threadfork 400
    assert_ge "$(jq_py 'end["utime"]+end["stime"]' ev.jsonl)" 0.38 "cpu of the thread's child" || return 1
    assert_ge "$(jq_py 'max(s["procs"] for s in samples)' ev.jsonl)" 2 "child seen live"
}

test_double_forked_daemon_is_attributed_with_wait_all() {
    "$JS" run --wait-all -i 0.05 -o ev.jsonl -- "$W" daemon 300 1000000 daemon.out
    assert_eq $? 0 || return 1
    assert_file daemon.out || return 1
    assert_ge "$(jq_py 'end["utime"]+end["stime"]' ev.jsonl)" 0.29 "daemon cpu" || return 1
    assert_ge "$(jq_py 'end["wchar"]' ev.jsonl)" 1000000 "daemon writes" || return 1
    assert_ge "$(jq_py 'end["duration"]' ev.jsonl)" 0.45 "waited for the daemon"
}

test_without_wait_all_jobscope_returns_with_the_main_process() {
    "$JS" run -i 0.05 -o ev.jsonl -- "$W" daemon 2000 10 daemon.out
    assert_le "$(jq_py 'end["duration"]' ev.jsonl)" 1.0 "returned early"
}

test_deep_tree_is_seen_whole() {
    "$JS" run -i 0.1 -o ev.jsonl -- "$W" chain 60 1.0
    assert_ge "$(jq_py 'end["peaks"]["procs"]["value"]' ev.jsonl)" 61 || return 1
    assert_ge "$(jq_py 'end["total_procs"]' ev.jsonl)" 61
}

test_sample_fields_and_units() {
    "$JS" run -i 0.1 -o ev.jsonl -- "$W" burn 200 write 2000000 f.out
    for f in ts hostname wf_uuid rank pid exe utime stime iowait vm rss procs threads bread bwrite rchar wchar syscr syscw bsend brecv cpu_percent seq job_id; do
        assert_eq "$(jq_py "all('$f' in s for s in samples)" ev.jsonl)" true "field $f" || return 1
    done
    assert_ge "$(jq_py 'max(s["rss"] for s in samples)' ev.jsonl)" 100 "rss in kB" || return 1
    assert_ge "$(jq_py 'max(s["cpu_percent"] for s in samples)' ev.jsonl)" 50 || return 1
    assert_ge "$(jq_py 'end["bwrite"]' ev.jsonl)" 2000000
}

test_workflow_annotations_and_batch_ids_from_environment() {
    PEGASUS_WF_UUID=abc-123 PEGASUS_DAG_JOB_ID=job_7 PMI_RANK=3 SLURM_JOB_ID=991 \
        "$JS" run --tag run=42 --tag who=me -o ev.jsonl -- true
    assert_eq "$(jq_py 'end["wf_uuid"], end["dag_job_id"], end["rank"], end["job_id"], end["batch"], end["tags"]' ev.jsonl)" \
        '["abc-123", "job_7", 3, "991", {"system": "slurm", "job_id": "991"}, {"run": "42", "who": "me"}]' || return 1
    "$JS" run --job myjob -o ev2.jsonl -- true
    assert_eq "$(jq_py 'all(e["job_id"]=="myjob" for e in ev)' ev2.jsonl)" true
}

test_strings_with_quotes_newlines_and_invalid_utf8_stay_valid_json() {
    "$JS" run -o ev.jsonl --tag "k=$(printf 'a"b\\c\nd\001\377')" -- sh -c 'true' "$(printf 'x"\n\377y')"
    assert_eq $? 0 || return 1
    assert_eq "$(jq_py 'end["tags"]["k"]' ev.jsonl)" "$(printf 'a"b\\c\nd\001\357\277\275')"
}

test_kickstart_mon_url_is_honoured() {
    KICKSTART_MON_URL=file://$T/k.jsonl "$JS" run -- true
    assert_ge "$(jq_py 'len(samples)' k.jsonl)" 2
}

test_default_output_is_named_after_the_job() {
    "$JS" run --job 'wf/job 1' -- true 2> err.txt
    assert_file "wf_job_1.jsonl" || return 1
    assert_eq "$(cat err.txt)" "" "nothing on stderr in batch use"
}

test_concurrent_jobs_share_one_file_without_interleaving() {
    for i in 1 2 3 4; do "$JS" run -i 0.01 -o shared.jsonl -- "$W" burn 300 & done
    wait
    assert_eq "$(jq_py 'len(set(e["job_id"] for e in ev))' shared.jsonl)" 4 || return 1
    assert_eq "$(jq_py 'len([e for e in ev if e["event"]=="jobscope.end"])' shared.jsonl)" 4
}

test_summary_file_holds_the_record() {
    "$JS" run --summary sum.json -o ev.jsonl -- "$W" burn 50
    assert_eq "$(python3 -c 'import json;d=json.load(open("sum.json"));print(d["event"], d["exit_code"])')" "jobscope.end 0"
}

test_output_to_a_closed_pipe_does_not_harm_the_job() {
    "$JS" run -i 0.01 -o - -- "$W" burn 200 exit 7 | head -c 1 > /dev/null
    assert_eq "${PIPESTATUS[0]}" 7
}

test_full_disk_never_leaves_a_truncated_line() {
    [ "$(id -u)" = 0 ] || return 77
    mkdir mnt && mount -t tmpfs -o size=64k tmpfs mnt || return 77
    "$JS" run -i 0.01 -o mnt/ev.jsonl -- "$W" burn 1500 exit 5
    rc=$?
    python3 -c 'import json,sys
[json.loads(l) for l in open("mnt/ev.jsonl")]' ; ok=$?
    umount mnt
    assert_eq $rc 5 "job status kept" || return 1
    assert_eq $ok 0 "every line is whole JSON"
}

test_a_process_with_2000_children_is_seen_whole() {
    # its children file is longer than one read buffer
    "$JS" run -i 0.2 -o ev.jsonl -- "$W" fanout 2000 4
    assert_ge "$(jq_py 'end["peaks"]["procs"]["value"]' ev.jsonl)" 2001
}

test_scan_discovery_finds_the_same_tree() {
    JOBSCOPE_DISCOVERY=scan "$JS" run -i 0.05 -o ev.jsonl -- "$W" threadfork 300 chain 20 0.5
    assert_eq "$(jq_py 'ev[0]["discovery"]' ev.jsonl)" scan || return 1
    assert_ge "$(jq_py 'end["peaks"]["procs"]["value"]' ev.jsonl)" 21 || return 1
    assert_ge "$(jq_py 'end["utime"]+end["stime"]' ev.jsonl)" 0.29
}

test_cpu_percent_at_50_hz_agrees_with_the_cpu_time() {
    # schedstat (ns) refines the 10 ms ticks: the mean rate must match the total
    "$JS" run -i 0.02 -o ev.jsonl -- "$W" burn 800
    mean=$(jq_py 'sum(s["cpu_percent"] for s in samples[1:]) / len(samples[1:])' ev.jsonl)
    expect=$(jq_py '100 * (end["utime"] + end["stime"]) / (samples[-1]["elapsed"] - samples[0]["elapsed"])' ev.jsonl)
    assert_close "$mean" "$expect" 0.15 "mean cpu_percent" || return 1
    assert_le "$(jq_py 'max(s["cpu_percent"] for s in samples)' ev.jsonl)" "$(($(nproc) * 100))"
}

test_htcondor_job_ad_gives_the_job_id() {
    printf 'MyType = "Job"\nClusterId = 4242\nProcId = 7\nOwner = "me"\n' > job.ad
    _CONDOR_JOB_AD=$T/job.ad "$JS" run -o ev.jsonl -- true
    assert_eq "$(jq_py 'end["job_id"], end["batch"]' ev.jsonl)" '["4242.7", {"system": "condor", "job_id": "4242.7"}]'
}

test_file_outputs_do_not_load_the_network_libraries() {
    # the network destinations live in jobscope-net.so, loaded only when needed
    "$JS" run -o ev.jsonl -- "$W" sleep 1 &
    sleep 0.5
    js=$(pgrep -n -f "jobscope run -o ev.jsonl")
    maps=$(cat /proc/$js/maps)
    wait
    if printf '%s' "$maps" | grep -qE 'libcurl|librabbitmq|libjansson|libssl|libgnutls'; then
        fail "network libraries mapped: $(printf '%s' "$maps" | grep -oE 'lib(curl|rabbitmq|jansson|ssl|gnutls)[^ ]*' | sort -u | tr '\n' ' ')"
    fi
}

# Samples to a file wait at most --flush-interval for the next write (one
# write of whole lines); nothing is lost: all are there at the end, in
# order.  With 0 every line is written when it comes.
test_samples_to_a_file_wait_for_the_flush_interval_and_none_is_lost() {
    "$JS" run -i 0.1 --flush-interval 30 -o held.jsonl -- sleep 2 &
    pid=$!
    "$JS" run -i 0.1 --flush-interval 0 -o each.jsonl -- sleep 2 &
    pid0=$!
    sleep 1.3
    held=$(wc -l < held.jsonl)
    each=$(wc -l < each.jsonl)
    wait $pid $pid0
    # the start event at once; the samples after it held
    assert_le "$held" 2 "lines while the job ran" || return 1
    assert_ge "$each" 5 "lines while the job ran, --flush-interval 0" || return 1
    for f in held.jsonl each.jsonl; do
        assert_ge "$(jq_py 'len(samples)' $f)" 15 "samples in $f" || return 1
        assert_eq "$(jq_py '[e["seq"] for e in ev] == list(range(ev[0]["seq"], ev[0]["seq"] + len(ev)))' $f)" true "$f in order" || return 1
        assert_eq "$(jq_py 'ev[-1]["event"]' $f)" jobscope.end || return 1
    done
}
