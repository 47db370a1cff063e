# 51_metrics_levels.sh — telemetry levels (--telemetry-level,
# JOBSCOPE_TELEMETRY_LEVEL, 0 = off) and nested runs (docs/metrics.md).

levels_job() {
    cat >job.sh <<SHJOB
for l in 1 2 3 4; do "$JS" emit lvl.\$l \$l --level \$l; done
PYTHONPATH="$ROOT/python" python3 -c '
import jobscope
for l in (1, 2, 3, 4): jobscope.metric("py.%d" % l, l, _level=l)'
"$HELPERS/js_load" 0 0 0 >/dev/null
SHJOB
}

names() { jq_py 'sorted(e["name"] for e in ev if e["event"]=="jobscope.metric" and e["name"]!="load.start")' ev.jsonl; }

test_default_level_is_1() {
    levels_job
    env -u JOBSCOPE_TELEMETRY_LEVEL "$JS" run -q -o ev.jsonl -- sh job.sh || return 1
    assert_eq "$(names)" '["lvl.1", "py.1"]' || return 1
    assert_eq "$(jq_py 'end["metrics"]["telemetry_level"]' ev.jsonl)" 1 || return 1
}

test_option_level_3() {
    levels_job
    "$JS" run -q -o ev.jsonl --telemetry-level 3 -- sh job.sh || return 1
    assert_eq "$(names)" '["lvl.1", "lvl.2", "lvl.3", "py.1", "py.2", "py.3"]' || return 1
    # dropped at the source: the monitor never saw the level-4 ones
    assert_eq "$(jq_py 'end["metrics"]["dropped"]["above_level"]' ev.jsonl)" 0 || return 1
}

test_env_level_and_bad_values() {
    levels_job
    JOBSCOPE_TELEMETRY_LEVEL=2 "$JS" run -q -o ev.jsonl -- sh job.sh || return 1
    assert_eq "$(names)" '["lvl.1", "lvl.2", "py.1", "py.2"]' || return 1
    # a bad value in the environment warns and never fails the job (issue 14.1)
    JOBSCOPE_TELEMETRY_LEVEL=x "$JS" run -o ev2.jsonl -- true 2>err.txt
    assert_eq $? 0 || return 1
    assert_eq "$(grep -c "ignoring JOBSCOPE_TELEMETRY_LEVEL='x'" err.txt)" 1 || return 1
    "$JS" run -q --telemetry-level 256 -o ev2.jsonl -- true 2>/dev/null
    assert_eq $? 125 || return 1
}

test_level_0_turns_metrics_off_and_leaves_env_alone() {
    env -u JOBSCOPE_SOCKET -u JOBSCOPE_TELEMETRY_LEVEL -u JOBSCOPE_SERVE_SOCKET -u JOBSCOPE_BPF_PIN_DIR \
        "$JS" run -q --no-serve -o ev.jsonl --telemetry-level 0 -- \
        sh -c 'env | grep ^JOBSCOPE_; "$0" emit x 1; exit 0' "$JS" >out.txt || return 1
    assert_eq "$(cat out.txt)" "" "no JOBSCOPE_ variable in the job" || return 1
    assert_eq "$(jq_py 'len([e for e in ev if e["event"]=="jobscope.metric"])' ev.jsonl)" 0 || return 1
    # and with metrics on, exactly our two variables are added
    env -u JOBSCOPE_SOCKET -u JOBSCOPE_TELEMETRY_LEVEL "$JS" run -q -o ev.jsonl -- env >on.txt || return 1
    env -u JOBSCOPE_SOCKET -u JOBSCOPE_TELEMETRY_LEVEL env >off.txt
    assert_eq "$(grep -v '^_=' on.txt | sort | diff - <(grep -v '^_=' off.txt | sort) | grep '^[<>]' | sed 's/=.*//')" \
        "$(printf '< JOBSCOPE_SOCKET\n< JOBSCOPE_TELEMETRY_LEVEL')" || return 1
    # the socket lives in a private directory, removed at the end
    dir=$(dirname "$(grep ^JOBSCOPE_SOCKET= on.txt | cut -d= -f2)")
    [ ! -e "$dir" ] || fail "socket directory $dir left behind" || return 1
}

test_socket_directory_is_private() {
    "$JS" run -q -o ev.jsonl -- sh -c 'stat -c %a "$(dirname "$JOBSCOPE_SOCKET")"' >out.txt || return 1
    assert_eq "$(cat out.txt)" 700 || return 1
}

test_nested_runs_report_to_their_own_listener() {
    cat >inner.sh <<SHJOB
"$JS" emit inner.value 2
SHJOB
    cat >outer.sh <<SHJOB
"$JS" emit outer.value 1
"$JS" run -q -o inner.jsonl -- sh inner.sh
"$JS" emit outer.after 3
SHJOB
    "$JS" run -q -o outer.jsonl -- sh outer.sh || return 1
    assert_eq "$(jq_py '[e["name"] for e in ev if e["event"]=="jobscope.metric"]' outer.jsonl)" '["outer.value", "outer.after"]' || return 1
    assert_eq "$(jq_py '[e["name"] for e in ev if e["event"]=="jobscope.metric"]' inner.jsonl)" '["inner.value"]' || return 1
}

test_attach_has_no_listener() {
    sleep 0.5 & pid=$!
    "$JS" attach -q -o ev.jsonl "$pid" || return 1
    assert_eq "$(jq_py '"metrics" in end' ev.jsonl)" false || return 1
}
