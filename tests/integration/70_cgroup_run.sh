# cgroups on the machine's real hierarchy: the job in a cgroup of its own
# (v1 here, v2 through the unified mount), its page cache and exact peak,
# removal at the end, attach --cgroup auto, the process connector.
# Needs root and a cgroup fs; skips (77) otherwise.
H=$HELPERS/cghog

need_root_cgroup() {
    [ "$(id -u)" = 0 ] || { echo "    skip: not root" >&2; return 77; }
    grep -q ' - cgroup2\? ' /proc/self/mountinfo || { echo "    skip: no cgroup fs" >&2; return 77; }
}

# the record must show a cgroup jobscope made; else this machine cannot
need_cgroup_record() {
    [ "$(jq_py 'bool(end and end.get("cgroup", {}).get("created"))' "$1")" = true ] \
        || { echo "    skip: no cgroup could be made here" >&2; return 77; }
}

test_cgroup_job_page_cache_and_exact_peak() {
    need_root_cgroup || return
    # 40 MB of page cache (the file stays), then 60 MB of anonymous memory
    "$JS" run -q --cgroup -i 0.1 -o ev.jsonl -- sh -c "$H cache 40 $T/f && $H mem 60 10 10 0.5"
    assert_eq $? 0 || return 1
    need_cgroup_record ev.jsonl || return
    # the samples carry the cgroup figures beside the /proc ones
    assert_eq "$(jq_py 'all("cg_memory_current" in s and "cg_cpu_usage" in s and "rss" in s for s in samples)' ev.jsonl)" true || return 1
    # page cache charged to the job: seen in a sample while the job ran
    assert_ge "$(jq_py 'max(s.get("cg_memory_file", 0) for s in samples)' ev.jsonl)" $((38 << 20)) "page cache" || return 1
    # exact peak: cache + anon at once, which no /proc RSS sum shows
    peak=$(jq_py 'end["cgroup"]["memory_peak"]' ev.jsonl)
    assert_ge "$peak" $((95 << 20)) "cgroup peak" || return 1
    assert_le "$peak" $((200 << 20)) "cgroup peak" || return 1
    rsspeak=$(jq_py 'end["peaks"]["rss"]["value"] * 1024' ev.jsonl)
    assert_ge "$peak" "$rsspeak" "cgroup peak vs RSS peak" || return 1
    assert_eq "$(jq_py 'end["cgroup"]["oom_kill"]' ev.jsonl)" 0 || return 1
    # the cgroup is gone, from every hierarchy
    assert_eq "$(jq_py 'end["cgroup"]["removed"]' ev.jsonl)" true || return 1
    name=$(basename "$(jq_py 'end["cgroup"]["path"]' ev.jsonl)")
    left=$(find /sys/fs/cgroup -maxdepth 6 -type d -name "$name" 2>/dev/null | head -3)
    assert_eq "$left" "" "cgroup directories left behind" || return 1
}

test_cgroup_cpu_matches_proc() {
    need_root_cgroup || return
    "$JS" run -q --cgroup -i 0.2 -o ev.jsonl -- "$H" spin 0.6
    need_cgroup_record ev.jsonl || return
    cg=$(jq_py 'end["cgroup"]["cpu_usage"]' ev.jsonl)
    pr=$(jq_py 'end["cpu_time"]' ev.jsonl)
    assert_ge "$cg" 0.4 "cgroup CPU" || return 1
    assert_close "$cg" "$pr" 0.15 "cgroup CPU vs /proc CPU" || return 1
}

test_cgroup_process_connector_counts_short_lived() {
    need_root_cgroup || return
    # 30 processes that live far less than one interval
    "$JS" run -q -i 2 -o ev.jsonl -- sh -c 'for i in $(seq 30); do /bin/true; done'
    assert_eq $? 0 || return 1
    has=$(jq_py '"total_processes" in end' ev.jsonl)
    [ "$has" = true ] || { echo "    skip: no process connector here" >&2; return 77; }
    # sh, seq and the 30 /bin/true (+1 subshell for $(...) in some shells)
    tp=$(jq_py 'end["total_processes"]' ev.jsonl)
    assert_ge "$tp" 32 "total_processes" || return 1
    assert_le "$tp" 34 "total_processes" || return 1
}

