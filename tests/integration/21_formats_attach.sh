# Output formats (CSV, JoReMon) and jobscope attach.
W=$HELPERS/workload

test_csv_output_has_a_header_and_one_row_per_sample() {
    "$JS" run -i 0.1 -o ev.csv -o ev.jsonl -- "$W" burn 300
    assert_eq "$(head -1 ev.csv | cut -d, -f1-5)" "ts,job_id,hostname,elapsed,utime" || return 1
    assert_eq "$(($(wc -l < ev.csv) - 1))" "$(jq_py 'len(samples)' ev.jsonl)" || return 1
    last_cpu=$(tail -1 ev.csv | awk -F, '{print $5+$6}')
    assert_close "$last_cpu" "$(jq_py 'end["utime"]+end["stime"]' ev.jsonl)" 0.01
}

test_joremon_json_rows_have_joremons_names() {
    "$JS" run -i 0.1 --job 123456 --format joremon-json -o jr.jsonl -- "$W" burn 250
    assert_eq "$(jq_py 'sorted(set(e["Type"] for e in ev))' jr.jsonl)" \
              '["joremon.CPUInfo", "joremon.IOInfo", "joremon.MemInfo"]' || return 1
    assert_eq "$(jq_py 'list(next(e for e in ev if e["Type"]=="joremon.CPUInfo").keys())' jr.jsonl)" \
              '["JobID", "Type", "PID", "CWD", "CMD", "Hostname", "User", "Timestamp", "CPUTime", "ClockTime", "CPUPercent", "PeakCPUPercent"]' || return 1
    assert_ge "$(jq_py 'max(e.get("CPUTime",0) for e in ev)' jr.jsonl)" 0.24 || return 1
    assert_match "$(jq_py 'ev[0]["Timestamp"]' jr.jsonl)" '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}(\.[0-9]{1,9})?(Z|[+-][0-9]{2}:[0-9]{2})$'
}

test_joremon_csv_header_is_sorted_like_joremon() {
    "$JS" run -i 0.1 --format joremon-csv -o jr.csv -- true
    assert_eq "$(head -1 jr.csv)" "CMD,CPUPercent,CPUTime,CWD,ClockTime,Hostname,JobID,PID,PeakCPUPercent,PeakRSS,RBytesFromDisk,RBytesTotal,RSS,Timestamp,Type,User,VMS,WBytesFromDisk,WBytesTotal"
}

test_attach_follows_a_running_tree_until_it_ends() {
    "$W" sleep 0.3 burn 300 threadfork 200 sleep 0.2 &
    pid=$!
    "$JS" attach -i 0.05 -o ev.jsonl $pid
    assert_eq $? 0 || return 1
    assert_eq "$(jq_py 'end["exit_type"], end["pid"]' ev.jsonl)" "[\"ended\", $pid]" || return 1
    assert_ge "$(jq_py 'end["utime"]+end["stime"]' ev.jsonl)" 0.25 || return 1
    assert_ge "$(jq_py 'max(s["procs"] for s in samples)' ev.jsonl)" 2
}

test_attach_to_a_missing_pid_is_an_error() {
    "$JS" attach 999999999 2> err.txt
    assert_eq $? 125 || return 1
    "$JS" attach 4000000 2> err.txt
    assert_eq $? 125
}

test_attach_stops_cleanly_on_sigint_without_touching_the_process() {
    "$W" sleep 5 &
    pid=$!
    "$JS" attach -i 0.05 -o ev.jsonl $pid &
    js=$!
    sleep 0.3
    kill -INT $js
    wait $js
    assert_eq $? 130 || return 1
    kill -0 $pid || fail "the watched process was harmed" || return 1
    kill $pid
    assert_eq "$(jq_py 'end["exit_type"]' ev.jsonl)" detached
}

test_ctrl_c_in_a_terminal_reaches_the_job_once_and_a_summary_is_printed() {
    need tmux || return $?
    W=$HELPERS/workload
    s=js$$
    tmux new-session -d -s $s -x 200 -y 50 "cd $T && '$JS' run -o ev.jsonl -- '$W' catch got.txt; echo rc=\$? > rc.txt; sleep 5"
    sleep 0.5
    tmux send-keys -t $s C-c
    for i in $(seq 50); do [ -s rc.txt ] && break; sleep 0.1; done
    sleep 0.2
    screen=$(tmux capture-pane -p -t $s)
    tmux kill-session -t $s
    assert_eq "$(cat got.txt)" "2 1" "SIGINT delivered exactly once" || return 1
    assert_eq "$(cat rc.txt)" "rc=102" || return 1
    assert_match "$screen" "jobscope: job exited with status 102 after" || return 1
    assert_match "$screen" "events in ev.jsonl|CPU" 
}
