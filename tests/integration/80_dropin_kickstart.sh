# 80_dropin_kickstart.sh — jobscope as a drop-in for pegasus-kickstart and
# pegasus-monitor (issue 14, docs/kickstart.md): kickstart's flags,
# environment and field types, its front ends, and what a Pegasus site
# expects of the end of a job.
W=$HELPERS/workload
source "$ROOT/tests/helpers/publish_servers.sh"

# 14.1: for kickstart 0 means "monitoring off", and site profiles set it
test_m_0_runs_the_job_with_only_start_and_end_events() {
    "$JS" run -m 0 -o ev.jsonl -- sh -c 'echo ran > out.txt; sleep 0.3'
    assert_eq $? 0 || return 1
    assert_eq "$(cat out.txt)" ran "the job ran" || return 1
    assert_eq "$(jq_py '[e["event"] for e in ev]' ev.jsonl)" '["jobscope.start", "jobscope.end"]' || return 1
    assert_ge "$(jq_py 'end["duration"]' ev.jsonl)" 0.3
}

test_kickstart_mon_interval_0_turns_online_samples_off() {
    KICKSTART_MON_INTERVAL=0 "$JS" run -o ev.jsonl -- true
    assert_eq $? 0 || return 1
    assert_eq "$(jq_py 'len(samples)' ev.jsonl)" 0
}

test_a_bad_environment_value_warns_once_and_never_fails_the_job() {
    KICKSTART_MON_INTERVAL=soon JOBSCOPE_TELEMETRY_LEVEL=high "$JS" run -o ev.jsonl -- sh -c 'exit 3' 2>err.txt
    assert_eq $? 3 "the job's own status" || return 1
    assert_eq "$(grep -c KICKSTART_MON_INTERVAL err.txt)" 1 "one warning: $(cat err.txt)" || return 1
    assert_eq "$(grep -c JOBSCOPE_TELEMETRY_LEVEL err.txt)" 1 || return 1
    assert_ge "$(jq_py 'len(samples)' ev.jsonl)" 2 || return 1
    # a bad command-line option is still jobscope's own error
    "$JS" run -m soon -- true 2>/dev/null
    assert_eq $? 125
}

# 14.2: kickstart's types: "" for an unset annotation, iowait a number
test_missing_annotations_are_empty_strings_and_iowait_a_number() {
    env -u PEGASUS_SITE -u PEGASUS_WF_UUID -u PEGASUS_WF_LABEL -u PEGASUS_DAG_JOB_ID -u CONDOR_JOBID \
        -u PEGASUS_XFORMATION -u PEGASUS_TASK_ID "$JS" run -i 0.1 -o ev.jsonl -- sleep 0.2 || return 1
    assert_eq "$(jq_py 'sorted(set(str(s[k]) for s in samples for k in ("site","wf_uuid","wf_label","dag_job_id","condor_job_id","xformation","task_id")))' ev.jsonl)" '[""]' || return 1
    assert_eq "$(jq_py 'sorted(set(type(s["iowait"]).__name__ for s in samples))' ev.jsonl)" '["float"]' || return 1
    env -u PEGASUS_SITE "$JS" run --null-missing -i 0.1 -o ev2.jsonl -- true || return 1
    assert_eq "$(jq_py 'samples[0]["site"]' ev2.jsonl)" null "--null-missing keeps null"
}

# 14.3: a shell script's last command execs: samples name what runs now
test_exe_follows_the_main_process_when_it_execs() {
    "$JS" run -i 0.05 -o ev.jsonl -- sh -c 'sleep 0.3; exec sleep 0.4' || return 1
    assert_match "$(jq_py 'samples[0]["exe"]' ev.jsonl)" '/(da|ba)?sh$' || return 1
    assert_match "$(jq_py 'samples[-2]["exe"]' ev.jsonl)" '/sleep$' || return 1
    assert_match "$(jq_py 'end["exe"]' ev.jsonl)" '/sleep$'
}

# 14.4: a Pegasus site points its gridstart at jobscope (issue 21: kickstart
# whole, tests/integration/84-87_kickstart_*.sh)
test_kickstart_front_end_takes_kickstarts_flags() {
    echo input > in.txt
    KICKSTART_MON_URL=file://$T/ev.jsonl PEGASUS_SITE=mysite "$JS" kickstart -n xform -N deriv \
        -R resource -L wflabel -T 2020-01-01T00:00:00Z -m 1 -i in.txt -o out.txt -e err.txt \
        -l record.yml -w "$T" -B 1024 -H -f -- sh -c 'cat; echo to-stderr >&2; exit 7'
    assert_eq $? 7 "the job's status" || return 1
    assert_eq "$(cat out.txt)" input "stdin from -i, stdout to -o" || return 1
    assert_eq "$(cat err.txt)" to-stderr || return 1
    # kickstart's events: site from PEGASUS_SITE, task_id from -N (issue 21.5)
    assert_eq "$(jq_py 'sorted(set((e["xformation"], e["site"], e["wf_label"], e["task_id"]) for e in ev))' ev.jsonl)" \
        '[["xform", "mysite", "wflabel", "deriv"]]' || return 1
    assert_ge "$(jq_py 'len(samples)' ev.jsonl)" 2 || return 1
    # -l: the invocation record, -R its resource
    assert_eq "$(python3 "$ROOT/tests/helpers/ks_record.py" '[rec["resource"], rec["mainjob"]["status"]["regular_exitcode"], rec["wf-stamp"]]' record.yml)" \
        '["resource", 7, "2020-01-01T00:00:00Z"]' || return 1
    # no -m: kickstart did not monitor online; no URL: no file left behind
    mkdir quiet && cd quiet
    env -u KICKSTART_MON_URL -u KICKSTART_MON_INTERVAL "$JS" kickstart -n x true >/dev/null || return 1
    assert_eq "$(ls | wc -l)" 0 "files left in the job's directory"
}