# The default (docs/cgroups.md): a cgroup of its own only where it costs the
# job nothing, i.e. jobscope already sits in a charged (non-root) memory
# cgroup, as under a scheduler or a systemd scope; in the root memory cgroup
# the kernel skips charging, and a new cgroup would add it to the job.
memcg_root() {   # the memory controller's root directory (v1 memory, or v2 with memory)
    local v1 v2
    v1=$(awk '$9=="cgroup" && $NF ~ /(^|,)memory(,|$)/ {print $5; exit}' /proc/self/mountinfo)
    if [ -n "$v1" ]; then echo "$v1"; return; fi
    v2=$(awk '$9=="cgroup2"{print $5; exit}' /proc/self/mountinfo)
    [ -n "$v2" ] && grep -qw memory "$v2/cgroup.controllers" 2>/dev/null && echo "$v2"
}

test_default_makes_no_cgroup_in_the_root_memory_cgroup() {
    need_root_cgroup || return
    local m; m=$(memcg_root)
    [ -n "$m" ] || { echo "    skip: no memory controller" >&2; return 77; }
    [ -z "${JOBSCOPE_CGROUP_LAYOUT:-}" ] || return 77
    # a subshell moved to the root memory cgroup runs jobscope
    ( echo $BASHPID > "$m/cgroup.procs" && exec "$JS" run -q -i 0.1 -o ev.jsonl -- "$H" spin 0.2 ) || return 1
    assert_eq "$(jq_py '"cgroup" in end and end["cgroup"].get("created", False)' ev.jsonl)" false "cgroup made" || return 1
    # a --limit still gets one, so that the kernel can enforce it
    ( echo $BASHPID > "$m/cgroup.procs" && exec "$JS" run -q -i 0.1 --limit memory=1G -o lim.jsonl -- "$H" spin 0.2 ) || return 1
    need_cgroup_record lim.jsonl || return
    # and so does --cgroup
    ( echo $BASHPID > "$m/cgroup.procs" && exec "$JS" run -q --cgroup -i 0.1 -o on.jsonl -- "$H" spin 0.2 ) || return 1
    assert_eq "$(jq_py 'end["cgroup"]["created"]' on.jsonl)" true
}

test_default_makes_a_cgroup_below_a_charged_memory_cgroup() {
    need_root_cgroup || return
    local m; m=$(memcg_root)
    [ -n "$m" ] || { echo "    skip: no memory controller" >&2; return 77; }
    local d="$m/jobscope-test-$$"
    mkdir "$d" || return 1
    ( echo $BASHPID > "$d/cgroup.procs" && exec "$JS" run -q -i 0.1 -o ev.jsonl -- "$H" spin 0.2 )
    rc=$?
    echo $$ > "$m/cgroup.procs" 2>/dev/null
    rmdir "$d" 2>/dev/null
    assert_eq $rc 0 || return 1
    assert_eq "$(jq_py 'end["cgroup"]["created"]' ev.jsonl)" true "cgroup made" || return 1
    assert_match "$(jq_py 'end["cgroup"]["path"]' ev.jsonl)" "jobscope-test-$$/jobscope-"
}

test_no_cgroup_option() {
    need_root_cgroup || return
    "$JS" run -q --no-cgroup -i 0.1 -o ev.jsonl -- sleep 0.2
    assert_eq $? 0 || return 1
    assert_eq "$(jq_py 'any(k.startswith("cg_") for s in samples for k in s) or "cgroup" in end' ev.jsonl)" false
}

