# --limit: memory, wall, cpu, procs (a small, bounded fork bomb),
# disk-write; each kills the whole tree, daemonized grandchildren that
# ignore SIGTERM included; --measure-only only reports; bad syntax is 125
# before the job starts.  With a cgroup (root) and without (--no-cgroup).
H=$HELPERS/cghog

need_root_cgroup() {
    [ "$(id -u)" = 0 ] || { echo "    skip: not root" >&2; return 77; }
    grep -q ' - cgroup2\? ' /proc/self/mountinfo || { echo "    skip: no cgroup fs" >&2; return 77; }
}

# killed_by_limit EVENTS LIMIT: the record and the limit event agree
killed_by_limit() {
    assert_eq "$(jq_py 'end["exit_type"]' "$1")" limit "exit_type" || return 1
    assert_eq "$(jq_py '"'"$2"'" in end["limits_exceeded"]' "$1")" true "limits_exceeded" || return 1
    assert_eq "$(jq_py '[(e["limit"], e["action"]) for e in ev if e["event"]=="jobscope.limit"][:1]' "$1")" \
              "[[\"$2\", \"kill\"]]" "jobscope.limit event" || return 1
    # the event names the value and the time
    assert_eq "$(jq_py 'all(k in e for e in ev if e["event"]=="jobscope.limit" for k in ("value","max","ts","elapsed"))' "$1")" true
}

# no process of this test may survive
no_survivor() {
    sleep 0.2
    if [ -s "$T/dpid" ] && kill -0 "$(cat "$T/dpid")" 2>/dev/null; then
        grep -q '^State:.*Z' /proc/"$(cat "$T/dpid")"/status 2>/dev/null || { fail "daemon $(cat "$T/dpid") survived"; return 1; }
    fi
    left=$(pgrep -f "$1" | wc -l)
    assert_eq "$left" 0 "processes left matching '$1'"
}

test_limit_memory_cgroup() {
    need_root_cgroup || return
    "$JS" run -q -i 0.2 --kill-grace 1 --limit memory=64M -o ev.jsonl -- "$H" mem 400 8 20 5
    rc=$?
    [ $rc = 137 ] || [ $rc = 143 ] || { fail "status $rc, expected a kill"; return 1; }
    killed_by_limit ev.jsonl memory || return 1
    if [ "$(jq_py 'end.get("cgroup", {}).get("created", False)' ev.jsonl)" = true ]; then
        # enforced by the kernel: the job never got past the limit
        assert_le "$(jq_py 'end["cgroup"]["memory_peak"]' ev.jsonl)" $((64 << 20)) "peak" || return 1
        assert_ge "$(jq_py 'end["cgroup"]["oom_kill"]' ev.jsonl)" 1 "oom_kill" || return 1
    fi
    assert_le "$(jq_py 'end["duration"]' ev.jsonl)" 5 "duration"
}

test_limit_memory_without_cgroup() {
    "$JS" run -q --no-cgroup -i 0.1 --kill-grace 1 --limit memory=64M -o ev.jsonl -- "$H" mem 200 8 50 5
    assert_eq $? 143 "status" || return 1
    killed_by_limit ev.jsonl memory || return 1
    v=$(jq_py '[e["value"] for e in ev if e["event"]=="jobscope.limit"][0]' ev.jsonl)
    assert_ge "$v" $((64 << 20)) || return 1
    assert_le "$v" $((120 << 20))
}

test_limit_wall_kills_daemonized_grandchild() {
    "$JS" run -q -i 0.1 --kill-grace 1 --limit wall=1s -o ev.jsonl -- "$H" daemon "$T/dpid" 20
    assert_eq $? 143 "status" || return 1
    killed_by_limit ev.jsonl wall || return 1
    [ -s "$T/dpid" ] || { fail "no daemon started"; return 1; }
    d=$(jq_py 'end["duration"]' ev.jsonl)
    assert_ge "$d" 0.9 || return 1
    assert_le "$d" 4 || return 1
    no_survivor "cghog daemon $T/dpid"
}

test_limit_wall_kills_daemon_without_cgroup() {
    "$JS" run -q --no-cgroup -i 0.1 --kill-grace 0.5 --limit wall=0.8s -o ev.jsonl -- "$H" daemon "$T/dpid" 20
    assert_eq $? 143 "status" || return 1
    killed_by_limit ev.jsonl wall || return 1
    no_survivor "cghog daemon $T/dpid"
}

test_limit_cpu() {
    # two spinners: 0.5 CPU-seconds go by in well under a second of wall time
    "$JS" run -q -i 0.1 --kill-grace 1 --limit cpu=0.5 -o ev.jsonl -- sh -c "$H spin 8 & $H spin 8; wait"
    assert_eq $? 143 "status" || return 1
    killed_by_limit ev.jsonl cpu || return 1
    assert_le "$(jq_py 'end["cpu_time"]' ev.jsonl)" 2 "CPU used" || return 1
    no_survivor "cghog spin 8"
}

