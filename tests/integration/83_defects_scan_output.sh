# Regression tests for the defects of issue 16 in --scan-output, where the
# job's stdout and stderr pass through jobscope (docs/testing.md).
W=$HELPERS/workload

# 16.1: when jobscope's own stdout broke (EPIPE), the pump kept reading and
# dropping, so `yes | head -1` never ended; the job must see the broken pipe
test_a_broken_downstream_pipe_reaches_the_job() {
    timeout 20 bash -c '"$JS" run --scan-output -o ev.jsonl -- yes | head -1 > out.txt; echo "${PIPESTATUS[0]}" > rc.txt'
    assert_eq $? 0 "the pipeline ended (124: it hung)" || return 1
    assert_eq "$(cat out.txt)" y || return 1
    assert_eq "$(cat rc.txt)" 141 "jobscope's status: the job's 128+SIGPIPE" || return 1
    assert_eq "$(jq_py 'end["signal_name"]' ev.jsonl)" SIGPIPE
}

# 16.2: with both streams on one file (> f 2>&1), two pipes reordered them
test_stdout_and_stderr_into_one_file_keep_their_order() {
    "$JS" run --scan-output -o ev.jsonl -- \
        sh -c 'for i in 1 2 3 4 5; do echo out$i; echo err$i >&2; done' > f.txt 2>&1
    assert_eq "$(tr '\n' ' ' < f.txt)" "out1 err1 out2 err2 out3 err3 out4 err4 out5 err5 " || return 1
    # two different files stay two streams
    "$JS" run --scan-output -o ev.jsonl -- sh -c 'echo o; echo e >&2' > o.txt 2> e.txt
    assert_eq "$(cat o.txt)/$(cat e.txt)" "o/e"
}

# 16.3: the job's output must survive the monitor: killed with -9, jobscope
# used to take the pipes' only reader with it (the job died of SIGPIPE)
test_the_jobs_output_survives_jobscope_killed_by_sigkill() {
    "$JS" run --scan-output -o ev.jsonl -- sh -c 'echo before; sleep 1; echo after; echo err-after >&2' \
        > out.txt 2> err.txt &
    js=$!
    for i in $(seq 1 50); do grep -q before out.txt 2>/dev/null && break; sleep 0.05; done
    kill -9 $js
    wait $js 2>/dev/null
    sleep 1.5
    assert_eq "$(tr '\n' ' ' < out.txt)" "before after " "the job's stdout" || return 1
    assert_eq "$(cat err.txt)" "err-after" "the job's stderr"
}

# 16.3: a background process writing more than 1 s after the job ended was
# cut off (jobscope stopped reading and closed the pipe)
test_a_background_writer_keeps_its_output_after_the_job_ends() {
    "$JS" run --scan-output -o ev.jsonl -- sh -c '(sleep 1.6; echo late) & echo now' > out.txt
    assert_eq $? 0 || return 1
    sleep 2
    assert_eq "$(tr '\n' ' ' < out.txt)" "now late " "stdout of the job and its background process"
}


# 16.3: the relay is no part of the job: forked while jobscope sits in the
# job's new cgroup, it leaves it at once (the cgroup's figures, limits and
# emptiness at the end are the job's)
test_the_output_relay_stays_out_of_the_jobs_cgroup() {
    [ "$(id -u)" = 0 ] || return 77
    "$JS" run --cgroup --scan-output -i 0.05 -o ev.jsonl -- sh -c '
        sleep 0.3
        d=$(awk -F: '"'"'$2=="pids"{print "/sys/fs/cgroup/pids"$3; exit} $1=="0"&&$2==""{print "/sys/fs/cgroup"$3; exit}'"'"' /proc/self/cgroup)
        for p in $(cat $d/cgroup.procs); do cat /proc/$p/comm; done > comms.txt 2>/dev/null'
    [ -n "$(jq_py 'end.get("cgroup")' ev.jsonl | grep -v null)" ] || return 77
    [ -s comms.txt ] || return 77
    ! grep -q jobscope comms.txt || fail "jobscope's relay in the job's cgroup: $(tr '\n' ' ' < comms.txt)"
}
