# 86_kickstart_chain.sh — kickstart's job chain (KICKSTART_SETUP, _PREJOB,
# _POSTJOB, _CLEANUP), its quoting and variable rewriting, KICKSTART_WRAPPER,
# KICKSTART_PREPEND_PATH, KICKSTART_TMP, and what the job is told (issue
# 21.3, 21.4).

ks_py() { python3 "$ROOT/tests/helpers/ks_record.py" "$@"; }

test_the_chain_runs_in_order_with_kickstarts_quoting_and_each_job_is_recorded() {
    KICKSTART_SETUP='/bin/echo setup' KICKSTART_PREJOB="/bin/echo 'pre  job' \"tab\\there\"" \
        KICKSTART_POSTJOB='/bin/echo post $HOME' KICKSTART_CLEANUP='/bin/echo ${HOME}/c' \
        "$JS" kickstart /bin/echo main >rec.yml || return 1
    assert_eq "$(ks_py 'st[0]["stdout"]' rec.yml)" "$(printf 'setup\npre  job tab\there\nmain\npost %s\n%s/c' "$HOME" "$HOME")" || return 1
    assert_eq "$(ks_py '[k for k in rec if k in ("setup", "prejob", "mainjob", "postjob", "cleanup")]' rec.yml)" \
        '["setup", "prejob", "mainjob", "postjob", "cleanup"]' || return 1
    assert_eq "$(ks_py '[rec["prejob"]["argument_vector"], rec["postjob"]["status"]["raw"], rec["cleanup"]["executable"]["file_name"]]' rec.yml)" \
        "[[\"pre  job\", \"tab\\there\"], 0, \"$(realpath /bin/echo)\"]"
}

test_a_failed_prejob_skips_the_main_job_and_postjob_but_not_the_cleanup() {
    KICKSTART_PREJOB='/bin/sh -c "exit 4"' KICKSTART_POSTJOB='/bin/echo post' \
        KICKSTART_CLEANUP='/bin/echo clean' "$JS" kickstart /bin/echo main >rec.yml
    assert_eq $? 4 "the prejob's status" || return 1
    assert_eq "$(ks_py '[k for k in rec if k.endswith("job") or k in ("setup", "cleanup")] + [st[0]["stdout"]]' rec.yml)" \
        '["prejob", "cleanup", "clean\n"]' || return 1
    KICKSTART_POSTJOB='/bin/false' "$JS" kickstart /bin/true >rec.yml
    assert_eq $? 1 "the postjob's status" || return 1
    KICKSTART_SETUP='/bin/false' "$JS" kickstart /bin/echo main >rec.yml
    assert_eq $? 0 "a setup job does not count" || return 1
    KICKSTART_CLEANUP='/bin/false' "$JS" kickstart /bin/echo main >rec.yml
    assert_eq $? 0 "a cleanup job does not count"
}

test_a_side_job_that_cannot_run_is_recorded_as_a_failure() {
    KICKSTART_PREJOB='no-such-prejob arg' "$JS" kickstart /bin/echo main >rec.yml
    assert_eq $? 0 "kickstart runs the main job anyway" || return 1
    assert_eq "$(ks_py '[rec["prejob"]["status"], st[0]["stdout"]]' rec.yml)" \
        '[{"raw": -127, "failure_error": "2   No such file or directory"}, "main\n"]' || return 1
    KICKSTART_PREJOB='/bin/echo "unterminated' "$JS" kickstart /bin/echo main >rec.yml 2>err.txt
    assert_eq $? 1 "a command line that does not parse: kickstart's exit 1" || return 1
    grep -q 'Error 2: missing closing quote' err.txt || return 1
    assert_eq "$(ks_py '["mainjob" in rec, "environment" in rec]' rec.yml)" '[false, true]'
}

test_a_timeout_skips_the_stages_left_but_the_cleanup_runs() {
    KICKSTART_PREJOB='/bin/sleep 5' KICKSTART_CLEANUP='/bin/echo clean' \
        "$JS" kickstart -k 1 /bin/echo main >rec.yml 2>err.txt
    assert_eq $? 14 || return 1
    assert_eq "$(cat err.txt)" "Job timed out, sending SIGTERM" || return 1
    assert_eq "$(ks_py '["mainjob" in rec, rec["prejob"]["status"]["signalled_signal"], st[0]["stdout"]]' rec.yml)" \
        '[false, 15, "clean\n"]' || return 1
    KICKSTART_CLEANUP='/bin/sleep 2' "$JS" kickstart -k 1 /bin/echo main >rec.yml 2>err.txt
    assert_eq $? 0 "the cleanup is not timed" || return 1
    assert_eq "$(cat err.txt)" ""
}

