# 85_kickstart_options.sh — every option of pegasus-kickstart's man page, its
# exit statuses and messages (issue 21.2; issue 27.13 for --help).

ks_py() { python3 "$ROOT/tests/helpers/ks_record.py" "$@"; }

test_bad_or_missing_values_exit_127_with_kickstarts_message_and_a_record() {
    for a in i o e l n N R B L T I w W s S k K m; do
        "$JS" kickstart -$a >rec-$a.yml 2>err.txt
        assert_eq $? 127 "-$a without a value" || return 1
        assert_eq "$(cat err.txt)" "ERROR: -$a argument missing" || return 1
    done
    n=0
    for bad in "-B foo" "-B 0" "-k x" "-K 0" "-m 3601" "-m -1"; do
        n=$((n + 1))
        "$JS" kickstart $bad /bin/true >bad-$n.yml 2>err.txt
        assert_eq $? 127 "$bad" || return 1
        assert_match "$(cat err.txt)" "^ERROR: Invalid -${bad:1:1} argument" || return 1
    done
    # one valid record each, without a main job, with the environment (a failure)
    assert_eq "$(ks_py '[len(recs), sum("mainjob" in r for r in recs), sum("environment" in r for r in recs)]' rec-*.yml bad-*.yml)" \
        '[24, 0, 24]' || return 1
    "$JS" kickstart -B0x10 -k 0 -K 1 -m 0 /bin/true >rec.yml
}

test_help_prints_the_usage_and_exits_as_kickstart_and_monitor_do() {
    for args in "--help" "-h" ""; do
        "$JS" kickstart $args >out.txt 2>err.txt
        assert_eq $? 127 "kickstart $args" || return 1
        assert_eq "$(cat out.txt)" "" "no record for help" || return 1
        assert_match "$(head -1 err.txt)" '^Usage:' || return 1
        grep -q -- '-k S' err.txt || return 1
    done
    "$JS" kickstart -V >out.txt || return 1
    assert_match "$(cat out.txt)" '^jobscope ' || return 1
    ln -s "$JS" pegasus-monitor
    for m in "$JS monitor" ./pegasus-monitor; do
        $m --help >out.txt 2>err.txt
        assert_eq $? 1 "$m --help, as pegasus-monitor" || return 1
        assert_match "$(head -1 err.txt)" '^usage: jobscope monitor' || return 1
    done
}

test_an_unknown_option_letter_is_the_application_and_dashdash_ends_options() {
    "$JS" kickstart -Y /bin/true >rec.yml 2>/dev/null
    assert_eq $? 127 || return 1
    assert_eq "$(ks_py '[st[0]["name"], st[0]["raw"]]' rec.yml)" '["-Y", -127]' || return 1
    "$JS" kickstart -- /bin/echo -n x >rec.yml || return 1
    assert_eq "$(ks_py 'rec["mainjob"]["argument_vector"]' rec.yml)" '["-n", "x"]'
}

test_I_reads_the_command_one_argument_per_line_and_nothing_may_follow() {
    printf '/bin/echo\nhello world\n\n$HOME\n' > args.txt
    "$JS" kickstart -I args.txt >rec.yml || return 1
    assert_eq "$(ks_py 'st[0]["stdout"]' rec.yml)" "hello world $HOME" || return 1
    "$JS" kickstart -I args.txt -B 2 >rec.yml 2>err.txt
    assert_eq $? 127 || return 1
    assert_eq "$(cat err.txt)" "ERROR: No arguments allowed after -I fn" || return 1
    "$JS" kickstart -I nosuch.txt >rec.yml 2>err.txt
    assert_eq $? 127 || return 1
    grep -q 'While parsing -I nosuch.txt: 2' err.txt || return 1
    # kickstart's limit: an argument of more than 128 KiB after rewriting
    python3 -c 'print("/bin/echo"); print("c" * 131073)' > long.txt
    "$JS" kickstart -I long.txt >rec.yml 2>err.txt
    assert_eq $? 1 || return 1
    grep -q 'Argument too long' err.txt || return 1
    ks_py 'rec["invocation"]' rec.yml >/dev/null
}