test_limit_procs_contains_fork_bomb() {
    need_root_cgroup || return
    # at most 300 processes in all, each sleeps 10 s: bounded even if unchecked
    "$JS" run -q -i 0.2 --kill-grace 1 --limit procs=20 -o ev.jsonl -- "$H" forkbomb 300 10
    assert_eq $? 143 "status" || return 1
    killed_by_limit ev.jsonl procs || return 1
    if [ "$(jq_py 'end.get("cgroup", {}).get("created", False)' ev.jsonl)" = true ]; then
        assert_le "$(jq_py 'end["cgroup"]["pids_peak"]' ev.jsonl)" 20 "pids peak" || return 1
        assert_eq "$(jq_py 'end["cgroup"]["removed"]' ev.jsonl)" true || return 1
    fi
    assert_le "$(jq_py 'end["duration"]' ev.jsonl)" 5 || return 1
    no_survivor "cghog forkbomb 300"
}

test_limit_procs_without_cgroup() {
    "$JS" run -q --no-cgroup -i 0.1 --kill-grace 1 --limit procs=10 -o ev.jsonl -- "$H" forkbomb 40 10
    assert_eq $? 143 "status" || return 1
    killed_by_limit ev.jsonl procs || return 1
    no_survivor "cghog forkbomb 40"
}

# Without a cgroup, processes forked after the SIGTERM were in no pass over
# the tree; they come back to jobscope (a subreaper), and the watch goes on
# until they are gone: here a spawner that ignores SIGTERM forks a process
# every 0.1 s through the grace (before, the ten forked in the grace were
# left running when the main process was gone)
test_limit_stops_processes_forked_after_the_sigterm_without_cgroup() {
    "$JS" run -q --no-cgroup -i 0.1 --kill-grace 1 --limit wall=0.5s -o ev.jsonl -- \
        sh -c '(trap "" TERM; while :; do sh -c "sleep 30; :" "$0" & sleep 0.1; done) & sleep 30' "spawned-$T"
    assert_eq $? 143 "status" || return 1
    killed_by_limit ev.jsonl wall || return 1
    no_survivor "spawned-$T"
}

test_limit_disk_write() {
    "$JS" run -q -i 0.1 --kill-grace 1 --limit disk-write=10M -o ev.jsonl -- sh -c "$H cache 50 $T/f; sleep 5"
    assert_eq $? 143 "status" || return 1
    killed_by_limit ev.jsonl disk-write || return 1
    assert_le "$(jq_py 'end["duration"]' ev.jsonl)" 4
}

test_measure_only_reports_and_does_not_kill() {
    "$JS" run -q -i 0.1 --measure-only --limit wall=0.3s,procs=100 -o ev.jsonl -- sleep 0.8
    assert_eq $? 0 "status" || return 1
    assert_eq "$(jq_py 'end["exit_type"], end["limits_exceeded"]' ev.jsonl)" '["exited", ["wall"]]' || return 1
    assert_eq "$(jq_py '[(e["limit"], e["action"]) for e in ev if e["event"]=="jobscope.limit"]' ev.jsonl)" \
              '[["wall", "report"]]' || return 1
    # and the kernel was not asked to enforce anything
    assert_eq "$(jq_py 'end["limits"]["enforced_by_kernel"]' ev.jsonl)" '[]'
}

test_limits_not_exceeded() {
    "$JS" run -q -i 0.1 --limit memory=1G --limit wall=1h,cpu=10m,procs=50,disk-write=1G -o ev.jsonl -- sh -c 'sleep 0.3'
    assert_eq $? 0 || return 1
    assert_eq "$(jq_py 'end["exit_type"], end["limits_exceeded"], len([e for e in ev if e["event"]=="jobscope.limit"])' ev.jsonl)" \
              '["exited", [], 0]'
}

test_bad_limit_is_125_before_the_job_starts() {
    for spec in memory=4Q mem=1G wall=2w procs=0 "cpu=" memory "rss=1G,,wall=1h"; do
        "$JS" run -q --limit "$spec" -o ev.jsonl -- touch started 2> err.txt
        assert_eq $? 125 "status for '$spec'" || return 1
        [ ! -e started ] || { fail "job started for '$spec'"; return 1; }
        assert_eq "$(wc -l < err.txt)" 1 "one line for '$spec'" || return 1
        assert_match "$(cat err.txt)" '^jobscope: --limit: ' || return 1
    done
    "$JS" run -q --kill-grace abc -- true 2> err.txt
    assert_eq $? 125 "--kill-grace abc"
}