test_cgroup_attach_auto_watches_the_pids_cgroup() {
    need_root_cgroup || return
    "$H" spin 1.5 &
    pid=$!
    "$JS" attach -q -i 0.2 --cgroup auto -o ev.jsonl "$pid"
    rc=$?
    wait $pid
    assert_eq $rc 0 || return 1
    assert_eq "$(jq_py 'end["cgroup"]["created"]' ev.jsonl)" false || return 1
    want=$(awk -F: '$2=="memory"{print $3}' /proc/self/cgroup)
    [ -n "$want" ] || want=$(awk -F: '$1=="0"{print $3}' /proc/self/cgroup)
    got=$(jq_py 'end["cgroup"]["path"]' ev.jsonl)
    case $got in *"$want") ;; *) fail "cgroup path $got is not the pid's ($want)"; return 1;; esac
    assert_ge "$(jq_py 'len([s for s in samples if "cg_memory_current" in s])' ev.jsonl)" 3 || return 1
    # cpuacct: the pid's own cgroup there, but not the root of that hierarchy
    # (the whole machine's CPU, as on a v1 host where only memory is delegated)
    local cpuacct
    cpuacct=$(awk -F: '$2 ~ /(^|,)cpuacct(,|$)/ {print $3}' /proc/self/cgroup)
    if [ -n "$cpuacct" ] && [ "$cpuacct" = / ] && [ "$want" != / ]; then
        assert_eq "$(jq_py 'len([s for s in samples if "cg_cpu_usage" in s])' ev.jsonl)" 0 "the machine's CPU as the pid's" || return 1
    else
        assert_ge "$(jq_py 'len([s for s in samples if "cg_cpu_usage" in s])' ev.jsonl)" 3 || return 1
    fi
}

test_cgroup_attach_path() {
    need_root_cgroup || return
    "$H" sleep 0.6 &
    pid=$!
    path=$(awk -F: '$2=="memory"{print $3}' /proc/$pid/cgroup)
    [ -n "$path" ] || path=$(awk -F: '$1=="0"{print $3}' /proc/$pid/cgroup)
    "$JS" attach -q -i 0.2 --cgroup "$path" -o ev.jsonl "$pid"
    assert_eq $? 0 || return 1
    wait $pid
    assert_eq "$(jq_py 'end["cgroup"]["path"].endswith("'"$path"'")' ev.jsonl)" true
}

test_cgroup_v2_unified_hierarchy() {
    need_root_cgroup || return
    grep -q ' - cgroup2 ' /proc/self/mountinfo || { echo "    skip: no cgroup2 mount" >&2; return 77; }
    JOBSCOPE_CGROUP_LAYOUT=v2 "$JS" run -q --cgroup -i 0.2 -o ev.jsonl -- "$H" spin 0.5
    assert_eq $? 0 || return 1
    need_cgroup_record ev.jsonl || return
    assert_eq "$(jq_py 'end["cgroup"]["version"]' ev.jsonl)" 2 || return 1
    assert_ge "$(jq_py 'end["cgroup"]["cpu_usage"]' ev.jsonl)" 0.3 || return 1
    assert_eq "$(jq_py 'end["cgroup"]["removed"]' ev.jsonl)" true || return 1
    # PSI exists in every v2 cgroup when the kernel has it
    if [ -e /sys/fs/cgroup/unified/cpu.pressure ] || [ -e /sys/fs/cgroup/cpu.pressure ]; then
        assert_eq "$(jq_py '"cg_psi_cpu_some_total" in samples[-1]' ev.jsonl)" true || return 1
    fi
    d=$(jq_py 'end["cgroup"]["path"]' ev.jsonl)
    [ ! -e "$d" ] || fail "$d left behind"
}

test_cgroup_path_on_run_is_an_error() {
    "$JS" run -q --cgroup=/sys/fs/cgroup/x -o ev.jsonl -- touch started 2> err.txt
    assert_eq $? 125 || return 1
    [ ! -e started ] || fail "the job ran" || return 1
    assert_match "$(cat err.txt)" '^jobscope: .*attach'
}