test_stdio_goes_where_i_o_e_say_with_append_and_preserve() {
    echo IN > in.txt
    "$JS" kickstart -i in.txt -o o.txt -e e.txt /bin/sh -c 'cat; echo E >&2' >rec.yml || return 1
    assert_eq "$(cat o.txt)/$(cat e.txt)" "IN/E" || return 1
    assert_eq "$(ks_py '[rec["files"][k]["file_name"] for k in ("stdin", "stdout", "stderr")]' rec.yml)" \
        "[\"$T/in.txt\", \"$T/o.txt\", \"$T/e.txt\"]" || return 1
    "$JS" kickstart -o '!o.txt' /bin/echo more >/dev/null || return 1
    assert_eq "$(cat o.txt | tr '\n' ' ')" "IN more " "! appends" || return 1
    "$JS" kickstart -o '^o.txt' /bin/echo new >/dev/null || return 1
    assert_eq "$(cat o.txt)/$(cat o.txt.000 | tr '\n' ' ')" "new/IN more " "^ keeps the old file as .000" || return 1
    "$JS" kickstart -o - /bin/echo shared >out.txt || return 1
    assert_eq "$(head -1 out.txt)" shared "-o -: kickstart's own stdout" || return 1
    "$JS" kickstart -i missing.txt /bin/cat >rec.yml 2>/dev/null
    assert_eq $? 126 "stdio that cannot be connected: 126" || return 1
    assert_eq "$(ks_py 'st[0]["exitcode"]' rec.yml)" 126
}

test_w_changes_W_creates_the_working_directory() {
    "$JS" kickstart -w /doesnotexistever /bin/echo x >rec.yml 2>err.txt
    assert_eq $? 127 || return 1
    grep -q 'Unable to chdir /doesnotexistever: 2' err.txt || return 1
    assert_eq "$(ks_py '["environment" in rec, "mainjob" in rec]' rec.yml)" '[true, false]' || return 1
    "$JS" kickstart -W "$T/new/dir" /bin/pwd >rec.yml 2>err.txt
    assert_eq $? 127 "-W makes one level, as kickstart" || return 1
    "$JS" kickstart -W "$T/new" /bin/pwd >rec.yml || return 1
    assert_eq "$(ks_py '[st[0]["cwd"], st[0]["stdout"]]' rec.yml)" "[\"$T/new\", \"$T/new\\n\"]" || return 1
    printf '#!/bin/sh\necho here\n' > new/exe.sh && chmod +x new/exe.sh
    "$JS" kickstart -w "$T/new" ./exe.sh >rec.yml || return 1
    assert_eq "$(ks_py 'st[0]["stdout"]' rec.yml)" here "a relative program in the new directory"
}

test_k_sends_SIGTERM_and_K_SIGKILL_with_kickstarts_messages() {
    "$JS" kickstart -k 1 /bin/sleep 5 >rec.yml 2>err.txt
    assert_eq $? 14 "kickstart's status after a timeout: SIGALRM" || return 1
    assert_eq "$(cat err.txt)" "Job timed out, sending SIGTERM" || return 1
    assert_eq "$(ks_py '[st[0]["signal"], "environment" in rec]' rec.yml)" '[15, true]' || return 1
    printf '#!/bin/sh\ntrap "" TERM\nsleep 5\n' > ignore.sh && chmod +x ignore.sh
    s=$(date +%s.%N)
    "$JS" kickstart -k 1 -K 1 ./ignore.sh >rec.yml 2>err.txt
    assert_eq $? 14 || return 1
    assert_le "$(awk -v s="$s" -v e="$(date +%s.%N)" 'BEGIN{print e-s}')" 4 "killed, not waited for" || return 1
    assert_eq "$(cat err.txt | tr '\n' '|')" "Job timed out, sending SIGTERM|Job still running, sending SIGKILL|" || return 1
    assert_eq "$(ks_py 'st[0]["signal"]' rec.yml)" 9 || return 1
    "$JS" kickstart -k 5 /bin/true >rec.yml 2>err.txt || return 1
    assert_eq "$(cat err.txt)" "" "no timeout, no message"
}