test_a_link_named_pegasus_kickstart_is_the_kickstart_front_end() {
    ln -s "$JS" pegasus-kickstart
    ln -s "$JS" pegasus-kickstart-cpu
    KICKSTART_MON_URL=file://$T/ev.jsonl ./pegasus-kickstart -n tr -m 1 /bin/true >rec.yml || return 1
    assert_eq "$(jq_py 'sorted(set(e["xformation"] for e in ev))' ev.jsonl)" '["tr"]' || return 1
    assert_eq "$(python3 "$ROOT/tests/helpers/ks_record.py" 'rec["transformation"]' rec.yml)" tr || return 1
    # kickstart: an unknown option letter is the application (not found: 127)
    ./pegasus-kickstart-cpu -Y true >rec2.yml 2>/dev/null
    assert_eq $? 127 "an unknown kickstart option" || return 1
    assert_eq "$(python3 "$ROOT/tests/helpers/ks_record.py" 'rec["mainjob"]["status"]["raw"]' rec2.yml)" -127
}

test_monitor_front_end_wraps_like_pegasus_monitor_and_reads_payloads() {
    ln -s "$JS" pegasus-monitor
    printf '@@@MONITORING_PAYLOAD - START@@@\n{"monitoring_event":"darshan.perf","payload":[{"k":1}]}\n@@@MONITORING_PAYLOAD - END@@@\n' > blk.txt
    KICKSTART_MON_URL=file://$T/ev.jsonl ./pegasus-monitor -i 1 cat blk.txt > out.txt || return 1
    assert_eq "$(jq_py '[e["k"] for e in ev if e["event"]=="darshan.perf"]' ev.jsonl)" '[1]' || return 1
    assert_ge "$(jq_py 'len(samples)' ev.jsonl)" 2 || return 1
    KICKSTART_MON_URL=file://$T/ev2.jsonl "$JS" monitor -i 0.1 -o "$T/ev3.jsonl" -- true || return 1
    assert_file ev3.jsonl "run's options pass through"
}

# 14.13: a dead destination must not delay the end of every job nor spin
test_a_never_reachable_destination_neither_delays_the_end_nor_burns_cpu() {
    local port; port=$(free_port)
    for url in "amqp://127.0.0.1:$port/v/ex" "nosuch://127.0.0.1:$port/x"; do
        rm -rf sp
        s=$(date +%s.%N)
        bash -c 'TIMEFORMAT="%U %S"; time "$@" 2>err.txt' _ "$JS" run --spool-dir sp --flush-timeout 3 -o "$url" -- true 2> cpu.txt
        e=$(date +%s.%N)
        assert_eq "$(ls sp/*.spool | wc -l)" 1 "$url: spooled" || return 1
        assert_le "$(awk -v s="$s" -v e="$e" 'BEGIN{print e-s}')" 1.5 "$url: wall seconds for a job of none" || return 1
        assert_le "$(awk '{print $1+$2}' cpu.txt)" 0.3 "$url: CPU seconds of jobscope" || return 1
    done
}

# 14.15: -q means quiet, for the limit message and spool warnings too
test_quiet_silences_limit_and_spool_warnings() {
    "$JS" run -q --limit wall=1 --kill-grace 1 --spool-dir sp -o "nosuch://127.0.0.1:9/x" -o ev.jsonl -- sleep 10 2>err.txt
    assert_eq $? 143 "stopped by the limit (SIGTERM)" || return 1
    assert_eq "$(cat err.txt)" "" "stderr under -q" || return 1
    assert_eq "$(jq_py 'end["exit_type"]' ev.jsonl)" limit
}

# 14.15: the README says precisely what jobscope adds to the job's environment
test_the_job_environment_differs_only_by_the_documented_variables() {
    env | sort > before.txt
    "$JS" run -q -o /dev/null -- sh -c 'env | sort' > after.txt || return 1
    diff before.txt after.txt | grep '^>' | cut -d= -f1 | sed 's/^> //' | sort > added.txt
    assert_eq "$(grep -c . added.txt)" "$(grep -cE '^(JOBSCOPE_SOCKET|JOBSCOPE_TELEMETRY_LEVEL|_|OLDPWD|PWD|SHLVL)$' added.txt)" \
        "unexpected variables: $(cat added.txt | tr '\n' ' ')" || return 1
    for v in $(grep JOBSCOPE added.txt); do
        grep -q "\`$v\`" "$ROOT/README.md" || fail "README does not name $v" || return 1
    done
}