# A still job (nothing of it ran, none of its memory moved: its cgroup says
# so in two small reads) is sampled without reading its tree again; what it
# does afterwards shows at once, and so does memory that leaves it while it
# sleeps (page cache dropped from outside: no task of the job runs for it).
test_a_still_job_is_sampled_cheaply_and_nothing_it_does_is_missed() {
    need_root_cgroup || return
    "$JS" run -q --cgroup -i 0.1 -o ev.jsonl -- sh -c "sleep 1; $H spin 0.4; sleep 1"
    assert_eq $? 0 || return 1
    need_cgroup_record ev.jsonl || return
    assert_ge "$(jq_py 'end.get("samples_still", 0)' ev.jsonl)" 5 "still samples" || return 1
    # the spin is seen while it runs and after it, the figures never go back
    assert_ge "$(jq_py 'max(s["cpu_percent"] for s in samples)' ev.jsonl)" 20 "busy sample" || return 1
    assert_ge "$(jq_py 'samples[-2]["utime"] + samples[-2]["stime"]' ev.jsonl)" 0.3 "CPU after the spin" || return 1
    assert_eq "$(jq_py 'all(b["utime"] >= a["utime"] and b["ts"] > a["ts"] for a, b in zip(samples, samples[1:]))' ev.jsonl)" true || return 1
    # still samples: no CPU rate, the figures of the sample before
    assert_eq "$(jq_py 'all(b["cpu_percent"] == 0 for a, b in zip(samples, samples[1:]) if a["utime"] == b["utime"] and a["stime"] == b["stime"] and a["cg_cpu_usage"] == b["cg_cpu_usage"])' ev.jsonl)" true || return 1
    # ... the same members in the same order (its line is the one before,
    # restamped), and every event numbered in turn
    assert_ge "$(jq_py 'sum(1 for a, b in zip(samples, samples[1:]) if list(a) == list(b) and all(a[k] == b[k] for k in a if k not in ("ts", "elapsed", "seq")))' ev.jsonl)" 5 "samples the same as the one before" || return 1
    assert_eq "$(jq_py '[e["seq"] for e in ev] == list(range(1, len(ev) + 1))' ev.jsonl)" true || return 1
}

# To a file, a still job's sample (the one before with its time put in)
# waits up to 1.9 flush intervals for the next write, a moving job's 0.9:
# a still job costs a write every other interval, and loses nothing.
test_a_still_jobs_samples_are_written_every_other_interval() {
    need_root_cgroup || return
    need strace || return
    for job in still moving; do
        if [ $job = still ]; then cmd="sleep 3"; else cmd="$H spin 3"; fi
        # (LeakSanitizer cannot run under ptrace: an ASan build's leak check is off here)
        ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
            strace -f -qq -e trace=write,writev -o $job.tr "$JS" run -q -i 0.25 --flush-interval 0.25 -o $job.jsonl -- $cmd
        assert_eq $? 0 || return 1
        need_cgroup_record $job.jsonl || return
        n=$(jq_py 'len(samples)' $job.jsonl)
        w=$(grep -c 'kickstart.inv.online' $job.tr)
        assert_ge "$n" 10 "$job: samples" || return 1
        assert_eq "$(jq_py '[e["seq"] for e in ev] == list(range(1, len(ev) + 1))' $job.jsonl)" true || return 1
        echo "$job: $n samples, $w writes"
        if [ $job = still ]; then
            assert_ge "$(jq_py 'end.get("samples_still", 0)' $job.jsonl)" 8 "still samples" || return 1
            assert_le "$((w * 10))" "$((n * 7))" "$job: writes of samples x10" || return 1
        else
            assert_ge "$((w * 10))" "$((n * 8))" "$job: writes of samples x10" || return 1
        fi
    done
}

test_memory_leaving_a_still_job_is_seen() {
    need_root_cgroup || return
    "$JS" run -q --cgroup -i 0.1 -o ev.jsonl -- sh -c "$H cache 30 $T/f; sleep 3" &
    pid=$!
    sleep 2.2
    sync; echo 1 > /proc/sys/vm/drop_caches
    wait $pid
    need_cgroup_record ev.jsonl || return
    assert_ge "$(jq_py 'end.get("samples_still", 0)' ev.jsonl)" 3 "still samples" || return 1
    hi=$(jq_py 'max(s["cg_memory_current"] for s in samples)' ev.jsonl)
    lo=$(jq_py 'samples[-2]["cg_memory_current"]' ev.jsonl)
    assert_ge "$hi" $((28 << 20)) "page cache while the job slept" || return 1
    assert_le "$lo" $((hi - (20 << 20))) "the dropped cache, seen by a sample before the end" || return 1
}