test_main_arguments_are_rewritten_as_kickstart_does() {
    "$JS" kickstart /bin/echo '$HOME' "'\$HOME'" '"${HOME}x"' '\$HOME' 'a\b' >rec.yml || return 1
    assert_eq "$(ks_py 'rec["mainjob"]["argument_vector"]' rec.yml)" \
        "[\"$HOME\", \"'\$HOME'\", \"\\\"${HOME}x\\\"\", \"\$HOME\", \"ab\"]" || return 1
    "$JS" kickstart /bin/echo '$NO_SUCH_VARIABLE_X' >rec.yml 2>err.txt
    assert_eq $? 1 || return 1
    grep -q 'Variable \$NO_SUCH_VARIABLE_X does not exist' err.txt || return 1
    # Pegasus' own quoting test (PM-1680)
    "$JS" kickstart echo "'None'" '{"password": "xxxxx"}' >rec.yml || return 1
    assert_eq "$(ks_py 'st[0]["stdout"]' rec.yml)" "'None' {\"password\": \"xxxxx\"}"
}

test_wrapper_prepend_path_and_tmp() {
    printf '#!/bin/sh\necho "wrapped:$*"\nshift\nexec "$@"\n' > wrap.sh && chmod +x wrap.sh
    KICKSTART_WRAPPER="$T/wrap.sh --flag" "$JS" kickstart /bin/echo x >rec.yml || return 1
    assert_eq "$(ks_py '[st[0]["stdout"], st[0]["name"], rec["mainjob"]["argument_vector"]]' rec.yml)" \
        "[\"wrapped:--flag /bin/echo x\\nx\\n\", \"$T/wrap.sh\", [\"--flag\", \"/bin/echo\", \"x\"]]" || return 1
    mkdir bin && printf '#!/bin/sh\necho "PATH=$PATH"\n' > bin/mytool && chmod +x bin/mytool
    PATH=/usr/bin:/bin KICKSTART_PREPEND_PATH="$T/bin" "$JS" kickstart mytool >rec.yml || return 1
    assert_eq "$(ks_py 'st[0]["stdout"]' rec.yml)" "PATH=$T/bin:/usr/bin:/bin" || return 1
    mkdir tmp
    printf '#!/bin/sh\nls "$(dirname "$KICKSTART_METADATA")"\n' > lstmp.sh && chmod +x lstmp.sh
    KICKSTART_TMP="$T/tmp" "$JS" kickstart ./lstmp.sh >rec.yml || return 1
    assert_match "$(ks_py 'rec["files"]["stdout"]["temporary_name"]' rec.yml)" "^$T/tmp/ks.out." || return 1
    assert_eq "$(ks_py 'sorted(f.rsplit(".", 1)[0] for f in st[0]["stdout"].split())' rec.yml)" \
        '["ks.err", "ks.integrity", "ks.meta", "ks.out"]' || return 1
    assert_eq "$(ls tmp)" "" "temporary files removed"
}

test_the_job_sees_what_kickstart_exports_and_nothing_of_jobscope() {
    env | cut -d= -f1 | LC_ALL=C sort > before.txt
    env -u KICKSTART_MON_URL -u KICKSTART_MON_INTERVAL "$JS" kickstart -n tr -N dv -L lbl -R site \
        /bin/sh -c 'env | cut -d= -f1 | sort' >rec.yml || return 1
    ks_py 'st[0]["stdout"]' rec.yml | grep . | LC_ALL=C sort | LC_ALL=C comm -13 before.txt - | tr '\n' ' ' > added.txt
    assert_eq "$(cat added.txt)" "KICKSTART_INTEGRITY_DATA KICKSTART_METADATA PEGASUS_TASK_ID PEGASUS_WF_LABEL PEGASUS_XFORMATION " || return 1
    # (a script: kickstart would rewrite $NAME in its arguments itself)
    printf '#!/bin/sh\necho $KICKSTART_MON_INTERVAL $KICKSTART_MON_URL $PEGASUS_TASK_ID\n' > show.sh
    chmod +x show.sh
    "$JS" kickstart -N dv -m 1 ./show.sh >rec.yml 2>/dev/null || return 1
    assert_match "$(ks_py 'st[0]["stdout"]' rec.yml)" '^1 kickstart://[^:]+:[0-9]+ dv$'
}
